//! What a run prints: the model's text (or JSON) on stdout, tool activity and warnings on
//! stderr, and the trace on stderr or in a file.
//!
//! In text mode a reply attempt that is abandoned (a stream cut and retried, a truncated reply
//! sent again) never leaves its text behind. On a terminal the text streams as it arrives and
//! an abandoned attempt is erased with ANSI escapes; when stdout is not a terminal a reply's
//! text is held back and printed only once the reply is kept in the conversation, when it can
//! no longer be retried ([`TextOut`]).

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::cli::interrupt::{Stdout, stderr_line};
use crate::engine::events::{EngineEvent, EventSink};
use crate::engine::reason::TerminalReason;
use crate::engine::run::RunOutcome;
use crate::engine::trace::TraceWriter;
use crate::permissions::Mode;
use crate::protocol::Role;
use crate::sandbox::Sandbox;

/// Called when a tool phase starts (the scripted model uses it for `abort.phase = tools`).
pub type ToolPhaseHook = Arc<dyn Fn() + Send + Sync>;

/// The sink of a CLI run.
pub struct CliSink {
    /// Where the trace goes, if tracing.
    pub trace: Option<TraceWriter>,
    /// The stdout format.
    pub format: OutputFormat,
    /// Whether tool activity is shown on stderr.
    pub show_tools: bool,
    /// Called at each tool phase start.
    pub on_tool_phase: Option<ToolPhaseHook>,
    /// Called when Stop hooks start (the scripted model uses it for `abort.phase = stop_hooks`).
    pub on_stop_hooks: Option<ToolPhaseHook>,
    /// Session id for stream-json.
    pub session_id: String,
    /// The run's model, for assistant lines that come without usage.
    pub model: String,
    /// In stream-json, leave out the prompt's own user line (the Claude Agent SDK sent it).
    pub skip_prompt_line: bool,
    /// In stream-json, also print the reply as it streams (`--include-partial-messages`):
    /// `stream_event` lines with `message_start`, each text and thinking delta with its block
    /// index, and `message_stop`.
    pub partial_messages: bool,
    /// The trace is pretty and written to stderr: its tool lines share the screen with the
    /// model's text.
    pub pretty_trace_on_stderr: bool,
    /// Where stdout output goes (it notices when stdout is closed).
    pub stdout: Stdout,
    /// Milliseconds spent in model calls (from entering `Request` to leaving `Consume`), for
    /// `duration_api_ms`; shared so the caller can read it after the run.
    pub api_ms: Arc<std::sync::atomic::AtomicU64>,
    api_since: Option<f64>,
    text: TextOut,
    last_usage: Option<(String, crate::protocol::Usage)>,
    started: Instant,
    turn: u32,
}

impl CliSink {
    /// A sink printing in `format`.
    pub fn new(trace: Option<TraceWriter>, format: OutputFormat, session_id: String, stdout: Stdout) -> Self {
        CliSink {
            trace,
            format,
            show_tools: format == OutputFormat::Text,
            on_tool_phase: None,
            on_stop_hooks: None,
            session_id,
            model: String::new(),
            skip_prompt_line: false,
            partial_messages: false,
            pretty_trace_on_stderr: false,
            stdout,
            api_ms: Arc::default(),
            api_since: None,
            text: TextOut::new(if format == OutputFormat::Text { stdout_columns() } else { None }),
            last_usage: None,
            started: Instant::now(),
            turn: 1,
        }
    }

    /// Let the text writer write into a buffer, then send the buffer to stdout (a closed
    /// stdout is noticed there).
    fn emit(&mut self, write: impl FnOnce(&mut TextOut, &mut Vec<u8>)) {
        let mut buf = Vec::new();
        write(&mut self.text, &mut buf);
        if !buf.is_empty() {
            self.stdout.write(&buf);
        }
    }

    fn end_text_line(&mut self) {
        self.emit(|t, out| t.end_line(out));
    }

    /// Note a line written to stderr, which may share the screen with the streamed text.
    fn note_stderr_line(&mut self, line: &str) {
        if self.format == OutputFormat::Text && stderr_is_terminal() {
            self.text.other_line(line);
        }
    }

    fn trace_tool(&mut self, text: &str) {
        self.end_text_line();
        if self.trace.is_some() && self.pretty_trace_on_stderr {
            // The line's time, turn and indent come before the text.
            self.note_stderr_line(&format!("{:32}{text}", ""));
        }
        let t_ms = self.started.elapsed().as_secs_f64() * 1e3;
        if let Some(trace) = &mut self.trace
            && let Err(e) = trace.tool_line(t_ms, self.turn, text)
        {
            stderr_line(&format!("agentloop: cannot write the trace: {e}"));
            self.trace = None;
        }
    }

    fn stream_json(&self, value: Value) {
        self.stdout.line(&value.to_string());
    }

    /// A `stream_event` line wrapping `event`.
    fn stream_event(&self, event: Value) {
        self.stream_json(json!({"type": "stream_event", "event": event, "session_id": self.session_id,
            "parent_tool_use_id": null, "uuid": crate::session::Uuid::new_v4().to_string()}));
    }
}

impl EventSink for CliSink {
    fn event(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::Transition(record) => {
                self.turn = record.turn;
                if self.partial_messages && record.to == "Consume" {
                    self.stream_event(json!({"type": "message_start", "message": {"type": "message",
                        "role": "assistant", "model": self.model, "content": []}}));
                }
                let calling = |state: &str| state == "Request" || state == "Consume";
                match (calling(record.from), calling(record.to), self.api_since) {
                    (false, true, _) => self.api_since = Some(record.t_ms),
                    (true, false, Some(since)) => {
                        let ms = (record.t_ms - since).max(0.0).round() as u64;
                        self.api_ms.fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
                        self.api_since = None;
                    }
                    _ => {}
                }
                if self.format == OutputFormat::Text && ABANDONING_EDGES.contains(&record.edge.as_str()) {
                    self.emit(|t, out| t.abandon(out));
                }
                if let Some(trace) = &mut self.trace
                    && let Err(e) = trace.record(record)
                {
                    stderr_line(&format!("agentloop: cannot write the trace: {e}"));
                    self.trace = None;
                }
            }
            EngineEvent::TextDelta { index, text } if self.partial_messages => {
                self.stream_event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": text}}));
            }
            EngineEvent::ThinkingDelta { index, thinking } if self.partial_messages => {
                self.stream_event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "thinking_delta", "thinking": thinking}}));
            }
            EngineEvent::TextDelta { text, .. } if self.format == OutputFormat::Text => {
                self.emit(|t, out| t.delta(out, text));
            }
            EngineEvent::Message(message) if self.format == OutputFormat::Text && message.role == Role::Assistant => {
                self.emit(|t, out| t.keep(out));
            }
            EngineEvent::Usage { model, usage, .. } => self.last_usage = Some((model.clone(), *usage)),
            EngineEvent::Message(message) if self.format == OutputFormat::StreamJson && self.skip_prompt_line => {
                // The first message of a run is its prompt.
                let _ = message;
                self.skip_prompt_line = false;
            }
            EngineEvent::Message(message) if self.format == OutputFormat::StreamJson => {
                if self.partial_messages && message.role == Role::Assistant {
                    self.stream_event(json!({"type": "message_stop"}));
                }
                let mut line = json!({"type": "user", "message": message, "session_id": self.session_id,
                    "parent_tool_use_id": null, "uuid": crate::session::Uuid::new_v4().to_string()});
                if message.role == Role::Assistant {
                    line["type"] = json!("assistant");
                    let asks_tools = message.tool_uses().next().is_some();
                    line["message"]["type"] = json!("message");
                    line["message"]["stop_reason"] = json!(if asks_tools { "tool_use" } else { "end_turn" });
                    match self.last_usage.take() {
                        Some((model, usage)) => {
                            line["message"]["model"] = json!(model);
                            line["message"]["usage"] = json!(usage);
                        }
                        None => line["message"]["model"] = json!(self.model),
                    }
                }
                self.stream_json(line);
            }
            EngineEvent::ToolPhaseStarted { .. } => {
                if let Some(hook) = &self.on_tool_phase {
                    hook();
                }
            }
            EngineEvent::StopHooksStarted => {
                if let Some(hook) = &self.on_stop_hooks {
                    hook();
                }
            }
            EngineEvent::ToolStarted { id, name, input, running, early, mcp } => {
                let beside =
                    if running.is_empty() { String::new() } else { format!(" (beside {})", running.join(", ")) };
                let when = if *early { "early" } else { "after reply" };
                self.trace_tool(&format!("⇢ {name} {id} started {when}{beside}{}", on_server(mcp.as_ref())));
                if self.show_tools {
                    let line = format!("→ {name} {}", compact(input));
                    self.end_text_line();
                    self.note_stderr_line(&line);
                    stderr_line(&line);
                }
                if self.format == OutputFormat::StreamJson {
                    let mut line = json!({"type": "system", "subtype": "tool_started", "tool_use_id": id,
                        "name": name, "concurrent_with": running, "started_early": early,
                        "session_id": self.session_id});
                    if let Some(mcp) = mcp {
                        line["mcp"] = json!(mcp);
                    }
                    self.stream_json(line);
                }
            }
            EngineEvent::ToolFinished { id, name, is_error, duration, mcp, .. } => {
                let status = if *is_error { "error" } else { "ok" };
                let ms = duration.as_secs_f64() * 1e3;
                self.trace_tool(&format!("⇠ {name} {id} {status} after {ms:.1}ms{}", on_server(mcp.as_ref())));
                if self.show_tools {
                    let line = format!("← {name} {status} ({ms:.1} ms)");
                    self.end_text_line();
                    self.note_stderr_line(&line);
                    stderr_line(&line);
                }
                if self.format == OutputFormat::StreamJson {
                    let mut line = json!({"type": "system", "subtype": "tool_finished", "tool_use_id": id,
                        "name": name, "is_error": is_error, "duration_ms": ms, "session_id": self.session_id});
                    if let Some(mcp) = mcp {
                        line["mcp"] = json!(mcp);
                    }
                    self.stream_json(line);
                }
            }
            EngineEvent::Retrying { attempt, max, delay, error } if self.format == OutputFormat::Text => {
                // A run waiting in silence looks hung: say what failed and how long the wait is.
                let line = format!(
                    "agentloop: {error}; retry {attempt}/{max} in {}",
                    crate::engine::events::human_duration(*delay)
                );
                self.end_text_line();
                self.note_stderr_line(&line);
                stderr_line(&line);
            }
            EngineEvent::Warning(w) => {
                let line = format!("agentloop: warning: {w}");
                self.end_text_line();
                self.note_stderr_line(&line);
                stderr_line(&line);
            }
            _ => {}
        }
    }
}

/// What the trace adds to the lines of an MCP call: ` [MCP server S, tool T]`; nothing for
/// a built-in tool.
fn on_server(mcp: Option<&crate::tools::McpOrigin>) -> String {
    mcp.map(|m| format!(" [MCP server {}, tool {}]", m.server, m.tool)).unwrap_or_default()
}

/// Edges after which the reply attempt whose text was shown is not kept: the stream failed and
/// is retried, or a new stream opens while an earlier attempt's text is still pending (a
/// truncated reply sent again, a prompt-too-long recovery).
const ABANDONING_EDGES: &[&str] = &["consume.retry", "request.stream_opened"];

/// How the model's text reaches stdout in text mode.
///
/// With a terminal (`cols` known) each piece is printed as it arrives, and the cursor's
/// movement since the attempt's first piece is counted (wrapped rows, and lines other output
/// put on the same screen) so that an abandoned attempt can be erased: cursor up that many
/// rows, then clear to the end of the screen. Without one, the attempt's text is held and
/// printed when the reply is kept.
#[derive(Debug)]
pub struct TextOut {
    cols: Option<usize>,
    /// Text of the current attempt: held back (no terminal) or on screen (terminal).
    attempt: String,
    /// Rows the cursor moved down since the attempt's first piece (terminal only).
    rows: usize,
    /// The cursor's column (terminal only).
    col: usize,
    /// A line of text is open on stdout: a newline ends it before other output.
    line_open: bool,
}

impl TextOut {
    /// Text output for a terminal `cols` wide, or for a pipe or file (`None`).
    pub fn new(cols: Option<usize>) -> Self {
        TextOut { cols, attempt: String::new(), rows: 0, col: 0, line_open: false }
    }

    /// A piece of the current attempt's text.
    pub fn delta(&mut self, out: &mut dyn Write, text: &str) {
        self.attempt.push_str(text);
        if self.cols.is_some() {
            self.advance(text);
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            self.line_open = true;
        }
    }

    /// The current attempt's reply is kept in the conversation: it can no longer be retried.
    pub fn keep(&mut self, out: &mut dyn Write) {
        let text = std::mem::take(&mut self.attempt);
        if self.cols.is_none() && !text.is_empty() {
            let _ = out.write_all(text.as_bytes());
            self.line_open = true;
        }
        self.rows = 0;
        self.end_line(out);
    }

    /// The current attempt is not kept: drop its held text, or erase it from the screen.
    pub fn abandon(&mut self, out: &mut dyn Write) {
        if self.attempt.is_empty() {
            return;
        }
        self.attempt.clear();
        if self.cols.is_some() {
            let up = if self.rows > 0 { format!("\x1b[{}A", self.rows) } else { String::new() };
            let _ = write!(out, "\r{up}\x1b[J");
            let _ = out.flush();
            self.rows = 0;
            self.col = 0;
            self.line_open = false;
        }
    }

    /// End the open line of text, if any, before other output.
    pub fn end_line(&mut self, out: &mut dyn Write) {
        if self.line_open {
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            self.line_open = false;
            if !self.attempt.is_empty() {
                self.rows += 1;
            }
            self.col = 0;
        }
    }

    /// A whole line written to the same screen by other output (stderr) while an attempt's
    /// text is shown: erasing the attempt must go up past it too.
    pub fn other_line(&mut self, line: &str) {
        if let Some(cols) = self.cols
            && !self.attempt.is_empty()
        {
            self.rows += line.chars().count().div_ceil(cols).max(1);
        }
    }

    fn advance(&mut self, text: &str) {
        let Some(cols) = self.cols else { return };
        for c in text.chars() {
            if c == '\n' {
                self.rows += 1;
                self.col = 0;
            } else {
                if self.col == cols {
                    self.rows += 1;
                    self.col = 0;
                }
                self.col += 1;
            }
        }
    }
}

/// The width of the terminal stdout is, or `None` when stdout is not a terminal.
fn stdout_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills the `winsize` it is given and reads nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    Some(if ok && size.ws_col > 0 { usize::from(size.ws_col) } else { 80 })
}

fn compact(input: &Value) -> String {
    let text = input.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Whether stderr is a terminal (colours on).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Why the last reply stopped, as the API says it (`end_turn` for a completed run).
fn stop_reason(outcome: &RunOutcome) -> Option<&'static str> {
    match outcome.terminal {
        TerminalReason::Completed => Some("end_turn"),
        TerminalReason::MaxTurns => Some("tool_use"),
        _ => None,
    }
}

/// The `system/init` line of stream-json: the session, where it runs, the model, the tools
/// and the permission mode, with the protocol version the Claude Agent SDK checks.
pub fn system_init(
    session_id: &str,
    cwd: &std::path::Path,
    model: &str,
    tools: &[String],
    mode: &str,
    mcp_servers: &[crate::mcp::ServerStatus],
) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "uuid": crate::session::Uuid::new_v4().to_string(),
        "cwd": cwd,
        "model": model,
        "tools": tools,
        "mcp_servers": mcp_servers,
        "slash_commands": [],
        "permissionMode": mode,
        "apiKeySource": "none",
        "output_style": "default",
        "claude_code_version": crate::sdk::PROTOCOL_VERSION,
        "agentloop_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Adds the session's sandbox state to a `system/init` line.
pub trait WithSandbox {
    /// `sandbox`: `enabled`, `disabled`, `unavailable` or `none` ([`Sandbox::status`]), or
    /// `bypassed` when the mode runs every command unconfined.
    #[must_use]
    fn with_sandbox(self, sandbox: &Sandbox, mode: Mode) -> Self;
}

impl WithSandbox for Value {
    fn with_sandbox(mut self, sandbox: &Sandbox, mode: Mode) -> Value {
        let status = match (mode, sandbox.status()) {
            (Mode::BypassPermissions, "enabled") => "bypassed",
            (_, status) => status,
        };
        self["sandbox"] = json!(status);
        self
    }
}

/// The result object of `--output-format json` and the last line of `stream-json`, in the
/// shape Claude Code prints, plus our `terminal_reason`.
pub fn result_object(outcome: &RunOutcome, session_id: &str, started: Instant, api_ms: u64) -> Value {
    let subtype = match outcome.terminal {
        TerminalReason::Completed => "success",
        TerminalReason::MaxTurns => "error_max_turns",
        TerminalReason::BudgetExhausted => "error_max_budget_usd",
        TerminalReason::StructuredOutputRetryExhausted => "error_max_structured_output_retries",
        _ => "error_during_execution",
    };
    let mut result = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": outcome.terminal != TerminalReason::Completed,
        "duration_ms": started.elapsed().as_millis() as u64,
        "duration_api_ms": api_ms,
        "stop_reason": stop_reason(outcome),
        "uuid": crate::session::Uuid::new_v4().to_string(),
        "permission_denials": [],
        "num_turns": outcome.turns,
        "result": outcome.final_text,
        "session_id": session_id,
        "total_cost_usd": outcome.cost_usd,
        "usage": outcome.usage,
        "terminal_reason": outcome.terminal.as_str(),
        "error": outcome.error,
        "api_error_status": null,
    });
    // Claude Code lists what went wrong in `errors` on every error result (the TypeScript
    // SDK maps over it), and has no such field on a success.
    if outcome.terminal != TerminalReason::Completed {
        let error =
            outcome.error.clone().unwrap_or_else(|| format!("The run ended with {}", outcome.terminal.as_str()));
        result["errors"] = json!([error]);
    }
    result
}

/// Adds a run's structured answer (`--json-schema`) to its result object, as Claude Code
/// reports it: `structured_output`, with the `result` text its JSON (the outcome's final
/// text) and `stop_reason` that of the reply whose tool call gave it.
pub fn with_structured_output(mut result: Value, outcome: &RunOutcome) -> Value {
    if let Some(answer) = &outcome.structured_output {
        result["structured_output"] = answer.clone();
        result["stop_reason"] = json!("tool_use");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(out: &[u8]) -> String {
        String::from_utf8_lossy(out).into_owned()
    }

    #[test]
    fn without_a_terminal_only_kept_replies_are_printed() {
        let mut text = TextOut::new(None);
        let mut out = Vec::new();
        text.delta(&mut out, "Hel");
        assert_eq!(shown(&out), "", "held until the reply is kept");
        text.abandon(&mut out);
        text.delta(&mut out, "Hel");
        text.delta(&mut out, "lo!");
        text.keep(&mut out);
        text.delta(&mut out, "Second.");
        text.keep(&mut out);
        assert_eq!(shown(&out), "Hello!\nSecond.\n");
    }

    #[test]
    fn on_a_terminal_an_abandoned_attempt_is_erased() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        text.delta(&mut out, "Hel");
        text.abandon(&mut out);
        text.delta(&mut out, "Hello!");
        text.keep(&mut out);
        assert_eq!(shown(&out), "Hel\r\x1b[JHello!\n");
    }

    #[test]
    fn erasing_goes_up_past_wrapped_rows_newlines_and_other_lines() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        // 25 characters on a 10-column screen: three rows, the cursor on the third.
        text.delta(&mut out, "abcdefghijklmnopqrstuvwxy");
        text.delta(&mut out, "\nline two");
        // A tool line on stderr ends the text line and takes two rows of its own.
        text.end_line(&mut out);
        text.other_line("→ Read {\"file\"}");
        text.delta(&mut out, "more");
        text.abandon(&mut out);
        // Rows down: 2 wraps, 1 newline, the line ended, 2 for the tool line.
        assert_eq!(shown(&out), "abcdefghijklmnopqrstuvwxy\nline two\nmore\r\x1b[6A\x1b[J");
    }

    #[test]
    fn lines_outside_an_attempt_are_not_counted() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        text.other_line("a warning before any text");
        text.delta(&mut out, "ok");
        text.abandon(&mut out);
        assert_eq!(shown(&out), "ok\r\x1b[J");
    }
}
