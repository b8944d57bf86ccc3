//! Sessions as users run them, against a local Messages API server: a Read run, then
//! `--resume ID` and `--continue` send the earlier conversation; a run killed with SIGKILL in
//! the middle of a tool resumes with every tool_use answered; the transcript's uuid chain is
//! consistent; `agentloop sessions` lists them.

use crate::mock_api;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, Sse, read_round_trip};
use serde_json::{Value, json};

const PROMPT: &str = "Read greeting.txt and tell me what it says";

fn command(home: &Path, base: &str) -> Command {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"] {
        command.env_remove(name);
    }
    command
        .env("AGENTLOOP_HOME", home)
        .env("ANTHROPIC_BASE_URL", base)
        .env("ANTHROPIC_API_KEY", "x")
        .stdin(Stdio::null());
    command
}

fn run(home: &Path, base: &str, args: &[&str]) -> (i32, String, String) {
    let out = command(home, base).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn answer(text: &str) -> Reply {
    Reply::Sse(Sse::new("claude-sonnet-4-5", 1400).text(text).stop("end_turn"))
}

fn json_result(out: &str) -> Value {
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// The transcript's lines, parsed.
fn transcript(home: &Path, id: &str) -> Vec<Value> {
    let dirs: Vec<_> = std::fs::read_dir(home.join("projects")).unwrap().map(|d| d.unwrap().path()).collect();
    let path = dirs.iter().map(|d| d.join(format!("{id}.jsonl"))).find(|p| p.exists()).unwrap();
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Every message line's `parentUuid` is the previous message line's `uuid` (null first), and
/// every line names the session.
fn assert_chain(lines: &[Value], id: &str) {
    let mut previous = Value::Null;
    for line in lines {
        assert_eq!(line["sessionId"], id, "{line}");
        if line["type"] == "user" || line["type"] == "assistant" {
            assert_eq!(line["parentUuid"], previous, "{line}");
            previous = line["uuid"].clone();
        }
    }
}

#[test]
fn resume_and_continue_send_the_earlier_conversation() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    let cwd = dir.path().to_str().unwrap();

    let api = MockApi::start(read_round_trip());
    let args = ["run", "-p", PROMPT, "--model", "claude-sonnet-4-5", "--cwd", cwd, "--output-format", "json"];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    let first = json_result(&out);
    let id = first["session_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let earlier = strip_cache_control(&api.bodies()[1]["messages"]);
    assert_eq!(earlier.as_array().unwrap().len(), 3, "prompt, Read call, its result");

    // --resume ID: the next request is the whole earlier conversation, then the new prompt.
    let api = MockApi::start(vec![answer("It was a greeting.")]);
    let args = ["run", "--resume", &id, "-p", "What was it?", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "It was a greeting.\n");
    let sent = &api.bodies()[0]["messages"];
    let mut expected = earlier.as_array().unwrap().clone();
    expected.push(json!({"role": "assistant", "content": [{"type": "text", "text": mock_api::ROUND_TRIP_ANSWER}]}));
    expected.push(json!({"role": "user", "content": [{"type": "text", "text": "What was it?"}]}));
    assert_eq!(strip_cache_control(sent), Value::Array(expected.clone()));

    // --continue: the most recent session of this directory, grown by the resumed prompt.
    let api = MockApi::start(vec![answer("Yes.")]);
    let args =
        ["run", "--continue", "-p", "Sure?", "--model", "claude-sonnet-4-5", "--cwd", cwd, "--output-format", "json"];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_result(&out)["session_id"], id.as_str());
    let sent = strip_cache_control(&api.bodies()[0]["messages"]);
    expected.push(json!({"role": "assistant", "content": [{"type": "text", "text": "It was a greeting."}]}));
    expected.push(json!({"role": "user", "content": [{"type": "text", "text": "Sure?"}]}));
    assert_eq!(sent, Value::Array(expected));

    let lines = transcript(home.path(), &id);
    assert_chain(&lines, &id);
    let ends: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "agentloop-prompt-end")
        .map(|l| l["terminalReason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["completed", "completed", "completed"]);

    // `agentloop sessions` lists it, with its first prompt and last ending.
    let listed = command(home.path(), "http://127.0.0.1:9")
        .args(["sessions", "--format", "json", "--cwd", cwd])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["session_id"], id.as_str());
    assert_eq!(listed[0]["first_prompt"], PROMPT);
    assert_eq!(listed[0]["last_terminal_reason"], "completed");
    assert_eq!(listed[0]["prompts"], 3);

    // --fork-session: a new id with the same conversation; the original is left as it was.
    let api = MockApi::start(vec![answer("Forked.")]);
    let args = [
        "run",
        "--resume",
        &id,
        "--fork-session",
        "-p",
        "Again?",
        "--model",
        "claude-sonnet-4-5",
        "--cwd",
        cwd,
        "--output-format",
        "json",
    ];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    let fork = json_result(&out)["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, id);
    assert_eq!(api.bodies()[0]["messages"].as_array().unwrap().len(), 9);
    assert_chain(&transcript(home.path(), &fork), &fork);
    assert_eq!(transcript(home.path(), &id).len(), lines.len(), "the original is untouched");
}

/// The API wants `cache_control` on the last block; the conversation itself has none.
fn strip_cache_control(messages: &Value) -> Value {
    let mut messages = messages.clone();
    for m in messages.as_array_mut().unwrap() {
        for block in m["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    messages
}

/// What the model is told of a call a kill left without a result: it may have run.
const OUTCOME_UNKNOWN: &str = "Interrupted: the tool may have started and its outcome is unknown";

#[test]
fn a_run_killed_mid_tool_resumes_with_every_tool_use_answered() {
    assert_eq!(agentloop::tools::OUTCOME_UNKNOWN_RESULT, OUTCOME_UNKNOWN);
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let id = "6a1f5c0e-4b7d-4c2a-9e8f-0123456789ab";
    let call = Reply::Sse(
        Sse::new("claude-sonnet-4-5", 1200)
            .text("Waiting.")
            .tool_use("toolu_sleep", "Bash", &json!({"command": "sleep 3"}))
            .stop("tool_use"),
    );
    let api = MockApi::start(vec![call]);
    let mut child = command(home.path(), &api.base_url())
        .args(["run", "-p", "Wait a bit", "--model", "claude-sonnet-4-5", "--cwd", cwd])
        .args(["--session-id", id, "--allowedTools", "Bash(sleep:*)"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The assistant message with the call is written before the tool starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let written = std::fs::read_dir(home.path().join("projects"))
            .ok()
            .and_then(|mut d| d.next())
            .map(|d| d.unwrap().path().join(format!("{id}.jsonl")))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .is_some_and(|t| t.contains("toolu_sleep"));
        if written {
            break;
        }
        assert!(Instant::now() < deadline, "the call was never written");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL: no cleanup, no terminal record
    child.wait().unwrap();

    let api = MockApi::start(vec![answer("Resumed.")]);
    let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Resumed.\n");
    assert!(
        err.contains(&format!(
            "session {id} was cut off while its tools ran; from the tool journal: 1 call interrupted, its outcome \
unknown (toolu_sleep)"
        )),
        "{err}"
    );
    let sent = strip_cache_control(&api.bodies()[0]["messages"]);
    assert_eq!(
        sent,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Wait a bit"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Waiting."},
                {"type": "tool_use", "id": "toolu_sleep", "name": "Bash", "input": {"command": "sleep 3"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_sleep", "content": OUTCOME_UNKNOWN, "is_error": true},
                {"type": "text", "text": agentloop::engine::acting::INTERRUPTED_TOOLS},
                {"type": "text", "text": "Go on"}
            ]}
        ])
    );
    let lines = transcript(home.path(), id);
    assert_chain(&lines, id);
    // Resumed again, the repaired history loads as it is: nothing left to repair.
    let api = MockApi::start(vec![answer("Still here.")]);
    let args = ["run", "--continue", "-p", "Again", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, _, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("cut off"), "{err}");
    assert_eq!(api.bodies()[0]["messages"].as_array().unwrap().len(), 5);
}

/// A run killed in ExecuteTools, with one call finished, one running and one not started:
/// the resume replays the finished call's result from the tool journal, tells the model the
/// running command's outcome is unknown (it may have changed something: it is never run
/// again), runs the call that never started (`prepare.resume_tools`), and only then sends the
/// prompt.
#[test]
fn a_run_killed_in_execute_tools_resumes_with_the_finished_results_kept() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    let cwd = dir.path().to_str().unwrap();
    let id = "7b2f5c0e-4b7d-4c2a-9e8f-0123456789ab";
    let batch = Reply::Sse(
        Sse::new("claude-sonnet-4-5", 1200)
            .tool_use("toolu_read", "Read", &json!({"file_path": "greeting.txt"}))
            .tool_use("toolu_slow", "Bash", &json!({"command": "touch started && sleep 30"}))
            .tool_use("toolu_next", "Bash", &json!({"command": "touch never"}))
            .stop("tool_use"),
    );
    let api = MockApi::start(vec![batch]);
    let mut child = command(home.path(), &api.base_url())
        .args(["run", "-p", "Do three things", "--model", "claude-sonnet-4-5", "--cwd", cwd])
        .args(["--session-id", id, "--allowedTools", "Bash(touch:*)", "Bash(sleep:*)"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.path().join("started").exists() {
        assert!(Instant::now() < deadline, "the slow call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL while `sleep 30` runs
    child.wait().unwrap();

    let api = MockApi::start(vec![answer("Resumed.")]);
    let trace = home.path().join("resumed.jsonl");
    // The calls the resumed run runs go through its permissions like any other.
    let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd, "--trace=jsonl"];
    let allowed = ["--allowedTools", "Bash(touch:*)"];
    let trace_file = ["--trace-file", trace.to_str().unwrap()];
    let (code, out, err) = run(home.path(), &api.base_url(), &[&args[..], &trace_file[..], &allowed[..]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Resumed.\n");
    // The resumed run's trace says what the journal gave back.
    let header: Value = serde_json::from_str(std::fs::read_to_string(&trace).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(
        header["recovered_calls"],
        json!({"replayed": ["toolu_read"], "interrupted": ["toolu_slow"], "not_started": [], "rerun": [],
               "run": ["toolu_next"]})
    );
    let edges: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "transition")
        .map(|r| r["edge"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        edges,
        [
            "prepare.resume_tools",
            "tools.done",
            "checkpoint.next_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
    let audit = Command::cargo_bin("agentloop")
        .unwrap()
        .args(["audit", "--coverage", trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));
    assert!(
        err.contains(&format!(
            "session {id} was cut off while its tools ran; from the tool journal: 1 result replayed (toolu_read), \
1 call interrupted, its outcome unknown (toolu_slow), 1 call never started, to run now (toolu_next)"
        )),
        "{err}"
    );
    let sent = strip_cache_control(&api.bodies()[0]["messages"]);
    assert_eq!(
        sent[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_read", "content": "     1\tHello from the greeting file!\n"},
            {"type": "tool_result", "tool_use_id": "toolu_slow", "content": OUTCOME_UNKNOWN, "is_error": true},
            {"type": "tool_result", "tool_use_id": "toolu_next", "content": "(no output)"},
            {"type": "text", "text": agentloop::engine::acting::INTERRUPTED_TOOLS},
            {"type": "text", "text": "Go on"}
        ]})
    );
    assert!(dir.path().join("never").exists(), "the call that never started ran in the resumed run");
    let lines = transcript(home.path(), id);
    assert_chain(&lines, id);
    // Each call's journal lines, in order (the calls' lines interleave as they ran): the call
    // that never started was queued in the killed run and again in the resumed one.
    let phases = |id: &str| -> Vec<&str> {
        lines
            .iter()
            .filter(|l| l["type"] == "agentloop-tool" && l["toolUseId"] == id)
            .map(|l| l["phase"].as_str().unwrap())
            .collect()
    };
    assert_eq!(phases("toolu_read"), ["queued", "start", "end"]);
    assert_eq!(phases("toolu_slow"), ["queued", "start"]);
    assert_eq!(phases("toolu_next"), ["queued", "queued", "start", "end"]);
    // The results line comes before the prompt's, and loading the file gives what was sent.
    let kinds: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "user" || l["type"] == "assistant")
        .map(|l| {
            let first = &l["message"]["content"][0];
            format!("{}:{}", l["type"].as_str().unwrap(), first["type"].as_str().unwrap_or("text"))
        })
        .collect();
    assert_eq!(kinds, ["user:text", "assistant:tool_use", "user:tool_result", "user:text", "assistant:text"]);
    let api = MockApi::start(vec![answer("Again.")]);
    let args = ["run", "--resume", id, "-p", "More", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, _, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("cut off"), "{err}");
    let again = strip_cache_control(&api.bodies()[0]["messages"]);
    assert_eq!(again[2], sent[2]);
}

#[test]
fn bad_session_flags_are_refused_clearly() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let base = "http://127.0.0.1:9";
    let (code, _, err) =
        run(home.path(), base, &["run", "--resume", "nope", "-p", "x", "--cwd", cwd, "--model", "claude-sonnet-4-5"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("agentloop: `nope` is not a session id"), "{err}");
    let missing = "6a1f5c0e-4b7d-4c2a-9e8f-0123456789ab";
    let (code, _, err) =
        run(home.path(), base, &["run", "--resume", missing, "-p", "x", "--cwd", cwd, "--model", "claude-sonnet-4-5"]);
    assert_eq!(code, 2);
    let shown = std::fs::canonicalize(cwd).unwrap();
    assert_eq!(
        err,
        format!("agentloop: no session {missing} in {}; `agentloop sessions` lists them\n", shown.display())
    );
    let (code, _, err) =
        run(home.path(), base, &["run", "--continue", "-p", "x", "--cwd", cwd, "--model", "claude-sonnet-4-5"]);
    assert_eq!(code, 2);
    assert_eq!(err, format!("agentloop: no session to continue in {}\n", shown.display()));
    let (code, _, err) =
        run(home.path(), base, &["run", "--fork-session", "-p", "x", "--cwd", cwd, "--model", "claude-sonnet-4-5"]);
    assert_eq!(code, 2);
    assert_eq!(err, "agentloop: --fork-session needs --resume ID or --continue\n");
}

/// In one process: two prompts on one session; the second request carries the first prompt's
/// whole conversation, and each terminal reason ends its prompt, not the session.
#[tokio::test]
async fn prompts_in_a_row_on_one_session_send_the_growing_history() {
    use agentloop::engine::clock::VirtualClock;
    use agentloop::engine::machine::Deps;
    use agentloop::engine::options::EngineOptions;
    use agentloop::engine::run::run_prompt;
    use agentloop::engine::session::Session;
    use agentloop::hooks::command::CommandHooks;
    use agentloop::model::scripted::ScriptedModel;
    use agentloop::permissions::{Mode, Policy};
    use agentloop::protocol::Role;
    use agentloop::scenario::Scenario;
    use agentloop::session::Uuid;
    use agentloop::tools::Registry;
    use agentloop::tools::ShellEnv;
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let scenario = Scenario::parse(
        "two.json",
        &json!({
            "name": "two-prompts", "description": "two prompts", "prompt": "unused",
            "responses": [
                {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}}]},
                {"content": [{"type": "text", "text": "It says alpha."}]},
                {"content": [{"type": "text", "text": "Yes, alpha."}]}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let model = Arc::new(ScriptedModel::new(&scenario, cancel.clone()));
    let deps = Deps {
        model: model.clone(),
        tools: Registry::standard(),
        hooks: Arc::new(CommandHooks::new(Default::default())),
        effects: Arc::new(VirtualClock::new()),
        cancel,
        cwd: dir.path().to_path_buf(),
        policy: Arc::new(Policy::new(Mode::Default, dir.path().to_path_buf())),
        shell_env: Arc::new(ShellEnv::inherited(&[])),
        sandbox: agentloop::sandbox::Sandbox::none(),
        approver: Arc::new(agentloop::permissions::Unattended),
    };
    let mut session = Session::in_memory(Uuid::new_v4(), dir.path().to_path_buf());
    let first = run_prompt(&mut session, deps.clone(), EngineOptions::default(), "Read a.txt", Box::new(|_: &_| {}))
        .await
        .unwrap();
    assert_eq!(first.terminal.as_str(), "completed");
    assert_eq!(session.messages.len(), 4);
    let second = run_prompt(&mut session, deps, EngineOptions::default(), "Sure?", Box::new(|_: &_| {})).await.unwrap();
    assert_eq!(second.final_text, "Yes, alpha.");
    assert_eq!(session.prompts, 2);
    let requests = model.requests();
    let last = &requests.last().unwrap().1.messages;
    let roles: Vec<Role> = last.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User, Role::Assistant, Role::User]);
    assert_eq!(last[0].text(), "Read a.txt");
    assert_eq!(last[3].text(), "It says alpha.");
    assert_eq!(last[4].text(), "Sure?");
    assert_eq!(session.messages.len(), 6);
}

/// A planted transcript line whose `tool_result` answers no call (and one that answers a call
/// twice) is not sent: the resume drops those blocks, warns naming the file and line, and
/// records the repair so that the next resume is clean.
#[test]
fn an_orphan_or_repeated_tool_result_is_dropped_with_a_warning_naming_its_line() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let id = "0b7e2a4c-1d3f-4e5a-8b6c-7d8e9f0a1b2c";
    let project = agentloop::session::SessionStore::new(home.path()).project_dir(&cwd);
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join(format!("{id}.jsonl"));
    let read = json!({"file_path": "a.txt"});
    let messages = [
        json!({"role": "user", "content": "Read a.txt"}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": read}
        ]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "alpha"},
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "alpha again"}
        ]}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "It says alpha."}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "stale"},
            {"type": "text", "text": "And then?"}
        ]}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "Nothing more."}]}),
    ];
    let mut parent = Value::Null;
    let mut text = String::new();
    for (n, message) in messages.iter().enumerate() {
        let uuid = format!("00000000-0000-4000-8000-00000000000{n}");
        let line = json!({
            "parentUuid": parent, "isSidechain": false, "type": message["role"], "message": message,
            "uuid": uuid, "timestamp": "2026-01-02T03:04:05.000Z", "cwd": cwd, "sessionId": id,
        });
        text.push_str(&format!("{line}\n"));
        parent = Value::String(uuid);
    }
    std::fs::write(&path, text).unwrap();

    let api = MockApi::start(vec![answer("Going on.")]);
    let cwd_arg = cwd.to_str().unwrap();
    let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd_arg];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Going on.\n");
    let shown = path.display();
    assert_eq!(
        err,
        format!(
            "agentloop: warning: {shown}:3: dropped the tool_result for toolu_a: that call already has a result\n\
agentloop: warning: {shown}:5: dropped the tool_result for toolu_ghost: it answers no tool_use of the assistant \
message before it\n"
        )
    );
    let sent = strip_cache_control(&api.bodies()[0]["messages"]);
    assert_eq!(
        sent,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
            messages[1],
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "alpha"}]},
            messages[3],
            {"role": "user", "content": [{"type": "text", "text": "And then?"}]},
            messages[5],
            {"role": "user", "content": [{"type": "text", "text": "Go on"}]}
        ])
    );

    // The repair was recorded: the next resume warns of nothing and sends the same history.
    let api = MockApi::start(vec![answer("Still going.")]);
    let args = ["run", "--resume", id, "-p", "More", "--model", "claude-sonnet-4-5", "--cwd", cwd_arg];
    let (code, _, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(api.bodies()[0]["messages"].as_array().unwrap().len(), 9);
}

/// Two processes on one session: while the first runs (its reply held back by the API), a
/// second `--resume` is refused naming the first's pid and appends nothing; `--fork-session`
/// goes on in a new session; once the first is killed, the session is free again.
#[test]
fn a_session_in_use_is_refused_or_forked_and_free_again_after_a_kill() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let id = "3c9d1e2f-5a6b-4c7d-8e9f-a0b1c2d3e4f5";
    let late = Sse::new("claude-sonnet-4-5", 1000).text("Late.").stop("end_turn");
    let slow = MockApi::start(vec![Reply::paused_before(late, "Late.", Duration::from_secs(600))]);
    let mut first = command(home.path(), &slow.base_url())
        .args(["run", "-p", "Hold on", "--model", "claude-sonnet-4-5", "--cwd", cwd, "--session-id", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its request arrived: the session is open, its prompt written.
    let deadline = Instant::now() + Duration::from_secs(60);
    while slow.requests().is_empty() {
        assert!(Instant::now() < deadline, "the first run never sent its request");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lines = transcript(home.path(), id);
    assert_eq!(lines.iter().map(|l| l["type"].as_str().unwrap()).collect::<Vec<_>>(), ["agentloop-meta", "user"]);

    let api = MockApi::start(vec![]);
    for which in [&["--resume", id][..], &["--continue"][..]] {
        let args = [&["run"], which, &["-p", "Me too", "--model", "claude-sonnet-4-5", "--cwd", cwd]].concat();
        let (code, out, err) = run(home.path(), &api.base_url(), &args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}");
        assert_eq!(
            err,
            format!(
                "agentloop: session {id} is in use by pid {}; wait for it to end, or add --fork-session to go on \
in a new session\n",
                first.id()
            )
        );
    }
    // The SDK's stream-json mode is refused the same way, with the error result the SDK raises.
    let sdk = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--resume", id];
    let (code, out, err) =
        run(home.path(), &api.base_url(), &[&sdk[..], &["--model", "claude-sonnet-4-5", "--cwd", cwd]].concat());
    let refusal = format!(
        "session {id} is in use by pid {}; wait for it to end, or add --fork-session to go on in a new session",
        first.id()
    );
    assert_eq!((code, err), (2, format!("agentloop: {refusal}\n")));
    let result = json_result(&out);
    assert_eq!((&result["subtype"], &result["errors"]), (&json!("error_during_execution"), &json!([refusal])));
    assert!(api.requests().is_empty());
    assert_eq!(transcript(home.path(), id), lines, "nothing appended");

    let api = MockApi::start(vec![answer("Forked.")]);
    let args = ["run", "--resume", id, "--fork-session", "-p", "Branch", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, out, err) = run(home.path(), &api.base_url(), &[&args[..], &["--output-format", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let fork = json_result(&out)["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, id);
    assert_eq!(
        strip_cache_control(&api.bodies()[0]["messages"]),
        json!([{"role": "user", "content": [{"type": "text", "text": "Hold on"}, {"type": "text", "text": "Branch"}]}])
    );
    assert_eq!(transcript(home.path(), id), lines, "the fork leaves the session as it was");

    first.kill().unwrap(); // SIGKILL: the kernel releases the lock
    first.wait().unwrap();
    let api = MockApi::start(vec![answer("Back.")]);
    let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, out, err) = run(home.path(), &api.base_url(), &args);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "Back.\n", ""));
    let after = transcript(home.path(), id);
    assert_eq!(after[..2], lines[..]);
    assert_chain(&after, id);
}

/// Runs `agentloop ARGS` in a user and mount namespace after `mounts` (a shell script whose
/// `$STORE` is `store`), with `store` as `AGENTLOOP_HOME`; `None` when this system has no
/// user namespaces.
fn run_with_mounts(store: &Path, base: &str, mounts: &str, args: &[&str]) -> Option<(i32, String, String)> {
    let probe = Command::new("unshare").args(["--user", "--map-root-user", "--mount", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: `unshare --user --map-root-user --mount` does not work here");
        return None;
    }
    let agentloop = assert_cmd::cargo::cargo_bin("agentloop");
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &format!("{mounts}\nexec \"$@\""), "sh"])
        .arg(agentloop)
        .args(args);
    for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"] {
        command.env_remove(name);
    }
    let out = command
        .env("STORE", store)
        .env("AGENTLOOP_HOME", store)
        .env("ANTHROPIC_BASE_URL", base)
        .env("ANTHROPIC_API_KEY", "x")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    ))
}

/// A store that cannot be written — `AGENTLOOP_HOME` under a regular file, a read-only file
/// system (for a new session and for a resume), a full disk — does not stop the run: the
/// session is kept in memory with one warning, and the run answers and exits 0.
#[test]
fn an_unwritable_store_keeps_the_session_in_memory_with_one_warning() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let cwd_arg = cwd.to_str().unwrap();
    // The directory of the sessions of `cwd` in the store rooted at `home`.
    let project_dir = |home: &std::path::Path| agentloop::session::SessionStore::new(home).project_dir(&cwd);
    let prompt = ["run", "-p", "Hi", "--model", "claude-sonnet-4-5", "--cwd", cwd_arg];

    // Under a regular file: ENOTDIR.
    let file = root.path().join("file");
    std::fs::write(&file, "not a directory\n").unwrap();
    let under_file = file.join("home");
    let api = MockApi::start(vec![answer("Hello.")]);
    let (code, out, err) = run(&under_file, &api.base_url(), &prompt);
    assert_eq!((code, out.as_str()), (0, "Hello.\n"), "{err}");
    let projects = project_dir(&under_file);
    assert_eq!(
        err,
        format!(
            "agentloop: warning: the session is not written ({}: Not a directory (os error 20))\n",
            projects.display()
        )
    );

    // A read-only file system, for a new session.
    let store = root.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let api = MockApi::start(vec![answer("Hello.")]);
    let read_only = r#"mount -t tmpfs -o ro tmpfs "$STORE" || exit 99"#;
    let Some((code, out, err)) = run_with_mounts(&store, &api.base_url(), read_only, &prompt) else { return };
    assert_eq!((code, out.as_str()), (0, "Hello.\n"), "{err}");
    assert_eq!(
        err,
        format!(
            "agentloop: warning: the session is not written ({}: Read-only file system (os error 30))\n",
            project_dir(&store).display()
        )
    );

    // A read-only file system, for a resume: the history is sent, the transcript untouched.
    let api = MockApi::start(vec![answer("First.")]);
    let (code, out, err) = run(&store, &api.base_url(), &[&prompt[..], &["--output-format", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let id = json_result(&out)["session_id"].as_str().unwrap().to_owned();
    let before = transcript(&store, &id);
    let api = MockApi::start(vec![answer("Second.")]);
    let remount = r#"mount --bind "$STORE" "$STORE" && mount -o remount,bind,ro "$STORE" || exit 99"#;
    let resume = ["run", "--resume", &id, "-p", "Again", "--model", "claude-sonnet-4-5", "--cwd", cwd_arg];
    let (code, out, err) = run_with_mounts(&store, &api.base_url(), remount, &resume).unwrap();
    assert_eq!((code, out.as_str()), (0, "Second.\n"), "{err}");
    let lock = project_dir(&store).join(format!("{id}.jsonl.lock"));
    assert_eq!(
        err,
        format!(
            "agentloop: warning: the session is not written ({}: Read-only file system (os error 30))\n",
            lock.display()
        )
    );
    assert_eq!(
        strip_cache_control(&api.bodies()[0]["messages"]),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "First."}]},
            {"role": "user", "content": [{"type": "text", "text": "Again"}]}
        ])
    );
    assert_eq!(transcript(&store, &id), before);

    // A full disk: a small file system filled up before the run.
    let full = root.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let api = MockApi::start(vec![answer("Hello.")]);
    let fill = r#"mount -t tmpfs -o size=64k tmpfs "$STORE" || exit 99
dd if=/dev/zero of="$STORE/fill" bs=4096 2>/dev/null"#;
    let (code, out, err) = run_with_mounts(&full, &api.base_url(), fill, &prompt).unwrap();
    assert_eq!((code, out.as_str()), (0, "Hello.\n"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("agentloop: warning: the session is not written ("), "{err}");
    assert!(err.ends_with(": No space left on device (os error 28))\n"), "{err}");
}

/// Waits until `api` has received `n` requests.
fn wait_for_requests(api: &MockApi, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.requests().len() < n {
        assert!(Instant::now() < deadline, "only {} of {n} requests arrived", api.requests().len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kill points without a durable engine, each checked against what the resumed run sends and
/// how often each model attempt was made: a kill while a reply streams (the reply was never
/// recorded, so the resumed run asks again, once) and a kill while a retry's backoff waits
/// (the failed attempt left nothing; the resumed run sends the request once more). In both
/// the resumed history is the prompt followed by the new one, and nothing is answered twice.
#[test]
fn a_run_killed_mid_reply_or_mid_backoff_resumes_with_one_more_attempt() {
    for (name, first) in [
        (
            "mid-reply",
            Reply::paused_before(
                Sse::new("claude-sonnet-4-5", 1200).text("Half an answer").stop("end_turn"),
                "message_stop",
                Duration::from_secs(30),
            ),
        ),
        ("mid-backoff", Reply::error(529, "overloaded_error", "Overloaded")),
    ] {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_str().unwrap();
        let id = "8c3f5c0e-4b7d-4c2a-9e8f-0123456789ab";
        let api = MockApi::start(vec![first]);
        // The backoff after the 529 is 30 s: the kill comes while it waits.
        let mut child = command(home.path(), &api.base_url())
            .args(["run", "-p", "Say something", "--model", "claude-sonnet-4-5", "--cwd", cwd])
            .args(["--session-id", id, "--retry-base-delay-ms", "30000", "--retry-max-delay-ms", "30000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_requests(&api, 1);
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert_eq!(api.requests().len(), 1, "{name}: one attempt before the kill");

        let api = MockApi::start(vec![answer("Whole answer.")]);
        let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd];
        let (code, out, err) = run(home.path(), &api.base_url(), &args);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(out, "Whole answer.\n", "{name}");
        assert_eq!(api.requests().len(), 1, "{name}: the resumed run asked once");
        assert!(!err.contains("cut off"), "{name}: nothing to repair: {err}");
        let sent = strip_cache_control(&api.bodies()[0]["messages"]);
        assert_eq!(
            sent,
            json!([{"role": "user", "content": [
                {"type": "text", "text": "Say something"},
                {"type": "text", "text": "Go on"}
            ]}]),
            "{name}"
        );
        let lines = transcript(home.path(), id);
        assert_chain(&lines, id);
        let replies = lines.iter().filter(|l| l["type"] == "assistant").count();
        assert_eq!(replies, 1, "{name}: only the resumed run's reply is recorded");
    }
}

/// A permission question still waiting for its answer when the run is killed (the SDK mode,
/// `--permission-prompt-tool stdio`): the call never started, so the resumed run puts it to
/// its own permissions and runs it once, and nothing ran before.
#[test]
fn a_run_killed_while_a_permission_question_waits_runs_the_call_once_on_resume() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let id = "5d1c2b3a-4e5f-4a6b-8c7d-0123456789cd";
    let ask = Reply::Sse(
        Sse::new("claude-sonnet-4-5", 1200)
            .tool_use("toolu_ask", "Bash", &json!({"command": "touch asked.txt"}))
            .stop("tool_use"),
    );
    let api = MockApi::start(vec![ask]);
    let mut child = command(home.path(), &api.base_url())
        .args(["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5", "--session-id", id, "--permission-prompt-tool", "stdio"])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for frame in [
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}),
        json!({"type": "user", "message": {"role": "user", "content": "Note it."}, "parent_tool_use_id": null, "session_id": ""}),
    ] {
        writeln!(stdin, "{frame}").unwrap();
    }
    stdin.flush().unwrap();
    let asked = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
        .find(|frame| frame["type"] == "control_request" && frame["request"]["subtype"] == "can_use_tool")
        .expect("the question was put to the SDK");
    assert_eq!(asked["request"]["tool_use_id"], "toolu_ask");
    child.kill().unwrap(); // SIGKILL while the question waits
    child.wait().unwrap();
    drop(stdin);
    assert!(!dir.path().join("asked.txt").exists(), "nothing ran before an answer");

    let api = MockApi::start(vec![answer("Noted.")]);
    let args = ["run", "--resume", id, "-p", "Go on", "--model", "claude-sonnet-4-5", "--cwd", cwd];
    let (code, out, err) =
        run(home.path(), &api.base_url(), &[&args[..], &["--allowedTools", "Bash(touch:*)"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Noted.\n");
    assert!(err.contains("1 call never started, to run now (toolu_ask)"), "{err}");
    assert!(dir.path().join("asked.txt").exists(), "the call ran in the resumed run");
    let sent = strip_cache_control(&api.bodies()[0]["messages"]);
    assert_eq!(
        sent[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_ask", "content": "(no output)"})
    );
}
