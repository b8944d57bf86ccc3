//! Rendering an audit [`Report`]: a proof summary for people, JSON for machines.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::audit::Report;
use crate::audit::explore::{CALL_STATE, Exploration, WorstCase};
use crate::audit::guards::events_of;
use crate::engine::table::{EdgeKind, StateKind, Table};
use crate::table::finding::{Code, Finding, Severity};

/// Which part of the summary a finding belongs to.
fn section(code: Code) -> &'static str {
    use Code as C;
    match code {
        C::DuplicateName
        | C::UnknownParent
        | C::ParentNotSuperstate
        | C::ParentCycle
        | C::UnknownInitial
        | C::InitialNotLeaf
        | C::DuplicateEdgeId
        | C::UnknownState
        | C::UnknownEvent
        | C::UnknownCounter
        | C::UnknownReason
        | C::ContinueAndTerminal
        | C::BadReason
        | C::BadGuard
        | C::BadSets
        | C::TableRejected
        | C::MissingContinueReason
        | C::MissingTerminalReason
        | C::TargetNotLeaf
        | C::TerminalMismatch
        | C::EdgeFromTerminal
        | C::DeadEnd => "structure",
        C::EngineMismatch => "engine",
        C::GuardOverlap | C::GuardGap | C::ShadowedEdge | C::ConsumeUnguarded | C::FactPartlySet => "guards",
        C::UnreachableState | C::UnreachableEdge | C::NoPathToTerminal => "reachability",
        C::UnboundedCycle | C::RankingNotDecreasing | C::CounterNotRanked => "termination",
        C::ProductCycle | C::ProductDeadEnd | C::ExplorationLimit => "exploration",
        C::TraceJson
        | C::TraceHeader
        | C::TraceHash
        | C::TraceSeq
        | C::TraceUndeclaredEdge
        | C::TraceWrongState
        | C::TraceEdgeMismatch
        | C::TraceGuard
        | C::TraceCounters
        | C::TraceAfterTerminal
        | C::TraceNoTerminal
        | C::TraceRecord => "trace",
    }
}

/// `path` with runs of three or more repeated blocks (up to 8 edges) written `(a b) x3`.
pub fn compress(path: &[String]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < path.len() {
        let mut best = (1, 1);
        for len in 1..=8.min(path.len() - i) {
            let mut reps = 1;
            while i + (reps + 1) * len <= path.len() && path[i + reps * len..i + (reps + 1) * len] == path[i..i + len] {
                reps += 1;
            }
            if reps >= 3 && reps * len > best.0 * best.1 {
                best = (len, reps);
            }
        }
        if best.1 >= 3 {
            parts.push(format!("({}) x{}", path[i..i + best.0].join(" "), best.1));
            i += best.0 * best.1;
        } else {
            parts.push(path[i].clone());
            i += 1;
        }
    }
    parts.join(" ")
}

fn names(table: &Table, kind: StateKind) -> Vec<&str> {
    table.states.iter().filter(|s| s.kind == kind).map(|s| s.name.as_str()).collect()
}

fn max_turns(ex: &Exploration) -> Option<u32> {
    ex.bounds.iter().find(|b| b.option.as_deref() == Some("max_turns")).map(|b| b.bound)
}

fn summary(out: &mut String, table: &Table, ex: Option<&Exploration>, findings: &[&Finding], engine_checked: bool) {
    let leaves = names(table, StateKind::Leaf);
    let count = |f: fn(&EdgeKind) -> bool| table.edges.iter().filter(|e| f(&e.kind)).count();
    let _ = writeln!(out, "  sha256 {}", table.sha256);
    let _ = writeln!(
        out,
        "  states: {} leaves ({}), terminal {}, superstates {}; initial {}",
        leaves.len(),
        leaves.join(", "),
        names(table, StateKind::Terminal).join(", "),
        names(table, StateKind::Superstate).join(", "),
        table.initial
    );
    let _ = writeln!(
        out,
        "  edges: {} ({} internal, {} continue, {} terminal)",
        table.edges.len(),
        count(|k| *k == EdgeKind::Internal),
        count(|k| *k == EdgeKind::Continue),
        count(|k| *k == EdgeKind::Terminal)
    );
    if let Some(ex) = ex {
        out.push_str("  counters, in ranking order (highest first):\n");
        let ranked = table.ranking.iter().filter_map(|r| ex.bounds.iter().find(|b| b.name == *r));
        let width = ex.bounds.iter().map(|b| b.name.len()).max().unwrap_or(0).max(22);
        for b in ranked {
            let option = b.option.as_deref().map(|o| format!(", option {o}")).unwrap_or_default();
            let _ = writeln!(out, "    {:<width$} bound {:>3}, {:>3} at start{option}", b.name, b.bound, b.initial);
        }
    }
    let pairs: usize = leaves.iter().map(|s| events_of(table, s).len()).sum();
    let line = |out: &mut String, what: &str, good: String| {
        // The exploration's own findings, including those the report shows under another check.
        let own: Vec<&Finding> = match (what, ex) {
            ("exploration", Some(ex)) => ex.findings.iter().collect(),
            _ => findings.iter().copied().filter(|f| section(f.code) == what).collect(),
        };
        let mut codes: Vec<&str> = own.iter().map(|f| f.code.as_str()).collect();
        codes.dedup();
        let status = if own.is_empty() {
            format!("ok: {good}")
        } else {
            format!("{} finding(s): {}", own.len(), codes.join(", "))
        };
        let _ = writeln!(out, "  {what:<13} {status}");
    };
    out.push_str("checks\n");
    let reasons = |terminal: bool| {
        let declared: Vec<&str> =
            table.reasons.iter().filter(|r| r.terminal == terminal).map(|r| r.name.as_str()).collect();
        let used = declared.iter().filter(|r| table.edges.iter().any(|e| e.reason.as_deref() == Some(**r))).count();
        format!("{used}/{}", declared.len())
    };
    line(
        out,
        "structure",
        format!(
            "ids unique, names declared, {} continue and {} terminal reasons, no dead end",
            reasons(false),
            reasons(true)
        ),
    );
    if engine_checked {
        line(out, "engine", "every edge has its effect in this engine; states, events and facts are its own".into());
    }
    line(out, "guards", format!("exclusive and covering on all {pairs} (state, event) pairs, consumption guarded"));
    line(
        out,
        "reachability",
        format!("every state and edge reachable from {}, a terminal from every state", table.initial),
    );
    line(out, "termination", "every cycle consumes a counter; the ranking decreases along every continue edge".into());
    if let Some(ex) = ex {
        let s = ex.size;
        let explored = match &ex.stopped {
            None => format!(
                "{} outer nodes x {} segments ({} segment nodes, {} node visits): no cycle, no dead end, every edge taken",
                s.outer_nodes, s.segments, s.segment_nodes, s.node_visits
            ),
            Some(_) => format!(
                "stopped at its memory cap after {} outer nodes x {} segments ({} segment nodes); a search edge by \
                 edge, tracking only the counters each needs, took every edge",
                s.outer_nodes, s.segments, s.segment_nodes
            ),
        };
        line(out, "exploration", explored);
        let turns = max_turns(ex).map(|n| format!(" with max_turns = {n}")).unwrap_or_default();
        let figures = |out: &mut String, w: &WorstCase| {
            let _ = writeln!(
                out,
                "  per turn: at most {} model calls ({} counting retries and fallback)",
                w.per_turn.excluding_resends, w.per_turn.including_resends
            );
            let _ = writeln!(
                out,
                "  per run:  at most {} model calls ({} counting retries and fallback){turns}",
                w.per_run.excluding_resends, w.per_run.including_resends
            );
            let with = u64::from(crate::agents::host::MAX_SUBAGENTS_PER_RUN) + 1;
            let _ = writeln!(
                out,
                "  with subagents: at most {} model calls ({} counting retries and fallback): depth 1, and each \
                 of a run's at most {} subagents runs this table",
                w.per_run.excluding_resends * with,
                w.per_run.including_resends * with,
                crate::agents::host::MAX_SUBAGENTS_PER_RUN
            );
        };
        match (ex.worst, ex.flow_bound) {
            (Some(w), flow) => {
                let _ = writeln!(
                    out,
                    "worst case (entries into {CALL_STATE}; counters exact, facts free unless the edge into the state sets them)"
                );
                figures(out, &w);
                match flow {
                    Some(f) if f == w => out.push_str(
                        "  the flow bound over edge counts is the same: attained
",
                    ),
                    Some(f) => {
                        let _ = writeln!(
                            out,
                            "  the flow bound over edge counts is higher: {}/{} per turn, {}/{} per run",
                            f.per_turn.excluding_resends,
                            f.per_turn.including_resends,
                            f.per_run.excluding_resends,
                            f.per_run.including_resends
                        );
                    }
                    None => {}
                }
            }
            (None, Some(f)) if ex.stopped.is_some() => {
                let _ = writeln!(
                    out,
                    "worst case (entries into {CALL_STATE}; the flow bound over edge counts, an upper bound: every counter \
                     consumed at most its bound per reset)"
                );
                figures(out, &f);
            }
            (None, _) => {}
        }
        if ex.witnesses.is_empty() {
            out.push_str("witnesses: none, the exploration did not complete\n");
        } else {
            let _ = writeln!(out, "witnesses (shortest paths from {})", table.initial);
        }
        let width = ex.witnesses.iter().map(|w| w.reason.len()).max().unwrap_or(0).max(27);
        for w in &ex.witnesses {
            let _ = writeln!(out, "  {:<8} {:<width$} {}", w.kind, w.reason, compress(&w.path));
        }
    }
}

/// The proof summary for people.
pub fn text(report: &Report) -> String {
    let mut out = format!("agentloop audit: {}\n", report.table_path);
    let findings: Vec<&Finding> = report.all_findings().collect();
    if let Some(table) = &report.table {
        summary(&mut out, table, report.exploration.as_ref(), &findings, report.engine_checked);
    }
    if let Some(t) = &report.trace {
        let end =
            t.terminal.as_deref().map(|r| format!("ends with terminal `{r}`")).unwrap_or("has no terminal".into());
        let status = if t.findings.is_empty() { "ok".to_owned() } else { format!("{} finding(s)", t.findings.len()) };
        let _ = writeln!(out, "trace {}: {} records, {end}: {status}", t.path, t.records);
        for child in &t.subagents {
            let end = child
                .terminal
                .as_deref()
                .map(|r| format!("ends with terminal `{r}`"))
                .unwrap_or("has no terminal".into());
            let call = child.parent_tool_use_id.as_deref().map(|c| format!(" (for {c})")).unwrap_or_default();
            let _ = writeln!(out, "  subagent run {}{call}: {} records, {end}", child.run_id, child.records);
        }
    }
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    if findings.is_empty() {
        out.push_str("findings: none\n");
    } else {
        let _ = writeln!(out, "findings: {errors} error(s), {} warning(s)", findings.len() - errors);
    }
    out.push_str(&findings_text(&findings));
    out.push_str(if report.passed() { "PASS\n" } else { "FAIL\n" });
    out
}

/// One line per finding (and its witness path, if any), as the text report lists them.
pub fn findings_text(findings: &[&Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let severity = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let line = f.location.line.map(|l| format!(":{l}")).unwrap_or_default();
        let seq = f.location.seq.map(|s| format!(" (seq {s})")).unwrap_or_default();
        let _ = writeln!(out, "  {severity} {} {}{line}{seq}: {}", f.code, f.location.file, f.message);
        if !f.path.is_empty() {
            let _ = writeln!(out, "    path: {}", compress(&f.path));
        }
    }
    out
}

/// The worst case as JSON: the exploration's exact one, or after the memory cap the flow
/// bound; `method` says which, `flow_bound` is the bound either way.
fn worst_json(ex: &Exploration) -> Option<Value> {
    let w = ex.proven_worst()?;
    let method = if ex.worst.is_some() { "exploration" } else { "flow_bound" };
    let flow = ex.flow_bound.map(|f| json!({"per_turn": f.per_turn, "per_run": f.per_run}));
    Some(
        json!({"call_state": CALL_STATE, "per_turn": w.per_turn, "per_run": w.per_run, "method": method, "flow_bound": flow}),
    )
}

/// The report as JSON: result, table, findings, bounds, worst case, witnesses, trace.
pub fn json(report: &Report) -> Value {
    let findings: Vec<&Finding> = report.all_findings().collect();
    let table = report.table.as_ref().map(|t| {
        json!({"path": report.table_path, "sha256": t.sha256, "initial": t.initial,
               "states": t.states.len(), "edges": t.edges.len(), "ranking": t.ranking})
    });
    let ex = report.exploration.as_ref();
    json!({
        "schema": 1,
        "result": if report.passed() { "pass" } else { "fail" },
        "table": table,
        "findings": findings,
        "bounds": ex.map(|e| json!({"max_turns": max_turns(e), "counters": e.bounds, "outer_counters": e.outer_counters})),
        "worst_case": ex.and_then(worst_json),
        "witnesses": ex.map(|e| e.witnesses.clone()).unwrap_or_default(),
        "exploration": ex.map(|e| e.size),
        "trace": report.trace.as_ref().map(|t| json!({"path": t.path, "records": t.records, "terminal": t.terminal})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compresses_repeated_blocks() {
        let p: Vec<String> = ["a", "b", "c", "b", "c", "b", "c", "d", "d"].iter().map(|s| s.to_string()).collect();
        assert_eq!(compress(&p), "a (b c) x3 d d");
        assert_eq!(compress(&[]), "");
    }
}
