//! One segment of the product graph: everything reachable from a start node (place, inner
//! counter values) while the outer counters stay fixed, up to the exit edges (terminal edges,
//! `next_turn`, and edges that touch an outer counter). Guards see the outer counters only as
//! `COUNTER_left` bits, so a segment depends on its start and those bits alone and is shared by
//! every outer node with the same start and bits.
//!
//! A depth-first search orders the nodes (or finds a cycle); one pass in topological order then
//! gives, from the start, the most model calls to each node and the fewest edges (with the
//! predecessor for paths).

use crate::audit::explore::model::{FastMap, Model};

/// A cycle found inside a segment: the edges from the segment start to the loop, and the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cycle {
    /// Edge indices from the start node to the first node of the loop.
    pub prefix: Vec<usize>,
    /// Edge indices around the loop.
    pub cycle: Vec<usize>,
}

/// Successor of a segment node.
#[derive(Debug, Clone, Copy)]
enum Succ {
    /// An edge to another node of the segment.
    Inner(usize, u32),
    /// An exit edge, with the target key (place and inner counters after the edge).
    Exit(usize, u64),
}

/// Exits of one segment that share an edge and a target, with the best values over the
/// nodes they leave from.
#[derive(Debug, Clone)]
pub(crate) struct Exit {
    /// The exit edge.
    pub edge: usize,
    /// Target key: place index x inner space + inner code, after the edge's inner effects.
    pub target: u64,
    /// The node, among those the exit leaves from, with the fewest edges from the start.
    pub node: u32,
    /// Fewest edges from the start to `node`.
    pub short: u32,
    /// Most model calls from the start to a node the exit leaves from, `[excl, incl]`.
    pub long: [u64; 2],
}

/// A built segment.
pub(crate) struct Segment {
    /// Nodes as (place index, inner code); index 0 is the start.
    pub nodes: Vec<(usize, u64)>,
    /// Predecessor (node, edge) on a path with the fewest edges.
    pred: Vec<Option<(u32, usize)>>,
    /// Non-terminal exits.
    pub exits: Vec<Exit>,
    /// Most calls from the start through a terminal edge, `[excl, incl]`, if any is enabled.
    pub terminal: Option<[u64; 2]>,
    /// For each edge: (fewest edges from the start up to and including it, node it leaves from).
    pub first: Vec<Option<(u32, u32)>>,
    /// Nodes with no enabled edge at all, with the fewest edges from the start to each.
    pub dead_ends: Vec<(u32, u32)>,
    /// For each state: (fewest edges from the start to a node in it, that node).
    pub reach: Vec<Option<(u32, u32)>>,
}

impl Segment {
    /// Explore from `start_key` (place index x inner space + inner code) with the outer
    /// counters left as in `outer_mask`. `limit` caps the number of nodes.
    ///
    /// # Errors
    /// `Err(Ok(cycle))` when the segment has a cycle; `Err(Err(()))` when it exceeds `limit`.
    pub fn build(
        model: &Model<'_>,
        start_key: u64,
        outer_mask: u64,
        limit: usize,
    ) -> Result<Segment, Result<Cycle, ()>> {
        let space = model.inner.space;
        let mut nodes: Vec<(usize, u64)> = vec![((start_key / space) as usize, start_key % space)];
        let mut index: FastMap<u64, u32> = FastMap::default();
        index.insert(start_key, 0);
        let mut succ: Vec<Vec<Succ>> = Vec::new();
        let mut values = vec![0u32; model.bounds.len()];
        let mut expand = |u: usize, nodes: &mut Vec<(usize, u64)>, index: &mut FastMap<u64, u32>| -> Vec<Succ> {
            let (place, code) = nodes[u];
            model.inner.decode(code, &mut values);
            let mask = outer_mask | Model::mask(&model.inner, &values);
            let mut out = Vec::new();
            for &e in model.enabled(place, mask).iter() {
                let mut after = values.clone();
                model.apply(e, &mut after);
                let key = model.edges[e].to as u64 * space + model.inner.encode(&after);
                if model.edges[e].exit {
                    out.push(Succ::Exit(e, key));
                } else {
                    let next = nodes.len() as u32;
                    let t = *index.entry(key).or_insert(next);
                    if t == next {
                        nodes.push((model.edges[e].to, key % space));
                    }
                    out.push(Succ::Inner(e, t));
                }
            }
            out
        };

        // Depth-first search: post-order, or the first cycle.
        let mut color: Vec<u8> = vec![1];
        let mut post: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, usize, Option<usize>)> = vec![(0, 0, None)];
        succ.push(expand(0, &mut nodes, &mut index));
        while let Some(&(u, i, _)) = stack.last() {
            let Some(&s) = succ[u as usize].get(i) else {
                color[u as usize] = 2;
                post.push(u);
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let Succ::Inner(e, t) = s else { continue };
            while succ.len() < nodes.len() {
                let n = succ.len();
                succ.push(expand(n, &mut nodes, &mut index));
                color.push(0);
                if nodes.len() > limit {
                    return Err(Err(()));
                }
            }
            match color[t as usize] {
                0 => {
                    color[t as usize] = 1;
                    stack.push((t, 0, Some(e)));
                }
                1 => {
                    let at = stack.iter().position(|f| f.0 == t).unwrap_or(0);
                    let prefix = stack[1..=at].iter().filter_map(|f| f.2).collect();
                    let mut cycle: Vec<usize> = stack[at + 1..].iter().filter_map(|f| f.2).collect();
                    cycle.push(e);
                    return Err(Ok(Cycle { prefix, cycle }));
                }
                _ => {}
            }
        }

        let n = nodes.len();
        let mut long = vec![[0u64; 2]; n];
        let mut short = vec![u32::MAX; n];
        let mut pred = vec![None; n];
        short[0] = 0;
        let mut exits: Vec<Exit> = Vec::new();
        let mut exit_index: FastMap<(usize, u64), usize> = FastMap::default();
        let mut terminal: Option<[u64; 2]> = None;
        let mut first: Vec<Option<(u32, u32)>> = vec![None; model.edges.len()];
        let mut dead_ends = Vec::new();
        for &u in post.iter().rev() {
            let u = u as usize;
            if succ[u].is_empty() {
                dead_ends.push((u as u32, short[u]));
            }
            for &s in &succ[u] {
                let (e, calls) = match s {
                    Succ::Inner(e, _) | Succ::Exit(e, _) => (e, model.edges[e].calls),
                };
                let reached = [long[u][0] + calls[0], long[u][1] + calls[1]];
                if first[e].is_none_or(|(d, _)| short[u] + 1 < d) {
                    first[e] = Some((short[u] + 1, u as u32));
                }
                match s {
                    Succ::Inner(_, t) => {
                        let t = t as usize;
                        long[t] = [long[t][0].max(reached[0]), long[t][1].max(reached[1])];
                        if short[u] + 1 < short[t] {
                            short[t] = short[u] + 1;
                            pred[t] = Some((u as u32, e));
                        }
                    }
                    Succ::Exit(e, _) if model.edges[e].terminal => {
                        let best = terminal.get_or_insert(reached);
                        *best = [best[0].max(reached[0]), best[1].max(reached[1])];
                    }
                    Succ::Exit(e, target) => {
                        let k = *exit_index.entry((e, target)).or_insert_with(|| {
                            exits.push(Exit { edge: e, target, node: u as u32, short: short[u], long: long[u] });
                            exits.len() - 1
                        });
                        let x = &mut exits[k];
                        x.long = [x.long[0].max(long[u][0]), x.long[1].max(long[u][1])];
                        if short[u] < x.short {
                            x.short = short[u];
                            x.node = u as u32;
                        }
                    }
                }
            }
        }
        let mut reach: Vec<Option<(u32, u32)>> = vec![None; model.table.states.len()];
        for (u, &(place, _)) in nodes.iter().enumerate() {
            let state = model.places[place].state;
            if reach[state].is_none_or(|(d, _)| short[u] < d) {
                reach[state] = Some((short[u], u as u32));
            }
        }
        Ok(Segment { nodes, pred, exits, terminal, first, dead_ends, reach })
    }

    /// Edge indices of a path with the fewest edges from the start to `node`.
    pub fn path_to(&self, node: u32) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = node;
        while let Some((prev, e)) = self.pred[at as usize] {
            path.push(e);
            at = prev;
        }
        path.reverse();
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn the_first_segment_of_the_shipped_table() {
        let t = shipped();
        let m = Model::new(t, None).unwrap();
        let v = m.initial_values();
        let start = m.initial as u64 * m.inner.space + m.inner.encode(&v);
        let seg = Segment::build(&m, start, Model::mask(&m.outer, &v), 1 << 20).unwrap();
        assert!(seg.dead_ends.is_empty());
        let id = |e: usize| t.edges[e].id.as_str();
        let completed = t.edges.iter().position(|e| e.id == "checkpoint.completed").unwrap();
        let (d, node) = seg.first[completed].unwrap();
        assert_eq!(d, 4);
        let path: Vec<&str> = seg.path_to(node).into_iter().map(id).collect();
        assert_eq!(path, vec!["prepare.request", "request.stream_opened", "consume.end_turn"]);
        // Exits are grouped by edge and by the inner counters they leave behind: `next_turn` and
        // the budget continuation reset all per-turn counters but keep `fallbacks` (2 targets
        // each), and so does a structured-output retry; a stop-hook block also keeps collapse,
        // compaction and escalation (16 targets).
        let count = |edge: &str| seg.exits.iter().filter(|x| id(x.edge) == edge).count();
        assert_eq!(seg.exits.len(), 22);
        assert_eq!(
            (
                count("checkpoint.next_turn"),
                count("checkpoint.structured_output_retry"),
                count("checkpoint.token_budget_continuation"),
                count("checkpoint.stop_hook_blocking")
            ),
            (2, 2, 2, 16)
        );
        // 12 calls before a terminal edge (the request, a collapse drain, a reactive compaction,
        // an escalation, 3 recoveries, 5 pause_turn continuations); each with 10 retries, plus
        // the fallback and its 10 retries.
        assert_eq!(seg.terminal, Some([12, 12 * 11 + 11]));
    }
}
