//! `--table FILE`: the loop follows an edited table with no Rust change, and a table that fails
//! the audit, or names an edge this engine has no effect for, is refused before anything runs.

use std::path::Path;

use crate::binary;

const SHIPPED: &str = include_str!("../../transitions/loop.toml");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = binary::offline_agentloop().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn edited(from: &str, to: &str) -> String {
    let text = SHIPPED.replacen(from, to, 1);
    assert_ne!(text, SHIPPED, "the edit applies");
    text
}

#[test]
fn an_edited_bound_changes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = edited("name = \"stop_hook_blocks\"\nbound = 8", "name = \"stop_hook_blocks\"\nbound = 2");
    let table = write(dir.path(), "blocks.toml", &text);
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let (code, _, err) =
        run(&["demo", "stop-hook-cap", "--table", &table, "--trace=jsonl", "--trace-file", &trace_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("a Stop hook blocked the end of the turn 2 times in a row: overriding it and ending the turn"),
        "{err}"
    );
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let sha = agentloop::engine::table::sha256_hex(&text);
    assert_eq!(records[0]["table_sha256"], sha.as_str(), "the header names the table used");
    assert_eq!(records[0]["bounds"]["stop_hook_blocks"], 2);
    // The transition records (the event lines between them take no edge).
    let edges: Vec<&str> =
        records[1..].iter().filter(|r| r["type"] == "transition").map(|r| r["edge"].as_str().unwrap()).collect();
    let blocks = edges.iter().filter(|e| **e == "checkpoint.stop_hook_blocking").count();
    assert_eq!(blocks, 2);
    assert_eq!(edges.last(), Some(&"checkpoint.stop_hook_cap"));
}

#[test]
fn a_table_that_fails_the_audit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Without `checkpoint.completed`, an ordinary end of turn has no edge: the table is not total.
    let start = SHIPPED.find("[[edge]]\nid = \"checkpoint.completed\"").unwrap();
    let end = SHIPPED.find("# Recover").unwrap();
    let gap = write(dir.path(), "gap.toml", &format!("{}{}", &SHIPPED[..start], &SHIPPED[end..]));
    let (code, out, err) = run(&["demo", "read-greeting", "--table", &gap]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(out, "", "nothing ran");
    assert!(err.starts_with(&format!("agentloop: the table {gap} fails the audit (1 finding(s)); nothing was run.")));
    assert!(
        err.contains(&format!("error E_GUARD_GAP {gap}:50: no edge out of `Checkpoint` on `turn_checked`")),
        "{err}"
    );

    // An edge this engine has no effect for.
    let renamed =
        write(dir.path(), "renamed.toml", &edited("id = \"checkpoint.completed\"", "id = \"checkpoint.finished\""));
    let (code, _, err) = run(&["run", "--model", "scripted:nowhere.json", "--table", &renamed, "-p", "hi"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error E_ENGINE_MISMATCH"), "{err}");
    assert!(err.contains("the engine has no effect for edge `checkpoint.finished`"), "{err}");
}
