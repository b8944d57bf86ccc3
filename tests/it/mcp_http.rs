//! The MCP client over Streamable HTTP: the real `@modelcontextprotocol/server-everything` in
//! its HTTP mode on 127.0.0.1 (installed once into `.ci/cache/npm` by
//! `.ci/install-mcp-servers`, run here when it is missing), a small recording server (wiremock)
//! that checks what the client sends, and a URL nobody listens on. Each test runs the built
//! `agentloop -p` with a scripted model whose replies call the server's tools, and reads the
//! tool results off `--output-format stream-json`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::installed;
use crate::stream_json;

use serde_json::{Value, json};
use stream_json::tool_results;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// server-everything's entry point ([`installed::mcp_server`]).
fn everything_entry() -> PathBuf {
    installed::mcp_server("server-everything")
}

/// server-everything in its Streamable HTTP mode, killed on drop.
struct HttpEverything {
    child: Child,
    port: u16,
}

impl HttpEverything {
    /// Start it on a free port of 127.0.0.1 and wait until it listens. The port is found by
    /// binding port 0; another process may take it first, so a start that finds the port in
    /// use is tried again on another one.
    fn start() -> Self {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = Command::new("node")
                .arg(everything_entry())
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut line = String::new();
            let mut seen = String::new();
            while stderr.read_line(&mut line).unwrap() > 0 {
                if line.contains(&format!("listening on port {port}")) {
                    // Keep reading (and dropping) its stderr so the server never blocks on it.
                    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
                    return HttpEverything { child, port };
                }
                seen.push_str(&line);
                line.clear();
            }
            let _ = child.wait();
            assert!(seen.contains("already in use"), "server-everything did not start: {seen}");
        }
        panic!("no free port for server-everything after 5 tries");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scenario whose first reply calls `calls` (name, input) and whose second says "done".
fn scenario(dir: &Path, calls: &[(&str, Value)]) -> PathBuf {
    let uses: Vec<Value> =
        calls.iter().map(|(name, input)| json!({"type": "tool_use", "name": name, "input": input})).collect();
    let scenario = json!({
        "name": "mcp-http",
        "prompt": "Use the server.",
        "responses": [{"content": uses}, {"content": [{"type": "text", "text": "done"}]}]
    });
    let path = dir.join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

/// `agentloop -p` with `servers` as `--mcp-config`, calling `calls`, every MCP tool allowed by
/// `--allowedTools allow`; returns the output and its JSON lines.
fn run(servers: Value, calls: &[(&str, Value)], allow: &str, env: &[(&str, &str)]) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({ "mcpServers": servers }).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["-p", "Use the server.", "--model"])
        .arg(format!("scripted:{}", scenario(dir.path(), calls).display()))
        .args(["--output-format", "stream-json", "--mcp-config", &config, "--allowedTools", allow, "--cwd"])
        .arg(dir.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let lines = stream_json::lines(&out.stdout);
    (out, lines)
}

fn mcp_servers(lines: &[Value]) -> Value {
    stream_json::init(lines)["mcp_servers"].clone()
}

#[test]
fn server_everything_over_http_answers_echo_and_get_sum() {
    let server = HttpEverything::start();
    let calls = [
        ("mcp__web__echo", json!({"message": "hello over http"})),
        ("mcp__web__get-sum", json!({"a": 2, "b": 40})),
        ("mcp__web__echo", json!({})),
        ("mcp__web__trigger-long-running-operation", json!({"duration": 5, "steps": 5})),
    ];
    let servers = json!({"web": {"type": "http", "url": server.url()}});
    let (out, lines) = run(servers, &calls, "mcp__web", &[("MCP_TOOL_TIMEOUT", "500")]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mcp_servers(&lines), json!([{"name": "web", "status": "connected"}]));
    assert_eq!(
        tool_results(&lines),
        vec![
            ("Echo: hello over http".to_owned(), false),
            ("The sum of 2 and 40 is 42.".to_owned(), false),
            (
                "MCP error -32602: Input validation error: Invalid arguments for tool echo: Invalid input: \
expected string, received undefined at message"
                    .to_owned(),
                true
            ),
            (
                "MCP server `web`: tool `trigger-long-running-operation` timed out after 500 ms (MCP_TOOL_TIMEOUT)"
                    .to_owned(),
                true
            ),
        ]
    );
    assert_eq!(lines.last().unwrap()["result"], "done");
}

#[test]
fn an_interrupt_cancels_a_running_http_call() {
    let server = HttpEverything::start();
    let dir = tempfile::tempdir().unwrap();
    let calls = [("mcp__web__trigger-long-running-operation", json!({"duration": 30, "steps": 3}))];
    let config = json!({"mcpServers": {"web": {"type": "http", "url": server.url()}}}).to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["-p", "Use the server.", "--model"])
        .arg(format!("scripted:{}", scenario(dir.path(), &calls).display()))
        .args(["--output-format", "stream-json", "--permission-mode", "bypassPermissions", "--mcp-config", &config])
        .arg("--cwd")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut interrupted = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if line["subtype"] == "tool_started" && !interrupted {
            // SAFETY: kill(2) with the pid of our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            interrupted = true;
        }
        lines.push(line);
    }
    assert_eq!(child.wait().unwrap().code(), Some(130));
    // `tool_started` is printed as the call starts: the signal lands either while its request
    // is out (the server is told to cancel it) or just before the request is sent (it never
    // is). Either way the one call is answered as interrupted and the run ends aborted_tools.
    let results = tool_results(&lines);
    assert_eq!(results.len(), 1, "{lines:#?}");
    let (text, is_error) = &results[0];
    assert!(is_error);
    assert!(text == "MCP tool call was cancelled" || text == agentloop::tools::INTERRUPTED_RESULT, "{text}");
    assert_eq!(lines.last().unwrap()["terminal_reason"], "aborted_tools");
}

/// Answers the MCP exchange like a Streamable HTTP server speaking 2025-06-18 with a session:
/// `initialize`, `notifications/initialized`, `tools/list` (one tool, `whoami`) and
/// `tools/call`.
struct Recorder;

const SESSION: &str = "session-7f3a";

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let id = body["id"].clone();
        let result = match body["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "recorder", "version": "1.0.0"}
            }),
            Some("tools/list") => json!({"tools": [{
                "name": "whoami",
                "description": "Says who called.",
                "inputSchema": {"type": "object", "properties": {}}
            }]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "you are the agent"}]}),
            _ => return ResponseTemplate::new(202),
        };
        ResponseTemplate::new(200)
            .insert_header("mcp-session-id", SESSION)
            .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_headers_reach_the_server_and_the_answered_version_is_used() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/mcp")).respond_with(Recorder).mount(&server).await;
    Mock::given(method("GET")).and(path("/mcp")).respond_with(ResponseTemplate::new(405)).mount(&server).await;
    Mock::given(method("DELETE")).and(path("/mcp")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    let servers = json!({"rec": {
        "type": "http",
        "url": format!("{}/mcp", server.uri()),
        "headers": {"Authorization": "Bearer ${AGENTLOOP_TEST_MCP_TOKEN}", "X-Team": "${AGENTLOOP_TEST_UNSET:-core}"}
    }});
    let env = [("AGENTLOOP_TEST_MCP_TOKEN", "tok-123"), ("ANTHROPIC_API_KEY", "sk-model-secret")];
    let (out, lines) =
        tokio::task::spawn_blocking(move || run(servers, &[("mcp__rec__whoami", json!({}))], "mcp__rec", &env))
            .await
            .unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mcp_servers(&lines), json!([{"name": "rec", "status": "connected"}]));
    assert_eq!(tool_results(&lines), vec![("you are the agent".to_owned(), false)]);

    let requests = server.received_requests().await.unwrap();
    let exchange: Vec<(String, String)> = requests
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
            (r.method.to_string(), body["method"].as_str().unwrap_or_default().to_owned())
        })
        .filter(|(verb, _)| verb != "GET")
        .collect();
    let expected = [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/list"),
        ("POST", "tools/call"),
        ("DELETE", ""),
    ];
    assert_eq!(exchange, expected.map(|(v, m)| (v.to_owned(), m.to_owned())).to_vec());
    for request in &requests {
        assert_eq!(header(request, "authorization"), Some("Bearer tok-123"), "{} {}", request.method, request.url);
        assert_eq!(header(request, "x-team"), Some("core"));
        let all_headers = format!("{:?}", request.headers);
        assert!(!all_headers.contains("sk-model-secret"), "{all_headers}");
    }
    let initialize: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(initialize["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(initialize["params"]["clientInfo"]["name"], "agentloop");
    assert_eq!(header(&requests[0], "mcp-session-id"), None);
    // After the handshake: the server's version and session on every request.
    for request in requests.iter().skip(1) {
        assert_eq!(header(request, "mcp-protocol-version"), Some("2025-06-18"), "{}", request.method);
        assert_eq!(header(request, "mcp-session-id"), Some(SESSION), "{}", request.method);
    }
}

/// A configured token never follows a redirect to another origin: a 307 within the server's
/// origin is followed (the body is kept), one to another host is not, and that host hears
/// nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_is_followed_only_within_the_origin_so_the_token_stays_there() {
    let elsewhere = MockServer::start().await;
    Mock::given(method("POST")).respond_with(Recorder).mount(&elsewhere).await;
    let server = MockServer::start().await;
    let to = |url: String| ResponseTemplate::new(307).insert_header("location", url);
    Mock::given(method("POST"))
        .and(path("/moved"))
        .respond_with(to(format!("{}/mcp", server.uri())))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/away"))
        .respond_with(to(format!("{}/mcp", elsewhere.uri())))
        .mount(&server)
        .await;
    Mock::given(method("POST")).and(path("/mcp")).respond_with(Recorder).mount(&server).await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(405)).mount(&server).await;
    Mock::given(method("DELETE")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    let auth = json!({"Authorization": "Bearer tok-redirect"});
    let servers = json!({
        "same": {"type": "http", "url": format!("{}/moved", server.uri()), "headers": auth},
        "away": {"type": "http", "url": format!("{}/away", server.uri()), "headers": auth}
    });
    let (out, lines) =
        tokio::task::spawn_blocking(move || run(servers, &[("mcp__same__whoami", json!({}))], "mcp__same", &[]))
            .await
            .unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        mcp_servers(&lines),
        json!([{"name": "away", "status": "failed"}, {"name": "same", "status": "connected"}])
    );
    assert_eq!(tool_results(&lines), vec![("you are the agent".to_owned(), false)]);
    assert_eq!(elsewhere.received_requests().await.unwrap().len(), 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("agentloop: warning: MCP server `away` failed: "), "{stderr}");
    assert!(!stderr.contains("tok-redirect"), "{stderr}");
    // The redirected calls reached /mcp with the token.
    let requests = server.received_requests().await.unwrap();
    let at_mcp: Vec<&Request> = requests.iter().filter(|r| r.url.path() == "/mcp").collect();
    assert!(!at_mcp.is_empty());
    assert!(at_mcp.iter().all(|r| header(r, "authorization") == Some("Bearer tok-redirect")));
}

#[test]
fn an_unreachable_server_is_a_warning_and_the_run_completes() {
    // Bound and dropped: nothing listens on it.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let servers = json!({"gone": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}});
    let (out, lines) = run(servers, &[("mcp__gone__anything", json!({}))], "mcp__gone", &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // One warning naming the server and the cause; the SDK's own logs stay off.
    assert_eq!(
        stderr,
        format!(
            "agentloop: warning: MCP server `gone` failed: initialize: send initialize request: error sending \
request for url (http://127.0.0.1:{port}/mcp): client error (Connect): tcp connect error: Connection refused \
(os error 111)\n"
        )
    );
    assert_eq!(mcp_servers(&lines), json!([{"name": "gone", "status": "failed"}]));
    let results = tool_results(&lines);
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "{results:?}");
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

#[test]
fn agentloop_mcp_lists_the_tools_and_calls_one_by_hand() {
    let server = HttpEverything::start();
    let mcp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agentloop")).arg("mcp").args(args).arg(server.url()).output().unwrap()
    };
    let out = mcp(&[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = listing.lines();
    assert_eq!(lines.next(), Some("mcp-servers/everything 2.0.0 (protocol 2025-11-25)"));
    let tools: Vec<&str> = lines.collect();
    assert!(tools.contains(&"echo\tEchoes back the input string"), "{listing}");
    assert!(tools.contains(&"get-sum\tReturns the sum of two numbers"), "{listing}");

    let out = mcp(&["--call", "get-sum", "--arguments", r#"{"a": 2, "b": 40}"#]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The sum of 2 and 40 is 42.\n");

    // An error result is printed and exits 1; bad arguments are a usage error.
    let out = mcp(&["--call", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "MCP error -32602: Tool nope not found\n");
    let out = mcp(&["--call", "echo", "--arguments", "[1]"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "agentloop mcp: --arguments: expected a JSON object, not [1]\n");
}
