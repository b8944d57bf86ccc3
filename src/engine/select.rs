//! How the machine takes a transition: a handler reports the facts it observed, and the
//! table's guards pick the edge.
//!
//! [`Machine::decide`] evaluates the guards of every edge that leaves the current state (or one
//! of its superstates) on the handler's event, takes the single enabled edge (the auditor
//! proves exactly one is enabled for every valuation of the facts), applies its counter
//! changes and returns it as the handler's [`Choice`] type. The handler then carries out the
//! edge's effect by matching on it and returns [`Machine::proceed`]. No guard is written in
//! Rust: a handler cannot choose an edge, only describe what it saw.
//!
//! A guard may read a fact the handler did not report. [`Decision::Needs`] names it, so a
//! handler can compute an expensive fact (run the Stop hooks, try a compaction) only when the
//! table's guards actually read it; a fact nobody can supply ends the run as a violation.

use statig::prelude::*;

use crate::engine::edge::Edge;
use crate::engine::machine::{Ctx, Machine, State, StateName};
use crate::engine::table::{EdgeDecl, EdgeKind, Table};
use crate::table::guard::{FactValue, Facts, GuardError};

/// The edges a handler in one state may be given on one event: one generated enum per
/// (state, event) pair of the table, in [`crate::engine::generated::choice`].
pub trait Choice: Copy + Sized {
    /// The event the handler reports.
    const EVENT: &'static str;
    /// The variant for `edge`, if it is one of this pair's edges.
    fn from_edge(edge: Edge) -> Option<Self>;
    /// The edge this variant stands for.
    fn edge(self) -> Edge;
}

/// What [`Machine::decide`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision<C> {
    /// The one enabled edge; its counter changes are applied and its record is pending.
    Take(C),
    /// A guard reads this fact, which the handler did not report.
    Needs(String),
    /// The table could not pick an edge; the violation is recorded in [`Ctx::violation`].
    Broken,
}

/// The edge taken, waiting for [`Machine::after_transition`] to write its trace record.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The edge's declaration index in the table.
    pub(crate) index: usize,
    /// Where the edge goes.
    pub(crate) target: State,
    /// The turn when the edge was taken (before its counter changes).
    pub(crate) turn: u32,
    /// The guard facts to record.
    pub(crate) guards: Facts,
    /// A backoff to record.
    pub(crate) delay_ms: Option<u64>,
    /// A note to record.
    pub(crate) detail: Option<String>,
}

/// The statig state a table state name stands for; `None` for superstates and unknown names.
fn leaf(name: &str, decl: &EdgeDecl) -> Option<State> {
    Some(match StateName::parse(name)? {
        StateName::Prepare => State::Prepare {},
        StateName::Request => State::Request {},
        StateName::Consume => State::Consume {},
        StateName::ExecuteTools => State::ExecuteTools {},
        StateName::Checkpoint => State::Checkpoint {},
        StateName::Recover => State::Recover {},
        StateName::Done => match decl.kind {
            EdgeKind::Terminal(reason) => State::Done { reason },
            EdgeKind::Internal | EdgeKind::Continue(_) => return None,
        },
        StateName::Loop | StateName::Sampling | StateName::Acting => return None,
    })
}

impl Machine {
    /// Let the table pick the edge out of the current state on `C::EVENT`, given the facts the
    /// handler reports. On [`Decision::Take`] the edge's counters have changed and
    /// [`Machine::proceed`] transitions to its target.
    pub(crate) fn decide<C: Choice>(&mut self, ctx: &mut Ctx, reported: &Facts) -> Decision<C> {
        match self.select::<C>(&ctx.table, reported) {
            Ok(choice) => Decision::Take(choice),
            Err(Selection::Needs(fact)) => Decision::Needs(fact),
            Err(Selection::Broken(message)) => {
                tracing::error!(%message, "the table could not pick an edge");
                ctx.violation.get_or_insert(message);
                Decision::Broken
            }
        }
    }

    /// [`Machine::decide`] for a handler that reports every fact it has: a guard reading
    /// anything else is a violation. `None` when the table could not pick an edge.
    pub(crate) fn decide_now<C: Choice>(&mut self, ctx: &mut Ctx, reported: &Facts) -> Option<C> {
        match self.decide::<C>(ctx, reported) {
            Decision::Take(choice) => Some(choice),
            Decision::Needs(fact) => {
                self.unreported::<C>(ctx, &fact);
                None
            }
            Decision::Broken => None,
        }
    }

    /// Record that a guard read `fact`, which the handler of this state cannot supply.
    pub(crate) fn unreported<C: Choice>(&mut self, ctx: &mut Ctx, fact: &str) {
        let message = format!(
            "a guard of an edge out of `{}` on `{}` reads `{fact}`, which the state does not report there",
            self.current,
            C::EVENT
        );
        ctx.violation.get_or_insert(message);
    }

    /// Transition to the target of the edge [`Machine::decide`] took.
    pub(crate) fn proceed(&mut self) -> Outcome<State> {
        match &self.pending {
            Some(p) => Transition(p.target.clone()),
            None => Handled,
        }
    }

    fn select<C: Choice>(&mut self, table: &Table, reported: &Facts) -> Result<C, Selection> {
        let from = self.current;
        let event = C::EVENT;
        for (fact, set) in &self.entered.facts {
            if let Some(value) = reported.get(fact).filter(|v| *v != set) {
                return Err(Selection::Broken(format!(
                    "`{from}` reported `{fact}` = {value}, but `{}`, which entered it, set it to {set}",
                    self.entered.edge
                )));
            }
        }
        // What the entering edge set holds here, then what the handler reports, then counters.
        let mut all = self.entered.facts.clone();
        all.extend(reported.iter().map(|(k, v)| (k.clone(), v.clone())));
        for name in self.st.counters.keys() {
            all.insert(format!("{name}_left"), FactValue::Bool(self.st.left(name) > 0));
        }
        let candidates = table.edges_from(from, event);
        let mut enabled = Vec::new();
        for edge in &candidates {
            let on = match &edge.guard {
                None => true,
                Some(guard) => match guard.eval(&all) {
                    Ok(on) => on,
                    Err(GuardError::Missing(fact)) if !all.contains_key(&fact) => return Err(Selection::Needs(fact)),
                    Err(e) => return Err(Selection::Broken(format!("edge `{}`: {e}", edge.id))),
                },
            };
            if on {
                enabled.push(*edge);
            }
        }
        let decl = match enabled.as_slice() {
            [one] => *one,
            [] => {
                return Err(Selection::Broken(format!(
                    "no edge out of `{from}` on `{event}` is enabled (facts: {})",
                    show(&all)
                )));
            }
            [a, b, ..] => {
                return Err(Selection::Broken(format!(
                    "edges `{}` and `{}` out of `{from}` on `{event}` are both enabled",
                    a.id, b.id
                )));
            }
        };
        let choice = Edge::from_id(&decl.id).and_then(C::from_edge).ok_or_else(|| {
            Selection::Broken(format!("the table took `{}`, which the `{from}` handler has no effect for", decl.id))
        })?;
        if let Some(spent) = decl.consumes.iter().find(|c| self.st.left(c) == 0) {
            return Err(Selection::Broken(format!("edge `{}` consumes `{spent}`, which is spent", decl.id)));
        }
        let target = leaf(&decl.to, decl).ok_or_else(|| {
            Selection::Broken(format!("edge `{}` goes to `{}`, which is not a leaf", decl.id, decl.to))
        })?;
        let mut guards = Facts::new();
        for edge in &candidates {
            let Some(guard) = &edge.guard else { continue };
            for atom in guard.atoms().into_keys() {
                if let Some(v) = all.get(&atom) {
                    guards.insert(atom, v.clone());
                }
            }
        }
        let turn = self.st.turn();
        for c in &decl.consumes {
            if let Some(v) = self.st.counters.get_mut(c) {
                *v -= 1;
            }
        }
        for c in &decl.resets {
            let bound = self.st.bounds[c];
            self.st.counters.insert(c.clone(), bound);
        }
        let index = table.edges.iter().position(|e| e.id == decl.id).expect("the edge is in the table");
        self.pending = Some(Pending { index, target, turn, guards, delay_ms: None, detail: None });
        Ok(choice)
    }
}

/// Why [`Machine::select`] took no edge.
enum Selection {
    Needs(String),
    Broken(String),
}

fn show(facts: &Facts) -> String {
    facts.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::generated::choice::{checkpoint::TurnChecked, recover::RecoveryChecked};
    use crate::engine::generated::fact;
    use crate::engine::machine::{Entered, facts, value, yes};
    use crate::engine::reason::TerminalReason;
    use crate::engine::state::{LoopState, counter};

    fn machine_in(state: &'static str, entered_by: &str) -> Machine {
        let table = crate::engine::table::shipped();
        let st = LoopState::new(crate::engine::options::EngineOptions::default(), "hi", Vec::new(), table);
        let mut m = Machine::new(st);
        m.current = state;
        m.entered = Entered { edge: entered_by.to_owned(), facts: table.edge(entered_by).unwrap().sets.clone() };
        m
    }

    fn select<C: Choice>(m: &mut Machine, f: Facts) -> Result<C, String> {
        m.select::<C>(crate::engine::table::shipped(), &f).map_err(|e| match e {
            Selection::Needs(fact) => format!("needs {fact}"),
            Selection::Broken(message) => message,
        })
    }

    /// The guards pick the edge; a fact they read and nobody reported is asked for.
    #[test]
    fn the_table_picks_the_edge_and_asks_for_what_it_reads() {
        let mut m = machine_in("Checkpoint", "consume.end_turn");
        assert_eq!(select::<TurnChecked>(&mut m, facts([])), Err("needs stop_hook".into()));
        let block = facts([(fact::STOP_HOOK, value(fact::stop_hook::BLOCK))]);
        assert_eq!(select::<TurnChecked>(&mut m, block), Ok(TurnChecked::StopHookBlocking));
        assert_eq!(m.st.left(counter::STOP_HOOK_BLOCKS), 7, "the edge consumed one block");
        let pending = m.pending.clone().unwrap();
        assert_eq!(pending.target, State::Prepare {});
        assert_eq!(
            pending.guards,
            facts([
                ("budget_continuations_left", yes(true)),
                ("stop_hook", value("block")),
                ("stop_hook_blocks_left", yes(true)),
                ("structured_output_retries_left", yes(true)),
                ("tools_ran", yes(false)),
                ("turns_left", yes(true)),
            ])
        );
        let pass = facts([(fact::STOP_HOOK, value(fact::stop_hook::PASS))]);
        assert_eq!(select::<TurnChecked>(&mut m, pass.clone()), Err("needs budget_wants_more".into()));
        let mut done = pass;
        done.insert(fact::BUDGET_WANTS_MORE.into(), yes(false));
        assert_eq!(select::<TurnChecked>(&mut m, done), Ok(TurnChecked::Completed));
        assert_eq!(m.pending.as_ref().unwrap().target, State::Done { reason: TerminalReason::Completed });
    }

    /// Counters are guards too: with no turn left, the same facts lead to `max_turns`.
    #[test]
    fn counters_are_read_as_facts() {
        let mut m = machine_in("Checkpoint", "tools.done");
        let f = facts([(fact::HOOK_STOP, yes(false)), (fact::STRUCTURED_OUTPUT, value(fact::structured_output::NONE))]);
        assert_eq!(select::<TurnChecked>(&mut m, f.clone()), Ok(TurnChecked::NextTurn));
        m.st.counters.insert(counter::TURNS.into(), 0);
        assert_eq!(select::<TurnChecked>(&mut m, f), Ok(TurnChecked::MaxTurns));
    }

    /// A handler must not report a fact otherwise than the edge into its state set it.
    #[test]
    fn reported_facts_must_agree_with_the_entering_edge() {
        let mut m = machine_in("Recover", "request.prompt_too_long");
        let truncated = facts([(fact::CAUSE, value(fact::cause::TRUNCATED))]);
        assert_eq!(
            select::<RecoveryChecked>(&mut m, truncated),
            Err("`Recover` reported `cause` = truncated, but `request.prompt_too_long`, which entered it, \
                 set it to prompt_too_long"
                .into())
        );
        let staged = facts([(fact::STAGED_COLLAPSES, yes(true))]);
        assert_eq!(select::<RecoveryChecked>(&mut m, staged), Ok(RecoveryChecked::CollapseDrainRetry));
    }

    /// The choice type must hold the edge the table picked: an abort handler cannot be handed
    /// a Checkpoint edge.
    #[test]
    fn an_edge_the_handler_has_no_effect_for_is_a_violation() {
        use crate::engine::generated::choice::sampling;
        let mut m = machine_in("Checkpoint", "tools.done");
        assert_eq!(
            select::<sampling::Abort>(&mut m, facts([])),
            Err("the table took `checkpoint.abort`, which the `Checkpoint` handler has no effect for".into())
        );
    }
}
