//! The handlers that decide whether the loop goes on: Checkpoint and Recover.

use statig::prelude::*;

use crate::context;
use crate::engine::edge::Edge;
use crate::engine::events::EngineEvent;
use crate::engine::machine::{Ctx, Machine, State, facts, value, yes};
use crate::engine::sampling::COMPACTION_INTERRUPTED;
use crate::engine::state::{Withheld, counter};
use crate::hooks::StopDecision;
use crate::protocol::Message;
use crate::tools::orchestrate::INTERRUPTED_HOOKS;

/// Fraction of the token budget under which the loop keeps going.
pub const BUDGET_COMPLETION: f64 = 0.9;
/// Output tokens per check under which returns count as diminishing.
pub const DIMINISHING_TOKENS: u64 = 500;

impl Machine {
    /// Checkpoint: after tools, hook stop and max turns; at an end of turn, stop hooks and budget.
    pub(crate) async fn checkpoint_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        if std::mem::take(&mut self.st.tools_ran) {
            return self.after_tools(ctx);
        }
        let env = ctx.hook_env(&self.st.options.run_id);
        let active = self.st.used(counter::STOP_HOOK_BLOCKS) > 0;
        let hooks = ctx.deps.hooks.clone();
        // An interrupt drops the hooks' future, which kills their process groups at once; the
        // state settles without a decision and the abort takes `checkpoint.abort`.
        let cancel = ctx.deps.cancel.clone();
        ctx.emit(EngineEvent::StopHooksStarted);
        let (decision, warnings) = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                ctx.emit(EngineEvent::Warning(format!("{INTERRUPTED_HOOKS}: Stop")));
                return Handled;
            }
            decided = hooks.stop(&env, active) => decided,
        };
        for w in warnings {
            ctx.emit(EngineEvent::Warning(w));
        }
        let stop_hook = match &decision {
            StopDecision::Pass => "pass",
            StopDecision::Block { .. } => "block",
            StopDecision::Prevent { .. } => "prevent",
        };
        let wants_more = matches!(decision, StopDecision::Pass) && self.budget_wants_more();
        let f =
            facts([("tools_ran", yes(false)), ("stop_hook", value(stop_hook)), ("budget_wants_more", yes(wants_more))]);
        match decision {
            StopDecision::Prevent { reason } => {
                self.st.error = Some(format!("a Stop hook ended the run: {reason}"));
                self.finish(ctx, Edge::CheckpointStopHookPrevented, "turn_checked", f)
            }
            StopDecision::Block { feedback } if self.st.left(counter::STOP_HOOK_BLOCKS) > 0 => {
                self.append(ctx, Message::user_text(context::stop_hook_feedback(&feedback)));
                self.go(Edge::CheckpointStopHookBlocking, "turn_checked", f, State::Prepare {})
            }
            StopDecision::Block { .. } => {
                let n = self.st.used(counter::STOP_HOOK_BLOCKS);
                ctx.emit(EngineEvent::Warning(format!(
                    "a Stop hook blocked the end of the turn {n} times in a row: overriding it and ending the turn"
                )));
                self.finish(ctx, Edge::CheckpointStopHookCap, "turn_checked", f)
            }
            StopDecision::Pass if wants_more && self.st.left(counter::BUDGET_CONTINUATIONS) > 0 => {
                let budget = self.st.options.token_budget.unwrap_or(0);
                let nudge = context::budget_nudge(self.st.usage.output_tokens, budget);
                self.append(ctx, Message::user_text(nudge));
                self.go(Edge::CheckpointTokenBudgetContinuation, "turn_checked", f, State::Prepare {})
            }
            StopDecision::Pass => self.finish(ctx, Edge::CheckpointCompleted, "turn_checked", f),
        }
    }

    /// `checkpoint.abort`: the Stop hooks were interrupted (and killed). Every tool_use of the
    /// turn already has its result, so the conversation is complete as it is.
    pub(crate) fn abort_stop_hooks(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        self.st.error = Some("interrupted by the user while Stop hooks ran".into());
        self.finish(ctx, Edge::CheckpointAbort, "abort", facts([]))
    }

    fn after_tools(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let hook_stop = self.st.hook_stop.take();
        let f = facts([("tools_ran", yes(true)), ("hook_stop", yes(hook_stop.is_some()))]);
        if let Some(reason) = hook_stop {
            self.st.error = Some(format!("a tool hook ended the run: {reason}"));
            return self.finish(ctx, Edge::CheckpointHookStopped, "turn_checked", f);
        }
        if self.st.left(counter::TURNS) == 0 {
            self.st.error = Some(format!("reached the maximum of {} turns", self.st.options.max_turns));
            return self.finish(ctx, Edge::CheckpointMaxTurns, "turn_checked", f);
        }
        self.go(Edge::CheckpointNextTurn, "turn_checked", f, State::Prepare {})
    }

    /// Whether the token budget asks for more work. Updates the budget tracker when it does.
    fn budget_wants_more(&mut self) -> bool {
        let Some(budget) = self.st.options.token_budget else { return false };
        let used = self.st.usage.output_tokens;
        let delta = used.saturating_sub(self.st.budget_last_used);
        let continuations = self.st.used(counter::BUDGET_CONTINUATIONS);
        let diminishing =
            continuations >= 3 && delta < DIMINISHING_TOKENS && self.st.budget_last_delta < DIMINISHING_TOKENS;
        let wants = !diminishing && (used as f64) < BUDGET_COMPLETION * budget as f64;
        if wants {
            self.st.budget_last_delta = delta;
            self.st.budget_last_used = used;
        }
        wants
    }

    /// Recover: collapse drain, then reactive compaction, for a too-long prompt; escalation,
    /// then resume messages, for a truncated reply.
    pub(crate) async fn recover_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        match self.st.withheld.take() {
            Some(Withheld::PromptTooLong(message)) => self.recover_prompt_too_long(ctx, message).await,
            Some(Withheld::Truncated { reply, max_tokens }) => self.recover_truncated(ctx, reply, max_tokens),
            None => {
                ctx.violation.get_or_insert("Recover was entered with nothing withheld".into());
                Handled
            }
        }
    }

    async fn recover_prompt_too_long(&mut self, ctx: &mut Ctx, message: String) -> Outcome<State> {
        let staged = context::staged_collapses(&self.st.messages) > 0;
        let drain = staged && self.st.left(counter::COLLAPSE_DRAINS) > 0;
        let mut compacted = false;
        if !drain && self.st.left(counter::REACTIVE_COMPACTS) > 0 && !ctx.deps.cancel.is_cancelled() {
            // An interrupt stops the summary request: nothing was compacted.
            let cancel = ctx.deps.cancel.clone();
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                result = self.compact(ctx) => Some(result),
            };
            match result {
                None => ctx.emit(EngineEvent::Warning(COMPACTION_INTERRUPTED.into())),
                Some(Ok(())) => compacted = true,
                Some(Err(e)) => ctx.emit(EngineEvent::Warning(format!("reactive compaction failed: {e}"))),
            }
        }
        let f = facts([
            ("cause", value("prompt_too_long")),
            ("staged_collapses", yes(staged)),
            ("compacted", yes(compacted)),
        ]);
        if drain {
            let n = self.st.messages.edit(|messages| context::commit_collapses(messages));
            let outcome = self.go(Edge::RecoverCollapseDrainRetry, "recovery_checked", f, State::Prepare {});
            self.annotate(None, Some(format!("collapsed {n} older tool result(s)")));
            outcome
        } else if compacted {
            self.go(Edge::RecoverReactiveCompactRetry, "recovery_checked", f, State::Prepare {})
        } else {
            self.st.error = Some(message);
            self.finish(ctx, Edge::RecoverPromptTooLong, "recovery_checked", f)
        }
    }

    fn recover_truncated(&mut self, ctx: &mut Ctx, reply: Message, max_tokens: u32) -> Outcome<State> {
        let f = facts([("cause", value("truncated"))]);
        if self.st.left(counter::ESCALATIONS) > 0 {
            // The truncated reply is dropped and the same request is sent again with a higher cap.
            return self.go(Edge::RecoverMaxOutputTokensEscalate, "recovery_checked", f, State::Request {});
        }
        self.append(ctx, reply);
        if self.st.left(counter::RECOVERIES) > 0 {
            self.append(ctx, Message::user_text(context::RESUME_MESSAGE));
            return self.go(Edge::RecoverMaxOutputTokensRecovery, "recovery_checked", f, State::Prepare {});
        }
        self.st.error = Some(format!(
            "the reply exceeded the {max_tokens} output token maximum after escalation and {} recoveries",
            self.st.bounds[counter::RECOVERIES]
        ));
        self.finish(ctx, Edge::RecoverOutputExhausted, "recovery_checked", f)
    }
}
