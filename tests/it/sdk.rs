//! agentloop driven by the real Claude Agent SDK (`claude-agent-sdk` from PyPI, no shim): each
//! test starts the local Messages API mock, runs a Python script from `tests/sdk/` with the
//! SDK's virtual environment (`.ci/cache/sdk-venv`, installed by `.ci/install-sdk` if it is
//! missing), and asserts on the JSON line of observations the script prints (the messages the
//! SDK's parser produced, what its callbacks saw) and on the request bodies the mock recorded.
//!
//! The CLI under test is the built `agentloop`, or `$AGENTLOOP_SDK_CLI_OVERRIDE` when set:
//! pointing that at the `claude` binary the SDK bundles checks that every script and assertion
//! is about behaviour Claude Code really has. Claude Code sends requests of its own beside
//! the conversation (`HEAD /api/hello`, a session title with no tools), which the mock
//! answers outside the script, and `system` role messages, which the mock then accepts.

use crate::cli_under_test;
use crate::conversation;
use crate::mock_api;

use cli_under_test::{cli_under_test, is_side_request};

use conversation::{content_text, in_order, transcript};

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::installed;
use mock_api::{MockApi, ROUND_TRIP_ANSWER, Reply, Sse};

use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// A test that takes longer than this has hung: its script is killed.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The SDK venv's python, after `.ci/install-sdk` made sure it holds the pinned SDK (once per
/// test binary; the script itself is a no-op when it does, and locks against other callers).
fn sdk_python() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let python = repo().join(".ci/cache/sdk-venv/bin/python");
        installed::ensure(&repo(), "install-sdk", python, "claude-agent-sdk", "PyPI")
    });
    ready.clone().unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario's scratch space: the CLI's home (agentloop's and Claude Code's config
/// directory) and the working directory the SDK starts it in.
struct Dirs {
    _root: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    // Canonical, so paths the CLI reports compare equal (e.g. /tmp behind a symlink).
    let cwd = cwd.canonicalize().unwrap();
    Dirs { _root: root, home, cwd }
}

impl Dirs {
    /// Claude Code's configuration directory, where both CLIs keep their sessions.
    fn claude(&self) -> PathBuf {
        self.home.join("claude")
    }

    /// A directory outside the working directory (and not under it).
    fn outside(&self) -> PathBuf {
        let dir = self.home.parent().unwrap().join("outside");
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    /// The transcript of session `id` of the working directory.
    fn transcript(&self, id: &str) -> PathBuf {
        let slug: String =
            self.cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        self.claude().join("projects").join(slug).join(format!("{id}.jsonl"))
    }
}

/// The mock with the scenario's `script`, answering side requests outside it. Against the
/// reference CLI it also accepts the `system` role messages Claude Code sends.
fn mock(script: Vec<Reply>) -> MockApi {
    let mock = MockApi::start(script).answer_side_requests(|request| {
        is_side_request(request).then(|| {
            if request.request_line.starts_with("POST ") {
                Reply::Sse(Sse::new(MODEL, 100).text("Side request answered.").stop("end_turn"))
            } else {
                Reply::Sse(String::new())
            }
        })
    });
    if std::env::var_os("AGENTLOOP_SDK_CLI_OVERRIDE").is_some() { mock.allow_other_roles() } else { mock }
}

/// Run `tests/sdk/{script}` against `mock` in `dirs`; the JSON observations it printed.
fn run_script(script: &str, mock: &MockApi, dirs: &Dirs) -> Value {
    let mut command = Command::new(sdk_python());
    command.arg(repo().join("tests/sdk").join(script)).current_dir(&dirs.cwd);
    for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDECODE"] {
        command.env_remove(name);
    }
    command
        .env("AGENTLOOP_SDK_CLI", cli_under_test())
        .env("AGENTLOOP_SDK_CWD", &dirs.cwd)
        .env("AGENTLOOP_SDK_OUTSIDE", dirs.outside())
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        // Both CLIs keep their sessions in Claude Code's directory, where the SDK reads them.
        .env_remove("AGENTLOOP_HOME")
        .env("CLAUDE_CONFIG_DIR", dirs.claude())
        .env("HOME", &dirs.home)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
    let pid = child.id();
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = thread::spawn(move || {
        if finished.recv_timeout(SCRIPT_DEADLINE).is_err() {
            // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("--- {script} stderr ---\n{stderr}--- {script} stdout ---\n{stdout}--- requests ---");
    for request in mock.requests() {
        let tools = request.body.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
        let messages = request.body.get("messages").and_then(Value::as_array).map_or(0, Vec::len);
        let side = if is_side_request(&request) { ", side request" } else { "" };
        eprintln!("{} ({tools} tools, {messages} messages{side})", request.request_line);
        if std::env::var_os("AGENTLOOP_SDK_SHOW_BODIES").is_some() {
            eprintln!("{}", request.body);
        }
    }
    let observations: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("{script} printed no observations ({}); stderr above", output.status));
    assert!(
        output.status.success() && observations.get("error").is_none(),
        "{script} failed ({}): {}\nstderr:\n{stderr}",
        output.status,
        observations.get("error").unwrap_or(&Value::Null)
    );
    observations
}

/// The bodies of the conversation's requests (not side requests), in order.
fn conversation_bodies(mock: &MockApi) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| !is_side_request(r)).map(|r| r.body).collect()
}

/// Every text of every assistant message, in order (a CLI may send one message per block or
/// one per reply: the texts are the same).
fn assistant_texts(messages: &Value) -> Vec<String> {
    of_type(messages, "assistant")
        .iter()
        .flat_map(|m| m["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()))
        .collect()
}

/// The names of every tool the assistant called, in order.
fn tool_calls(messages: &Value) -> Vec<Value> {
    of_type(messages, "assistant").iter().flat_map(|m| m["tool_uses"].as_array().unwrap().clone()).collect()
}

fn of_type<'a>(messages: &'a Value, kind: &str) -> Vec<&'a Value> {
    messages.as_array().expect("a list of messages").iter().filter(|m| m["type"] == kind).collect()
}

/// The one result message of a turn, which is its last message.
fn result(messages: &Value) -> &Value {
    let results = of_type(messages, "result");
    assert_eq!(results.len(), 1, "one result per turn: {messages:#}");
    assert_eq!(messages.as_array().unwrap().last(), Some(results[0]), "the result ends the turn");
    results[0]
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The tool_result blocks of a request's last message.
fn last_tool_results(body: &Value) -> Vec<Value> {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    last["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter(|b| b["type"] == "tool_result").cloned().collect())
        .unwrap_or_default()
}

fn text_reply(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 1000).text(text).stop("end_turn"))
}

/// (a) A one-shot `query()` of a Read round trip.
#[test]
fn one_shot_query_reads_a_file() {
    let dirs = dirs();
    std::fs::write(dirs.cwd.join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    let file = dirs.cwd.join("greeting.txt");
    let mock = mock(vec![
        Reply::Sse(
            Sse::new(MODEL, 1200)
                .text("Reading it.")
                .tool_use("toolu_01", "Read", &json!({"file_path": file}))
                .stop("tool_use"),
        ),
        text_reply(ROUND_TRIP_ANSWER),
    ]);
    let obs = run_script("one_shot.py", &mock, &dirs);
    let messages = &obs["messages"];

    assert_eq!(assistant_texts(messages), ["Reading it.", ROUND_TRIP_ANSWER]);
    assert_eq!(tool_calls(messages), [json!({"id": "toolu_01", "name": "Read", "input": {"file_path": file}})]);
    let results: Vec<Value> =
        of_type(messages, "user").iter().flat_map(|m| m["tool_results"].as_array().unwrap().clone()).collect();
    assert_eq!(results.len(), 1, "{messages:#}");
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
    assert_ne!(results[0]["is_error"], true);
    let result = result(messages);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], ROUND_TRIP_ANSWER);
    let session_id = result["session_id"].as_str().unwrap();
    assert!(is_uuid(session_id), "session_id {session_id:?} is a UUID");
    for message in of_type(messages, "assistant") {
        assert_eq!(message["session_id"], session_id);
    }
    let init = &messages[0];
    assert_eq!((&init["type"], &init["subtype"]), (&json!("system"), &json!("init")), "system/init comes first");
    assert_eq!(init["session_id"], session_id);

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    assert!(in_order(&transcript(&bodies[0]), &[("user", "Read greeting.txt and tell me what it says")]));
    let tool_results = last_tool_results(&bodies[1]);
    assert_eq!(tool_results.len(), 1);
    assert_eq!(tool_results[0]["tool_use_id"], "toolu_01");
    assert_ne!(tool_results[0]["is_error"], true);
    assert!(content_text(&tool_results[0]["content"]).contains("Hello from the greeting file!"));
    assert_eq!(mock.unserved(), 0);
}

/// (b) A `ClaudeSDKClient` session with two prompts: the second request carries the first
/// prompt's history.
#[test]
fn client_session_keeps_history_across_prompts() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Nice to meet you, Ada."), text_reply("Your name is Ada.")]);
    let obs = run_script("two_prompts.py", &mock, &dirs);
    let turns = obs["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(assistant_texts(&turns[0]), ["Nice to meet you, Ada."]);
    assert_eq!(assistant_texts(&turns[1]), ["Your name is Ada."]);
    let (first, second) = (result(&turns[0]), result(&turns[1]));
    for (result, text) in [(first, "Nice to meet you, Ada."), (second, "Your name is Ada.")] {
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["num_turns"], 1);
        assert_eq!(result["result"], text);
    }
    assert!(is_uuid(first["session_id"].as_str().unwrap()));
    assert_eq!(first["session_id"], second["session_id"], "one session");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let history = transcript(&bodies[1]);
    assert_carries_the_first_exchange(&history);
    assert_eq!(history.last().unwrap().0, "user");
    assert!(history.last().unwrap().1.contains("What is my name?"));
}

const BASH_COMMAND: &str = "echo hi > made_by_bash.txt && cat made_by_bash.txt";

fn bash_call(command: &str) -> Reply {
    Reply::Sse(
        Sse::new(MODEL, 1200)
            .text("I'll run a command.")
            .tool_use("toolu_bash", "Bash", &json!({"command": command, "description": "write a file"}))
            .stop("tool_use"),
    )
}

/// (c) `can_use_tool` allows a Bash call in the default permission mode; a PreToolUse hook
/// callback sees the call first.
#[test]
fn can_use_tool_allows_bash_and_a_hook_callback_sees_it() {
    let dirs = dirs();
    let mock = mock(vec![bash_call(BASH_COMMAND), text_reply("Done: the command printed hi.")]);
    let obs = run_script("allow_bash.py", &mock, &dirs);
    let input = json!({"command": BASH_COMMAND, "description": "write a file"});

    let events = obs["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{events:#?}");
    let (hook, asked) = (&events[0], &events[1]);
    assert_eq!(hook["callback"], "hook", "the hook runs before the permission prompt");
    assert_eq!(hook["hook_event_name"], "PreToolUse");
    assert_eq!(hook["tool_name"], "Bash");
    assert_eq!(hook["tool_input"], input);
    assert_eq!(hook["tool_use_id"], "toolu_bash");
    assert_eq!(hook["input_tool_use_id"], "toolu_bash");
    assert_eq!(asked["callback"], "can_use_tool");
    assert_eq!(asked["tool_name"], "Bash");
    assert_eq!(asked["input"], input);
    assert_eq!(asked["tool_use_id"], "toolu_bash");

    assert_eq!(std::fs::read_to_string(dirs.cwd.join("made_by_bash.txt")).unwrap(), "hi\n");
    let messages = &obs["messages"];
    assert_eq!(assistant_texts(messages), ["I'll run a command.", "Done: the command printed hi."]);
    let result = result(messages);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(hook["session_id"], result["session_id"]);

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let tool_results = last_tool_results(&bodies[1]);
    assert_eq!(tool_results.len(), 1);
    assert_eq!(tool_results[0]["tool_use_id"], "toolu_bash");
    assert_ne!(tool_results[0]["is_error"], true);
    assert_eq!(content_text(&tool_results[0]["content"]).trim(), "hi");
}

/// (d) `can_use_tool` denies a Bash call: the model reads the denial as an error tool_result.
#[test]
fn can_use_tool_denial_reaches_the_model() {
    let dirs = dirs();
    let mock = mock(vec![bash_call(BASH_COMMAND), text_reply("Understood, I will not run it.")]);
    let obs = run_script("deny_bash.py", &mock, &dirs);

    assert_eq!(
        obs["asked"],
        json!([{"tool_name": "Bash", "input": {"command": BASH_COMMAND, "description": "write a file"}}])
    );
    assert!(!dirs.cwd.join("made_by_bash.txt").exists(), "a denied command does not run");
    let messages = &obs["messages"];
    assert_eq!(assistant_texts(messages), ["I'll run a command.", "Understood, I will not run it."]);
    let result = result(messages);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "Bash", "tool_use_id": "toolu_bash",
                "tool_input": {"command": BASH_COMMAND, "description": "write a file"}}])
    );

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let tool_results = last_tool_results(&bodies[1]);
    assert_eq!(tool_results.len(), 1);
    assert_eq!(tool_results[0]["tool_use_id"], "toolu_bash");
    assert_eq!(tool_results[0]["is_error"], true);
    let text = content_text(&tool_results[0]["content"]);
    assert!(text.contains("Not in this test: writing files is off limits"), "{text:?}");
}

/// (e) `client.interrupt()` while a reply is still streaming, then another prompt that works.
#[test]
fn interrupt_during_a_slow_reply_then_another_prompt() {
    let dirs = dirs();
    let slow = Sse::new(MODEL, 1000).text("Once upon a time, ").stop("end_turn");
    let mock =
        mock(vec![Reply::paused_before(slow, "event: message_delta", Duration::from_secs(60)), text_reply("Hi!")]);
    let obs = run_script("interrupt.py", &mock, &dirs);

    assert_eq!(obs["interrupt_returned"], true);
    let interrupted = &obs["interrupted_turn"];
    let first = result(interrupted);
    assert_eq!(first["subtype"], "error_during_execution", "{first:#}");
    assert_eq!(first["is_error"], true);
    let second = &obs["second_turn"];
    assert_eq!(assistant_texts(second), ["Hi!"]);
    let result = result(second);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Hi!");
    assert_eq!(result["session_id"], first["session_id"], "the same session goes on");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let history = transcript(&bodies[1]);
    assert!(in_order(&history, &[("user", "Tell me a very long story"), ("user", "Say hi")]), "{history:#?}");
    assert_eq!(history.last().unwrap().0, "user");
}

/// (f) `query(resume=<session id>)` sends the earlier session's conversation.
#[test]
fn resume_continues_an_earlier_session() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Nice to meet you, Ada."), text_reply("Your name is Ada.")]);
    let obs = run_script("resume.py", &mock, &dirs);

    assert_eq!(assistant_texts(&obs["first"]), ["Nice to meet you, Ada."]);
    assert_eq!(assistant_texts(&obs["second"]), ["Your name is Ada."]);
    let (first, second) = (result(&obs["first"]), result(&obs["second"]));
    assert_eq!(first["subtype"], "success");
    assert_eq!(second["subtype"], "success");
    assert_eq!(second["result"], "Your name is Ada.");
    assert!(is_uuid(first["session_id"].as_str().unwrap()));
    assert_eq!(second["session_id"], first["session_id"], "resuming goes on in the same session");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    assert!(!in_order(&transcript(&bodies[0]), &[("assistant", "Nice to meet you")]));
    let history = transcript(&bodies[1]);
    assert_carries_the_first_exchange(&history);
}

/// (k) `setting_sources`: with it unset the CLI reads every source (the project's local
/// settings choose the output style), `["user"]` leaves the project's command and settings
/// out, all three bring them in; the project's command runs from its `/name`, and its output
/// style reaches the model when the system prompt is the CLI's own (the `claude_code` preset).
#[test]
fn setting_sources_choose_settings_commands_and_styles() {
    let dirs = dirs();
    let claude = dirs.cwd.join(".claude");
    std::fs::create_dir_all(claude.join("commands")).unwrap();
    std::fs::create_dir_all(claude.join("output-styles")).unwrap();
    std::fs::write(claude.join("settings.local.json"), r#"{"outputStyle": "local-test-style"}"#).unwrap();
    std::fs::write(claude.join("settings.json"), r#"{"outputStyle": "Pirate"}"#).unwrap();
    std::fs::write(
        claude.join("commands/testcmd.md"),
        "---\ndescription: Test command\n---\n\nArgs: $ARGUMENTS first=$0\n",
    )
    .unwrap();
    std::fs::write(
        claude.join("output-styles/pirate.md"),
        "---\nname: Pirate\ndescription: Talk like a pirate\n---\nAnswer like a pirate.\n",
    )
    .unwrap();
    let mock = mock(vec![text_reply("4."), text_reply("6."), text_reply("Ran it."), text_reply("Arr.")]);
    let obs = run_script("settings.py", &mock, &dirs);

    let commands = |case: &str| obs[case]["slash_commands"].as_array().unwrap().clone();
    assert_eq!(obs["default"]["output_style"], "local-test-style");
    assert!(commands("default").contains(&json!("testcmd")), "{:?}", commands("default"));
    assert_eq!(obs["user_only"]["output_style"], "default");
    assert!(!commands("user_only").contains(&json!("testcmd")), "{:?}", commands("user_only"));
    assert_eq!(obs["all"]["output_style"], "local-test-style");
    assert!(commands("all").contains(&json!("testcmd")));
    assert_eq!(obs["style"]["output_style"], "Pirate");
    for case in ["default", "user_only", "all", "style"] {
        assert_eq!(result(&obs[case]["messages"])["subtype"], "success", "{case}");
    }

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 4);
    assert!(in_order(&transcript(&bodies[2]), &[("user", "/testcmd"), ("user", "Args: alpha beta first=alpha")]));
    // Claude Code puts its styles in a system message, agentloop in the system prompt.
    assert!(!bodies[0].to_string().contains("# Output Style:"));
    assert!(bodies[3].to_string().contains(r"# Output Style: Pirate\nAnswer like a pirate."), "{}", bodies[3]);
    assert_eq!(mock.unserved(), 0);
}

#[test]
fn uuids_are_recognised() {
    assert!(is_uuid("4bdf8843-6342-492b-befa-479c5e1777ac"));
    assert!(!is_uuid("run-1"));
    assert!(!is_uuid("4bdf8843-6342-492b-befa-479c5e1777ag"));
}

/// (g) `include_partial_messages=True`: `StreamEvent`s carry every event of the API stream
/// as Claude Code forwards them, from `message_start` (with the API's message id) to
/// `message_stop`, and their text deltas add up to the assistant message's text.
#[test]
fn partial_messages_stream_the_text() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Hello there, from a streamed reply!")]);
    let obs = run_script("partial.py", &mock, &dirs);
    assert_eq!(obs["result"], "success", "{obs:#}");
    assert_eq!(obs["texts"], json!(["Hello there, from a streamed reply!"]));
    let events = obs["events"].as_array().unwrap();
    assert_eq!(obs["statuses"], json!(["requesting"]), "{obs:#}");
    let mut kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ],
        "{events:#?}"
    );
    assert!(events[0]["message"]["id"].as_str().is_some_and(|id| id.starts_with("msg_")), "{:#}", events[0]);
    assert_eq!(events[1]["content_block"]["type"], "text", "{:#}", events[1]);
    let delta = events.iter().find(|e| e["type"] == "message_delta").unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn", "{delta:#}");
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta")
        .map(|e| e["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Hello there, from a streamed reply!");
}

/// The second request of the Ada conversation: the first exchange, then the second prompt.
fn assert_carries_the_first_exchange(history: &[(String, String)]) {
    let first = [
        ("user", "My name is Ada. Please remember it."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ];
    assert!(in_order(history, &first), "{history:#?}");
}

/// (h) An MCP server in the SDK's `mcp_servers` option (server-everything from npm, installed
/// by `.ci/install-mcp-servers`): the model's call of its `echo` reaches it, and
/// `get_mcp_status()` reports it connected with its tools.
#[test]
fn sdk_mcp_server_answers_and_get_mcp_status_reports_it() {
    let everything = repo().join(".ci/cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    installed::ensure(&repo(), "install-mcp-servers", everything, "the MCP servers", "npm").unwrap();
    let dirs = dirs();
    let mock = mock(vec![
        Reply::Sse(
            Sse::new(MODEL, 1200)
                .tool_use("toolu_01", "mcp__everything__echo", &json!({"message": "via the SDK"}))
                .stop("tool_use"),
        ),
        text_reply("Echoed."),
    ]);
    let obs = run_script("mcp_status.py", &mock, &dirs);
    let tool_results = last_tool_results(&conversation_bodies(&mock)[1]);
    assert_eq!(tool_results.len(), 1);
    assert_eq!(content_text(&tool_results[0]["content"]), "Echo: via the SDK");
    assert_eq!(result(&obs["messages"])["result"], "Echoed.");
    let servers = obs["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{servers:?}");
    assert_eq!((&servers[0]["name"], &servers[0]["status"]), (&json!("everything"), &json!("connected")));
    let tools: Vec<&str> = servers[0]["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"echo") && tools.contains(&"get-sum"), "{tools:?}");
}

/// (i) An in-process SDK server (`create_sdk_mcp_server`), reached through `mcp_message`
/// control requests: the model's call of `mcp__calc__add` runs the Python tool and its
/// result reaches the model; a tool that raises gives an error result; `get_mcp_status()`
/// reports the server connected with its tools and `serverInfo`.
#[test]
fn sdk_in_process_server_runs_the_python_tools() {
    let dirs = dirs();
    let mock = mock(vec![
        Reply::Sse(
            Sse::new(MODEL, 1200).tool_use("toolu_01", "mcp__calc__add", &json!({"a": 2, "b": 40})).stop("tool_use"),
        ),
        Reply::Sse(
            Sse::new(MODEL, 1300).tool_use("toolu_02", "mcp__calc__divide", &json!({"a": 1, "b": 0})).stop("tool_use"),
        ),
        text_reply("2 + 40 = 42; 1 / 0 failed."),
    ]);
    let obs = run_script("sdk_server.py", &mock, &dirs);
    assert_eq!(obs.get("error"), None, "{obs:#}");
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3);
    let tools: Vec<&str> = bodies[0]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"mcp__calc__add") && tools.contains(&"mcp__calc__divide"), "{tools:?}");
    let added = last_tool_results(&bodies[1]);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["tool_use_id"], "toolu_01");
    assert_eq!(content_text(&added[0]["content"]), "42");
    assert_ne!(added[0]["is_error"], true);
    let divided = last_tool_results(&bodies[2]);
    assert_eq!(divided.len(), 1);
    assert_eq!(divided[0]["tool_use_id"], "toolu_02");
    assert_eq!(content_text(&divided[0]["content"]), "integer division or modulo by zero");
    assert_eq!(divided[0]["is_error"], true);
    assert_eq!(
        obs["calls"],
        json!([{"tool": "add", "args": {"a": 2, "b": 40}}, {"tool": "divide", "args": {"a": 1, "b": 0}}])
    );
    assert_eq!(result(&obs["messages"])["result"], "2 + 40 = 42; 1 / 0 failed.");
    assert_eq!(
        obs["servers"],
        json!([{"name": "calc", "status": "connected", "serverInfo": {"name": "calc", "version": "2.0.1"},
                "tools": ["add", "divide"]}])
    );
}

/// (i) An API error: the result is a `success` with `is_error: true`, Claude Code's
/// `API Error: …` prose and the HTTP status, and no `errors`; the CLI then exits 1, so the
/// SDK raises its `ResultError` with that result.
#[test]
fn an_api_error_result_makes_the_sdk_raise_result_error() {
    let dirs = dirs();
    let refusal = || Reply::Error {
        status: 404,
        headers: vec![("request-id".into(), "req_404".into())],
        body: json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}}),
    };
    let mock = mock(vec![refusal(), refusal(), refusal()]);
    let obs = run_script("error_result.py", &mock, &dirs);
    let result = result(&obs["messages"]).clone();
    assert_eq!(result["subtype"], "success", "{obs:#}");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "api_error");
    let prose = result["result"].as_str().unwrap().to_owned();
    assert!(prose.starts_with("API Error: 404") || std::env::var_os("AGENTLOOP_SDK_CLI_OVERRIDE").is_some(), "{prose}");
    let raised = &obs["raised"];
    assert_eq!(raised["type"], "ResultError", "{obs:#}");
    assert_eq!(raised["exit_code"], 1);
    assert_eq!(raised["subtype"], "success");
    assert_eq!(raised["terminal_reason"], "api_error");
    assert_eq!(raised["api_error_status"], 404);
    assert_eq!(raised["result"], json!(prose));
    assert!(raised["text"].as_str().unwrap().contains(prose.trim()), "{raised:#}");
}

/// (j) An in-process SDK server under a key (`calc`) other than its name (`calculator`), as
/// the Python SDK's calculator example registers it: the SDK looks servers up by their key,
/// so every `mcp_message` must name the key; the call reaches the Python tool.
#[test]
fn sdk_server_is_addressed_by_its_key_not_its_name() {
    let dirs = dirs();
    let mock = mock(vec![
        Reply::Sse(
            Sse::new(MODEL, 1200).tool_use("toolu_01", "mcp__calc__add", &json!({"a": 2, "b": 3})).stop("tool_use"),
        ),
        text_reply("2 + 3 = 5."),
    ]);
    let obs = run_script("sdk_server_key.py", &mock, &dirs);
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let added = last_tool_results(&bodies[1]);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["tool_use_id"], "toolu_01");
    assert_ne!(added[0]["is_error"], true, "{:#}", added[0]);
    assert_eq!(content_text(&added[0]["content"]), "5");
    assert_eq!(obs["calls"], json!([{"tool": "add", "args": {"a": 2, "b": 3}}]));
    assert_eq!(result(&obs["messages"])["result"], "2 + 3 = 5.");
    assert_eq!(
        obs["servers"],
        json!([{"name": "calc", "status": "connected", "serverInfo": {"name": "calculator", "version": "1.0.0"}}])
    );
}

/// (i) `/clear` mid-session: a `conversation_reset` stamped with the old session's id, a result
/// of no turns in a new session, and the next prompt runs there with an empty history.
#[test]
fn clear_starts_a_new_session_with_an_empty_history() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("one"), text_reply("two")]);
    let obs = run_script("clear.py", &mock, &dirs);
    let old = result(&obs["first"])["session_id"].as_str().unwrap().to_owned();
    let cleared = obs["cleared"].as_array().unwrap();
    let resets: Vec<&Value> = cleared.iter().filter(|m| m["type"] == "conversation_reset").collect();
    assert_eq!(resets.len(), 1, "{cleared:#?}");
    assert_eq!(resets[0]["session_id"], old.as_str());
    assert!(is_uuid(resets[0]["new_conversation_id"].as_str().unwrap()));
    assert!(is_uuid(resets[0]["uuid"].as_str().unwrap()));
    let clear_result = result(&obs["cleared"]);
    assert_eq!((&clear_result["subtype"], &clear_result["is_error"]), (&json!("success"), &json!(false)));
    assert_eq!(clear_result["num_turns"], 0);
    let new = clear_result["session_id"].as_str().unwrap().to_owned();
    assert!(is_uuid(&new) && new != old, "{new} after {old}");
    let after = result(&obs["after"]);
    assert_eq!(after["session_id"], new.as_str());
    assert_eq!(after["result"], "two");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2, "/clear sends nothing to the model");
    let history = transcript(&bodies[1]);
    assert!(in_order(&history, &[("user", "Reply with exactly: two")]), "{history:#?}");
    assert!(!in_order(&history, &[("user", "Reply with exactly: one")]), "the history is empty: {history:#?}");
    assert!(dirs.transcript(&old).exists() && dirs.transcript(&new).exists(), "each session has its transcript");
}

/// (j) A host-stamped `origin: {"kind": "human"}` (and the message's uuid) comes back on the
/// turn's result; an unstamped prompt's result has none.
#[test]
fn a_prompts_origin_is_echoed_on_its_result() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("one"), text_reply("two")]);
    let obs = run_script("origin.py", &mock, &dirs);
    let results = obs["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["origin"], json!({"kind": "human"}));
    assert_eq!(results[0]["user_message_uuid"], obs["stamped_uuid"]);
    assert_eq!(results[1]["origin"], Value::Null);
    assert_eq!(results[1]["user_message_uuid"], Value::Null);
    assert!(results.iter().all(|r| r["is_error"] == false));
    // The stamped prompt's transcript line has the uuid the host gave it, and its origin.
    let id = results[0]["session_id"].as_str().unwrap();
    let text = std::fs::read_to_string(dirs.transcript(id)).unwrap();
    let line: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["message"]["content"] == "Reply with exactly: one")
        .expect("the prompt's line");
    assert_eq!(line["uuid"], obs["stamped_uuid"]);
    assert_eq!(line["origin"], json!({"kind": "human"}));
}

fn write_call(id: &str, path: &std::path::Path) -> Reply {
    Reply::Sse(
        Sse::new(MODEL, 1200).tool_use(id, "Write", &json!({"file_path": path, "content": "hello"})).stop("tool_use"),
    )
}

/// (k) A Write outside the working directory is asked of `can_use_tool`: allowed, the file is
/// written; denied, the model reads the denial as an error result.
#[test]
fn a_write_outside_the_working_directory_is_asked_of_can_use_tool() {
    let dirs = dirs();
    let (allowed, denied) = (dirs.outside().join("allowed.txt"), dirs.outside().join("denied.txt"));
    let mock = mock(vec![
        write_call("toolu_w1", &allowed),
        text_reply("Written."),
        write_call("toolu_w2", &denied),
        text_reply("Understood."),
    ]);
    let obs = run_script("outside_write.py", &mock, &dirs);
    let asked: Vec<(Value, Value)> = obs["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["tool_name"].clone(), a["input"]["file_path"].clone()))
        .collect();
    assert_eq!(asked, [(json!("Write"), json!(allowed)), (json!("Write"), json!(denied))]);
    assert_eq!(std::fs::read_to_string(&allowed).unwrap(), "hello");
    assert!(!denied.exists(), "a denied write does not happen");
    assert_eq!(result(&obs["allowed"])["result"], "Written.");
    assert_eq!(result(&obs["denied"])["result"], "Understood.");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 4);
    // A CLI may merge the second prompt's messages with the first's: find each result by id.
    let answer = |body: &Value, id: &str| {
        last_tool_results(body).into_iter().find(|r| r["tool_use_id"] == id).unwrap_or_else(|| panic!("{id}: {body}"))
    };
    assert_ne!(answer(&bodies[1], "toolu_w1")["is_error"], true);
    let refused = answer(&bodies[3], "toolu_w2");
    assert_eq!(refused["is_error"], true);
    assert!(content_text(&refused["content"]).contains("Not that file."), "{refused:#?}");
}

/// (l) `resume_session_at` + `resume_drops_turn` fork a two-turn session without turn two;
/// a drops-turn uuid that is not turn two's prompt is refused with the reason.
#[test]
fn a_truncating_resume_forks_without_the_dropped_turn_and_refuses_a_wrong_one() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("one"), text_reply("two"), text_reply("three")]);
    let obs = run_script("truncating_resume.py", &mock, &dirs);
    let kinds: Vec<&Value> = obs["chain"].as_array().unwrap().iter().map(|m| &m["type"]).collect();
    assert_eq!(kinds, [&json!("user"), &json!("assistant"), &json!("user"), &json!("assistant")]);
    assert_eq!(obs["chain"][1]["uuid"], obs["keep_at"], "the streamed reply's uuid is the one on disk");
    assert_eq!(obs["chain"][2]["uuid"], obs["turn_two"]);
    assert_eq!(obs["forked"]["is_error"], false);
    assert_ne!(obs["forked"]["session_id"], obs["source"]);
    assert_eq!(obs["forked_prompts"], json!(["Reply with exactly: one", "Reply with exactly: three"]));
    assert_eq!(obs["source_prompts"], json!(["Reply with exactly: one", "Reply with exactly: two"]));
    let refused = obs["refused"].as_str().expect("the wrong drops-turn is refused");
    assert!(refused.contains("Resume rejected by --resume-drops-turn:"), "{refused}");
    assert_eq!(obs["source_prompts_after"], obs["source_prompts"]);
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3, "the refused resume sends nothing");
    let history = transcript(&bodies[2]);
    assert!(in_order(
        &history,
        &[("user", "Reply with exactly: one"), ("assistant", "one"), ("user", "Reply with exactly: three")]
    ));
    assert!(!in_order(&history, &[("user", "Reply with exactly: two")]), "{history:#?}");
}

/// (l) A `SessionStore`: the CLI mirrors its transcript into the store as it writes it
/// (`--session-mirror`), so the session resumes from the store alone, its file gone from the
/// config directory, and the second request carries the first exchange.
#[test]
fn a_session_store_resumes_a_session_whose_file_is_gone() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Nice to meet you, Ada."), text_reply("Your name is Ada.")]);
    let obs = run_script("session_store.py", &mock, &dirs);
    let (first, second) = (result(&obs["first"]), result(&obs["second"]));
    assert_eq!(first["subtype"], "success", "{obs:#}");
    assert_eq!(second["result"], "Your name is Ada.", "{obs:#}");
    assert_eq!(second["session_id"], first["session_id"], "resuming goes on in the same session");
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    assert_carries_the_first_exchange(&transcript(&bodies[1]));
}

/// Structured output through the SDK's `output_format`: the schema is offered as the
/// `StructuredOutput` tool; a call that misses it is answered with an `is_error` result
/// naming the wrong field, and the first that matches ends the query (no further request)
/// with its input as `ResultMessage.structured_output`.
#[test]
fn output_format_returns_the_structured_output_that_matched() {
    let dirs = dirs();
    let call = |id: &str, input: Value| {
        Reply::Sse(Sse::new(MODEL, 1200).tool_use(id, "StructuredOutput", &input).stop("tool_use"))
    };
    let mock = mock(vec![
        call("toolu_01", json!({"file_count": "two", "has_tests": true})),
        call("toolu_02", json!({"file_count": 2, "has_tests": false})),
    ]);
    let obs = run_script("structured_output.py", &mock, &dirs);
    assert_eq!(obs["structured_output"], json!({"file_count": 2, "has_tests": false}));
    let done = result(&obs["messages"]);
    assert_eq!((&done["subtype"], &done["is_error"]), (&json!("success"), &json!(false)));
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2, "the matching call ends the query");
    let tool = bodies[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "StructuredOutput").cloned();
    let schema = json!({"type": "object", "properties": {"file_count": {"type": "number"},
        "has_tests": {"type": "boolean"}}, "required": ["file_count", "has_tests"]});
    assert_eq!(tool.map(|t| t["input_schema"].clone()), Some(schema));
    let refused = last_tool_results(&bodies[1]);
    assert_eq!(
        (refused.len(), &refused[0]["tool_use_id"], &refused[0]["is_error"]),
        (1, &json!("toolu_01"), &json!(true))
    );
    let why = content_text(&refused[0]["content"]);
    assert!(why.contains("/file_count"), "the error names the field: {why}");
}

/// `max_budget_usd` too small for the first request: the query ends with Claude Code's
/// `error_max_budget_usd` result. agentloop prices the request before sending it, so it sends
/// nothing (Claude Code checks after each call, so it sends one and reports what it cost).
#[test]
fn max_budget_usd_ends_the_query_with_error_max_budget_usd() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Hello.")]);
    let obs = run_script("budget.py", &mock, &dirs);
    let done = result(&obs["messages"]);
    assert_eq!(
        (&done["subtype"], &done["is_error"], &done["terminal_reason"]),
        (&json!("error_max_budget_usd"), &json!(true), &json!("budget_exhausted"))
    );
    assert_eq!(obs["errors"].as_array().map(Vec::len), Some(1), "{obs:#}");
    if std::env::var_os("AGENTLOOP_SDK_CLI_OVERRIDE").is_none() {
        assert_eq!(conversation_bodies(&mock).len(), 0, "nothing was sent");
        assert_eq!(obs["total_cost_usd"], 0.0);
    }
}

/// A `query()` with `agents`: the definition is listed in `system/init`, the model's `Agent`
/// call runs the child on the definition's model with exactly its tools and its prompt as the
/// system prompt, the child's messages reach the SDK attributed to the call
/// (`parent_tool_use_id`), the task's start and end arrive as typed messages, and the call's
/// result holds the child's report.
#[test]
fn a_subagent_defined_in_agents_runs_and_is_attributed_to_its_call() {
    let dirs = dirs();
    let file = dirs.cwd.join("greeting.txt");
    std::fs::write(&file, "Hello from the greeting file!\n").unwrap();
    let mock = mock(mock_api::greeter_delegation(&file));
    let obs = run_script("subagent.py", &mock, &dirs);
    assert!(obs["agents"].as_array().unwrap().contains(&json!("greeter")), "{obs:#}");
    // Claude Code lists the tool as `Task` in system/init, its former name.
    let tools = obs["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("Agent")) || tools.contains(&json!("Task")), "{obs:#}");
    let attributed: Vec<&Value> = obs["attributed"].as_array().unwrap().iter().collect();
    assert!(!attributed.is_empty());
    assert!(attributed.iter().all(|m| m["parent_tool_use_id"] == "toolu_agent"), "{attributed:?}");
    let tasks = obs["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert_eq!(tasks[0]["subtype"], "task_started");
    assert_eq!(tasks[0]["tool_use_id"], "toolu_agent");
    assert_eq!(tasks[0]["task_type"], "local_agent");
    assert_eq!(tasks[1]["subtype"], "task_notification");
    assert_eq!(tasks[1]["task_id"], tasks[0]["task_id"]);
    assert_eq!(tasks[1]["status"], "completed");
    assert_eq!(tasks[1]["summary"], "The file says: Hello from the greeting file!");
    // The session's task directory, removed when the session ended.
    let output_file = tasks[1]["output_file"].as_str().unwrap();
    assert!(output_file.ends_with(&format!("/{}.output", tasks[1]["task_id"].as_str().unwrap())), "{output_file}");
    let result = result(&obs["messages"]);
    assert_eq!(result["result"], "The greeter says the file greets us.");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 4);
    for child in &bodies[1..3] {
        // `haiku` resolved to a model id of that family (Claude Code 2.1.332 picks a newer one).
        assert!(child["model"].as_str().unwrap().starts_with("claude-haiku-"), "{}", child["model"]);
        let tools: Vec<&str> = child["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["Read", "Grep"]);
        let system = child["system"].to_string();
        assert!(system.contains("You are the greeter subagent."), "{system}");
        assert!(
            child["messages"].to_string().contains("SUBTASK: read greeting.txt"),
            "the call's prompt starts the child"
        );
    }
    let parent_tools: Vec<&str> =
        bodies[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(parent_tools.contains(&"Agent"));
    let results = last_tool_results(&bodies[3]);
    assert_eq!(results[0]["tool_use_id"], "toolu_agent");
    assert!(content_text(&results[0]["content"]).contains("The file says: Hello from the greeting file!"));
    assert_eq!(mock.unserved(), 0);
}

/// WebFetch in SDK mode: `can_use_tool` is asked about the call with the host's rule as its
/// suggestion; allowed, the page is fetched and the small model's answer (the mock's side
/// request answer) is the result. agentloop's own behaviour: Claude Code reaches the
/// network for a domain check first.
#[test]
fn webfetch_is_asked_of_can_use_tool_with_the_domain_rule_suggested() {
    use crate::web::{PAGE, Pages, html};
    if crate::cli_under_test::against_claude_code() {
        return;
    }
    let dirs = dirs();
    let pages = Pages::start(std::collections::HashMap::from([("/docs", html(PAGE))]));
    let url = format!("{}/docs", pages.base);
    let call = Reply::Sse(
        Sse::new(MODEL, 100)
            .tool_use("toolu_web", "WebFetch", &json!({"url": url, "prompt": "How is it installed?"}))
            .stop("tool_use"),
    );
    let mock = mock(vec![call, text_reply("Install it with cargo add.")]);
    let obs = run_script("web_fetch.py", &mock, &dirs);
    assert_eq!(
        obs["asked"],
        json!([{"tool_name": "WebFetch", "input": {"url": url, "prompt": "How is it installed?"},
                "suggestions": [{"tool_name": "WebFetch", "rule_content": "domain:127.0.0.1"}]}])
    );
    assert_eq!(pages.hits(), ["/docs"]);
    let bodies = conversation_bodies(&mock);
    let results = last_tool_results(&bodies[1]);
    assert_eq!(content_text(&results[0]["content"]), "Side request answered.");
    assert_eq!(result(&obs["messages"])["subtype"], "success");
}

/// TodoWrite, Skill, NotebookEdit and WebSearch in SDK mode, as in `-p`: each call's result
/// reaches the model without an error, the notebook is changed, the skill's body is loaded, and
/// the search's side request offers the web search server tool. agentloop's own behaviour
/// (the script's order of requests is ours).
#[test]
fn the_context_tools_work_in_sdk_mode() {
    if crate::cli_under_test::against_claude_code() {
        return;
    }
    let dirs = dirs();
    let skill = dirs.cwd.join(".claude/skills/release/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(&skill, "---\ndescription: Cut a release.\n---\nBump the version, then tag it.\n").unwrap();
    let notebook = json!({"cells": [{"cell_type": "code", "id": "calc", "metadata": {}, "source": ["print(1)"],
                          "outputs": [], "execution_count": null}],
                          "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
    std::fs::write(dirs.cwd.join("n.ipynb"), notebook.to_string()).unwrap();
    let todos = json!({"todos": [{"content": "Fix the notebook", "status": "in_progress", "activeForm": "Fixing the notebook"}]});
    let first = Sse::new(MODEL, 100)
        .tool_use("toolu_todo", "TodoWrite", &todos)
        .tool_use("toolu_read", "Read", &json!({"file_path": "n.ipynb"}))
        .stop("tool_use");
    let second = Sse::new(MODEL, 200)
        .tool_use("toolu_skill", "Skill", &json!({"skill": "release"}))
        .tool_use(
            "toolu_nb",
            "NotebookEdit",
            &json!({"notebook_path": "n.ipynb", "cell_id": "calc", "new_source": "print(2)"}),
        )
        .tool_use("toolu_search", "WebSearch", &json!({"query": "statig"}))
        .stop("tool_use");
    let search = Sse::new("claude-haiku-4-5", 50)
        .server_tool_use("srvtoolu_1", "web_search", &json!({"query": "statig"}))
        .block(json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://docs.rs/statig", "title": "statig - Rust", "encrypted_content": "e"}]}))
        .stop("end_turn");
    let mock = mock(vec![Reply::Sse(first), Reply::Sse(second), Reply::Sse(search), text_reply("All done.")]);
    let obs = run_script("context_tools.py", &mock, &dirs);
    assert_eq!(result(&obs["messages"])["subtype"], "success");
    let asked: Vec<&str> = obs["asked"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        asked,
        ["NotebookEdit", "WebSearch"],
        "the calls that change things or reach the network are asked about"
    );
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[2]["tools"], json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]));
    let results = last_tool_results(&bodies[3]);
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_skill", "toolu_nb", "toolu_search"]);
    assert!(results.iter().all(|r| r["is_error"] != true), "{results:?}");
    assert!(content_text(&results[0]["content"]).ends_with("Bump the version, then tag it."));
    assert!(content_text(&results[2]["content"]).contains("1. [statig - Rust](https://docs.rs/statig)"));
    let first_results = last_tool_results(&bodies[1]);
    assert!(first_results.iter().all(|r| r["is_error"] != true), "{first_results:?}");
    let edited: Value = serde_json::from_str(&std::fs::read_to_string(dirs.cwd.join("n.ipynb")).unwrap()).unwrap();
    assert_eq!(edited["cells"][0]["source"], json!(["print(2)"]));
}
