//! The loop machine: one statig handler per state of `transitions/loop.toml`.
//!
//! Handlers decide which edge to take from the facts they observe and hand it to
//! [`Machine::go`]. After every transition, [`Machine::after_transition`] checks the taken
//! edge against the table — declared, from this state, to that state, on that event, no
//! reported fact contradicting what the edge into this state `sets`, its guard true and every
//! sibling guard false — then applies the edge's counter effects, remembers the facts it sets
//! for the state it enters, and writes the trace record. Counters change nowhere else, so code
//! and table cannot drift.
//!
//! The machine owns no I/O: model, tools, hooks and clock arrive in [`Ctx`].

// statig generates the `State` and `Superstate` enums from the handlers below; their docs are
// the handlers' docs, which the generated items cannot carry.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use statig::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::clock::Clock;
use crate::engine::edge::Edge;
use crate::engine::events::{EngineEvent, EventSink};
use crate::engine::guard::{FactValue, Facts};
use crate::engine::reason::TerminalReason;
use crate::engine::state::LoopState;
use crate::engine::table::{EdgeKind, Table};
use crate::engine::trace::TraceRecord;
use crate::hooks::{HookEnv, Hooks};
use crate::model::Model;
use crate::permissions::Policy;
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
    /// The clock (trace times and backoff).
    pub clock: Arc<dyn Clock>,
    /// Cancelled on Ctrl+C or a scenario's abort.
    pub cancel: CancellationToken,
    /// The run's working directory.
    pub cwd: PathBuf,
    /// Who may run which tool.
    pub policy: Arc<Policy>,
    /// The environment of Bash commands and hook commands.
    pub shell_env: Arc<ShellEnv>,
}

/// The statig context: dependencies, the caller's sink, the table and the trace.
pub struct Ctx {
    /// Dependencies.
    pub deps: Deps,
    /// Where events go.
    pub sink: Box<dyn EventSink>,
    /// The table transitions are checked against.
    pub table: &'static Table,
    /// The trace so far.
    pub records: Vec<TraceRecord>,
    /// The first transition that broke the table, if any.
    pub violation: Option<String>,
    /// What every tool call of the run shares (cwd, cancellation, files read).
    pub tool_ctx: crate::tools::ToolContext,
    /// The tool pipeline (registry, hooks, permissions, result budget).
    pub toolbox: Arc<Toolbox>,
}

impl Ctx {
    /// Send one event to the caller.
    pub fn emit(&mut self, event: EngineEvent) {
        self.sink.event(&event);
    }

    /// The environment hooks run in.
    pub fn hook_env(&self, run_id: &str) -> HookEnv {
        HookEnv { session_id: run_id.to_owned(), cwd: self.deps.cwd.clone(), shell_env: self.deps.shell_env.clone() }
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

/// The edge a handler chose, waiting for [`Machine::after_transition`].
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) edge: Edge,
    pub(crate) event: &'static str,
    pub(crate) facts: Facts,
    pub(crate) delay_ms: Option<u64>,
    pub(crate) detail: Option<String>,
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
            Event::Abort => self.abort_sampling(context),
            Event::Step => Super,
        }
    }

    /// `Acting` (ExecuteTools). Terminal edge: `acting.abort`.
    /// Entering it announces the tool phase; leaving it clears the phase's calls.
    #[superstate(superstate = "running", entry_action = "enter_acting", exit_action = "exit_acting")]
    async fn acting(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Abort => self.abort_tools(context),
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

    /// `Checkpoint`. Edges: `checkpoint.*` (next_turn, max_turns, hook_stopped, stop hooks, budget, completed,
    /// abort while Stop hooks run).
    #[state(superstate = "running")]
    async fn checkpoint(&mut self, event: &Event, context: &mut Ctx) -> Outcome<State> {
        match event {
            Event::Step => self.checkpoint_step(context).await,
            Event::Abort => self.abort_stop_hooks(context),
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

/// The table's name for a leaf state.
pub fn state_name(state: &State) -> &'static str {
    match state {
        State::Prepare { .. } => "Prepare",
        State::Request { .. } => "Request",
        State::Consume { .. } => "Consume",
        State::ExecuteTools { .. } => "ExecuteTools",
        State::Checkpoint { .. } => "Checkpoint",
        State::Recover { .. } => "Recover",
        State::Done { .. } => "Done",
    }
}

/// The table's name for a superstate.
pub fn superstate_name(state: &Superstate) -> &'static str {
    match state {
        Superstate::Running { .. } => "Loop",
        Superstate::Sampling { .. } => "Sampling",
        Superstate::Acting { .. } => "Acting",
    }
}

/// Build a fact map from pairs.
pub fn facts<const N: usize>(pairs: [(&str, FactValue); N]) -> Facts {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A boolean fact value.
pub fn yes(b: bool) -> FactValue {
    FactValue::Bool(b)
}

/// An enumerated fact value.
pub fn value(v: &str) -> FactValue {
    FactValue::Value(v.to_owned())
}

impl Machine {
    /// A machine at the start of a run.
    pub fn new(st: LoopState) -> Self {
        Machine { st, pending: None, entered: Entered::default() }
    }

    /// Take `edge` to `target`: record it for the table check and transition.
    pub(crate) fn go(&mut self, edge: Edge, event: &'static str, facts: Facts, target: State) -> Outcome<State> {
        self.pending = Some(Pending { edge, event, facts, delay_ms: None, detail: None });
        Transition(target)
    }

    /// Take a terminal `edge`; the reason comes from the table, so it cannot disagree.
    pub(crate) fn finish(&mut self, ctx: &Ctx, edge: Edge, event: &'static str, facts: Facts) -> Outcome<State> {
        let reason = match ctx.table.edge(edge.id()).map(|e| e.kind) {
            Some(EdgeKind::Terminal(reason)) => reason,
            _ => TerminalReason::ModelError,
        };
        self.go(edge, event, facts, State::Done { reason })
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
        let Some(pending) = self.pending.take() else {
            ctx.violation.get_or_insert(format!("{from} → {to} was taken without naming an edge"));
            return;
        };
        match self.check(ctx.table, from, to, &pending) {
            Ok(guards) => {
                let turn = self.st.turn();
                let decl = ctx.table.edge(pending.edge.id()).expect("checked above");
                for c in &decl.consumes {
                    if let Some(v) = self.st.counters.get_mut(c) {
                        *v -= 1;
                    }
                }
                for c in &decl.resets {
                    let bound = self.st.bounds[c];
                    self.st.counters.insert(c.clone(), bound);
                }
                let record = TraceRecord {
                    record_type: "transition",
                    seq: ctx.records.len() as u64 + 1,
                    t_ms: (ctx.deps.clock.elapsed().as_secs_f64() * 1e6).round() / 1e3,
                    turn,
                    from,
                    to,
                    edge: decl.id.clone(),
                    kind: decl.kind.as_str(),
                    reason: decl.kind.reason(),
                    event: decl.on.clone(),
                    guards,
                    counters: self.st.counters.clone(),
                    delay_ms: pending.delay_ms,
                    detail: pending.detail,
                };
                tracing::debug!(edge = %record.edge, from, to, "transition");
                ctx.records.push(record.clone());
                ctx.emit(EngineEvent::Transition(record));
            }
            Err(message) => {
                tracing::error!(%message, "undeclared transition");
                ctx.violation.get_or_insert(message);
            }
        }
        self.entered = match ctx.table.edge(pending.edge.id()) {
            Some(decl) => Entered { edge: decl.id.clone(), facts: decl.sets.clone() },
            None => Entered::default(),
        };
    }

    /// Check a transition against the table; on success return the guard facts to record.
    fn check(&self, table: &Table, from: &str, to: &str, p: &Pending) -> Result<Facts, String> {
        let id = p.edge.id();
        let decl = table.edge(id).ok_or_else(|| format!("edge `{id}` is not in the table"))?;
        if !table.ancestry(from).contains(&decl.from.as_str()) {
            return Err(format!("edge `{id}` leaves `{}`, but the machine was in `{from}`", decl.from));
        }
        if decl.to != to {
            return Err(format!("edge `{id}` goes to `{}`, but the machine went to `{to}`", decl.to));
        }
        if decl.on != p.event {
            return Err(format!("edge `{id}` fires on `{}`, but the handler reported `{}`", decl.on, p.event));
        }
        for c in &decl.consumes {
            if self.st.left(c) == 0 {
                return Err(format!("edge `{id}` consumes `{c}`, which is spent"));
            }
        }
        for (fact, set) in &self.entered.facts {
            if let Some(reported) = p.facts.get(fact).filter(|v| *v != set) {
                return Err(format!(
                    "edge `{id}` was taken with `{fact}` = {reported}, but `{}`, which entered `{from}`, set it to {set}",
                    self.entered.edge
                ));
            }
        }
        let candidates = table.edges_from(from, p.event);
        // What the entering edge set holds here unless the handler reports it (identically).
        let mut all = self.entered.facts.clone();
        all.extend(p.facts.iter().map(|(k, v)| (k.clone(), v.clone())));
        for name in self.st.counters.keys() {
            all.insert(format!("{name}_left"), FactValue::Bool(self.st.left(name) > 0));
        }
        let mut recorded = Facts::new();
        for edge in &candidates {
            let Some(guard) = &edge.guard else { continue };
            for atom in guard.atoms().into_keys() {
                if let Some(v) = all.get(&atom) {
                    recorded.insert(atom, v.clone());
                }
            }
        }
        for edge in candidates {
            let enabled = match &edge.guard {
                None => true,
                Some(g) => g.eval(&all).map_err(|e| format!("edge `{}`: {e}", edge.id))?,
            };
            if edge.id == id && !enabled {
                return Err(format!(
                    "edge `{id}` was taken but its guard `{}` is false",
                    edge.guard_text.as_deref().unwrap_or("")
                ));
            }
            if edge.id != id && enabled {
                return Err(format!("edge `{id}` was taken but `{}` is enabled too", edge.id));
            }
        }
        Ok(recorded)
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

    fn machine_entered_by(edge: &str) -> Machine {
        let table = crate::engine::table::shipped();
        let st = LoopState::new(crate::engine::options::EngineOptions::default(), "hi", Vec::new(), table);
        let mut m = Machine::new(st);
        m.entered = Entered { edge: edge.to_owned(), facts: table.edge(edge).unwrap().sets.clone() };
        m
    }

    fn pending(edge: Edge, event: &'static str, facts: Facts) -> Pending {
        Pending { edge, event, facts, delay_ms: None, detail: None }
    }

    /// A handler must not report a fact otherwise than the edge into its state set it.
    #[test]
    fn reported_facts_must_agree_with_the_entering_edge() {
        let table = crate::engine::table::shipped();
        let m = machine_entered_by("request.prompt_too_long");
        let escalate =
            pending(Edge::RecoverMaxOutputTokensEscalate, "recovery_checked", facts([("cause", value("truncated"))]));
        assert_eq!(
            m.check(table, "Recover", "Request", &escalate),
            Err("edge `recover.max_output_tokens_escalate` was taken with `cause` = truncated, but \
                 `request.prompt_too_long`, which entered `Recover`, set it to prompt_too_long"
                .to_owned())
        );
        let drain = pending(
            Edge::RecoverCollapseDrainRetry,
            "recovery_checked",
            facts([("cause", value("prompt_too_long")), ("staged_collapses", yes(true)), ("compacted", yes(false))]),
        );
        assert_eq!(
            m.check(table, "Recover", "Prepare", &drain),
            Ok(facts([
                ("cause", value("prompt_too_long")),
                ("collapse_drains_left", yes(true)),
                ("compacted", yes(false)),
                ("escalations_left", yes(true)),
                ("reactive_compacts_left", yes(true)),
                ("recoveries_left", yes(true)),
                ("staged_collapses", yes(true)),
            ]))
        );
        // A fact the handler leaves out is read from what the entering edge set.
        let m = machine_entered_by("consume.end_turn");
        let completed = pending(
            Edge::CheckpointCompleted,
            "turn_checked",
            facts([("stop_hook", value("pass")), ("budget_wants_more", yes(false))]),
        );
        assert_eq!(m.check(table, "Checkpoint", "Done", &completed).map(|f| f["tools_ran"].clone()), Ok(yes(false)));
        let m = machine_entered_by("tools.done");
        let next = pending(Edge::CheckpointNextTurn, "turn_checked", facts([("tools_ran", yes(false))]));
        assert!(m.check(table, "Checkpoint", "Prepare", &next).unwrap_err().contains("set it to true"));
    }
}
