//! Which counters are outer: the split that the cost model says needs the fewest nodes.
//!
//! The exploration's cost is its nodes: the outer nodes (segment start, outer counter values)
//! and the nodes of every segment built. Both are held until the end (the passes after the
//! search walk them), so work and memory follow the same count. For a candidate set `O` of
//! outer counters (every other counter inner), with `P` places and `b_c` the bound of `c`:
//!
//! - an edge is an *exit* when it is terminal, `next_turn`, or consumes or resets a counter of
//!   `O`; a segment starts at the initial place and after every non-terminal exit, with the
//!   inner counters the exit does not reset carried over, so there are at most
//!   `starts = 1 + sum over exits e of prod over inner c not reset by e of (b_c + 1)` starts;
//! - a segment is shared by every outer node with the same start and the same outer
//!   `COUNTER_left` bits: at most `starts x 2^|O|` segments of at most `P x prod over inner c
//!   of (b_c + 1)` nodes each;
//! - at most `starts x prod over c in O of (b_c + 1)` outer nodes.
//!
//! These are upper bounds (a segment reaches a fraction of its space), used to rank the
//! candidates, not to predict the memory: the search enforces the cap on what it holds.
//! Candidates are every cut of the termination ranking (the highest-ranked counters outer, as
//! their edges are the rare ones that reset the rest) and then single counters moved across
//! while that lowers the estimate. A bound-1 counter thus lands where it costs a factor of two
//! at most, wherever it is ranked, instead of pushing a whole group of counters across a fixed
//! size limit.

use serde::Serialize;

/// The memory the exploration may hold: 2 GiB; the shipped table needs most of it. Past the
/// cap the exploration stops and reports no exact worst case: the flow bound stands in for it
/// and [`super::refine`] finds the witnesses (`W_EXPLORATION_LIMIT` only when that search
/// cannot tell for some edge, with the estimate of what the whole exploration needs).
pub const DEFAULT_MEMORY_CAP: u64 = 2 << 30;

/// Bytes one segment node costs while its segment is built (node, index entry, successors,
/// search and path arrays), most of which the segment frees when it is done.
pub(crate) const SEGMENT_NODE_BYTES: u64 = 96;

/// Bytes one outer node costs through the search and the passes after it (node, index entry,
/// colour, post-order, longest and shortest paths, predecessor).
pub(crate) const OUTER_NODE_BYTES: u64 = 72;

/// What the cost model needs to know about one edge. Counter sets are bit masks by counter
/// index (table order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EdgeUse {
    /// Counters the edge consumes.
    pub consumes: u64,
    /// Counters the edge resets.
    pub resets: u64,
    /// The edge ends a segment whatever the split: terminal or `next_turn`.
    pub exit: bool,
    /// The edge enters a terminal state (it starts no segment).
    pub terminal: bool,
}

/// The cost model's upper bounds for a split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Estimate {
    /// Outer nodes.
    pub outer_nodes: u64,
    /// Segment nodes, over all segments.
    pub segment_nodes: u64,
    /// Bytes of both.
    pub bytes: u64,
}

/// The chosen split.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Choice {
    /// Bit mask of the outer counters.
    pub outer: u64,
    /// Its cost estimate.
    pub estimate: Estimate,
}

/// The cost model's estimate for outer set `outer`, in floating point (the bounds multiply
/// past 64 bits easily).
fn cost(outer: u64, bounds: &[u64], places: f64, edges: &[EdgeUse]) -> (f64, f64) {
    let values = |set: u64| -> f64 {
        (0..bounds.len()).filter(|&c| set & (1 << c) != 0).map(|c| (bounds[c] + 1) as f64).product()
    };
    let all = if bounds.len() == 64 { u64::MAX } else { (1u64 << bounds.len()) - 1 };
    let inner = all & !outer;
    let inner_space = places * values(inner);
    let mut starts = 1.0;
    for e in edges {
        if !e.terminal && (e.exit || (e.consumes | e.resets) & outer != 0) {
            starts += values(inner & !e.resets);
        }
    }
    let starts = starts.min(inner_space);
    let masks: f64 = (0..bounds.len()).filter(|&c| outer & (1 << c) != 0 && bounds[c] > 0).map(|_| 2.0).product();
    let segment_nodes = starts * masks * inner_space;
    let outer_nodes = starts * values(outer);
    (outer_nodes, segment_nodes)
}

fn bytes((outer_nodes, segment_nodes): (f64, f64)) -> f64 {
    outer_nodes * OUTER_NODE_BYTES as f64 + segment_nodes * SEGMENT_NODE_BYTES as f64
}

/// Pick the outer counters: the ranking cut with the smallest estimate, then single counters
/// moved across while one move lowers it. `order` is the counters in ranking order (every
/// counter once). Memory and work follow the same node count, so the split that needs the
/// fewest nodes is also the one likeliest to fit under the cap.
pub(crate) fn choose(order: &[usize], bounds: &[super::CounterBound], places: u64, edges: &[EdgeUse]) -> Choice {
    let bounds: Vec<u64> = bounds.iter().map(|b| u64::from(b.bound)).collect();
    let places = places as f64;
    let score = |outer: u64| bytes(cost(outer, &bounds, places, edges));
    // Cuts from the one with everything outer down, so that among equal estimates more
    // counters stay outer (the smaller segments).
    let mut best = (f64::INFINITY, 0u64);
    let mut prefix: u64 = order.iter().fold(0, |m, &c| m | 1 << c);
    for k in (0..=order.len()).rev() {
        let s = score(prefix);
        if s < best.0 {
            best = (s, prefix);
        }
        if k > 0 {
            prefix &= !(1 << order[k - 1]);
        }
    }
    loop {
        let moved = order.iter().map(|&c| best.1 ^ (1 << c)).map(|o| (score(o), o)).min_by(|a, b| a.0.total_cmp(&b.0));
        match moved {
            Some((s, o)) if s < best.0 => best = (s, o),
            _ => break,
        }
    }
    let (outer_nodes, segment_nodes) = cost(best.1, &bounds, places, edges);
    let whole = |x: f64| x.ceil() as u64;
    let estimate =
        Estimate { outer_nodes: whole(outer_nodes), segment_nodes: whole(segment_nodes), bytes: whole(best.0) };
    Choice { outer: best.1, estimate }
}
