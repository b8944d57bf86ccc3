//! The outer level of the exploration: a depth-first search over (segment start, outer counter
//! values) that finds cycles, then longest paths (worst-case calls) and shortest paths
//! (witnesses, edges taken) in topological order.

use std::fmt::Write as _;

use crate::audit::explore::model::{FastMap, Model};
use crate::audit::explore::refine::{self, Reach};
use crate::audit::explore::segment::{self, Cycle, NodeIndex, Segment};
use crate::audit::explore::split::{DEFAULT_MEMORY_CAP, Estimate, OUTER_NODE_BYTES, SEGMENT_NODE_BYTES};
use crate::audit::explore::{Calls, Exploration, Size, Witness, WorstCase};
use crate::audit::flow;
use crate::engine::table::Table;
use crate::table::finding::{Code, Finding, Location};

/// Most outer codes per segment start for which the search keeps a dense table of outer
/// nodes (16 MiB of `u32` per start) instead of a hash map.
const DENSE_OUTER: u64 = 1 << 22;

/// An outer node: a segment start and outer counter values, and its segment.
struct Outer {
    seg: u32,
    code: u64,
}

/// The outer nodes of one segment start, by outer code.
enum OuterIndex {
    Dense(Vec<u32>),
    Sparse(FastMap<u64, u32>),
}

impl OuterIndex {
    fn get(&self, code: u64) -> Option<u32> {
        match self {
            OuterIndex::Dense(d) => Some(d[code as usize]).filter(|&n| n != u32::MAX),
            OuterIndex::Sparse(m) => m.get(&code).copied(),
        }
    }

    fn insert(&mut self, code: u64, n: u32) {
        match self {
            OuterIndex::Dense(d) => d[code as usize] = n,
            OuterIndex::Sparse(m) => {
                m.insert(code, n);
            }
        }
    }
}

/// A segment start (place and inner counters): its outer nodes and its segments by outer mask.
struct Start {
    key: u64,
    index: OuterIndex,
    segs: FastMap<u64, u32>,
}

enum Stop {
    Cycle(Vec<usize>, Vec<usize>),
    /// The memory cap was reached while doing what the text says.
    Limit(&'static str),
}

struct Search<'m, 't> {
    model: &'m Model<'t>,
    segs: Vec<Segment>,
    starts: Vec<Start>,
    start_index: FastMap<u64, u32>,
    nodes: Vec<Outer>,
    scratch: NodeIndex,
    /// Bytes held: segments, outer nodes, dense tables.
    held: u64,
    cap: u64,
    /// Segment nodes over all segments built.
    segment_nodes: u64,
}

impl Search<'_, '_> {
    /// The index of segment start `key`, new if unseen.
    fn start_of(&mut self, key: u64) -> u32 {
        if let Some(&s) = self.start_index.get(&key) {
            return s;
        }
        let space = self.model.outer.space;
        let dense_bytes = space * 4;
        let index = if space <= DENSE_OUTER && self.held + dense_bytes <= self.cap / 4 {
            self.held += dense_bytes;
            OuterIndex::Dense(vec![u32::MAX; space as usize])
        } else {
            OuterIndex::Sparse(FastMap::default())
        };
        self.starts.push(Start { key, index, segs: FastMap::default() });
        self.start_index.insert(key, self.starts.len() as u32 - 1);
        self.starts.len() as u32 - 1
    }

    /// The outer node for (segment start, outer code), building its segment if new.
    fn intern(&mut self, start: u32, code: u64) -> Result<u32, Stop> {
        if let Some(n) = self.starts[start as usize].index.get(code) {
            return Ok(n);
        }
        if self.held + OUTER_NODE_BYTES > self.cap {
            return Err(Stop::Limit("adding an outer node"));
        }
        let mask = self.model.outer.mask(code);
        let seg = match self.starts[start as usize].segs.get(&mask) {
            Some(&s) => s,
            None => {
                let room = self.cap.saturating_sub(self.held + self.scratch.bytes()) / SEGMENT_NODE_BYTES;
                let key = self.starts[start as usize].key;
                let room = usize::try_from(room).unwrap_or(usize::MAX);
                let mut seg = Segment::build(self.model, key, mask, room, &mut self.scratch).map_err(|e| match e {
                    segment::Stop::Cycle(Cycle { prefix, cycle }) => Stop::Cycle(prefix, cycle),
                    segment::Stop::Limit => Stop::Limit("building a segment"),
                })?;
                for x in &mut seg.exits {
                    x.start = self.start_of(x.target);
                }
                self.held += seg.bytes();
                self.segment_nodes += seg.nodes.len() as u64;
                self.segs.push(seg);
                let s = self.segs.len() as u32 - 1;
                self.starts[start as usize].segs.insert(mask, s);
                s
            }
        };
        let n = self.nodes.len() as u32;
        self.nodes.push(Outer { seg, code });
        self.starts[start as usize].index.insert(code, n);
        self.held += OUTER_NODE_BYTES;
        Ok(n)
    }

    /// The outer node exit `i` of node `n` leads to, once the search has made it.
    fn succ(&self, n: usize, i: usize) -> u32 {
        let node = &self.nodes[n];
        let x = &self.segs[node.seg as usize].exits[i];
        let code = self.model.edges[x.edge].on_outer.apply(node.code);
        self.starts[x.start as usize].index.get(code).unwrap_or(u32::MAX)
    }

    /// Edges of the exits the frames took (each frame's last exit).
    fn frames_path(&self, frames: &[(u32, usize)]) -> Vec<usize> {
        let mut path = Vec::new();
        for &(n, next) in frames {
            let seg = &self.segs[self.nodes[n as usize].seg as usize];
            let x = &seg.exits[next - 1];
            path.extend(seg.path_to(x.node));
            path.push(x.edge);
        }
        path
    }

    /// Depth-first search from node 0; post-order.
    fn dfs(&mut self) -> Result<Vec<u32>, Stop> {
        let mut color: Vec<u8> = vec![1];
        let mut post = Vec::new();
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        while let Some(&(n, i)) = stack.last() {
            let node = &self.nodes[n as usize];
            let seg = &self.segs[node.seg as usize];
            let Some(x) = seg.exits.get(i) else {
                color[n as usize] = 2;
                post.push(n);
                stack.pop();
                continue;
            };
            let (target, code) = (x.start, self.model.edges[x.edge].on_outer.apply(node.code));
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let m = match self.intern(target, code) {
                Ok(m) => m,
                Err(Stop::Cycle(prefix, cycle)) => {
                    let mut full = self.frames_path(&stack);
                    full.extend(prefix);
                    return Err(Stop::Cycle(full, cycle));
                }
                Err(limit) => return Err(limit),
            };
            color.resize(self.nodes.len(), 0);
            match color[m as usize] {
                0 => {
                    color[m as usize] = 1;
                    stack.push((m, 0));
                }
                1 => {
                    let at = stack.iter().position(|f| f.0 == m).unwrap_or(0);
                    return Err(Stop::Cycle(self.frames_path(&stack[..at]), self.frames_path(&stack[at..])));
                }
                _ => {}
            }
        }
        Ok(post)
    }
}

/// One witness per reason some edge reaches: the run to the reason's edge with the fewest
/// edges before it (`distance`, `None` for an edge never reached; ties to the edge first in
/// the table), as `path` gives it. Continue reasons first, then terminal ones, each in
/// declaration order.
fn witnesses(
    table: &Table,
    distance: impl Fn(usize) -> Option<u64>,
    path: impl Fn(usize) -> Vec<String>,
) -> Vec<Witness> {
    let mut out = Vec::new();
    for terminal in [false, true] {
        for r in table.reasons.iter().filter(|r| r.terminal == terminal) {
            let pick = (0..table.edges.len())
                .filter(|&k| table.edges[k].reason.as_deref() == Some(r.name.as_str()))
                .filter_map(|k| distance(k).map(|d| (d, k)))
                .min();
            if let Some((_, k)) = pick {
                let kind = if terminal { "terminal" } else { "continue" };
                out.push(Witness { kind, reason: r.name.clone(), path: path(k) });
            }
        }
    }
    out
}

/// Witnesses, edges taken and edges no run takes from [`refine::reach_all`], for an
/// exploration that stopped at its cap.
fn refined(table: &Table, path: &str, model: &Model<'_>, cap: u64, result: &mut Exploration) {
    let ids = |p: &[usize]| p.iter().map(|&e| table.edges[e].id.clone()).collect::<Vec<_>>();
    let budget = usize::try_from(cap / refine::ABSTRACT_NODE_BYTES).unwrap_or(usize::MAX);
    let reach = refine::reach_all(model, budget);
    let length = |k: usize| match &reach[k] {
        Reach::Path(p) => Some(p.len() as u64),
        _ => None,
    };
    let run = |k: usize| match &reach[k] {
        Reach::Path(p) => ids(p),
        _ => Vec::new(),
    };
    result.witnesses = witnesses(table, length, run);
    result.taken = reach.iter().map(|r| matches!(r, Reach::Path(_) | Reach::Taken)).collect();
    result.undecided = (0..reach.len()).filter(|&k| reach[k] == Reach::Unknown).collect();
    for (e, _) in table.edges.iter().zip(&reach).filter(|(_, r)| **r == Reach::Never) {
        let m = format!(
            "edge `{}` is never taken: no path from the start reaches it, even with the counters its way \
             does not need left free",
            e.id
        );
        result.findings.push(Finding::new(Code::UnreachableEdge, m, Location::at(path, Some(e.line)).edge(&e.id)));
    }
}

/// Whole MiB, rounded up, for messages.
fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

fn max2(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0].max(b[0]), a[1].max(b[1])]
}

fn add(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

/// Explore `table` with the bound of the `max_turns` counter overridden if given, under the
/// default memory cap. `path` names the table in findings.
pub fn explore(table: &Table, path: &str, max_turns: Option<u32>) -> Exploration {
    explore_within(table, path, max_turns, DEFAULT_MEMORY_CAP)
}

/// [`explore`] holding at most `cap` bytes (as the exploration counts them: its nodes and
/// tables, not the allocator's overhead). Past the cap it stops with `W_EXPLORATION_LIMIT`,
/// saying what it held and its estimate of what the whole exploration needs.
pub fn explore_within(table: &Table, path: &str, max_turns: Option<u32>, cap: u64) -> Exploration {
    let ids = |p: &[usize]| p.iter().map(|&e| table.edges[e].id.clone()).collect::<Vec<_>>();
    let flow_bound = flow::flow_bound(table, max_turns).ok();
    let Some(model) = Model::new(table, max_turns) else {
        let f =
            Finding::new(Code::ExplorationLimit, "the counters cannot be encoded in 64 bits", Location::at(path, None));
        return Exploration {
            bounds: Vec::new(),
            outer_counters: Vec::new(),
            size: Size::default(),
            estimate: Estimate::default(),
            worst: None,
            flow_bound,
            stopped: None,
            undecided: Vec::new(),
            witnesses: Vec::new(),
            taken: vec![false; table.edges.len()],
            findings: vec![f],
        };
    };
    let mut result = Exploration {
        bounds: model.bounds.clone(),
        outer_counters: model.outer.counters.iter().map(|&c| model.bounds[c].name.clone()).collect(),
        size: Size::default(),
        estimate: model.estimate,
        worst: None,
        flow_bound,
        stopped: None,
        undecided: Vec::new(),
        witnesses: Vec::new(),
        taken: vec![false; table.edges.len()],
        findings: Vec::new(),
    };
    let values = model.initial_values();
    let scratch = NodeIndex::new(model.places.len() as u64 * model.inner.space);
    let held = scratch.bytes();
    let mut search = Search {
        model: &model,
        segs: Vec::new(),
        starts: Vec::new(),
        start_index: FastMap::default(),
        nodes: Vec::new(),
        scratch,
        held,
        cap,
        segment_nodes: 0,
    };
    let start = model.initial as u64 * model.inner.space + model.inner.encode(&values);
    let first = search.start_of(start);
    let post = search.intern(first, model.outer.encode(&values)).and_then(|_| search.dfs());
    let size = |s: &Search<'_, '_>| Size {
        outer_nodes: s.nodes.len(),
        segments: s.segs.len(),
        segment_nodes: s.segment_nodes as usize,
        node_visits: s.nodes.iter().map(|n| s.segs[n.seg as usize].nodes.len() as u64).sum(),
        bytes: s.held,
    };
    let post = match post {
        Ok(post) => post,
        Err(Stop::Cycle(prefix, cycle)) => {
            let m = format!(
                "the exploration found a cycle: after {} edge(s) from the start, the edges {} return to the same state and counter values",
                prefix.len(),
                ids(&cycle).join(", ")
            );
            let mut shown = ids(&prefix);
            shown.extend(ids(&cycle));
            let loc = Location::at(path, None).edge(&table.edges[cycle[0]].id);
            result.findings.push(Finding::new(Code::ProductCycle, m, loc).with_path(shown));
            return result;
        }
        Err(Stop::Limit(what)) => {
            let s = size(&search);
            drop(search);
            let e = model.estimate;
            let outer = if result.outer_counters.is_empty() { "none".into() } else { result.outer_counters.join(", ") };
            let note = format!(
                "the exploration reached its memory cap of {} MiB while {what}, holding {} MiB ({} outer nodes, \
                 {} segments with {} nodes); with these outer counters ({outer}) it needs at most about {} MiB \
                 ({} outer nodes, {} segment nodes)",
                mib(cap),
                mib(s.bytes),
                s.outer_nodes,
                s.segments,
                s.segment_nodes,
                mib(e.bytes),
                e.outer_nodes,
                e.segment_nodes,
            );
            result.size = s;
            refined(table, path, &model, cap, &mut result);
            let unknown: Vec<&str> = result.undecided.iter().map(|&k| table.edges[k].id.as_str()).collect();
            if !unknown.is_empty() || result.flow_bound.is_none() {
                let mut m = format!("{note}, so it proves no exact worst case");
                if result.flow_bound.is_none() {
                    m.push_str(" and the flow bound gives none");
                }
                if !unknown.is_empty() {
                    let _ = write!(
                        m,
                        "; the search for runs edge by edge could not tell within the cap whether a run takes {}",
                        unknown.join(", ")
                    );
                }
                m.push_str(": audit with a smaller `--max-turns`, or fewer counters");
                result.findings.push(Finding::new(Code::ExplorationLimit, m, Location::at(path, None)));
            }
            result.stopped = Some(note);
            return result;
        }
    };
    result.size = size(&search);
    let succ = |n: usize, i: usize| search.succ(n, i) as usize;
    let Search { ref segs, ref nodes, .. } = search;

    // Longest paths, children before parents.
    let mut run = vec![[0u64; 2]; nodes.len()];
    let mut turn = vec![[0u64; 2]; nodes.len()];
    for &n in &post {
        let n = n as usize;
        let seg = &segs[nodes[n].seg as usize];
        let mut r = seg.terminal.unwrap_or([0, 0]);
        let mut t = r;
        for (i, x) in seg.exits.iter().enumerate() {
            let m = succ(n, i);
            let w = model.edges[x.edge].calls;
            r = max2(r, add(add(x.long, w), run[m]));
            t = max2(t, if model.edges[x.edge].next_turn { x.long } else { add(add(x.long, w), turn[m]) });
        }
        run[n] = r;
        turn[n] = t;
    }
    let mut per_turn = turn[0];
    for (n, node) in nodes.iter().enumerate() {
        for (i, x) in segs[node.seg as usize].exits.iter().enumerate() {
            if model.edges[x.edge].next_turn {
                per_turn = max2(per_turn, add(model.edges[x.edge].calls, turn[succ(n, i)]));
            }
        }
    }
    let calls = |c: [u64; 2]| Calls { excluding_resends: c[0], including_resends: c[1] };
    result.worst = Some(WorstCase { per_turn: calls(per_turn), per_run: calls(run[0]) });
    drop(run);
    drop(turn);

    // Shortest paths, parents before children. A segment's first edges, states and dead ends
    // are reached soonest from its outer node with the fewest edges from the start (the first
    // such in this order), its representative.
    let mut dist = vec![u64::MAX; nodes.len()];
    let mut pred: Vec<(u32, u32)> = vec![(u32::MAX, 0); nodes.len()];
    dist[0] = 0;
    let mut rep: Vec<Option<(u64, u32, u32)>> = vec![None; segs.len()];
    for (pos, &n) in post.iter().rev().enumerate() {
        let n = n as usize;
        let s = nodes[n].seg as usize;
        if rep[s].is_none_or(|r| dist[n] < r.0) {
            rep[s] = Some((dist[n], pos as u32, n as u32));
        }
        for (i, x) in segs[s].exits.iter().enumerate() {
            let m = succ(n, i);
            let cand = dist[n] + u64::from(x.short) + 1;
            if cand < dist[m] {
                dist[m] = cand;
                pred[m] = (n as u32, i as u32);
            }
        }
    }
    // (distance, representative's position, outer node, segment node), the least wins.
    type Best = Option<(u64, u32, u32, u32)>;
    let closer = |slot: &mut Best, cand: (u64, u32, u32, u32)| {
        if slot.is_none_or(|b| (cand.0, cand.1) < (b.0, b.1)) {
            *slot = Some(cand);
        }
    };
    let mut best: Vec<Best> = vec![None; table.edges.len()];
    let mut best_state: Vec<Best> = vec![None; table.states.len()];
    let mut dead: Vec<Best> = vec![None; table.states.len()];
    for (seg, r) in segs.iter().zip(&rep) {
        let Some((d0, pos, n)) = *r else { continue };
        for &(k, d, u) in &seg.first {
            closer(&mut best[k as usize], (d0 + u64::from(d), pos, n, u));
        }
        for &(st, d, u) in &seg.reach {
            closer(&mut best_state[st as usize], (d0 + u64::from(d), pos, n, u));
        }
        for &(u, d) in &seg.dead_ends {
            let st = model.places[seg.nodes[u as usize].0 as usize].state;
            closer(&mut dead[st], (d0 + u64::from(d), pos, n, u));
        }
    }
    let outer_path = |mut n: u32| {
        let mut parts = Vec::new();
        while pred[n as usize].0 != u32::MAX {
            let (p, i) = pred[n as usize];
            let seg = &segs[nodes[p as usize].seg as usize];
            let x = &seg.exits[i as usize];
            let mut part = seg.path_to(x.node);
            part.push(x.edge);
            parts.push(part);
            n = p;
        }
        parts.into_iter().rev().flatten().collect::<Vec<usize>>()
    };
    let path_within = |n: u32, u: u32| {
        let mut p = outer_path(n);
        p.extend(segs[nodes[n as usize].seg as usize].path_to(u));
        p
    };
    let path_to_edge = |k: usize| {
        best[k].map(|(_, _, n, u)| {
            let mut p = path_within(n, u);
            p.push(k);
            p
        })
    };
    result.witnesses = witnesses(table, |k| best[k].map(|b| b.0), |k| ids(&path_to_edge(k).unwrap_or_default()));
    result.taken = best.iter().map(Option::is_some).collect();

    let mut values = values;
    for (state, (_, _, n, u)) in dead.iter().enumerate().filter_map(|(s, d)| d.map(|d| (s, d))) {
        let seg = &segs[nodes[n as usize].seg as usize];
        model.inner.decode(seg.nodes[u as usize].1, &mut values);
        model.outer.decode(nodes[n as usize].code, &mut values);
        let counters: Vec<String> = model.bounds.iter().zip(&values).map(|(b, v)| format!("{}={v}", b.name)).collect();
        let name = &table.states[state].name;
        let m = format!("in `{name}` with {}, no edge is enabled for any event and facts", counters.join(", "));
        let loc = Location::at(path, Some(table.states[state].line)).state(name);
        result.findings.push(Finding::new(Code::ProductDeadEnd, m, loc).with_path(ids(&path_within(n, u))));
    }
    for (_, e) in table.edges.iter().enumerate().filter(|(k, _)| !result.taken[*k]) {
        let loc = Location::at(path, Some(e.line)).edge(&e.id);
        let nearest = (0..table.states.len())
            .filter(|&s| table.ancestry(&table.states[s].name).contains(&e.from.as_str()))
            .filter_map(|s| best_state[s].map(|b| (b, s)))
            .min_by_key(|&((d, _, n, u), s)| (d, n, u, s));
        let finding = match nearest {
            Some(((_, _, n, u), s)) => {
                let guard = e.guard_text.as_deref().unwrap_or("true");
                let m = format!(
                    "edge `{}` is never taken in the exploration of (state x counters x facts): `{}` is reached, \
                     but its guard `{guard}` never holds there with the counters a run can have and the \
                     facts the edges into it set",
                    e.id, table.states[s].name
                );
                Finding::new(Code::UnreachableEdge, m, loc).with_path(ids(&path_within(n, u)))
            }
            None => {
                let m = format!("edge `{}` leaves `{}`, which the exploration never reaches", e.id, e.from);
                Finding::new(Code::UnreachableEdge, m, loc)
            }
        };
        result.findings.push(finding);
    }
    result
}
