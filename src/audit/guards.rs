//! Guards decided by enumeration: for every leaf state and every event it handles (its own
//! edges and its superstates'), every assignment of the atoms those guards read must enable
//! exactly one edge. Boolean facts and `COUNTER_left` atoms range over `true`/`false`,
//! enumerated facts over their declared values. (Determinism is required for every assignment,
//! even of facts an entering edge `sets`.) [`partly_set_findings`] warns when a state's guards
//! read a fact that only some of the ways into the state set.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use crate::engine::table::{EdgeDecl, StateKind, Table};
use crate::table::finding::{Code, Finding, Location};
use crate::table::guard::{FactValue, Facts, Guard};

/// Above this many guard evaluations ([`search`]: each partial assignment judged costs one per
/// guard it judges) per (state, event) the check stops with a warning. Every pair of the
/// shipped table needs fewer than 2^17; `Consume`/`message_complete` with ten more retry
/// edges (`benches/audit/extra_counters.py 10`) between 2^22 and 2^23, its coverage check
/// walking the 3^10 ways no retry is enabled. The old enumeration's bound, 2^20 assignments
/// of every guard of a pair, was about as much work.
const MAX_WORK: usize = 1 << 23;

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

/// The position of each domain's value in `facts`, for ordering assignments as the odometer
/// meets them.
fn rank(domains: &[(String, Domain)], facts: &Facts) -> Vec<usize> {
    domains.iter().map(|(name, domain)| facts.get(name).and_then(|v| domain.position(v)).unwrap_or(0)).collect()
}

impl Domain {
    /// How many values it has.
    pub(crate) fn len(&self) -> usize {
        match self {
            Domain::Bool => 2,
            Domain::Values(v) => v.len(),
        }
    }

    /// Its value at `index` in enumeration order (`false` before `true`, values in declared
    /// order); `index` below [`Domain::len`].
    pub(crate) fn value(&self, index: usize) -> FactValue {
        match self {
            Domain::Bool => FactValue::Bool(index == 1),
            Domain::Values(v) => FactValue::Value(v[index].clone()),
        }
    }

    /// Where `value` is in enumeration order, if it is one of the domain's.
    fn position(&self, value: &FactValue) -> Option<usize> {
        match (self, value) {
            (Domain::Bool, FactValue::Bool(b)) => Some(usize::from(*b)),
            (Domain::Values(v), FactValue::Value(x)) => v.iter().position(|y| y == x),
            _ => None,
        }
    }
}

/// What [`search`] does with the assignments that extend a partial one, given each guard's
/// value under it (`None`: not decided yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Assign the next atom and judge each extension.
    Descend,
    /// None of them is wanted.
    Skip,
    /// All of them are wanted: hand the block to `take`.
    Take,
}

/// A [`search`] evaluated guards more often than its budget allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooMany;

/// A backtracking search over the assignments of `domains` on top of `base`, in the odometer
/// order of `domains` as given (the first atom varies slowest, `false` before `true`), with
/// [`Guard::eval_partial`]: `judge` sees each guard's three-valued value under a partial
/// assignment and says whether to descend, skip every extension or take them all; `take` gets
/// the first assignment of a taken block (the unassigned atoms at their first values) and how
/// many it holds (saturating), and may break. Guards that read two dozen atoms thus cost the
/// cases `judge` tells apart, not 2^24 assignments.
/// Under a complete assignment an undecided guard reads an atom outside `domains` and `base`,
/// and does not hold. Each partial assignment judged takes one unit of `budget` per guard;
/// past it the search stops with [`TooMany`].
pub(crate) fn search(
    domains: &[(String, Domain)],
    base: &Facts,
    guards: &[Option<&Guard>],
    budget: &mut usize,
    judge: &mut dyn FnMut(&[Option<bool>]) -> Verdict,
    take: &mut dyn FnMut(&Facts, u64) -> ControlFlow<()>,
) -> Result<(), TooMany> {
    let mut walker = Walker { domains, guards, budget: *budget, values: vec![None; guards.len()], judge, take };
    let flow = walker.walk(0, &mut base.clone());
    *budget = walker.budget;
    flow.map(|_| ())
}

/// The least (in odometer order) of the assignments [`search`] takes, if any: each block's
/// first assignment is its least whatever order the search assigns atoms in, so the least
/// of those is the one full enumeration would meet first.
fn least_taken(
    domains: &[(String, Domain)],
    base: &Facts,
    guards: &[Option<&Guard>],
    budget: &mut usize,
    judge: &mut dyn FnMut(&[Option<bool>]) -> Verdict,
) -> Result<Option<Facts>, TooMany> {
    let canonical = by_name(domains);
    let mut least: Option<(Vec<usize>, Facts)> = None;
    search(domains, base, guards, budget, judge, &mut |first, _| {
        let r = rank(&canonical, first);
        if least.as_ref().is_none_or(|(l, _)| r < *l) {
            least = Some((r, first.clone()));
        }
        ControlFlow::Continue(())
    })?;
    Ok(least.map(|(_, f)| f))
}

/// `domains` sorted by atom name: the odometer's order.
fn by_name(domains: &[(String, Domain)]) -> Vec<(String, Domain)> {
    let mut sorted = domains.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

/// `domains` in the order a search should assign them: the atoms most of `guards` read
/// first (they decide the most), ties by name.
fn by_use(domains: &[(String, Domain)], guards: &[Option<&Guard>]) -> Vec<(String, Domain)> {
    let read: Vec<BTreeMap<String, Vec<String>>> = guards.iter().flatten().map(|g| g.atoms()).collect();
    let uses = |name: &str| read.iter().filter(|a| a.contains_key(name)).count();
    let mut sorted = domains.to_vec();
    sorted.sort_by(|a, b| uses(&b.0).cmp(&uses(&a.0)).then_with(|| a.0.cmp(&b.0)));
    sorted
}

/// The first assignment [`search`] takes, if any (for existence: the order of `domains`
/// decides which one).
fn first_taken(
    domains: &[(String, Domain)],
    base: &Facts,
    guards: &[Option<&Guard>],
    budget: &mut usize,
    judge: &mut dyn FnMut(&[Option<bool>]) -> Verdict,
) -> Result<Option<Facts>, TooMany> {
    let mut found = None;
    search(domains, base, guards, budget, judge, &mut |first, _| {
        found = Some(first.clone());
        ControlFlow::Break(())
    })?;
    Ok(found)
}

/// The judge of a search for assignments under which every guard holds.
fn all_hold(v: &[Option<bool>]) -> Verdict {
    if v.contains(&Some(false)) {
        Verdict::Skip
    } else if v.iter().all(|x| *x == Some(true)) {
        Verdict::Take
    } else {
        Verdict::Descend
    }
}

struct Walker<'a, 'g> {
    domains: &'a [(String, Domain)],
    guards: &'a [Option<&'g Guard>],
    budget: usize,
    values: Vec<Option<bool>>,
    judge: &'a mut dyn FnMut(&[Option<bool>]) -> Verdict,
    take: &'a mut dyn FnMut(&Facts, u64) -> ControlFlow<()>,
}

impl Walker<'_, '_> {
    fn walk(&mut self, at: usize, facts: &mut Facts) -> Result<ControlFlow<()>, TooMany> {
        self.budget = self.budget.checked_sub(self.guards.len().max(1)).ok_or(TooMany)?;
        let complete = at == self.domains.len();
        for (slot, guard) in self.values.iter_mut().zip(self.guards) {
            let v = guard.map_or(Some(true), |g| g.eval_partial(facts));
            *slot = if complete { Some(v.unwrap_or(false)) } else { v };
        }
        match ((self.judge)(&self.values), complete) {
            (Verdict::Skip, _) | (Verdict::Descend, true) => Ok(ControlFlow::Continue(())),
            (Verdict::Take, _) => {
                let rest = &self.domains[at..];
                let mut first = facts.clone();
                for (name, domain) in rest {
                    first.entry(name.clone()).or_insert_with(|| domain.value(0));
                }
                let size = rest.iter().fold(1u64, |n, (_, d)| n.saturating_mul(d.len() as u64));
                Ok((self.take)(&first, size))
            }
            (Verdict::Descend, false) => {
                let (name, domain) = &self.domains[at];
                for index in 0..domain.len() {
                    facts.insert(name.clone(), domain.value(index));
                    let flow = self.walk(at + 1, facts);
                    if !matches!(flow, Ok(ControlFlow::Continue(()))) {
                        facts.remove(name);
                        return flow;
                    }
                }
                facts.remove(name);
                Ok(ControlFlow::Continue(()))
            }
        }
    }
}

/// Whether some assignment of the atoms `guard` reads that `base` leaves open makes it hold.
pub(crate) fn satisfiable(table: &Table, guard: Option<&Guard>, base: &Facts) -> bool {
    let free: Vec<(String, Domain)> =
        domains(table, guard).into_iter().filter(|(n, _)| !base.contains_key(n)).collect();
    // A guard whose cases pass the budget (none a person writes) counts as satisfiable: the
    // exploration then over-approximates, which keeps its worst case an upper bound.
    !matches!(first_taken(&free, base, &[guard], &mut MAX_WORK.clone(), &mut all_hold), Ok(None))
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
/// on some paths and not on others, which is usually a `sets` forgotten on an edge. A fact
/// declared `start_only` is meant to be free at the start alone: only an edge leaving it free
/// is reported.
pub fn partly_set_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for state in table.states.iter().filter(|s| s.kind == StateKind::Leaf) {
        let incoming: Vec<&EdgeDecl> = table.edges.iter().filter(|e| e.to == state.name).collect();
        for fact in facts_read(table, &state.name) {
            let (setting, free): (Vec<&EdgeDecl>, Vec<&EdgeDecl>) =
                incoming.iter().partition(|e| e.sets.contains_key(&fact));
            let start_only = table.fact(&fact).is_some_and(|f| f.start_only);
            let start = table.initial == state.name && !start_only;
            if setting.is_empty() || (free.is_empty() && !start) {
                continue;
            }
            let quote = |edges: &[&EdgeDecl]| edges.iter().map(|e| format!("`{}`", e.id)).collect::<Vec<_>>();
            let mut unset = quote(&free);
            if start {
                unset.push("the start of a run".into());
            }
            let mut m = format!(
                "the guards of `{}` read `{fact}`, which {} set{} but {} leave{} free",
                state.name,
                quote(&setting).join(", "),
                if setting.len() == 1 { "s" } else { "" },
                unset.join(", "),
                if unset.len() == 1 { "s" } else { "" }
            );
            if start_only {
                m.push_str(&format!(
                    " (`{fact}` is `start_only`: every edge into `{}` sets it, `sets = {{ {fact} = false }}`)",
                    state.name
                ));
            }
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
            let guards: Vec<Option<&Guard>> = edges.iter().map(|e| e.guard.as_ref()).collect();
            let doms = by_use(&domains(table, edges.iter().filter_map(|e| e.guard.as_ref())), &guards);
            let canonical = by_name(&doms);
            let mut budget = MAX_WORK;
            let mut group = || -> Result<(Vec<Finding>, Vec<bool>), TooMany> {
                let mut found = Vec::new();
                // Overlaps, in the order full enumeration meets them: by the first assignment
                // under which both hold, then by edge order.
                let mut overlaps = Vec::new();
                for i in 0..edges.len() {
                    for j in i + 1..edges.len() {
                        if seen_overlaps.contains(&(edges[i].id.as_str(), edges[j].id.as_str())) {
                            continue;
                        }
                        let pair = [guards[i], guards[j]];
                        if let Some(first) = least_taken(&doms, &Facts::new(), &pair, &mut budget, &mut all_hold)? {
                            overlaps.push((rank(&canonical, &first), i, j, first));
                        }
                    }
                }
                overlaps.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
                let mut only = vec![false; edges.len()];
                for (_, i, j, first) in overlaps {
                    let (a, b) = (edges[i], edges[j]);
                    seen_overlaps.insert((a.id.as_str(), b.id.as_str()));
                    let m = format!(
                        "edges `{}` and `{}` are both enabled in `{}` on `{event}` when {}",
                        a.id,
                        b.id,
                        state.name,
                        describe(&first)
                    );
                    let loc = Location { line: Some(b.line), ..at.clone() }.edge(&b.id);
                    found.push(Finding::new(Code::GuardOverlap, m, loc));
                }
                // Each edge the only one enabled somewhere, or it is shadowed.
                for (i, e) in edges.iter().enumerate() {
                    if unique.get(e.id.as_str()) == Some(&true) {
                        continue;
                    }
                    let mut alone = |v: &[Option<bool>]| {
                        let others = v.iter().enumerate().filter(|&(k, _)| k != i);
                        if v[i] == Some(false) || others.clone().any(|(_, x)| *x == Some(true)) {
                            Verdict::Skip
                        } else if v[i] == Some(true) && others.clone().all(|(_, x)| *x == Some(false)) {
                            Verdict::Take
                        } else {
                            Verdict::Descend
                        }
                    };
                    only[i] = first_taken(&doms, &Facts::new(), &guards, &mut budget, &mut alone)?.is_some();
                }
                // Coverage: the first assignment no guard holds under, and how many there are.
                let mut gap: Option<(Vec<usize>, Facts, u64)> = None;
                let mut none_hold = |v: &[Option<bool>]| {
                    if v.contains(&Some(true)) {
                        Verdict::Skip
                    } else if v.iter().all(|x| *x == Some(false)) {
                        Verdict::Take
                    } else {
                        Verdict::Descend
                    }
                };
                search(&doms, &Facts::new(), &guards, &mut budget, &mut none_hold, &mut |first, size| {
                    let r = rank(&canonical, first);
                    match &mut gap {
                        Some((least, facts, n)) => {
                            if r < *least {
                                (*least, *facts) = (r, first.clone());
                            }
                            *n = n.saturating_add(size);
                        }
                        None => gap = Some((r, first.clone(), size)),
                    }
                    ControlFlow::Continue(())
                })?;
                if let Some((_, facts, n)) = gap {
                    let m = format!(
                        "no edge out of `{}` on `{event}` is enabled when {} ({n} uncovered case{})",
                        state.name,
                        describe(&facts),
                        if n == 1 { "" } else { "s" }
                    );
                    found.push(Finding::new(Code::GuardGap, m, at.clone()));
                }
                Ok((found, only))
            };
            match group() {
                Ok((found, only)) => {
                    out.extend(found);
                    for (e, only) in edges.iter().zip(only) {
                        let known = unique.entry(&e.id).or_insert(false);
                        *known |= only;
                    }
                }
                Err(TooMany) => {
                    let m = format!(
                        "`{}` on `{event}`: telling the guards' cases apart takes more than {MAX_WORK} evaluations",
                        state.name
                    );
                    out.push(Finding::new(Code::ExplorationLimit, m, at));
                }
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
            let base: Facts = [(left.clone(), FactValue::Bool(false))].into();
            let doms: Vec<(String, Domain)> =
                domains(table, e.guard.iter()).into_iter().filter(|(n, _)| *n != left).collect();
            let at = Location::at(path, Some(e.line)).edge(&e.id);
            match least_taken(&doms, &base, &[e.guard.as_ref()], &mut MAX_WORK.clone(), &mut all_hold) {
                Ok(Some(facts)) => {
                    let m = format!("edge `{}` consumes `{c}` but is enabled when {}", e.id, describe(&facts));
                    out.push(Finding::new(Code::ConsumeUnguarded, m, at));
                }
                Ok(None) => {}
                Err(TooMany) => {
                    let m = format!(
                        "edge `{}`: telling its guard's cases apart takes more than {MAX_WORK} evaluations",
                        e.id
                    );
                    out.push(Finding::new(Code::ExplorationLimit, m, at));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    /// Every block a search takes when it takes whatever the atoms so far decide.
    fn decided_blocks(doms: &[(String, Domain)], guards: &[Option<&Guard>]) -> Vec<String> {
        let mut budget = usize::MAX;
        let mut judge =
            |v: &[Option<bool>]| if v.iter().all(Option::is_some) { Verdict::Take } else { Verdict::Descend };
        let mut taken = Vec::new();
        search(doms, &Facts::new(), guards, &mut budget, &mut judge, &mut |first, size| {
            taken.push(format!("{} x{size}", describe(first)));
            ControlFlow::Continue(())
        })
        .unwrap();
        taken
    }

    #[test]
    fn searches_follow_odometer_order_and_skip_decided_atoms() {
        let doms = vec![
            ("a".to_string(), Domain::Bool),
            ("b".to_string(), Domain::Bool),
            ("e".to_string(), Domain::Values(vec!["x".into(), "y".into()])),
        ];
        let g = Guard::parse("a && e == y").unwrap();
        assert_eq!(
            decided_blocks(&doms, &[Some(&g), None]),
            vec![
                "a=false, b=false, e=x x4",
                "a=true, b=false, e=x x1",
                "a=true, b=false, e=y x1",
                "a=true, b=true, e=x x1",
                "a=true, b=true, e=y x1",
            ]
        );
        let mut budget = 3;
        let mut judge = |_: &[Option<bool>]| Verdict::Descend;
        let r =
            search(&doms, &Facts::new(), &[Some(&g)], &mut budget, &mut judge, &mut |_, _| ControlFlow::Continue(()));
        assert_eq!(r, Err(TooMany));
    }

    #[test]
    fn two_dozen_atoms_cost_their_outcomes_not_their_assignments() {
        // `!x0 && … && !x23`: 2^24 assignments, 25 blocks; one holds it.
        let names: Vec<String> = (0..24).map(|i| format!("x{i:02}")).collect();
        let text = names.iter().map(|n| format!("!{n}")).collect::<Vec<_>>().join(" && ");
        let g = Guard::parse(&text).unwrap();
        let doms: Vec<(String, Domain)> = names.iter().map(|n| (n.clone(), Domain::Bool)).collect();
        let blocks = decided_blocks(&doms, &[Some(&g)]);
        assert_eq!(blocks.len(), 25);
        assert!(blocks[0].starts_with("x00=false") && blocks[0].ends_with(" x1"), "{}", blocks[0]);
        assert!(blocks[1].starts_with("x00=false") && blocks[1].ends_with("x23=true x1"), "{}", blocks[1]);
        assert!(blocks[24].starts_with("x00=true") && blocks[24].ends_with(&format!(" x{}", 1u64 << 23)));
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
            vec!["budget_wants_more", "hook_stop", "stop_hook", "structured_output", "tasks_pending", "tools_ran"]
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
