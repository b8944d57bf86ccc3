//! Sessions as users run them, against a local Messages API server: a Read run, then
//! `--resume ID` and `--continue` send the earlier conversation; a run killed with SIGKILL in
//! the middle of a tool resumes with every tool_use answered; the transcript's uuid chain is
//! consistent; `agentloop sessions` lists them.

#[path = "common/mock_api.rs"]
mod mock_api;

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

#[test]
fn a_run_killed_mid_tool_resumes_with_every_tool_use_answered() {
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
        err.contains(&format!("session {id} was cut off: 1 repair(s), 1 tool call(s) answered as interrupted")),
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
                {"type": "tool_result", "tool_use_id": "toolu_sleep", "content": agentloop::tools::orchestrate::INTERRUPTED_RESULT, "is_error": true},
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
    use agentloop::tools::shell_env::ShellEnv;
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
        clock: Arc::new(VirtualClock::new()),
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
