//! A server's question to the user (`elicitation/create`) during a call, in each of
//! agentloop's modes, with server-everything's `trigger-elicitation-request` tool (from npm,
//! installed by `.ci/install-mcp-servers` when missing), which shows the answer it got in its
//! result (`Raw result: {…}`). The model is scripted: it calls the tool, then says "done".
//!
//! - Headless (`-p`): nobody to ask, the request is cancelled (as Claude Code does).
//! - The SDK mode with `--permission-prompt-tool stdio`: an `elicitation` control request;
//!   the SDK's answer goes to the server, an accepted form with the schema's defaults for the
//!   fields it left out; an SDK that answers with an error (no handler) cancels.
//! - The SDK mode without a permission prompt tool: the SDK is not asked, the request is
//!   cancelled.
//! - A URL to open (`trigger-url-elicitation`) goes to the SDK in `url` mode.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::installed;
use crate::stream_json;

use serde_json::{Value, json};

const TOOL: &str = "mcp__every__trigger-elicitation-request";

/// `--mcp-config` with server-everything as `every`.
fn config() -> String {
    let entry = installed::mcp_server("server-everything");
    json!({"mcpServers": {"every": {"type": "stdio", "command": "node", "args": [entry, "stdio"]}}}).to_string()
}

/// server-everything's tool asking for a URL to be opened.
const URL_TOOL: &str = "mcp__every__trigger-url-elicitation";

/// A scenario calling `tool` with `input` once, then answering "done".
fn scenario(dir: &tempfile::TempDir, tool: &str, input: &Value) -> PathBuf {
    let scenario = json!({
        "name": "elicitation",
        "prompt": "Ask me.",
        "responses": [
            {"content": [{"type": "tool_use", "name": tool, "input": input}]},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    });
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

/// The answer the server got, from the `Raw result: {…}` of its tool result.
fn raw_result(tool_result: &str) -> Value {
    let (_, raw) = tool_result.split_once("Raw result: ").unwrap_or_else(|| panic!("no raw result: {tool_result}"));
    serde_json::from_str(raw.trim()).unwrap()
}

/// `agentloop` whose scripted model calls `tool` with `input`.
fn agentloop_calling(dir: &tempfile::TempDir, tool: &str, input: &Value) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("BROWSER")
        .arg("--model")
        .arg(format!("scripted:{}", scenario(dir, tool, input).display()))
        .args(["--mcp-config", &config(), "--allowedTools", tool, "--cwd"])
        .arg(dir.path());
    command
}

/// `agentloop` whose scripted model calls the form tool.
fn agentloop(dir: &tempfile::TempDir) -> Command {
    agentloop_calling(dir, TOOL, &json!({}))
}

#[test]
fn headless_a_servers_question_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let out = agentloop(&dir)
        .args(["-p", "Ask me.", "--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = stream_json::lines(&out.stdout);
    assert_eq!(stream_json::init(&lines)["mcp_servers"], json!([{"name": "every", "status": "connected"}]));
    let results = stream_json::tool_results(&lines);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].0.starts_with("⚠️ User cancelled the elicitation dialog."), "{}", results[0].0);
    assert_eq!(raw_result(&results[0].0), json!({"action": "cancel"}));
}

/// The SDK mode: `initialize`, one prompt; each `elicitation` control request is answered
/// by `answer` (an `Ok` response or an `Err` error text). Returns the elicitation requests
/// and the stream's lines.
fn sdk_session(args: &[&str], answer: impl Fn(&Value) -> Result<Value, String>) -> (Vec<Value>, Vec<Value>) {
    sdk_session_calling(TOOL, &json!({}), args, answer)
}

/// [`sdk_session`] with the model calling `tool` with `input`.
fn sdk_session_calling(
    tool: &str,
    input: &Value,
    args: &[&str],
    answer: impl Fn(&Value) -> Result<Value, String>,
) -> (Vec<Value>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = agentloop_calling(&dir, tool, input)
        .args(["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |frame: Value| {
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}));
    send(
        json!({"type": "user", "message": {"role": "user", "content": "Ask me."}, "parent_tool_use_id": null, "session_id": ""}),
    );
    let mut asked = Vec::new();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let frame: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if frame["type"] == "control_request" && frame["request"]["subtype"] == "elicitation" {
            asked.push(frame["request"].clone());
            let id = frame["request_id"].clone();
            let response = match answer(&frame["request"]) {
                Ok(response) => json!({"subtype": "success", "request_id": id, "response": response}),
                Err(error) => json!({"subtype": "error", "request_id": id, "error": error}),
            };
            send(json!({"type": "control_response", "response": response}));
        }
        let done = frame["type"] == "result";
        lines.push(frame);
        if done {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    (asked, lines)
}

#[test]
// The server's default for `number` is the literal 3.14, not π.
#[allow(clippy::approx_constant)]
fn the_sdk_answers_and_the_forms_defaults_fill_what_it_left_out() {
    let content = json!({"name": "Ada Lovelace", "check": true, "integer": 7});
    let (asked, lines) =
        sdk_session(&["--permission-prompt-tool", "stdio"], |_| Ok(json!({"action": "accept", "content": content})));
    assert_eq!(asked.len(), 1, "{asked:?}");
    let request = &asked[0];
    assert_eq!(request["mcp_server_name"], "every");
    assert_eq!(request["message"], "Please provide inputs for the following fields:");
    assert_eq!(request["mode"], "form");
    assert_eq!(request["requested_schema"]["required"], json!(["name"]));
    assert_eq!(
        request["requested_schema"]["properties"]["firstLine"],
        json!({"type": "string", "title": "String with default", "description": "Favorite first line of a story",
               "default": "It was a dark and stormy night."})
    );
    let order: Vec<&str> = request["property_order"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "name",
            "check",
            "firstLine",
            "email",
            "homepage",
            "birthdate",
            "integer",
            "number",
            "untitledSingleSelectEnum",
            "untitledMultipleSelectEnum",
            "titledSingleSelectEnum",
            "titledMultipleSelectEnum",
            "legacyTitledEnum",
        ]
    );
    let results = stream_json::tool_results(&lines);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        raw_result(&results[0].0),
        json!({"action": "accept", "content": {
            "name": "Ada Lovelace", "check": true, "integer": 7,
            "firstLine": "It was a dark and stormy night.", "number": 3.14,
            "untitledSingleSelectEnum": "Monica", "untitledMultipleSelectEnum": ["Guitar"],
            "titledSingleSelectEnum": "hero-1", "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-1"
        }})
    );
    assert_eq!(lines.last().unwrap()["result"], "done");
}

#[test]
fn a_decline_reaches_the_server_and_an_sdk_without_a_handler_cancels() {
    let (asked, lines) = sdk_session(&["--permission-prompt-tool", "stdio"], |_| Ok(json!({"action": "decline"})));
    assert_eq!(asked.len(), 1);
    assert_eq!(raw_result(&stream_json::tool_results(&lines)[0].0), json!({"action": "decline"}));
    // What the Python SDK answers, having no elicitation handler.
    let (asked, lines) = sdk_session(&["--permission-prompt-tool", "stdio"], |_| {
        Err("Unsupported control request subtype: elicitation".into())
    });
    assert_eq!(asked.len(), 1);
    assert_eq!(raw_result(&stream_json::tool_results(&lines)[0].0), json!({"action": "cancel"}));
}

#[test]
fn without_a_permission_prompt_tool_the_sdk_is_not_asked() {
    let (asked, lines) = sdk_session(&[], |request| panic!("asked: {request}"));
    assert_eq!(asked, Vec::<Value>::new());
    assert_eq!(raw_result(&stream_json::tool_results(&lines)[0].0), json!({"action": "cancel"}));
}

/// A URL to open goes to the SDK in `url` mode; its host opens it (agentloop does not), and
/// the server hears the SDK's answer.
#[test]
fn a_url_to_open_is_put_to_the_sdk() {
    let input = json!({"url": "https://example.com/sign-in", "elicitationId": "e-42"});
    let (asked, lines) = sdk_session_calling(URL_TOOL, &input, &["--permission-prompt-tool", "stdio"], |_| {
        Ok(json!({"action": "accept"}))
    });
    assert_eq!(
        asked,
        [
            json!({"subtype": "elicitation", "mcp_server_name": "every", "message": "Please open the link to complete this action.",
                "mode": "url", "url": "https://example.com/sign-in", "elicitation_id": "e-42"})
        ]
    );
    let results = stream_json::tool_results(&lines);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].0.starts_with(
            "✅ User completed the URL elicitation flow.\nElicitation ID: e-42\nURL: https://example.com/sign-in\n"
        ),
        "{results:?}"
    );
    assert_eq!(raw_result(&results[0].0), json!({"action": "accept"}));
}
