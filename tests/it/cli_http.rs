//! `agentloop run --model claude-…` as users run it, against a local server that speaks the
//! Messages API (`ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`): a Read round trip in text and
//! stream-json output, and the help when no key is set.

use crate::mock_api;

use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, read_round_trip};
use serde_json::{Value, json};

const PROMPT: &str = "Read greeting.txt and tell me what it says";

/// `agentloop run` with only the Anthropic variables given here set.
fn agentloop(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"] {
        command.env_remove(name);
    }
    command.env("AGENTLOOP_HOME", std::env::temp_dir().join("agentloop-tests-home"));
    let out = command.envs(env.iter().copied()).args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    dir
}

#[test]
fn run_with_a_claude_model_completes_a_read_round_trip() {
    let api = MockApi::start(read_round_trip());
    let dir = work_dir();
    let base = api.base_url();
    let (code, out, err) = agentloop(
        &[("ANTHROPIC_BASE_URL", &base), ("ANTHROPIC_API_KEY", "x")],
        &["run", "-p", PROMPT, "--model", "claude-sonnet-4-5", "--cwd", dir.path().to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Reading it.\nIt says: Hello from the greeting file!\n");
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("x-api-key"), Some("x"));
    assert_eq!(requests[0].body["messages"][0]["content"][0]["text"], PROMPT);
    let result = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert_eq!(result["content"], "     1\tHello from the greeting file!\n");
}

#[test]
fn text_mode_says_on_stderr_when_it_waits_to_retry() {
    let mut script = vec![Reply::error(529, "overloaded_error", "Overloaded").header("retry-after", "0")];
    script.extend(read_round_trip());
    let api = MockApi::start(script);
    let dir = work_dir();
    let base = api.base_url();
    let (code, out, err) = agentloop(
        &[("ANTHROPIC_BASE_URL", &base), ("ANTHROPIC_API_KEY", "x")],
        &[
            "run",
            "-p",
            PROMPT,
            "--model",
            "claude-sonnet-4-5",
            "--max-retries",
            "4",
            "--cwd",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Reading it.\nIt says: Hello from the greeting file!\n");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("agentloop: ")).collect();
    assert_eq!(lines, ["agentloop: HTTP 529 overloaded_error: Overloaded; retry 1/4 in 0.0s"], "{err}");
    assert_eq!(api.requests().len(), 3);
}

#[test]
fn run_without_a_key_says_how_to_set_one() {
    let dir = work_dir();
    let cwd = dir.path().to_str().unwrap();
    for args in [
        vec!["run", "-p", PROMPT, "--cwd", cwd],
        vec!["run", "-p", PROMPT, "--model", "claude-sonnet-4-5", "--cwd", cwd],
    ] {
        let (code, out, err) = agentloop(&[], &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(out, "");
        assert!(err.contains("set ANTHROPIC_API_KEY"), "{err}");
        assert!(err.contains("ANTHROPIC_AUTH_TOKEN"), "{err}");
    }
}

#[test]
fn stream_json_prints_claude_code_shaped_lines_with_cost_and_terminal_reason() {
    let api = MockApi::start(read_round_trip());
    let dir = work_dir();
    let base = api.base_url();
    let (code, out, err) = agentloop(
        &[("ANTHROPIC_BASE_URL", &base), ("ANTHROPIC_API_KEY", "x")],
        &[
            "run",
            "-p",
            PROMPT,
            "--model",
            "claude-sonnet-4-5",
            "--cwd",
            dir.path().to_str().unwrap(),
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kind = |l: &Value| match l["subtype"].as_str() {
        Some(subtype) => format!("{}/{subtype}", l["type"].as_str().unwrap()),
        None => l["type"].as_str().unwrap().to_owned(),
    };
    let kinds: Vec<String> = lines.iter().map(kind).collect();
    // The Read call starts at its content_block_stop, before the reply ends, and may finish
    // before or after the rest of the reply arrives: only what is ordered is asserted.
    let position = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(position("system/tool_started") < position("assistant"), "{kinds:?}");
    assert!(position("system/tool_finished") < kinds.iter().rposition(|x| x == "user").unwrap(), "{kinds:?}");
    let lines: Vec<&Value> = lines.iter().filter(|l| !kind(l).starts_with("system/tool_")).collect();
    let kinds: Vec<String> = lines.iter().map(|l| kind(l)).collect();
    assert_eq!(kinds, ["system/init", "user", "assistant", "user", "assistant", "result/success"]);
    let init = &lines[0];
    assert_eq!(init["model"], "claude-sonnet-4-5");
    assert_eq!(
        init["tools"],
        json!([
            "Read",
            "Write",
            "Edit",
            "Bash",
            "Glob",
            "Grep",
            "TaskOutput",
            "TaskStop",
            "NotebookEdit",
            "TodoWrite",
            "WebFetch",
            "WebSearch",
            "Agent"
        ])
    );
    assert_eq!(init["agents"], json!(["general-purpose"]));
    let session = init["session_id"].as_str().unwrap();
    assert!(lines.iter().all(|l| l["session_id"] == session), "one session id on every line");
    assert_eq!(lines[1]["message"]["content"][0]["text"], PROMPT);
    let call = &lines[2]["message"];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["content"][1]["type"], "tool_use");
    assert_eq!(call["model"], "claude-sonnet-4-5");
    assert_eq!(lines[3]["message"]["content"][0]["tool_use_id"], "toolu_01");
    assert_eq!(lines[4]["message"]["content"][0]["text"], "It says: Hello from the greeting file!");
    let result = lines[5];
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], "It says: Hello from the greeting file!");
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(
        result["usage"],
        json!({"input_tokens": 2500, "output_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    );
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0, "{cost}");
    // Sonnet 4.5: $3 per million prompt tokens, $15 per million output tokens.
    assert!((cost - (2500.0 * 3.0 + 30.0 * 15.0) / 1e6).abs() < 1e-12, "{cost}");
}
