//! What a run prints: the model's text (or JSON) on stdout, tool activity and warnings on
//! stderr, and the trace on stderr or in a file ([`OutputSink`]); the result object and the
//! stream-json `system/init` line ([`result`]).
//!
//! In text mode a reply attempt that is abandoned (a stream cut and retried, a truncated reply
//! sent again) never leaves its text behind. On a terminal the text streams as it arrives and
//! an abandoned attempt is erased with ANSI escapes; when stdout is not a terminal a reply's
//! text is held back and printed only once the reply is kept in the conversation, when it can
//! no longer be retried ([`TextOut`]).

pub mod result;
pub mod text;

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::engine::events::{EngineEvent, EventSink, SubagentReport, SubagentRun};
use crate::engine::trace::TraceWriter;
use crate::launch::spec::OutputFormat;
use crate::launch::stdio::Stdout;
use crate::protocol::Role;
use crate::stderr;
pub use result::{
    Ending, PROTOCOL_VERSION, WithCommands, WithSandbox, result_object, system_init, with_structured_output,
};
pub use text::TextOut;

/// Called when a tool phase starts (the scripted model uses it for `abort.phase = tools`).
pub type ToolPhaseHook = Arc<dyn Fn() + Send + Sync>;

/// The sink of a front end's run: prints it in its [`OutputFormat`] (the headless command
/// line, and the SDK mode's stream-json).
pub struct OutputSink {
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
    /// In stream-json, keep the text blocks of subagents' replies on their lines (the SDK's
    /// `forwardSubagentText`); otherwise only their tool calls are forwarded.
    pub forward_subagent_text: bool,
    api_since: Option<f64>,
    /// Each running subagent's last reply usage, by agent id (for its assistant line).
    child_usage: std::collections::HashMap<String, (String, crate::protocol::Usage)>,
    /// Each running subagent's progress, by agent id, for its `task_progress` lines.
    child_progress: std::collections::HashMap<String, ChildProgress>,
    /// The `tool_use_result` values for the next user line, by tool_use id.
    tool_use_results: Vec<(String, Value)>,
    text: TextOut,
    last_usage: Option<(String, crate::protocol::Usage)>,
    started: Instant,
    /// How far the sink's clock runs ahead of the engine's (the first transition's `t_ms`),
    /// so the JSONL trace's event lines share the records' time base.
    trace_offset_ms: Option<f64>,
    turn: u32,
}

impl OutputSink {
    /// A sink printing in `format`.
    pub fn new(trace: Option<TraceWriter>, format: OutputFormat, session_id: String, stdout: Stdout) -> Self {
        OutputSink {
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
            forward_subagent_text: false,
            api_since: None,
            child_usage: std::collections::HashMap::new(),
            child_progress: std::collections::HashMap::new(),
            tool_use_results: Vec::new(),
            text: TextOut::new(if format == OutputFormat::Text { text::stdout_columns() } else { None }),
            last_usage: None,
            started: Instant::now(),
            trace_offset_ms: None,
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
        if self.format == OutputFormat::Text && stderr::is_terminal() {
            self.text.other_line(line);
        }
    }

    /// Write to the trace, if tracing; the first failure stops the trace with one line.
    fn write_trace(&mut self, write: impl FnOnce(&mut TraceWriter) -> std::io::Result<()>) {
        if let Some(trace) = &mut self.trace
            && let Err(e) = write(trace)
        {
            stderr::line(&format!("agentloop: cannot write the trace: {e}"));
            self.trace = None;
        }
    }

    /// A tool line of the run's own call, in the trace.
    fn trace_tool(&mut self, text: &str) {
        self.trace_tool_of(None, text);
    }

    /// A tool line in the trace: of the run's own call (`child_turn` `None`), or of a
    /// subagent's call at the child's turn, indented under its `Agent` call.
    fn trace_tool_of(&mut self, child_turn: Option<u32>, text: &str) {
        self.end_text_line();
        if self.trace.is_some() && self.pretty_trace_on_stderr {
            // The line's time, turn and indent come before the text.
            let width = if child_turn.is_some() { 38 } else { 32 };
            self.note_stderr_line(&format!("{:width$}{text}", ""));
        }
        let t_ms = self.started.elapsed().as_secs_f64() * 1e3;
        let turn = self.turn;
        self.write_trace(|trace| match child_turn {
            Some(turn) => trace.child_tool_line(t_ms, turn, text),
            None => trace.tool_line(t_ms, turn, text),
        });
    }

    /// A line of the JSONL trace for what happens between transitions — a tool call's start
    /// and end, a reply's first event, a retry's wait — in the records' time base, for `trace
    /// view`'s timeline; `run_id` names a subagent's run. Nothing in the pretty format (it has
    /// its tool lines) or before the first transition.
    fn trace_event(&mut self, run_id: Option<&str>, event: &EngineEvent) {
        if !self.trace.as_ref().is_some_and(TraceWriter::is_jsonl) {
            return;
        }
        let now = self.started.elapsed().as_secs_f64() * 1e3;
        if let EngineEvent::Transition(record) = event {
            self.trace_offset_ms.get_or_insert(now - record.t_ms);
            return;
        }
        let Some(offset) = self.trace_offset_ms else { return };
        let t_ms = ((now - offset) * 1000.0).round() / 1000.0;
        let mut line = match event {
            EngineEvent::ToolStarted { id, name, running, early, .. } => json!({"type": "tool", "phase": "start",
                "t_ms": t_ms, "id": id, "name": name, "early": early, "beside": running}),
            EngineEvent::ToolFinished { id, name, is_error, duration, .. } => json!({"type": "tool", "phase": "end",
                "t_ms": t_ms, "id": id, "name": name, "is_error": is_error,
                "duration_ms": (duration.as_secs_f64() * 1e6).round() / 1e3}),
            EngineEvent::ReplyStarted { model, .. } => {
                json!({"type": "reply", "phase": "start", "t_ms": t_ms, "model": model})
            }
            EngineEvent::Retrying { attempt, max, delay, error } => json!({"type": "retry", "t_ms": t_ms,
                "attempt": attempt, "max": max, "delay_ms": delay.as_millis() as u64, "error": error}),
            _ => return,
        };
        if let Some(run) = run_id {
            line["run_id"] = json!(run);
        }
        self.write_trace(|trace| trace.event(&line));
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

impl EventSink for OutputSink {
    fn event(&mut self, event: &EngineEvent) {
        self.trace_event(None, event);
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
                self.write_trace(|trace| trace.record(record));
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
                let usage = self.last_usage.take();
                let mut line = message_line(message, uuid, &self.session_id, usage.as_ref(), &self.model, reply);
                if message.role == Role::User
                    && let Some(value) = self.take_tool_use_result(message)
                {
                    line["tool_use_result"] = value;
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
                    stderr::line(&line);
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
                    stderr::line(&line);
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
                stderr::line(&line);
            }
            EngineEvent::Warning(w) => {
                let line = format!("agentloop: warning: {w}");
                self.end_text_line();
                self.note_stderr_line(&line);
                stderr::line(&line);
            }
            EngineEvent::ToolUseResult { id, value } => self.tool_use_results.push((id.clone(), value.clone())),
            EngineEvent::SubagentStarted { agent, header } => self.subagent_started(agent, header),
            EngineEvent::Subagent { agent, event } => self.subagent_event(agent, event),
            EngineEvent::SubagentEnded { agent, report } => self.subagent_ended(agent, report),
            _ => {}
        }
    }
}

/// How far a running subagent has got: what its `task_progress` lines say.
#[derive(Debug, Clone, Copy)]
struct ChildProgress {
    started: Instant,
    /// The child's turn, for its trace lines.
    turn: u32,
    tool_uses: u32,
    /// Its tokens so far.
    usage: crate::engine::state::UsageTotals,
}

impl OutputSink {
    /// The `tool_use_result` of the first result in `message` that has one.
    fn take_tool_use_result(&mut self, message: &crate::protocol::Message) -> Option<Value> {
        let ids: Vec<&str> = message
            .content
            .iter()
            .filter_map(|b| match b {
                crate::protocol::ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let found = self.tool_use_results.iter().position(|(id, _)| ids.contains(&id.as_str()))?;
        let value = self.tool_use_results.remove(found).1;
        self.tool_use_results.retain(|(id, _)| !ids.contains(&id.as_str()));
        Some(value)
    }

    /// A line for a person, on stderr, about a subagent.
    fn subagent_note(&mut self, text: &str) {
        self.end_text_line();
        self.note_stderr_line(text);
        stderr::line(text);
    }

    fn subagent_started(&mut self, agent: &SubagentRun, header: &crate::engine::trace::TraceHeader) {
        self.write_trace(|trace| trace.header(header));
        self.child_progress.insert(
            agent.agent_id.clone(),
            ChildProgress { started: Instant::now(), turn: 1, tool_uses: 0, usage: Default::default() },
        );
        if self.show_tools {
            self.subagent_note(&format!("  ↳ {} {} started: {}", agent.agent_type, agent.agent_id, agent.description));
        }
        if self.format == OutputFormat::StreamJson {
            self.stream_json(json!({"type": "system", "subtype": "task_started", "task_id": agent.agent_id,
                "run_id": agent.run_id, "tool_use_id": agent.tool_use_id, "description": agent.description,
                "subagent_type": agent.agent_type, "is_backgrounded": agent.background, "spawn_depth": 1,
                "task_type": "local_agent", "prompt": agent.prompt,
                "uuid": crate::session::Uuid::new_v4().to_string(), "session_id": self.session_id}));
        }
    }

    fn subagent_ended(&mut self, agent: &SubagentRun, report: &SubagentReport) {
        self.child_usage.remove(&agent.agent_id);
        self.child_progress.remove(&agent.agent_id);
        let millis = report.duration_ms.as_millis();
        if self.show_tools {
            self.subagent_note(&format!(
                "  ↳ {} {} {} ({}) after {millis} ms",
                agent.agent_type,
                agent.agent_id,
                report.status,
                report.terminal.as_str()
            ));
        }
        if self.format == OutputFormat::StreamJson {
            let tokens = report.usage.total_tokens();
            let ended = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            self.stream_json(json!({"type": "system", "subtype": "task_updated", "task_id": agent.agent_id,
                "run_id": agent.run_id, "patch": {"status": report.status, "end_time": ended.as_millis() as u64},
                "uuid": crate::session::Uuid::new_v4().to_string(), "session_id": self.session_id}));
            self.stream_json(json!({"type": "system", "subtype": "task_notification", "task_id": agent.agent_id,
                "run_id": agent.run_id, "tool_use_id": agent.tool_use_id, "status": report.status,
                "output_file": report.output_file, "summary": report.summary,
                "terminal_reason": report.terminal.as_str(),
                "usage": {"total_tokens": tokens, "tool_uses": report.tool_uses, "duration_ms": millis},
                "uuid": crate::session::Uuid::new_v4().to_string(), "session_id": self.session_id}));
        }
    }

    /// One event of a subagent's run: its transitions go to the trace (indented in the pretty
    /// format), its tool calls to the trace and stderr, and in stream-json its messages and
    /// tool lines carry `parent_tool_use_id` (the `Agent` call) and `agent_id`. Its text never
    /// reaches stdout's text: the parent relays what matters.
    fn subagent_event(&mut self, agent: &SubagentRun, event: &EngineEvent) {
        self.trace_event(Some(&agent.run_id), event);
        let stream_json = self.format == OutputFormat::StreamJson;
        match event {
            EngineEvent::Transition(record) => {
                if let Some(progress) = self.child_progress.get_mut(&agent.agent_id) {
                    progress.turn = record.turn;
                }
                self.write_trace(|trace| trace.record(record));
            }
            EngineEvent::Usage { model, usage, .. } => {
                self.child_usage.insert(agent.agent_id.clone(), (model.clone(), *usage));
                if let Some(progress) = self.child_progress.get_mut(&agent.agent_id) {
                    progress.usage.add(usage);
                }
            }
            EngineEvent::ToolStarted { id, name, input, .. } => {
                let turn = self.child_progress.get(&agent.agent_id).map_or(1, |p| p.turn);
                self.trace_tool_of(
                    Some(turn),
                    &format!("⇢ {name} {id} started ({} {})", agent.agent_type, agent.agent_id),
                );
                if self.show_tools {
                    self.subagent_note(&format!("  ↳ {} → {name} {}", agent.agent_type, compact(input)));
                }
                if stream_json {
                    self.stream_json(json!({"type": "system", "subtype": "tool_started", "tool_use_id": id,
                        "name": name, "parent_tool_use_id": agent.tool_use_id, "agent_id": agent.agent_id,
                        "session_id": self.session_id}));
                }
            }
            EngineEvent::ToolFinished { id, name, is_error, duration, .. } => {
                let status = if *is_error { "error" } else { "ok" };
                let ms = duration.as_secs_f64() * 1e3;
                let turn = self.child_progress.get(&agent.agent_id).map_or(1, |p| p.turn);
                self.trace_tool_of(Some(turn), &format!("⇠ {name} {id} {status} after {ms:.1}ms"));
                if self.show_tools {
                    self.subagent_note(&format!("  ↳ {} ← {name} {status} ({ms:.1} ms)", agent.agent_type));
                }
                if stream_json {
                    self.stream_json(json!({"type": "system", "subtype": "tool_finished", "tool_use_id": id,
                        "name": name, "is_error": is_error, "duration_ms": ms,
                        "parent_tool_use_id": agent.tool_use_id, "agent_id": agent.agent_id,
                        "session_id": self.session_id}));
                    if let Some(progress) = self.child_progress.get_mut(&agent.agent_id) {
                        progress.tool_uses += 1;
                        let progress = *progress;
                        self.stream_json(json!({"type": "system", "subtype": "task_progress",
                            "task_id": agent.agent_id, "run_id": agent.run_id, "tool_use_id": agent.tool_use_id,
                            "description": agent.description, "subagent_type": agent.agent_type,
                            "usage": {"total_tokens": progress.usage.total_tokens(), "tool_uses": progress.tool_uses,
                                "duration_ms": progress.started.elapsed().as_millis() as u64},
                            "last_tool_name": name, "uuid": crate::session::Uuid::new_v4().to_string(),
                            "session_id": self.session_id}));
                    }
                }
            }
            EngineEvent::Message { message, uuid, reply } if stream_json => {
                let mut message = message.clone();
                if message.role == Role::Assistant && !self.forward_subagent_text {
                    message.content.retain(|b| !matches!(b, crate::protocol::ContentBlock::Text { .. }));
                    if message.content.is_empty() {
                        return;
                    }
                }
                let usage = self.child_usage.get(&agent.agent_id);
                let mut line = message_line(&message, uuid, &self.session_id, usage, &agent.model, reply);
                line["parent_tool_use_id"] = json!(agent.tool_use_id);
                line["agent_id"] = json!(agent.agent_id);
                line["subagent_type"] = json!(agent.agent_type);
                line["task_description"] = json!(agent.description);
                self.stream_json(line);
            }
            EngineEvent::Warning(w) => {
                let line = format!("agentloop: warning: subagent {} {}: {w}", agent.agent_type, agent.agent_id);
                self.subagent_note(&line);
            }
            _ => {}
        }
    }
}

/// The stream-json line of a message of the conversation, as Claude Code writes it: its uuid
/// is its transcript line's; an assistant line has the `type`, `stop_reason` and `model` of
/// its message, the reply's `usage` when it came (`usage`: the model that answered and its
/// usage; `model` otherwise) and what the API said about the reply. `parent_tool_use_id` is
/// `null`: a subagent's line sets it.
fn message_line(
    message: &crate::protocol::Message,
    uuid: &crate::session::Uuid,
    session_id: &str,
    usage: Option<&(String, crate::protocol::Usage)>,
    model: &str,
    reply: &Option<Box<crate::session::ReplyInfo>>,
) -> Value {
    let mut line = json!({"type": "user", "message": message, "session_id": session_id,
        "parent_tool_use_id": null, "uuid": uuid.to_string()});
    if message.role == Role::Assistant {
        line["type"] = json!("assistant");
        let asks_tools = message.tool_uses().next().is_some();
        line["message"]["type"] = json!("message");
        line["message"]["stop_reason"] = json!(if asks_tools { "tool_use" } else { "end_turn" });
        match usage {
            Some((model, usage)) => {
                line["message"]["model"] = json!(model);
                line["message"]["usage"] = json!(usage);
            }
            None => line["message"]["model"] = json!(model),
        }
        if let Some(reply) = reply {
            with_reply_info(&mut line, reply);
        }
    }
    line
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

fn compact(input: &Value) -> String {
    let text = input.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
