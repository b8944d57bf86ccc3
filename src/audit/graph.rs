//! The state graph of a table, guards ignored: leaf and terminal states as nodes, an edge
//! from a superstate copied onto every leaf below it. Reachability from the initial state,
//! co-reachability of a terminal state, and shortest paths as lists of edge ids.

use std::collections::VecDeque;

use crate::engine::table::{StateKind, Table};
use crate::table::finding::{Code, Finding, Location};

/// Successors of every state, by index into `Table::states`.
pub(crate) struct StateGraph<'t> {
    /// The table.
    pub table: &'t Table,
    /// For each state, `(edge index, target state index)` in edge order; empty for superstates.
    pub succ: Vec<Vec<(usize, usize)>>,
    /// Index of the initial state.
    pub initial: usize,
}

/// Result of a breadth-first search: for each state, the edge and state it was reached from.
pub(crate) struct Search {
    /// Whether each state was reached.
    pub reached: Vec<bool>,
    /// `(edge, previous state)` on a shortest path, `None` for the start and unreached states.
    pub pred: Vec<Option<(usize, usize)>>,
}

impl<'t> StateGraph<'t> {
    /// Build the graph of a loaded table (whose names all resolve).
    pub fn new(table: &'t Table) -> StateGraph<'t> {
        let index = |name: &str| table.states.iter().position(|s| s.name == name);
        let succ = table
            .states
            .iter()
            .map(|s| {
                if s.kind == StateKind::Superstate {
                    return Vec::new();
                }
                let ancestry = table.ancestry(&s.name);
                table
                    .edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| ancestry.contains(&e.from.as_str()))
                    .filter_map(|(i, e)| index(&e.to).map(|t| (i, t)))
                    .collect()
            })
            .collect();
        StateGraph { table, succ, initial: index(&table.initial).unwrap_or(0) }
    }

    /// Breadth-first search from `start` over the edges `allow` accepts.
    pub fn search(&self, start: usize, allow: impl Fn(usize) -> bool) -> Search {
        let n = self.succ.len();
        let mut reached = vec![false; n];
        let mut pred = vec![None; n];
        let mut queue = VecDeque::from([start]);
        reached[start] = true;
        while let Some(s) = queue.pop_front() {
            for &(e, t) in &self.succ[s] {
                if allow(e) && !reached[t] {
                    reached[t] = true;
                    pred[t] = Some((e, s));
                    queue.push_back(t);
                }
            }
        }
        Search { reached, pred }
    }

    /// Edge indices of the shortest path the search found to `to` (empty if unreached or the start).
    pub fn path(&self, search: &Search, to: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = to;
        while let Some((e, prev)) = search.pred[at] {
            path.push(e);
            at = prev;
        }
        path.reverse();
        path
    }

    /// Edge ids of `path`.
    pub fn ids(&self, path: &[usize]) -> Vec<String> {
        path.iter().map(|&e| self.table.edges[e].id.clone()).collect()
    }

    /// Whether a path over edges `allow` accepts leads from `from` to `to` (a state reaches itself
    /// only through at least one edge).
    pub fn reaches(&self, from: usize, to: usize, allow: impl Fn(usize) -> bool + Copy) -> bool {
        self.succ[from].iter().any(|&(e, t)| allow(e) && (t == to || self.search(t, allow).reached[to]))
    }

    /// Shortest path `from` back to `from` over edges `allow` accepts, as edge indices.
    pub fn shortest_cycle(&self, from: usize, allow: impl Fn(usize) -> bool + Copy) -> Option<Vec<usize>> {
        let mut best: Option<Vec<usize>> = None;
        for &(e, t) in &self.succ[from] {
            if !allow(e) {
                continue;
            }
            let search = self.search(t, allow);
            if search.reached[from] {
                let mut cycle = vec![e];
                cycle.extend(self.path(&search, from));
                if best.as_ref().is_none_or(|b| cycle.len() < b.len()) {
                    best = Some(cycle);
                }
            }
        }
        best
    }
}

/// Every leaf and terminal state reachable from the initial state, every edge taken by some
/// reachable state, and a terminal state reachable from every reachable state.
pub fn reachability_findings(table: &Table, path: &str) -> Vec<Finding> {
    let graph = StateGraph::new(table);
    let forward = graph.search(graph.initial, |_| true);
    let mut out = Vec::new();
    for (i, s) in table.states.iter().enumerate() {
        if s.kind != StateKind::Superstate && !forward.reached[i] {
            let m = format!("state `{}` is never reached from `{}`", s.name, table.initial);
            out.push(Finding::new(Code::UnreachableState, m, Location::at(path, Some(s.line)).state(&s.name)));
        }
    }
    for (i, e) in table.edges.iter().enumerate() {
        let taken = graph.succ.iter().enumerate().any(|(s, succ)| forward.reached[s] && succ.iter().any(|x| x.0 == i));
        if !taken {
            let m = format!("edge `{}` leaves `{}`, which is never reached from `{}`", e.id, e.from, table.initial);
            out.push(Finding::new(Code::UnreachableEdge, m, Location::at(path, Some(e.line)).edge(&e.id)));
        }
    }
    let terminals: Vec<usize> =
        table.states.iter().enumerate().filter(|(_, s)| s.kind == StateKind::Terminal).map(|(i, _)| i).collect();
    let mut ends = vec![false; table.states.len()];
    for &t in &terminals {
        ends[t] = true;
    }
    // Reverse search: keep adding states with an edge into a state known to end.
    let mut changed = true;
    while changed {
        changed = false;
        for (s, succ) in graph.succ.iter().enumerate() {
            if !ends[s] && succ.iter().any(|&(_, t)| ends[t]) {
                ends[s] = true;
                changed = true;
            }
        }
    }
    for (i, s) in table.states.iter().enumerate() {
        if s.kind == StateKind::Leaf && forward.reached[i] && !ends[i] {
            let m = format!("state `{}` is reachable but no path from it reaches a terminal state", s.name);
            let shown = graph.ids(&graph.path(&forward, i));
            out.push(
                Finding::new(Code::NoPathToTerminal, m, Location::at(path, Some(s.line)).state(&s.name))
                    .with_path(shown),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn finds_shortest_paths_and_cycles() {
        let t = shipped();
        let g = StateGraph::new(t);
        let s = g.search(g.initial, |_| true);
        let checkpoint = t.states.iter().position(|s| s.name == "Checkpoint").unwrap();
        // The shortest way in is a resumed session's cut tool phase.
        assert_eq!(g.ids(&g.path(&s, checkpoint)), vec!["prepare.resume_tools", "tools.done"]);
        let request = t.states.iter().position(|s| s.name == "Request").unwrap();
        assert_eq!(g.ids(&g.shortest_cycle(request, |_| true).unwrap()), vec!["request.retry"]);
        assert!(g.reaches(checkpoint, request, |_| true));
        assert_eq!(reachability_findings(t, "loop.toml"), vec![]);
    }
}
