//! The worker under a real Restate server (`.ci/install-restate` installs it from npm): a
//! scripted scenario runs through the ingress, the worker is killed with SIGKILL at each kind
//! of step, started again, and the run goes on. The effects log says what ran: a finished step
//! once, a step cut off again (a model attempt) or never (a mutating call, answered as
//! interrupted); the transcript is the uninterrupted run's, with the same uuids; the trace
//! passes the auditor's replay.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../../tests/common/mock_api.rs"]
mod mock_api;

use mock_api::{MockApi, Reply, Sse};

/// The repository's root (the engine crate's directory).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Restate server binary, installed by `.ci/install-restate` when missing.
fn restate_server() -> PathBuf {
    static READY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    READY
        .get_or_init(|| {
            let binary =
                repo().join(".ci/cache/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server");
            let status = Command::new("bash")
                .arg(repo().join(".ci/install-restate"))
                .stdin(Stdio::null())
                .status()
                .map_err(|e| format!("cannot run .ci/install-restate: {e}"))?;
            if !status.success() || !binary.exists() {
                return Err(format!(".ci/install-restate failed ({status}): these tests need npm access once"));
            }
            Ok(binary)
        })
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Restate server of its own, on free ports of 127.0.0.1, with its data in a temp dir.
struct Server {
    _process: Process,
    _data: tempfile::TempDir,
    ingress: u16,
    admin: u16,
}

impl Server {
    fn start() -> Server {
        let data = tempfile::tempdir().unwrap();
        let (ingress, admin, node) = (free_port(), free_port(), free_port());
        let process = Command::new(restate_server())
            .args(["--no-logo", "--node-name", "n1"])
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_BASE_DIR", data.path())
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env("RESTATE_BIND_IP", "127.0.0.1")
            .env("RESTATE_BIND_PORT", node.to_string())
            .env("RESTATE_INGRESS__BIND_ADDRESS", format!("127.0.0.1:{ingress}"))
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            // A killed worker is tried again soon.
            .env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "100ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "500ms")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Server { _process: Process(process), _data: data, ingress, admin };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http(admin, "GET", "/health", None).map(|(status, _)| status) != Some(200) {
            assert!(Instant::now() < deadline, "the Restate server did not become healthy");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Server {
    /// Register the worker serving on `port` with the server's admin API.
    fn register(&self, port: u16) {
        let uri = json!({"uri": format!("http://127.0.0.1:{port}")});
        let (status, body) = http(self.admin, "POST", "/deployments", Some(&uri)).unwrap();
        assert!((200..300).contains(&status), "{status} {body}");
    }
}

/// The entries of the effects log at `log`, so far (none before the first).
fn effects(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// One HTTP/1.1 exchange with 127.0.0.1:`port`: the status and the body.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, String)> {
    http_with(port, method, path, &[], body)
}

/// [`http`] with extra request headers.
fn http_with(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let extra: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let (head, rest) = response.split_once("\r\n\r\n")?;
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(rest) } else { rest.to_owned() };
    Some((status, body))
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        text = &rest[size + 2..];
    }
    out
}

/// The worker, serving on `port`, noting what it runs in `log`.
fn start_worker(port: u16, log: &Path) -> Process {
    start_worker_with(port, log, &[])
}

/// [`start_worker`] with more environment variables.
fn start_worker_with(port: u16, log: &Path, envs: &[(&str, String)]) -> Process {
    let process = Command::new(env!("CARGO_BIN_EXE_agentloop-restate"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("AGENTLOOP_EFFECTS_LOG", log)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the worker did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    Process(process)
}

/// A backoff (a 529, retried after 1.5 s), a Read, a mutating Bash call, and two slow replies.
const SCENARIO: &str = r#"{
  "name": "durable",
  "prompt": "Read the notes, log the run, then answer.",
  "files": {"notes.txt": "ship on friday\n"},
  "settings": {"permissions": {"defaultMode": "bypassPermissions"}},
  "options": {"retry_base_delay_ms": 1500},
  "responses": [
    {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}},
    {"content": [{"type": "tool_use", "id": "toolu_notes", "name": "Read", "input": {"file_path": "notes.txt"}}]},
    {"content": [{"type": "text", "text": "Logging."},
                 {"type": "tool_use", "id": "toolu_log", "name": "Bash", "input": {"command": "echo ran >> log.txt; sleep 2"}}],
     "chunk_delay_ms": 300},
    {"content": [{"type": "text", "text": "Logged; "}, {"type": "text", "text": "the notes say "}, {"type": "text", "text": "ship on friday."}],
     "chunk_delay_ms": 300}
  ]
}"#;

/// Where the worker is killed: after the effects log's entry for `step` at `at` appears (and
/// the file `made`, if any, exists in the working directory), and `then` later.
struct KillPoint {
    step: &'static str,
    at: &'static str,
    made: Option<&'static str>,
    then: Duration,
}

/// One run of the scenario on a fresh server, killed at `kill` (if any).
struct Run {
    result: Value,
    /// Per step: how often it started, ended, and was answered as interrupted.
    counts: BTreeMap<String, (usize, usize, usize)>,
    transcript: Vec<Value>,
    trace: String,
    log_lines: usize,
}

fn run(kill: Option<KillPoint>) -> Run {
    let server = Server::start();
    let scratch = tempfile::tempdir().unwrap();
    let (dir, out, log) =
        (scratch.path().join("work"), scratch.path().join("out"), scratch.path().join("effects.jsonl"));
    let scenario = scratch.path().join("durable.json");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let port = free_port();
    let mut worker = Some(start_worker(port, &log));
    server.register(port);

    let ingress = server.ingress;
    let request = json!({"scenario": scenario, "dir": dir, "out": out});
    let call = std::thread::spawn(move || http(ingress, "POST", "/Session/durable-session/prompt", Some(&request)));
    if let Some(KillPoint { step, at, made, then }) = kill {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !effects(&log).iter().any(|e| e["step"] == step && e["at"] == at) {
            assert!(Instant::now() < deadline, "the run never reached {step} {at}");
            std::thread::sleep(Duration::from_millis(10));
        }
        while made.is_some_and(|file| !dir.join(file).exists()) {
            assert!(Instant::now() < deadline, "the run never made {made:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(then);
        let mut killed = worker.take().unwrap();
        // SIGKILL: nothing of the worker runs after this.
        killed.0.kill().unwrap();
        killed.0.wait().unwrap();
        worker = Some(start_worker(port, &log));
    }
    let (status, body) = call.join().unwrap().expect("the ingress answered");
    assert_eq!(status, 200, "{body}");
    drop(worker);

    let mut counts: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let count = counts.entry(entry["step"].as_str().unwrap().to_owned()).or_default();
        match entry["at"].as_str().unwrap() {
            "start" => count.0 += 1,
            "end" => count.1 += 1,
            _ => count.2 += 1,
        }
    }
    let transcript = std::fs::read_to_string(out.join("0.transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run {
        result: serde_json::from_str(&body).unwrap(),
        counts,
        transcript,
        trace: std::fs::read_to_string(out.join("0.trace.jsonl")).unwrap(),
        log_lines: std::fs::read_to_string(dir.join("log.txt")).map(|t| t.lines().count()).unwrap_or(0),
    }
}

fn counts(entries: &[(&str, (usize, usize, usize))]) -> BTreeMap<String, (usize, usize, usize)> {
    entries.iter().map(|(step, n)| ((*step).to_owned(), *n)).collect()
}

/// The uninterrupted run's counts with `changes`.
fn once_each_but(changes: &[(&str, (usize, usize, usize))]) -> BTreeMap<String, (usize, usize, usize)> {
    let mut all = counts(&[
        ("model attempt 1", (1, 1, 0)),
        ("model attempt 2", (1, 1, 0)),
        ("tool Read toolu_notes", (1, 1, 0)),
        ("model attempt 3", (1, 1, 0)),
        ("tool Bash toolu_log", (1, 1, 0)),
        ("model attempt 4", (1, 1, 0)),
    ]);
    all.extend(counts(changes));
    all
}

/// The auditor's replay of `trace` finds nothing, and the trace ends in `terminal`.
fn audited(trace: &str, terminal: &str) {
    let report = agentloop::audit::trace::replay(agentloop::engine::table::shipped(), "0.trace.jsonl", trace);
    assert_eq!(report.findings, Vec::new(), "{trace}");
    assert_eq!(report.terminal.as_deref(), Some(terminal));
}

/// The Bash call's result in a transcript.
fn bash_result(transcript: &[Value]) -> Value {
    transcript
        .iter()
        .flat_map(|line| line["message"]["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["tool_use_id"] == "toolu_log")
        .unwrap()
}

#[test]
fn a_worker_killed_at_each_kind_of_step_finishes_the_run_with_nothing_run_twice() {
    let whole = run(None);
    assert_eq!(whole.result["reason"], "completed");
    assert_eq!(whole.result["result"], "Logged; the notes say ship on friday.");
    assert_eq!(whole.counts, once_each_but(&[]));
    assert_eq!(whole.log_lines, 1);
    assert_eq!(whole.transcript.len(), 6);
    audited(&whole.trace, "completed");

    let during_backoff =
        run(Some(KillPoint { step: "model attempt 1", at: "end", made: None, then: Duration::from_millis(400) }));
    assert_eq!(during_backoff.counts, once_each_but(&[]));
    assert_eq!(during_backoff.transcript, whole.transcript);
    assert_eq!(during_backoff.log_lines, 1);
    audited(&during_backoff.trace, "completed");

    // After the Read's result (the attempt after it has started): the attempt is sent again.
    let after_a_result =
        run(Some(KillPoint { step: "model attempt 3", at: "start", made: None, then: Duration::ZERO }));
    assert_eq!(after_a_result.counts, once_each_but(&[("model attempt 3", (2, 1, 0))]));
    assert_eq!(after_a_result.transcript, whole.transcript);
    audited(&after_a_result.trace, "completed");

    // During the mutating call: it is never run again, and its result says so.
    let during_bash = run(Some(KillPoint {
        step: "tool Bash toolu_log",
        at: "start",
        made: Some("log.txt"),
        then: Duration::from_millis(100),
    }));
    assert_eq!(during_bash.counts, once_each_but(&[("tool Bash toolu_log", (1, 0, 1))]));
    assert_eq!(during_bash.log_lines, 1, "the Bash call ran once");
    let interrupted = bash_result(&during_bash.transcript);
    assert_eq!(interrupted["content"], agentloop::tools::OUTCOME_UNKNOWN_RESULT);
    assert_eq!(interrupted["is_error"], true);
    let uuids = |t: &[Value]| t.iter().map(|l| l["uuid"].clone()).collect::<Vec<_>>();
    assert_eq!(uuids(&during_bash.transcript), uuids(&whole.transcript));
    audited(&during_bash.trace, "completed");

    // During a model attempt (its reply streaming): that attempt is sent again.
    let during_reply =
        run(Some(KillPoint { step: "model attempt 4", at: "start", made: None, then: Duration::from_millis(400) }));
    assert_eq!(during_reply.counts, once_each_but(&[("model attempt 4", (2, 1, 0))]));
    assert_eq!(during_reply.transcript, whole.transcript);
    audited(&during_reply.trace, "completed");
}

/// An idempotency key on the invocation: the same key answers with the run it started, whose
/// steps ran once; a prompt without it is the session's next one.
#[test]
fn an_idempotency_key_returns_the_existing_run() {
    let server = Server::start();
    let scratch = tempfile::tempdir().unwrap();
    let (dir, log) = (scratch.path().join("work"), scratch.path().join("effects.jsonl"));
    let port = free_port();
    let _worker = start_worker(port, &log);
    server.register(port);
    let request = json!({"scenario": "flaky-network", "dir": dir});
    let prompt = |key: Option<&str>| {
        let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
        let (status, body) =
            http_with(server.ingress, "POST", "/Session/fleet-7/prompt", &headers, Some(&request)).unwrap();
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let attempts = || effects(&log).iter().filter(|e| e["at"] == "end").count();
    let first = prompt(Some("run-fleet-7-a"));
    assert_eq!(first["prompt"], 0);
    assert_eq!(first["reason"], "completed");
    assert_eq!(attempts(), 4);
    let again = prompt(Some("run-fleet-7-a"));
    assert_eq!(again, first);
    assert_eq!(attempts(), 4, "nothing ran for the second request");
    let next = prompt(None);
    assert_eq!(next["prompt"], 1);
    assert_eq!(attempts(), 8);
}

/// Cancelling an invocation (the admin API's `PATCH /invocations/{id}/cancel`) ends the run on
/// its abort edge at its next step: the tool running finishes, its result is not kept, and
/// the trace ends in `aborted_tools`.
#[test]
fn a_cancelled_invocation_ends_on_an_abort_edge() {
    let server = Server::start();
    let scratch = tempfile::tempdir().unwrap();
    let (dir, out, log) =
        (scratch.path().join("work"), scratch.path().join("out"), scratch.path().join("effects.jsonl"));
    let scenario = scratch.path().join("slow.json");
    std::fs::write(
        &scenario,
        r#"{"name": "slow", "prompt": "Wait.", "settings": {"permissions": {"defaultMode": "bypassPermissions"}},
            "responses": [{"content": [{"type": "tool_use", "id": "toolu_wait", "name": "Bash", "input": {"command": "sleep 2"}}]},
                          {"content": [{"type": "text", "text": "Done."}]}]}"#,
    )
    .unwrap();
    let port = free_port();
    let _worker = start_worker(port, &log);
    server.register(port);
    let request = json!({"scenario": scenario, "dir": dir, "out": out});
    let (status, body) = http(server.ingress, "POST", "/Session/slow-1/prompt/send", Some(&request)).unwrap();
    assert!((200..300).contains(&status), "{status} {body}");
    let id = serde_json::from_str::<Value>(&body).unwrap()["invocationId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !effects(&log).iter().any(|e| e["step"] == "tool Bash toolu_wait") {
        assert!(Instant::now() < deadline, "the Bash call never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, body) = http(server.admin, "PATCH", &format!("/invocations/{id}/cancel"), None).unwrap();
    assert!((200..300).contains(&status), "{status} {body}");
    let trace = out.join("0.trace.jsonl");
    while !trace.exists() {
        assert!(Instant::now() < deadline, "the run never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    audited(&std::fs::read_to_string(&trace).unwrap(), "aborted_tools");
    let transcript = std::fs::read_to_string(out.join("0.transcript.jsonl")).unwrap();
    assert!(!transcript.contains("Done."), "no model request after the cancel: {transcript}");
}

/// A permission question nobody is attached to answer parks the invocation on an awakeable:
/// a worker killed while it waits comes back to the same question (asked once), and the HTTP
/// call that resolves the awakeable lets the call run, once.
#[test]
fn a_parked_permission_question_survives_a_kill_and_an_http_call_answers_it() {
    let server = Server::start();
    let scratch = tempfile::tempdir().unwrap();
    let (dir, out, log) =
        (scratch.path().join("work"), scratch.path().join("out"), scratch.path().join("effects.jsonl"));
    let scenario = scratch.path().join("ask.json");
    std::fs::write(
        &scenario,
        r#"{"name": "ask", "prompt": "Note that you asked.",
            "responses": [{"content": [{"type": "tool_use", "id": "toolu_note", "name": "Bash", "input": {"command": "echo asked >> asked.txt"}}]},
                          {"content": [{"type": "text", "text": "Noted."}], "expect": {"tool_result_is_error": [false]}}]}"#,
    )
    .unwrap();
    let port = free_port();
    let mut worker = start_worker(port, &log);
    server.register(port);
    let ingress = server.ingress;
    let request = json!({"scenario": scenario, "dir": dir, "out": out});
    let call = std::thread::spawn(move || http(ingress, "POST", "/Session/ask-1/prompt", Some(&request)));
    let parked = || effects(&log).into_iter().filter(|e| e["at"] == "parked").collect::<Vec<_>>();
    let deadline = Instant::now() + Duration::from_secs(30);
    while parked().is_empty() {
        assert!(Instant::now() < deadline, "the question was never parked");
        std::thread::sleep(Duration::from_millis(10));
    }
    worker.0.kill().unwrap();
    worker.0.wait().unwrap();
    drop(worker);
    let _worker = start_worker(port, &log);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!dir.join("asked.txt").exists(), "nothing ran before the answer");
    let id = parked()[0]["awakeable"].as_str().unwrap().to_owned();
    let (status, body) = http(
        server.ingress,
        "POST",
        &format!("/restate/awakeables/{id}/resolve"),
        Some(&json!({"answer": "allow_once"})),
    )
    .unwrap();
    assert!((200..300).contains(&status), "{status} {body}");
    let (status, body) = call.join().unwrap().expect("the ingress answered");
    assert_eq!(status, 200, "{body}");
    let result: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(result["reason"], "completed");
    assert_eq!(result["result"], "Noted.");
    assert_eq!(parked().len(), 1, "the question was asked once");
    assert_eq!(std::fs::read_to_string(dir.join("asked.txt")).unwrap(), "asked\n");
    let trace = std::fs::read_to_string(out.join("0.trace.jsonl")).unwrap();
    audited(&trace, "completed");
}

/// A session on the Messages API (a local mock over real HTTP and SSE): its second prompt
/// carries the first one's conversation, and a worker killed while that prompt's reply
/// streams sends the same request again on the next life.
#[test]
fn a_model_session_keeps_its_history_and_a_reply_cut_by_a_kill_is_requested_again() {
    let [read, answer] = <[Reply; 2]>::try_from(mock_api::read_round_trip()).ok().unwrap();
    let again = Sse::new("claude-sonnet-4-5", 1500).text("Again: Hello from the greeting file!").stop("end_turn");
    let api = MockApi::start(vec![
        read,
        answer,
        Reply::paused_before(again.clone(), "message_delta", Duration::from_secs(5)),
        Reply::Sse(again),
    ]);
    let server = Server::start();
    let scratch = tempfile::tempdir().unwrap();
    let (dir, log) = (scratch.path().join("work"), scratch.path().join("effects.jsonl"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    let envs = [("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()), ("ANTHROPIC_BASE_URL", api.base_url())];
    let port = free_port();
    let worker = start_worker_with(port, &log, &envs);
    server.register(port);
    let ingress = server.ingress;
    let prompt = move |text: &str| {
        let request = json!({"prompt": text, "dir": dir, "model": "claude-sonnet-4-5"});
        let (status, body) = http(ingress, "POST", "/Session/model-1/prompt", Some(&request)).unwrap();
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let first = prompt("What does greeting.txt say?");
    assert_eq!(first["reason"], "completed");
    assert_eq!(first["result"], mock_api::ROUND_TRIP_ANSWER);

    let second = std::thread::spawn(move || prompt("Say it again."));
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.bodies().len() < 3 {
        assert!(Instant::now() < deadline, "the second prompt's request never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(worker);
    let _worker = start_worker_with(port, &log, &envs);
    let second = second.join().unwrap();
    assert_eq!(second["prompt"], 1);
    assert_eq!(second["result"], "Again: Hello from the greeting file!");
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 4);
    // The second prompt's request holds the first prompt's conversation, and the request the
    // kill cut off is sent again as it was.
    assert_eq!(bodies[2]["messages"].as_array().unwrap().len(), 5);
    assert_eq!(bodies[3]["messages"], bodies[2]["messages"]);
    let attempts: Vec<String> = effects(&log)
        .iter()
        .map(|e| format!("{} {}", e["step"].as_str().unwrap(), e["at"].as_str().unwrap()))
        .collect();
    assert_eq!(
        attempts,
        [
            "model attempt 1 start",
            "model attempt 1 end",
            "tool Read toolu_01 start",
            "tool Read toolu_01 end",
            "model attempt 2 start",
            "model attempt 2 end",
            "model attempt 1 start",
            "model attempt 1 start",
            "model attempt 1 end",
        ]
    );
}
