//! Bounded exhaustive exploration of (state x counter values x guard outcomes).
//!
//! Counters are exact, starting at their bound minus `spent_at_start`. A fact the edge into the
//! current state `sets` is fixed to that value until the next edge; every other fact is free at
//! every step (the environment may report anything). The product's "state" is therefore a
//! *place*: a table state and the facts its entering edge fixed (see `model::Place`). The product graph is explored in two
//! levels so that default bounds stay cheap: the highest-ranked counters are *outer* and change
//! only on segment exits; a segment (`segment.rs`) explores the rest. The outer graph's nodes are
//! (segment start, outer counter values). Both levels are searched depth first for cycles, then
//! walked in topological order: longest paths (memoised, never enumerated) give the worst-case
//! number of model calls, shortest paths give the witnesses. When the product does not fit the
//! memory cap, [`refine`] finds the witnesses edge by edge and the flow bound
//! ([`crate::audit::flow`]) is the worst case.

pub(crate) mod model;
pub(crate) mod refine;
mod search;
pub(crate) mod segment;
mod split;

pub use model::{CALL_STATE, CounterBound};
pub use search::{explore, explore_within};
pub use split::{DEFAULT_MEMORY_CAP, Estimate};

use serde::Serialize;

use crate::table::finding::Finding;

/// Worst-case model calls (entries into [`CALL_STATE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Calls {
    /// Not counting re-sends: internal edges into the call state that consume a counter
    /// (retries and the fallback switch).
    pub excluding_resends: u64,
    /// Counting every entry into the call state.
    pub including_resends: u64,
}

/// The worst cases the exploration proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorstCase {
    /// Most model calls between two `next_turn` edges (or the start, or the end).
    pub per_turn: Calls,
    /// Most model calls in one run.
    pub per_run: Calls,
}

/// The shortest path from the start that takes an edge with a given reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Witness {
    /// `continue` or `terminal`.
    pub kind: &'static str,
    /// The reason's name.
    pub reason: String,
    /// Edge ids, the last one carrying the reason.
    pub path: Vec<String>,
}

/// Size of the explored graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Size {
    /// Outer nodes: (segment start, outer counter values).
    pub outer_nodes: usize,
    /// Distinct segments built.
    pub segments: usize,
    /// Nodes over all segments.
    pub segment_nodes: usize,
    /// Product nodes visited, a node counted once per segment that reaches it: the sum over
    /// outer nodes of their segment's nodes.
    pub node_visits: u64,
    /// Bytes the exploration held at its end (nodes and tables, as it counts them against
    /// its memory cap).
    pub bytes: u64,
}

/// What the exploration found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exploration {
    /// Counter bounds used, in table order.
    pub bounds: Vec<CounterBound>,
    /// Names of the outer counters (the rest are explored inside segments).
    pub outer_counters: Vec<String>,
    /// Size of what was explored.
    pub size: Size,
    /// The cost model's upper bounds for the chosen split.
    pub estimate: Estimate,
    /// Worst-case model calls, exact; `None` when the exploration found a cycle or hit its
    /// memory cap.
    pub worst: Option<WorstCase>,
    /// The flow bound on the worst case ([`crate::audit::flow`]), an upper bound whatever the
    /// table's size; `None` when a cycle makes calls without consuming a counter.
    pub flow_bound: Option<WorstCase>,
    /// What the exploration said when it stopped at its memory cap; `None` when it completed.
    /// Witnesses and edges taken then come from [`refine`], the worst case from the flow bound.
    pub stopped: Option<String>,
    /// Edges (table order) of which, after the cap, the refinement search could not tell
    /// within its budget whether a run takes them.
    pub undecided: Vec<usize>,
    /// One shortest witness per continue and terminal reason that some edge reaches.
    pub witnesses: Vec<Witness>,
    /// Whether each edge (table order) is taken somewhere in the exploration.
    pub taken: Vec<bool>,
    /// Cycles, dead ends, edges never taken, limits.
    pub findings: Vec<Finding>,
}

impl Exploration {
    /// The worst case the audit proves: the exploration's exact one, or, when it stopped at
    /// its memory cap, the flow bound (an upper bound). `None` when neither holds (a cycle).
    pub fn proven_worst(&self) -> Option<WorstCase> {
        self.worst.or(self.flow_bound.filter(|_| self.stopped.is_some()))
    }
}
