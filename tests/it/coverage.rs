//! `agentloop audit --coverage` end to end: traces the built binary records with
//! `demo --trace=jsonl --trace-file`, counted against the shipped table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentloop::engine::table::shipped;
use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// `agentloop demo NAME`, its JSONL trace written to `dir/NAME.jsonl` (the trace view's tests
/// record theirs with it too).
pub(crate) fn record(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.jsonl"));
    let status = Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", dir.join("home"))
        .current_dir(dir)
        .args(["demo", name, "--trace=jsonl", "--trace-file"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some(), "{name} ran to an exit status");
    path
}

/// `agentloop audit --coverage TRACES --format json`: its exit status and report.
fn coverage(traces: &[PathBuf]) -> (i32, Value) {
    let out = Command::cargo_bin("agentloop")
        .unwrap()
        .args(["audit", "--format", "json", "--coverage"])
        .args(traces)
        .output()
        .unwrap();
    let report =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), report)
}

fn taken(report: &Value, list: &str) -> BTreeSet<String> {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["taken"].as_u64().unwrap() > 0)
        .map(|e| e[if list == "edges" { "id" } else { "name" }].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn three_demo_runs_cover_exactly_their_edges_and_name_a_scenario_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let traces: Vec<PathBuf> =
        ["read-greeting", "max-turns", "subagent"].iter().map(|n| record(dir.path(), n)).collect();
    let (status, report) = coverage(&traces);
    assert_eq!(status, 0, "{report:#}");
    // Three traces: three main runs and the subagent's.
    assert_eq!(report["runs"], 4);
    let covered: BTreeSet<String> = [
        "prepare.request",
        "request.stream_opened",
        "consume.tools",
        "consume.end_turn",
        "tools.done",
        "checkpoint.next_turn",
        "checkpoint.completed",
        "checkpoint.max_turns",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(taken(&report, "edges"), covered);
    assert_eq!(report["edges_taken"], 8);
    assert_eq!(report["edges_total"], shipped().edges.len());
    let uncovered: Vec<&Value> = report["edges"].as_array().unwrap().iter().filter(|e| e["taken"] == 0).collect();
    assert_eq!(uncovered.len(), shipped().edges.len() - 8);
    for edge in &uncovered {
        assert!(edge["scenario"].is_string(), "a scenario takes every edge of the shipped table: {edge}");
    }
    let edge = |id: &str| report["edges"].as_array().unwrap().iter().find(|e| e["id"] == id).unwrap().clone();
    // The subagent's run takes its own edges: each of the four runs asks the model at least
    // once; the subagent scenario's main run twice, read-greeting twice, max-turns once.
    assert_eq!(
        (edge("prepare.request")["taken"].as_u64(), edge("prepare.request")["runs"].as_u64()),
        (Some(7), Some(4))
    );
    assert_eq!(
        (edge("checkpoint.max_turns")["taken"].as_u64(), edge("checkpoint.max_turns")["runs"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(edge("consume.context_full")["scenario"], "context-full");
    assert_eq!(edge("prepare.blocking_limit")["scenario"], "blocking-limit");
    assert_eq!(edge("prepare.blocking_limit")["from"], "Prepare");
    assert_eq!(edge("prepare.blocking_limit")["to"], "Done");
    let reasons: BTreeSet<String> = ["next_turn", "completed", "max_turns"].map(str::to_owned).into();
    assert_eq!(taken(&report, "reasons"), reasons);
    let reason = |name: &str| report["reasons"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(reason("completed")["runs"], 3);
    assert_eq!(reason("prompt_too_long")["scenario"], "prompt-too-long");
    assert_eq!(report["unknown_edges"], serde_json::json!({}));

    // The text form says the same, a line an edge.
    let out = Command::cargo_bin("agentloop").unwrap().args(["audit", "--coverage"]).args(&traces).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("agentloop audit --coverage: 3 traces, 4 runs, 32 records, against transitions/loop.toml\n"),
        "{text}"
    );
    assert!(text.contains(&format!("\nedges: 8 of {} taken\n", shipped().edges.len())), "{text}");
    let line = |id: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("prepare.request"), "taken prepare.request Prepare -> Request 7 times in 4 runs");
    assert_eq!(line("checkpoint.max_turns"), "taken checkpoint.max_turns Checkpoint -> Done once in 1 run");
    assert_eq!(
        line("consume.context_full"),
        "never consume.context_full Consume -> Recover `agentloop demo context-full` takes it"
    );
}

#[test]
fn a_trace_of_another_table_is_reported_and_its_unknown_edges_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = record(dir.path(), "read-greeting");
    let text =
        std::fs::read_to_string(&good).unwrap().replace("\"edge\":\"consume.end_turn\"", "\"edge\":\"consume.finish\"");
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, text).unwrap();
    let (status, report) = coverage(&[good.clone(), other]);
    assert_eq!(status, 1, "a trace that does not replay is a finding: {report:#}");
    assert_eq!(report["unknown_edges"], serde_json::json!({"consume.finish": 1}));
    assert_eq!(report["traces"][0]["findings"].as_array().unwrap().len(), 0);
    assert!(!report["traces"][1]["findings"].as_array().unwrap().is_empty());

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = Command::cargo_bin("agentloop").unwrap().args(["audit", "--coverage"]).arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the trace is empty"));
}
