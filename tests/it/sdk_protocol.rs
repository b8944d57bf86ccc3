//! The SDK mode's protocol driven from Rust, frame by frame (the Python SDK drives it in
//! tests/it/sdk.rs): answers to control requests, and a SIGTERM in the middle of a prompt.

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
    send(&mut child, json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "rewind_files"}}));
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r3", "request": {"subtype": "set_model", "model": "gpt 9"}}),
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
    assert_eq!(frames[1]["response"]["error"], "agentloop does not support the `rewind_files` control request");
    assert_eq!(frames[3]["response"]["response"], json!({"mode": "plan"}));
    assert_eq!(frames[4]["response"]["response"], json!({"still_queued": []}));
    assert_eq!(
        frames[2]["response"]["error"],
        "\"gpt 9\" is not a model name: a name is one word, such as claude-sonnet-4-5"
    );
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

/// The SDK mode with the SDK server `calc` configured and allowed, on a scenario of
/// `responses`; the initialize request and the prompt are already sent.
fn calc_sdk_mode(dir: &std::path::Path, responses: Value) -> std::process::Child {
    let scenario = dir.join("calc.json");
    std::fs::write(&scenario, json!({"name": "calc", "prompt": "Add.", "responses": responses}).to_string()).unwrap();
    let config = json!({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}}).to_string();
    let mut child = Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", dir.join("home"))
        .env_remove("ANTHROPIC_API_KEY")
        // Only keeps a broken transport from hanging the test.
        .env("MCP_TIMEOUT", "60000")
        .args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .arg("--cwd")
        .arg(dir)
        .args(["--mcp-config", &config, "--allowedTools", "mcp__calc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    send(&mut child, json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "initialize"}}));
    // Sent before the handshake is answered: the serve loop waits for the servers while their
    // answers still have to be read.
    send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "Add."}}));
    child
}

/// Answer the control request `request_id` with the server's reply `mcp_response`.
fn mcp_answer(child: &mut std::process::Child, request_id: &Value, mcp_response: Value) {
    let response = json!({"subtype": "success", "request_id": request_id, "response": {"mcp_response": mcp_response}});
    send(child, json!({"type": "control_response", "response": response}));
}

/// Play the SDK with an in-process server `calc` (one read-only tool, `add`) until the
/// prompt's result and until `enough` of the MCP messages came: the handshake and
/// notifications are answered here, each `tools/call` goes to `on_call` (with its control
/// request's id). Returns the MCP messages received, in order, and the other frames.
fn serve_calc(
    child: &mut std::process::Child,
    enough: impl Fn(&[Value]) -> bool,
    mut on_call: impl FnMut(&mut std::process::Child, &Value, &Value),
) -> (Vec<Value>, Vec<Value>) {
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut messages, mut frames) = (Vec::new(), Vec::new());
    let mut ended = false;
    for line in lines {
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if frame["type"] != "control_request" {
            ended |= frame["type"] == "result";
            frames.push(frame);
            if ended && enough(&messages) {
                break;
            }
            continue;
        }
        let request = &frame["request"];
        assert_eq!((&request["subtype"], &request["server_name"]), (&json!("mcp_message"), &json!("calc")));
        let message = request["message"].clone();
        messages.push(message.clone());
        let (id, request_id) = (&message["id"], &frame["request_id"]);
        match message["method"].as_str().unwrap() {
            "initialize" => mcp_answer(
                child,
                request_id,
                json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1.0.0"}}}),
            ),
            // The SDK acknowledges a notification with an empty result.
            "notifications/initialized" | "notifications/cancelled" => {
                mcp_answer(child, request_id, json!({"jsonrpc": "2.0", "result": {}}));
                if ended && enough(&messages) {
                    break;
                }
            }
            "tools/list" => mcp_answer(
                child,
                request_id,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "add", "description": "Add",
                    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
                    "annotations": {"readOnlyHint": true}}]}}),
            ),
            "tools/call" => on_call(child, request_id, &message),
            other => panic!("unexpected MCP message {other}: {message}"),
        }
    }
    (messages, frames)
}

/// The tool results of the stream-json `frames`: (content, is_error).
fn tool_results(frames: &[Value]) -> Vec<(String, bool)> {
    frames
        .iter()
        .filter(|f| f["type"] == "user")
        .flat_map(|f| f["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (content_of(&b["content"]), b["is_error"].as_bool().unwrap_or(false)))
        .collect()
}

/// An SDK server (`"type": "sdk"`) spoken to by hand: every JSON-RPC message to it is an
/// `mcp_message` control request, in order (initialize offering 2025-11-25, the initialized
/// notification, tools/list, then the calls). The two read-only calls are both sent before
/// either is answered: they run concurrently. The answers come back in reverse order and
/// each result reaches its call.
#[test]
fn an_sdk_server_is_spoken_to_through_mcp_message_requests() {
    let dir = tempfile::tempdir().unwrap();
    let call = |a: u64, b: u64| json!({"type": "tool_use", "name": "mcp__calc__add", "input": {"a": a, "b": b}});
    let responses = json!([{"content": [call(2, 40), call(1, 1)]}, {"content": [{"type": "text", "text": "Done."}]}]);
    let mut child = calc_sdk_mode(dir.path(), responses);
    let mut calls: Vec<(Value, Value)> = Vec::new();
    let (messages, frames) = serve_calc(
        &mut child,
        |_| true,
        |child, request_id, message| {
            calls.push((request_id.clone(), message.clone()));
            if calls.len() == 2 {
                // Both calls are out before either is answered; answer the second first.
                for (request_id, call) in calls.iter().rev() {
                    let args = &call["params"]["arguments"];
                    let sum = args["a"].as_u64().unwrap() + args["b"].as_u64().unwrap();
                    mcp_answer(
                        child,
                        request_id,
                        json!({"jsonrpc": "2.0", "id": call["id"], "result":
                        {"content": [{"type": "text", "text": sum.to_string()}], "isError": false}}),
                    );
                }
            }
        },
    );
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let methods: Vec<&str> = messages.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call"]);
    assert_eq!(messages[0]["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(messages[0]["params"]["clientInfo"]["name"], "agentloop");
    assert_eq!(messages[1].get("id"), None);
    // The two calls run concurrently: either may be sent first.
    let mut arguments: Vec<String> = messages[3..].iter().map(|m| m["params"]["arguments"].to_string()).collect();
    arguments.sort();
    assert_eq!(arguments, [json!({"a": 1, "b": 1}).to_string(), json!({"a": 2, "b": 40}).to_string()]);
    assert!(messages[3..].iter().all(|m| m["params"]["name"] == "add"));
    let init = frames.iter().find(|f| f["subtype"] == "init").unwrap();
    assert_eq!(init["mcp_servers"], json!([{"name": "calc", "status": "connected"}]));
    assert_eq!(tool_results(&frames), [("42".to_owned(), false), ("2".to_owned(), false)]);
    assert_eq!(frames.iter().find(|f| f["type"] == "result").unwrap()["result"], "Done.");
}

/// An interrupt during an SDK server's call ends it: the call's result says it was
/// cancelled, and the server is told so with `notifications/cancelled` naming the call.
#[test]
fn an_interrupted_sdk_server_call_is_cancelled_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let call = json!({"type": "tool_use", "name": "mcp__calc__add", "input": {"a": 2, "b": 40}});
    let responses = json!([{"content": [call]}, {"content": [{"type": "text", "text": "Stopped."}]}]);
    let mut child = calc_sdk_mode(dir.path(), responses);
    // A broken cancellation would leave the test waiting for the notification: the child is
    // killed then, and the assertions below fail.
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(std::time::Duration::from_secs(120)).is_err() {
            // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let cancelled = |messages: &[Value]| messages.iter().any(|m| m["method"] == "notifications/cancelled");
    let (messages, frames) = serve_calc(&mut child, cancelled, |child, _, _| {
        // The call is never answered: interrupt it.
        send(child, json!({"type": "control_request", "request_id": "x1", "request": {"subtype": "interrupt"}}));
    });
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    // The last result was an error (interrupted): the process exits 1, as Claude Code does.
    assert_eq!(status.code(), Some(1));
    assert_eq!(tool_results(&frames), [("MCP tool call was cancelled".to_owned(), true)]);
    let result = frames.iter().find(|f| f["type"] == "result").unwrap();
    assert_eq!(result["terminal_reason"], "aborted_tools");
    let call = messages.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancelled: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/cancelled").collect();
    assert_eq!(cancelled.len(), 1, "{messages:#?}");
    assert_eq!(cancelled[0]["params"]["requestId"], call["id"]);
}

/// A tool_result's content as text: a string, or its text blocks joined.
fn content_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// `--replay-user-messages` (the Claude ACP adapter passes it): each user message is echoed
/// when its prompt starts, after `system/init`, with the frame's own `uuid` and `origin` and
/// `isReplay: true`; `get_context_usage` and `get_settings` answer in Claude Code's shapes.
#[test]
fn user_messages_are_replayed_and_context_usage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sdk_mode_with(dir.path(), SCENARIO, &["--replay-user-messages"]);
    send(&mut child, json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}}));
    let uuid = "711a8dd5-dbae-451a-9faf-344f976d601e";
    let content = json!([{"type": "text", "text": "Read greeting.txt and tell me what it says"}]);
    send(
        &mut child,
        json!({"type": "user", "message": {"role": "user", "content": content}, "session_id": "",
               "parent_tool_use_id": null, "origin": {"kind": "human"}, "uuid": uuid}),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut frames: Vec<Value> = Vec::new();
    for line in lines.by_ref() {
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let done = frame["type"] == "result";
        frames.push(frame);
        if done {
            break;
        }
    }
    send(
        &mut child,
        json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "get_context_usage"}}),
    );
    send(&mut child, json!({"type": "control_request", "request_id": "r3", "request": {"subtype": "get_settings"}}));
    drop(child.stdin.take());
    frames.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    assert_eq!(child.wait().unwrap().code(), Some(0));

    let init = frames.iter().position(|f| f["subtype"] == "init").expect("system/init");
    let replay = &frames[init + 1];
    assert_eq!(replay["type"], "user", "{frames:#?}");
    assert_eq!(replay["isReplay"], true);
    assert_eq!(replay["uuid"], uuid);
    assert_eq!(replay["origin"], json!({"kind": "human"}));
    assert_eq!(replay["message"], json!({"role": "user", "content": content}));
    assert_eq!(replay["session_id"], frames[init]["session_id"]);
    assert_eq!(frames.iter().filter(|f| f["isReplay"] == true).count(), 1);

    let answer = |id: &str| {
        let frame = frames.iter().find(|f| f["response"]["request_id"] == id).unwrap();
        assert_eq!(frame["response"]["subtype"], "success", "{frame:#}");
        frame["response"]["response"].clone()
    };
    let usage = answer("r2");
    let ids: Vec<&str> = usage["categories"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["system_prompt", "system_tools", "messages", "autocompact_buffer", "free_space"]);
    let messages = usage["categories"][2]["tokens"].as_u64().unwrap();
    assert!(messages > 0, "the prompt's conversation is counted: {usage:#}");
    let used: u64 = usage["categories"].as_array().unwrap()[..3].iter().map(|c| c["tokens"].as_u64().unwrap()).sum();
    assert_eq!(usage["totalTokens"], used);
    assert_eq!(usage["rawMaxTokens"], 200_000);
    let settings = answer("r3");
    assert_eq!(settings["applied"]["model"], frames[init]["model"]);
    assert_eq!(settings["effective"], json!({}));
}

/// A line of stdin that is not UTF-8 is skipped with a warning, like any malformed line: the
/// prompt after it still runs to its result and the session ends normally.
#[test]
fn a_line_that_is_not_utf8_is_skipped_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sdk_mode(dir.path(), SCENARIO);
    {
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(b"{\"type\":\"user\",\"message\":{\"content\":\"caf\xff\"}}\n").unwrap();
        stdin.flush().unwrap();
    }
    send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "Read greeting.txt"}}));
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("agentloop: warning: ignored a line of stdin: not UTF-8"), "{stderr}");
    let results: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|f| f["type"] == "result")
        .collect();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["subtype"], "success");
}

/// A scenario whose first call runs `touch started; sleep 2; touch A1` and whose second would
/// run `touch A2`, in `dir`.
fn two_commands(dir: &std::path::Path) -> std::path::PathBuf {
    let bash =
        |command: &str| json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]});
    let doc = json!({
        "prompt": "two commands",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [bash("touch started; sleep 2; touch A1"), bash("touch A2"),
                      {"content": [{"type": "text", "text": "done"}]}]
    });
    let path = dir.join("scenario.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn wait_for_file(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The client goes away (closes stdout and stdin) while the first command runs: the failed
/// write of its result cancels the prompt before the second command can start, in the SDK
/// mode and in `-p` alike; the process exits 141 (a closed stdout, as SIGPIPE's).
#[test]
fn a_client_that_goes_away_stops_the_run_before_the_next_tool() {
    for sdk in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let scenario = two_commands(dir.path());
        let mut command = Command::cargo_bin("agentloop").unwrap();
        command.env("AGENTLOOP_HOME", dir.path().join("home")).env_remove("ANTHROPIC_API_KEY");
        if sdk {
            command.args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]);
        } else {
            command.args(["-p", "two commands", "--output-format", "stream-json"]);
        }
        let mut child = command
            .arg("--model")
            .arg(format!("scripted:{}", scenario.display()))
            .arg("--cwd")
            .arg(&work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if sdk {
            send(&mut child, json!({"type": "user", "message": {"role": "user", "content": "two commands"}}));
        }
        wait_for_file(&work.join("started"));
        drop(child.stdout.take());
        drop(child.stdin.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(141), "sdk mode: {sdk}");
        assert!(!work.join("A2").exists(), "sdk mode {sdk}: the second command ran after the client left");
    }
}
