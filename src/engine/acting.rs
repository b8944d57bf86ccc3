//! The handlers of the tool phase: ExecuteTools and the abort of the `Acting` superstate.

use statig::prelude::*;

use crate::engine::events::EngineEvent;
use crate::engine::generated::choice::acting;
use crate::engine::generated::choice::execute_tools::ToolsFinished;
use crate::engine::machine::{Ctx, Machine, State};
use crate::engine::select::NoFacts;
use crate::protocol::{ContentBlock, Message, Role};
use crate::tools::orchestrate::{INTERRUPTED_RESULT, OUTCOME_UNKNOWN_RESULT};
use crate::tools::streaming::Executor;

/// Text appended when the user interrupts the tool phase.
pub const INTERRUPTED_TOOLS: &str = "[Request interrupted by user for tool use]";

impl Machine {
    /// ExecuteTools: the reply has ended, so the calls held back while it streamed start now
    /// (read-only ones may have started already); wait for them all and send one result per
    /// call, in call order.
    pub(crate) async fn execute_tools_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let executor = match self.st.executor.take() {
            Some(executor) => executor,
            None => {
                let mut executor = self.new_executor(ctx);
                // The reply has ended: every call may start as it is added.
                executor.end_reply();
                for call in self.st.calls.clone() {
                    for event in executor.add(call) {
                        ctx.emit(event);
                    }
                }
                executor
            }
        };
        let outcome = executor.finish(&mut |event| ctx.emit(event)).await;
        self.st.permission_denials.extend(outcome.denials);
        if ctx.deps.cancel.is_cancelled() {
            self.st.interrupted_results = Some(outcome.results);
            return Handled;
        }
        let Some(ToolsFinished::Done) = self.decide::<ToolsFinished>(ctx, &mut NoFacts).await else { return Handled };
        for (id, extra) in outcome.extras {
            self.st.add_delegated(extra.usage);
            ctx.emit(EngineEvent::ToolUseResult { id, value: extra.tool_use_result });
        }
        self.answer_calls(ctx, outcome.results, false);
        self.st.hook_stop = outcome.hook_stop;
        self.st.structured = outcome.structured;
        self.proceed()
    }

    /// A fresh executor for one reply's calls.
    pub(crate) fn new_executor(&self, ctx: &Ctx) -> Executor {
        Executor::new(ctx.toolbox.clone(), ctx.tool_ctx.clone(), self.st.options.max_tool_concurrency)
    }

    /// The `Acting` superstate's abort: every call gets a result (finished ones their real
    /// one, the rest a synthetic error: [`OUTCOME_UNKNOWN_RESULT`] for one that started,
    /// [`INTERRUPTED_RESULT`] for one that did not), then the interruption is noted and the
    /// run ends.
    pub(crate) async fn abort_tools(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let Some(acting::Abort::Abort) = self.decide::<acting::Abort>(ctx, &mut NoFacts).await else { return Handled };
        let calls = std::mem::take(&mut self.st.calls);
        let mut results = self.st.interrupted_results.take().unwrap_or_default();
        // Calls without a collected result: those a streamed executor started may have run.
        let started = |id: &str| self.st.executor.as_ref().is_some_and(|e| e.has_started(id));
        for call in calls.iter().skip(results.len()) {
            let text = if started(&call.id) { OUTCOME_UNKNOWN_RESULT } else { INTERRUPTED_RESULT };
            results.push(ContentBlock::tool_result(&call.id, text, true));
        }
        self.answer_calls(ctx, results, true);
        self.st.error = Some("interrupted by the user while tools ran".into());
        self.proceed()
    }

    /// Append the phase's `results` (one per call it ran, in call order) as one user message,
    /// with [`INTERRUPTED_TOOLS`] after them when the phase was `interrupted`. A phase that
    /// finished a resumed session's cut reply ([`crate::engine::state::ResumeTools`]) answers
    /// every call of that reply, the settled ones with what the journal gave them (and
    /// [`INTERRUPTED_TOOLS`] when some call's outcome is unknown), and the run's prompt, held
    /// back until now, follows the results.
    fn answer_calls(&mut self, ctx: &mut Ctx, results: Vec<ContentBlock>, interrupted: bool) {
        let resume = self.st.resume.take();
        let (mut content, interrupted) = match &resume {
            Some(resume) => (resume.pending.merge(results), interrupted || resume.pending.interrupted),
            None => (results, interrupted),
        };
        if interrupted {
            content.push(ContentBlock::text(INTERRUPTED_TOOLS));
        }
        self.append(ctx, Message { role: Role::User, content });
        if let Some(resume) = resume {
            ctx.record_prompt(&resume.prompt, resume.uuid, resume.origin.as_ref());
            self.st.push_message(resume.prompt);
        }
    }
}
