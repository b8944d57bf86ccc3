//! Every edge of the table as a Rust value, generated from `transitions/loop.toml`
//! (see [`crate::engine::generated`]), and what an edge means to the front ends that show a
//! run. Those meanings are exhaustive matches: an edge added to the table does not compile
//! until each front end says what it shows for it.

pub use crate::engine::generated::Edge;

impl Edge {
    /// Whether taking the edge drops the reply attempt streamed so far, so that a front end
    /// erases the attempt's text: the stream broke and the request is retried
    /// (`consume.retry`), or a new stream opened while an earlier attempt's text is still
    /// unkept (a truncated reply withheld and sent again, a prompt-too-long recovery:
    /// `request.stream_opened`).
    #[deny(clippy::wildcard_enum_match_arm)]
    pub fn abandons_attempt(self) -> bool {
        match self {
            Edge::ConsumeRetry | Edge::RequestStreamOpened => true,
            Edge::PrepareRequest
            | Edge::PrepareBlockingLimit
            | Edge::RequestRetry
            | Edge::RequestFallback
            | Edge::RequestRetriesExhausted
            | Edge::RequestPromptTooLong
            | Edge::RequestModelError
            | Edge::RequestBudgetExhausted
            | Edge::ConsumeTools
            | Edge::ConsumeEndTurn
            | Edge::ConsumeTruncated
            | Edge::ConsumePauseTurn
            | Edge::ConsumeRetriesExhausted
            | Edge::ConsumePromptTooLong
            | Edge::ConsumeModelError
            | Edge::SamplingAbort
            | Edge::ToolsDone
            | Edge::ActingAbort
            | Edge::CheckpointAbort
            | Edge::CheckpointHookStopped
            | Edge::CheckpointMaxTurns
            | Edge::CheckpointNextTurn
            | Edge::CheckpointStructuredOutput
            | Edge::CheckpointStructuredOutputRetry
            | Edge::CheckpointStructuredOutputRetriesExhausted
            | Edge::CheckpointStopHookPrevented
            | Edge::CheckpointStopHookBlocking
            | Edge::CheckpointStopHookCap
            | Edge::CheckpointTokenBudgetContinuation
            | Edge::CheckpointCompleted
            | Edge::RecoverCollapseDrainRetry
            | Edge::RecoverReactiveCompactRetry
            | Edge::RecoverPromptTooLong
            | Edge::RecoverMaxOutputTokensEscalate
            | Edge::RecoverMaxOutputTokensRecovery
            | Edge::RecoverOutputExhausted => false,
        }
    }

    /// Whether a trace record names an edge that drops the reply attempt (see
    /// [`Edge::abandons_attempt`]); an id the engine does not know (an edited table's) does not.
    pub fn id_abandons_attempt(id: &str) -> bool {
        Edge::from_id(id).is_some_and(Edge::abandons_attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_retry_and_a_new_stream_drop_the_attempt() {
        let dropping: Vec<&str> = Edge::ALL.into_iter().filter(|e| e.abandons_attempt()).map(Edge::id).collect();
        assert_eq!(dropping, ["request.stream_opened", "consume.retry"]);
        assert!(Edge::id_abandons_attempt("consume.retry"));
        assert!(!Edge::id_abandons_attempt("consume.unknown"));
    }
}
