//! Running the tool calls of one reply: hooks around each call, consecutive
//! concurrency-safe calls together, everything else alone and in order, and results
//! returned in call order whatever order the calls finish in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::engine::events::{EngineEvent, EventSink};
use crate::hooks::{HookEnv, Hooks};
use crate::protocol::ContentBlock;
use crate::tools::{Registry, ToolCall, ToolContext, ToolOutput};

/// Calls that may run at once in one concurrent batch.
pub const MAX_CONCURRENCY: usize = 10;

/// Result text of a call that never ran because the user interrupted.
pub const INTERRUPTED_RESULT: &str = "Interrupted by user: the tool did not run";

/// The outcome of one tool phase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseOutcome {
    /// One `tool_result` per call, in call order.
    pub results: Vec<ContentBlock>,
    /// The first `continue: false` reason a tool hook gave.
    pub hook_stop: Option<String>,
}

/// What one call needs besides its input.
pub struct Runner<'a> {
    /// The tools.
    pub registry: &'a Registry,
    /// The hooks.
    pub hooks: &'a dyn Hooks,
    /// Hook environment.
    pub env: &'a HookEnv,
    /// Tool context (cwd, cancellation, read records).
    pub tool_ctx: &'a ToolContext,
}

struct Finished {
    index: usize,
    result: ContentBlock,
    stop: Option<String>,
    warnings: Vec<String>,
    is_error: bool,
    duration: Duration,
}

impl Runner<'_> {
    /// Run every call, reporting starts and finishes to `sink`.
    pub async fn run(&self, calls: &[ToolCall], sink: &mut dyn EventSink) -> PhaseOutcome {
        let mut slots: Vec<Option<ContentBlock>> = vec![None; calls.len()];
        let mut hook_stop = None;
        let mut start = 0;
        while start < calls.len() {
            let end = self.batch_end(calls, start);
            let mut running = FuturesUnordered::new();
            for (index, call) in calls.iter().enumerate().take(end).skip(start) {
                sink.event(&EngineEvent::ToolStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                });
                running.push(self.run_one(index, call));
            }
            while let Some(done) = running.next().await {
                let call = &calls[done.index];
                for w in done.warnings {
                    sink.event(&EngineEvent::Warning(w));
                }
                sink.event(&EngineEvent::ToolFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    is_error: done.is_error,
                    duration: done.duration,
                });
                if hook_stop.is_none() {
                    hook_stop = done.stop;
                }
                slots[done.index] = Some(done.result);
            }
            start = end;
        }
        let results = slots
            .into_iter()
            .zip(calls)
            .map(|(slot, call)| slot.unwrap_or_else(|| ContentBlock::tool_result(&call.id, INTERRUPTED_RESULT, true)))
            .collect();
        PhaseOutcome { results, hook_stop }
    }

    /// The end (exclusive) of the batch starting at `start`: a run of concurrency-safe
    /// calls up to [`MAX_CONCURRENCY`], or the single call at `start`.
    fn batch_end(&self, calls: &[ToolCall], start: usize) -> usize {
        let safe = |c: &ToolCall| self.registry.get(&c.name).is_some_and(|t| t.is_concurrency_safe(&c.input));
        if !safe(&calls[start]) {
            return start + 1;
        }
        let mut end = start + 1;
        while end < calls.len() && end - start < MAX_CONCURRENCY && safe(&calls[end]) {
            end += 1;
        }
        end
    }

    async fn run_one(&self, index: usize, call: &ToolCall) -> Finished {
        let began = Instant::now();
        let mut warnings = Vec::new();
        let mut stop = None;
        let output = self.call_with_hooks(call, &mut warnings, &mut stop).await;
        Finished {
            index,
            is_error: output.is_error,
            result: ContentBlock::tool_result(&call.id, output.content, output.is_error),
            stop,
            warnings,
            duration: began.elapsed(),
        }
    }

    async fn call_with_hooks(
        &self,
        call: &ToolCall,
        warnings: &mut Vec<String>,
        stop: &mut Option<String>,
    ) -> ToolOutput {
        let Some(tool) = self.registry.get(&call.name) else {
            return ToolOutput::error(format!(
                "<tool_use_error>Error: No such tool available: {}</tool_use_error>",
                call.name
            ));
        };
        if self.tool_ctx.cancel.is_cancelled() {
            return ToolOutput::error(INTERRUPTED_RESULT);
        }
        let (pre, pre_warnings) = self.hooks.pre_tool_use(self.env, &call.name, &call.id, &call.input).await;
        warnings.extend(pre_warnings);
        if pre.stop.is_some() {
            *stop = pre.stop.clone();
        }
        if let Some(reason) = pre.deny {
            return ToolOutput::error(format!("PreToolUse hook denied this call: {reason}"));
        }
        let tool: Arc<dyn crate::tools::Tool> = tool;
        let mut output = tool.call(call.input.clone(), self.tool_ctx.clone()).await;
        let (post, post_warnings) = self
            .hooks
            .post_tool_use(self.env, &call.name, &call.id, &call.input, &output.content, output.is_error)
            .await;
        warnings.extend(post_warnings);
        if let Some(feedback) = post.feedback {
            output.content.push_str(&format!("\n\nPostToolUse hook feedback:\n{feedback}"));
        }
        if stop.is_none() {
            *stop = post.stop;
        }
        output
    }
}
