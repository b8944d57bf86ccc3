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

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(Duration::ZERO), "0.0s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human_duration(Duration::from_secs(150)), "2.5 min");
        assert_eq!(human_duration(Duration::from_secs(99_999)), "27.8 h");
    }
}
