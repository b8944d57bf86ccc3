//! How the machine takes a transition: the table's guards pick the edge, asking the handler
//! for each fact they read.
//!
//! [`Machine::decide`] evaluates the guards of every edge that leaves the current state (or one
//! of its superstates) on the handler's event, takes the single enabled edge (the auditor
//! proves exactly one is enabled for every valuation of the facts), applies its counter
//! changes and returns it as the handler's [`Choice`] type. The handler then carries out the
//! edge's effect by matching on it and returns [`Machine::proceed`]. No guard is written in
//! Rust: a handler cannot choose an edge, only describe what it saw.
//!
//! What a guard reads comes from three places: a `COUNTER_left` atom from the machine's
//! counters, a fact the entering edge `sets` from that edge, and every other fact from the
//! handler, through the trait `build.rs` generates for the (state, event) pair
//! (`choice::STATE::EVENTFacts`, one method per fact). A fact is asked for only when a guard
//! actually reads it, so an expensive one (running the Stop hooks, trying a compaction) costs
//! nothing when the guards decide without it, and a handler that forgets a fact does not compile.

use std::future::Future;

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

/// What a handler's facts gave for one fact a guard reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supplied {
    /// The fact's value.
    Value(FactValue),
    /// The state cannot settle (an interrupt came while the fact was found out): no edge is
    /// taken, and the abort is handled next.
    Unsettled,
    /// The handler of this (state, event) pair has no such fact. The engine check of an
    /// edited table rules this out before a run starts.
    Unknown,
}

/// The facts of one (state, event) pair, as [`Machine::decide`] asks for them. `build.rs`
/// implements it for every type that implements the pair's generated `…Facts` trait, and for
/// [`NoFacts`] where the pair's guards read nothing a handler observes.
pub trait Supply<C: Choice> {
    /// The value of `fact`, which a guard out of the current state reads.
    fn supply(&mut self, m: &mut Machine, ctx: &mut Ctx, fact: &str) -> impl Future<Output = Supplied>;
}

/// The facts of a (state, event) pair whose guards read only counters and set facts.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFacts;

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
        StateName::Compact => State::Compact {},
        StateName::Done => match decl.kind {
            EdgeKind::Terminal => State::Done { reason: decl.terminal_reason()? },
            EdgeKind::Internal | EdgeKind::Continue => return None,
        },
        StateName::Loop | StateName::Sampling | StateName::Acting => return None,
    })
}

impl Machine {
    /// Let the table pick the edge out of the current state on `C::EVENT`, asking `facts` for
    /// each fact a guard reads. `Some` with the edge, whose counter changes are applied;
    /// [`Machine::proceed`] then transitions to its target. `None` when the state could not
    /// settle (see [`Supplied::Unsettled`]) or the table could not pick an edge (recorded in
    /// [`Ctx::violation`]).
    pub(crate) async fn decide<C: Choice>(&mut self, ctx: &mut Ctx, facts: &mut impl Supply<C>) -> Option<C> {
        let table = ctx.table.clone();
        let mut known = self.known_facts(&table);
        loop {
            let broken = match self.select::<C>(&table, &known) {
                Ok(choice) => return Some(choice),
                Err(Selection::Needs(fact)) => match facts.supply(self, ctx, &fact).await {
                    Supplied::Value(value) => {
                        known.insert(fact, value);
                        continue;
                    }
                    Supplied::Unsettled => return None,
                    Supplied::Unknown => format!(
                        "a guard of an edge out of `{}` on `{}` reads `{fact}`, which the state does not supply there",
                        self.current,
                        C::EVENT
                    ),
                },
                Err(Selection::Broken(message)) => message,
            };
            tracing::error!(message = %broken, "the table could not pick an edge");
            ctx.violation.get_or_insert(broken);
            return None;
        }
    }

    /// Transition to the target of the edge [`Machine::decide`] took.
    pub(crate) fn proceed(&mut self) -> Outcome<State> {
        match &self.pending {
            Some(p) => Transition(p.target.clone()),
            None => Handled,
        }
    }

    /// What the guards can read before the handler is asked anything: `COUNTER_left` for every
    /// counter (unless a fact has that name), and the facts the entering edge set.
    fn known_facts(&self, table: &Table) -> Facts {
        let mut known = Facts::new();
        for name in self.st.counters.keys() {
            let atom = format!("{name}_left");
            if table.fact(&atom).is_none() {
                known.insert(atom, FactValue::Bool(self.st.left(name) > 0));
            }
        }
        known.extend(self.entered.facts.iter().map(|(k, v)| (k.clone(), v.clone())));
        known
    }

    /// Evaluate the guards under `all`; `Needs` names the first fact a guard reads that `all`
    /// lacks.
    fn select<C: Choice>(&mut self, table: &Table, all: &Facts) -> Result<C, Selection> {
        let from = self.current;
        let event = C::EVENT;
        let candidates = table.edges_from(from, event);
        let mut enabled = Vec::new();
        for edge in &candidates {
            let on = match &edge.guard {
                None => true,
                Some(guard) => match guard.eval(all) {
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
                    show(all)
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
    use crate::engine::machine::Entered;
    use crate::engine::reason::TerminalReason;
    use crate::engine::state::{LoopState, counter};

    fn facts<const N: usize>(pairs: [(&str, FactValue); N]) -> Facts {
        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    fn yes(b: bool) -> FactValue {
        FactValue::Bool(b)
    }

    fn value(v: &str) -> FactValue {
        FactValue::Value(v.to_owned())
    }

    fn machine_in(state: &'static str, entered_by: &str) -> Machine {
        let table = crate::engine::table::shipped();
        let st = LoopState::new(crate::engine::options::EngineOptions::default(), "hi", Vec::new(), table);
        let mut m = Machine::new(st);
        m.current = state;
        m.entered = Entered { edge: entered_by.to_owned(), facts: table.edge(entered_by).unwrap().sets.clone() };
        m
    }

    fn select<C: Choice>(m: &mut Machine, f: Facts) -> Result<C, String> {
        let table = crate::engine::table::shipped();
        let mut all = m.known_facts(table);
        all.extend(f);
        m.select::<C>(table, &all).map_err(|e| match e {
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
        assert_eq!(select::<TurnChecked>(&mut m, done.clone()), Err("needs tasks_pending".into()));
        done.insert(fact::TASKS_PENDING.into(), yes(false));
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

    /// A fact the entering edge sets is read from that edge: the handler is never asked for it.
    #[test]
    fn set_facts_come_from_the_entering_edge() {
        let mut m = machine_in("Recover", "request.prompt_too_long");
        assert_eq!(select::<RecoveryChecked>(&mut m, facts([])), Err("needs staged_collapses".into()));
        let staged = facts([(fact::STAGED_COLLAPSES, yes(true))]);
        assert_eq!(select::<RecoveryChecked>(&mut m, staged), Ok(RecoveryChecked::CollapseDrainRetry));
        let mut m = machine_in("Recover", "consume.truncated");
        assert_eq!(select::<RecoveryChecked>(&mut m, facts([])), Ok(RecoveryChecked::MaxOutputTokensEscalate));
    }

    /// The generated traits ask a handler for exactly what its guards read and no edge into
    /// the state sets.
    #[test]
    fn each_pair_supplies_what_its_guards_read_and_no_entering_edge_sets() {
        use crate::engine::generated::SUPPLIED;
        let of = |state: &str, event: &str| {
            SUPPLIED.iter().find(|(s, e, _)| *s == state && *e == event).map(|(_, _, facts)| facts.to_vec())
        };
        // A fact an edge into Recover sets is never asked of its handler.
        assert_eq!(of("Recover", "recovery_checked"), Some(vec!["staged_collapses", "compacted"]));
        assert_eq!(of("Sampling", "abort"), Some(vec![]));
        // Every pair and what it asks for (a table edit that changes them shows here, for
        // `cargo insta review`).
        let all: Vec<String> = SUPPLIED.iter().map(|(s, e, facts)| format!("{s} {e}: {}", facts.join(", "))).collect();
        insta::assert_snapshot!("supplied_facts", all.join("\n"));
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
