//! The executor of one reply's tool calls. Calls are added as their `content_block_stop`
//! arrives, so a concurrency-safe (read-only) call can start while the rest of the reply is
//! still streaming. A call that can change anything waits until the reply has ended with
//! `message_stop` ([`Executor::end_reply`]): a stream cut before it is retried, the model may
//! issue the same call again, and a mutating call must never run twice. A read-only call that
//! ran for an abandoned attempt changed nothing.
//!
//! Scheduling: a call starts when nothing runs, or when it and everything running are
//! concurrency-safe and fewer than the limit run; the queue is scanned in call order and stops
//! at the first call that cannot start, so an unsafe call runs alone and in order. Results are
//! returned in call order whatever order calls finish in. A failing call whose tool says so
//! ([`crate::tools::Tool::failure_cancels_siblings`]: Bash) cancels the calls running beside
//! it and those not started yet; each answers [`SIBLING_CANCELLED`].

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;

use crate::engine::events::EngineEvent;
use crate::protocol::ContentBlock;
use crate::tools::orchestrate::{CallResult, INTERRUPTED_RESULT, OUTCOME_UNKNOWN_RESULT, SIBLING_CANCELLED, Toolbox};
use crate::tools::structured_output::Answer;
use crate::tools::{ToolCall, ToolContext, ToolOutput};

/// The outcome of one tool phase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseOutcome {
    /// One `tool_result` per call, in call order.
    pub results: Vec<ContentBlock>,
    /// The first `continue: false` reason a tool hook gave.
    pub hook_stop: Option<String>,
    /// The calls that were refused, in call order.
    pub denials: Vec<crate::permissions::Denial>,
    /// What the phase's `StructuredOutput` calls came to: the first valid answer, else the
    /// last invalid one; `None` when there was no such call.
    pub structured: Option<Answer>,
    /// What calls gave besides their text, by tool_use id, in call order.
    pub extras: Vec<(String, crate::tools::CallExtra)>,
}

#[derive(Debug)]
enum Status {
    Queued,
    Running,
    Done(CallResult),
}

#[derive(Debug)]
struct Entry {
    call: ToolCall,
    safe: bool,
    /// Its failure cancels its siblings.
    cancels_siblings: bool,
    /// It may start before the reply ends: concurrency-safe, and no tool hook runs for it.
    early: bool,
    /// The MCP server and remote tool, for a tool of an MCP server.
    mcp: Option<crate::tools::McpOrigin>,
    status: Status,
}

/// Runs the calls of one reply.
pub struct Executor {
    toolbox: Arc<Toolbox>,
    base: ToolContext,
    siblings: CancellationToken,
    max_concurrency: usize,
    entries: Vec<Entry>,
    running: FuturesUnordered<BoxFuture<'static, (usize, Result<CallResult, JoinError>)>>,
    sibling_failed: bool,
    /// The reply ended with `message_stop`: every call may start.
    reply_ended: bool,
    /// [`Executor::cancel`] was called: nothing more starts.
    cancelled: bool,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("entries", &self.entries).field("running", &self.running.len()).finish()
    }
}

impl Executor {
    /// An executor for one reply, which is still streaming: until [`Executor::end_reply`],
    /// only concurrency-safe calls start. `base.cancel` is the run's interrupt token.
    pub fn new(toolbox: Arc<Toolbox>, base: ToolContext, max_concurrency: usize) -> Self {
        let siblings = base.cancel.child_token();
        Executor {
            toolbox,
            base,
            siblings,
            max_concurrency: max_concurrency.max(1),
            entries: Vec::new(),
            running: FuturesUnordered::new(),
            sibling_failed: false,
            reply_ended: false,
            cancelled: false,
        }
    }

    /// The reply has ended with `message_stop` and can no longer be retried: the calls held
    /// back (those that may change something, and every call queued behind one) may start
    /// now. Returns start events.
    pub fn end_reply(&mut self) -> Vec<EngineEvent> {
        self.reply_ended = true;
        self.start_eligible()
    }

    /// Add a finished `tool_use`; it starts at once if the rules allow (a call that is not
    /// concurrency-safe, or that a PreToolUse or PostToolUse hook runs for, never starts before
    /// [`Executor::end_reply`]). Returns start events.
    pub fn add(&mut self, call: ToolCall) -> Vec<EngineEvent> {
        let safe = self.toolbox.is_concurrency_safe(&call);
        let cancels_siblings = self.toolbox.failure_cancels_siblings(&call);
        // A hook command that runs for the call could change anything: it waits too.
        let early = safe && self.toolbox.may_start_early(&call) && !self.toolbox.hooks.runs_for_tool(&call.name);
        let mcp = self.toolbox.mcp_origin(&call);
        // Journaled before anything can hold it up (its turn, its hooks, a permission
        // question): a kill before its `start` line leaves a call a resume knows never started.
        if let Some(journal) = &self.base.journal {
            journal.queued(&call.id, &call.name);
        }
        self.entries.push(Entry { call, safe, cancels_siblings, early, mcp, status: Status::Queued });
        self.start_eligible()
    }

    /// Whether any call is running.
    pub fn has_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Whether no call was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of calls that have started (so their effects may already have happened).
    pub fn started(&self) -> usize {
        self.entries.iter().filter(|e| !matches!(e.status, Status::Queued)).count()
    }

    /// Whether the call `id` has started (it may have run, or still be running).
    pub fn has_started(&self, id: &str) -> bool {
        self.entries.iter().any(|e| e.call.id == id && !matches!(e.status, Status::Queued))
    }

    /// Wait for one running call to finish; returns its approval and warning events, its
    /// finish event and any start events.
    /// Returns nothing at once when no call runs.
    pub async fn next(&mut self) -> Vec<EngineEvent> {
        let Some((index, joined)) = self.running.next().await else { return Vec::new() };
        let mut result = joined.unwrap_or_else(|e| {
            // A tool task panicked: answer the call anyway, never lose it.
            let output = ToolOutput::error(format!("the tool failed internally: {e}"));
            CallResult {
                output,
                stop: None,
                warnings: Vec::new(),
                duration: Duration::ZERO,
                approval: None,
                denied: false,
            }
        });
        let entry = &self.entries[index];
        if self.sibling_failed && result.output.is_error && !self.base.cancel.is_cancelled() {
            result.output = ToolOutput::error(SIBLING_CANCELLED);
        } else if entry.cancels_siblings && result.output.is_error && !self.base.cancel.is_cancelled() {
            self.sibling_failed = true;
            self.siblings.cancel();
        }
        let mut events: Vec<EngineEvent> = result
            .approval
            .take()
            .map(|answered| {
                let (request, approval) = *answered;
                EngineEvent::ApprovalAnswered { request, approval }
            })
            .into_iter()
            .collect();
        events.extend(result.warnings.iter().cloned().map(EngineEvent::Warning));
        events.push(EngineEvent::ToolFinished {
            id: entry.call.id.clone(),
            name: entry.call.name.clone(),
            is_error: result.output.is_error,
            duration: result.duration,
            mcp: entry.mcp.clone(),
            preview: crate::engine::events::result_preview(&result.output.content),
        });
        if let Some(journal) = &self.base.journal {
            let output = &result.output;
            let images = output.images.iter().map(|i| (i.media_type.clone(), i.data.clone()));
            let block =
                ContentBlock::tool_result_with_images(&entry.call.id, output.content.clone(), images, output.is_error);
            journal.finished(&entry.call.id, &block);
        }
        self.entries[index].status = Status::Done(result);
        events.extend(self.start_eligible());
        events
    }

    /// Wait for every call and return the results in call order; the reply is taken as ended
    /// (see [`Executor::end_reply`]) unless the executor was cancelled. Calls that never
    /// started answer [`INTERRUPTED_RESULT`] after an interrupt or a cancel (a call still
    /// running, which cannot happen once all are awaited, [`OUTCOME_UNKNOWN_RESULT`]),
    /// [`SIBLING_CANCELLED`] after a failed sibling that cancels the others.
    pub async fn finish(mut self, emit: &mut dyn FnMut(EngineEvent)) -> PhaseOutcome {
        for event in self.end_reply() {
            emit(event);
        }
        while self.has_running() {
            for event in self.next().await {
                emit(event);
            }
        }
        let interrupted = self.base.cancel.is_cancelled();
        let mut hook_stop = None;
        let mut denials = Vec::new();
        let mut structured: Option<Answer> = None;
        let mut extras = Vec::new();
        let results = self
            .entries
            .into_iter()
            .map(|entry| match entry.status {
                Status::Done(result) => {
                    if hook_stop.is_none() {
                        hook_stop = result.stop;
                    }
                    if result.denied {
                        denials.push(crate::permissions::Denial {
                            tool_name: entry.call.name.clone(),
                            tool_use_id: entry.call.id.clone(),
                            tool_input: entry.call.input.clone(),
                        });
                    }
                    let mut output = result.output;
                    if let Some(extra) = output.extra.take() {
                        extras.push((entry.call.id.clone(), *extra));
                    }
                    match (&structured, output.structured) {
                        (Some(Answer::Valid(_)), _) | (_, None) => {}
                        (_, answer) => structured = answer,
                    }
                    let images = output.images.into_iter().map(|i| (i.media_type, i.data));
                    ContentBlock::tool_result_with_images(entry.call.id, output.content, images, output.is_error)
                }
                Status::Queued => {
                    let text = if interrupted || !self.sibling_failed { INTERRUPTED_RESULT } else { SIBLING_CANCELLED };
                    ContentBlock::tool_result(entry.call.id, text, true)
                }
                Status::Running => ContentBlock::tool_result(entry.call.id, OUTCOME_UNKNOWN_RESULT, true),
            })
            .collect();
        PhaseOutcome { results, hook_stop, denials, structured, extras }
    }

    /// Cancel every call (running ones observe it; queued ones never start).
    pub fn cancel(&mut self) {
        self.cancelled = true;
        self.siblings.cancel();
    }

    fn start_eligible(&mut self) -> Vec<EngineEvent> {
        let mut events = Vec::new();
        if self.base.cancel.is_cancelled() || self.sibling_failed || self.cancelled {
            return events;
        }
        for index in 0..self.entries.len() {
            if !matches!(self.entries[index].status, Status::Queued) {
                continue;
            }
            let running: Vec<&Entry> = self.entries.iter().filter(|e| matches!(e.status, Status::Running)).collect();
            let entry = &self.entries[index];
            let can_start = (self.reply_ended || entry.early)
                && (running.is_empty()
                    || (entry.safe && running.iter().all(|e| e.safe) && running.len() < self.max_concurrency));
            if !can_start {
                break;
            }
            events.push(EngineEvent::ToolStarted {
                id: entry.call.id.clone(),
                name: entry.call.name.clone(),
                input: entry.call.input.clone(),
                running: running.iter().map(|e| e.call.name.clone()).collect(),
                early: !self.reply_ended,
                mcp: entry.mcp.clone(),
            });
            let toolbox = self.toolbox.clone();
            let call = entry.call.clone();
            let ctx = ToolContext { cancel: self.siblings.clone(), call_id: call.id.clone(), ..self.base.clone() };
            let task = tokio::spawn(async move { toolbox.run_call(&call, ctx).await });
            self.running.push(task.map(move |joined| (index, joined)).boxed());
            self.entries[index].status = Status::Running;
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{HookEnv, NoHooks};
    use crate::permissions::{Mode, Policy};
    use crate::tools::{Registry, Tool};
    use serde_json::{Value, json};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fake tool: sleeps `ms`, fails when `fail` is set, logs start and end, tracks overlap.
    struct Fake {
        name: &'static str,
        safe: bool,
        cancels_siblings: bool,
        log: Arc<Mutex<Vec<String>>>,
        in_flight: Arc<AtomicUsize>,
        max: Arc<AtomicUsize>,
    }

    impl Tool for Fake {
        fn name(&self) -> &'static str {
            self.name
        }
        fn description(&self) -> &'static str {
            "test tool"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn is_concurrency_safe(&self, _input: &Value) -> bool {
            self.safe
        }
        fn failure_cancels_siblings(&self) -> bool {
            self.cancels_siblings
        }
        fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
            let (log, in_flight, max) = (self.log.clone(), self.in_flight.clone(), self.max.clone());
            Box::pin(async move {
                let tag = input["tag"].as_str().unwrap_or_default().to_owned();
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(now, Ordering::SeqCst);
                log.lock().unwrap().push(format!("start {tag}"));
                let ms = input["ms"].as_u64().unwrap_or(0);
                let cancelled = tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => false,
                    _ = ctx.cancel.cancelled() => true,
                };
                in_flight.fetch_sub(1, Ordering::SeqCst);
                log.lock().unwrap().push(format!("end {tag}"));
                if cancelled || input["fail"].as_bool() == Some(true) {
                    ToolOutput::error(format!("{tag} failed"))
                } else {
                    ToolOutput::ok(format!("{tag} ok"))
                }
            })
        }
    }

    struct Rig {
        executor: Executor,
        log: Arc<Mutex<Vec<String>>>,
        max: Arc<AtomicUsize>,
    }

    fn rig(limit: usize) -> Rig {
        let log = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let mut registry = Registry::new();
        // The fake named Bash cancels its siblings because it says so, not because of its name.
        for (name, safe, cancels_siblings) in [("Safe", true, false), ("Unsafe", false, false), ("Bash", true, true)] {
            let (log, in_flight, max) = (log.clone(), in_flight.clone(), max.clone());
            let tool = Fake { name, safe, cancels_siblings, log, in_flight, max };
            registry.register(Arc::new(tool));
        }
        let dir = std::env::temp_dir();
        let toolbox = Toolbox {
            registry,
            hooks: Arc::new(NoHooks),
            env: HookEnv::new("s", dir.clone()),
            policy: Arc::new(Policy::new(Mode::BypassPermissions, dir.clone())),
            result_cap: 1000,
            spill_dir: dir.clone(),
            approvals: crate::tools::orchestrate::Approvals::unattended(),
            effects: Arc::new(crate::engine::clock::VirtualClock::new()),
        };
        Rig { executor: Executor::new(Arc::new(toolbox), ToolContext::new(dir), limit), log, max }
    }

    fn call(id: &str, name: &str, input: Value) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), input }
    }

    fn texts(outcome: &PhaseOutcome) -> Vec<(String, bool)> {
        outcome
            .results
            .iter()
            .map(|b| match b {
                ContentBlock::ToolResult { content, is_error, .. } => (content.as_str().to_owned(), *is_error),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn results_come_back_in_call_order() {
        let mut r = rig(10);
        r.executor.add(call("1", "Safe", json!({"tag": "a", "ms": 60})));
        r.executor.add(call("2", "Safe", json!({"tag": "b", "ms": 1})));
        let outcome = r.executor.finish(&mut |_| {}).await;
        assert_eq!(texts(&outcome), vec![("a ok".to_string(), false), ("b ok".to_string(), false)]);
        assert_eq!(*r.log.lock().unwrap(), vec!["start a", "start b", "end b", "end a"]);
    }

    #[tokio::test]
    async fn the_concurrency_limit_holds() {
        let mut r = rig(2);
        for i in 0..5 {
            r.executor.add(call(&i.to_string(), "Safe", json!({"tag": i.to_string(), "ms": 20})));
        }
        let outcome = r.executor.finish(&mut |_| {}).await;
        assert_eq!(outcome.results.len(), 5);
        assert_eq!(r.max.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_unsafe_call_runs_alone_and_in_order() {
        let mut r = rig(10);
        r.executor.add(call("1", "Safe", json!({"tag": "s1", "ms": 30})));
        r.executor.add(call("2", "Unsafe", json!({"tag": "u", "ms": 10})));
        r.executor.add(call("3", "Safe", json!({"tag": "s2", "ms": 1})));
        r.executor.finish(&mut |_| {}).await;
        assert_eq!(*r.log.lock().unwrap(), vec!["start s1", "end s1", "start u", "end u", "start s2", "end s2"]);
        assert_eq!(r.max.load(Ordering::SeqCst), 1);
    }

    /// The start events' `(id, early)` pairs.
    fn starts(events: &[EngineEvent]) -> Vec<(String, bool)> {
        events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::ToolStarted { id, early, .. } => Some((id.clone(), *early)),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn only_safe_calls_start_before_the_reply_ends() {
        let mut r = rig(10);
        let mut early = r.executor.add(call("1", "Safe", json!({"tag": "s1", "ms": 1})));
        early.extend(r.executor.add(call("2", "Unsafe", json!({"tag": "u", "ms": 1}))));
        early.extend(r.executor.add(call("3", "Safe", json!({"tag": "s2", "ms": 1}))));
        assert_eq!(starts(&early), vec![("1".to_string(), true)]);
        let mut later = Vec::new();
        while r.executor.has_running() {
            later.extend(r.executor.next().await);
        }
        assert_eq!(starts(&later), vec![], "the unsafe call waits for the reply's end");
        let at_end = r.executor.end_reply();
        assert_eq!(starts(&at_end), vec![("2".to_string(), false)]);
        let mut finishing = Vec::new();
        r.executor.finish(&mut |e| finishing.push(e)).await;
        assert_eq!(starts(&finishing), vec![("3".to_string(), false)]);
        assert_eq!(*r.log.lock().unwrap(), vec!["start s1", "end s1", "start u", "end u", "start s2", "end s2"]);
    }

    #[tokio::test]
    async fn a_cancelled_executor_starts_nothing_more() {
        let mut r = rig(10);
        r.executor.add(call("1", "Unsafe", json!({"tag": "u", "ms": 1})));
        r.executor.cancel();
        let outcome = r.executor.finish(&mut |_| {}).await;
        assert_eq!(texts(&outcome), vec![(INTERRUPTED_RESULT.to_string(), true)]);
        assert!(r.log.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_failing_bash_call_cancels_its_siblings() {
        let mut r = rig(10);
        r.executor.add(call("1", "Safe", json!({"tag": "slow", "ms": 5000})));
        r.executor.add(call("2", "Bash", json!({"tag": "bash", "ms": 10, "fail": true})));
        r.executor.add(call("3", "Unsafe", json!({"tag": "later", "ms": 1})));
        let outcome = r.executor.finish(&mut |_| {}).await;
        assert_eq!(
            texts(&outcome),
            vec![
                (SIBLING_CANCELLED.to_string(), true),
                ("bash failed".to_string(), true),
                (SIBLING_CANCELLED.to_string(), true)
            ]
        );
        assert!(!r.log.lock().unwrap().contains(&"start later".to_string()));
    }

    #[tokio::test]
    async fn a_failing_call_of_a_tool_that_does_not_say_so_cancels_nothing() {
        let mut r = rig(10);
        r.executor.add(call("1", "Unsafe", json!({"tag": "u", "ms": 1, "fail": true})));
        r.executor.add(call("2", "Safe", json!({"tag": "s", "ms": 1})));
        let outcome = r.executor.finish(&mut |_| {}).await;
        assert_eq!(texts(&outcome), vec![("u failed".to_string(), true), ("s ok".to_string(), false)]);
    }
}
