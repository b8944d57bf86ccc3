//! The worst case as a linear program over edge counts: the implicit path enumeration that
//! worst-case execution time tools use to bound loops.
//!
//! A run is a path through the table. Count how often it takes each edge from each leaf (an
//! edge from a superstate is counted per leaf below it); the counts then satisfy
//! - **flow**: no leaf is left more often than it is entered (the run starts once, at the
//!   initial state, and may stop anywhere);
//! - **counters**: a counter is consumed at most its value at the start plus its bound for
//!   every reset, since every consuming edge's guard requires `COUNTER_left` (the audit checks
//!   that, `E_CONSUME_UNGUARDED`).
//!
//! Every run is a point of this program, so its optimum, the most model calls over all
//! points, bounds the worst case from above. Unlike the exploration its size follows the
//! table, not the product of the counters' ranges: ten extra bound-1 counters cost ten rows.
//! Guards other than `COUNTER_left` and the facts edges set are not modelled, so the bound can
//! exceed what runs attain; when the exploration completes it says whether the two agree.
//!
//! Per turn: a turn starts at the initial state or where an edge that starts a turn lands
//! (a continue edge consuming the turn counter: `next_turn`, `task_notification`; that edge's
//! own call, if any, counted in it), those edges end it without entering their target, and
//! counters start at their bound.

use thiserror::Error;

use crate::audit::explore::model::{edge_calls, is_next_turn};
use crate::audit::explore::{Calls, CounterBound, WorstCase};
use crate::audit::simplex::{self, Outcome, Relation, Row};
use crate::engine::table::{StateKind, Table};

/// Why the program gives no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum FlowError {
    /// Some cycle of edges makes model calls and consumes no counter (or resets what it
    /// consumes), so edge counts alone bound nothing; the termination proof names it.
    #[error("the edge counts are unbounded: a cycle makes model calls without consuming a counter")]
    Unbounded,
    /// The solver found no point, which the zero run always is: a defect of the solver.
    #[error("the linear program has no solution, which cannot happen for a well-formed table")]
    Infeasible,
}

/// Whether the program bounds one turn or a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    Turn,
    Run,
}

/// The program's variables: one per (edge, leaf below its `from`), then one per way a span
/// can start.
struct Program<'t> {
    table: &'t Table,
    /// `(edge, leaf)` per flow variable.
    flows: Vec<(usize, usize)>,
    /// Where a span starts: the leaf, and the edge that led there (`None`: the run's start).
    sources: Vec<(usize, Option<usize>)>,
}

impl<'t> Program<'t> {
    fn new(table: &'t Table, span: Span) -> Program<'t> {
        let leaf = |i: usize| table.states[i].kind == StateKind::Leaf;
        let mut flows = Vec::new();
        for (k, e) in table.edges.iter().enumerate() {
            for (i, s) in table.states.iter().enumerate().filter(|&(i, _)| leaf(i)) {
                if table.ancestry(&s.name).contains(&e.from.as_str()) {
                    flows.push((k, i));
                }
            }
        }
        let state_index = |name: &str| table.states.iter().position(|s| s.name == name);
        let mut sources: Vec<(usize, Option<usize>)> =
            state_index(&table.initial).map(|i| (i, None)).into_iter().collect();
        if span == Span::Turn {
            for (k, e) in table.edges.iter().enumerate().filter(|(_, e)| is_next_turn(table, e)) {
                if let Some(i) = state_index(&e.to).filter(|&i| leaf(i)) {
                    sources.push((i, Some(k)));
                }
            }
        }
        Program { table, flows, sources }
    }

    /// The rows: one start, flow per leaf, one per counter.
    fn rows(&self, span: Span, bounds: &[CounterBound]) -> Vec<Row> {
        let table = self.table;
        let ends_span = |k: usize| span == Span::Turn && is_next_turn(table, &table.edges[k]);
        let source = |j: usize| self.flows.len() + j;
        let mut rows = vec![Row {
            terms: (0..self.sources.len()).map(|j| (source(j), 1.0)).collect(),
            relation: Relation::Equal,
            rhs: 1.0,
        }];
        for leaf in (0..table.states.len()).filter(|&i| table.states[i].kind == StateKind::Leaf) {
            let mut terms = Vec::new();
            for (v, &(k, from)) in self.flows.iter().enumerate() {
                if from == leaf {
                    terms.push((v, -1.0));
                }
                if table.edges[k].to == table.states[leaf].name && !ends_span(k) {
                    terms.push((v, 1.0));
                }
            }
            terms.extend(self.sources.iter().enumerate().filter(|(_, s)| s.0 == leaf).map(|(j, _)| (source(j), 1.0)));
            rows.push(Row { terms, relation: Relation::AtLeast, rhs: 0.0 });
        }
        for (c, b) in table.counters.iter().zip(bounds) {
            let mut terms = Vec::new();
            for (v, &(k, _)) in self.flows.iter().enumerate() {
                let e = &table.edges[k];
                let consumed = e.consumes.iter().filter(|n| **n == c.name).count() as f64;
                if consumed > 0.0 {
                    terms.push((v, consumed));
                }
                if e.resets.contains(&c.name) && !ends_span(k) {
                    terms.push((v, -f64::from(b.bound)));
                }
            }
            let start = match span {
                Span::Turn => b.bound,
                Span::Run => b.initial,
            };
            rows.push(Row { terms, relation: Relation::AtMost, rhs: f64::from(start) });
        }
        rows
    }

    /// Calls per variable: `which` 0 excludes re-sends, 1 counts them.
    fn objective(&self, span: Span, which: usize) -> Vec<f64> {
        let table = self.table;
        let calls = |k: usize| edge_calls(&table.edges[k])[which] as f64;
        let mut objective: Vec<f64> = self
            .flows
            .iter()
            .map(|&(k, _)| if span == Span::Turn && is_next_turn(table, &table.edges[k]) { 0.0 } else { calls(k) })
            .collect();
        objective.extend(self.sources.iter().map(|&(_, edge)| edge.map_or(0.0, calls)));
        objective
    }
}

/// The most model calls a turn and a run can make by edge counts, with the bound of counters
/// whose option is `max_turns` set to `max_turns` when given.
///
/// # Errors
/// [`FlowError::Unbounded`] when a cycle calls the model without consuming a counter.
pub fn flow_bound(table: &Table, max_turns: Option<u32>) -> Result<WorstCase, FlowError> {
    let bounds = CounterBound::of(table, max_turns);
    let solve = |span: Span| -> Result<Calls, FlowError> {
        let program = Program::new(table, span);
        let rows = program.rows(span, &bounds);
        let mut most = [0u64; 2];
        for (which, slot) in most.iter_mut().enumerate() {
            *slot = match simplex::maximize(&program.objective(span, which), &rows) {
                // Runs take whole edges, so the integer part of the optimum bounds them.
                Outcome::Optimal { value, .. } => (value + 1e-6).floor().max(0.0) as u64,
                Outcome::Unbounded => return Err(FlowError::Unbounded),
                Outcome::Infeasible => return Err(FlowError::Infeasible),
            };
        }
        Ok(Calls { excluding_resends: most[0], including_resends: most[1] })
    };
    Ok(WorstCase { per_turn: solve(Span::Turn)?, per_run: solve(Span::Run)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table;

    /// On the shipped table the bound is attained: `tests/it/audit.rs` snapshots the explored
    /// worst case beside it. Here, what holds of any table.
    #[test]
    fn the_shipped_table_is_bounded_and_a_turn_is_within_a_run() {
        let bound = flow_bound(table::shipped(), None).expect("the shipped table is bounded");
        assert!(bound.per_turn.excluding_resends <= bound.per_turn.including_resends);
        assert!(bound.per_turn.excluding_resends <= bound.per_run.excluding_resends);
        assert!(bound.per_turn.including_resends <= bound.per_run.including_resends);
    }

    /// A turn that may start where `next_turn` lands, the call state itself: that edge's call
    /// counts in the turn it starts, and `next_turn` resets the retries.
    const RESEND_TABLE: &str = r#"
schema = 1
initial = "Start"
[[state]]
name = "Start"
[[state]]
name = "Request"
[[state]]
name = "Check"
[[state]]
name = "Done"
kind = "terminal"
[[event]]
name = "go"
[[fact]]
name = "failed"
[[fact]]
name = "more"
[[counter]]
name = "turns"
bound = 3
option = "max_turns"
[[counter]]
name = "retries"
bound = 2
[termination]
ranking = ["turns", "retries"]
[[reason]]
name = "next_turn"
kind = "continue"
[[reason]]
name = "completed"
kind = "terminal"
exit_code = 0
[[reason]]
name = "max_turns"
kind = "terminal"
exit_code = 3
[[edge]]
id = "start.request"
from = "Start"
on = "go"
to = "Request"
[[edge]]
id = "request.retry"
from = "Request"
on = "go"
guard = "failed && retries_left"
to = "Request"
consumes = ["retries"]
[[edge]]
id = "request.ok"
from = "Request"
on = "go"
guard = "!(failed && retries_left)"
to = "Check"
[[edge]]
id = "check.next_turn"
from = "Check"
on = "go"
guard = "more && turns_left"
to = "Request"
continue = "next_turn"
consumes = ["turns"]
resets = ["retries"]
[[edge]]
id = "check.completed"
from = "Check"
on = "go"
guard = "!more"
to = "Done"
terminal = "completed"
[[edge]]
id = "check.max_turns"
from = "Check"
on = "go"
guard = "more && !turns_left"
to = "Done"
terminal = "max_turns"
"#;

    #[test]
    fn next_turn_into_the_call_state_starts_a_turn_with_its_call() {
        let table = Table::load("resend.toml", RESEND_TABLE).expect("the table loads");
        let bound = flow_bound(&table, None).expect("bounded");
        // A turn: one call in (the start's or next_turn's), two retries.
        assert_eq!(bound.per_turn, Calls { excluding_resends: 1, including_resends: 3 });
        // A run: four turns (the start and three next_turn), each with two retries.
        assert_eq!(bound.per_run, Calls { excluding_resends: 4, including_resends: 12 });
        let bound = flow_bound(&table, Some(1)).expect("bounded");
        assert_eq!(bound.per_run, Calls { excluding_resends: 2, including_resends: 6 });
    }

    #[test]
    fn a_cycle_that_calls_without_consuming_is_unbounded() {
        let text = RESEND_TABLE.replacen("consumes = [\"retries\"]\n", "", 1);
        let table = Table::load("loop.toml", &text).expect("the table loads");
        assert_eq!(flow_bound(&table, None), Err(FlowError::Unbounded));
    }

    #[test]
    fn the_max_turns_option_scales_the_run_not_the_turn() {
        let full = flow_bound(table::shipped(), None).expect("bounded");
        let one = flow_bound(table::shipped(), Some(1)).expect("bounded");
        assert_eq!(one.per_turn, full.per_turn);
        assert!(one.per_run.including_resends < full.per_run.including_resends);
    }
}
