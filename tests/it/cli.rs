//! The `agentloop` binary as users run it: demo list, exit statuses, traces, bad input, and
//! what stops a run from outside, sent for real: Ctrl+C (SIGINT) mid-reply, during a tool and
//! during a hook, a second Ctrl+C, SIGTERM, SIGHUP and a closed stdout.

use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;

use crate::binary;

fn agentloop() -> Command {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    command.env("AGENTLOOP_HOME", std::env::temp_dir().join("agentloop-tests-home"));
    command
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = binary::offline_agentloop().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn demo_list_names_every_scenario_with_what_it_shows() {
    let (code, out, _) = run(&["demo", "--list"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), agentloop::scenario::builtin::SCENARIOS.len());
    assert!(lines[0].starts_with("read-greeting "), "{}", lines[0]);
    assert!(lines.iter().all(|l| l.split_whitespace().count() > 2), "every line says what it shows");
}

#[test]
fn demo_all_summarises_every_scenario() {
    let (code, out, err) = run(&["demo", "--all"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), agentloop::scenario::builtin::SCENARIOS.len());
    let first: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(first, ["read-greeting", "completed", "9", "transitions", "2", "model", "calls"]);
    assert!(out.contains("abort-tools") && out.contains("aborted_tools"), "{out}");
}

#[test]
fn exit_statuses_follow_the_terminal_reason() {
    let cases = [
        ("read-greeting", 0),
        ("model-error", 1),
        ("prompt-too-long", 1),
        ("blocking-limit", 1),
        ("max-turns", 3),
        ("stop-hook-prevented", 0),
        ("hook-stopped", 0),
        ("abort-streaming", 130),
        ("abort-tools", 130),
    ];
    for (name, expected) in cases {
        let (code, _, err) = run(&["demo", name]);
        assert_eq!(code, expected, "{name}: {err}");
    }
}

#[test]
fn jsonl_trace_ends_in_exactly_one_terminal_record_and_audits_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.jsonl");
    let (code, _, err) = run(&["demo", "--trace=jsonl", "--trace-file", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records[0]["type"], "header");
    assert_eq!(records[0]["table_sha256"], agentloop::engine::table::shipped().sha256.as_str());
    let terminals: Vec<usize> = (0..records.len()).filter(|&i| records[i]["kind"] == "terminal").collect();
    assert_eq!(terminals, vec![records.len() - 1]);
    assert_eq!(records.last().unwrap()["reason"], "completed");
    let (code, out, _) = run(&["audit", "--trace", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_malformed_scenario_names_the_file_and_the_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, "{\"prompt\": \"x\", \"responses\": [{\"content\": [], \"stop_reason\": 7}]}").unwrap();
    let model = format!("scripted:{}", file.display());
    let (code, _, err) = run(&["run", "--model", &model, "--cwd", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.json") && err.contains("responses[0].stop_reason"), "{err}");
}

#[test]
fn run_writes_the_scenario_files_and_uses_its_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/read-greeting.json");
    let model = format!("scripted:{scenario}");
    let (code, out, err) = run(&["run", "--model", &model, "--cwd", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("greeting.txt")).unwrap(), "hello from step one\n");
    assert!(out.contains("It says: hello from step one."), "{out}");
}

#[test]
fn json_output_is_one_result_object() {
    let (code, out, _) = run(&["demo", "max-turns", "--output-format", "json"]);
    assert_eq!(code, 3);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["type"], "result");
    assert_eq!(v["subtype"], "error_max_turns");
    assert_eq!(v["terminal_reason"], "max_turns");
    assert_eq!(v["agentloop_terminal_reason"], "max_turns");
    assert_eq!(v["is_error"], true);
    // Claude Code counts the turn it refused to start: one turn taken, `--max-turns 1`.
    assert_eq!(v["num_turns"], 2);
    // Claude Code's shape: the TypeScript SDK maps over `errors` on every error result, and
    // there is no `result` text.
    assert_eq!(v["errors"], serde_json::json!(["Reached maximum number of turns (1)"]));
    assert_eq!(v.get("result"), None);
    assert_eq!(v["permission_denials"], serde_json::json!([]));
    assert_eq!(v["api_error_status"], serde_json::Value::Null);
}

#[test]
fn no_model_is_a_usage_error() {
    let (code, _, err) = run(&["run", "-p", "hello"]);
    assert_eq!(code, 2);
    assert!(err.contains("--model"), "{err}");
}

/// A real SIGINT while the reply streams ends the run as aborted_streaming (exit 130), with
/// the trace's single terminal record written.
#[test]
fn ctrl_c_while_streaming_aborts_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("slow.json");
    let text = "word ".repeat(2000);
    let doc = serde_json::json!({"prompt": "talk", "responses": [{"content": [{"type": "text", "text": text}], "chunk_delay_ms": 50}]});
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let trace = dir.path().join("trace.jsonl");
    let child = agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", dir.path().to_str().unwrap()])
        .args(["--trace=jsonl", "--trace-file", trace.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the reply is streaming (the trace has recorded the stream opening), so the
    // signal handler is surely installed and the abort lands mid-reply.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&trace).unwrap_or_default().contains("request.stream_opened") {
        assert!(std::time::Instant::now() < deadline, "the run never started streaming");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("aborted_streaming"), "{stderr}");
    let last = std::fs::read_to_string(&trace).unwrap().lines().last().unwrap().to_owned();
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["edge"], "sampling.abort");
}

/// Bash and hook commands run without the model credentials and secret-looking variables
/// of agentloop's own environment, except those `shellEnvironment.keep` names.
#[test]
fn tools_and_hooks_never_see_the_model_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("env.json");
    let hook = "printf '%s' \"${ANTHROPIC_API_KEY-}${ANTHROPIC_AUTH_TOKEN-}${FOO_TOKEN-}\" > hook-saw.txt; \
                printf '%s' \"$GITHUB_TOKEN $PLAIN_VAR\" > hook-kept.txt";
    let doc = serde_json::json!({
        "prompt": "show the environment",
        "settings": {
            "permissions": {"allow": ["Bash"]},
            "shellEnvironment": {"keep": ["GITHUB_*"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}
        },
        "responses": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "env | sort"}}]},
            {"content": [{"type": "text", "text": "done"}], "expect": {"last_user_text_contains": "PLAIN_VAR=visible"}}
        ]
    });
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let out = agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", dir.path().to_str().unwrap()])
        .args(["--output-format", "stream-json"])
        .env("ANTHROPIC_API_KEY", "sk-test-secret")
        .env("ANTHROPIC_AUTH_TOKEN", "bearer-secret")
        .env("FOO_TOKEN", "t0k")
        .env("GITHUB_TOKEN", "gh-kept")
        .env("PLAIN_VAR", "visible")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let results = tool_results(&stdout);
    assert_eq!(results.len(), 1, "{stdout}");
    let env: Vec<&str> = results[0].lines().collect();
    assert!(env.contains(&"PLAIN_VAR=visible") && env.contains(&"GITHUB_TOKEN=gh-kept"), "{env:?}");
    // The names stay out of the tool's environment (`system/init` names the key's source,
    // `apiKeySource: ANTHROPIC_API_KEY`, as Claude Code does); the values appear nowhere.
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "FOO_TOKEN"] {
        assert!(!results[0].contains(name), "{name} reached the tool result: {stdout}");
    }
    for secret in ["sk-test-secret", "bearer-secret", "t0k"] {
        assert!(!stdout.contains(secret), "{secret} reached stdout: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("hook-saw.txt")).unwrap(), "");
    assert_eq!(std::fs::read_to_string(dir.path().join("hook-kept.txt")).unwrap(), "gh-kept visible");
}

/// The text of every `tool_result` in a stream-json run's `user` lines, in order.
fn tool_results(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|v| v["type"] == "user")
        .flat_map(|v| v["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Send `signal` to process `pid`.
fn send(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) takes no pointers; `pid` is our own child's id.
    let sent = unsafe { libc::kill(libc::pid_t::try_from(pid).unwrap(), signal) };
    assert_eq!(sent, 0, "kill({pid}, {signal}) failed");
}

/// The contents of `path` once it holds a full line, polling for at most 30 seconds.
fn wait_for_line(path: &std::path::Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.ends_with('\n') {
            return text.trim().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "{} never got a line", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone or a zombie, polling for at most 10 seconds.
fn is_dead(pid: &str) -> bool {
    for _ in 0..500 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])) => {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// A run of the scenario `doc` in a fresh directory with a JSON Lines trace, its stdout and
/// stderr piped.
struct Spawned {
    child: std::process::Child,
    dir: tempfile::TempDir,
    trace: std::path::PathBuf,
}

fn spawn_scenario(doc: &serde_json::Value) -> Spawned {
    spawn_scenario_with_stderr(doc, Stdio::piped())
}

fn spawn_scenario_with_stderr(doc: &serde_json::Value, stderr: Stdio) -> Spawned {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let trace = dir.path().join("trace.jsonl");
    let child = agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", dir.path().to_str().unwrap()])
        .args(["--trace=jsonl", "--trace-file", trace.to_str().unwrap()])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    Spawned { child, dir, trace }
}

/// The trace ends with exactly one terminal record, `edge`, and `agentloop audit` replays it clean.
fn assert_trace_ends_with(trace: &std::path::Path, edge: &str) {
    let text = std::fs::read_to_string(trace).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let terminals: Vec<usize> = (0..records.len()).filter(|&i| records[i]["kind"] == "terminal").collect();
    assert_eq!(terminals, vec![records.len() - 1], "{text}");
    assert_eq!(records.last().unwrap()["edge"], edge, "{text}");
    let (code, out, err) = run(&["audit", "--trace", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A scenario whose one Bash call starts a `sleep` in the background, writes its pid to
/// `sleep.pid` and waits for it.
fn sleeping_bash() -> serde_json::Value {
    serde_json::json!({
        "prompt": "sleep",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 100 & echo $! > sleep.pid; wait"}}]},
            {"content": [{"type": "text", "text": "never reached"}]}
        ]
    })
}

/// SIGTERM and SIGHUP while the Bash tool runs end the run like Ctrl+C: the command's process
/// group is killed, the trace ends in `acting.abort`, and the exit status is 128 + the signal.
#[test]
fn sigterm_and_sighup_abort_the_tools_and_exit_128_plus_the_signal() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let Spawned { child, dir, trace } = spawn_scenario(&sleeping_bash());
        let pid = wait_for_line(&dir.path().join("sleep.pid"));
        send(child.id(), signal);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "signal {signal}: {stderr}");
        assert!(stderr.contains("aborted_tools"), "{stderr}");
        assert_trace_ends_with(&trace, "acting.abort");
        assert!(is_dead(&pid), "signal {signal}: sleep {pid} survived");
    }
}

/// Two Ctrl+C in a row: whichever ends the run, the Bash tool's group is dead, the exit status
/// is 130 and the trace still ends with its terminal record.
#[test]
fn a_second_ctrl_c_kills_the_tools_and_keeps_the_terminal_record() {
    let Spawned { child, dir, trace } = spawn_scenario(&sleeping_bash());
    let pid = wait_for_line(&dir.path().join("sleep.pid"));
    send(child.id(), libc::SIGINT);
    send(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_trace_ends_with(&trace, "acting.abort");
    assert!(is_dead(&pid), "sleep {pid} survived");
}

/// A scenario with one `event` hook that starts a `sleep` in the background, writes its pid to
/// `hook.pid` and waits for it (its timeout, 300 s, far beyond the test's patience).
fn sleeping_hook(event: &str, responses: serde_json::Value) -> serde_json::Value {
    let hook =
        serde_json::json!({"type": "command", "command": "sleep 100 & echo $! > hook.pid; wait", "timeout": 300});
    serde_json::json!({
        "prompt": "hook",
        "settings": {"permissions": {"allow": ["Bash"]}, "hooks": {event: [{"hooks": [hook]}]}},
        "responses": responses
    })
}

/// Ctrl+C while a PreToolUse, PostToolUse or Stop hook runs kills the hook's process group at
/// once (the run does not wait for the hook's timeout), warns, and ends the run as
/// `aborted_tools`: by `acting.abort` in the tool phase, by `checkpoint.abort` in a Stop hook.
#[test]
fn ctrl_c_during_a_hook_kills_it_and_ends_the_run() {
    let bash = serde_json::json!([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "true"}}]},
        {"content": [{"type": "text", "text": "never reached"}]}
    ]);
    let text = serde_json::json!([{"content": [{"type": "text", "text": "done"}]}]);
    let cases = [
        ("PreToolUse", bash.clone(), "acting.abort", "PreToolUse of Bash"),
        ("PostToolUse", bash, "acting.abort", "PostToolUse of Bash"),
        ("Stop", text, "checkpoint.abort", "Stop"),
    ];
    for (event, responses, edge, warning) in cases {
        let Spawned { child, dir, trace } = spawn_scenario(&sleeping_hook(event, responses));
        let pid = wait_for_line(&dir.path().join("hook.pid"));
        send(child.id(), libc::SIGINT);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{event}: {stderr}");
        assert!(stderr.contains(&format!("agentloop: warning: hooks interrupted and killed: {warning}")), "{stderr}");
        assert_trace_ends_with(&trace, edge);
        assert!(is_dead(&pid), "{event}: the hook's sleep {pid} survived");
    }
}

/// Ctrl+C while a Bash command runs in a session without hooks: the run ends aborted_tools
/// and says nothing of hooks, there being none to kill.
#[test]
fn ctrl_c_during_a_command_without_hooks_warns_of_no_hooks() {
    let doc = serde_json::json!({
        "prompt": "run",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo $$ > started; sleep 100"}}]},
            {"content": [{"type": "text", "text": "never reached"}]}
        ]
    });
    let Spawned { child, dir, trace } = spawn_scenario(&doc);
    wait_for_line(&dir.path().join("started"));
    send(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("hooks interrupted"), "{stderr}");
    assert!(stderr.contains("agentloop: ended with aborted_tools"), "{stderr}");
    assert_trace_ends_with(&trace, "acting.abort");
}

/// Output that cannot be written (stdout is `/dev/full`: every write fails with ENOSPC) is not
/// a success: every output format and the demo exit 74 with one line on stderr saying why.
#[test]
fn a_full_stdout_exits_74_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/read-greeting.json");
    let model = format!("scripted:{scenario}");
    let cwd = dir.path().to_str().unwrap();
    let cases: [Vec<&str>; 5] = [
        vec!["run", "--model", &model, "--cwd", cwd],
        vec!["run", "--model", &model, "--cwd", cwd, "--output-format", "json"],
        vec!["run", "--model", &model, "--cwd", cwd, "--output-format", "stream-json"],
        vec!["demo"],
        vec!["demo", "--all"],
    ];
    for args in cases {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = agentloop().args(&args).stdin(Stdio::null()).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(74), "{args:?}: {stderr}");
        let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("agentloop:")).collect();
        assert_eq!(said, ["agentloop: cannot write the output: No space left on device (os error 28)"], "{args:?}");
    }
}

/// A pipe whose reading end is already closed: every write to the other end fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

/// `demo --all | head -1` and `demo --list` into a closed pipe stop quietly with 141 (the
/// shell's code for SIGPIPE) instead of panicking.
#[test]
fn demo_into_a_closed_pipe_exits_141_without_a_panic() {
    for args in [&["demo", "--all"][..], &["demo", "--list"], &["demo", "read-greeting"]] {
        let out = agentloop().args(args).stdin(Stdio::null()).stdout(closed_pipe()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// `agentloop run … | head -1`: a write that finds the reader gone cancels the run like an
/// interrupt, quietly; the trace ends with its terminal record, and the exit status is 141.
#[test]
fn run_whose_stdout_closes_mid_write_stops_quietly_with_141() {
    // Piped text is written once the reply is kept (a retried attempt never shows): more than a
    // pipe holds, so the write is still going when the reader goes away. The reply was kept,
    // so the run itself completed; the exit status says stdout was lost.
    let lines = "line\n".repeat(40_000);
    let doc = serde_json::json!({"prompt": "talk", "responses": [{"content": [{"type": "text", "text": lines}]}]});
    let Spawned { mut child, dir: _dir, trace } = spawn_scenario(&doc);
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert_eq!(first, "line\n");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert_eq!(stderr, "", "a closed stdout stops the run quietly");
    assert_trace_ends_with(&trace, "checkpoint.completed");
}

/// SIGHUP when the terminal is gone: writing the messages to stderr fails, which must not turn
/// the orderly abort into a panic.
#[test]
fn sighup_with_stderr_gone_still_aborts_cleanly() {
    let Spawned { child, dir, trace } = spawn_scenario_with_stderr(&sleeping_bash(), closed_pipe());
    let pid = wait_for_line(&dir.path().join("sleep.pid"));
    send(child.id(), libc::SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129));
    assert_trace_ends_with(&trace, "acting.abort");
    assert!(is_dead(&pid), "sleep {pid} survived");
}

/// The rule a refusal outside the working directory suggests is the narrowest that would allow
/// the call: a Grep of `/tmp` suggests `Grep(//tmp/**)` (not `Grep(///**)`, the whole file
/// system), a Read of a file its directory's tree.
#[test]
fn an_outside_call_suggests_the_narrowest_rule() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let outside = outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("notes.txt"), "x\n").unwrap();
    let scenario = dir.path().join("outside.json");
    let doc = serde_json::json!({
        "prompt": "look outside",
        "responses": [
            {"content": [
                {"type": "tool_use", "name": "Grep", "input": {"pattern": "needle", "path": "/tmp"}},
                {"type": "tool_use", "name": "Read", "input": {"file_path": outside.join("notes.txt")}}
            ]},
            {"content": [{"type": "text", "text": "refused"}], "expect": {"tool_result_is_error": [true, true]}}
        ]
    });
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let out = agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", cwd.to_str().unwrap()])
        .args(["--output-format", "stream-json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let results = tool_results(&stdout);
    let cwd = cwd.canonicalize().unwrap();
    assert_eq!(
        results,
        [
            format!(
                "/tmp is outside the working directory {}; a rule such as `Grep(//tmp/**)` would allow it.",
                cwd.display()
            ),
            format!(
                "{}/notes.txt is outside the working directory {}; a rule such as `Read(/{}/**)` would allow it.",
                outside.display(),
                cwd.display(),
                outside.display()
            ),
        ]
    );
}
