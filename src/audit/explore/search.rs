//! The outer level of the exploration: a depth-first search over (segment start, outer counter
//! values) that finds cycles, then longest paths (worst-case calls) and shortest paths
//! (witnesses, edges taken) in topological order.

use crate::audit::explore::model::{FastMap, Model};
use crate::audit::explore::segment::{Cycle, Segment};
use crate::audit::explore::{Calls, Exploration, Size, Witness, WorstCase};
use crate::engine::table::Table;
use crate::table::finding::{Code, Finding, Location};

/// Most outer nodes the search visits before giving up.
const OUTER_LIMIT: usize = 4_000_000;
/// Most nodes one segment may have.
const SEGMENT_LIMIT: usize = 1_000_000;

struct Outer {
    seg: u32,
    code: u64,
    succ: Vec<u32>,
}

enum Stop {
    Cycle(Vec<usize>, Vec<usize>),
    Limit(String),
}

struct Search<'m, 't> {
    model: &'m Model<'t>,
    segs: Vec<Segment>,
    seg_index: FastMap<(u64, u64), u32>,
    nodes: Vec<Outer>,
    index: FastMap<(u64, u64), u32>,
    buf: Vec<u32>,
}

impl Search<'_, '_> {
    /// The outer node for (segment start, outer code), building its segment if new.
    fn intern(&mut self, start: u64, code: u64) -> Result<u32, Stop> {
        if let Some(&n) = self.index.get(&(start, code)) {
            return Ok(n);
        }
        if self.nodes.len() >= OUTER_LIMIT {
            return Err(Stop::Limit(format!("more than {OUTER_LIMIT} outer nodes")));
        }
        self.model.outer.decode(code, &mut self.buf);
        let mask = Model::mask(&self.model.outer, &self.buf);
        let seg = match self.seg_index.get(&(start, mask)) {
            Some(&s) => s,
            None => {
                let seg = Segment::build(self.model, start, mask, SEGMENT_LIMIT).map_err(|e| match e {
                    Ok(Cycle { prefix, cycle }) => Stop::Cycle(prefix, cycle),
                    Err(()) => Stop::Limit(format!("a segment with more than {SEGMENT_LIMIT} nodes")),
                })?;
                self.segs.push(seg);
                self.seg_index.insert((start, mask), self.segs.len() as u32 - 1);
                self.segs.len() as u32 - 1
            }
        };
        self.nodes.push(Outer { seg, code, succ: Vec::new() });
        self.index.insert((start, code), self.nodes.len() as u32 - 1);
        Ok(self.nodes.len() as u32 - 1)
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
            let seg = &self.segs[self.nodes[n as usize].seg as usize];
            let Some(x) = seg.exits.get(i) else {
                color[n as usize] = 2;
                post.push(n);
                stack.pop();
                continue;
            };
            let (edge, target) = (x.edge, x.target);
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            self.model.outer.decode(self.nodes[n as usize].code, &mut self.buf);
            self.model.apply(edge, &mut self.buf);
            let m = match self.intern(target, self.model.outer.encode(&self.buf)) {
                Ok(m) => m,
                Err(Stop::Cycle(prefix, cycle)) => {
                    let mut full = self.frames_path(&stack);
                    full.extend(prefix);
                    return Err(Stop::Cycle(full, cycle));
                }
                Err(limit) => return Err(limit),
            };
            self.nodes[n as usize].succ.push(m);
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

fn max2(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0].max(b[0]), a[1].max(b[1])]
}

fn add(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

/// Explore `table` with the bound of the `max_turns` counter overridden if given.
/// `path` names the table in findings.
pub fn explore(table: &Table, path: &str, max_turns: Option<u32>) -> Exploration {
    let ids = |p: &[usize]| p.iter().map(|&e| table.edges[e].id.clone()).collect::<Vec<_>>();
    let Some(model) = Model::new(table, max_turns) else {
        let f =
            Finding::new(Code::ExplorationLimit, "the counters cannot be encoded in 64 bits", Location::at(path, None));
        return Exploration {
            bounds: Vec::new(),
            outer_counters: Vec::new(),
            size: Size::default(),
            worst: None,
            witnesses: Vec::new(),
            taken: vec![false; table.edges.len()],
            findings: vec![f],
        };
    };
    let mut result = Exploration {
        bounds: model.bounds.clone(),
        outer_counters: model.outer.counters.iter().map(|&c| model.bounds[c].name.clone()).collect(),
        size: Size::default(),
        worst: None,
        witnesses: Vec::new(),
        taken: vec![false; table.edges.len()],
        findings: Vec::new(),
    };
    let values = model.initial_values();
    let mut search = Search {
        model: &model,
        segs: Vec::new(),
        seg_index: FastMap::default(),
        nodes: Vec::new(),
        index: FastMap::default(),
        buf: values.clone(),
    };
    let start = model.initial as u64 * model.inner.space + model.inner.encode(&values);
    let post = search.intern(start, model.outer.encode(&values)).and_then(|_| search.dfs());
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
            let m = format!("the exploration stopped at {what}; no worst case or witnesses");
            result.findings.push(Finding::new(Code::ExplorationLimit, m, Location::at(path, None)));
            return result;
        }
    };
    let Search { segs, nodes, .. } = search;
    result.size = Size {
        outer_nodes: nodes.len(),
        segments: segs.len(),
        segment_nodes: segs.iter().map(|s| s.nodes.len()).sum(),
        node_visits: nodes.iter().map(|n| segs[n.seg as usize].nodes.len() as u64).sum(),
    };

    // Longest paths, children before parents.
    let mut run = vec![[0u64; 2]; nodes.len()];
    let mut turn = vec![[0u64; 2]; nodes.len()];
    for &n in &post {
        let node = &nodes[n as usize];
        let seg = &segs[node.seg as usize];
        let mut r = seg.terminal.unwrap_or([0, 0]);
        let mut t = r;
        for (x, &m) in seg.exits.iter().zip(&node.succ) {
            let w = model.edges[x.edge].calls;
            r = max2(r, add(add(x.long, w), run[m as usize]));
            t = max2(t, if model.edges[x.edge].next_turn { x.long } else { add(add(x.long, w), turn[m as usize]) });
        }
        run[n as usize] = r;
        turn[n as usize] = t;
    }
    let mut per_turn = turn[0];
    for node in &nodes {
        for (x, &m) in segs[node.seg as usize].exits.iter().zip(&node.succ) {
            if model.edges[x.edge].next_turn {
                per_turn = max2(per_turn, add(model.edges[x.edge].calls, turn[m as usize]));
            }
        }
    }
    let calls = |c: [u64; 2]| Calls { excluding_resends: c[0], including_resends: c[1] };
    result.worst = Some(WorstCase { per_turn: calls(per_turn), per_run: calls(run[0]) });

    // Shortest paths, parents before children.
    let mut dist = vec![u64::MAX; nodes.len()];
    let mut pred: Vec<Option<(u32, usize)>> = vec![None; nodes.len()];
    dist[0] = 0;
    let mut best: Vec<Option<(u64, u32, u32)>> = vec![None; table.edges.len()];
    let mut best_state: Vec<Option<(u64, u32, u32)>> = vec![None; table.states.len()];
    let closer = |slot: &mut Option<(u64, u32, u32)>, d: u64, n: u32, u: u32| {
        if slot.is_none_or(|b| d < b.0) {
            *slot = Some((d, n, u));
        }
    };
    for &n in post.iter().rev() {
        let node = &nodes[n as usize];
        let seg = &segs[node.seg as usize];
        for (k, first) in seg.first.iter().enumerate() {
            if let Some((d, u)) = *first {
                closer(&mut best[k], dist[n as usize] + u64::from(d), n, u);
            }
        }
        for (s, reach) in seg.reach.iter().enumerate() {
            if let Some((d, u)) = *reach {
                closer(&mut best_state[s], dist[n as usize] + u64::from(d), n, u);
            }
        }
        for (i, (x, &m)) in seg.exits.iter().zip(&node.succ).enumerate() {
            let cand = dist[n as usize] + u64::from(x.short) + 1;
            if cand < dist[m as usize] {
                dist[m as usize] = cand;
                pred[m as usize] = Some((n, i));
            }
        }
    }
    let outer_path = |mut n: u32| {
        let mut parts = Vec::new();
        while let Some((p, i)) = pred[n as usize] {
            let seg = &segs[nodes[p as usize].seg as usize];
            let mut part = seg.path_to(seg.exits[i].node);
            part.push(seg.exits[i].edge);
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
        best[k].map(|(_, n, u)| {
            let mut p = path_within(n, u);
            p.push(k);
            p
        })
    };
    // Continue reasons first, then terminal ones, each in declaration order.
    for terminal in [false, true] {
        for r in table.reasons.iter().filter(|r| r.terminal == terminal) {
            let pick = (0..table.edges.len())
                .filter(|&k| table.edges[k].reason.as_deref() == Some(r.name.as_str()))
                .filter_map(|k| best[k].map(|b| (b.0, k)))
                .min();
            if let Some((_, k)) = pick {
                let kind = if terminal { "terminal" } else { "continue" };
                let path = ids(&path_to_edge(k).unwrap_or_default());
                result.witnesses.push(Witness { kind, reason: r.name.clone(), path });
            }
        }
    }
    result.taken = best.iter().map(Option::is_some).collect();

    let mut dead: Vec<Option<(u64, u32, u32)>> = vec![None; table.states.len()];
    for &n in post.iter().rev() {
        let seg = &segs[nodes[n as usize].seg as usize];
        for &(u, d) in &seg.dead_ends {
            closer(&mut dead[model.places[seg.nodes[u as usize].0].state], dist[n as usize] + u64::from(d), n, u);
        }
    }
    let mut values = values;
    for (state, (_, n, u)) in dead.iter().enumerate().filter_map(|(s, d)| d.map(|d| (s, d))) {
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
            .min();
        let finding = match nearest {
            Some(((_, n, u), s)) => {
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
