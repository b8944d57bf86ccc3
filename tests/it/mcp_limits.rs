//! MCP servers at the limits, through the built `agentloop` against the local Messages API
//! stand-in ([`mock_api`]): tool names the API would refuse or that collide, and a result far
//! larger than any tool output the model may read. The servers are a small python3 script
//! speaking MCP over stdio ([`SERVER`]).

use crate::mock_api;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

/// An MCP server over stdio: lists tools named as `argv[1]` (a JSON list) says, and answers
/// a call of a tool `argv[2]` (a JSON object) has a size for with one text block of that
/// many `x`s, any other tool with `called NAME`. Each message is one line of JSON.
const SERVER: &str = r#"
import json, sys
names = json.loads(sys.argv[1])
sizes = json.loads(sys.argv[2])
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": message["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "limits", "version": "1"}}})
    elif method == "tools/list":
        tools = [{"name": n, "description": "a tool", "inputSchema": {"type": "object"}} for n in names]
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
    elif method == "tools/call":
        name = message["params"]["name"]
        text = "x" * sizes[name] if name in sizes else "called " + name
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
"#;

/// A stdio server entry running [`SERVER`] (saved in `dir`) with these tool names and
/// result sizes.
fn server(dir: &Path, names: &[&str], sizes: &Value) -> Value {
    let script = dir.join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    json!({"command": "python3", "args": [script, json!(names).to_string(), sizes.to_string()]})
}

/// The model's two replies: one calling `calls` (name, input), then "done".
fn script(calls: &[(&str, Value)]) -> Vec<Reply> {
    let mut first = Sse::new("claude-sonnet-4-5", 100);
    for (i, (name, input)) in calls.iter().enumerate() {
        first = first.tool_use(&format!("toolu_{i}"), name, input);
    }
    vec![
        Reply::Sse(first.stop("tool_use")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("done").stop("end_turn")),
    ]
}

/// `agentloop run -p` against `api` in `dir` with the MCP servers `servers`, every tool
/// allowed.
fn run(api: &MockApi, dir: &Path, servers: &Value, env: &[(&str, &str)]) -> Output {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MCP_TOOL_TIMEOUT"] {
        command.env_remove(name);
    }
    let config = json!({ "mcpServers": servers }).to_string();
    command
        .env("AGENTLOOP_HOME", dir.join("home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .envs(env.iter().copied())
        .args(["run", "-p", "Use the tools.", "--model", "claude-sonnet-4-5", "--permission-mode", "bypassPermissions"])
        .args(["--output-format", "json"])
        .args(["--mcp-config", &config, "--cwd"])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The `tool_result` blocks the model was sent in request `n`: (content, is_error).
fn tool_results(api: &MockApi, n: usize) -> Vec<(String, bool)> {
    let body = &api.requests()[n].body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = match &b["content"] {
                Value::String(s) => s.clone(),
                blocks => blocks.as_array().unwrap().iter().filter_map(|x| x["text"].as_str()).collect(),
            };
            (content, b["is_error"] == true)
        })
        .collect()
}

/// Names the Messages API takes: `^[a-zA-Z0-9_-]{1,64}$`.
fn valid(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[test]
fn tool_names_are_bounded_and_distinct_with_a_warning_and_calls_reach_the_original_tools() {
    let dir = tempfile::tempdir().unwrap();
    let long = "t".repeat(300);
    let servers = json!({
        "lim_its": server(dir.path(), &[&long, "", "a.b", "a_b"], &json!({})),
        "a_server_with_a_rather_long_name": server(dir.path(), &["echo"], &json!({})),
    });
    let renamed_long = format!("mcp__lim_its__{}_0c504565", "t".repeat(41));
    let api = MockApi::start(script(&[
        (&renamed_long, json!({})),
        ("mcp__lim_its__unnamed", json!({})),
        ("mcp__lim_its__a_b_108bf50c", json!({})),
        ("mcp__lim_its__a_b", json!({})),
        ("mcp__a_server_with_a_5158ffb1__echo", json!({})),
    ]));
    let out = run(&api, dir.path(), &servers, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "agentloop: warning: MCP server `a_server_with_a_rather_long_name`: its tools are named \
             mcp__a_server_with_a_5158ffb1__…: its name is longer than 24 characters\n\
             agentloop: warning: MCP server `lim_its`: tool `{long}` is offered as {renamed_long}: its name is longer \
             than 50 characters\n\
             agentloop: warning: MCP server `lim_its`: tool `` is offered as mcp__lim_its__unnamed: its name is empty\n\
             agentloop: warning: MCP server `lim_its`: tool `a.b` is offered as mcp__lim_its__a_b_108bf50c: the name \
             mcp__lim_its__a_b is taken by another tool\n"
        )
    );
    let requests = api.requests();
    let mut offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    offered.sort_unstable();
    assert_eq!(
        offered,
        [
            "mcp__a_server_with_a_5158ffb1__echo",
            "mcp__lim_its__a_b",
            "mcp__lim_its__a_b_108bf50c",
            renamed_long.as_str(),
            "mcp__lim_its__unnamed"
        ]
    );
    assert!(requests[0].body["tools"].as_array().unwrap().iter().all(|t| valid(t["name"].as_str().unwrap())));
    assert_eq!(
        tool_results(&api, 1),
        vec![
            (format!("called {long}"), false),
            ("called ".to_owned(), false),
            ("called a.b".to_owned(), false),
            ("called a_b".to_owned(), false),
            ("called echo".to_owned(), false),
        ]
    );
    assert!(api.problems().is_empty(), "{:?}", api.problems());
}

/// A 20 MB result (one line) reaches the model cut like any long tool output, the whole of
/// it saved; a 70 MB one, over the limit of one message, is an error result at once, not a
/// timeout; and the server answers the next call.
#[test]
fn a_huge_result_is_capped_and_one_over_the_message_limit_is_an_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = json!({"big": 20_000_000, "huge": 70 * 1024 * 1024});
    let servers = json!({"sizes": server(dir.path(), &["big", "huge", "echo"], &sizes)});
    let api = MockApi::start(script(&[
        ("mcp__sizes__big", json!({})),
        ("mcp__sizes__huge", json!({})),
        ("mcp__sizes__echo", json!({})),
    ]));
    let out = run(&api, dir.path(), &servers, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let results = tool_results(&api, 1);
    assert_eq!(results.len(), 3);
    let (big, big_error) = &results[0];
    assert!(!big_error);
    let (kept, note) = big.split_at(30_000);
    assert_eq!(kept, "x".repeat(30_000));
    let saved = note
        .strip_prefix("\n\n[Result cut at 30000 of 20000000 characters. The whole result is saved at ")
        .and_then(|rest| rest.strip_suffix("; Read it with offset/limit, or Grep it.]"))
        .unwrap_or_else(|| panic!("{note}"));
    assert!(saved.ends_with("/toolu_0.txt"), "{saved}");
    assert_eq!(
        results[1..],
        [
            (
                "MCP server `sizes`: tool `huge` failed: Mcp error: -32603: the server's reply was 70.0 MB, over the \
                 limit of 64 MB for one message"
                    .to_owned(),
                true
            ),
            ("called echo".to_owned(), false),
        ]
    );
    assert!(api.problems().is_empty(), "{:?}", api.problems());
}
