//! The named outcomes of the loop: seven continue reasons and nine terminal reasons.
//! The strings are exactly those of the table and the trace.

use serde::Serialize;

/// Why the loop went round again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinueReason {
    /// Tools ran; their results go back to the model.
    NextTurn,
    /// Staged collapses were committed after a prompt-too-long error.
    CollapseDrainRetry,
    /// The history was summarised after a prompt-too-long error.
    ReactiveCompactRetry,
    /// The output cap was raised from 16_000 to 64_000 after a truncated reply.
    MaxOutputTokensEscalate,
    /// The model was asked to resume after a truncated reply.
    MaxOutputTokensRecovery,
    /// A Stop hook blocked the end of the turn.
    StopHookBlocking,
    /// The token budget asked for more work.
    TokenBudgetContinuation,
}

impl ContinueReason {
    /// Every continue reason.
    pub const ALL: [ContinueReason; 7] = [
        ContinueReason::NextTurn,
        ContinueReason::CollapseDrainRetry,
        ContinueReason::ReactiveCompactRetry,
        ContinueReason::MaxOutputTokensEscalate,
        ContinueReason::MaxOutputTokensRecovery,
        ContinueReason::StopHookBlocking,
        ContinueReason::TokenBudgetContinuation,
    ];

    /// The reason's name in the table and the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            ContinueReason::NextTurn => "next_turn",
            ContinueReason::CollapseDrainRetry => "collapse_drain_retry",
            ContinueReason::ReactiveCompactRetry => "reactive_compact_retry",
            ContinueReason::MaxOutputTokensEscalate => "max_output_tokens_escalate",
            ContinueReason::MaxOutputTokensRecovery => "max_output_tokens_recovery",
            ContinueReason::StopHookBlocking => "stop_hook_blocking",
            ContinueReason::TokenBudgetContinuation => "token_budget_continuation",
        }
    }

    /// Parse a table or trace name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalReason {
    /// The model ended its turn normally.
    Completed,
    /// Tools ran but no turn was left.
    MaxTurns,
    /// Interrupted while the model was being called.
    AbortedStreaming,
    /// Interrupted while tools ran.
    AbortedTools,
    /// An unrecoverable model error, or retries or recovery exhausted.
    ModelError,
    /// A Stop hook said `continue: false`.
    StopHookPrevented,
    /// A tool hook said `continue: false`.
    HookStopped,
    /// Prompt too long, and neither collapse nor compaction could fix it.
    PromptTooLong,
    /// Over the hard context limit before a call, with nothing left to compact.
    BlockingLimit,
}

impl TerminalReason {
    /// Every terminal reason.
    pub const ALL: [TerminalReason; 9] = [
        TerminalReason::Completed,
        TerminalReason::MaxTurns,
        TerminalReason::AbortedStreaming,
        TerminalReason::AbortedTools,
        TerminalReason::ModelError,
        TerminalReason::StopHookPrevented,
        TerminalReason::HookStopped,
        TerminalReason::PromptTooLong,
        TerminalReason::BlockingLimit,
    ];

    /// The reason's name in the table and the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::MaxTurns => "max_turns",
            TerminalReason::AbortedStreaming => "aborted_streaming",
            TerminalReason::AbortedTools => "aborted_tools",
            TerminalReason::ModelError => "model_error",
            TerminalReason::StopHookPrevented => "stop_hook_prevented",
            TerminalReason::HookStopped => "hook_stopped",
            TerminalReason::PromptTooLong => "prompt_too_long",
            TerminalReason::BlockingLimit => "blocking_limit",
        }
    }

    /// Parse a table or trace name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The process exit status for a run that ended this way (DESIGN.md "CLI").
    pub fn exit_code(self) -> u8 {
        use TerminalReason as R;
        match self {
            R::Completed => 0,
            R::ModelError | R::PromptTooLong | R::BlockingLimit => 1,
            R::MaxTurns => 3,
            R::StopHookPrevented | R::HookStopped => 4,
            R::AbortedStreaming | R::AbortedTools => 130,
        }
    }
}

impl std::fmt::Display for TerminalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for ContinueReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
