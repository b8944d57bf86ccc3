//! Guards decided by enumeration: for every leaf state and every event it handles (its own
//! edges and its superstates'), every assignment of the atoms those guards read must enable
//! exactly one edge. Boolean facts and `COUNTER_left` atoms range over `true`/`false`,
//! enumerated facts over their declared values. (Determinism is required for every assignment,
//! even of facts an entering edge `sets`.) [`partly_set_findings`] warns when a state's guards
//! read a fact that only some of the ways into the state set.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::table::{EdgeDecl, StateKind, Table};
use crate::table::finding::{Code, Finding, Location};
use crate::table::guard::{FactValue, Facts, Guard};

/// Above this many assignments per (state, event) the check is skipped with a warning.
const MAX_ASSIGNMENTS: usize = 1 << 20;

/// The values one atom ranges over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Domain {
    /// A boolean fact or a `COUNTER_left` atom.
    Bool,
    /// An enumerated fact's declared values.
    Values(Vec<String>),
}

/// The atoms `guards` read, with their domains, sorted by name.
pub(crate) fn domains<'g>(table: &Table, guards: impl IntoIterator<Item = &'g Guard>) -> Vec<(String, Domain)> {
    let mut names = BTreeSet::new();
    for g in guards {
        names.extend(g.atoms().into_keys());
    }
    names
        .into_iter()
        .map(|name| {
            let domain = match table.facts.iter().find(|f| f.name == name) {
                Some(f) if !f.values.is_empty() => Domain::Values(f.values.clone()),
                _ => Domain::Bool,
            };
            (name, domain)
        })
        .collect()
}

/// How many assignments `domains` has, if it fits in `usize`.
pub(crate) fn count(domains: &[(String, Domain)]) -> Option<usize> {
    domains.iter().try_fold(1usize, |acc, (_, d)| match d {
        Domain::Bool => acc.checked_mul(2),
        Domain::Values(v) => acc.checked_mul(v.len()),
    })
}

/// Every assignment of `domains`, in odometer order (the last atom varies fastest,
/// `false` before `true`, values in declared order).
pub(crate) fn assignments(domains: &[(String, Domain)]) -> impl Iterator<Item = Facts> + '_ {
    let total = count(domains).unwrap_or(0);
    (0..total).map(move |mut i| {
        let mut facts = Facts::new();
        for (name, domain) in domains.iter().rev() {
            let value = match domain {
                Domain::Bool => {
                    let v = FactValue::Bool(i % 2 == 1);
                    i /= 2;
                    v
                }
                Domain::Values(values) => {
                    let v = FactValue::Value(values[i % values.len()].clone());
                    i /= values.len();
                    v
                }
            };
            facts.insert(name.clone(), value);
        }
        facts
    })
}

/// Whether `edge` is enabled under `facts` (an edge without a guard always is).
/// A guard that reads an atom `facts` lacks counts as not enabled.
pub(crate) fn enabled(edge: &EdgeDecl, facts: &Facts) -> bool {
    edge.guard.as_ref().is_none_or(|g| g.eval(facts).unwrap_or(false))
}

/// `name=value, ...` for a message.
pub(crate) fn describe(facts: &Facts) -> String {
    facts.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// Events `state` handles: those of its edges and its superstates' edges, in declaration order.
pub(crate) fn events_of<'t>(table: &'t Table, state: &str) -> Vec<&'t str> {
    let ancestry = table.ancestry(state);
    table
        .events
        .iter()
        .map(|e| e.name.as_str())
        .filter(|ev| table.edges.iter().any(|e| e.on == *ev && ancestry.contains(&e.from.as_str())))
        .collect()
}

/// The facts (not `COUNTER_left` atoms) that the guards of edges out of `state` (or out of one
/// of its superstates) read, on any event.
pub(crate) fn facts_read(table: &Table, state: &str) -> BTreeSet<String> {
    let ancestry = table.ancestry(state);
    table
        .edges
        .iter()
        .filter(|e| ancestry.contains(&e.from.as_str()))
        .filter_map(|e| e.guard.as_ref())
        .flat_map(|g| g.atoms().into_keys())
        .filter(|atom| table.fact(atom).is_some())
        .collect()
}

/// A warning for every (leaf state, fact its guards read) where some edges into the state set
/// the fact and other edges, or the start of a run, leave it free: the auditor then fixes it
/// on some paths and not on others, which is usually a `sets` forgotten on an edge.
pub fn partly_set_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for state in table.states.iter().filter(|s| s.kind == StateKind::Leaf) {
        let incoming: Vec<&EdgeDecl> = table.edges.iter().filter(|e| e.to == state.name).collect();
        for fact in facts_read(table, &state.name) {
            let (setting, free): (Vec<&EdgeDecl>, Vec<&EdgeDecl>) =
                incoming.iter().partition(|e| e.sets.contains_key(&fact));
            let start = table.initial == state.name;
            if setting.is_empty() || (free.is_empty() && !start) {
                continue;
            }
            let quote = |edges: &[&EdgeDecl]| edges.iter().map(|e| format!("`{}`", e.id)).collect::<Vec<_>>();
            let mut unset = quote(&free);
            if start {
                unset.push("the start of a run".into());
            }
            let m = format!(
                "the guards of `{}` read `{fact}`, which {} set{} but {} leave{} free",
                state.name,
                quote(&setting).join(", "),
                if setting.len() == 1 { "s" } else { "" },
                unset.join(", "),
                if unset.len() == 1 { "s" } else { "" }
            );
            out.push(Finding::new(Code::FactPartlySet, m, Location::at(path, Some(state.line)).state(&state.name)));
        }
    }
    out
}

/// Exclusivity, coverage and shadowing of every (leaf state, event) group, and whether each
/// consuming edge's guard requires the counter it consumes.
pub fn guard_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut unique: BTreeMap<&str, bool> = BTreeMap::new();
    let mut seen_overlaps = BTreeSet::new();
    let mut seen_groups = BTreeSet::new();
    for state in table.states.iter().filter(|s| s.kind == StateKind::Leaf) {
        for event in events_of(table, &state.name) {
            let edges = table.edges_from(&state.name, event);
            let ids: Vec<&str> = edges.iter().map(|e| e.id.as_str()).collect();
            if !seen_groups.insert(ids.clone()) {
                continue;
            }
            let at = Location::at(path, Some(state.line)).state(&state.name).event(event);
            let doms = domains(table, edges.iter().filter_map(|e| e.guard.as_ref()));
            if count(&doms).is_none_or(|n| n > MAX_ASSIGNMENTS) {
                let m = format!("`{}` on `{event}`: the guards read too many atoms to enumerate", state.name);
                out.push(Finding::new(Code::ExplorationLimit, m, at));
                continue;
            }
            let mut gap: Option<(Facts, usize)> = None;
            for facts in assignments(&doms) {
                let on: Vec<&EdgeDecl> = edges.iter().copied().filter(|e| enabled(e, &facts)).collect();
                match on.as_slice() {
                    [] => gap.get_or_insert((facts.clone(), 0)).1 += 1,
                    [one] => {
                        unique.insert(&one.id, true);
                    }
                    several => {
                        for (i, a) in several.iter().enumerate() {
                            unique.entry(&a.id).or_insert(false);
                            for b in &several[i + 1..] {
                                if seen_overlaps.insert((a.id.as_str(), b.id.as_str())) {
                                    let m = format!(
                                        "edges `{}` and `{}` are both enabled in `{}` on `{event}` when {}",
                                        a.id,
                                        b.id,
                                        state.name,
                                        describe(&facts)
                                    );
                                    let loc = Location { line: Some(b.line), ..at.clone() }.edge(&b.id);
                                    out.push(Finding::new(Code::GuardOverlap, m, loc));
                                }
                            }
                        }
                    }
                }
            }
            for e in &edges {
                unique.entry(&e.id).or_insert(false);
            }
            if let Some((facts, n)) = gap {
                let m = format!(
                    "no edge out of `{}` on `{event}` is enabled when {} ({n} uncovered case{})",
                    state.name,
                    describe(&facts),
                    if n == 1 { "" } else { "s" }
                );
                out.push(Finding::new(Code::GuardGap, m, at));
            }
        }
    }
    for e in &table.edges {
        if unique.get(e.id.as_str()) == Some(&false) {
            let m = format!("edge `{}` is never the only enabled edge out of `{}` on `{}`", e.id, e.from, e.on);
            out.push(Finding::new(Code::ShadowedEdge, m, Location::at(path, Some(e.line)).edge(&e.id)));
        }
    }
    out.extend(consume_findings(table, path));
    out
}

/// An edge that consumes `c` must be enabled only when `c_left` holds, or the counter underflows.
fn consume_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &table.edges {
        for c in &e.consumes {
            let left = format!("{c}_left");
            let mut doms = domains(table, e.guard.iter());
            if !doms.iter().any(|(n, _)| *n == left) {
                doms.push((left.clone(), Domain::Bool));
            }
            let unguarded = assignments(&doms).find(|f| enabled(e, f) && f.get(&left) == Some(&FactValue::Bool(false)));
            if let Some(facts) = unguarded {
                let m = format!("edge `{}` consumes `{c}` but is enabled when {}", e.id, describe(&facts));
                out.push(Finding::new(Code::ConsumeUnguarded, m, Location::at(path, Some(e.line)).edge(&e.id)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn enumerates_in_odometer_order() {
        let doms =
            vec![("a".to_string(), Domain::Bool), ("e".to_string(), Domain::Values(vec!["x".into(), "y".into()]))];
        let all: Vec<String> = assignments(&doms).map(|f| describe(&f)).collect();
        assert_eq!(all, vec!["a=false, e=x", "a=false, e=y", "a=true, e=x", "a=true, e=y"]);
    }

    #[test]
    fn the_shipped_guards_are_exclusive_and_covering() {
        assert_eq!(guard_findings(shipped(), "loop.toml"), vec![]);
        assert_eq!(events_of(shipped(), "Request"), vec!["stream_opened", "request_failed", "abort"]);
    }

    #[test]
    fn lists_the_facts_a_state_reads() {
        let read = |s: &str| facts_read(shipped(), s).into_iter().collect::<Vec<_>>();
        assert_eq!(
            read("Checkpoint"),
            vec!["budget_wants_more", "hook_stop", "stop_hook", "structured_output", "tools_ran"]
        );
        assert_eq!(read("Recover"), vec!["cause", "compacted", "staged_collapses"]);
        assert_eq!(read("ExecuteTools"), Vec::<String>::new());
    }

    #[test]
    fn warns_when_only_some_edges_into_a_state_set_a_fact() {
        assert_eq!(partly_set_findings(shipped(), "loop.toml"), vec![]);
        let text = crate::engine::table::SHIPPED_TABLE.replacen("sets = { tools_ran = false }\n", "", 1);
        let table = Table::load("t.toml", &text).unwrap();
        let found = partly_set_findings(&table, "t.toml");
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].code, found[0].severity), (Code::FactPartlySet, crate::table::finding::Severity::Warning));
        assert_eq!(
            found[0].message,
            "the guards of `Checkpoint` read `tools_ran`, which `tools.done` sets but `consume.end_turn` leaves free"
        );
        assert_eq!(found[0].location.state.as_deref(), Some("Checkpoint"));
    }
}
