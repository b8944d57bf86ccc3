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

/// An SDK server (`"type": "sdk"`) spoken to by hand: every JSON-RPC message to it is an
/// `mcp_message` control request, in order (initialize offering 2025-11-25, the initialized
/// notification, tools/list, then the calls). The prompt is sent before the handshake is
/// answered (the serve loop waits for the servers while the answers still have to be read),
/// and the two read-only calls are both sent before either is answered: they run
/// concurrently. The answers come back in reverse order and each result reaches its call.
#[test]
fn an_sdk_server_is_spoken_to_through_mcp_message_requests() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("calc.json");
    let call = |a: u64, b: u64| json!({"type": "tool_use", "name": "mcp__calc__add", "input": {"a": a, "b": b}});
    std::fs::write(
        &scenario,
        json!({"name": "calc", "prompt": "Add.", "responses": [
            {"content": [call(2, 40), call(1, 1)]},
            {"content": [{"type": "text", "text": "Done."}]}
        ]})
        .to_string(),
    )
    .unwrap();
    let config = json!({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}}).to_string();
    let mut child = Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .env_remove("ANTHROPIC_API_KEY")
        // Only keeps a broken transport from hanging the test.
        .env("MCP_TIMEOUT", "60000")
        .args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mcp-config", &config, "--allowedTools", "mcp__calc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    send(&mut child, json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "initialize"}}));
    send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "Add."}}));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer = |child: &mut std::process::Child, request_id: &Value, mcp_response: Value| {
        let response =
            json!({"subtype": "success", "request_id": request_id, "response": {"mcp_response": mcp_response}});
        send(child, json!({"type": "control_response", "response": response}));
    };
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    let mut frames = Vec::new();
    for line in lines.by_ref() {
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if frame["type"] == "result" {
            frames.push(frame);
            break;
        }
        if frame["type"] != "control_request" {
            frames.push(frame);
            continue;
        }
        let request = &frame["request"];
        assert_eq!((&request["subtype"], &request["server_name"]), (&json!("mcp_message"), &json!("calc")));
        let message = request["message"].clone();
        messages.push(message.clone());
        let id = &message["id"];
        match message["method"].as_str().unwrap() {
            "initialize" => answer(
                &mut child,
                &frame["request_id"],
                json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1.0.0"}}}),
            ),
            // The SDK acknowledges a notification with an empty result.
            "notifications/initialized" => {
                answer(&mut child, &frame["request_id"], json!({"jsonrpc": "2.0", "result": {}}));
            }
            "tools/list" => answer(
                &mut child,
                &frame["request_id"],
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "add", "description": "Add",
                    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
                    "annotations": {"readOnlyHint": true}}]}}),
            ),
            "tools/call" => {
                calls.push((frame["request_id"].clone(), message.clone()));
                if calls.len() == 2 {
                    // Both calls are out before either is answered; answer the second first.
                    for (request_id, call) in calls.iter().rev() {
                        let args = &call["params"]["arguments"];
                        let sum = args["a"].as_u64().unwrap() + args["b"].as_u64().unwrap();
                        answer(
                            &mut child,
                            request_id,
                            json!({"jsonrpc": "2.0", "id": call["id"], "result":
                                {"content": [{"type": "text", "text": sum.to_string()}], "isError": false}}),
                        );
                    }
                }
            }
            other => panic!("unexpected MCP message {other}: {message}"),
        }
    }
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let methods: Vec<&str> = messages.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call"]);
    assert_eq!(messages[0]["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(messages[0]["params"]["clientInfo"]["name"], "agentloop");
    assert_eq!(messages[1].get("id"), None);
    let arguments: Vec<&Value> = messages[3..].iter().map(|m| &m["params"]["arguments"]).collect();
    assert_eq!(arguments, [&json!({"a": 2, "b": 40}), &json!({"a": 1, "b": 1})]);
    assert!(messages[3..].iter().all(|m| m["params"]["name"] == "add"));
    let init = frames.iter().find(|f| f["subtype"] == "init").unwrap();
    assert_eq!(init["mcp_servers"], json!([{"name": "calc", "status": "connected"}]));
    let results: Vec<(String, bool)> = frames
        .iter()
        .filter(|f| f["type"] == "user")
        .flat_map(|f| f["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (content_of(&b["content"]), b["is_error"].as_bool().unwrap_or(false)))
        .collect();
    assert_eq!(results, [("42".to_owned(), false), ("2".to_owned(), false)]);
    assert_eq!(frames.last().unwrap()["result"], "Done.");
}

/// A tool_result's content as text: a string, or its text blocks joined.
fn content_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}
