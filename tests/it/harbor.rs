//! The Harbor adapter (`examples/harbor/agentloop_harbor.py`): its own unit tests pass, and
//! the command line it builds, run as Harbor runs it (`bash -c` in the task's directory),
//! drives this binary against a local Messages API to a result whose counts the adapter reads
//! back as the result line gives them.

use crate::mock_api::{MockApi, read_round_trip};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn adapter_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/harbor")
}

/// `python3 -c SCRIPT ARGS…` with the adapter importable; its stdout.
fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3").arg("-c").arg(script).args(args).current_dir(adapter_dir()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_adapters_unit_tests_pass() {
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", ".", "-p", "test_*.py"])
        .current_dir(adapter_dir())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Ran 6 tests"), "{err}");
}

#[test]
fn the_command_the_adapter_builds_runs_a_task_and_its_summary_matches_the_result_line() {
    let api = MockApi::start(read_round_trip());
    let task = tempfile::tempdir().unwrap();
    std::fs::write(task.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    let logs = task.path().join("logs");
    // An instruction a shell would mangle if it were not quoted.
    let instruction = "Read greeting.txt and say what it says; don't run $(touch pwned) or `touch pwned`";
    let binary = assert_cmd::cargo::cargo_bin("agentloop");
    let command = python(
        "import sys, agentloop_harbor as a\n\
         print(a.run_command(sys.argv[1], a.RunOptions(binary=sys.argv[2], model='anthropic/claude-sonnet-4-5', \
         max_turns=5, log_dir=sys.argv[3])))",
        &[instruction, binary.to_str().unwrap(), logs.to_str().unwrap()],
    );
    let mut bash = Command::new("bash");
    for (name, _) in std::env::vars() {
        if name.starts_with("ANTHROPIC_") || name.starts_with("OTEL_") {
            bash.env_remove(name);
        }
    }
    let out = bash
        .args(["-c", command.trim_end()])
        .current_dir(task.path())
        .env("AGENTLOOP_HOME", task.path().join(".home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!task.path().join("pwned").exists(), "the instruction reached a shell unquoted");
    // The model got the instruction exactly.
    assert_eq!(api.bodies()[0]["messages"][0]["content"][0]["text"], instruction);
    let output = std::fs::read_to_string(logs.join("agentloop.jsonl")).unwrap();
    let result: Value = serde_json::from_str(output.lines().last().unwrap()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    // The trace is there, and replays against the table.
    let trace = logs.join("trace.jsonl");
    let audit = Command::new(&binary).args(["audit", "--coverage", trace.to_str().unwrap()]).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));

    let summary = python(
        "import sys, json, dataclasses, agentloop_harbor as a\n\
         print(json.dumps(dataclasses.asdict(a.summarize(open(sys.argv[1]).read().splitlines()))))",
        &[logs.join("agentloop.jsonl").to_str().unwrap()],
    );
    let summary: Value = serde_json::from_str(&summary).unwrap();
    let usage = &result["usage"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    assert_eq!(summary["subtype"], "success");
    assert_eq!(summary["is_error"], false);
    assert_eq!(summary["num_turns"], 2);
    assert_eq!(
        n(&summary["input_tokens"]),
        n(&usage["input_tokens"]) + n(&usage["cache_read_input_tokens"]) + n(&usage["cache_creation_input_tokens"])
    );
    assert_eq!(n(&summary["input_tokens"]), 2500);
    assert_eq!(summary["output_tokens"], usage["output_tokens"]);
    assert_eq!(summary["cost_usd"].as_f64(), result["total_cost_usd"].as_f64());
}
