//! Background shells through the binary: `Bash` with `run_in_background`, then `TaskOutput`,
//! `TaskStop` and `Read` on the output file, and the end of every shell with the run.
//!
//! A background shell's id is random, so a scripted scenario cannot name it in a later call:
//! the tests that use the id run against the local Messages API mock, whose replies are
//! computed from the tool results of the request they answer ([`conversation`]). The run-end
//! test needs no id and uses the scripted model.

use crate::binary;
use crate::mock_api;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// One tool result of a request: its text and whether it is an error.
type ToolResult = (String, bool);

/// A mock whose reply to each request is `step(replies so far, every tool result so far)`.
fn conversation(step: impl Fn(usize, &[ToolResult]) -> Reply + Send + 'static) -> MockApi {
    MockApi::start(Vec::new()).answer_side_requests(move |request| {
        let messages = request.body["messages"].as_array()?;
        let replies = messages.iter().filter(|m| m["role"] == "assistant").count();
        Some(step(replies, &messages.iter().flat_map(tool_results).collect::<Vec<_>>()))
    })
}

/// The tool results of one message, in order.
fn tool_results(message: &Value) -> Vec<ToolResult> {
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                other => other.to_string(),
            };
            (text, b["is_error"] == true)
        })
        .collect()
}

/// A reply calling `tool` with `input`.
fn call(n: usize, tool: &str, input: Value) -> Reply {
    Reply::Sse(Sse::new(MODEL, 100).tool_use(&format!("toolu_{n}"), tool, &input).stop("tool_use"))
}

/// The last reply.
fn answer(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 100).text(text).stop("end_turn"))
}

/// The id and output file a background Bash call answered with, checked for their shape.
fn started(result: &str) -> (String, PathBuf) {
    let rest = result.strip_prefix("Command running in background with ID: ").unwrap_or_else(|| panic!("{result}"));
    let (id, path) = rest.split_once(". Output is being written to: ").unwrap_or_else(|| panic!("{result}"));
    assert!(id.len() == 9 && id.starts_with('b'), "{id}");
    assert!(id[1..].bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()), "{id}");
    let path = PathBuf::from(path);
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("{id}.output"));
    let dir = path.parent().unwrap();
    assert_eq!(dir.parent().unwrap(), std::env::temp_dir().canonicalize().unwrap());
    assert!(dir.file_name().unwrap().to_str().unwrap().starts_with("agentloop-background-"), "{}", dir.display());
    (id.to_owned(), path)
}

/// `agentloop run` against `api` in `dir`, with `extra` arguments; its exit code and stderr.
fn run(api: &MockApi, dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = binary::offline_agentloop()
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .args(["run", "-p", "go", "--model", MODEL, "--cwd", dir.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every tool result of the conversation, from the last request `api` received.
fn all_results(api: &MockApi) -> Vec<ToolResult> {
    let bodies = api.bodies();
    let messages = bodies.last().unwrap()["messages"].as_array().unwrap().clone();
    messages.iter().flat_map(tool_results).collect()
}

/// Poll (bounded) until `file` holds a pid.
fn read_pid(file: &Path) -> u32 {
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never got a pid", file.display());
}

/// Whether `pid` has exited: gone, or a zombie nobody reaped (PID 1 here may not reap).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with(['Z', 'X'])),
    }
}

/// Whether `pid` dies within a bounded wait (a SIGKILLed process needs a moment).
fn dies(pid: u32) -> bool {
    for _ in 0..1000 {
        if is_dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// The answer of TaskOutput for a task that has ended.
fn task_output(id: &str, status: &str, output: &str) -> String {
    format!(
        "<retrieval_status>success</retrieval_status>\n<task_id>{id}</task_id>\n<task_type>local_bash</task_type>\n{status}\n<output>\n{output}\n</output>"
    )
}

/// The call answers at once with the id and the file; TaskOutput waits for the end and gives
/// the output and the exit code.
#[test]
fn a_background_command_is_waited_for_with_task_output() {
    let api = conversation(|n, results| match n {
        0 => call(n, "Bash", json!({"command": "sleep 0.2; echo done", "run_in_background": true})),
        1 => call(n, "TaskOutput", json!({"task_id": started(&results[0].0).0})),
        _ => answer("It printed done."),
    });
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(&api, dir.path(), &["--allowedTools", "Bash"]);
    assert_eq!(code, 0, "{err}");
    let results = all_results(&api);
    let (id, path) = started(&results[0].0);
    let status = "<status>completed</status>\n<exit_code>0</exit_code>";
    assert_eq!(results, [(results[0].0.clone(), false), (task_output(&id, status, "done"), false)]);
    assert!(!path.parent().unwrap().exists(), "the output directory goes with the run");
}

/// TaskStop kills the shell and what it started, before the run ends; TaskOutput then says
/// it was killed.
#[test]
fn task_stop_kills_the_shell_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let stopped_in_time = Arc::new(Mutex::new(None));
    let (seen, pids) = (stopped_in_time.clone(), pid_file.clone());
    let api = conversation(move |n, results| match n {
        0 => call(n, "Bash", json!({"command": "sleep 300 & echo $! > pid; wait", "run_in_background": true})),
        1 => {
            read_pid(&pids);
            call(n, "TaskStop", json!({"task_id": started(&results[0].0).0}))
        }
        2 => {
            *seen.lock().unwrap() = Some(dies(read_pid(&pids)));
            call(n, "TaskOutput", json!({"task_id": started(&results[0].0).0, "block": false}))
        }
        _ => answer("Stopped."),
    });
    let (code, err) = run(&api, dir.path(), &["--allowedTools", "Bash"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(*stopped_in_time.lock().unwrap(), Some(true), "the sleep outlived TaskStop");
    let results = all_results(&api);
    let (id, _) = started(&results[0].0);
    let command = "sleep 300 & echo $! > pid; wait";
    let stop = format!(
        r#"{{"message":"Successfully stopped task: {id} ({command})","task_id":"{id}","task_type":"local_bash","command":"{command}"}}"#
    );
    let killed = task_output(&id, "<status>killed</status>", "(no output)");
    assert_eq!(results[1..], [(stop, false), (killed, false)]);
}

/// The model reads the output file with Read, in the default mode, without a rule.
#[test]
fn the_output_file_is_readable_without_a_rule() {
    let api = conversation(|n, results| match n {
        0 => call(n, "Bash", json!({"command": "echo background-line", "run_in_background": true})),
        1 => call(n, "TaskOutput", json!({"task_id": started(&results[0].0).0})),
        2 => call(n, "Read", json!({"file_path": started(&results[0].0).1})),
        _ => answer("Read it."),
    });
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(&api, dir.path(), &["--permission-mode", "default"]);
    assert_eq!(code, 0, "{err}");
    let results = all_results(&api);
    let (id, _) = started(&results[0].0);
    let status = "<status>completed</status>\n<exit_code>0</exit_code>";
    assert_eq!(
        results[1..],
        [(task_output(&id, status, "background-line"), false), ("     1\tbackground-line\n".to_owned(), false)]
    );
}

/// A shell still running when the run ends is killed with everything it started, and its
/// output directory is removed.
#[test]
fn a_shell_still_running_when_the_run_ends_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    let doc = json!({"prompt": "go", "responses": [
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "sleep 300 & echo $! > pid; echo $$ > shell.pid; wait", "run_in_background": true}}],
         "stop_reason": "tool_use"},
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "while [ ! -s pid ] || [ ! -s shell.pid ]; do sleep 0.05; done", "timeout": 60000}}],
         "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "Leaving it running."}], "stop_reason": "end_turn"}
    ]});
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let out = binary::offline_agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", dir.path().to_str().unwrap()])
        .args(["--allowedTools", "Bash", "--output-format", "stream-json", "--verbose"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (sleep, shell) = (read_pid(&dir.path().join("pid")), read_pid(&dir.path().join("shell.pid")));
    assert!(dies(sleep), "the background sleep {sleep} outlived agentloop");
    assert!(dies(shell), "the background shell {shell} outlived agentloop");
    let first = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "user")
        .flat_map(|l| tool_results(&l["message"]))
        .next()
        .unwrap();
    let (_, path) = started(&first.0);
    assert!(!path.parent().unwrap().exists(), "the output directory goes with the run");
}
