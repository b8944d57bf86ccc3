//! The effects seam: every contact the loop has with the world outside its own state goes
//! through one [`Effects`] value in [`crate::engine::Deps`]: a model attempt, a tool call, a
//! hook run, a sleep, the ids of the messages it writes and the clock its trace reads.
//!
//! The default ([`crate::engine::clock::SystemClock`], or [`crate::engine::clock::VirtualClock`]
//! in tests) runs them directly, as a plain run always has: [`Effects::journal`] is `None`, and
//! the helpers here call the model, the tool and the hook themselves, streaming as they go.
//!
//! A durable runner (the Restate worker) gives a [`Journal`] instead: each step's result is a
//! JSON value the journal records the first time the step runs and hands back, without running
//! it, when the run is replayed. Guards stay pure functions of the facts those results set, so
//! a replay reaches the same edges, and the message ids come from [`Effects::new_id`], which a
//! journaled run derives from its journal, so the replayed transcript has the same uuids.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::clock::Clock;
use crate::model::{Model, ModelError, ModelRequest, ReplyStream};
use crate::session::Uuid;

mod recorded;

pub use recorded::{RecordedAttempt, Recording};

/// Where the loop meets the world: the clock (elapsed time and sleeps), ids, and, for a
/// durable run, the journal its steps go through.
pub trait Effects: Clock {
    /// A fresh id for a message of the transcript (a prompt's, a reply's, a result's line).
    fn new_id(&self) -> Uuid {
        Uuid::new_v4()
    }

    /// The journal the run's steps go through, or `None` to run them directly.
    fn journal(&self) -> Option<&dyn Journal> {
        None
    }
}

impl Effects for crate::engine::clock::SystemClock {}
impl Effects for crate::engine::clock::VirtualClock {}

/// One step of a run as a journal sees it: what it is, so that a journal can name it, and
/// whether running it twice could do harm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// One request to the model, read to its end: a failure is part of its result.
    ModelAttempt {
        /// Which attempt of the run this is, from 1 (the loop's own requests; a side request,
        /// such as a compaction summary, is numbered after the loop's request before it).
        n: u64,
    },
    /// One tool call's execution (after its hooks and its permission).
    ToolCall {
        /// The call's `tool_use_id`.
        id: String,
        /// The tool's name.
        name: String,
        /// The call may have changed something outside the run (a file, a process, a
        /// remote system): if it started and did not finish, it is not run again.
        mutating: bool,
    },
    /// One run of the hooks of an event.
    Hooks {
        /// `PreToolUse`, `PostToolUse` or `Stop`.
        event: &'static str,
        /// The call the hooks are about (`Stop` hooks are about none).
        tool_use_id: Option<String>,
    },
}

impl Step {
    /// A short name for the step, as a journal labels its entry (`tool Bash toolu_01`).
    pub fn label(&self) -> String {
        match self {
            Step::ModelAttempt { n } => format!("model attempt {n}"),
            Step::ToolCall { id, name, .. } => format!("tool {name} {id}"),
            Step::Hooks { event, tool_use_id: Some(id) } => format!("hooks {event} {id}"),
            Step::Hooks { event, tool_use_id: None } => format!("hooks {event}"),
        }
    }
}

/// How a step that a journal runs again after a crash turned out: a journal that knows a
/// mutating step started and never finished answers [`Replayed::Interrupted`] instead of
/// running it a second time.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// The step's result (recorded, or from running it now).
    Value(Value),
    /// The step started in an earlier life of the run and did not finish; its effects are
    /// unknown and it was not run again.
    Interrupted,
}

/// A durable record of a run's steps.
pub trait Journal: Send + Sync {
    /// Run `step` through the journal: the value recorded for it if there is one (`work` is
    /// then dropped unrun), `work`'s value recorded otherwise, or [`Replayed::Interrupted`] for
    /// a mutating step that started in an earlier life of the run and did not finish.
    fn step<'a>(&'a self, step: Step, work: BoxFuture<'a, Value>) -> BoxFuture<'a, Replayed>;
}

/// Run one step of `effects`: directly without a journal, through it with one. A value that
/// does not read back as `T` (a journal written by another version) is `None`, as is a
/// mutating step the journal reports interrupted.
pub async fn run_step<'a, T, F>(effects: &'a dyn Effects, step: Step, work: F) -> StepResult<T>
where
    T: Serialize + DeserializeOwned + Send + 'a,
    F: Future<Output = T> + Send + 'a,
{
    let Some(journal) = effects.journal() else { return StepResult::Ran(work.await) };
    let work = Box::pin(async move { serde_json::to_value(work.await).unwrap_or(Value::Null) });
    match journal.step(step, work).await {
        Replayed::Value(value) => match serde_json::from_value(value) {
            Ok(value) => StepResult::Ran(value),
            Err(e) => StepResult::Unreadable(e.to_string()),
        },
        Replayed::Interrupted => StepResult::Interrupted,
    }
}

/// One run of the hooks of `event` (about the call `tool_use_id`, if any) as a step of
/// `effects`: their decision and warnings. A journal's value this version cannot read lets
/// the run go on as if no hook ran (`T::default()`), with a warning.
pub async fn hooks_step<'a, T>(
    effects: &'a dyn Effects,
    event: &'static str,
    tool_use_id: Option<&str>,
    hooks: BoxFuture<'a, (T, Vec<String>)>,
) -> (T, Vec<String>)
where
    T: Default + Serialize + DeserializeOwned + Send + 'a,
{
    let step = Step::Hooks { event, tool_use_id: tool_use_id.map(str::to_owned) };
    match run_step(effects, step, hooks).await {
        StepResult::Ran(decided) => decided,
        StepResult::Interrupted | StepResult::Unreadable(_) => {
            let about = tool_use_id.map(|id| format!(" for {id}")).unwrap_or_default();
            (T::default(), vec![format!("the journal's {event} hook result{about} is unreadable; no hook applied")])
        }
    }
}

/// What [`run_step`] got for a step.
#[derive(Debug, Clone, PartialEq)]
pub enum StepResult<T> {
    /// The step's value, run now or recorded.
    Ran(T),
    /// A mutating step that started in an earlier life of the run and did not finish.
    Interrupted,
    /// The journal's value for the step does not read as this version's result.
    Unreadable(String),
}

/// One model attempt through `effects`: the reply to `request`, streaming as it arrives when
/// there is no journal; read to its end, recorded, and replayed from the recording when there
/// is one (a failure, whether before the reply started or during it, is part of the record, so
/// the retries and fallbacks after it are the table's edges again on replay).
///
/// # Errors
/// The attempt's failure to open the reply.
pub async fn model_attempt(
    effects: &dyn Effects,
    model: &dyn Model,
    request: ModelRequest,
    n: u64,
) -> Result<ReplyStream, ModelError> {
    let Some(journal) = effects.journal() else { return model.stream(request).await };
    let sent = std::sync::atomic::AtomicBool::new(false);
    let kept = request.clone();
    let work = Box::pin(async {
        sent.store(true, std::sync::atomic::Ordering::Relaxed);
        let recorded = RecordedAttempt::record(model, request).await;
        serde_json::to_value(recorded).unwrap_or(Value::Null)
    });
    let answered = journal.step(Step::ModelAttempt { n }, work).await;
    if !sent.load(std::sync::atomic::Ordering::Relaxed) {
        model.replayed(&kept);
    }
    let recorded = match answered {
        Replayed::Value(value) => serde_json::from_value::<RecordedAttempt>(value)
            .map_err(|e| ModelError::Protocol(format!("the journal's record of model attempt {n}: {e}")))?,
        Replayed::Interrupted => return Err(ModelError::Connection(format!("model attempt {n} was interrupted"))),
    };
    recorded.replay()
}

/// `model` with its requests made through `effects`: the model itself without a journal; with
/// one, each request is a [`Step::ModelAttempt`] of it (for the side requests the loop makes
/// through a [`Model`] it hands on: a compaction summary).
pub fn through(effects: Arc<dyn Effects>, model: Arc<dyn Model>, n: u64) -> Arc<dyn Model> {
    if effects.journal().is_none() {
        return model;
    }
    Arc::new(Journaled { effects, model, n })
}

/// A model whose requests are journaled steps ([`through`]).
struct Journaled {
    effects: Arc<dyn Effects>,
    model: Arc<dyn Model>,
    n: u64,
}

impl Model for Journaled {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        Box::pin(model_attempt(&*self.effects, &*self.model, request, self.n))
    }

    fn provider_name(&self) -> &'static str {
        self.model.provider_name()
    }
}
