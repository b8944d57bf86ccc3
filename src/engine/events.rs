//! What the engine tells its caller while it runs.
//!
//! Every [`EngineEvent`] serializes to one JSON object a frontend can forward as a JSON line:
//! `type` names the variant in snake_case, durations are milliseconds (`duration_ms`,
//! `delay_ms`, to the microsecond), and a variant that wraps one value puts it under a field
//! (`text`, `record`, `message`, `warning`):
//!
//! ```json
//! {"type":"text_delta","text":"Hel"}
//! {"type":"tool_finished","id":"toolu_1","name":"Read","is_error":false,"duration_ms":12.5}
//! ```
//!
//! The calls of an MCP server's tools carry `"mcp":{"server":…,"tool":…}` besides (the server's
//! name and the tool's own name on it); other calls have no `mcp` field.

use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::engine::trace::{TraceHeader, TraceRecord};
use crate::permissions::{Approval, ApprovalRequest};
use crate::protocol::Message;
use crate::session::{ReplyInfo, Uuid};
use crate::tools::McpOrigin;

/// One thing that happened in a run, streamed to the caller as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The machine took an edge.
    Transition(TraceRecord),
    /// Model text arrived for block `index` of the reply.
    TextDelta {
        /// The reply's content block the text extends.
        index: usize,
        /// The text.
        text: String,
    },
    /// Model thinking arrived for block `index` of the reply.
    ThinkingDelta {
        /// The reply's content block the thinking extends.
        index: usize,
        /// The thinking.
        thinking: String,
    },
    /// The reply's `message_start` arrived (forwarded as a `stream_event` by
    /// `--include-partial-messages`, like the rest of the reply's events below).
    ReplyStarted {
        /// The message id the API gave.
        id: Option<String>,
        /// The model that answers.
        model: Option<String>,
        /// The usage `message_start` reported.
        usage: crate::protocol::Usage,
    },
    /// Content block `index` of the reply started, as `block`.
    BlockStarted {
        /// The block's index.
        index: usize,
        /// The block as `content_block_start` gave it.
        block: Value,
    },
    /// A piece of the input JSON of the tool call in block `index` arrived.
    InputJsonDelta {
        /// The block's index.
        index: usize,
        /// The JSON text (consecutive pieces of one read joined).
        partial_json: String,
    },
    /// Content block `index` of the reply is complete.
    BlockStopped {
        /// The block's index.
        index: usize,
    },
    /// The reply's `message_delta`: why it stopped, and the usage so far.
    ReplyDelta {
        /// The stop reason.
        stop_reason: Option<crate::protocol::StopReason>,
        /// The stop sequence that matched.
        stop_sequence: Option<String>,
        /// The reply's usage, merged.
        usage: crate::protocol::Usage,
    },
    /// A message was appended to the conversation.
    Message {
        /// The conversation's last message: the one appended, merged into the message before
        /// it when both have the same role.
        message: Message,
        /// The uuid of the appended message's transcript line (in stream-json, the `uuid` of
        /// its line on stdout too).
        uuid: Uuid,
        /// For a reply of the model: what the API said about it (`message.id`, `usage`,
        /// the `request-id`, ...).
        reply: Option<Box<ReplyInfo>>,
    },
    /// The Stop hooks of an end of turn start running.
    StopHooksStarted,
    /// The tool phase of a reply begins.
    ToolPhaseStarted {
        /// Number of calls in the phase.
        calls: usize,
    },
    /// A tool call started.
    ToolStarted {
        /// The tool_use id.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input.
        input: Value,
        /// Names of the calls already running beside it.
        running: Vec<String>,
        /// It started while the reply was still streaming (only concurrency-safe, read-only
        /// calls do); `false` when it started after the reply's `message_stop`.
        early: bool,
        /// The MCP server and remote tool, for a tool of an MCP server.
        mcp: Option<McpOrigin>,
    },
    /// A tool call finished.
    ToolFinished {
        /// The tool_use id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// How long it ran.
        duration: Duration,
        /// The MCP server and remote tool, for a tool of an MCP server.
        mcp: Option<McpOrigin>,
        /// A glimpse of the result for a person watching ([`result_preview`]); not sent on the
        /// wire.
        preview: String,
    },
    /// A reply finished; its usage and, when the model is in the price table, its cost.
    Usage {
        /// The model that answered.
        model: String,
        /// Token counts of the reply.
        usage: crate::protocol::Usage,
        /// Cost of the reply in USD.
        cost_usd: Option<f64>,
    },
    /// A model request is about to be sent (after any backoff): one attempt of the turn's
    /// call, which ends at the next transition that leaves Consume (or Request, when the
    /// request fails before a stream opens).
    AttemptStarted {
        /// The model asked.
        model: String,
        /// The request's output cap.
        max_tokens: u32,
        /// 1 plus the retries the run's `retries` counter has used so far.
        attempt: u32,
    },
    /// The attempt in flight failed: the request was refused or its stream broke.
    AttemptFailed {
        /// A short, low-cardinality name of the failure (`overloaded_error`, `http_500`,
        /// `connection`, `idle_timeout`, …), for `error.type`.
        kind: String,
        /// The failure as a person reads it.
        message: String,
    },
    /// A failed model call will be sent again after a wait.
    Retrying {
        /// Which retry this is, counting from 1.
        attempt: u32,
        /// How many retries the run allows (`--max-retries`).
        max: u32,
        /// How long the engine waits before sending again.
        delay: Duration,
        /// The failure being retried.
        error: String,
    },
    /// The run's approver was asked whether a call may run, and answered (sent when the call
    /// finishes, before its [`EngineEvent::ToolFinished`]).
    ApprovalAnswered {
        /// The question.
        request: ApprovalRequest,
        /// The answer.
        approval: Approval,
    },
    /// Something the user should know that does not end the run.
    Warning(String),
    /// A subagent's run started, for the `Agent` call `agent.tool_use_id`; `header` is its
    /// trace header.
    SubagentStarted {
        /// Which subagent.
        agent: Arc<SubagentRun>,
        /// Its trace header (bounds and counters of the child machine).
        header: Box<TraceHeader>,
    },
    /// Something a subagent's run did, as its own sink saw it.
    Subagent {
        /// Which subagent.
        agent: Arc<SubagentRun>,
        /// What happened in it.
        event: Box<EngineEvent>,
    },
    /// A subagent's run ended.
    SubagentEnded {
        /// Which subagent.
        agent: Arc<SubagentRun>,
        /// How it ended.
        report: Box<SubagentReport>,
    },
    /// What a call gives the caller beside the model's `tool_result` (stream-json's
    /// `tool_use_result`): sent before the message holding the result.
    ToolUseResult {
        /// The tool_use id.
        id: String,
        /// The value.
        value: Value,
    },
}

/// One subagent run: the `Agent` call that started it and who it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubagentRun {
    /// Its id (`agent_id` on its stream-json lines, `agentId` in its transcript).
    pub agent_id: String,
    /// Its run's id (its trace's `run_id`).
    pub run_id: String,
    /// The id of the run whose call started it.
    pub parent_run_id: String,
    /// The `Agent` call's tool_use id.
    pub tool_use_id: String,
    /// The definition it runs (`subagent_type`).
    pub agent_type: String,
    /// The call's `description`.
    pub description: String,
    /// The call's `prompt`: the child's first user message.
    pub prompt: String,
    /// The model it runs on.
    pub model: String,
    /// Whether it runs in the background (the call returned at once).
    pub background: bool,
}

/// How a subagent's run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentReport {
    /// `completed`, or `failed` for a run that ended in any other terminal reason.
    pub status: &'static str,
    /// The run's terminal reason.
    pub terminal: crate::engine::reason::TerminalReason,
    /// Its final report (the text of its last reply).
    pub summary: String,
    /// Tokens it used.
    pub usage: crate::engine::state::UsageTotals,
    /// What its model calls cost in USD.
    pub cost_usd: f64,
    /// Tool calls it made.
    pub tool_uses: u32,
    /// The names of the tools it used, in order of first use.
    pub tools_used: Vec<String>,
    /// How long it ran.
    #[serde(serialize_with = "millis")]
    pub duration_ms: Duration,
    /// Its turns.
    pub turns: u32,
    /// The file its final report was written to (`output_file` of `task_notification`), in
    /// the session's directory of task output, which read-only tools may read.
    pub output_file: Option<std::path::PathBuf>,
}

/// The JSON form of an [`EngineEvent`].
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire<'a> {
    Transition {
        record: &'a TraceRecord,
    },
    TextDelta {
        index: usize,
        text: &'a str,
    },
    ThinkingDelta {
        index: usize,
        thinking: &'a str,
    },
    ReplyStarted {
        id: Option<&'a str>,
        model: Option<&'a str>,
        usage: &'a crate::protocol::Usage,
    },
    BlockStarted {
        index: usize,
        block: &'a Value,
    },
    InputJsonDelta {
        index: usize,
        partial_json: &'a str,
    },
    BlockStopped {
        index: usize,
    },
    ReplyDelta {
        stop_reason: Option<&'a crate::protocol::StopReason>,
        stop_sequence: Option<&'a str>,
        usage: &'a crate::protocol::Usage,
    },
    Message {
        message: &'a Message,
        uuid: String,
    },
    StopHooksStarted,
    ToolPhaseStarted {
        calls: usize,
    },
    ToolStarted {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
        running: &'a [String],
        early: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        mcp: Option<&'a McpOrigin>,
    },
    ToolFinished {
        id: &'a str,
        name: &'a str,
        is_error: bool,
        #[serde(serialize_with = "millis")]
        duration_ms: Duration,
        #[serde(skip_serializing_if = "Option::is_none")]
        mcp: Option<&'a McpOrigin>,
    },
    Usage {
        model: &'a str,
        usage: &'a crate::protocol::Usage,
        cost_usd: Option<f64>,
    },
    AttemptStarted {
        model: &'a str,
        max_tokens: u32,
        attempt: u32,
    },
    AttemptFailed {
        kind: &'a str,
        message: &'a str,
    },
    Retrying {
        attempt: u32,
        max: u32,
        #[serde(serialize_with = "millis")]
        delay_ms: Duration,
        error: &'a str,
    },
    ApprovalAnswered {
        #[serde(flatten)]
        request: &'a ApprovalRequest,
        #[serde(flatten)]
        approval: &'a Approval,
    },
    Warning {
        warning: &'a str,
    },
    SubagentStarted {
        agent: &'a SubagentRun,
        header: &'a TraceHeader,
    },
    Subagent {
        agent_id: &'a str,
        event: &'a EngineEvent,
    },
    SubagentEnded {
        agent: &'a SubagentRun,
        report: &'a SubagentReport,
    },
    ToolUseResult {
        id: &'a str,
        value: &'a Value,
    },
}

/// A duration as milliseconds, to the microsecond.
fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

impl Serialize for EngineEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            EngineEvent::Transition(record) => Wire::Transition { record },
            EngineEvent::TextDelta { index, text } => Wire::TextDelta { index: *index, text },
            EngineEvent::ThinkingDelta { index, thinking } => Wire::ThinkingDelta { index: *index, thinking },
            EngineEvent::ReplyStarted { id, model, usage } => {
                Wire::ReplyStarted { id: id.as_deref(), model: model.as_deref(), usage }
            }
            EngineEvent::BlockStarted { index, block } => Wire::BlockStarted { index: *index, block },
            EngineEvent::InputJsonDelta { index, partial_json } => Wire::InputJsonDelta { index: *index, partial_json },
            EngineEvent::BlockStopped { index } => Wire::BlockStopped { index: *index },
            EngineEvent::ReplyDelta { stop_reason, stop_sequence, usage } => {
                Wire::ReplyDelta { stop_reason: stop_reason.as_ref(), stop_sequence: stop_sequence.as_deref(), usage }
            }
            EngineEvent::Message { message, uuid, .. } => Wire::Message { message, uuid: uuid.to_string() },
            EngineEvent::StopHooksStarted => Wire::StopHooksStarted,
            EngineEvent::ToolPhaseStarted { calls } => Wire::ToolPhaseStarted { calls: *calls },
            EngineEvent::ToolStarted { id, name, input, running, early, mcp } => {
                Wire::ToolStarted { id, name, input, running, early: *early, mcp: mcp.as_ref() }
            }
            EngineEvent::ToolFinished { id, name, is_error, duration, mcp, .. } => {
                Wire::ToolFinished { id, name, is_error: *is_error, duration_ms: *duration, mcp: mcp.as_ref() }
            }
            EngineEvent::Usage { model, usage, cost_usd } => Wire::Usage { model, usage, cost_usd: *cost_usd },
            EngineEvent::AttemptStarted { model, max_tokens, attempt } => {
                Wire::AttemptStarted { model, max_tokens: *max_tokens, attempt: *attempt }
            }
            EngineEvent::AttemptFailed { kind, message } => Wire::AttemptFailed { kind, message },
            EngineEvent::Retrying { attempt, max, delay, error } => {
                Wire::Retrying { attempt: *attempt, max: *max, delay_ms: *delay, error }
            }
            EngineEvent::ApprovalAnswered { request, approval } => Wire::ApprovalAnswered { request, approval },
            EngineEvent::Warning(warning) => Wire::Warning { warning },
            EngineEvent::SubagentStarted { agent, header } => Wire::SubagentStarted { agent, header },
            EngineEvent::Subagent { agent, event } => Wire::Subagent { agent_id: &agent.agent_id, event },
            EngineEvent::SubagentEnded { agent, report } => Wire::SubagentEnded { agent, report },
            EngineEvent::ToolUseResult { id, value } => Wire::ToolUseResult { id, value },
        };
        wire.serialize(s)
    }
}

/// Characters of a result's first line kept by [`result_preview`].
const PREVIEW_CHARS: usize = 80;

/// A tool result at a glance: its first non-blank line, trimmed, its control characters made
/// spaces, cut to 80 characters (`…` when cut), and `(+N lines)` when more lines follow; empty
/// for an empty result.
pub fn result_preview(content: &str) -> String {
    let mut lines = content.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else { return String::new() };
    // Tabs and control characters (an escape sequence in a command's output) become spaces.
    let first: String = first.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let first = first.as_str();
    let mut preview = match first.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None => first.to_owned(),
    };
    let more = lines.count();
    if more > 0 {
        preview.push_str(&format!(" (+{more} lines)"));
    }
    preview
}

/// Receives [`EngineEvent`]s. Closures `FnMut(&EngineEvent)` are sinks.
pub trait EventSink {
    /// Handle one event. Must not block for long: the machine waits for it.
    fn event(&mut self, event: &EngineEvent);
}

impl<F: FnMut(&EngineEvent)> EventSink for F {
    fn event(&mut self, event: &EngineEvent) {
        self(event)
    }
}

/// A wait for people: `0.5s`, `1.0s`, `2.5 min`, `27.8 h`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 120.0 {
        format!("{secs:.1}s")
    } else if secs < 7200.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(event: &EngineEvent) -> String {
        serde_json::to_string(event).unwrap()
    }

    #[test]
    fn events_serialize_as_tagged_json_lines() {
        assert_eq!(
            line(&EngineEvent::TextDelta { index: 0, text: "Hel".into() }),
            r#"{"type":"text_delta","index":0,"text":"Hel"}"#
        );
        let started = EngineEvent::ToolStarted {
            id: "toolu_1".into(),
            name: "Read".into(),
            input: json!({"file_path": "a.txt"}),
            running: vec!["Grep".into()],
            early: true,
            mcp: None,
        };
        assert_eq!(
            line(&started),
            r#"{"type":"tool_started","id":"toolu_1","name":"Read","input":{"file_path":"a.txt"},"running":["Grep"],"early":true}"#
        );
        let finished = EngineEvent::ToolFinished {
            id: "toolu_1".into(),
            name: "Read".into(),
            is_error: false,
            duration: Duration::from_micros(12_345),
            mcp: None,
            preview: "hello".into(),
        };
        assert_eq!(
            line(&finished),
            r#"{"type":"tool_finished","id":"toolu_1","name":"Read","is_error":false,"duration_ms":12.345}"#
        );
        let origin = McpOrigin { server: "everything".into(), tool: "get-sum".into() };
        let started = EngineEvent::ToolStarted {
            id: "toolu_2".into(),
            name: "mcp__everything__get-sum".into(),
            input: json!({"a": 1, "b": 2}),
            running: vec![],
            early: false,
            mcp: Some(origin.clone()),
        };
        assert_eq!(
            line(&started),
            r#"{"type":"tool_started","id":"toolu_2","name":"mcp__everything__get-sum","input":{"a":1,"b":2},"running":[],"early":false,"mcp":{"server":"everything","tool":"get-sum"}}"#
        );
        let finished = EngineEvent::ToolFinished {
            id: "toolu_2".into(),
            name: "mcp__everything__get-sum".into(),
            is_error: true,
            duration: Duration::from_micros(2_500),
            mcp: Some(origin),
            preview: "Error: no such sum".into(),
        };
        assert_eq!(
            line(&finished),
            r#"{"type":"tool_finished","id":"toolu_2","name":"mcp__everything__get-sum","is_error":true,"duration_ms":2.5,"mcp":{"server":"everything","tool":"get-sum"}}"#
        );
        let record = TraceRecord {
            record_type: "transition",
            seq: 3,
            t_ms: 1.5,
            turn: 1,
            from: "Consume",
            to: "ExecuteTools",
            edge: "consume.tools".into(),
            kind: "internal",
            reason: None,
            event: "reply_done".into(),
            guards: [("has_tool_use".to_owned(), crate::table::guard::FactValue::Bool(true))].into(),
            counters: [("turn".to_owned(), 1)].into(),
            delay_ms: None,
            detail: None,
            link: None,
        };
        assert_eq!(
            line(&EngineEvent::Transition(record)),
            r#"{"type":"transition","record":{"type":"transition","seq":3,"t_ms":1.5,"turn":1,"from":"Consume","to":"ExecuteTools","edge":"consume.tools","kind":"internal","reason":null,"event":"reply_done","guards":{"has_tool_use":true},"counters":{"turn":1}}}"#
        );
        let retrying = EngineEvent::Retrying {
            attempt: 1,
            max: 10,
            delay: Duration::from_millis(500),
            error: "overloaded".into(),
        };
        assert_eq!(
            line(&retrying),
            r#"{"type":"retrying","attempt":1,"max":10,"delay_ms":500.0,"error":"overloaded"}"#
        );
        let usage = EngineEvent::Usage {
            model: "claude-sonnet-4-5".into(),
            usage: crate::protocol::Usage { input_tokens: Some(10), output_tokens: Some(2), ..Default::default() },
            cost_usd: Some(0.5),
        };
        assert_eq!(
            line(&usage),
            r#"{"type":"usage","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":2},"cost_usd":0.5}"#
        );
        assert_eq!(line(&EngineEvent::StopHooksStarted), r#"{"type":"stop_hooks_started"}"#);
        assert_eq!(line(&EngineEvent::Warning("careful".into())), r#"{"type":"warning","warning":"careful"}"#);
    }

    #[test]
    fn approval_events_carry_the_question_and_the_answer() {
        let request = ApprovalRequest {
            tool_use_id: "toolu_2".into(),
            tool: "Bash".into(),
            input: json!({"command": "git commit -m x"}),
            reason: "no allow rule covers `git commit -m x`".into(),
            suggestion: Some("Bash(git commit:*)".into()),
            agent: None,
        };
        let event = |approval| EngineEvent::ApprovalAnswered { request: request.clone(), approval };
        let head = r#"{"type":"approval_answered","tool_use_id":"toolu_2","tool":"Bash","input":{"command":"git commit -m x"},"reason":"no allow rule covers `git commit -m x`","suggestion":"Bash(git commit:*)","#;
        assert_eq!(line(&event(Approval::AllowOnce)), format!(r#"{head}"answer":"allow_once"}}"#));
        assert_eq!(
            line(&event(Approval::AllowForSession { rule: "Bash(git commit:*)".into() })),
            format!(r#"{head}"answer":"allow_for_session","rule":"Bash(git commit:*)"}}"#)
        );
        assert_eq!(
            line(&event(Approval::DenyAndInterrupt { message: "stop".into() })),
            format!(r#"{head}"answer":"deny_and_interrupt","message":"stop"}}"#)
        );
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(Duration::ZERO), "0.0s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human_duration(Duration::from_secs(150)), "2.5 min");
        assert_eq!(human_duration(Duration::from_secs(99_999)), "27.8 h");
    }
}
