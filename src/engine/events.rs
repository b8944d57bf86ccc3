//! What the engine tells its caller while it runs.

use std::time::Duration;

use serde_json::Value;

use crate::engine::trace::TraceRecord;
use crate::protocol::Message;

/// One thing that happened in a run, streamed to the caller as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The machine took an edge.
    Transition(TraceRecord),
    /// Model text arrived.
    TextDelta(String),
    /// Model thinking arrived.
    ThinkingDelta(String),
    /// A message was appended to the conversation.
    Message(Message),
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
    /// Something the user should know that does not end the run.
    Warning(String),
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
