//! The static termination proof, valid for every bound: every cycle of the state graph passes
//! through an edge that consumes a counter, and the ranking (counters, highest first) never
//! increases along an edge of a cycle and strictly decreases along every consuming edge and
//! every continue edge. An edge that consumes `c` may reset only counters ranked below `c`.
//! With every consumption guarded by `c_left` (checked in `guards`), the ranking tuple is a
//! lexicographic variant: it strictly decreases around every cycle and cannot go below zero.

use std::collections::BTreeMap;

use crate::audit::graph::StateGraph;
use crate::engine::table::{EdgeKind, StateKind, Table};
use crate::table::finding::{Code, Finding, Location};

/// Ranking, cycle and decrease checks. `ranking_line` is the line of `[termination]`, if any.
pub fn termination_findings(table: &Table, path: &str, ranking_line: Option<usize>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut rank: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, name) in table.ranking.iter().enumerate() {
        if rank.insert(name, i).is_some() {
            let m = format!("counter `{name}` appears twice in the ranking");
            out.push(Finding::new(Code::CounterNotRanked, m, Location::at(path, ranking_line)));
        }
    }
    // The first position wins for a counter ranked twice.
    for (i, name) in table.ranking.iter().enumerate().rev() {
        rank.insert(name, i);
    }
    for c in &table.counters {
        if !rank.contains_key(c.name.as_str()) && table.edges.iter().any(|e| e.consumes.contains(&c.name)) {
            let m = format!("counter `{}` is consumed but missing from the termination ranking", c.name);
            out.push(Finding::new(Code::CounterNotRanked, m, Location::at(path, ranking_line)));
        }
    }

    let graph = StateGraph::new(table);
    let consuming = |e: usize| !table.edges[e].consumes.is_empty();
    // Whether edge `e` lies on a cycle of edges `allow` lets through (`e` itself included).
    let on_cycle_of = |e: usize, allow: &dyn Fn(usize) -> bool| {
        graph
            .succ
            .iter()
            .enumerate()
            .any(|(s, succ)| succ.iter().any(|&(x, t)| x == e && (t == s || graph.search(t, allow).reached[s])))
    };
    // Whether edge `x` consumes a counter ranked above every counter in `resets`.
    let outranks = |x: usize, resets: &[String]| {
        table.edges[x]
            .consumes
            .iter()
            .filter_map(|c| rank.get(c.as_str()))
            .any(|&c| resets.iter().all(|r| rank.get(r.as_str()).is_some_and(|&r| c < r)))
    };
    for (i, e) in table.edges.iter().enumerate() {
        let loc = Location::at(path, Some(e.line)).edge(&e.id);
        let top = e.consumes.iter().filter_map(|c| rank.get(c.as_str()).map(|&r| (r, c))).min();
        if let Some((top_rank, top_name)) = top {
            for r in &e.resets {
                if rank.get(r.as_str()).is_none_or(|&rr| rr <= top_rank) {
                    let m =
                        format!("edge `{}` consumes `{top_name}` but resets `{r}`, which is not ranked below it", e.id);
                    out.push(Finding::new(Code::RankingNotDecreasing, m, loc.clone()));
                }
            }
        } else if e.consumes.is_empty() {
            if e.kind == EdgeKind::Continue {
                let m =
                    format!("continue edge `{}` consumes no counter, so the ranking does not decrease along it", e.id);
                out.push(Finding::new(Code::RankingNotDecreasing, m, loc));
            } else if !e.resets.is_empty() && on_cycle_of(i, &|x| x == i || !outranks(x, &e.resets)) {
                // A cycle through it must pass an edge that consumes a counter ranked above
                // what it resets: then the ranking still decreases around the cycle.
                let m = format!(
                    "edge `{}` lies on a cycle and resets `{}` without consuming a counter, and the cycle \
                     consumes none ranked above it",
                    e.id, e.resets[0]
                );
                out.push(Finding::new(Code::RankingNotDecreasing, m, loc));
            }
        }
    }

    let free = |e: usize| !consuming(e);
    let from_start = graph.search(graph.initial, |_| true);
    let mut reported = vec![false; table.states.len()];
    for (s, state) in table.states.iter().enumerate() {
        if state.kind != StateKind::Leaf || reported[s] || !from_start.reached[s] {
            continue;
        }
        let Some(cycle) = graph.shortest_cycle(s, free) else { continue };
        let around = graph.search(s, free);
        for (t, done) in reported.iter_mut().enumerate() {
            if around.reached[t] && (t == s || graph.reaches(t, s, free)) {
                *done = true;
            }
        }
        let mut names = vec![state.name.as_str()];
        names.extend(cycle.iter().map(|&e| table.edges[e].to.as_str()));
        let m = format!(
            "the cycle {} ({}) consumes no counter, so nothing bounds it",
            names.join(" -> "),
            graph.ids(&cycle).join(", ")
        );
        let mut shown = graph.path(&from_start, s);
        shown.extend(&cycle);
        let loc = Location::at(path, Some(state.line)).state(&state.name);
        out.push(Finding::new(Code::UnboundedCycle, m, loc).with_path(graph.ids(&shown)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn the_shipped_ranking_decreases_on_every_cycle() {
        assert_eq!(termination_findings(shipped(), "loop.toml", None), vec![]);
    }

    #[test]
    fn a_reset_above_the_consumed_counter_is_caught() {
        let text = crate::engine::table::SHIPPED_TABLE.replace(
            "consumes = [\"recoveries\"]\nresets = [\"retries\", \"overloads\"]",
            "consumes = [\"recoveries\"]\nresets = [\"retries\", \"overloads\", \"escalations\"]",
        );
        assert_ne!(text, crate::engine::table::SHIPPED_TABLE);
        let t = Table::load("t.toml", &text).unwrap();
        let found: Vec<String> = termination_findings(&t, "t.toml", None).into_iter().map(|f| f.message).collect();
        assert_eq!(
            found,
            vec![
                "edge `recover.max_output_tokens_recovery` consumes `recoveries` but resets `escalations`, which is not ranked below it"
            ]
        );
    }
}
