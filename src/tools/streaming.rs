//! The executor of one reply's tool calls. Calls are added as their `content_block_stop`
//! arrives, so a call can start while the rest of the reply is still streaming.
//!
//! Scheduling: a call starts when nothing runs, or when it and everything running are
//! concurrency-safe and fewer than the limit run; the queue is scanned in call order and stops
//! at the first call that cannot start, so an unsafe call runs alone and in order. Results are
//! returned in call order whatever order calls finish in. A failing Bash call cancels the
//! calls running beside it and those not started yet; each answers [`SIBLING_CANCELLED`].

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;

use crate::engine::events::EngineEvent;
use crate::protocol::ContentBlock;
use crate::tools::orchestrate::{CallResult, INTERRUPTED_RESULT, SIBLING_CANCELLED, Toolbox};
use crate::tools::{ToolCall, ToolContext, ToolOutput};

/// The outcome of one tool phase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseOutcome {
    /// One `tool_result` per call, in call order.
    pub results: Vec<ContentBlock>,
    /// The first `continue: false` reason a tool hook gave.
    pub hook_stop: Option<String>,
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
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("entries", &self.entries).field("running", &self.running.len()).finish()
    }
}

impl Executor {
    /// An executor for one reply. `base.cancel` is the run's interrupt token.
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
        }
    }

    /// Add a finished `tool_use`; it starts at once if the rules allow. Returns start events.
    pub fn add(&mut self, call: ToolCall) -> Vec<EngineEvent> {
        let safe = self.toolbox.is_concurrency_safe(&call);
        self.entries.push(Entry { call, safe, status: Status::Queued });
        self.start_eligible()
    }

    /// Whether any call is running.
    pub fn has_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Number of calls added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no call was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether any call has started (so its effects may already have happened).
    pub fn any_started(&self) -> bool {
        self.entries.iter().any(|e| !matches!(e.status, Status::Queued))
    }

    /// Wait for one running call to finish; returns its finish event and any start events.
    /// Returns nothing at once when no call runs.
    pub async fn next(&mut self) -> Vec<EngineEvent> {
        let Some((index, joined)) = self.running.next().await else { return Vec::new() };
        let mut result = joined.unwrap_or_else(|e| {
            // A tool task panicked: answer the call anyway, never lose it.
            let output = ToolOutput::error(format!("the tool failed internally: {e}"));
            CallResult { output, stop: None, warnings: Vec::new(), duration: Duration::ZERO }
        });
        let entry = &self.entries[index];
        if self.sibling_failed && result.output.is_error && !self.base.cancel.is_cancelled() {
            result.output = ToolOutput::error(SIBLING_CANCELLED);
        } else if entry.call.name == "Bash" && result.output.is_error && !self.base.cancel.is_cancelled() {
            self.sibling_failed = true;
            self.siblings.cancel();
        }
        let mut events: Vec<EngineEvent> = result.warnings.iter().cloned().map(EngineEvent::Warning).collect();
        events.push(EngineEvent::ToolFinished {
            id: entry.call.id.clone(),
            name: entry.call.name.clone(),
            is_error: result.output.is_error,
            duration: result.duration,
        });
        self.entries[index].status = Status::Done(result);
        events.extend(self.start_eligible());
        events
    }

    /// Wait for every call and return the results in call order. Calls that never started
    /// answer [`INTERRUPTED_RESULT`] after an interrupt, [`SIBLING_CANCELLED`] after a failed
    /// Bash sibling.
    pub async fn finish(mut self, emit: &mut dyn FnMut(EngineEvent)) -> PhaseOutcome {
        for event in self.start_eligible() {
            emit(event);
        }
        while self.has_running() {
            for event in self.next().await {
                emit(event);
            }
        }
        let interrupted = self.base.cancel.is_cancelled();
        let mut hook_stop = None;
        let results = self
            .entries
            .into_iter()
            .map(|entry| match entry.status {
                Status::Done(result) => {
                    if hook_stop.is_none() {
                        hook_stop = result.stop;
                    }
                    ContentBlock::tool_result(entry.call.id, result.output.content, result.output.is_error)
                }
                Status::Queued | Status::Running => {
                    let text = if interrupted || !self.sibling_failed { INTERRUPTED_RESULT } else { SIBLING_CANCELLED };
                    ContentBlock::tool_result(entry.call.id, text, true)
                }
            })
            .collect();
        PhaseOutcome { results, hook_stop }
    }

    /// Cancel every call (running ones observe it; queued ones never start).
    pub fn cancel(&self) {
        self.siblings.cancel();
    }

    fn start_eligible(&mut self) -> Vec<EngineEvent> {
        let mut events = Vec::new();
        if self.base.cancel.is_cancelled() || self.sibling_failed {
            return events;
        }
        for index in 0..self.entries.len() {
            if !matches!(self.entries[index].status, Status::Queued) {
                continue;
            }
            let running: Vec<&Entry> = self.entries.iter().filter(|e| matches!(e.status, Status::Running)).collect();
            let entry = &self.entries[index];
            let can_start = running.is_empty()
                || (entry.safe && running.iter().all(|e| e.safe) && running.len() < self.max_concurrency);
            if !can_start {
                break;
            }
            events.push(EngineEvent::ToolStarted {
                id: entry.call.id.clone(),
                name: entry.call.name.clone(),
                input: entry.call.input.clone(),
                running: running.iter().map(|e| e.call.name.clone()).collect(),
            });
            let toolbox = self.toolbox.clone();
            let call = entry.call.clone();
            let ctx = ToolContext { cancel: self.siblings.clone(), ..self.base.clone() };
            let task = tokio::spawn(async move { toolbox.run_call(&call, ctx).await });
            self.running.push(task.map(move |joined| (index, joined)).boxed());
            self.entries[index].status = Status::Running;
        }
        events
    }
}
