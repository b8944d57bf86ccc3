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
    /// one `stream_event` line per event of the Messages API stream, as Claude Code forwards
    /// them (`message_start`, `content_block_start`, the text, thinking and tool-input
    /// deltas, `content_block_stop`, `message_delta`, `message_stop`); consecutive deltas
    /// of one block that arrived in one read are joined into one.
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
                if self.partial_messages && record.to == "Request" {
                    // Claude Code says so before each model request it streams.
                    self.stream_json(json!({"type": "system", "subtype": "status", "status": "requesting",
                        "session_id": self.session_id, "uuid": crate::session::Uuid::new_v4().to_string()}));
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
                if self.format == OutputFormat::Text && crate::engine::edge::Edge::id_abandons_attempt(&record.edge) {
                    self.emit(|t, out| t.abandon(out));
                }
                if let Some(trace) = &mut self.trace
                    && let Err(e) = trace.record(record)
                {
                    stderr_line(&format!("agentloop: cannot write the trace: {e}"));
                    self.trace = None;
                }
            }
            EngineEvent::ReplyStarted { id, model, usage } if self.partial_messages => {
                let model = model.as_deref().unwrap_or(&self.model);
                self.stream_event(json!({"type": "message_start", "message": {"id": id, "type": "message",
                    "role": "assistant", "model": model, "content": [], "stop_reason": null,
                    "stop_sequence": null, "usage": usage}}));
            }
            EngineEvent::BlockStarted { index, block } if self.partial_messages => {
                self.stream_event(json!({"type": "content_block_start", "index": index, "content_block": block}));
            }
            EngineEvent::InputJsonDelta { index, partial_json } if self.partial_messages => {
                self.stream_event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": partial_json}}));
            }
            EngineEvent::BlockStopped { index } if self.partial_messages => {
                self.stream_event(json!({"type": "content_block_stop", "index": index}));
            }
            EngineEvent::ReplyDelta { stop_reason, stop_sequence, usage } if self.partial_messages => {
                self.stream_event(json!({"type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence}, "usage": usage}));
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
            EngineEvent::Message { message, .. }
                if self.format == OutputFormat::Text && message.role == Role::Assistant =>
            {
                self.emit(|t, out| t.keep(out));
            }
            EngineEvent::Usage { model, usage, .. } => self.last_usage = Some((model.clone(), *usage)),
            EngineEvent::Message { .. } if self.format == OutputFormat::StreamJson && self.skip_prompt_line => {
                // The first message of a run is its prompt.
                self.skip_prompt_line = false;
            }
            EngineEvent::Message { message, uuid, reply } if self.format == OutputFormat::StreamJson => {
                if self.partial_messages && message.role == Role::Assistant {
                    self.stream_event(json!({"type": "message_stop"}));
                }
                // The line's uuid is its transcript line's, as in Claude Code.
                let mut line = json!({"type": "user", "message": message, "session_id": self.session_id,
                    "parent_tool_use_id": null, "uuid": uuid.to_string()});
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
                    if let Some(reply) = reply {
                        with_reply_info(&mut line, reply);
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

/// Put what the API said about a reply on its stream-json line, as Claude Code does: the
/// message's `id`, `stop_sequence`, and (when the API gave them) its `stop_reason` and
/// `model`; the request's `request_id` beside the message.
fn with_reply_info(line: &mut Value, reply: &crate::session::ReplyInfo) {
    line["message"]["id"] = json!(reply.id);
    line["message"]["stop_sequence"] = json!(reply.stop_sequence);
    if let Some(reason) = &reply.stop_reason {
        line["message"]["stop_reason"] = json!(reason);
    }
    if let Some(model) = &reply.model {
        line["message"]["model"] = json!(model);
    }
    if let Some(id) = &reply.request_id {
        line["request_id"] = json!(id);
    }
}

/// What the trace adds to the lines of an MCP call: ` [MCP server S, tool T]`; nothing for
/// a built-in tool.
fn on_server(mcp: Option<&crate::tools::McpOrigin>) -> String {
    mcp.map(|m| format!(" [MCP server {}, tool {}]", m.server, m.tool)).unwrap_or_default()
}

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

/// Why the last reply stopped, as the API says it (`end_turn` for a completed run), where the
/// terminal reason tells.
#[deny(clippy::wildcard_enum_match_arm)]
fn stop_reason(outcome: &RunOutcome) -> Option<&'static str> {
    match outcome.terminal {
        TerminalReason::Completed => Some("end_turn"),
        TerminalReason::MaxTurns => Some("tool_use"),
        TerminalReason::AbortedStreaming
        | TerminalReason::AbortedTools
        | TerminalReason::ModelError
        | TerminalReason::StopHookPrevented
        | TerminalReason::HookStopped
        | TerminalReason::PromptTooLong
        | TerminalReason::BlockingLimit
        | TerminalReason::BudgetExhausted
        | TerminalReason::StructuredOutputRetryExhausted => None,
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
        "apiKeySource": api_key_source(),
        "output_style": "default",
        "claude_code_version": crate::sdk::PROTOCOL_VERSION,
        "agentloop_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Where the model's credentials come from, as Claude Code's `apiKeySource` names it.
/// It is the credential the model client uses ([`crate::cli::auth::Credential`]).
fn api_key_source() -> &'static str {
    use crate::cli::auth::Credential;
    match Credential::from_lookup(crate::credentials::var) {
        Credential::ApiKey => "ANTHROPIC_API_KEY",
        Credential::AuthToken => "ANTHROPIC_AUTH_TOKEN",
        Credential::None => "none",
    }
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

/// How an ending looks in a result frame: the `subtype`, `is_error` and `terminal_reason`
/// Claude Code reports for the same ending, so SDKs branch on them as they do for Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    /// `success`, `error_max_turns` or `error_during_execution`. An API failure is a
    /// `success` with `is_error: true`, as Claude Code reports it (the loop itself completed).
    pub subtype: &'static str,
    /// Whether the run failed: the process then exits non-zero.
    pub is_error: bool,
    /// Claude Code's name for the ending; the table's own is `agentloop_terminal_reason`.
    pub terminal_reason: &'static str,
}

impl Ending {
    /// The result frame's view of `terminal`.
    pub fn of(terminal: TerminalReason) -> Ending {
        let (subtype, is_error, terminal_reason) = match terminal {
            TerminalReason::Completed => ("success", false, "completed"),
            TerminalReason::MaxTurns => ("error_max_turns", true, "max_turns"),
            TerminalReason::AbortedStreaming => ("error_during_execution", true, "aborted_streaming"),
            TerminalReason::AbortedTools => ("error_during_execution", true, "aborted_tools"),
            TerminalReason::ModelError => ("success", true, "api_error"),
            // A hook that ends the run is an ending the user asked for, not a failure.
            TerminalReason::StopHookPrevented => ("success", false, "stop_hook_prevented"),
            TerminalReason::HookStopped => ("success", false, "hook_stopped"),
            TerminalReason::PromptTooLong => ("success", true, "prompt_too_long"),
            TerminalReason::BlockingLimit => ("success", true, "blocking_limit"),
            TerminalReason::BudgetExhausted => ("error_max_budget_usd", true, "budget_exhausted"),
            TerminalReason::StructuredOutputRetryExhausted => {
                ("error_max_structured_output_retries", true, "structured_output_retry_exhausted")
            }
        };
        Ending { subtype, is_error, terminal_reason }
    }
}

/// Adds the session's slash commands and output style to a `system/init` line.
pub trait WithCommands {
    /// `slash_commands` ([`crate::commands::Commands::slash_commands`]) and `output_style`
    /// (the name the settings' `outputStyle` gives, `default` without one).
    #[must_use]
    fn with_commands(self, slash_commands: &[String], output_style: &str) -> Self;
}

impl WithCommands for Value {
    fn with_commands(mut self, slash_commands: &[String], output_style: &str) -> Value {
        self["slash_commands"] = json!(slash_commands);
        self["output_style"] = json!(output_style);
        self
    }
}

/// The result object of `--output-format json` and the last line of `stream-json`, in the
/// shape Claude Code prints (see [`Ending`]), with the table's terminal reason beside
/// Claude Code's as `agentloop_terminal_reason`.
///
/// What differs by ending, as Claude Code does it: an error ending whose subtype is not
/// `success` lists what went wrong in `errors` and has no `result` text (`null` after an
/// interrupt); a failed model call puts Claude Code's `API Error: …` prose in `result`, with
/// `api_error_status` and `api_error_type`; `permission_denials` lists every refused call.
pub fn result_object(outcome: &RunOutcome, session_id: &str, started: Instant, api_ms: u64) -> Value {
    let ending = Ending::of(outcome.terminal);
    let failure = outcome.api_failure.as_ref();
    let mut result = json!({
        "type": "result",
        "subtype": ending.subtype,
        "is_error": ending.is_error,
        "duration_ms": started.elapsed().as_millis() as u64,
        "duration_api_ms": api_ms,
        "stop_reason": stop_reason(outcome),
        "uuid": crate::session::Uuid::new_v4().to_string(),
        "permission_denials": outcome.permission_denials,
        // Claude Code counts the turn it refused to start.
        "num_turns": outcome.turns + u32::from(outcome.terminal == TerminalReason::MaxTurns),
        "session_id": session_id,
        "total_cost_usd": outcome.cost_usd,
        "usage": outcome.usage,
        "terminal_reason": ending.terminal_reason,
        "agentloop_terminal_reason": outcome.terminal.as_str(),
        "error": outcome.error,
        "api_error_status": failure.and_then(|f| f.status),
    });
    let error = || outcome.error.clone().unwrap_or_else(|| format!("The run ended with {}", outcome.terminal.as_str()));
    match (ending.subtype, ending.is_error) {
        ("success", false) => result["result"] = json!(outcome.final_text),
        ("success", true) => {
            let prose = match (outcome.terminal, failure) {
                (TerminalReason::ModelError, Some(failure)) => failure.prose(),
                _ => error(),
            };
            result["result"] = json!(prose);
            if let Some(kind) = failure.and_then(|f| f.kind.as_deref()) {
                result["api_error_type"] = json!(kind);
            }
        }
        (_, _) => {
            // The TypeScript SDK maps over `errors` on every result whose subtype is not
            // `success`; Claude Code gives no `result` text then (`null` after an interrupt).
            result["errors"] = json!([error()]);
            if ending.subtype == "error_during_execution" {
                result["result"] = Value::Null;
            }
        }
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
mod result_tests {
    use super::*;
    use crate::model::ApiFailure;

    fn outcome(terminal: TerminalReason, error: Option<&str>) -> RunOutcome {
        RunOutcome {
            terminal,
            error: error.map(str::to_owned),
            messages: Vec::new(),
            final_text: "last words".into(),
            usage: crate::engine::state::UsageTotals::default(),
            model_calls: 1,
            cost_usd: 0.0,
            turns: 2,
            trace: Vec::new(),
            api_failure: None,
            permission_denials: Vec::new(),
            structured_output: None,
        }
    }

    /// The fields that differ by ending, as Claude Code 2.1.332 prints them.
    fn shape(result: &Value) -> Value {
        let mut shape = serde_json::Map::new();
        for key in
            ["subtype", "is_error", "terminal_reason", "agentloop_terminal_reason", "result", "errors", "num_turns"]
        {
            if let Some(value) = result.get(key) {
                shape.insert(key.into(), value.clone());
            }
        }
        Value::Object(shape)
    }

    #[test]
    fn each_ending_has_the_subtype_and_fields_claude_code_reports() {
        let cases = [
            (
                outcome(TerminalReason::Completed, None),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "completed",
                       "agentloop_terminal_reason": "completed", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::MaxTurns, Some("Reached maximum number of turns (2)")),
                json!({"subtype": "error_max_turns", "is_error": true, "terminal_reason": "max_turns",
                       "agentloop_terminal_reason": "max_turns",
                       "errors": ["Reached maximum number of turns (2)"], "num_turns": 3}),
            ),
            (
                outcome(TerminalReason::AbortedStreaming, Some("interrupted")),
                json!({"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_streaming",
                       "agentloop_terminal_reason": "aborted_streaming", "result": null,
                       "errors": ["interrupted"], "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::AbortedTools, Some("interrupted")),
                json!({"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_tools",
                       "agentloop_terminal_reason": "aborted_tools", "result": null,
                       "errors": ["interrupted"], "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::HookStopped, Some("a tool hook ended the run: halt")),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "hook_stopped",
                       "agentloop_terminal_reason": "hook_stopped", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::StopHookPrevented, Some("a Stop hook ended the run: no")),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "stop_hook_prevented",
                       "agentloop_terminal_reason": "stop_hook_prevented", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::BlockingLimit, Some("Prompt is too long: about 9 tokens")),
                json!({"subtype": "success", "is_error": true, "terminal_reason": "blocking_limit",
                       "agentloop_terminal_reason": "blocking_limit",
                       "result": "Prompt is too long: about 9 tokens", "num_turns": 2}),
            ),
        ];
        for (outcome, expected) in cases {
            let result = result_object(&outcome, "s", Instant::now(), 0);
            assert_eq!(shape(&result), expected, "{}", outcome.terminal);
        }
    }

    #[test]
    fn a_failed_model_call_reports_its_status_type_and_api_error_prose() {
        let mut failed = outcome(TerminalReason::ModelError, Some("HTTP 400 invalid_request_error: bad"));
        failed.api_failure =
            Some(ApiFailure { status: Some(400), kind: Some("invalid_request_error".into()), message: "bad".into() });
        let result = result_object(&failed, "s", Instant::now(), 0);
        assert_eq!(
            shape(&result),
            json!({"subtype": "success", "is_error": true, "terminal_reason": "api_error",
                   "agentloop_terminal_reason": "model_error", "result": "API Error: 400 bad", "num_turns": 2})
        );
        assert_eq!(result["api_error_status"], json!(400));
        assert_eq!(result["api_error_type"], json!("invalid_request_error"));

        failed.api_failure = Some(ApiFailure { status: None, kind: None, message: "connection error: refused".into() });
        let result = result_object(&failed, "s", Instant::now(), 0);
        assert_eq!(result["result"], json!("API Error: connection error: refused"));
        assert_eq!(result["api_error_status"], Value::Null);
        assert_eq!(result.get("api_error_type"), None);
    }

    #[test]
    fn refused_calls_are_listed_as_permission_denials() {
        let mut denied = outcome(TerminalReason::Completed, None);
        denied.permission_denials = vec![crate::permissions::Denial {
            tool_name: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            tool_input: json!({"command": "touch x"}),
        }];
        let result = result_object(&denied, "s", Instant::now(), 0);
        assert_eq!(
            result["permission_denials"],
            json!([{"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "touch x"}}])
        );
    }
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
