//! Every edge of the table as a Rust value: the only way the machine transitions is
//! `go(Edge::X, target)`, and a test checks this list equals the table's edge ids.

/// One edge of `transitions/loop.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    /// `prepare.request`
    PrepareRequest,
    /// `prepare.blocking_limit`
    PrepareBlockingLimit,
    /// `request.stream_opened`
    RequestStreamOpened,
    /// `request.retry`
    RequestRetry,
    /// `request.fallback`
    RequestFallback,
    /// `request.retries_exhausted`
    RequestRetriesExhausted,
    /// `request.prompt_too_long`
    RequestPromptTooLong,
    /// `request.model_error`
    RequestModelError,
    /// `consume.tools`
    ConsumeTools,
    /// `consume.end_turn`
    ConsumeEndTurn,
    /// `consume.truncated`
    ConsumeTruncated,
    /// `consume.pause_turn`
    ConsumePauseTurn,
    /// `consume.retry`
    ConsumeRetry,
    /// `consume.retries_exhausted`
    ConsumeRetriesExhausted,
    /// `consume.prompt_too_long`
    ConsumePromptTooLong,
    /// `consume.model_error`
    ConsumeModelError,
    /// `sampling.abort`
    SamplingAbort,
    /// `tools.done`
    ToolsDone,
    /// `acting.abort`
    ActingAbort,
    /// `checkpoint.abort`
    CheckpointAbort,
    /// `checkpoint.hook_stopped`
    CheckpointHookStopped,
    /// `checkpoint.max_turns`
    CheckpointMaxTurns,
    /// `checkpoint.next_turn`
    CheckpointNextTurn,
    /// `checkpoint.stop_hook_prevented`
    CheckpointStopHookPrevented,
    /// `checkpoint.stop_hook_blocking`
    CheckpointStopHookBlocking,
    /// `checkpoint.stop_hook_cap`
    CheckpointStopHookCap,
    /// `checkpoint.token_budget_continuation`
    CheckpointTokenBudgetContinuation,
    /// `checkpoint.completed`
    CheckpointCompleted,
    /// `recover.collapse_drain_retry`
    RecoverCollapseDrainRetry,
    /// `recover.reactive_compact_retry`
    RecoverReactiveCompactRetry,
    /// `recover.prompt_too_long`
    RecoverPromptTooLong,
    /// `recover.max_output_tokens_escalate`
    RecoverMaxOutputTokensEscalate,
    /// `recover.max_output_tokens_recovery`
    RecoverMaxOutputTokensRecovery,
    /// `recover.output_exhausted`
    RecoverOutputExhausted,
}

impl Edge {
    /// Every edge, in table order.
    pub const ALL: [Edge; 34] = [
        Edge::PrepareRequest,
        Edge::PrepareBlockingLimit,
        Edge::RequestStreamOpened,
        Edge::RequestRetry,
        Edge::RequestFallback,
        Edge::RequestRetriesExhausted,
        Edge::RequestPromptTooLong,
        Edge::RequestModelError,
        Edge::ConsumeTools,
        Edge::ConsumeEndTurn,
        Edge::ConsumeTruncated,
        Edge::ConsumePauseTurn,
        Edge::ConsumeRetry,
        Edge::ConsumeRetriesExhausted,
        Edge::ConsumePromptTooLong,
        Edge::ConsumeModelError,
        Edge::SamplingAbort,
        Edge::ToolsDone,
        Edge::ActingAbort,
        Edge::CheckpointAbort,
        Edge::CheckpointHookStopped,
        Edge::CheckpointMaxTurns,
        Edge::CheckpointNextTurn,
        Edge::CheckpointStopHookPrevented,
        Edge::CheckpointStopHookBlocking,
        Edge::CheckpointStopHookCap,
        Edge::CheckpointTokenBudgetContinuation,
        Edge::CheckpointCompleted,
        Edge::RecoverCollapseDrainRetry,
        Edge::RecoverReactiveCompactRetry,
        Edge::RecoverPromptTooLong,
        Edge::RecoverMaxOutputTokensEscalate,
        Edge::RecoverMaxOutputTokensRecovery,
        Edge::RecoverOutputExhausted,
    ];

    /// The edge id in the table and the trace.
    pub fn id(self) -> &'static str {
        match self {
            Edge::PrepareRequest => "prepare.request",
            Edge::PrepareBlockingLimit => "prepare.blocking_limit",
            Edge::RequestStreamOpened => "request.stream_opened",
            Edge::RequestRetry => "request.retry",
            Edge::RequestFallback => "request.fallback",
            Edge::RequestRetriesExhausted => "request.retries_exhausted",
            Edge::RequestPromptTooLong => "request.prompt_too_long",
            Edge::RequestModelError => "request.model_error",
            Edge::ConsumeTools => "consume.tools",
            Edge::ConsumeEndTurn => "consume.end_turn",
            Edge::ConsumeTruncated => "consume.truncated",
            Edge::ConsumePauseTurn => "consume.pause_turn",
            Edge::ConsumeRetry => "consume.retry",
            Edge::ConsumeRetriesExhausted => "consume.retries_exhausted",
            Edge::ConsumePromptTooLong => "consume.prompt_too_long",
            Edge::ConsumeModelError => "consume.model_error",
            Edge::SamplingAbort => "sampling.abort",
            Edge::ToolsDone => "tools.done",
            Edge::ActingAbort => "acting.abort",
            Edge::CheckpointAbort => "checkpoint.abort",
            Edge::CheckpointHookStopped => "checkpoint.hook_stopped",
            Edge::CheckpointMaxTurns => "checkpoint.max_turns",
            Edge::CheckpointNextTurn => "checkpoint.next_turn",
            Edge::CheckpointStopHookPrevented => "checkpoint.stop_hook_prevented",
            Edge::CheckpointStopHookBlocking => "checkpoint.stop_hook_blocking",
            Edge::CheckpointStopHookCap => "checkpoint.stop_hook_cap",
            Edge::CheckpointTokenBudgetContinuation => "checkpoint.token_budget_continuation",
            Edge::CheckpointCompleted => "checkpoint.completed",
            Edge::RecoverCollapseDrainRetry => "recover.collapse_drain_retry",
            Edge::RecoverReactiveCompactRetry => "recover.reactive_compact_retry",
            Edge::RecoverPromptTooLong => "recover.prompt_too_long",
            Edge::RecoverMaxOutputTokensEscalate => "recover.max_output_tokens_escalate",
            Edge::RecoverMaxOutputTokensRecovery => "recover.max_output_tokens_recovery",
            Edge::RecoverOutputExhausted => "recover.output_exhausted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_enum_equals_the_table() {
        let table: Vec<&str> = crate::engine::table::shipped().edges.iter().map(|e| e.id.as_str()).collect();
        let code: Vec<&str> = Edge::ALL.iter().map(|e| e.id()).collect();
        assert_eq!(code, table, "src/engine/edge.rs and transitions/loop.toml list different edges");
    }
}
