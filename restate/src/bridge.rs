//! The loop's effects over Restate's journal.
//!
//! The engine's futures are not `Send` (a run's subagents share its event sink), while a Restate
//! handler's must be; so the engine runs on a thread of its own and every step it takes reaches
//! the handler as a [`Request`] over a channel. The handler journals it with `ctx.run`:
//!
//! - On the first life of the invocation the closure runs: it asks the engine to run the step's
//!   work ([`Request::Step::exec`]), waits for its value and returns it to be journaled.
//! - On a replay the journal already holds the value: the closure does not run, the engine's
//!   work is dropped unrun, and the value comes back as if it had.
//! - A mutating tool call gets a marker entry of its own first. If the marker comes from the
//!   journal but the call's value does not, the call started in a life that was killed: it is
//!   journaled as [`Entry::Interrupted`] and the engine answers it as such, never running it a
//!   second time.
//!
//! Every settled step advances the run's clock by the time its work took (journaled with it),
//! and a backoff is a durable sleep, so a replayed trace has the same times.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentloop::engine::clock::Clock;
use agentloop::engine::effects::{Effects, Journal, Replayed, Step};
use agentloop::permissions::{Approval, ApprovalRequest, Approver};
use agentloop::session::Uuid;
use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::ids::Ids;

/// What the engine asks of the handler.
pub enum Request {
    /// Journal one step.
    Step {
        /// The step.
        step: Step,
        /// Taken by the journal's closure when the step has to run now: the engine runs the
        /// work and sends its value on the sender it is given.
        exec: oneshot::Sender<oneshot::Sender<Value>>,
        /// The step's outcome once it is journaled.
        settled: oneshot::Sender<Settled>,
    },
    /// A permission question nobody is attached to answer: the invocation parks on an
    /// awakeable until an HTTP call resolves it.
    Ask {
        /// The question.
        question: ApprovalRequest,
        /// The answer, once given.
        answer: oneshot::Sender<Approval>,
    },
    /// Sleep durably.
    Sleep {
        /// How long.
        duration: Duration,
        /// Sent when the sleep is over.
        done: oneshot::Sender<()>,
    },
}

/// A journaled step's outcome, for the engine.
pub struct Settled {
    replayed: Replayed,
    ms: u64,
}

/// A step's entry in the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// The step's value and how long its work took.
    Value {
        /// The value.
        value: Value,
        /// Milliseconds.
        ms: u64,
    },
    /// A mutating call that started in a killed life of the invocation.
    Interrupted,
}

/// The engine's side: the run's [`Effects`].
pub struct Bridged {
    requests: mpsc::UnboundedSender<Request>,
    elapsed_ms: AtomicU64,
    ids: Ids,
}

impl Bridged {
    /// Effects whose steps go to `requests`, with the ids of `ids`.
    pub fn new(requests: mpsc::UnboundedSender<Request>, ids: Ids) -> Bridged {
        Bridged { requests, elapsed_ms: AtomicU64::new(0), ids }
    }
}

impl Clock for Bridged {
    fn elapsed(&self) -> Duration {
        Duration::from_millis(self.elapsed_ms.load(Ordering::SeqCst))
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let (done, slept) = oneshot::channel();
            if self.requests.send(Request::Sleep { duration, done }).is_err() || slept.await.is_err() {
                // The handler is gone: the invocation ended; nothing more runs.
                futures::future::pending::<()>().await;
            }
            let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            self.elapsed_ms.fetch_add(ms, Ordering::SeqCst);
        })
    }
}

impl Effects for Bridged {
    fn new_id(&self) -> Uuid {
        self.ids.next()
    }

    fn journal(&self) -> Option<&dyn Journal> {
        Some(self)
    }
}

impl Journal for Bridged {
    fn step<'a>(&'a self, step: Step, work: BoxFuture<'a, Value>) -> BoxFuture<'a, Replayed> {
        Box::pin(async move {
            let (exec, asked) = oneshot::channel();
            let (settled, outcome) = oneshot::channel();
            if self.requests.send(Request::Step { step, exec, settled }).is_err() {
                return futures::future::pending().await;
            }
            // The journal's closure asks for the work only when the step has to run now.
            if let Ok(value_to) = asked.await {
                let _ = value_to.send(work.await);
            }
            match outcome.await {
                Ok(Settled { replayed, ms }) => {
                    self.elapsed_ms.fetch_add(ms, Ordering::SeqCst);
                    replayed
                }
                Err(_) => futures::future::pending().await,
            }
        })
    }
}

/// The run's approver: each question goes to the handler, which parks the invocation on an
/// awakeable ([`Request::Ask`]).
pub struct Parked {
    requests: mpsc::UnboundedSender<Request>,
}

impl Parked {
    /// Questions sent to `requests`.
    pub fn new(requests: mpsc::UnboundedSender<Request>) -> Parked {
        Parked { requests }
    }
}

impl Approver for Parked {
    fn approve<'a>(&'a self, question: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            if self.requests.send(Request::Ask { question: question.clone(), answer }).is_err() {
                return futures::future::pending().await;
            }
            answered.await.unwrap_or(Approval::Deny { message: "the invocation ended before an answer".to_owned() })
        })
    }
}

/// Where the worker notes every step it runs (not those a replay answers): the effects log
/// (`AGENTLOOP_EFFECTS_LOG`), one JSON line as a step starts and one as it ends, for tests
/// and operators to count what ran.
#[derive(Debug, Clone, Default)]
pub struct EffectsLog {
    path: Option<PathBuf>,
}

impl EffectsLog {
    /// The log `AGENTLOOP_EFFECTS_LOG` names, if it names one.
    pub fn from_env() -> EffectsLog {
        EffectsLog { path: std::env::var_os("AGENTLOOP_EFFECTS_LOG").map(PathBuf::from) }
    }

    /// Note that `step` is at `at` (`start` or `end`).
    pub fn note(&self, step: &str, at: &str) {
        self.note_with(step, at, None);
    }

    /// [`Self::note`] with the awakeable a parked question waits on.
    pub fn note_with(&self, step: &str, at: &str, awakeable: Option<&str>) {
        let Some(path) = &self.path else { return };
        let mut line = serde_json::json!({"step": step, "at": at, "pid": std::process::id()});
        if let Some(id) = awakeable {
            line["awakeable"] = Value::String(id.to_owned());
        }
        if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(file, "{line}");
        }
    }
}

/// The handler's side: journal one request of the engine. `Err` when the invocation was
/// cancelled (or its journal failed): `cancel`, the run's interrupt, is cancelled before the
/// engine gets its answer (a step interrupted, a sleep over), so the engine takes its abort
/// edges; the caller journals nothing more.
pub async fn serve(
    ctx: &ObjectContext<'_>,
    request: Request,
    log: &EffectsLog,
    cancel: &CancellationToken,
) -> Result<(), TerminalError> {
    match request {
        Request::Sleep { duration, done } => {
            let slept = ctx.sleep(duration).await;
            if slept.is_err() {
                cancel.cancel();
            }
            let _ = done.send(());
            slept
        }
        Request::Ask { question, answer } => match park(ctx, &question, log).await {
            Ok(approval) => {
                let _ = answer.send(approval);
                Ok(())
            }
            Err(error) => {
                cancel.cancel();
                let _ = answer.send(Approval::Deny { message: "the invocation was cancelled".to_owned() });
                Err(error)
            }
        },
        Request::Step { step, exec, settled } => match journal_step(ctx, step, exec, log).await {
            Ok(outcome) => {
                let _ = settled.send(outcome);
                Ok(())
            }
            Err(error) => {
                cancel.cancel();
                let _ = settled.send(Settled { replayed: Replayed::Interrupted, ms: 0 });
                Err(error)
            }
        },
    }
}

/// Park the invocation on an awakeable until someone answers `question`: `POST
/// /restate/awakeables/<id>/resolve` on the ingress with an answer as the body
/// (`{"answer": "allow_once"}`, `{"answer": "deny", "message": "…"}`, …). The awakeable's id is
/// said once, when the question is first asked (stderr and the effects log), not again on a
/// replay.
async fn park(
    ctx: &ObjectContext<'_>,
    question: &ApprovalRequest,
    log: &EffectsLog,
) -> Result<Approval, TerminalError> {
    let (id, answered) = ctx.awakeable::<Json<Approval>>();
    let label = format!("question {} {}", question.tool, question.tool_use_id);
    let (log, said, awakeable) = (log.clone(), label.clone(), id.clone());
    let reason = question.reason.clone();
    ctx.run(move || async move {
        eprintln!(
            "agentloop-restate: {said} is waiting for an answer ({reason}): POST /restate/awakeables/{awakeable}/resolve"
        );
        log.note_with(&said, "parked", Some(&awakeable));
        Ok(())
    })
    .name(label)
    .await?;
    let Json(approval) = answered.await?;
    Ok(approval)
}

/// Journal one step: its marker first if it is mutating, then its value.
async fn journal_step(
    ctx: &ObjectContext<'_>,
    step: Step,
    exec: oneshot::Sender<oneshot::Sender<Value>>,
    log: &EffectsLog,
) -> Result<Settled, TerminalError> {
    let label = step.label();
    let mutating = matches!(step, Step::ToolCall { mutating: true, .. });
    let mut started_before = false;
    if mutating {
        let marked = Arc::new(AtomicBool::new(false));
        let mark = marked.clone();
        ctx.run(move || async move {
            mark.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name(format!("start {label}"))
        .await?;
        started_before = !marked.load(Ordering::SeqCst);
    }
    let (log, noted) = (log.clone(), label.clone());
    let Json(entry) = ctx
        .run(move || async move {
            if started_before {
                log.note(&noted, "interrupted");
                return Ok(Json(Entry::Interrupted));
            }
            log.note(&noted, "start");
            let began = Instant::now();
            let (value_to, value) = oneshot::channel();
            exec.send(value_to).map_err(|_| TerminalError::new("the run ended before its step"))?;
            let value = value.await.map_err(|_| TerminalError::new("the run ended during its step"))?;
            log.note(&noted, "end");
            let ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
            Ok(Json(Entry::Value { value, ms }))
        })
        .name(label)
        .await?;
    Ok(match entry {
        Entry::Value { value, ms } => Settled { replayed: Replayed::Value(value), ms },
        Entry::Interrupted => Settled { replayed: Replayed::Interrupted, ms: 0 },
    })
}

/// Answer a request without the journal, once the invocation was cancelled: a step is
/// interrupted without running, a sleep is over at once (the engine is on its abort edges).
pub fn refuse(request: Request) {
    match request {
        Request::Sleep { done, .. } => {
            let _ = done.send(());
        }
        Request::Step { settled, .. } => {
            let _ = settled.send(Settled { replayed: Replayed::Interrupted, ms: 0 });
        }
        Request::Ask { answer, .. } => {
            let _ = answer.send(Approval::Deny { message: "the invocation was cancelled".to_owned() });
        }
    }
}
