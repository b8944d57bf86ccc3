//! What a run prints: the model's text (or JSON) on stdout, tool activity and warnings on
//! stderr, and the trace on stderr or in a file.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::cli::interrupt::{Stdout, stderr_line};
use crate::engine::events::{EngineEvent, EventSink};
use crate::engine::reason::TerminalReason;
use crate::engine::run::RunOutcome;
use crate::engine::trace::TraceWriter;
use crate::protocol::Role;

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
    /// Session id for stream-json.
    pub session_id: String,
    /// Where stdout output goes (it notices when stdout is closed).
    pub stdout: Stdout,
    wrote_text: bool,
    last_usage: Option<(String, crate::protocol::Usage)>,
    started: Instant,
    turn: u32,
}

impl CliSink {
    /// A sink printing in `format` to `stdout`.
    pub fn new(trace: Option<TraceWriter>, format: OutputFormat, session_id: String, stdout: Stdout) -> Self {
        CliSink {
            trace,
            format,
            show_tools: format == OutputFormat::Text,
            on_tool_phase: None,
            session_id,
            stdout,
            wrote_text: false,
            last_usage: None,
            started: Instant::now(),
            turn: 1,
        }
    }

    fn end_text_line(&mut self) {
        if self.wrote_text {
            self.stdout.write(b"\n");
            self.wrote_text = false;
        }
    }

    fn trace_tool(&mut self, text: &str) {
        self.end_text_line();
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
}

impl EventSink for CliSink {
    fn event(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::Transition(record) => {
                self.turn = record.turn;
                if let Some(trace) = &mut self.trace
                    && let Err(e) = trace.record(record)
                {
                    stderr_line(&format!("agentloop: cannot write the trace: {e}"));
                    self.trace = None;
                }
            }
            EngineEvent::TextDelta(text) if self.format == OutputFormat::Text => {
                self.wrote_text = self.stdout.write(text.as_bytes());
            }
            EngineEvent::Message(message) if self.format == OutputFormat::Text && message.role == Role::Assistant => {
                self.end_text_line();
            }
            EngineEvent::Usage { model, usage, .. } => self.last_usage = Some((model.clone(), *usage)),
            EngineEvent::Message(message) if self.format == OutputFormat::StreamJson => {
                let mut line = json!({"type": "user", "message": message, "session_id": self.session_id});
                if message.role == Role::Assistant {
                    line["type"] = json!("assistant");
                    if let Some((model, usage)) = self.last_usage.take() {
                        line["message"]["model"] = json!(model);
                        line["message"]["usage"] = json!(usage);
                    }
                }
                self.stream_json(line);
            }
            EngineEvent::ToolPhaseStarted { .. } => {
                if let Some(hook) = &self.on_tool_phase {
                    hook();
                }
            }
            EngineEvent::ToolStarted { id, name, input, running } => {
                let beside =
                    if running.is_empty() { String::new() } else { format!(" (beside {})", running.join(", ")) };
                self.trace_tool(&format!("⇢ {name} {id} started{beside}"));
                if self.show_tools {
                    stderr_line(&format!("→ {name} {}", compact(input)));
                }
                if self.format == OutputFormat::StreamJson {
                    self.stream_json(json!({"type": "system", "subtype": "tool_started", "tool_use_id": id,
                        "name": name, "concurrent_with": running, "session_id": self.session_id}));
                }
            }
            EngineEvent::ToolFinished { id, name, is_error, duration } => {
                let status = if *is_error { "error" } else { "ok" };
                let ms = duration.as_secs_f64() * 1e3;
                self.trace_tool(&format!("⇠ {name} {id} {status} after {ms:.1}ms"));
                if self.show_tools {
                    stderr_line(&format!("← {name} {status} ({ms:.1} ms)"));
                }
                if self.format == OutputFormat::StreamJson {
                    self.stream_json(json!({"type": "system", "subtype": "tool_finished", "tool_use_id": id,
                        "name": name, "is_error": is_error, "duration_ms": ms, "session_id": self.session_id}));
                }
            }
            EngineEvent::Warning(w) => stderr_line(&format!("agentloop: warning: {w}")),
            _ => {}
        }
    }
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

/// The result object of `--output-format json` and the last line of `stream-json`, in the
/// shape Claude Code prints, plus our `terminal_reason`.
pub fn result_object(outcome: &RunOutcome, session_id: &str, started: Instant) -> Value {
    let subtype = match outcome.terminal {
        TerminalReason::Completed => "success",
        TerminalReason::MaxTurns => "error_max_turns",
        _ => "error_during_execution",
    };
    json!({
        "type": "result",
        "subtype": subtype,
        "is_error": outcome.terminal != TerminalReason::Completed,
        "duration_ms": started.elapsed().as_millis() as u64,
        "num_turns": outcome.turns,
        "result": outcome.final_text,
        "session_id": session_id,
        "total_cost_usd": outcome.cost_usd,
        "usage": outcome.usage,
        "terminal_reason": outcome.terminal.as_str(),
        "error": outcome.error,
    })
}
