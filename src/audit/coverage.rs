//! Edge coverage across runs: which edges and reasons of a table a set of `--trace=jsonl`
//! recordings took, which they never did, and for each one never taken the built-in scenario
//! that takes it (`agentloop demo NAME` shows it happen).
//!
//! Every record of every run counts, subagents' runs included (they run the same table).
//! Each trace is also replayed against the table ([`crate::audit::trace::replay`]), so a
//! recording of another table, or a damaged one, is reported rather than counted silently.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::audit::trace::{TraceReport, replay};
use crate::engine::table::Table;
use crate::scenario::Scenario;
use crate::scenario::builtin::SCENARIOS;

/// What a set of traces covered of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// The table, as named to the user.
    pub table: String,
    /// Each trace's replay against the table (empty from [`tally`], which replays nothing).
    pub traces: Vec<TraceReport>,
    /// Runs read: each trace's main run and its subagents' runs.
    pub runs: usize,
    /// Every edge of the table, in file order.
    pub edges: Vec<EdgeCoverage>,
    /// Every reason of the table (continue and terminal), in file order.
    pub reasons: Vec<ReasonCoverage>,
    /// Edge ids the traces name that the table does not declare, with how often.
    pub unknown_edges: BTreeMap<String, u64>,
}

/// One edge's coverage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EdgeCoverage {
    /// The edge's id.
    pub id: String,
    /// Its source state.
    pub from: String,
    /// The event it is taken on.
    pub on: String,
    /// Its target state.
    pub to: String,
    /// `internal`, `continue` or `terminal`.
    pub kind: &'static str,
    /// The reason it names, if any.
    pub reason: Option<String>,
    /// How many records took it, over all traces.
    pub taken: u64,
    /// How many runs took it at least once.
    pub runs: usize,
    /// For an edge never taken: the built-in scenario that takes it in the fewest
    /// transitions (only for the shipped table, whose edges the scenarios' outcomes name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

/// One reason's coverage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReasonCoverage {
    /// The reason's name.
    pub name: String,
    /// `continue` or `terminal`.
    pub kind: &'static str,
    /// How many records named it.
    pub taken: u64,
    /// How many runs reached it at least once.
    pub runs: usize,
    /// For a reason never reached: the built-in scenario that reaches it in the fewest
    /// transitions (shipped table only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

impl Coverage {
    /// Edges taken at least once.
    pub fn edges_taken(&self) -> usize {
        self.edges.iter().filter(|e| e.taken > 0).count()
    }

    /// Reasons reached at least once.
    pub fn reasons_taken(&self) -> usize {
        self.reasons.iter().filter(|r| r.taken > 0).count()
    }

    /// Whether every trace replayed without a finding.
    pub fn traces_clean(&self) -> bool {
        self.traces.iter().all(|t| t.findings.is_empty())
    }
}

/// The coverage of `table` (named `table_path`) by `traces` (each a path and its text),
/// each trace also replayed against the table. `shipped` says whether the table is the
/// shipped one, whose edges the built-in scenarios' outcomes name, so they can be suggested
/// for what was never taken.
pub fn coverage(table: &Table, table_path: &str, traces: &[(String, String)], shipped: bool) -> Coverage {
    // The replay sets each subagent's run apart; coverage counts the edges of each run.
    let reports: Vec<TraceReport> = traces.iter().map(|(path, text)| replay(table, path, text)).collect();
    let runs = reports.iter().flat_map(|r| std::iter::once(&r.edges).chain(r.subagents.iter().map(|s| &s.edges)));
    let mut found = tally(table, table_path, runs.map(|edges| edges.iter().map(String::as_str)), shipped);
    found.traces = reports;
    found
}

/// The coverage of `table` by `runs`, each the ids of the edges it took in order, with no
/// replay ([`Coverage::traces`] empty): for a caller that has read the runs already, as
/// `agentloop trace view` has.
pub fn tally<'a, R>(table: &Table, table_path: &str, runs: impl IntoIterator<Item = R>, shipped: bool) -> Coverage
where
    R: IntoIterator<Item = &'a str>,
{
    let index: BTreeMap<&str, usize> = table.edges.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let reason_of: Vec<Option<usize>> = table
        .edges
        .iter()
        .map(|e| e.reason.as_deref().and_then(|r| table.reasons.iter().position(|d| d.name == r)))
        .collect();
    let mut taken = vec![0u64; table.edges.len()];
    let mut runs_taking = vec![0usize; table.edges.len()];
    let mut runs_reaching = vec![0usize; table.reasons.len()];
    let mut unknown_edges = BTreeMap::new();
    let mut run_count = 0;
    for run in runs {
        run_count += 1;
        let mut seen = vec![false; table.edges.len()];
        let mut reached = vec![false; table.reasons.len()];
        for edge in run {
            let Some(&i) = index.get(edge) else {
                *unknown_edges.entry(edge.to_owned()).or_insert(0) += 1;
                continue;
            };
            taken[i] += 1;
            seen[i] = true;
            if let Some(r) = reason_of[i] {
                reached[r] = true;
            }
        }
        for (i, seen) in seen.into_iter().enumerate() {
            runs_taking[i] += usize::from(seen);
        }
        for (r, reached) in reached.into_iter().enumerate() {
            runs_reaching[r] += usize::from(reached);
        }
    }
    let scenarios: &[(String, Vec<String>)] = if shipped { scenario_outcomes() } else { &[] };
    let fewest = |takes: &dyn Fn(&[String]) -> bool| {
        scenarios.iter().filter(|(_, edges)| takes(edges)).min_by_key(|(_, edges)| edges.len()).map(|(n, _)| n.clone())
    };
    let edges = table
        .edges
        .iter()
        .enumerate()
        .map(|(i, edge)| EdgeCoverage {
            id: edge.id.clone(),
            from: edge.from.clone(),
            on: edge.on.clone(),
            to: edge.to.clone(),
            kind: edge.kind.as_str(),
            reason: edge.reason.clone(),
            taken: taken[i],
            runs: runs_taking[i],
            scenario: if taken[i] == 0 { fewest(&|edges| edges.contains(&edge.id)) } else { None },
        })
        .collect::<Vec<_>>();
    let reasons = table
        .reasons
        .iter()
        .zip(runs_reaching)
        .map(|(reason, runs)| {
            let naming: Vec<&EdgeCoverage> =
                edges.iter().filter(|e| e.reason.as_deref() == Some(reason.name.as_str())).collect();
            let taken: u64 = naming.iter().map(|e| e.taken).sum();
            let ids: Vec<&str> = naming.iter().map(|e| e.id.as_str()).collect();
            ReasonCoverage {
                name: reason.name.clone(),
                kind: if reason.terminal { "terminal" } else { "continue" },
                taken,
                runs,
                scenario: if taken == 0 {
                    fewest(&|edges| edges.iter().any(|e| ids.contains(&e.as_str())))
                } else {
                    None
                },
            }
        })
        .collect();
    Coverage { table: table_path.to_owned(), traces: Vec::new(), runs: run_count, edges, reasons, unknown_edges }
}

/// Each built-in scenario's name and the edges its declared outcome takes (checked against
/// its run by the tests), parsed once.
fn scenario_outcomes() -> &'static [(String, Vec<String>)] {
    static OUTCOMES: std::sync::OnceLock<Vec<(String, Vec<String>)>> = std::sync::OnceLock::new();
    OUTCOMES.get_or_init(|| {
        SCENARIOS
            .iter()
            .filter_map(|(name, text)| {
                let outcome = Scenario::parse(name, text).ok()?.outcome?;
                Some(((*name).to_owned(), outcome.edges))
            })
            .collect()
    })
}

/// The coverage for people: the totals, every edge (taken ones with their counts, the rest
/// with the scenario that takes them), every reason, unknown edges, then each trace's replay.
pub fn text(coverage: &Coverage) -> String {
    let mut out = String::new();
    let records: usize =
        coverage.traces.iter().map(|t| t.records + t.subagents.iter().map(|s| s.records).sum::<usize>()).sum();
    let _ = writeln!(
        out,
        "agentloop audit --coverage: {}, {}, {}, against {}",
        count(coverage.traces.len(), "trace"),
        count(coverage.runs, "run"),
        count(records, "record"),
        coverage.table
    );
    let _ = writeln!(out, "edges: {} of {} taken", coverage.edges_taken(), coverage.edges.len());
    let id_width = coverage.edges.iter().map(|e| e.id.len()).max().unwrap_or(0);
    let move_width = coverage.edges.iter().map(|e| e.from.len() + e.to.len() + 4).max().unwrap_or(0);
    for edge in &coverage.edges {
        let arrow = format!("{} -> {}", edge.from, edge.to);
        let detail = if edge.taken > 0 {
            format!("{} in {}", times(edge.taken), count(edge.runs, "run"))
        } else {
            never(edge.scenario.as_deref())
        };
        let mark = if edge.taken > 0 { "taken" } else { "never" };
        let _ = writeln!(out, "  {mark:<5}  {:<id_width$}  {arrow:<move_width$}  {detail}", edge.id);
    }
    let _ = writeln!(out, "reasons: {} of {} reached", coverage.reasons_taken(), coverage.reasons.len());
    let name_width = coverage.reasons.iter().map(|r| r.name.len()).max().unwrap_or(0);
    for reason in &coverage.reasons {
        let detail = if reason.taken > 0 {
            format!("{} in {}", times(reason.taken), count(reason.runs, "run"))
        } else {
            never(reason.scenario.as_deref())
        };
        let mark = if reason.taken > 0 { "taken" } else { "never" };
        let _ = writeln!(out, "  {mark:<5}  {:<8}  {:<name_width$}  {detail}", reason.kind, reason.name);
    }
    for (edge, n) in &coverage.unknown_edges {
        let _ = writeln!(
            out,
            "unknown edge `{edge}`: {} name it; the table does not declare it",
            count(*n as usize, "record")
        );
    }
    for trace in &coverage.traces {
        let end = trace.terminal.as_deref().map_or("has no terminal".to_owned(), |r| format!("ends with `{r}`"));
        let status =
            if trace.findings.is_empty() { "ok".to_owned() } else { format!("{} finding(s)", trace.findings.len()) };
        let _ = writeln!(out, "trace {}: {} records, {end}: {status}", trace.path, trace.records);
        out.push_str(&crate::audit::report::findings_text(&trace.findings.iter().collect::<Vec<_>>()));
    }
    out
}

fn never(scenario: Option<&str>) -> String {
    match scenario {
        Some(name) => format!("`agentloop demo {name}` takes it"),
        None => "no built-in scenario takes it".to_owned(),
    }
}

/// `1 run`, `2 runs`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `once`, `7 times`.
fn times(n: u64) -> String {
    if n == 1 { "once".to_owned() } else { format!("{n} times") }
}

/// The coverage as one JSON object for machines.
pub fn json(coverage: &Coverage) -> Value {
    serde_json::json!({
        "schema": 1,
        "table": coverage.table,
        "runs": coverage.runs,
        "edges_taken": coverage.edges_taken(),
        "edges_total": coverage.edges.len(),
        "reasons_taken": coverage.reasons_taken(),
        "reasons_total": coverage.reasons.len(),
        "edges": coverage.edges,
        "reasons": coverage.reasons,
        "unknown_edges": coverage.unknown_edges,
        "traces": coverage.traces,
    })
}
