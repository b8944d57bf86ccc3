//! The loop machine: one statig handler per state of `transitions/loop.toml`.
//!
//! A handler does its state's work, reports the facts it observed to [`Machine::decide`]
//! (in [`crate::engine::select`]), which lets the table's guards pick the edge and applies its
//! counter changes, then carries out the chosen edge's effect and returns
//! [`Machine::proceed`]. After every transition, [`Machine::after_transition`] writes the trace
//! record. Counters change nowhere else, and no guard is written in Rust.
//!
//! The machine owns no I/O: model, tools, hooks and clock arrive in [`Ctx`].

// statig generates the `State` and `Superstate` enums from the handlers below; their docs are
// the handlers' docs, which the generated items cannot carry.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use statig::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::events::{EngineEvent, EventSink};
pub use crate::engine::generated::StateName;
use crate::engine::reason::TerminalReason;
use crate::engine::select::Pending;
use crate::engine::state::LoopState;
use crate::engine::table::Table;
use crate::engine::trace::TraceRecord;
use crate::hooks::{HookEnv, Hooks};
use crate::model::Model;
use crate::permissions::{Approver, Policy};
use crate::table::guard::Facts;
use crate::tools::Registry;
use crate::tools::orchestrate::Toolbox;
use crate::tools::shell_env::ShellEnv;

/// What a run depends on, all behind traits so a test can run with no network.
#[derive(Clone)]
pub struct Deps {
    /// The model.
    pub model: Arc<dyn Model>,
    /// The tools.
    pub tools: Registry,
    /// The hooks.
    pub hooks: Arc<dyn Hooks>,
    /// Where the loop meets the world ([`crate::engine::effects`]): the clock (trace times
    /// and backoff), message ids, and for a durable run the journal its model attempts, tool
    /// calls and hook runs go through.
    pub effects: Arc<dyn crate::engine::effects::Effects>,
    /// Cancelled on Ctrl+C or a scenario's abort.
    pub cancel: CancellationToken,
    /// The run's working directory.
    pub cwd: PathBuf,
    /// Who may run which tool.
    pub policy: Arc<Policy>,
    /// The environment of Bash commands and hook commands.
    pub shell_env: Arc<ShellEnv>,
    /// How Bash and hook commands are confined ([`crate::sandbox`]).
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// Who is asked when the policy cannot decide a call alone
    /// ([`crate::permissions::Unattended`] when nobody can be).
    pub approver: Arc<dyn Approver>,
}

/// The statig context: dependencies, the caller's sink, the table and the trace.
pub struct Ctx {
    /// Dependencies.
    pub deps: Deps,
    /// Where events go.
    pub sink: Box<dyn EventSink>,
    /// The table whose guards pick every transition.
    pub table: Arc<Table>,
    /// The trace so far (when [`crate::engine::EngineOptions::keep_trace`] is on).
    pub records: Vec<TraceRecord>,
    /// Transitions taken so far, kept or not: the next record's `seq` is one more.
    pub transitions: u64,
    /// The first transition that broke the table, if any.
    pub violation: Option<String>,
    /// What every tool call of the run shares (cwd, cancellation, files read).
    pub tool_ctx: crate::tools::ToolContext,
    /// The tool pipeline (registry, hooks, permissions, result budget).
    pub toolbox: Arc<Toolbox>,
    /// The session transcript, written as messages are appended.
    pub transcript: crate::engine::session::TranscriptLog,
    /// The run's background subagents, when it may start any.
    pub(crate) tasks: Option<crate::agents::host::Tasks>,
}

impl Ctx {
    /// Send one event to the caller.
    pub fn emit(&mut self, event: EngineEvent) {
        self.sink.event(&event);
    }

    /// Record the user's prompt: its transcript line (as `uuid`, with the Agent SDK's
    /// `origin`) and its event.
    pub fn record_prompt(
        &mut self,
        prompt: &crate::protocol::Message,
        uuid: crate::session::Uuid,
        origin: Option<&serde_json::Value>,
    ) {
        let prompt_id = self.deps.effects.new_id();
        if let Some(warning) = self.transcript.prompt(prompt, uuid, prompt_id, origin) {
            self.emit(warning);
        }
        self.emit(EngineEvent::Message { message: prompt.clone(), uuid, reply: None });
    }

    /// The environment hooks run in.
    pub fn hook_env(&self, run_id: &str) -> HookEnv {
        HookEnv {
            session_id: run_id.to_owned(),
            cwd: self.deps.cwd.clone(),
            shell_env: self.deps.shell_env.clone(),
            sandbox: self.deps.sandbox.clone(),
            transcript_path: self.transcript.path().map(std::path::Path::to_path_buf),
            permission_mode: self.deps.policy.mode().as_str(),
        }
    }
}

/// What the driver feeds the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Do the current state's work.
    Step,
    /// The user interrupted; handled by the `Sampling` and `Acting` superstates.
    Abort,
}

/// The facts the last edge taken set for the state it entered (its `sets` in the table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Entered {
    /// The edge's id; empty before the first transition.
    pub(crate) edge: String,
    /// What it set.
    pub(crate) facts: Facts,
}

/// The machine's shared storage.
pub struct Machine {
    /// The loop's data.
    pub st: LoopState,
    pub(crate) pending: Option<Pending>,
    /// Replaced on every transition: facts set by one edge hold only in the state it enters.
    pub(crate) entered: Entered,
    /// The table's name of the leaf state the machine is in.
    pub(crate) current: &'static str,
}

#[state_machine(
    initial = "State::prepare()",
    state(derive(Debug, Clone, PartialEq)),
    superstate(derive(Debug)),
    after_transition = "Self::after_transition"
)]
impl Machine {
    /// `Loop`: everything between the first request and a terminal reason.
    #[superstate]
    async fn running(event: &Event) -> Outcome<State> {
        match event {
            Event::Step | Event::Abort => Handled,
        }
    }

    /// `Sampling` (Request, Consume). Terminal edge: `sampling.abort`.
    /// Leaving it by any edge closes the reply stream.
    #[superstate(superstate = "running", exit_action = "exit_sampling")]
    async fn sampling(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Abort => self.abort_sampling(context).await,
            Event::Step => Super,
        }
    }

    /// `Acting` (ExecuteTools). Terminal edge: `acting.abort`.
    /// Entering it announces the tool phase; leaving it clears the phase's calls.
    #[superstate(superstate = "running", entry_action = "enter_acting", exit_action = "exit_acting")]
    async fn acting(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Abort => self.abort_tools(context).await,
            Event::Step => Super,
        }
    }

    /// Closes the stream, so no edge out of `Sampling` leaves a connection open.
    #[action]
    async fn exit_sampling(&mut self) {
        self.st.stream = None;
        self.st.partial = None;
        self.st.partial_results.clear();
    }

    /// Announces the tool phase to the caller (the scripted model's `abort.phase = tools`
    /// and progress displays listen for it).
    #[action]
    async fn enter_acting(&mut self, context: &mut Ctx) {
        context.emit(EngineEvent::ToolPhaseStarted { calls: self.st.calls.len() });
    }

    /// Forgets the phase's calls, executor and any interrupted results once they are answered.
    #[action]
    async fn exit_acting(&mut self) {
        self.st.calls.clear();
        self.st.executor = None;
        self.st.interrupted_results = None;
    }

    /// `Prepare`. Edges: `prepare.request`, `prepare.blocking_limit`.
    #[state(superstate = "running")]
    async fn prepare(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.prepare_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `Request`. Edges: `request.stream_opened`, `request.retry`, `request.fallback`,
    /// `request.retries_exhausted`, `request.prompt_too_long`, `request.model_error`.
    #[state(superstate = "sampling")]
    async fn request(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.request_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `Consume`. Edges: `consume.tools`, `consume.end_turn`, `consume.truncated`,
    /// `consume.retry`, `consume.retries_exhausted`, `consume.prompt_too_long`, `consume.model_error`.
    #[state(superstate = "sampling")]
    async fn consume(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.consume_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `ExecuteTools`. Edge: `tools.done`.
    #[state(superstate = "acting")]
    async fn execute_tools(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.execute_tools_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `Compact`. Edges: `compact.done`, `compact.failed`.
    #[state(superstate = "sampling")]
    async fn compact(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.compact_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `Checkpoint`. Edges: `checkpoint.*` (next_turn, max_turns, hook_stopped, stop hooks, budget, completed,
    /// abort while Stop hooks run).
    #[state(superstate = "running")]
    async fn checkpoint(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.checkpoint_step(context).await,
            Event::Abort => self.abort_stop_hooks(context).await,
        }
    }

    /// `Recover`. Edges: `recover.*` (collapse drain, reactive compact, escalate, recovery, terminals).
    #[state(superstate = "running")]
    async fn recover(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.recover_step(context).await,
            Event::Abort => Super,
        }
    }

    /// `Done`: the run is over; nothing leaves it.
    #[state]
    async fn done(reason: &mut TerminalReason, event: &Event) -> Outcome<State> {
        let _ = (reason, event);
        Handled
    }
}

/// The table's state for a leaf of the statig machine.
pub fn leaf_state(state: &State) -> StateName {
    match state {
        State::Prepare { .. } => StateName::Prepare,
        State::Request { .. } => StateName::Request,
        State::Consume { .. } => StateName::Consume,
        State::ExecuteTools { .. } => StateName::ExecuteTools,
        State::Checkpoint { .. } => StateName::Checkpoint,
        State::Recover { .. } => StateName::Recover,
        State::Compact { .. } => StateName::Compact,
        State::Done { .. } => StateName::Done,
    }
}

/// The table's name for a leaf state.
pub fn state_name(state: &State) -> &'static str {
    leaf_state(state).as_str()
}

/// The table's name for a superstate.
pub fn superstate_name(state: &Superstate) -> &'static str {
    match state {
        Superstate::Running { .. } => StateName::Loop,
        Superstate::Sampling { .. } => StateName::Sampling,
        Superstate::Acting { .. } => StateName::Acting,
    }
    .as_str()
}

impl Machine {
    /// A machine at the start of a run.
    pub fn new(st: LoopState) -> Self {
        Machine { st, pending: None, entered: Entered::default(), current: StateName::INITIAL.as_str() }
    }

    /// Attach a note to the pending edge's trace record.
    pub(crate) fn annotate(&mut self, delay_ms: Option<u64>, detail: Option<String>) {
        if let Some(p) = &mut self.pending {
            p.delay_ms = delay_ms;
            p.detail = detail;
        }
    }

    async fn after_transition(&mut self, source: &State, target: &State, ctx: &mut Ctx) {
        let from = state_name(source);
        let to = state_name(target);
        self.current = to;
        let Some(pending) = self.pending.take() else {
            ctx.violation.get_or_insert(format!("{from} → {to} was taken without the table choosing an edge"));
            return;
        };
        let decl = &ctx.table.edges[pending.index];
        if decl.to != to {
            ctx.violation
                .get_or_insert(format!("edge `{}` goes to `{}`, but the machine went to `{to}`", decl.id, decl.to));
            return;
        }
        let record = TraceRecord {
            record_type: "transition",
            seq: ctx.transitions + 1,
            t_ms: (ctx.deps.effects.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            turn: pending.turn,
            from,
            to,
            edge: decl.id.clone(),
            kind: decl.kind.as_str(),
            reason: decl.engine_reason(),
            event: decl.on.clone(),
            guards: pending.guards,
            counters: self.st.counters.clone(),
            delay_ms: pending.delay_ms,
            detail: pending.detail,
            link: self.st.options.link.clone(),
        };
        self.entered = Entered { edge: decl.id.clone(), facts: decl.sets.clone() };
        tracing::debug!(edge = %record.edge, from, to, "transition");
        ctx.transitions += 1;
        if self.st.options.keep_trace {
            ctx.records.push(record.clone());
        }
        ctx.emit(EngineEvent::Transition(record));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statig::awaitable::State as _;

    /// statig's hierarchy (read at runtime) equals the table's `parent` column.
    #[test]
    fn statig_hierarchy_matches_the_table() {
        let table = crate::engine::table::shipped();
        let leaves = [
            State::Prepare {},
            State::Request {},
            State::Consume {},
            State::ExecuteTools {},
            State::Checkpoint {},
            State::Recover {},
            State::Compact {},
            State::Done { reason: TerminalReason::Completed },
        ];
        let count = leaves.len();
        for mut leaf in leaves {
            let name = state_name(&leaf);
            let mut chain = vec![name];
            let mut parent = leaf.superstate();
            while let Some(mut p) = parent {
                chain.push(superstate_name(&p));
                parent = statig::awaitable::Superstate::superstate(&mut p);
            }
            assert_eq!(chain, table.ancestry(name), "ancestry of {name}");
        }
        let declared_leaves =
            table.states.iter().filter(|s| s.kind != crate::engine::table::StateKind::Superstate).count();
        assert_eq!(declared_leaves, count, "every leaf state of the table has a handler");
    }
}
