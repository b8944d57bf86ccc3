//! The auditor against the shipped table, the broken tables under `tests/tables/`, a recorded
//! trace and edits of it, and the files kept in step with the table.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agentloop::audit::cli::{AuditArgs, AuditFormat, TableArgs, run_audit, run_table};
use agentloop::audit::explore::{Calls, Exploration, WorstCase};
use agentloop::audit::export::{DiagramFormat, render};
use agentloop::audit::{AuditOptions, Report, audit_table, audit_table_unexplored, report, trace};
use agentloop::engine::clock::VirtualClock;
use agentloop::engine::run::header;
use agentloop::engine::table::{SHIPPED_TABLE, shipped};
use agentloop::harness::{run_scenario, scenario_options};
use agentloop::scenario::Scenario;
use agentloop::scenario::builtin::SCENARIOS;
use agentloop::table::finding::Finding;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The JSONL trace of a real run of the `read-greeting` scenario (a turn that reads a file,
/// then the answer: 9 records) against the shipped table, as `--trace=jsonl` writes it. The
/// broken traces below are this one edited, so a change of the table changes no fixture.
fn recorded_trace() -> &'static str {
    static TRACE: OnceLock<String> = OnceLock::new();
    TRACE.get_or_init(|| {
        let (_, text) = SCENARIOS.iter().find(|(n, _)| *n == "read-greeting").unwrap();
        let scenario = Scenario::parse("read-greeting", text).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let run = rt.block_on(run_scenario(&scenario, dir.path(), Arc::new(VirtualClock::new()))).unwrap();
        let mut text = serde_json::to_string(&header(&scenario_options(&scenario))).unwrap();
        for record in &run.outcome.trace {
            text.push('\n');
            text.push_str(&serde_json::to_string(record).unwrap());
        }
        text.push('\n');
        text
    })
}

/// The recorded trace's lines as JSON, for editing.
fn trace_lines() -> Vec<Value> {
    recorded_trace().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Lines back to JSONL.
fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

/// The recorded trace with record `seq` (line `seq + 1`) edited by `edit`.
fn edited(seq: usize, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    let mut lines = trace_lines();
    edit(lines[seq].as_object_mut().unwrap());
    jsonl(&lines)
}

/// The recorded trace, written to a file for the commands that read one.
fn trace_file() -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
    std::fs::write(file.path(), recorded_trace()).unwrap();
    file
}

fn shipped_report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| audit_table("transitions/loop.toml", SHIPPED_TABLE, &AuditOptions::default()).unwrap())
}

/// (code, line) of every finding, in report order.
fn codes(findings: &[Finding]) -> Vec<(&'static str, Option<usize>)> {
    findings.iter().map(|f| (f.code.as_str(), f.location.line)).collect()
}

fn audit_file(rel: &str) -> Report {
    audit_table(rel, &read(rel), &AuditOptions::default()).unwrap()
}

fn ids(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| s.to_string()).collect()
}

/// The figures of an exploration a reader checks: bounds, worst cases, split and size, and
/// each reason's witness length, one per line (the snapshots below hold them).
fn figures(ex: &agentloop::audit::explore::Exploration) -> String {
    let mut out = String::new();
    let line = |w: &WorstCase| {
        format!(
            "per turn: {} model calls ({} with resends)\nper run:  {} model calls ({} with resends)\n",
            w.per_turn.excluding_resends,
            w.per_turn.including_resends,
            w.per_run.excluding_resends,
            w.per_run.including_resends
        )
    };
    match (ex.worst, ex.flow_bound) {
        (Some(w), Some(f)) if f == w => out.push_str(&format!("{}flow bound: attained\n", line(&w))),
        (Some(w), Some(f)) => out.push_str(&format!("{}flow bound: higher\n{}", line(&w), line(&f))),
        (Some(w), None) => out.push_str(&line(&w)),
        (None, Some(f)) => out.push_str(&format!("{}from the flow bound, past the memory cap\n", line(&f))),
        (None, None) => {}
    }
    out.push_str(&format!("outer counters: {}\n", ex.outer_counters.join(", ")));
    out.push_str(&format!("outer nodes: {}, segments: {}\n", ex.size.outer_nodes, ex.size.segments));
    for w in &ex.witnesses {
        out.push_str(&format!("{} {}: {} edges\n", w.kind, w.reason, w.path.len()));
    }
    out
}

/// The worst case is proven and consistent, every edge is taken, and the figures are the
/// snapshot's.
#[test]
fn the_shipped_table_passes_with_its_worst_case() {
    let r = shipped_report();
    assert_eq!(r.findings, vec![]);
    assert_eq!(r.exit_code(), 0);
    let ex = r.exploration.as_ref().unwrap();
    let worst = ex.proven_worst().expect("the worst case is proven");
    assert!(worst.per_turn.excluding_resends <= worst.per_turn.including_resends);
    assert!(worst.per_turn.excluding_resends <= worst.per_run.excluding_resends);
    assert!(worst.per_turn.including_resends <= worst.per_run.including_resends);
    let turns = ex.bounds.iter().find(|b| b.name == "turns").unwrap();
    assert_eq!((turns.bound, turns.initial), (100, 99));
    assert_eq!(ex.taken, vec![true; shipped().edges.len()], "every edge is taken by some run");
    insta::assert_snapshot!("shipped_table_figures", figures(ex));
}

/// Every reason the table declares has a witness, the shortest run that reaches it.
#[test]
fn the_shipped_table_has_a_witness_for_every_reason() {
    let ex = shipped_report().exploration.as_ref().unwrap();
    let reasons: Vec<&str> = shipped()
        .reasons
        .iter()
        .filter(|r| !r.terminal)
        .map(|r| r.name.as_str())
        .chain(shipped().reasons.iter().filter(|r| r.terminal).map(|r| r.name.as_str()))
        .collect();
    let witnessed: Vec<&str> = ex.witnesses.iter().map(|w| w.reason.as_str()).collect();
    assert_eq!(witnessed, reasons, "one witness per reason, continue reasons first");
    for w in &ex.witnesses {
        let last = shipped().edge(w.path.last().unwrap()).unwrap();
        assert_eq!(last.reason.as_deref(), Some(w.reason.as_str()), "{}'s witness ends on an edge with it", w.reason);
        assert_eq!(shipped().edge(&w.path[0]).unwrap().from, shipped().initial, "{} starts at the start", w.reason);
    }
    let path = |reason: &str| &ex.witnesses.iter().find(|w| w.reason == reason).unwrap().path;
    // The shortest run to `completed` finishes a resumed session's cut tool phase, then ends
    // on a structured answer it gave before the kill.
    assert_eq!(path("completed"), &ids(&["prepare.resume_tools", "tools.done", "checkpoint.structured_output"]));
    // Facts an edge sets are fixed in the state it enters: Recover truncates only after a
    // truncated reply, and a turn goes on only after its tools ran.
    assert_eq!(
        path("max_output_tokens_escalate"),
        &ids(&["prepare.request", "request.stream_opened", "consume.truncated", "recover.max_output_tokens_escalate"])
    );
    assert_eq!(
        path("max_output_tokens_recovery"),
        &ids(&[
            "prepare.request",
            "request.stream_opened",
            "consume.truncated",
            "recover.max_output_tokens_escalate",
            "request.stream_opened",
            "consume.truncated",
            "recover.max_output_tokens_recovery"
        ])
    );
    assert_eq!(path("next_turn"), &ids(&["prepare.resume_tools", "tools.done", "checkpoint.next_turn"]));
    assert_eq!(
        path("collapse_drain_retry"),
        &ids(&["prepare.request", "request.prompt_too_long", "recover.collapse_drain_retry"])
    );
    // Ctrl+C while a resumed session's cut tool phase runs.
    assert_eq!(path("aborted_tools"), &ids(&["prepare.resume_tools", "acting.abort"]));
    insta::assert_snapshot!("shipped_max_turns_witness", report::compress(path("max_turns")));
}

#[test]
fn the_text_summary_states_the_proof() {
    let text = report::text(shipped_report());
    let edges = &shipped().edges;
    let count = |kind: &str| edges.iter().filter(|e| e.kind.as_str() == kind).count();
    let ex = shipped_report().exploration.as_ref().unwrap();
    let worst = ex.proven_worst().unwrap();
    // The heading says how the worst case was proven: exactly, or past the exploration's
    // memory cap by the flow bound.
    let (heading, attained) = match ex.worst {
        Some(_) => (
            "worst case (entries into Request; counters exact, facts free unless the edge into the state sets them)\n",
            "  the flow bound over edge counts is the same: attained\n",
        ),
        None => (
            "worst case (entries into Request; the flow bound over edge counts, an upper bound: every counter \
             consumed at most its bound per reset)\n",
            "",
        ),
    };
    for line in [
        "agentloop audit: transitions/loop.toml\n".to_owned(),
        format!(
            "  edges: {} ({} internal, {} continue, {} terminal)\n",
            edges.len(),
            count("internal"),
            count("continue"),
            count("terminal")
        ),
        heading.to_owned(),
        format!(
            "  per turn: at most {} model calls ({} counting retries and fallback)\n",
            worst.per_turn.excluding_resends, worst.per_turn.including_resends
        ),
        format!(
            "  per run:  at most {} model calls ({} counting retries and fallback) with max_turns = 100\n",
            worst.per_run.excluding_resends, worst.per_run.including_resends
        ),
        attained.to_owned(),
        "  terminal blocking_limit                    prepare.blocking_limit\n".to_owned(),
        "  terminal budget_exhausted                  prepare.request request.budget_exhausted\n".to_owned(),
        "findings: none\nPASS\n".to_owned(),
    ] {
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    let json = report::json(shipped_report());
    assert_eq!(json["result"], "pass");
    assert_eq!(json["worst_case"]["per_run"]["including_resends"], worst.per_run.including_resends);
    assert_eq!(json["worst_case"]["method"], if ex.worst.is_some() { "exploration" } else { "flow_bound" });
    let flow = ex.flow_bound.unwrap();
    assert_eq!(json["worst_case"]["flow_bound"]["per_turn"]["excluding_resends"], flow.per_turn.excluding_resends);
    assert_eq!(json["bounds"]["max_turns"], 100);
    assert_eq!(json["witnesses"].as_array().unwrap().len(), shipped().reasons.len());
}

/// `--max-turns` bounds the run, not a turn: the per-turn worst case stays, the per-run one
/// shrinks, and the `max_turns` witness takes the three turns.
#[test]
fn max_turns_bounds_the_run() {
    let r = audit_table(
        "transitions/loop.toml",
        SHIPPED_TABLE,
        &AuditOptions { max_turns: Some(3), ..AuditOptions::default() },
    )
    .unwrap();
    assert_eq!(r.findings, vec![]);
    let ex = r.exploration.as_ref().unwrap();
    let worst = ex.proven_worst().unwrap();
    let shipped_worst = shipped_report().exploration.as_ref().unwrap().proven_worst().unwrap();
    assert_eq!(worst.per_turn, shipped_worst.per_turn);
    assert!(worst.per_run.including_resends < shipped_worst.per_run.including_resends);
    insta::assert_snapshot!("max_turns_3_figures", figures(ex));

    // Past a small memory cap the worst case is the flow bound, and the search edge by edge
    // finds witnesses exactly as short as the exploration's and takes the same edges.
    let options = AuditOptions { max_turns: Some(3), memory_cap: Some(16 << 20), ..AuditOptions::default() };
    let capped = audit_table("transitions/loop.toml", SHIPPED_TABLE, &options).unwrap();
    assert_eq!(capped.findings, vec![]);
    let cx = capped.exploration.as_ref().unwrap();
    assert!(cx.stopped.as_deref().is_some_and(|m| m.starts_with("the exploration reached its memory cap of 16 MiB")));
    assert_eq!((cx.worst, cx.proven_worst()), (None, ex.flow_bound));
    let lengths = |e: &Exploration| e.witnesses.iter().map(|w| (w.reason.clone(), w.path.len())).collect::<Vec<_>>();
    assert_eq!(lengths(cx), lengths(ex));
    assert_eq!(cx.taken, ex.taken);
    let json = report::json(&capped);
    assert_eq!((json["result"].as_str(), json["worst_case"]["method"].as_str()), (Some("pass"), Some("flow_bound")));
    assert_eq!(json["worst_case"]["per_run"]["including_resends"], ex.flow_bound.unwrap().per_run.including_resends);
    assert!(report::text(&capped).contains(
        "worst case (entries into Request; the flow bound over edge counts, an upper bound: every counter consumed at \
         most its bound per reset)\n"
    ));
}

/// The base of the broken tables, `tests/tables/small.toml`, audits clean; each broken one
/// differs from it in one place (its first comment says where).
#[test]
fn the_small_table_passes() {
    let r = audit_file("tests/tables/small.toml");
    assert_eq!(r.findings, vec![]);
    let ex = r.exploration.as_ref().unwrap();
    let max_turns = ex.witnesses.iter().find(|w| w.reason == "max_turns").unwrap();
    assert_eq!(max_turns.path, ids(&["work.next_turn", "work.next_turn", "work.next_turn", "work.max_turns"]));
}

#[test]
fn a_dead_end_state_is_caught() {
    let r = audit_file("tests/tables/dead_end.toml");
    assert_eq!(
        codes(&r.findings),
        vec![
            ("E_DEAD_END", Some(10)),
            ("E_NO_PATH_TO_TERMINAL", Some(10)),
            ("E_PRODUCT_DEAD_END", Some(10)),
            // With `Review` in the way, no run spends its turns in `Work`.
            ("E_UNREACHABLE_EDGE", Some(66)),
        ]
    );
    assert_eq!(r.findings[1].path, ids(&["work.next_turn"]));
    assert_eq!(r.findings[2].path, ids(&["work.next_turn"]));
    assert_eq!(r.findings[2].message, "in `Review` with turns=2, no edge is enabled for any event and facts");
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn an_edge_no_counter_values_enable_is_caught() {
    let r = audit_file("tests/tables/unreachable_edge.toml");
    assert_eq!(codes(&r.findings), vec![("E_UNREACHABLE_EDGE", Some(46))]);
    assert_eq!(r.findings[0].location.edge.as_deref(), Some("work.next_turn"));
    assert_eq!(
        r.findings[0].message,
        "edge `work.next_turn` is never taken in the exploration of (state x counters x facts): `Work` is \
         reached, but its guard `!finished && turns_left` never holds there with the counters a run can have and \
         the facts the edges into it set"
    );
    assert_eq!(r.findings[0].path, ids(&[]));
}

#[test]
fn an_unreachable_state_and_its_edge_are_caught() {
    let r = audit_file("tests/tables/unreachable_state.toml");
    assert_eq!(codes(&r.findings), vec![("E_UNREACHABLE_STATE", Some(10)), ("E_UNREACHABLE_EDGE", Some(74))]);
    assert_eq!(r.findings[1].message, "edge `idle.wake` leaves `Idle`, which is never reached from `Work`");
}

#[test]
fn an_unbounded_cycle_is_caught() {
    let r = audit_file("tests/tables/unbounded_cycle.toml");
    assert_eq!(
        codes(&r.findings),
        vec![("E_RANKING_NOT_DECREASING", Some(45)), ("E_UNBOUNDED_CYCLE", Some(6)), ("E_PRODUCT_CYCLE", None)]
    );
    assert_eq!(r.findings[1].path, ids(&["work.next_turn"]));
    assert_eq!(r.findings[2].path, ids(&["work.next_turn"]));
    assert!(r.exploration.as_ref().unwrap().worst.is_none());
}

/// What the `table` fuzz target runs (docs/fuzzing.md): the audit without the exploration,
/// whose findings are the audit's own up to the exploration's.
#[test]
fn the_audit_without_the_exploration_stops_before_it() {
    for (rel, static_codes, explored) in [
        ("tests/tables/dead_end.toml", vec![("E_DEAD_END", Some(10)), ("E_NO_PATH_TO_TERMINAL", Some(10))], 2),
        (
            "tests/tables/unbounded_cycle.toml",
            vec![("E_RANKING_NOT_DECREASING", Some(45)), ("E_UNBOUNDED_CYCLE", Some(6))],
            1,
        ),
        ("transitions/loop.toml", vec![], 0),
    ] {
        let unexplored = audit_table_unexplored(rel, &read(rel), &AuditOptions::default()).unwrap();
        assert_eq!(codes(&unexplored.findings), static_codes, "{rel}");
        assert!(unexplored.exploration.is_none() && unexplored.table.is_some(), "{rel}");
        // The shipped table's full audit is shared with the other tests: it takes a while.
        let full = if rel == "transitions/loop.toml" { shipped_report().clone() } else { audit_file(rel) };
        assert_eq!(full.findings.len(), static_codes.len() + explored, "{rel}");
        assert_eq!(codes(&full.findings[..static_codes.len()]), static_codes, "{rel}");
    }
}

#[test]
fn bad_sets_are_caught_with_their_line() {
    let text = SHIPPED_TABLE.replacen("sets = { cause = \"truncated\" }", "sets = { cause = \"cut\" }", 1).replacen(
        "sets = { tools_ran = true }",
        "sets = { tools_run = true }",
        1,
    );
    let r = audit_table("t.toml", &text, &AuditOptions::default()).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).map(|i| i + 1);
    assert_eq!(
        codes(&r.findings),
        vec![("E_BAD_SETS", line_of("cause = \"cut\"")), ("E_BAD_SETS", line_of("tools_run = true"))]
    );
    assert_eq!(
        r.findings[0].message,
        "edge `consume.truncated`: `sets` gives `cause` the value \"cut\", which is not one of its values \
         (\"prompt_too_long\", \"truncated\")"
    );
    assert_eq!(r.findings[1].message, "edge `tools.done`: `sets` names `tools_run`, which is not a declared fact");
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn a_fact_only_some_entering_edges_set_is_a_warning() {
    let text = SHIPPED_TABLE.replacen("sets = { tools_ran = false }\n", "", 1);
    let r = audit_table("t.toml", &text, &AuditOptions::default()).unwrap();
    assert_eq!(codes(&r.findings), vec![("W_FACT_PARTLY_SET", Some(50))]);
    assert_eq!(r.exit_code(), 0);
    // Where `consume.end_turn` leaves `tools_ran` free, `next_turn` can follow an end of turn:
    // without the resumed tool phase (whose way in is shorter still), the shortest
    // `next_turn` skips the tools.
    let resume = SHIPPED_TABLE.find("[[edge]]\nid = \"prepare.resume_tools\"").unwrap();
    let resume_end = resume + SHIPPED_TABLE[resume..].find("\n\n").unwrap() + 2;
    let text = format!("{}{}", &SHIPPED_TABLE[..resume], &SHIPPED_TABLE[resume_end..])
        .replace("!tools_pending && ", "")
        .replace("sets = { tools_pending = false }\n", "")
        .replacen("sets = { tools_ran = false }\n", "", 1);
    let r = audit_table("t.toml", &text, &AuditOptions::default()).unwrap();
    let ex = r.exploration.as_ref().unwrap();
    let next = ex.witnesses.iter().find(|w| w.reason == "next_turn").unwrap();
    assert_eq!(
        next.path,
        ids(&["prepare.request", "request.stream_opened", "consume.end_turn", "checkpoint.next_turn"])
    );
}

#[test]
fn a_missing_terminal_reason_is_caught() {
    let r = audit_file("tests/tables/missing_terminal_reason.toml");
    assert_eq!(codes(&r.findings), vec![("E_MISSING_TERMINAL_REASON", None)]);
    assert_eq!(r.findings[0].message, "terminal reason `max_turns` has no edge");
}

#[test]
fn overlapping_guards_are_caught() {
    let r = audit_file("tests/tables/overlapping_guards.toml");
    assert_eq!(codes(&r.findings), vec![("E_GUARD_OVERLAP", Some(55))]);
    assert_eq!(
        r.findings[0].message,
        "edges `work.next_turn` and `work.completed` are both enabled in `Work` on `step` when finished=true, turns_left=true"
    );
}

/// A guard that another edge's guard, earlier in the file, always covers is shadowed: it can
/// never be chosen.
#[test]
fn a_shadowed_edge_is_caught() {
    let text =
        read("tests/tables/small.toml").replacen("guard = \"finished\"", "guard = \"finished && turns_left\"", 1);
    let text = text.replacen("guard = \"!finished && turns_left\"", "guard = \"turns_left\"", 1);
    let r = audit_table("t.toml", &text, &AuditOptions::default()).unwrap();
    // `finished && !turns_left` is left to no edge, too.
    assert_eq!(
        codes(&r.findings),
        vec![("E_GUARD_OVERLAP", Some(54)), ("E_GUARD_GAP", Some(6)), ("E_SHADOWED_EDGE", Some(54))]
    );
    assert_eq!(r.findings[2].location.edge.as_deref(), Some("work.completed"), "{}", r.findings[2].message);
}

#[test]
fn a_duplicated_edge_id_is_caught() {
    let r = audit_file("tests/tables/duplicate_edge_id.toml");
    assert_eq!(codes(&r.findings), vec![("E_DUPLICATE_EDGE_ID", Some(62))]);
    assert!(r.table.is_none());
}

fn replay(text: &str) -> trace::TraceReport {
    trace::replay(shipped(), "t.jsonl", text)
}

/// (code, line, seq) of every finding.
fn trace_codes(r: &trace::TraceReport) -> Vec<(&'static str, Option<usize>, Option<u64>)> {
    r.findings.iter().map(|f| (f.code.as_str(), f.location.line, f.location.seq)).collect()
}

#[test]
fn a_recorded_trace_replays() {
    let r = replay(recorded_trace());
    assert_eq!(r.findings, vec![]);
    assert_eq!((r.records, r.terminal.as_deref()), (9, Some("completed")));
}

#[test]
fn broken_traces_are_caught() {
    let undeclared = edited(2, |r| {
        r.insert("edge".into(), "request.teleport".into());
    });
    assert_eq!(trace_codes(&replay(&undeclared)), vec![("E_TRACE_UNDECLARED_EDGE", Some(3), Some(2))]);
    let mut lines = trace_lines();
    let mut after = lines[1].clone();
    after["seq"] = 10.into();
    after["from"] = "Done".into();
    lines.push(after);
    assert_eq!(trace_codes(&replay(&jsonl(&lines))), vec![("E_TRACE_AFTER_TERMINAL", Some(11), Some(10))]);
    let mut lines = trace_lines();
    lines.pop();
    assert_eq!(trace_codes(&replay(&jsonl(&lines))), vec![("E_TRACE_NO_TERMINAL", Some(9), None)]);
    let wrong = replay(&recorded_trace().replacen(&shipped().sha256, &"0".repeat(64), 1));
    assert_eq!(trace_codes(&wrong), vec![("E_TRACE_HASH", Some(1), None)]);
    assert!(wrong.findings[0].message.starts_with("the trace was recorded against table sha256 0000"));
}

#[test]
fn record_mismatches_name_their_seq() {
    let codes = |text: String| trace_codes(&replay(&text));
    let seq = edited(4, |r| {
        r.insert("seq".into(), 5.into());
    });
    assert_eq!(codes(seq), vec![("E_TRACE_SEQ", Some(5), Some(5)), ("E_TRACE_SEQ", Some(6), Some(5))]);
    let from = edited(4, |r| {
        r.insert("from".into(), "Consume".into());
    });
    assert_eq!(codes(from), vec![("E_TRACE_WRONG_STATE", Some(5), Some(4))]);
    let kind = edited(3, |r| {
        r.insert("kind".into(), "continue".into());
    });
    assert_eq!(codes(kind), vec![("E_TRACE_EDGE_MISMATCH", Some(4), Some(3))]);
    let guard = edited(3, |r| {
        r["guards"]["has_tool_use"] = false.into();
    });
    assert_eq!(codes(guard), vec![("E_TRACE_GUARD", Some(4), Some(3))]);
    // A fact recorded otherwise than the edge into the state set it.
    let contradicted = edited(9, |r| {
        r["guards"]["tools_ran"] = true.into();
    });
    let r = replay(&contradicted);
    assert_eq!(trace_codes(&r), vec![("E_TRACE_GUARD", Some(10), Some(9))]);
    let completed = shipped().edge("checkpoint.completed").unwrap().guard_text.clone().unwrap();
    assert_eq!(
        r.findings[0].message,
        format!(
            "`tools_ran` is recorded as true, but `consume.end_turn`, which entered `Checkpoint`, set it to false; \
             guard `{completed}` of `checkpoint.completed` is false under the recorded guards"
        )
    );
    // A fact left out of the record is read from what the entering edge set.
    let omitted = edited(9, |r| {
        r["guards"].as_object_mut().unwrap().remove("tools_ran");
    });
    assert_eq!(codes(omitted), vec![]);
    let untimed = edited(4, |r| {
        r.remove("t_ms");
    });
    assert_eq!(codes(untimed), vec![("E_TRACE_RECORD", Some(5), Some(4))]);
    let turns = trace_lines()[4]["counters"]["turns"].as_u64().unwrap();
    let counted = edited(5, |r| {
        r["counters"]["turns"] = (turns + 1).into();
    });
    // The replay resynchronises on the record's count, so seq 6's is a second mismatch.
    assert_eq!(codes(counted), vec![("E_TRACE_COUNTERS", Some(6), Some(5)), ("E_TRACE_COUNTERS", Some(7), Some(6))]);
}

#[test]
fn the_audit_command_exits_by_its_findings() {
    let mut out = Vec::new();
    let valid = trace_file();
    let args = AuditArgs {
        table: None,
        trace: Some(valid.path().to_owned()),
        coverage: Vec::new(),
        max_turns: Some(2),
        engine: false,
        memory_cap: None,
        format: AuditFormat::Text,
    };
    assert_eq!(run_audit(&args, &mut out), 0);
    let text = String::from_utf8(out).unwrap();
    let shown = format!("{}: 9 records, ends with terminal `completed`: ok\n", valid.path().display());
    assert!(text.contains(&shown), "{text}");

    let mut out = Vec::new();
    let args = AuditArgs {
        table: Some(root().join("tests/tables/duplicate_edge_id.toml")),
        trace: None,
        coverage: Vec::new(),
        max_turns: None,
        engine: false,
        memory_cap: None,
        format: AuditFormat::Json,
    };
    assert_eq!(run_audit(&args, &mut out), 1);
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["result"], "fail");
    assert_eq!(json["findings"][0]["code"], "E_DUPLICATE_EDGE_ID");
    assert_eq!(json["findings"][0]["location"]["line"], 62);
}

/// `run_audit` on `args`: its exit status and what it wrote.
fn audit_command(table: Option<PathBuf>, trace: Option<PathBuf>) -> (u8, String) {
    let mut out = Vec::new();
    let args = AuditArgs {
        table,
        trace,
        coverage: Vec::new(),
        max_turns: None,
        engine: false,
        memory_cap: None,
        format: AuditFormat::Text,
    };
    let code = run_audit(&args, &mut out);
    (code, String::from_utf8(out).unwrap())
}

#[test]
fn a_guard_nested_too_deep_is_unusable_input_naming_the_edge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.toml");
    let guard = format!("{}flag{}", "(".repeat(20_000), ")".repeat(20_000));
    let text = format!(
        "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n[[fact]]\nname = \"flag\"\n\
         [[edge]]\nid = \"a.deep\"\nfrom = \"A\"\non = \"go\"\nguard = \"{guard}\"\nto = \"A\"\n"
    );
    std::fs::write(&path, text).unwrap();
    let (code, out) = audit_command(Some(path.clone()), None);
    assert_eq!(code, 2);
    assert_eq!(
        out,
        format!(
            "agentloop audit: unusable input: {}, line 9: edge `a.deep`: the guard nests `!` and parentheses \
             deeper than 256 levels\n",
            path.display()
        )
    );
    // The engine's loader (and so `agentloop table`) refuses it too.
    let mut out = Vec::new();
    assert_eq!(run_table(&TableArgs { format: DiagramFormat::Mermaid, table: Some(path.clone()) }, &mut out), 2);
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("agentloop table: unusable input: ") && out.contains("edge `a.deep`"), "{out}");
}

#[test]
fn an_unknown_schema_version_is_unusable_input() {
    let path = root().join("tests/tables/unknown_schema.toml");
    let (code, out) = audit_command(Some(path.clone()), None);
    assert_eq!(code, 2);
    assert_eq!(
        out,
        format!(
            "agentloop audit: unusable input: {}, line 3: unknown table schema 99: this agentloop reads schema 1\n",
            path.display()
        )
    );
    let mut out = Vec::new();
    assert_eq!(run_table(&TableArgs { format: DiagramFormat::Mermaid, table: Some(path) }, &mut out), 2);
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("unknown table schema 99"), "{out}");
}

#[test]
fn an_empty_or_unreadable_trace_is_unusable_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let (code, out) = audit_command(None, Some(empty.clone()));
    assert_eq!(code, 2);
    assert_eq!(
        out,
        format!(
            "agentloop audit: unusable input: {}, line 1: the trace is empty (no header, no records)\n",
            empty.display()
        )
    );
    let blank = dir.path().join("blank.jsonl");
    std::fs::write(&blank, "\n  \n").unwrap();
    assert_eq!(audit_command(None, Some(blank)).0, 2);
    let binary = dir.path().join("binary.jsonl");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, b'\n']).unwrap();
    let (code, out) = audit_command(None, Some(binary));
    assert_eq!(code, 2);
    assert!(out.starts_with("agentloop audit: unusable input: ") && out.contains("binary.jsonl"), "{out}");
    let (code, out) = audit_command(None, Some(dir.path().join("missing.jsonl")));
    assert_eq!(code, 2);
    assert!(out.contains("missing.jsonl"), "{out}");
}

/// A file `cargo test` keeps in step with the table: rewritten when stale, except under CI
/// (`CI` set), where a stale file fails, naming the first line that differs.
fn keep_current(rel: &str, want: &str) {
    let path: PathBuf = root().join(rel);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have == want {
        return;
    }
    let first_diff = have.lines().zip(want.lines()).position(|(a, b)| a != b);
    let line = first_diff.map_or(have.lines().count().min(want.lines().count()) + 1, |i| i + 1);
    if std::env::var_os("CI").is_some() {
        panic!("{rel} is stale (first difference at line {line}): run `cargo test` once outside CI and commit it");
    }
    std::fs::write(&path, want).unwrap();
    eprintln!("{rel} was stale (from line {line}) and is rewritten from transitions/loop.toml");
}

#[test]
fn docs_transitions_md_is_current() {
    let want = render(shipped(), "transitions/loop.toml", DiagramFormat::Markdown);
    keep_current("docs/transitions.md", &want);
    let mut out = Vec::new();
    assert_eq!(run_table(&TableArgs { format: DiagramFormat::Markdown, table: None }, &mut out), 0);
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

/// The README's list of reasons, between its `<!-- reasons -->` markers.
#[test]
fn the_readme_lists_the_tables_reasons() {
    const OPEN: &str = "<!-- reasons: generated from transitions/loop.toml (cargo test rewrites it) -->\n";
    const CLOSE: &str = "<!-- /reasons -->\n";
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find(OPEN).expect("README.md has the reasons marker") + OPEN.len();
    let end = start + readme[start..].find(CLOSE).expect("README.md closes the reasons marker");
    let table = shipped();
    let names = |continues: bool| -> Vec<String> {
        table.reasons.iter().filter(|r| r.terminal != continues).map(|r| format!("`{}`", r.name)).collect()
    };
    let mut list = String::new();
    for (continues, what) in [(true, "continue"), (false, "terminal")] {
        let names = names(continues);
        list.push_str(&wrap(&format!("- **{} {what} reasons**: {};", names.len(), names.join(", ")), 96));
    }
    let want = format!("{}{list}{}", &readme[..start], &readme[end..]);
    keep_current("README.md", &want);
}

/// `transitions/README.md`'s list of the reasons a table without `[[reason]]` declares, and
/// the worst case of the shipped table, between their markers. The figures are the flow bound
/// (the exploration attains it on the shipped table: see the snapshots).
#[test]
fn the_table_readme_lists_the_reasons_and_the_worst_case() {
    let rel = "transitions/README.md";
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    let between = |text: &str, what: &str, body: &str| {
        let open = format!("<!-- {what}: generated from transitions/loop.toml (cargo test rewrites it) -->\n");
        let close = format!("<!-- /{what} -->\n");
        let start = text.find(&open).unwrap_or_else(|| panic!("{rel} has the {what} marker")) + open.len();
        let end = start + text[start..].find(&close).unwrap_or_else(|| panic!("{rel} closes the {what} marker"));
        format!("{}{body}{}", &text[..start], &text[end..])
    };
    let table = shipped();
    let names = |terminal: bool| -> Vec<String> {
        let reasons = table.reasons.iter().filter(|r| r.terminal == terminal);
        reasons
            .map(|r| match r.exit_code {
                Some(code) if terminal => format!("`{}` (exit {code})", r.name),
                _ => format!("`{}`", r.name),
            })
            .collect()
    };
    let mut reasons = wrap(&format!("- continue: {};", names(false).join(", ")), 96);
    reasons.push_str(&wrap(&format!("- terminal: {}.", names(true).join(", ")), 96));
    let w = agentloop::audit::flow::flow_bound(table, None).expect("the shipped table has a worst case");
    let turns = table.counters.iter().find(|c| c.option.as_deref() == Some("max_turns")).map_or(0, |c| c.bound);
    let worst = wrap(
        &format!(
            "For the shipped table at the default bounds the audit proves at most **{}** model calls per turn \
             ({} counting retries and the fallback) and at most **{}** per run with `max_turns = {turns}` ({} \
             counting them).",
            w.per_turn.excluding_resends,
            w.per_turn.including_resends,
            w.per_run.excluding_resends,
            w.per_run.including_resends
        ),
        96,
    )
    .replace("\n  ", "\n");
    let want = between(&between(&text, "reasons", &reasons), "worst case", &worst);
    keep_current(rel, &want);
}

/// `text` cut at spaces into lines of at most `width` characters, continued with two spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = "  ".to_owned();
        } else if !line.is_empty() && line != "  " {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The fenced blocks of `lang` in the worked example of docs/architecture.md, each without
/// the list item's indentation.
fn worked_example_blocks(lang: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc.find("### Worked example: adding a continue reason").expect("the worked example");
    let section = &doc[start..];
    let section = &section[..section[4..].find("\n## ").map_or(section.len(), |i| i + 4)];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(indent) = line.find(&format!("```{lang}")) else { continue };
        let mut block = String::new();
        for line in lines.by_ref() {
            if line.trim_start() == "```" {
                break;
            }
            block.push_str(line.get(indent..).unwrap_or(""));
            block.push('\n');
        }
        blocks.push(block);
    }
    blocks
}

/// The guard line of edge `id` in `text`: its byte range, the text between its quotes.
fn guard_of(text: &str, id: &str) -> (std::ops::Range<usize>, String) {
    let at = text.find(&format!("id = \"{id}\"\n")).unwrap_or_else(|| panic!("edge `{id}` is in the table"));
    let start = at + text[at..].find("\nguard = \"").expect("the edge has a guard") + 1;
    let end = start + text[start..].find('\n').unwrap();
    let line = &text[start..end];
    (start..end, line["guard = \"".len()..line.len() - 1].to_owned())
}

/// `text` with ` && more` appended to the guard of edge `id`, whatever that guard is now.
fn extend_guard(text: &str, id: &str, more: &str) -> String {
    let (range, guard) = guard_of(text, id);
    format!("{}guard = \"{guard}{more}\"{}", &text[..range.start], &text[range.end..])
}

/// Apply a diff block: its context and `-` lines must occur once in `text`, and become its
/// context and `+` lines. A diff that only extends an edge's guard (one `-` and one `+` guard
/// line, the second the first plus more, under the edge's `id` line) extends that edge's
/// guard as it is now, so another edit of the same guard does not break the example.
fn apply_diff(text: &str, diff: &str) -> String {
    let removed: Vec<&str> = diff.lines().filter_map(|l| l.strip_prefix('-')).collect();
    let added: Vec<&str> = diff.lines().filter_map(|l| l.strip_prefix('+')).collect();
    let id = diff.lines().find_map(|l| l.trim().strip_prefix("id = \"")?.strip_suffix('"'));
    if let ([old], [new], Some(id)) = (removed.as_slice(), added.as_slice(), id)
        && let Some(more) = old.strip_suffix('"').and_then(|o| new.strip_prefix(o)).and_then(|m| m.strip_suffix('"'))
        && old.starts_with("guard = \"")
    {
        return extend_guard(text, id, more);
    }
    let (mut before, mut after) = (String::new(), String::new());
    for line in diff.lines() {
        let (mark, rest) = line.split_at(1.min(line.len()));
        match mark {
            "-" => before.push_str(rest),
            "+" => after.push_str(rest),
            _ => {
                before.push_str(rest);
                after.push_str(rest);
            }
        }
        match mark {
            "-" => before.push('\n'),
            "+" => after.push('\n'),
            _ => {
                before.push('\n');
                after.push('\n');
            }
        }
    }
    assert_eq!(text.matches(&before).count(), 1, "the diff's lines occur once in the table:\n{before}");
    text.replacen(&before, &after, 1)
}

/// The worked example of docs/architecture.md, applied to the shipped table, passes the audit
/// and reaches its new reason. Its exhaustive exploration needs more than the default memory
/// cap (a bound-1 counter per run doubles it); past a small cap here, to keep the test quick,
/// the flow bound gives the worst case and the search edge by edge the witnesses.
#[test]
fn the_worked_example_passes_the_audit() {
    let additions = worked_example_blocks("toml");
    let diffs = worked_example_blocks("diff");
    assert_eq!((additions.len(), diffs.len()), (1, 2), "the example's blocks");
    let mut table = SHIPPED_TABLE.to_owned();
    // A table that already holds the example (someone made it real) is audited as it is.
    if !table.contains("id = \"consume.refusal_retry\"\n") {
        for diff in &diffs {
            table = apply_diff(&table, diff);
        }
        table.push('\n');
        table.push_str(&additions[0]);
    }
    let options = AuditOptions { memory_cap: Some(64 << 20), ..AuditOptions::default() };
    let r = audit_table("refusal.toml", &table, &options).unwrap();
    assert_eq!(r.findings, vec![], "{}", report::text(&r));
    let ex = r.exploration.as_ref().unwrap();
    assert!(ex.stopped.is_some() && ex.worst.is_none());
    // One more call per turn and per run than the shipped table without it.
    let shipped_flow = agentloop::audit::flow::flow_bound(shipped(), None).unwrap();
    if !SHIPPED_TABLE.contains("id = \"consume.refusal_retry\"\n") {
        let plus_one = |c: Calls| [c.excluding_resends + 1, c.including_resends + 11];
        let expected = worst_case(plus_one(shipped_flow.per_turn), plus_one(shipped_flow.per_run));
        assert_eq!(ex.flow_bound, Some(expected));
    }
    assert_eq!(ex.taken, vec![true; ex.taken.len()], "every edge is taken");
    let witness = ex.witnesses.iter().find(|w| w.reason == "refusal_retry").expect("a witness for refusal_retry");
    assert_eq!(witness.path, ids(&["prepare.request", "request.stream_opened", "consume.refusal_retry"]));
}

fn worst_case(per_turn: [u64; 2], per_run: [u64; 2]) -> WorstCase {
    let calls = |c: [u64; 2]| Calls { excluding_resends: c[0], including_resends: c[1] };
    WorstCase { per_turn: calls(per_turn), per_run: calls(per_run) }
}

/// The shipped table with `n` copies of the worked example, each with its own bound-1 counter
/// per run, fact and continue reason; a copy's retry is enabled only when no earlier copy's
/// is, so the guards stay exclusive and covering. What `benches/audit/extra_counters.py`
/// prints.
fn extra_counters(n: usize) -> String {
    let replace_once = |text: &str, old: &str, new: &str| {
        assert_eq!(text.matches(old).count(), 1, "expected once in the table: {old}");
        text.replacen(old, new, 1)
    };
    let names: Vec<(String, String)> = (0..n).map(|k| (format!("refused{k}"), format!("refusals{k}"))).collect();
    let enabled = |(f, c): &(String, String)| format!("!({f} && {c}_left)");
    // The copies split the plain end of turn, whatever its guard is now.
    let (_, base) = guard_of(SHIPPED_TABLE, "consume.end_turn");
    let all: Vec<String> = names.iter().map(enabled).collect();
    let mut t = extend_guard(SHIPPED_TABLE, "consume.end_turn", &format!(" && {}", all.join(" && ")));
    let ranked: String = names.iter().map(|(_, c)| format!("  \"{c}\",\n")).collect();
    t = replace_once(&t, "  \"turns\",\n", &format!("  \"turns\",\n{ranked}"));
    for (k, (f, c)) in names.iter().enumerate() {
        let mut guard = format!("{base} && {f} && {c}_left");
        for earlier in &all[..k] {
            guard.push_str(" && ");
            guard.push_str(earlier);
        }
        t.push_str(&format!(
            "\n[[reason]]\nname = \"{c}_retry\"\nkind = \"continue\"\ndoc = \"x\"\n\n[[fact]]\nname = \"{f}\"\ndoc = \"x\"\n\n\
             [[counter]]\nname = \"{c}\"\nbound = 1\ndoc = \"x\"\n\n[[edge]]\nid = \"consume.{c}_retry\"\nfrom = \"Consume\"\n\
             on = \"message_complete\"\nguard = \"{guard}\"\nto = \"Prepare\"\nsets = {{ tools_pending = false }}\nstatus = \"x\"\ncontinue = \"{c}_retry\"\n\
             consumes = [\"{c}\"]\nresets = [\"retries\"]\ndoc = \"x\"\n"
        ));
    }
    t
}

/// Ten extra bound-1 counters multiply the explicit product by 1024, past any memory cap;
/// the audit still proves the table: guards by search, termination by ranking, the worst case
/// by the flow bound (ten more calls per turn and per run, each with its retries), a shortest
/// witness per reason.
#[test]
fn the_audit_proves_the_table_with_ten_extra_counters() {
    let table = extra_counters(10);
    let options = AuditOptions { memory_cap: Some(64 << 20), ..AuditOptions::default() };
    let r = audit_table("ten.toml", &table, &options).unwrap();
    assert_eq!(r.findings, vec![], "{}", report::text(&r));
    let ex = r.exploration.as_ref().unwrap();
    // On the shipped table: 1774 / 19525 per turn, 2962 / 32593 per run.
    let shipped_flow = agentloop::audit::flow::flow_bound(shipped(), None).unwrap();
    let plus_ten = |c: Calls| [c.excluding_resends + 10, c.including_resends + 110];
    assert_eq!(ex.flow_bound, Some(worst_case(plus_ten(shipped_flow.per_turn), plus_ten(shipped_flow.per_run))));
    assert_eq!(ex.taken, vec![true; ex.taken.len()], "every edge is taken");
    assert_eq!(ex.witnesses.len(), r.table.as_ref().unwrap().reasons.len());
    for k in 0..10 {
        let w = ex.witnesses.iter().find(|w| w.reason == format!("refusals{k}_retry")).expect("a witness");
        let retry = format!("consume.refusals{k}_retry");
        assert_eq!(w.path, ids(&["prepare.request", "request.stream_opened", retry.as_str()]));
    }
}
