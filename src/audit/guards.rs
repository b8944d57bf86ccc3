//! Guards decided by enumeration: for every leaf state and every event it handles (its own
//! edges and its superstates'), every assignment of the atoms those guards read must enable
//! exactly one edge. Boolean facts and `COUNTER_left` atoms range over `true`/`false`,
//! enumerated facts over their declared values.

use std::collections::{BTreeMap, BTreeSet};

use crate::audit::finding::{Code, Finding, Location};
use crate::engine::guard::{FactValue, Facts, Guard};
use crate::engine::table::{EdgeDecl, StateKind, Table};

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
}
