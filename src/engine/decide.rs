//! The handlers that decide whether the loop goes on: Checkpoint and Recover.

use statig::prelude::*;

use crate::context;
use crate::engine::effects::hooks_step;
use crate::engine::events::EngineEvent;
use crate::engine::generated::choice::checkpoint::{self, TurnChecked, TurnCheckedFacts};
use crate::engine::generated::choice::recover::{RecoveryChecked, RecoveryCheckedFacts};
use crate::engine::generated::fact;
use crate::engine::machine::{Ctx, Machine, State};
use crate::engine::sampling::COMPACTION_INTERRUPTED;
use crate::engine::select::NoFacts;
use crate::engine::state::{Withheld, counter};
use crate::hooks::StopDecision;
use crate::protocol::Message;
use crate::session::HistoryReason;
use crate::tools::orchestrate::INTERRUPTED_HOOKS;
use crate::tools::structured_output::Answer;

/// What the model is told when it ends its turn without answering through `StructuredOutput`
/// (once per run, as a Stop hook's block).
pub const STRUCTURED_OUTPUT_NUDGE: &str =
    "This request needs its final answer through the StructuredOutput tool, in the required format: call it now.";

/// Fraction of the token budget under which the loop keeps going.
pub const BUDGET_COMPLETION: f64 = 0.9;
/// Output tokens per check under which returns count as diminishing.
pub const DIMINISHING_TOKENS: u64 = 500;

impl Machine {
    /// Checkpoint: the table's guards ask for what they read. After tools that is whether a
    /// tool hook stopped the run; at an end of turn, what the Stop hooks decide (they run only
    /// then) and whether the token budget wants more.
    pub(crate) async fn checkpoint_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let mut turn = TurnFacts::default();
        let Some(edge) = self.decide::<TurnChecked>(ctx, &mut turn).await else { return Handled };
        let TurnFacts { stop, nudge } = turn;
        let hook_stop = self.st.hook_stop.take();
        let structured = self.st.structured.take();
        match edge {
            TurnChecked::HookStopped => {
                let reason = hook_stop.unwrap_or_default();
                self.st.error = Some(format!("a tool hook ended the run: {reason}"));
            }
            TurnChecked::MaxTurns => {
                let max = self.st.bounds.get(counter::TURNS).copied().unwrap_or_default();
                self.st.error = Some(format!("Reached maximum number of turns ({max})"));
            }
            TurnChecked::NextTurn | TurnChecked::Completed => {}
            TurnChecked::StructuredOutput => match structured {
                Some(Answer::Valid(answer)) => self.st.structured_output = Some(answer),
                Some(Answer::Invalid(_)) | None => {
                    ctx.violation
                        .get_or_insert("`checkpoint.structured_output` was taken without a valid answer".into());
                    return Handled;
                }
            },
            TurnChecked::StructuredOutputRetry => {
                let attempt = self.st.used(counter::STRUCTURED_OUTPUT_RETRIES);
                let of = self.st.bounds.get(counter::STRUCTURED_OUTPUT_RETRIES).copied().unwrap_or_default() + 1;
                self.annotate(
                    None,
                    Some(format!("StructuredOutput attempt {attempt} of {of} did not match the schema")),
                );
            }
            TurnChecked::StructuredOutputRetriesExhausted => {
                let attempts = self.st.used(counter::STRUCTURED_OUTPUT_RETRIES) + 1;
                let last = match structured {
                    Some(Answer::Invalid(message)) => message,
                    Some(Answer::Valid(_)) | None => String::new(),
                };
                self.st.error = Some(format!(
                    "no StructuredOutput call matched the schema in {attempts} attempts; the last: {last}"
                ));
            }
            TurnChecked::StopHookPrevented => {
                let reason = match stop {
                    Some(StopDecision::Prevent { reason }) => reason,
                    _ => String::new(),
                };
                self.st.error = Some(format!("a Stop hook ended the run: {reason}"));
            }
            TurnChecked::StopHookBlocking => {
                let feedback = match stop {
                    Some(StopDecision::Block { feedback }) => feedback,
                    _ => String::new(),
                };
                let text = if nudge { feedback } else { context::stop_hook_feedback(&feedback) };
                self.st.structured_nudged |= nudge;
                self.append(ctx, Message::user_text(text));
            }
            TurnChecked::StopHookCap => {
                let n = self.st.used(counter::STOP_HOOK_BLOCKS);
                ctx.emit(EngineEvent::Warning(format!(
                    "a Stop hook blocked the end of the turn {n} times in a row: overriding it and ending the turn"
                )));
            }
            TurnChecked::TaskNotification => {
                let ended = ctx.tasks.as_ref().map(crate::agents::host::Tasks::take_ended).unwrap_or_default();
                let mut texts = Vec::new();
                for notification in &ended {
                    let report = &notification.report;
                    self.st.add_delegated([(notification.agent.model.clone(), report.usage, report.cost_usd)]);
                    texts.push(notification.text());
                }
                let names: Vec<&str> = ended.iter().map(|n| n.agent.agent_id.as_str()).collect();
                self.annotate(None, Some(format!("reported: {}", names.join(", "))));
                self.append(ctx, Message::user_text(texts.join("\n")));
            }
            TurnChecked::TokenBudgetContinuation => {
                if let Some(check) = self.budget_check() {
                    self.st.budget_last_delta = check.delta;
                    self.st.budget_last_used = check.used;
                }
                let budget = self.st.options.token_budget.unwrap_or(0);
                let nudge = context::budget_nudge(self.st.usage.output_tokens, budget);
                self.append(ctx, Message::user_text(nudge));
            }
        }
        self.proceed()
    }

    /// Whether the run was asked for a structured answer, has none, and the model was not told
    /// yet that it owes one.
    fn structured_output_owed(&self) -> bool {
        self.st.options.json_schema.is_some() && self.st.structured_output.is_none() && !self.st.structured_nudged
    }

    /// Run the Stop hooks. An interrupt drops them, which kills their process groups at once;
    /// the state then settles without a decision (`None`) and the abort takes
    /// `checkpoint.abort`.
    async fn run_stop_hooks(&mut self, ctx: &mut Ctx) -> Option<StopDecision> {
        let env = ctx.hook_env(&self.st.options.run_id);
        let active = self.st.used(counter::STOP_HOOK_BLOCKS) > 0;
        let (hooks, effects) = (ctx.deps.hooks.clone(), ctx.deps.effects.clone());
        let cancel = ctx.deps.cancel.clone();
        ctx.emit(EngineEvent::StopHooksStarted);
        if !hooks.runs_stop() {
            // Nothing to run, so nothing an interrupt could kill: the turn's end is decided
            // as it stands (an interrupt is handled by the next state).
            let (decision, warnings) = hooks.stop(&env, active).await;
            for w in warnings {
                ctx.emit(EngineEvent::Warning(w));
            }
            return Some(decision);
        }
        let (decision, warnings) = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                ctx.emit(EngineEvent::Warning(format!("{INTERRUPTED_HOOKS}: Stop")));
                return None;
            }
            decided = hooks_step(&*effects, "Stop", None, hooks.stop(&env, active)) => decided,
        };
        for w in warnings {
            ctx.emit(EngineEvent::Warning(w));
        }
        Some(decision)
    }

    /// `checkpoint.abort`: the Stop hooks were interrupted (and killed). Every tool_use of the
    /// turn already has its result, so the conversation is complete as it is.
    pub(crate) async fn abort_stop_hooks(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let Some(checkpoint::Abort::Abort) = self.decide::<checkpoint::Abort>(ctx, &mut NoFacts).await else {
            return Handled;
        };
        self.st.error = Some("interrupted by the user while Stop hooks ran".into());
        self.proceed()
    }

    /// The token budget's verdict: `Some` when it asks for more work (a budget is set, output is
    /// under [`BUDGET_COMPLETION`] of it and returns are not diminishing), with the figures the
    /// continuation records.
    fn budget_check(&self) -> Option<BudgetCheck> {
        let budget = self.st.options.token_budget?;
        let used = self.st.usage.output_tokens;
        let delta = used.saturating_sub(self.st.budget_last_used);
        let continuations = self.st.used(counter::BUDGET_CONTINUATIONS);
        let diminishing =
            continuations >= 3 && delta < DIMINISHING_TOKENS && self.st.budget_last_delta < DIMINISHING_TOKENS;
        (!diminishing && (used as f64) < BUDGET_COMPLETION * budget as f64).then_some(BudgetCheck { used, delta })
    }

    /// Recover: for a too-long prompt, collapse drain or reactive compaction (tried only when
    /// the guards ask whether it worked); for a truncated reply, escalation or a resume message.
    pub(crate) async fn recover_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let Some(withheld) = self.st.withheld.take() else {
            ctx.violation.get_or_insert("Recover was entered with nothing withheld".into());
            return Handled;
        };
        let Some(edge) = self.decide::<RecoveryChecked>(ctx, &mut RecoveryFacts { withheld: &withheld }).await else {
            return Handled;
        };
        match (edge, withheld) {
            (RecoveryChecked::CollapseDrainRetry, _) => {
                let n = self.st.messages.edit(|messages| context::commit_collapses(messages));
                self.history_rewritten(ctx, HistoryReason::Collapse);
                self.annotate(None, Some(format!("collapsed {n} older tool result(s)")));
            }
            // The compaction already replaced the history.
            (RecoveryChecked::ReactiveCompactRetry, _) => {}
            // The truncated reply is dropped and the same request is sent again with a higher cap.
            (RecoveryChecked::MaxOutputTokensEscalate, _) => {}
            (RecoveryChecked::MaxOutputTokensRecovery, Withheld::Truncated { reply, info, .. }) => {
                self.append_reply(ctx, reply, Some(info));
                self.append(ctx, Message::user_text(context::RESUME_MESSAGE));
            }
            (RecoveryChecked::OutputExhausted, Withheld::Truncated { reply, info, max_tokens }) => {
                self.append_reply(ctx, reply, Some(info));
                self.st.error = Some(format!(
                    "the reply exceeded the {max_tokens} output token maximum after escalation and {} recoveries",
                    self.st.bounds.get(counter::RECOVERIES).copied().unwrap_or_default()
                ));
            }
            (RecoveryChecked::PromptTooLong, Withheld::PromptTooLong(message)) => self.st.error = Some(message),
            (edge @ (RecoveryChecked::MaxOutputTokensRecovery | RecoveryChecked::OutputExhausted), _)
            | (edge @ RecoveryChecked::PromptTooLong, _) => {
                // `sets = { cause = ... }` on the entering edges rules this out.
                let id = crate::engine::select::Choice::edge(edge).id();
                ctx.violation.get_or_insert(format!("`{id}` was taken for the other withheld error"));
                return Handled;
            }
        }
        self.proceed()
    }

    /// Try the reactive compaction (an aux summary request); an interrupt stops it.
    async fn try_reactive_compaction(&mut self, ctx: &mut Ctx) -> bool {
        if ctx.deps.cancel.is_cancelled() {
            return false;
        }
        let cancel = ctx.deps.cancel.clone();
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            result = self.compact_history(ctx) => Some(result),
        };
        match result {
            None => {
                ctx.emit(EngineEvent::Warning(COMPACTION_INTERRUPTED.into()));
                false
            }
            Some(Ok(())) => true,
            Some(Err(e)) => {
                ctx.emit(EngineEvent::Warning(format!("reactive compaction failed: {e}")));
                false
            }
        }
    }
}

/// What a budget check measured when it asked for more work.
struct BudgetCheck {
    /// Output tokens so far.
    used: u64,
    /// Output tokens since the last check.
    delta: u64,
}

/// What Checkpoint found out for the guards out of it on `turn_checked`, and what the Stop hooks
/// decided when the guards asked for them.
#[derive(Default)]
struct TurnFacts {
    /// The Stop hooks' decision, once they ran.
    stop: Option<StopDecision>,
    /// The decision is the built-in structured-output nudge.
    nudge: bool,
}

impl TurnCheckedFacts for TurnFacts {
    async fn structured_output(&mut self, m: &mut Machine, _: &mut Ctx) -> Option<fact::StructuredOutput> {
        Some(match &m.st.structured {
            None => fact::StructuredOutput::None,
            Some(Answer::Valid(_)) => fact::StructuredOutput::Valid,
            Some(Answer::Invalid(_)) => fact::StructuredOutput::Invalid,
        })
    }

    async fn hook_stop(&mut self, m: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(m.st.hook_stop.is_some())
    }

    /// Runs the Stop hooks (only at an end of turn, where the guards read this).
    async fn stop_hook(&mut self, m: &mut Machine, ctx: &mut Ctx) -> Option<fact::StopHook> {
        let mut decision = m.run_stop_hooks(ctx).await?;
        if decision == StopDecision::Pass && m.structured_output_owed() {
            // A built-in Stop hook: the answer was asked for in a format, once.
            decision = StopDecision::Block { feedback: STRUCTURED_OUTPUT_NUDGE.into() };
            self.nudge = true;
        }
        let value = match &decision {
            StopDecision::Pass => fact::StopHook::Pass,
            StopDecision::Block { .. } => fact::StopHook::Block,
            StopDecision::Prevent { .. } => fact::StopHook::Prevent,
        };
        self.stop = Some(decision);
        Some(value)
    }

    async fn budget_wants_more(&mut self, m: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(m.budget_check().is_some())
    }

    /// Waits for the next background subagent to end, when one runs (only at an end of turn
    /// that nothing else continues, where the guards read this). An interrupt settles the
    /// state without a decision, and the abort takes `checkpoint.abort`.
    async fn tasks_pending(&mut self, _: &mut Machine, ctx: &mut Ctx) -> Option<bool> {
        let Some(tasks) = ctx.tasks.clone() else { return Some(false) };
        if !tasks.pending() {
            return Some(false);
        }
        let cancel = ctx.deps.cancel.clone();
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            ended = tasks.next_end() => Some(ended),
        }
    }
}

/// What Recover found out about the withheld error, for the guards out of it on
/// `recovery_checked`.
struct RecoveryFacts<'a> {
    withheld: &'a Withheld,
}

impl RecoveryCheckedFacts for RecoveryFacts<'_> {
    async fn staged_collapses(&mut self, m: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(matches!(self.withheld, Withheld::PromptTooLong(_)) && context::staged_collapses(&m.st.messages) > 0)
    }

    /// Tries the reactive compaction (only for a too-long prompt, where the guards read this).
    async fn compacted(&mut self, m: &mut Machine, ctx: &mut Ctx) -> Option<bool> {
        match self.withheld {
            Withheld::PromptTooLong(_) => Some(m.try_reactive_compaction(ctx).await),
            Withheld::Truncated { .. } => Some(false),
        }
    }
}
