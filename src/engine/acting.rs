//! The handlers of the tool phase: ExecuteTools and the abort of the `Acting` superstate.

use statig::prelude::*;

use crate::engine::edge::Edge;
use crate::engine::machine::{Ctx, Machine, State, facts};
use crate::protocol::{ContentBlock, Message, Role};
use crate::tools::orchestrate::{INTERRUPTED_RESULT, Runner};

/// Text appended when the user interrupts the tool phase.
pub const INTERRUPTED_TOOLS: &str = "[Request interrupted by user for tool use]";

impl Machine {
    /// ExecuteTools: run the reply's calls and send one result per call, in call order.
    pub(crate) async fn execute_tools_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let calls = std::mem::take(&mut self.st.calls);
        let env = ctx.hook_env(&self.st.options.run_id);
        let hooks = ctx.deps.hooks.clone();
        let registry = ctx.deps.tools.clone();
        let tool_ctx = ctx.tool_ctx.clone();
        let runner = Runner { registry: &registry, hooks: hooks.as_ref(), env: &env, tool_ctx: &tool_ctx };
        let outcome = runner.run(&calls, ctx.sink.as_mut()).await;
        if ctx.deps.cancel.is_cancelled() {
            self.st.calls = calls;
            self.st.interrupted_results = Some(outcome.results);
            return Handled;
        }
        self.append(ctx, Message { role: Role::User, content: outcome.results });
        self.st.tools_ran = true;
        self.st.hook_stop = outcome.hook_stop;
        self.go(Edge::ToolsDone, "tools_finished", facts([]), State::Checkpoint {})
    }

    /// The `Acting` superstate's abort: every call gets a result (finished ones their real
    /// one, the rest a synthetic error), then the interruption is noted and the run ends.
    pub(crate) fn abort_tools(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let calls = std::mem::take(&mut self.st.calls);
        let mut results = self.st.interrupted_results.take().unwrap_or_default();
        for call in calls.iter().skip(results.len()) {
            results.push(ContentBlock::tool_result(&call.id, INTERRUPTED_RESULT, true));
        }
        results.push(ContentBlock::text(INTERRUPTED_TOOLS));
        self.append(ctx, Message { role: Role::User, content: results });
        self.st.error = Some("interrupted by the user while tools ran".into());
        self.finish(ctx, Edge::ActingAbort, "abort", facts([]))
    }
}
