//! The SDK mode's protocol driven from Rust, frame by frame (the Python SDK drives it in
//! tests/sdk.rs): answers to control requests, and a SIGTERM in the middle of a prompt.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};

fn sdk_mode(dir: &std::path::Path, scenario: &str) -> std::process::Child {
    sdk_mode_with(dir, scenario, &[])
}

/// [`sdk_mode`] with `args` besides.
fn sdk_mode_with(dir: &std::path::Path, scenario: &str, args: &[&str]) -> std::process::Child {
    Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", dir.join("home"))
        .env_remove("ANTHROPIC_API_KEY")
        .args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
        .arg("--model")
        .arg(format!("scripted:{scenario}"))
        .arg("--cwd")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn send(child: &mut std::process::Child, frame: Value) {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{frame}").unwrap();
    stdin.flush().unwrap();
}

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/read-greeting.json");
const SLOW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/abort-tools.json");

#[test]
fn control_requests_get_answers_never_silence() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sdk_mode(dir.path(), SCENARIO);
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize", "hooks": null}}),
    );
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "get_context_usage"}}),
    );
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r3", "request": {"subtype": "set_model", "model": "gpt-9"}}),
    );
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r4", "request": {"subtype": "set_permission_mode", "mode": "plan"}}),
    );
    send(&mut child, json!({"type": "control_request", "request_id": "r5", "request": {"subtype": "interrupt"}}));
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let frames: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let answers: Vec<(String, String)> = frames
        .iter()
        .map(|f| {
            let r = &f["response"];
            (r["request_id"].as_str().unwrap().to_owned(), r["subtype"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(
        answers,
        [("r1", "success"), ("r2", "error"), ("r3", "error"), ("r4", "success"), ("r5", "success")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(frames[0]["response"]["response"]["hooks_applied"], true);
    assert_eq!(frames[1]["response"]["error"], "agentloop does not support the `get_context_usage` control request");
    assert_eq!(frames[2]["response"]["error"], "unknown model \"gpt-9\": use a claude-… model");
}

/// SIGTERM during a prompt's tool: the prompt ends `aborted_tools` with its result line, and
/// the process exits 143, though stdin is still open.
#[test]
fn sigterm_ends_the_prompt_with_a_result_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sdk_mode(dir.path(), SLOW);
    send(&mut child, json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}}));
    send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "Run the slow build."}}));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let started = frame["subtype"] == "tool_started";
        seen.push(frame);
        if started {
            break;
        }
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    seen.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let result = seen.last().unwrap();
    assert_eq!(result["type"], "result", "{seen:#?}");
    assert_eq!(result["terminal_reason"], "aborted_tools");
    assert_eq!(result["subtype"], "error_during_execution");
}

/// `mcp_status` (the SDK's `get_mcp_status()`) answers in Claude Code's shape: after a prompt
/// has waited for the servers, a server that could not start is `failed` with its error, and
/// its configuration is shown without its environment.
#[test]
fn mcp_status_reports_each_server_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"mcpServers": {"broken": {"command": "/nonexistent/mcp-server", "args": ["--port", "1"],
        "env": {"TOKEN": "secret-token-1"}}}})
    .to_string();
    let mut child = sdk_mode_with(dir.path(), SCENARIO, &["--mcp-config", &config]);
    send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "Read greeting.txt"}}));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    // The prompt's result comes after the servers were waited for.
    while next()["type"] != "result" {}
    send(&mut child, json!({"type": "control_request", "request_id": "s1", "request": {"subtype": "mcp_status"}}));
    let answer = next();
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        answer,
        json!({"type": "control_response", "response": {"subtype": "success", "request_id": "s1", "response": {
            "mcpServers": [{
                "name": "broken",
                "status": "failed",
                "error": "cannot start `/nonexistent/mcp-server`: No such file or directory (os error 2)",
                "config": {"type": "stdio", "command": "/nonexistent/mcp-server", "args": ["--port", "1"]}
            }]
        }}})
    );
}
