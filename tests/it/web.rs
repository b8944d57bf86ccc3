//! WebFetch and WebSearch end to end through the binary: the model's call, the permission
//! rule, the page served by a local HTTP server, the side request to the small model (or to
//! the Messages API's web search server tool), and the result the model reads.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

use crate::binary::offline_agentloop;
use crate::mock_api::{MockApi, Reply, Sse};

const MODEL: &str = "claude-sonnet-4-5";

/// A page server on 127.0.0.1: `path -> (status line, extra headers, body)`; it counts hits.
pub(crate) struct Pages {
    pub(crate) base: String,
    hits: Arc<Mutex<Vec<String>>>,
}

pub(crate) type Routes = HashMap<&'static str, (&'static str, Vec<(&'static str, String)>, Vec<u8>)>;

impl Pages {
    pub(crate) fn start(routes: Routes) -> Pages {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(Mutex::new(Vec::new()));
        let (routes, seen) = (Arc::new(routes), hits.clone());
        thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let (routes, seen) = (routes.clone(), seen.clone());
                thread::spawn(move || {
                    let mut reader = BufReader::new(socket.try_clone().unwrap());
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap() <= 2 {
                            break;
                        }
                    }
                    seen.lock().unwrap().push(path.clone());
                    let (status, headers, body) =
                        routes.get(path.as_str()).cloned().unwrap_or(("404 Not Found", Vec::new(), Vec::new()));
                    let mut out = socket;
                    let mut head =
                        format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
                    for (name, value) in headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = out.write_all(head.as_bytes());
                    let _ = out.write_all(&body);
                });
            }
        });
        Pages { base, hits }
    }

    pub(crate) fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

pub(crate) fn html(body: &str) -> (&'static str, Vec<(&'static str, String)>, Vec<u8>) {
    ("200 OK", vec![("Content-Type", "text/html; charset=utf-8".into())], body.as_bytes().to_vec())
}

/// `agentloop -p PROMPT --output-format stream-json --verbose ARGS` in `dir` against `api`.
fn run(dir: &Path, api: &MockApi, prompt: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let out = offline_agentloop()
        .current_dir(dir)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .env_remove("ANTHROPIC_DEFAULT_HAIKU_MODEL")
        .env_remove("ANTHROPIC_SMALL_FAST_MODEL")
        .args(["-p", prompt, "--model", MODEL, "--output-format", "stream-json", "--verbose"])
        .args(args)
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    (out, lines)
}

fn call(name: &str, input: Value) -> Reply {
    Reply::Sse(Sse::new(MODEL, 100).tool_use("toolu_web", name, &input).stop("tool_use"))
}

fn done(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 200).text(text).stop("end_turn"))
}

/// The tool_result the main model got back for `toolu_web`: its text and `is_error`.
fn result_of(body: &Value) -> (String, bool) {
    let messages = body["messages"].as_array().unwrap();
    let block = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_web")
        .unwrap_or_else(|| panic!("no tool_result in {body}"));
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        other => other[0]["text"].as_str().unwrap_or_default().to_owned(),
    };
    (text, block["is_error"] == true)
}

pub(crate) const PAGE: &str = "<html><head><title>Docs</title><script>steal()</script></head><body><h1>Install</h1>\
<p>Run <code>cargo add statig</code>.</p></body></html>";

#[test]
fn webfetch_answers_over_the_page_with_the_small_model() {
    let dir = tempfile::tempdir().unwrap();
    let pages = Pages::start(HashMap::from([("/docs", html(PAGE))]));
    let url = format!("{}/docs", pages.base);
    let api = MockApi::start(vec![
        call("WebFetch", json!({"url": url, "prompt": "How is it installed?"})),
        Reply::Sse(Sse::new("claude-haiku-4-5", 50).text("With `cargo add statig`.").stop("end_turn")),
        done("Install it with cargo add."),
    ]);
    let (out, lines) =
        run(dir.path(), &api, "how do I install statig?", &["--allowedTools", "WebFetch(domain:127.0.0.1)"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 3);
    // The side request: the small model, the page as Markdown (no script), the prompt.
    assert_eq!(bodies[1]["model"], "claude-haiku-4-5");
    assert_eq!(bodies[1].get("tools"), None);
    assert_eq!(
        bodies[1]["messages"][0]["content"][0]["text"],
        format!(
            "The content of {url}, as Markdown:\n\n<page>\n# Install\n\nRun `cargo add statig`.\n</page>\n\nThe \
             question about it:\n\nHow is it installed?"
        )
    );
    assert_eq!(result_of(&bodies[2]), ("With `cargo add statig`.".to_owned(), false));
    assert_eq!(pages.hits(), ["/docs"]);
    // stream-json carries Claude Code's tool_use_result for the call.
    let user = lines.iter().find(|l| l["type"] == "user" && l.get("tool_use_result").is_some()).unwrap();
    assert_eq!(user["tool_use_result"]["code"], 200);
    assert_eq!(user["tool_use_result"]["url"], url);
    assert_eq!(user["tool_use_result"]["result"], "With `cargo add statig`.");
    // The small model's cost is the run's too: 50 tokens in and 7 out on claude-haiku-4-5
    // ($1 and $5 a million), beside the main model's usage on claude-sonnet-4-5 ($3 and $15).
    let result = lines.last().unwrap();
    let usage = &result["usage"];
    let main = usage["input_tokens"].as_f64().unwrap() * 3e-6 + usage["output_tokens"].as_f64().unwrap() * 15e-6;
    let side = 50.0 * 1e-6 + 7.0 * 5e-6;
    assert!((result["total_cost_usd"].as_f64().unwrap() - (main + side)).abs() < 1e-9, "{result}");
}

#[test]
fn webfetch_names_a_cross_host_redirect_and_refuses_an_oversized_page() {
    let dir = tempfile::tempdir().unwrap();
    // Another server, so the redirect target is a different host and port.
    let target = Pages::start(HashMap::from([("/docs", html(PAGE))]));
    let elsewhere = format!("{}/docs", target.base.replace("127.0.0.1", "localhost"));
    let pages = Pages::start(HashMap::from([
        ("/moved", ("302 Found", vec![("Location", elsewhere.clone())], Vec::new())),
        ("/big", ("200 OK", vec![("Content-Type", "text/plain".into())], vec![b'x'; 10 * 1024 * 1024 + 1])),
    ]));
    let moved = format!("{}/moved", pages.base);
    let api =
        MockApi::start(vec![call("WebFetch", json!({"url": moved, "prompt": "What is there?"})), done("It moved.")]);
    let (out, _) = run(dir.path(), &api, "read it", &["--allowedTools", "WebFetch(domain:127.0.0.1)"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 2, "no side request for a redirect");
    assert_eq!(
        result_of(&bodies[1]),
        (
            format!(
                "{moved} redirects (302) to another host: {elsewhere}\n\nWebFetch does not follow redirects across \
                 hosts. To read the page there, call WebFetch again with url \"{elsewhere}\" and the same prompt."
            ),
            false
        )
    );
    assert!(target.hits().is_empty(), "the other host was not reached");

    let big = format!("{}/big", pages.base);
    let api = MockApi::start(vec![call("WebFetch", json!({"url": big, "prompt": "What is there?"})), done("Too big.")]);
    let (out, _) = run(dir.path(), &api, "read it", &["--allowedTools", "WebFetch(domain:127.0.0.1)"]);
    assert!(out.status.success());
    assert_eq!(
        result_of(&api.bodies()[1]),
        (format!("Cannot fetch {big}: the page is larger than 10485760 bytes (10 MiB); WebFetch reads no more"), true)
    );
}

#[test]
fn webfetch_without_a_rule_is_asked_about_and_refused_when_nobody_can_answer() {
    let dir = tempfile::tempdir().unwrap();
    let pages = Pages::start(HashMap::from([("/docs", html(PAGE))]));
    let url = format!("{}/docs", pages.base);
    let api = MockApi::start(vec![call("WebFetch", json!({"url": url, "prompt": "p"})), done("Refused.")]);
    let (out, _) = run(dir.path(), &api, "read it", &["--allowedTools", "WebFetch(domain:docs.rs)"]);
    assert!(out.status.success());
    let (text, is_error) = result_of(&api.bodies()[1]);
    assert!(is_error);
    assert!(
        text.starts_with(
            "Permission to use WebFetch was not granted: it reaches 127.0.0.1 on the network and no rule allows that \
             domain, and this run cannot ask anyone."
        ),
        "{text}"
    );
    assert!(pages.hits().is_empty(), "nothing was fetched");
}

#[test]
fn websearch_runs_the_server_tool_and_returns_cited_results() {
    let dir = tempfile::tempdir().unwrap();
    let search = Sse::new("claude-haiku-4-5", 80)
        .server_tool_use("srvtoolu_1", "web_search", &json!({"query": "statig crate"}))
        .block(json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://docs.rs/statig", "title": "statig - Rust", "encrypted_content": "e1"},
            {"type": "web_search_result", "url": "https://github.com/mdeloof/statig", "title": "mdeloof/statig", "encrypted_content": "e2"}
        ]}))
        .cited_text(
            "statig is a hierarchical state machine crate.",
            &json!({"type": "web_search_result_location", "url": "https://docs.rs/statig", "title": "statig - Rust",
                    "cited_text": "Hierarchical state machines", "encrypted_index": "i1"}),
        )
        .stop("end_turn");
    let api = MockApi::start(vec![
        call("WebSearch", json!({"query": "statig crate", "allowed_domains": ["docs.rs", "github.com"]})),
        Reply::Sse(search),
        done("statig is an HSM crate."),
    ]);
    let (out, _) = run(dir.path(), &api, "what is statig?", &["--allowedTools", "WebSearch"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = api.bodies();
    assert_eq!(bodies[1]["model"], "claude-haiku-4-5");
    assert_eq!(
        bodies[1]["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 8,
                "allowed_domains": ["docs.rs", "github.com"]}])
    );
    assert_eq!(bodies[1]["messages"][0]["content"][0]["text"], "Search the web for: statig crate");
    assert_eq!(
        result_of(&bodies[2]),
        (
            "Web search results for \"statig crate\":\n\n1. [statig - Rust](https://docs.rs/statig)\n2. \
             [mdeloof/statig](https://github.com/mdeloof/statig)\n\nstatig is a hierarchical state machine crate. \
             ([statig - Rust](https://docs.rs/statig))\n\nCite the pages you use as Markdown links in your reply."
                .to_owned(),
            false
        )
    );
}

/// A scripted scenario scripts the search's side reply with the server tool's blocks.
#[test]
fn a_scenario_scripts_websearch_with_server_tool_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({
        "name": "web-search",
        "prompt": "what is statig?",
        "settings": {"permissions": {"allow": ["WebSearch"]}},
        "responses": [
            {"content": [{"type": "tool_use", "id": "toolu_web", "name": "WebSearch", "input": {"query": "statig"}}]},
            {"content": [{"type": "text", "text": "An HSM crate."}],
             "expect": {"last_user_text_contains": "1. [statig - Rust](https://docs.rs/statig)\n\nstatig is a state machine crate. ([statig - Rust](https://docs.rs/statig))",
                        "tool_result_is_error": [false]}}
        ],
        "aux": [
            {"content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "statig"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                    {"type": "web_search_result", "url": "https://docs.rs/statig", "title": "statig - Rust", "encrypted_content": "e"}
                ]},
                {"type": "text", "text": "statig is a state machine crate.", "citations": [
                    {"type": "web_search_result_location", "url": "https://docs.rs/statig", "title": "statig - Rust",
                     "cited_text": "c", "encrypted_index": "i"}
                ]}
            ]}
        ]
    });
    let file = dir.path().join("web-search.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let out = offline_agentloop()
        .current_dir(dir.path())
        .args(["-p", "what is statig?", "--model", &format!("scripted:{}", file.display()), "--output-format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "An HSM crate.");
    assert_eq!(result["subtype"], "success");
}

/// WebFetch in the interactive session: the call's question names the URL, `y` lets it run,
/// and the small model's answer is the result.
#[test]
fn webfetch_is_asked_about_in_the_interactive_session() {
    use crate::pty::Pty;
    use assert_cmd::cargo::CommandCargoExt;
    use std::time::Duration;
    let wait = Duration::from_secs(20);
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pages = Pages::start(HashMap::from([("/docs", html(PAGE))]));
    let url = format!("{}/docs", pages.base);
    let api = MockApi::start(vec![
        call("WebFetch", json!({"url": url, "prompt": "How is it installed?"})),
        Reply::Sse(Sse::new("claude-haiku-4-5", 50).text("With cargo add.").stop("end_turn")),
        done("Install it with cargo add."),
    ]);
    let mut command = std::process::Command::cargo_bin("agentloop").unwrap();
    command
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_DEFAULT_HAIKU_MODEL")
        .env_remove("ANTHROPIC_SMALL_FAST_MODEL")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("AGENTLOOP_HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join("claude"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .current_dir(dir.path());
    let mut pty = Pty::spawn(command);
    pty.expect("> ", wait);
    pty.send("how do I install statig?\r");
    pty.expect(&format!("? WebFetch({url})"), wait);
    pty.send("y");
    pty.expect("⎿ WebFetch ok", wait);
    pty.expect("Install it with cargo add.", wait);
    pty.expect("> ", wait);
    pty.send("/exit\r");
    assert_eq!(pty.wait(wait), 0);
    assert_eq!(result_of(&api.bodies()[2]), ("With cargo add.".to_owned(), false));
    assert_eq!(pages.hits(), ["/docs"]);
}
