//! Shortest runs to each edge without the whole product, for tables whose exhaustive
//! exploration does not fit its memory cap: counterexample-guided abstraction refinement.
//!
//! The search tracks only some counters exactly; the `COUNTER_left` atoms of the others are
//! free, so the abstract graph has every path of the product and more. A breadth-first search
//! finds the shortest abstract path to the edge. Replayed with every counter exact from the
//! start of a run, it either is a run, and then the shortest one (no shorter abstract path
//! exists, so no shorter run does), or an edge on it is not enabled: that edge's guard reads a
//! counter the search did not track, which it then tracks, and searches again. No abstract
//! path at all proves that no run takes the edge. The counters an edge needs are usually a few
//! (`turns` for `max_turns`), so the graphs stay small where the product is out of reach.

use std::collections::VecDeque;

use crate::audit::explore::model::{FastMap, Model, Radix};

/// How a run can reach an edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The shortest run that takes it: edge indices, the edge last.
    Path(Vec<usize>),
    /// A run found for another edge takes it on the way (its shortest run was not sought).
    Taken,
    /// No run takes it (no abstract path reaches it).
    Never,
    /// The search passed its node budget before it could tell.
    Unknown,
}

/// Bytes one node of the abstract search costs (node, index entry, queue), against the cap.
pub(crate) const ABSTRACT_NODE_BYTES: u64 = 64;

/// Replay `path` with exact counters from the start: the index of the first edge that is not
/// enabled where the path takes it, if any.
fn replay(model: &Model<'_>, path: &[usize]) -> Option<usize> {
    let mut values = model.initial_values();
    let mut place = model.initial;
    for (step, &k) in path.iter().enumerate() {
        let mask = values.iter().enumerate().filter(|(_, v)| **v > 0).fold(0u64, |m, (c, _)| m | 1 << c);
        if !model.enabled(place, mask).contains(&k) {
            return Some(step);
        }
        let e = &model.edges[k];
        for &c in &e.consumes {
            values[c] = values[c].saturating_sub(1);
        }
        for &c in &e.resets {
            values[c] = model.bounds[c].bound;
        }
        place = model.edges[k].to;
    }
    None
}

/// The outcome of one abstract search.
enum Abstract {
    Path(Vec<usize>),
    Never,
    OverBudget,
}

/// Breadth-first search, tracking exactly the counters in `tracked`, for the shortest path
/// whose last edge is `target`.
fn search(model: &Model<'_>, tracked: &[usize], target: usize, budget: usize) -> Abstract {
    let Some(radix) = Radix::new(tracked.to_vec(), &model.bounds) else { return Abstract::OverBudget };
    let known = tracked.iter().fold(0u64, |m, c| m | 1 << c);
    let effects: Vec<_> = model.edges.iter().map(|e| radix.effect(&e.consumes, &e.resets)).collect();
    // (place, code, predecessor node, edge from it); the first node is the start.
    let start = (model.initial as u32, radix.encode(&model.initial_values()));
    let mut nodes: Vec<(u32, u64, u32, u32)> = vec![(start.0, start.1, u32::MAX, u32::MAX)];
    let mut seen: FastMap<(u32, u64), ()> = FastMap::default();
    seen.insert(start, ());
    let mut enabled: FastMap<(usize, u64), Vec<usize>> = FastMap::default();
    let mut queue = VecDeque::from([0u32]);
    while let Some(n) = queue.pop_front() {
        let (place, code, _, _) = nodes[n as usize];
        let mask = radix.mask(code);
        let out = enabled
            .entry((place as usize, mask))
            .or_insert_with(|| model.enabled_knowing(place as usize, mask, known))
            .clone();
        if out.contains(&target) {
            let mut path = vec![target];
            let mut at = n;
            while nodes[at as usize].2 != u32::MAX {
                path.push(nodes[at as usize].3 as usize);
                at = nodes[at as usize].2;
            }
            path.reverse();
            return Abstract::Path(path);
        }
        for k in out {
            if model.edges[k].terminal {
                continue;
            }
            let next = (model.edges[k].to as u32, effects[k].apply(code));
            if seen.insert(next, ()).is_none() {
                if nodes.len() >= budget {
                    return Abstract::OverBudget;
                }
                nodes.push((next.0, next.1, n, k as u32));
                queue.push_back(nodes.len() as u32 - 1);
            }
        }
    }
    Abstract::Never
}

/// The shortest run to `edge`, refining the tracked counters until the abstract path is a run.
pub(crate) fn shortest_run(model: &Model<'_>, edge: usize, budget: usize) -> Reach {
    let mut tracked: Vec<usize> = Vec::new();
    loop {
        let path = match search(model, &tracked, edge, budget) {
            Abstract::Path(path) => path,
            Abstract::Never => return Reach::Never,
            Abstract::OverBudget => return Reach::Unknown,
        };
        let Some(step) = replay(model, &path) else { return Reach::Path(path) };
        let missing: Vec<usize> =
            model.edges[path[step]].reads.iter().copied().filter(|c| !tracked.contains(c)).collect();
        if missing.is_empty() {
            // Cannot happen: untracked counters are the only difference from the product.
            return Reach::Unknown;
        }
        tracked.extend(missing);
        tracked.sort_unstable();
        tracked.dedup();
    }
}

/// [`shortest_run`] for every edge that names a reason (their witnesses must be shortest),
/// then for every other edge that none of those runs takes ([`Reach::Taken`] for the rest),
/// in table order; each search holds at most `budget` nodes.
pub(crate) fn reach_all(model: &Model<'_>, budget: usize) -> Vec<Reach> {
    let table = model.table;
    let mut reach: Vec<Option<Reach>> = vec![None; table.edges.len()];
    let mut taken = vec![false; table.edges.len()];
    let named = (0..table.edges.len()).filter(|&k| table.edges[k].reason.is_some());
    let rest = (0..table.edges.len()).filter(|&k| table.edges[k].reason.is_none());
    for k in named.chain(rest) {
        if reach[k].is_some() || (taken[k] && table.edges[k].reason.is_none()) {
            continue;
        }
        let r = shortest_run(model, k, budget);
        if let Reach::Path(p) = &r {
            p.iter().for_each(|&e| taken[e] = true);
        }
        reach[k] = Some(r);
    }
    reach.into_iter().map(|r| r.unwrap_or(Reach::Taken)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn the_max_turns_run_tracks_only_what_it_needs() {
        let model = Model::new(shipped(), Some(3)).unwrap();
        let table = shipped();
        let k = table.edges.iter().position(|e| e.id == "checkpoint.max_turns").unwrap();
        let Reach::Path(path) = shortest_run(&model, k, 1 << 20) else { panic!("max_turns is reachable") };
        let ids: Vec<&str> = path.iter().map(|&e| table.edges[e].id.as_str()).collect();
        assert_eq!(ids.last(), Some(&"checkpoint.max_turns"));
        assert_eq!(replay(&model, &path), None, "the path is a run");
    }
}
