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

/// Successor of a segment node: the edge, and either the node it leads to in the segment or,
/// for an exit, the target key (place and inner counters after the edge).
#[derive(Debug, Clone, Copy)]
struct Succ {
    edge: u32,
    exit: bool,
    /// Node index (inner edge) or target key (exit).
    to: u64,
}

/// Exits of one segment that share an edge and a target, with the best values over the
/// nodes they leave from.
#[derive(Debug, Clone)]
pub(crate) struct Exit {
    /// The exit edge.
    pub edge: usize,
    /// Target key: place index x inner space + inner code, after the edge's inner effects.
    pub target: u64,
    /// The outer search's index of `target` as a segment start (set by the search).
    pub start: u32,
    /// The node, among those the exit leaves from, with the fewest edges from the start.
    pub node: u32,
    /// Fewest edges from the start to `node`.
    pub short: u32,
    /// Most model calls from the start to a node the exit leaves from, `[excl, incl]`.
    pub long: [u64; 2],
}

/// What the search of a segment leaves for the path passes: every node's successors, flat
/// (node `u`'s from `off[u]` to `off[u + 1]`), and the post-order.
struct Searched {
    succ: Vec<Succ>,
    off: Vec<u32>,
    post: Vec<u32>,
}

/// No predecessor (the start).
const NO_PRED: (u32, u32) = (u32::MAX, u32::MAX);

/// A built segment.
pub(crate) struct Segment {
    /// Nodes as (place index, inner code); index 0 is the start.
    pub nodes: Vec<(u32, u64)>,
    /// Predecessor (node, edge) on a path with the fewest edges, [`NO_PRED`] for the start.
    pred: Vec<(u32, u32)>,
    /// Non-terminal exits.
    pub exits: Vec<Exit>,
    /// Most calls from the start through a terminal edge, `[excl, incl]`, if any is enabled.
    pub terminal: Option<[u64; 2]>,
    /// For each edge taken in the segment, by edge index: (edge, fewest edges from the start up
    /// to and including it, node it leaves from).
    pub first: Vec<(u32, u32, u32)>,
    /// Nodes with no enabled edge at all, with the fewest edges from the start to each.
    pub dead_ends: Vec<(u32, u32)>,
    /// For each state reached, by state index: (state, fewest edges from the start to a node in
    /// it, that node).
    pub reach: Vec<(u32, u32, u32)>,
}

/// Maps a node key (place index x inner space + inner code) to its node index while a
/// segment is built. A dense table when the keys are few enough, reused from segment to
/// segment (only the entries a segment set are cleared); a hash map otherwise.
pub(crate) struct NodeIndex {
    dense: Option<Vec<u32>>,
    sparse: FastMap<u64, u32>,
}

/// Most keys for which [`NodeIndex`] keeps a dense table (16 MiB of `u32`).
const DENSE_KEYS: u64 = 1 << 22;

impl NodeIndex {
    /// An index for keys below `keys`.
    pub fn new(keys: u64) -> NodeIndex {
        let dense = (keys <= DENSE_KEYS).then(|| vec![u32::MAX; keys as usize]);
        NodeIndex { dense, sparse: FastMap::default() }
    }

    /// Bytes the dense table holds.
    pub fn bytes(&self) -> u64 {
        self.dense.as_ref().map_or(0, |d| d.len() as u64 * 4)
    }

    /// The index of `key`, or `next` after recording it as such.
    fn get_or_insert(&mut self, key: u64, next: u32) -> u32 {
        match &mut self.dense {
            Some(d) => {
                let slot = &mut d[key as usize];
                if *slot == u32::MAX {
                    *slot = next;
                }
                *slot
            }
            None => *self.sparse.entry(key).or_insert(next),
        }
    }

    /// Forget every key of `nodes`.
    fn clear(&mut self, nodes: &[(u32, u64)], space: u64) {
        match &mut self.dense {
            Some(d) => {
                for &(place, code) in nodes {
                    d[(u64::from(place) * space + code) as usize] = u32::MAX;
                }
            }
            None => self.sparse = FastMap::default(),
        }
    }
}

/// Why a segment could not be built.
pub(crate) enum Stop {
    /// The segment has a cycle.
    Cycle(Cycle),
    /// The segment would have more than the nodes it was allowed.
    Limit,
}

impl Segment {
    /// Explore from `start_key` (place index x inner space + inner code) with the outer
    /// counters left as in `outer_mask`, with at most `limit` nodes. `index` must be empty;
    /// it is again on return.
    ///
    /// # Errors
    /// [`Stop::Cycle`] when the segment has a cycle; [`Stop::Limit`] when it exceeds `limit`.
    pub fn build(
        model: &Model<'_>,
        start_key: u64,
        outer_mask: u64,
        limit: usize,
        index: &mut NodeIndex,
    ) -> Result<Segment, Stop> {
        let space = model.inner.space;
        let mut nodes: Vec<(u32, u64)> = vec![((start_key / space) as u32, start_key % space)];
        let result = Self::explore(model, outer_mask, limit, index, &mut nodes);
        index.clear(&nodes, space);
        result.map(|searched| Self::paths(model, nodes, &searched))
    }

    /// The depth-first search: successors and post-order, or the first cycle.
    fn explore(
        model: &Model<'_>,
        outer_mask: u64,
        limit: usize,
        index: &mut NodeIndex,
        nodes: &mut Vec<(u32, u64)>,
    ) -> Result<Searched, Stop> {
        let space = model.inner.space;
        index.get_or_insert(u64::from(nodes[0].0) * space + nodes[0].1, 0);
        let mut succ: Vec<Succ> = Vec::new();
        let mut off: Vec<u32> = vec![0];
        let expand = |u: usize, nodes: &mut Vec<(u32, u64)>, index: &mut NodeIndex, succ: &mut Vec<Succ>| {
            let (place, code) = nodes[u];
            let mask = outer_mask | model.inner.mask(code);
            for &e in model.enabled(place as usize, mask).iter() {
                let info = &model.edges[e];
                let key = info.to as u64 * space + info.on_inner.apply(code);
                if info.exit {
                    succ.push(Succ { edge: e as u32, exit: true, to: key });
                } else {
                    let next = nodes.len() as u32;
                    let t = index.get_or_insert(key, next);
                    if t == next {
                        nodes.push((info.to as u32, key % space));
                    }
                    succ.push(Succ { edge: e as u32, exit: false, to: u64::from(t) });
                }
            }
        };

        // Depth-first search: post-order, or the first cycle.
        let mut color: Vec<u8> = vec![1];
        let mut post: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, u32, u32)> = vec![(0, 0, u32::MAX)];
        expand(0, nodes, index, &mut succ);
        off.push(succ.len() as u32);
        while let Some(&(u, i, _)) = stack.last() {
            let at = off[u as usize] + i;
            if at == off[u as usize + 1] {
                color[u as usize] = 2;
                post.push(u);
                stack.pop();
                continue;
            }
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let s = succ[at as usize];
            if s.exit {
                continue;
            }
            let (e, t) = (s.edge, s.to as u32);
            while off.len() <= nodes.len() {
                let n = off.len() - 1;
                expand(n, nodes, index, &mut succ);
                off.push(succ.len() as u32);
                color.push(0);
                if nodes.len() > limit {
                    return Err(Stop::Limit);
                }
            }
            match color[t as usize] {
                0 => {
                    color[t as usize] = 1;
                    stack.push((t, 0, e));
                }
                1 => {
                    let at = stack.iter().position(|f| f.0 == t).unwrap_or(0);
                    let edge = |f: &(u32, u32, u32)| (f.2 != u32::MAX).then_some(f.2 as usize);
                    let prefix = stack[1..=at].iter().filter_map(edge).collect();
                    let mut cycle: Vec<usize> = stack[at + 1..].iter().filter_map(edge).collect();
                    cycle.push(e as usize);
                    return Err(Stop::Cycle(Cycle { prefix, cycle }));
                }
                _ => {}
            }
        }
        Ok(Searched { succ, off, post })
    }

    /// Longest and shortest paths from the start, in topological order (the reverse
    /// post-order): exits, terminal calls, first edges, dead ends, states reached.
    fn paths(model: &Model<'_>, nodes: Vec<(u32, u64)>, searched: &Searched) -> Segment {
        let Searched { succ, off, post } = searched;
        let n = nodes.len();
        let mut long = vec![[0u64; 2]; n];
        let mut short = vec![u32::MAX; n];
        let mut pred = vec![NO_PRED; n];
        short[0] = 0;
        let mut exits: Vec<Exit> = Vec::new();
        let mut exit_index: FastMap<(u32, u64), usize> = FastMap::default();
        let mut terminal: Option<[u64; 2]> = None;
        let mut first: Vec<Option<(u32, u32)>> = vec![None; model.edges.len()];
        let mut dead_ends = Vec::new();
        for &u in post.iter().rev() {
            let u = u as usize;
            let out = &succ[off[u] as usize..off[u + 1] as usize];
            if out.is_empty() {
                dead_ends.push((u as u32, short[u]));
            }
            for s in out {
                let e = s.edge as usize;
                let calls = model.edges[e].calls;
                let reached = [long[u][0] + calls[0], long[u][1] + calls[1]];
                if first[e].is_none_or(|(d, _)| short[u] + 1 < d) {
                    first[e] = Some((short[u] + 1, u as u32));
                }
                if !s.exit {
                    let t = s.to as usize;
                    long[t] = [long[t][0].max(reached[0]), long[t][1].max(reached[1])];
                    if short[u] + 1 < short[t] {
                        short[t] = short[u] + 1;
                        pred[t] = (u as u32, s.edge);
                    }
                } else if model.edges[e].terminal {
                    let best = terminal.get_or_insert(reached);
                    *best = [best[0].max(reached[0]), best[1].max(reached[1])];
                } else {
                    let k = *exit_index.entry((s.edge, s.to)).or_insert_with(|| {
                        exits.push(Exit {
                            edge: e,
                            target: s.to,
                            start: 0,
                            node: u as u32,
                            short: short[u],
                            long: long[u],
                        });
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
        let mut reach: Vec<Option<(u32, u32)>> = vec![None; model.table.states.len()];
        for (u, &(place, _)) in nodes.iter().enumerate() {
            let state = model.places[place as usize].state;
            if reach[state].is_none_or(|(d, _)| short[u] < d) {
                reach[state] = Some((short[u], u as u32));
            }
        }
        let compact = |v: Vec<Option<(u32, u32)>>| {
            v.into_iter().enumerate().filter_map(|(k, x)| x.map(|(d, u)| (k as u32, d, u))).collect::<Vec<_>>()
        };
        Segment { nodes, pred, exits, terminal, first: compact(first), dead_ends, reach: compact(reach) }
    }

    /// Bytes the segment keeps.
    pub fn bytes(&self) -> u64 {
        let each = std::mem::size_of::<(u32, u64)>() + std::mem::size_of::<(u32, u32)>();
        (self.nodes.len() * each
            + self.exits.len() * std::mem::size_of::<Exit>()
            + (self.first.len() + self.reach.len()) * 12
            + self.dead_ends.len() * 8) as u64
    }

    /// (fewest edges from the start up to and including edge `e`, node it leaves from), if the
    /// segment takes `e`.
    #[cfg(test)]
    pub fn first_of(&self, e: usize) -> Option<(u32, u32)> {
        self.first.iter().find(|f| f.0 as usize == e).map(|&(_, d, u)| (d, u))
    }

    /// Edge indices of a path with the fewest edges from the start to `node`.
    pub fn path_to(&self, node: u32) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = node;
        while self.pred[at as usize] != NO_PRED {
            let (prev, e) = self.pred[at as usize];
            path.push(e as usize);
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
        let mut index = NodeIndex::new(m.places.len() as u64 * m.inner.space);
        let Ok(seg) = Segment::build(&m, start, m.outer.mask(m.outer.encode(&v)), 1 << 20, &mut index) else {
            panic!("the first segment has no cycle and fits")
        };
        assert!(seg.dead_ends.is_empty());
        let id = |e: usize| t.edges[e].id.as_str();
        let completed = t.edges.iter().position(|e| e.id == "checkpoint.completed").unwrap();
        let (d, node) = seg.first_of(completed).unwrap();
        let path: Vec<&str> = seg.path_to(node).into_iter().map(id).collect();
        assert_eq!(d as usize, path.len() + 1, "the distance counts the edge itself");
        // What the snapshot shows, on the shipped table: the shortest way to `completed` is
        // prepare.request, request.stream_opened, consume.end_turn. Exits are grouped by edge
        // and by the inner counters they leave behind: `next_turn` and the budget continuation
        // reset all per-turn counters but keep `fallbacks` and `autocompact_failures` (an
        // autocompaction that failed, or none: 4 targets each), and so does a structured-output
        // retry; a stop-hook block also keeps collapse, compaction and escalation (32 targets).
        // 12 calls before a terminal edge (the request, a collapse drain, a reactive
        // compaction, an escalation, 3 recoveries, 5 pause_turn continuations); each with 10
        // retries, plus the fallback and its 10 retries: 12 and 12 x 11 + 11.
        let mut exits: Vec<&str> = seg.exits.iter().map(|x| id(x.edge)).collect();
        exits.sort_unstable();
        exits.dedup();
        let count = |edge: &str| seg.exits.iter().filter(|x| id(x.edge) == edge).count();
        let per_edge: Vec<String> = exits.iter().map(|e| format!("  {e}: {}", count(e))).collect();
        insta::assert_snapshot!(
            "shipped_first_segment",
            format!(
                "completed after {d} edges: {}\nexits: {}\n{}\ncalls before a terminal edge: {:?}",
                path.join(" "),
                seg.exits.len(),
                per_edge.join("\n"),
                seg.terminal
            )
        );
    }
}
