//! The handlers of the model-call states: Prepare, Request, Consume, and the abort of the
//! `Sampling` superstate.

use std::time::Duration;

use statig::prelude::*;

use crate::context::{self, Thresholds};
use crate::engine::budget::{self, Admission, CachedPrefix, OverBudget};
use crate::engine::compact;
use crate::engine::events::{EngineEvent, human_duration};
use crate::engine::generated::choice::compact::{CompactionDone, CompactionDoneFacts};
use crate::engine::generated::choice::consume::{
    MessageComplete, MessageCompleteFacts, StreamFailed, StreamFailedFacts,
};
use crate::engine::generated::choice::prepare::{ContextReady, ContextReadyFacts};
use crate::engine::generated::choice::request::{RequestFailed, RequestFailedFacts, StreamOpened};
use crate::engine::generated::choice::sampling;
use crate::engine::generated::fact;
use crate::engine::machine::{Ctx, Machine, State};
use crate::engine::reply_steps::{ReplySteps, Seen};
use crate::engine::select::NoFacts;
use crate::engine::state::{Withheld, counter};
use crate::model::anthropic::pricing;
use crate::model::assemble::{Assembled, Assembler, Step};
use crate::model::{ErrorClass, ModelError, reply};
use crate::protocol::{ContentBlock, Message, Role, StopReason, Usage};
use crate::session::{HistoryReason, ReplyInfo};
use crate::tools::ToolCall;
use crate::tools::streaming::Executor;
use std::collections::HashMap;

/// Warning when an interrupt stopped a compaction's summary request.
pub const COMPACTION_INTERRUPTED: &str = "compaction interrupted";
/// Text appended when the user interrupts a model call.
pub const INTERRUPTED: &str = "[Request interrupted by user]";

impl Machine {
    /// Prepare: measure the request against the autocompact threshold and the blocking limit;
    /// the table decides whether to compact first (`prepare.autocompact`), refuse
    /// (`prepare.blocking_limit`) or send.
    pub(crate) async fn prepare_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let thresholds = Thresholds::for_window(self.st.options.context_window);
        let tokens = self.estimate();
        let has_history = self.st.messages.iter().any(|m| m.role == Role::Assistant);
        let mut measured = Measured {
            tools_pending: self.st.resume.is_some(),
            over_autocompact: tokens > thresholds.autocompact && has_history,
            over_blocking_limit: tokens > thresholds.blocking,
        };
        let Some(edge) = self.decide::<ContextReady>(ctx, &mut measured).await else { return Handled };
        match edge {
            ContextReady::ResumeTools => {
                // ExecuteTools runs what is left of the cut phase; the rest is answered there.
                self.st.calls = self.st.resume.as_ref().map(|r| r.pending.to_run()).unwrap_or_default();
            }
            ContextReady::Request => self.st.request = Some(self.st.build_request()),
            ContextReady::Autocompact => {}
            ContextReady::BlockingLimit => {
                self.st.error = Some(format!(
                    "Prompt is too long: about {tokens} tokens, over the blocking limit of {} for a {}-token window, \
and nothing is left to compact",
                    thresholds.blocking, self.st.options.context_window
                ));
            }
        }
        self.proceed()
    }

    /// Compact: replace the history with a summary (an aux request). An interrupt stops the
    /// request and the state settles without an edge, so the abort takes `sampling.abort`.
    pub(crate) async fn compact_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let before = self.estimate();
        let cancel = ctx.deps.cancel.clone();
        let compacted = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            compacted = self.compact_history(ctx) => Some(compacted),
        };
        let compacted = match compacted {
            None => {
                ctx.emit(EngineEvent::Warning(COMPACTION_INTERRUPTED.into()));
                return Handled;
            }
            Some(Ok(())) => {
                let after = self.estimate();
                ctx.emit(EngineEvent::Warning(format!("autocompact: about {before} → {after} tokens")));
                true
            }
            Some(Err(e)) => {
                ctx.emit(EngineEvent::Warning(format!("autocompact failed: {e}")));
                false
            }
        };
        let Some(edge) = self.decide::<CompactionDone>(ctx, &mut Summarised { compacted }).await else {
            return Handled;
        };
        match edge {
            // Prepare measures the new history (or the old one) again.
            CompactionDone::Done | CompactionDone::Failed => {}
        }
        self.proceed()
    }

    fn estimate(&self) -> u64 {
        context::estimate_tokens_of_chars(self.st.prompt_chars())
    }

    /// Replace the history with a summary written by an aux request (the request and the
    /// new history are shared with `/compact`: [`crate::engine::compact`]). Under a spend cap
    /// the summary request is priced first, like a main one, and not sent if it cannot fit.
    pub(crate) async fn compact_history(&mut self, ctx: &mut Ctx) -> Result<(), CompactFailed> {
        let mut max_tokens = crate::model::DEFAULT_MAX_TOKENS;
        if let (Some(left), Some(price)) = (self.st.budget_left(), pricing::price(self.st.model())) {
            let chars = context::COMPACT_SYSTEM.len() + context::COMPACT_INSTRUCTION.len() + self.st.messages.chars();
            let prompt = budget::Prompt { cached_tokens: 0, new_tokens: context::estimate_tokens_of_chars(chars) };
            match budget::admit(price, prompt, max_tokens, left) {
                Admission::Send { max_tokens: fits } => max_tokens = fits,
                Admission::Over(over) => return Err(CompactFailed::Budget(over)),
            }
        }
        let n = u64::from(self.st.model_calls);
        let model = crate::engine::effects::through(ctx.deps.effects.clone(), ctx.deps.model.clone(), n);
        let summary = compact::summarize(&*model, self.st.model(), &self.st.messages[..], None, max_tokens).await?;
        self.account(ctx, &summary.usage, None);
        self.st.messages = summary.history()?.into();
        self.history_rewritten(ctx, HistoryReason::Compaction);
        Ok(())
    }

    /// Request: wait out any backoff, then open the stream.
    pub(crate) async fn request_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let cancel = ctx.deps.cancel.clone();
        if let Some(delay) = self.st.backoff.take() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Handled,
                _ = ctx.deps.effects.sleep(delay) => {}
            }
        }
        let Some(mut request) = self.st.request.clone() else {
            self.st.request = Some(self.st.build_request());
            return Handled;
        };
        request.model = self.st.model().to_owned();
        request.max_tokens = self.st.max_tokens();
        let lowered = match self.admit(ctx, request.max_tokens) {
            Ok(max_tokens) => (max_tokens < request.max_tokens).then_some(max_tokens),
            Err(over) => return self.request_failed(ctx, Failure::NotSent(over)).await,
        };
        request.max_tokens = lowered.unwrap_or(request.max_tokens);
        self.st.sent_chars = self.st.prompt_chars();
        self.st.sent_max_tokens = request.max_tokens;
        debug_assert_eq!(crate::engine::state::pairing_violation(&request.messages), None);
        self.st.model_calls += 1;
        ctx.emit(EngineEvent::AttemptStarted {
            model: request.model.clone(),
            max_tokens: request.max_tokens,
            attempt: self.st.used(counter::RETRIES) + 1,
        });
        let (model, effects) = (ctx.deps.model.clone(), ctx.deps.effects.clone());
        let attempt =
            crate::engine::effects::model_attempt(&*effects, &*model, request, u64::from(self.st.model_calls));
        let opened = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Handled,
            opened = attempt => opened,
        };
        match opened {
            Ok(stream) => {
                let Some(StreamOpened::StreamOpened) = self.decide::<StreamOpened>(ctx, &mut NoFacts).await else {
                    return Handled;
                };
                if let Some(max_tokens) = lowered {
                    self.annotate(None, Some(format!("max_tokens lowered to {max_tokens} to fit the budget")));
                }
                self.st.stream = Some(stream);
                self.proceed()
            }
            Err(error) => self.request_failed(ctx, Failure::Sent(error)).await,
        }
    }

    /// The spend cap's verdict on the next request: `Ok` with its output cap (`max_tokens`, or
    /// lower to fit what is left), `Err` when it cannot fit even at the floor. Without a cap,
    /// or for a model the price table does not know (warned about once), `Ok(max_tokens)`.
    fn admit(&mut self, ctx: &mut Ctx, max_tokens: u32) -> Result<u32, OverBudget> {
        let Some(left) = self.st.budget_left() else { return Ok(max_tokens) };
        let Some(price) = pricing::price(self.st.model()) else {
            if self.st.model_calls == 0 {
                ctx.emit(EngineEvent::Warning(format!(
                    "--max-budget-usd is not enforced: the price of model {} is unknown",
                    self.st.model()
                )));
            }
            return Ok(max_tokens);
        };
        let now = ctx.deps.effects.elapsed();
        let prompt = budget::Prompt::project(
            self.st.model(),
            self.st.prompt_chars(),
            now,
            self.st.cached_prefix.as_ref(),
            context::estimate_tokens_of_chars,
        );
        match budget::admit(price, prompt, max_tokens, left) {
            Admission::Send { max_tokens } => Ok(max_tokens),
            Admission::Over(over) => Err(over),
        }
    }

    async fn request_failed(&mut self, ctx: &mut Ctx, failure: Failure) -> Outcome<State> {
        let error = match failure {
            Failure::Sent(error) => error,
            Failure::NotSent(over) => {
                let mut not_sent = Failed::NOT_SENT;
                let Some(edge) = self.decide::<RequestFailed>(ctx, &mut not_sent).await else { return Handled };
                match edge {
                    RequestFailed::BudgetExhausted => {
                        let cap = self.st.options.max_budget_usd.unwrap_or_default();
                        self.st.error = Some(budget::exhausted_message(cap, &over));
                    }
                    other @ (RequestFailed::Fallback
                    | RequestFailed::Retry
                    | RequestFailed::OverloadRetry
                    | RequestFailed::WaitOverCap
                    | RequestFailed::RetriesExhausted
                    | RequestFailed::PromptTooLong
                    | RequestFailed::ModelError) => {
                        let id = crate::engine::select::Choice::edge(other).id();
                        ctx.violation.get_or_insert(format!("`{id}` was taken for a request that was not sent"));
                        return Handled;
                    }
                }
                return self.proceed();
            }
        };
        ctx.emit(EngineEvent::AttemptFailed { kind: error.type_name(), message: error.to_string() });
        let class = error.class();
        let cap = self.st.options.retry_max_delay;
        let wait_over_cap = error.retry_after().filter(|wait| class == ErrorClass::Retryable && *wait > cap);
        let mut failed = Failed {
            over_budget: false,
            error: error_fact(class),
            overloaded: error.is_overloaded(),
            fallback_configured: self.st.options.fallback_model.is_some(),
            wait_over_cap: wait_over_cap.is_some(),
        };
        let Some(edge) = self.decide::<RequestFailed>(ctx, &mut failed).await else { return Handled };
        match edge {
            RequestFailed::Fallback => {
                let to = self.st.options.fallback_model.clone().unwrap_or_default();
                let from = self.st.options.model.clone();
                ctx.emit(EngineEvent::Warning(format!("switched to {to} due to high demand for {from}")));
                self.annotate(None, Some(format!("{error}; switching to {to}")));
            }
            RequestFailed::Retry | RequestFailed::OverloadRetry => self.schedule_retry(ctx, &error),
            RequestFailed::WaitOverCap => {
                self.st.api_failure = Some(error.api_failure());
                self.st.error = Some(format!(
                    "the server asked to wait {} before retrying, more than the cap of {} (--retry-max-delay-ms): {error}",
                    human_duration(wait_over_cap.unwrap_or_default()),
                    human_duration(cap)
                ));
            }
            RequestFailed::RetriesExhausted => {
                self.st.api_failure = Some(error.api_failure());
                self.st.error = Some(format!("retries exhausted: {error}"));
            }
            RequestFailed::PromptTooLong => {
                self.st.api_failure = Some(error.api_failure());
                self.st.withheld = Some(Withheld::PromptTooLong(error.to_string()));
            }
            RequestFailed::ModelError => {
                self.st.api_failure = Some(error.api_failure());
                self.st.error = Some(error.to_string());
            }
            RequestFailed::BudgetExhausted => {
                ctx.violation.get_or_insert("`request.budget_exhausted` was taken for a request that was sent".into());
                return Handled;
            }
        }
        self.proceed()
    }

    /// Set the backoff of the retry just taken (its edge consumed one retry), note it in its
    /// trace record and tell the caller (the CLI prints it, so a run waiting to retry does not
    /// look hung).
    fn schedule_retry(&mut self, ctx: &mut Ctx, error: &ModelError) {
        let attempt = self.st.used(counter::RETRIES);
        let max = attempt + self.st.left(counter::RETRIES);
        let delay = error.retry_after().unwrap_or_else(|| {
            backoff(attempt, self.st.options.retry_base_delay, self.st.options.retry_max_delay, rand::random::<f64>())
        });
        self.st.backoff = Some(delay);
        self.annotate(Some(delay.as_millis() as u64), Some(error.to_string()));
        ctx.emit(EngineEvent::Retrying { attempt, max, delay, error: error.to_string() });
    }

    /// Consume: read the stream to its end and decide what the reply asks for. Each tool call
    /// is handed to the executor as soon as its block is complete, so a read-only call can run
    /// while the rest of the reply streams; the others wait for ExecuteTools, after the
    /// reply's `message_stop`, so a retried stream never runs them twice.
    pub(crate) async fn consume_step(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let cancel = ctx.deps.cancel.clone();
        let mut executor = self.new_executor(ctx);
        let Some(mut stream) = self.st.stream.take() else {
            return self.stream_failed(ctx, Assembler::new(), executor, ModelError::Incomplete).await;
        };
        let mut asm = Assembler::new();
        let mut steps = ReplySteps::default();
        'reading: loop {
            let mut note = |step: Step<'_>| steps.note(step);
            let read = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    self.st.partial = Some(asm);
                    self.st.partial_results = Self::settle(ctx, executor).await;
                    return Handled;
                }
                events = executor.next(), if executor.has_running() => {
                    events.into_iter().for_each(|e| ctx.emit(e));
                    continue;
                }
                read = reply::read(&mut stream, &mut asm, &mut note) => read,
            };
            for seen in steps.take() {
                match seen {
                    Seen::Text { index, text } => ctx.emit(EngineEvent::TextDelta { index, text }),
                    Seen::Thinking { index, text } => ctx.emit(EngineEvent::ThinkingDelta { index, thinking: text }),
                    Seen::InputJson { index, text } => {
                        ctx.emit(EngineEvent::InputJsonDelta { index, partial_json: text });
                    }
                    Seen::Started => ctx.emit(EngineEvent::ReplyStarted {
                        id: asm.message_id().map(str::to_owned),
                        model: asm.model().map(str::to_owned),
                        usage: *asm.usage(),
                    }),
                    Seen::BlockStarted { index, block } => ctx.emit(EngineEvent::BlockStarted { index, block }),
                    Seen::Delta => {
                        let (stop_reason, stop_sequence) = asm.stop();
                        ctx.emit(EngineEvent::ReplyDelta {
                            stop_reason: stop_reason.cloned(),
                            stop_sequence: stop_sequence.map(str::to_owned),
                            usage: *asm.usage(),
                        });
                    }
                    Seen::BlockDone(index) => {
                        ctx.emit(EngineEvent::BlockStopped { index });
                        if self.st.options.stream_tools
                            && let Some(ContentBlock::ToolUse { id, name, input }) = asm.finished_block(index)
                        {
                            for event in executor.add(ToolCall { id, name, input }) {
                                ctx.emit(event);
                            }
                        }
                    }
                    Seen::Stopped => break 'reading,
                    Seen::Failed(e) => {
                        let error = ModelError::Stream { kind: e.kind, message: e.message };
                        return self.stream_failed(ctx, asm, executor, error).await;
                    }
                }
            }
            match read {
                None => break,
                Some(Ok(())) => {}
                Some(Err(error)) => return self.stream_failed(ctx, asm, executor, error).await,
            }
        }
        if !asm.is_complete() {
            return self.stream_failed(ctx, asm, executor, ModelError::Incomplete).await;
        }
        // The reply is whole; read the rest of its body (bounded by the transport) so the
        // connection is reused by the next request. An interruption stops waiting.
        tokio::select! {
            biased;
            () = cancel.cancelled() => {}
            () = reply::finish(&mut stream) => {}
        }
        let done = asm.finish();
        self.account(ctx, &done.usage, done.model.as_deref());
        let info = Box::new(reply_info(&done, stream.request_id()));
        self.st.cached_prefix = Some(CachedPrefix {
            model: self.st.model().to_owned(),
            chars: self.st.sent_chars,
            cached_tokens: done.usage.cache_read_input_tokens.unwrap_or(0)
                + done.usage.cache_creation_input_tokens.unwrap_or(0),
            uncached_tokens: done.usage.input_tokens.unwrap_or(0),
            at: ctx.deps.effects.elapsed(),
        });
        let truncation = truncation(done.stop_reason.as_ref(), done.usage.output_tokens, self.st.sent_max_tokens);
        let paused = done.stop_reason == Some(StopReason::PauseTurn);
        if done.stop_reason == Some(StopReason::Refusal) {
            ctx.emit(EngineEvent::Warning("the model declined to answer (stop_reason refusal)".into()));
        }
        let (message, dropped) = done.into_message();
        if !dropped.is_empty() {
            ctx.emit(EngineEvent::Warning(format!("dropped {} unfinished tool call(s): never run", dropped.len())));
        }
        let calls: Vec<ToolCall> = message.tool_uses().map(ToolCall::from).collect();
        let mut seen = Completed { has_tool_use: !calls.is_empty(), truncation, paused };
        let Some(edge) = self.decide::<MessageComplete>(ctx, &mut seen).await else { return Handled };
        if let Some(syntax) = leaked_tool_syntax(&message) {
            // A local model that writes its tool calls as text: kept as text, never run.
            let note = format!("the reply's text holds tool-call syntax ({syntax}); it is kept as text, not run");
            ctx.emit(EngineEvent::Warning(note.clone()));
            self.annotate(None, Some(note));
        }
        if matches!(edge, MessageComplete::Tools | MessageComplete::PauseTurn | MessageComplete::EndTurn) {
            // The reply is kept: the request is never sent again (the next one is built by
            // Prepare). Dropping it lets the history grow in place instead of being copied
            // while the request still shares it.
            self.st.request = None;
        }
        match edge {
            MessageComplete::Tools => {
                self.append_reply(ctx, message, Some(info));
                self.st.calls = calls;
                // Without streamed execution the executor is empty: ExecuteTools starts the calls.
                self.st.executor = (!executor.is_empty()).then_some(executor);
            }
            // The API continues a paused turn when it gets the paused reply back as it is.
            MessageComplete::PauseTurn | MessageComplete::EndTurn => self.append_reply(ctx, message, Some(info)),
            MessageComplete::Truncated => {
                let max_tokens = self.st.sent_max_tokens;
                self.st.withheld = Some(Withheld::Truncated { reply: message, info, max_tokens });
            }
            // The partial reply is dropped: the request is sent again once the history is
            // smaller, or the run ends saying why.
            MessageComplete::ContextFull => {
                let why = match info.usage.output_tokens {
                    Some(n) if info.stop_reason == Some(StopReason::MaxTokens) => format!(
                        "the context window filled during the reply: it stopped on max_tokens after {n} of the {} \
                         output tokens allowed",
                        self.st.sent_max_tokens
                    ),
                    _ => {
                        "the context window filled during the reply (stop_reason model_context_window_exceeded)".into()
                    }
                };
                ctx.emit(EngineEvent::Warning(why.clone()));
                self.st.withheld = Some(Withheld::PromptTooLong(why));
            }
        }
        self.proceed()
    }

    /// Cancel what still runs of an executor and collect every call's result by id.
    async fn settle(ctx: &mut Ctx, mut executor: Executor) -> HashMap<String, ContentBlock> {
        executor.cancel();
        let outcome = executor.finish(&mut |e| ctx.emit(e)).await;
        outcome
            .results
            .into_iter()
            .filter_map(|block| match &block {
                ContentBlock::ToolResult { tool_use_id, .. } => Some((tool_use_id.clone(), block)),
                _ => None,
            })
            .collect()
    }

    async fn stream_failed(
        &mut self,
        ctx: &mut Ctx,
        partial: Assembler,
        executor: Executor,
        error: ModelError,
    ) -> Outcome<State> {
        ctx.emit(EngineEvent::AttemptFailed { kind: error.type_name(), message: error.to_string() });
        let class = error.class();
        let started = executor.started();
        if started > 0 {
            ctx.emit(EngineEvent::Warning(format!(
                "the stream broke after {started} read-only tool call(s) started; calls that change anything never start before the reply ends"
            )));
        }
        let results = Self::settle(ctx, executor).await;
        let mut broke = Broke { error: error_fact(class) };
        let Some(edge) = self.decide::<StreamFailed>(ctx, &mut broke).await else { return Handled };
        match edge {
            // The partial reply and its results are dropped: the request is sent again.
            StreamFailed::Retry => self.schedule_retry(ctx, &error),
            StreamFailed::RetriesExhausted => {
                self.st.api_failure = Some(error.api_failure());
                self.st.partial_results = results;
                self.keep_partial(ctx, partial, &format!("Error: {error}"));
                self.st.error = Some(format!("retries exhausted: {error}"));
            }
            StreamFailed::PromptTooLong => {
                self.st.api_failure = Some(error.api_failure());
                self.st.withheld = Some(Withheld::PromptTooLong(error.to_string()));
            }
            StreamFailed::ModelError => {
                self.st.api_failure = Some(error.api_failure());
                let message = error.to_string();
                self.st.partial_results = results;
                self.keep_partial(ctx, partial, &format!("Error: {message}"));
                self.st.error = Some(message);
            }
        }
        self.proceed()
    }

    /// Keep the finished part of an interrupted reply. Each of its tool calls is answered:
    /// with its real result if it ran to the end, otherwise with a synthetic error (`reason`).
    fn keep_partial(&mut self, ctx: &mut Ctx, partial: Assembler, reason: &str) {
        let done = partial.finish();
        let info = Box::new(reply_info(&done, None));
        let (message, _) = done.into_message();
        let mut known = std::mem::take(&mut self.st.partial_results);
        let results: Vec<ContentBlock> = message
            .tool_uses()
            .map(|t| match known.remove(t.id) {
                Some(ContentBlock::ToolResult { is_error: false, content, .. }) => {
                    ContentBlock::ToolResult { tool_use_id: t.id.to_owned(), content, is_error: false }
                }
                _ => ContentBlock::tool_result(t.id, reason.to_owned(), true),
            })
            .collect();
        self.append_reply(ctx, message, Some(info));
        if !results.is_empty() {
            self.append(ctx, Message { role: Role::User, content: results });
        }
    }

    /// Add one reply's usage (and its cost) to the run's totals and tell the caller. The
    /// reply is priced as the model that `served` it (the name in `message_start`), else as
    /// the model asked for; a model nobody priced makes the run's cost unknown.
    fn account(&mut self, ctx: &mut Ctx, usage: &Usage, served: Option<&str>) {
        let model = served.filter(|m| !m.is_empty()).unwrap_or(self.st.model()).to_owned();
        self.st.usage.add(usage);
        let cost_usd = crate::model::anthropic::cost_usd(&model, usage);
        match cost_usd {
            Some(cost) => self.st.cost_usd += cost,
            None => {
                self.st.unpriced_models.insert(model.clone());
            }
        }
        ctx.emit(EngineEvent::Usage { model, usage: *usage, cost_usd });
    }

    /// Append a message to the conversation, write it to the session transcript and show it
    /// to the caller.
    pub(crate) fn append(&mut self, ctx: &mut Ctx, message: Message) {
        self.append_reply(ctx, message, None);
    }

    /// [`Self::append`] for a reply of the model, with what the API said about it: its line
    /// in the transcript and on stdout carry the same uuid, message id, usage and request id.
    pub(crate) fn append_reply(&mut self, ctx: &mut Ctx, message: Message, reply: Option<Box<ReplyInfo>>) {
        let uuid = ctx.deps.effects.new_id();
        if let Some(warning) = ctx.transcript.message(&message, uuid, reply.as_deref()) {
            ctx.emit(warning);
        }
        if let Some(m) = self.st.push_message(message) {
            ctx.emit(EngineEvent::Message { message: m.clone(), uuid, reply });
        }
    }

    /// Write the whole history to the session transcript after a rewrite in place.
    pub(crate) fn history_rewritten(&mut self, ctx: &mut Ctx, reason: HistoryReason) {
        // The next prompt no longer starts with what the cache holds.
        self.st.cached_prefix = None;
        if let Some(warning) = ctx.transcript.history(&self.st.messages.to_messages(), reason) {
            ctx.emit(warning);
        }
    }

    /// The `Sampling` superstate's abort: keep what streamed, answer its calls, end.
    pub(crate) async fn abort_sampling(&mut self, ctx: &mut Ctx) -> Outcome<State> {
        let Some(sampling::Abort::Abort) = self.decide::<sampling::Abort>(ctx, &mut NoFacts).await else {
            return Handled;
        };
        if let Some(partial) = self.st.partial.take() {
            self.keep_partial(ctx, partial, "Interrupted by user");
        }
        self.append(ctx, Message::user_text(INTERRUPTED));
        self.st.error = Some("interrupted by the user while the model was answering".into());
        self.proceed()
    }
}

/// Markers of tool calls some local models write into their text instead of calling
/// (Qwen's and Hermes' `<tool_call>`, Llama's `<|python_tag|>`, `<function=`).
const LEAKED_TOOL_SYNTAX: [&str; 4] = ["<tool_call>", "<|python_tag|>", "<function=", "<|tool_call|>"];

/// The first tool-call marker in the text of `message`, if any.
fn leaked_tool_syntax(message: &crate::protocol::Message) -> Option<&'static str> {
    let text = message.text();
    LEAKED_TOOL_SYNTAX.into_iter().find(|marker| text.contains(marker))
}

/// What the API said about an assembled reply (`request_id`: its request's `request-id`).
fn reply_info(done: &Assembled, request_id: Option<&str>) -> ReplyInfo {
    ReplyInfo {
        id: done.id.clone(),
        model: done.model.clone(),
        stop_reason: done.stop_reason.clone(),
        stop_sequence: done.stop_sequence.clone(),
        usage: done.usage,
        request_id: request_id.map(str::to_owned),
    }
}

/// Why Request reports `request_failed`.
enum Failure {
    /// The request was sent and failed.
    Sent(ModelError),
    /// The spend cap kept it from being sent.
    NotSent(OverBudget),
}

/// Why a compaction left the history as it was.
#[derive(Debug, thiserror::Error)]
pub enum CompactFailed {
    /// The summary request failed, or its summary was empty.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The summary request was not sent: it could not fit the spend cap.
    #[error("the summary request was not sent under --max-budget-usd, as {0}")]
    Budget(OverBudget),
}

/// The guard value of an error class.
/// The `error` fact for an error of this class.
fn error_fact(class: ErrorClass) -> fact::Error {
    match class {
        ErrorClass::Retryable => fact::Error::Retryable,
        ErrorClass::PromptTooLong => fact::Error::PromptTooLong,
        ErrorClass::Fatal => fact::Error::Fatal,
    }
}

/// What Prepare measured, for the guards out of it on `context_ready`.
struct Measured {
    tools_pending: bool,
    over_autocompact: bool,
    over_blocking_limit: bool,
}

impl ContextReadyFacts for Measured {
    async fn tools_pending(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.tools_pending)
    }

    async fn over_autocompact(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.over_autocompact)
    }

    async fn over_blocking_limit(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.over_blocking_limit)
    }
}

/// How the autocompaction went, for the guards out of Compact on `compaction_done`.
struct Summarised {
    compacted: bool,
}

impl CompactionDoneFacts for Summarised {
    async fn compacted(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.compacted)
    }
}

/// How a request failed, for the guards out of Request on `request_failed`.
struct Failed {
    over_budget: bool,
    error: fact::Error,
    overloaded: bool,
    fallback_configured: bool,
    wait_over_cap: bool,
}

impl Failed {
    /// A request the spend cap kept from being sent: it failed for good, with no overload to
    /// fall back from and no server to wait for.
    const NOT_SENT: Failed = Failed {
        over_budget: true,
        error: fact::Error::Fatal,
        overloaded: false,
        fallback_configured: false,
        wait_over_cap: false,
    };
}

impl RequestFailedFacts for Failed {
    async fn error(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<fact::Error> {
        Some(self.error)
    }

    async fn over_budget(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.over_budget)
    }

    async fn overloaded(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.overloaded)
    }

    async fn fallback_configured(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.fallback_configured)
    }

    async fn wait_over_cap(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.wait_over_cap)
    }
}

/// What the finished reply holds, for the guards out of Consume on `message_complete`.
struct Completed {
    has_tool_use: bool,
    truncation: fact::Truncation,
    paused: bool,
}

/// How a reply that stopped on `stop_reason` after `output_tokens` (as reported) of its
/// `cap` was cut off: by a full context window for `model_context_window_exceeded`, or for
/// `max_tokens` with fewer tokens generated than the cap (a local server's window ran out
/// first, and a higher cap cannot help); at its cap for `max_tokens` otherwise (without a
/// count the cap is taken as used).
fn truncation(stop_reason: Option<&StopReason>, output_tokens: Option<u64>, cap: u32) -> fact::Truncation {
    match stop_reason {
        Some(StopReason::ModelContextWindowExceeded) => fact::Truncation::ContextFull,
        Some(StopReason::MaxTokens) if output_tokens.is_some_and(|n| n > 0 && n < u64::from(cap)) => {
            fact::Truncation::ContextFull
        }
        Some(StopReason::MaxTokens) => fact::Truncation::OutputCap,
        _ => fact::Truncation::None,
    }
}

impl MessageCompleteFacts for Completed {
    async fn has_tool_use(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.has_tool_use)
    }

    async fn truncation(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<fact::Truncation> {
        Some(self.truncation)
    }

    async fn paused(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<bool> {
        Some(self.paused)
    }
}

/// How the stream broke, for the guards out of Consume on `stream_failed`.
struct Broke {
    error: fact::Error,
}

impl StreamFailedFacts for Broke {
    async fn error(&mut self, _: &mut Machine, _: &mut Ctx) -> Option<fact::Error> {
        Some(self.error)
    }
}

/// Exponential backoff: `base · 2^(attempt-1)`, capped at `max`, plus up to 25% jitter
/// (`jitter` in `0.0..1.0`).
pub fn backoff(attempt: u32, base: Duration, max: Duration, jitter: f64) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let capped = exp.min(max);
    capped + capped.mul_f64(0.25 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelRequest, Purpose};

    #[test]
    fn backoff_doubles_caps_and_jitters() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(32);
        assert_eq!(backoff(1, base, max, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(2, base, max, 0.0), Duration::from_millis(1000));
        assert_eq!(backoff(4, base, max, 0.0), Duration::from_millis(4000));
        assert_eq!(backoff(10, base, max, 0.0), Duration::from_secs(32));
        assert_eq!(backoff(1, base, max, 1.0), Duration::from_millis(625));
    }

    /// A model that answers main requests from a scenario and, for the compaction's summary
    /// request, interrupts the run and never answers: the interrupt must end the run.
    struct InterruptedSummary {
        scripted: crate::model::scripted::ScriptedModel,
        cancel: tokio_util::sync::CancellationToken,
    }

    impl crate::model::Model for InterruptedSummary {
        fn stream(
            &self,
            request: ModelRequest,
        ) -> futures::future::BoxFuture<'_, Result<crate::model::ReplyStream, ModelError>> {
            if request.purpose == Purpose::Aux {
                self.cancel.cancel();
                return Box::pin(futures::future::pending());
            }
            self.scripted.stream(request)
        }
    }

    #[tokio::test]
    async fn an_interrupt_stops_autocompaction() {
        use crate::engine::machine::Deps;
        use std::sync::{Arc, Mutex};
        let scenario = crate::scenario::builtin::load("autocompact").unwrap();
        let dir = tempfile::tempdir().unwrap();
        scenario.write_files(dir.path()).unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        let model = InterruptedSummary {
            scripted: crate::model::scripted::ScriptedModel::new(&scenario, cancel.clone()),
            cancel: cancel.clone(),
        };
        // Only the tool the scenario calls, so that other tools' definitions do not move the
        // history (about 6500 tokens with Read's) out of the window's band between the
        // autocompact threshold and the blocking limit (below).
        let mut tools = crate::tools::Registry::new();
        tools.register(Arc::new(crate::tools::read::Read));
        let deps = Deps {
            model: Arc::new(model),
            tools,
            hooks: Arc::new(crate::hooks::NoHooks),
            effects: Arc::new(crate::engine::clock::SystemClock::new()),
            cancel,
            cwd: dir.path().to_path_buf(),
            policy: Arc::new(crate::permissions::Policy::new(crate::permissions::Mode::Default, dir.path().into())),
            shell_env: crate::tools::shell_env::ShellEnv::inherited_default(),
            sandbox: crate::sandbox::Sandbox::none(),
            approver: Arc::new(crate::permissions::Unattended),
        };
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let seen = warnings.clone();
        let sink = move |event: &EngineEvent| {
            if let EngineEvent::Warning(w) = event {
                seen.lock().unwrap().push(w.clone());
            }
        };
        let mut options = crate::harness::scenario_options(&scenario);
        // Autocompact above 6334 tokens, the blocking limit above 6714: the summary is asked
        // for, and once it is interrupted the request is still sent.
        options.context_window = 7600;
        let thresholds = crate::context::Thresholds::for_window(options.context_window);
        assert_eq!((thresholds.autocompact, thresholds.blocking), (6334, 6714));
        let outcome = crate::engine::run::run(deps, options, &scenario.prompt, Box::new(sink)).await.unwrap();
        assert_eq!(outcome.terminal, crate::engine::reason::TerminalReason::AbortedStreaming);
        assert_eq!(outcome.edge_ids().last(), Some(&"sampling.abort"));
        assert_eq!(*warnings.lock().unwrap(), vec![COMPACTION_INTERRUPTED.to_owned()]);
    }
}
