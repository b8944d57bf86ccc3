//! OpenTelemetry export, end to end: `agentloop run` against the mock Messages API with the
//! OTLP variables set, and an OTLP/HTTP receiver in the test that decodes what arrives with
//! the official generated messages (`opentelemetry-proto`). Each test checks the exact span
//! tree and the attributes of a scenario: a plain run, retries, a tool batch, a subagent,
//! an abort by SIGTERM (the spans are still flushed), the JSON protocol with a caller's
//! `TRACEPARENT`, and content, exported only when opted in.

use crate::mock_api::{self, MockApi, Reply, Sse, read_round_trip};

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use serde_json::{Value, json};

const PROMPT: &str = "Read greeting.txt and tell me what it says";
const FILE_TEXT: &str = "Hello from the greeting file!";

/// One POST the receiver took.
#[derive(Debug, Clone)]
struct Post {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Post {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// An OTLP/HTTP receiver on 127.0.0.1: answers every POST with 200 and keeps it.
struct Receiver {
    port: u16,
    posts: Arc<Mutex<Vec<Post>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let posts = Arc::new(Mutex::new(Vec::new()));
        let kept = posts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Receiver { port, posts }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }
}

/// Read HTTP/1.1 requests off one connection until it closes.
fn serve(stream: std::net::TcpStream, kept: &Mutex<Vec<Post>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let length: usize =
            headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        kept.lock().unwrap().push(Post { path, headers, body });
        writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").unwrap();
    }
}

/// A span as the test reads it.
#[derive(Debug, Clone)]
struct SpanView {
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    kind: i32,
    start: u64,
    end: u64,
    attributes: BTreeMap<String, Value>,
    events: Vec<(String, BTreeMap<String, Value>)>,
    status: (i32, String),
}

fn value(v: &Option<AnyValue>) -> Value {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(d)) => json!(d),
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(|v| value(&Some(v.clone()))).collect())
        }
        other => panic!("unexpected value {other:?}"),
    }
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, Value> {
    kvs.iter().map(|kv| (kv.key.clone(), value(&kv.value))).collect()
}

/// Every span of every trace export, in the order they arrived.
fn spans(posts: &[Post]) -> Vec<SpanView> {
    let mut out = Vec::new();
    for post in posts.iter().filter(|p| p.path == "/v1/traces") {
        let request = match post.header("content-type") {
            Some("application/json") => serde_json::from_slice::<ExportTraceServiceRequest>(&post.body).unwrap(),
            _ => ExportTraceServiceRequest::decode(post.body.as_slice()).unwrap(),
        };
        for resource_spans in request.resource_spans {
            let resource = attributes(&resource_spans.resource.unwrap().attributes);
            assert_eq!(resource["service.name"], "agentloop", "{resource:?}");
            for scope_spans in resource_spans.scope_spans {
                assert_eq!(scope_spans.scope.unwrap().name, "agentloop");
                for s in scope_spans.spans {
                    out.push(SpanView {
                        trace_id: s.trace_id,
                        span_id: s.span_id,
                        parent: s.parent_span_id,
                        name: s.name,
                        kind: s.kind,
                        start: s.start_time_unix_nano,
                        end: s.end_time_unix_nano,
                        attributes: attributes(&s.attributes),
                        events: s.events.iter().map(|e| (e.name.clone(), attributes(&e.attributes))).collect(),
                        status: s.status.map(|st| (st.code, st.message)).unwrap_or_default(),
                    });
                }
            }
        }
    }
    out
}

/// The span tree as indented names, children in start order.
fn tree(spans: &[SpanView]) -> Vec<String> {
    fn walk(spans: &[SpanView], parent: &[u8], depth: usize, out: &mut Vec<String>) {
        let mut children: Vec<&SpanView> = spans.iter().filter(|s| s.parent == parent).collect();
        children.sort_by_key(|s| s.start);
        for child in children {
            out.push(format!("{}{}", "  ".repeat(depth), child.name));
            walk(spans, &child.span_id, depth + 1, out);
        }
    }
    let ids: Vec<&Vec<u8>> = spans.iter().map(|s| &s.span_id).collect();
    let mut out = Vec::new();
    let mut roots: Vec<&SpanView> = spans.iter().filter(|s| !ids.contains(&&s.parent)).collect();
    roots.sort_by_key(|s| s.start);
    for root in roots {
        out.push(root.name.clone());
        walk(spans, &root.span_id, 1, &mut out);
    }
    out
}

fn named<'a>(spans: &'a [SpanView], name: &str) -> Vec<&'a SpanView> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The edges of a run span's transition events.
fn edges(span: &SpanView) -> Vec<String> {
    span.events
        .iter()
        .filter(|(name, _)| name == "agentloop.transition")
        .map(|(_, a)| a["edge"].as_str().unwrap().to_owned())
        .collect()
}

/// `agentloop run -p PROMPT --model claude-sonnet-4-5` in a directory holding greeting.txt,
/// against `api`, exporting to `receiver`; returns the exit code and stderr.
fn run(api: &MockApi, receiver: &Receiver, env: &[(&str, &str)], extra: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), format!("{FILE_TEXT}\n")).unwrap();
    let out = command(api, receiver, env, &dir, extra).stdin(Stdio::null()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn command(
    api: &MockApi,
    receiver: &Receiver,
    env: &[(&str, &str)],
    dir: &tempfile::TempDir,
    extra: &[&str],
) -> Command {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") || name.starts_with("ANTHROPIC_") || name == "TRACEPARENT" {
            command.env_remove(name);
        }
    }
    command
        .env("AGENTLOOP_HOME", dir.path().join(".home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .envs(env.iter().copied())
        .args(["run", "-p", PROMPT, "--model", "claude-sonnet-4-5", "--cwd", dir.path().to_str().unwrap()])
        .args(extra);
    command
}

#[test]
fn a_plain_run_exports_its_span_tree_with_the_genai_attributes_and_its_metrics() {
    let api = MockApi::start(read_round_trip());
    let receiver = Receiver::start();
    let (code, err) = run(&api, &receiver, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let posts = receiver.posts();
    assert!(posts.iter().all(|p| p.header("content-type") == Some("application/x-protobuf")), "{posts:?}");
    let spans = spans(&posts);
    assert_eq!(
        tree(&spans),
        ["invoke_agent agentloop", "  chat claude-sonnet-4-5", "  execute_tool Read", "  chat claude-sonnet-4-5"]
    );
    let root = named(&spans, "invoke_agent agentloop")[0];
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
    assert_eq!(root.kind, 1, "INTERNAL");
    assert_eq!(root.status.0, 0, "unset: the run completed");
    let a = &root.attributes;
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.agent.name"], "agentloop");
    assert_eq!(a["gen_ai.provider.name"], "anthropic");
    assert_eq!(a["gen_ai.request.model"], "claude-sonnet-4-5");
    assert_eq!(a["agentloop.terminal_reason"], "completed");
    assert_eq!(a["gen_ai.conversation.id"].as_str().unwrap().len(), 36, "a session uuid");
    assert!(!a.contains_key("error.type"));
    assert_eq!(
        edges(root),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.tools",
            "tools.done",
            "checkpoint.next_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
    let first = &root.events[0].1;
    assert_eq!(
        (first["from"].clone(), first["to"].clone(), first["seq"].clone(), first["turn"].clone()),
        (json!("Prepare"), json!("Request"), json!(1), json!(1))
    );

    let chats = named(&spans, "chat claude-sonnet-4-5");
    for (chat, (input, finish)) in chats.iter().zip([(1200, "tool_use"), (1300, "end_turn")]) {
        assert_eq!(chat.kind, 3, "CLIENT");
        assert_eq!(chat.parent, root.span_id);
        let a = &chat.attributes;
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "anthropic");
        assert_eq!(a["gen_ai.request.model"], "claude-sonnet-4-5");
        assert_eq!(a["gen_ai.response.model"], "claude-sonnet-4-5");
        assert_eq!(a["gen_ai.response.id"], "msg_mock");
        assert_eq!(a["gen_ai.response.finish_reasons"], json!([finish]));
        assert_eq!(a["gen_ai.usage.input_tokens"], input);
        assert_eq!(a["gen_ai.usage.cache_read.input_tokens"], 0);
        assert_eq!(a["gen_ai.usage.cache_creation.input_tokens"], 0);
        assert_eq!(a["gen_ai.conversation.id"], root.attributes["gen_ai.conversation.id"]);
        assert_eq!(a["agentloop.attempt"], 1);
        assert!(a["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0);
        assert!(a.contains_key("agentloop.time_to_first_event_ms"));
        assert!(chat.start >= root.start && chat.end <= root.end);
    }
    let tool = named(&spans, "execute_tool Read")[0];
    assert_eq!(tool.parent, root.span_id);
    assert_eq!(
        tool.attributes,
        BTreeMap::from([
            ("gen_ai.operation.name".to_owned(), json!("execute_tool")),
            ("gen_ai.tool.name".to_owned(), json!("Read")),
            ("gen_ai.tool.call.id".to_owned(), json!("toolu_01")),
            ("gen_ai.tool.type".to_owned(), json!("function")),
            ("gen_ai.provider.name".to_owned(), json!("anthropic")),
            ("gen_ai.conversation.id".to_owned(), root.attributes["gen_ai.conversation.id"].clone()),
            // A read-only call starts while the reply still streams.
            ("agentloop.tool.early".to_owned(), json!(true)),
        ])
    );
    assert!(chats[0].start <= tool.start && tool.end <= chats[1].start);
    // Content is not exported unless asked for.
    let everything = format!("{spans:?}");
    assert!(!everything.contains("greeting.txt") && !everything.contains(FILE_TEXT) && !everything.contains(PROMPT));

    let metrics = metrics(&posts);
    assert_eq!(metrics["agentloop.transitions"]["checkpoint.next_turn"], 1.0);
    assert_eq!(metrics["agentloop.transitions"]["prepare.request"], 2.0);
    assert_eq!(metrics["gen_ai.client.token.usage"]["input"], 2500.0, "{metrics:?}");
    assert_eq!(metrics["gen_ai.client.operation.duration"]["count"], 2.0, "{metrics:?}");
}

/// The last export's points, by metric: a sum by its `edge` (or `gen_ai.token.type` of a
/// histogram's sum); a duration histogram's count.
fn metrics(posts: &[Post]) -> BTreeMap<String, BTreeMap<String, f64>> {
    use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point};
    let last = posts.iter().rev().find(|p| p.path == "/v1/metrics").expect("a metrics export");
    let request = ExportMetricsServiceRequest::decode(last.body.as_slice()).unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for m in request.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics) {
        let entry = out.entry(m.name.clone()).or_default();
        match m.data.as_ref().unwrap() {
            Data::Sum(sum) => {
                for p in &sum.data_points {
                    let key = attributes(&p.attributes).get("edge").and_then(Value::as_str).unwrap_or("").to_owned();
                    let v = match p.value {
                        Some(number_data_point::Value::AsInt(i)) => i as f64,
                        Some(number_data_point::Value::AsDouble(d)) => d,
                        None => 0.0,
                    };
                    *entry.entry(key).or_default() += v;
                }
            }
            Data::Histogram(h) => {
                for p in &h.data_points {
                    let a = attributes(&p.attributes);
                    let key = a.get("gen_ai.token.type").and_then(Value::as_str).unwrap_or("").to_owned();
                    *entry.entry(key).or_default() += p.sum.unwrap_or(0.0);
                    *entry.entry("count".to_owned()).or_default() += p.count as f64;
                }
            }
            other => panic!("unexpected metric data {other:?}"),
        }
    }
    out
}

#[test]
fn each_retried_attempt_is_a_chat_span_with_its_error_type() {
    let mut script = vec![Reply::error(529, "overloaded_error", "Overloaded").header("retry-after", "0")];
    script.extend(read_round_trip());
    let api = MockApi::start(script);
    let receiver = Receiver::start();
    let (code, err) = run(&api, &receiver, &[("OTEL_METRICS_EXPORTER", "none")], &[]);
    assert_eq!(code, 0, "{err}");
    let posts = receiver.posts();
    assert!(posts.iter().all(|p| p.path == "/v1/traces"), "metrics are off");
    let spans = spans(&posts);
    let chats = named(&spans, "chat claude-sonnet-4-5");
    assert_eq!(chats.len(), 3);
    let failed = &chats[0];
    assert_eq!(failed.attributes["error.type"], "overloaded_error");
    assert_eq!(failed.status, (2, "HTTP 529 overloaded_error: Overloaded".to_owned()));
    assert!(!failed.attributes.contains_key("gen_ai.usage.input_tokens"));
    assert_eq!(failed.attributes["agentloop.attempt"], 1);
    assert_eq!(chats[1].attributes["agentloop.attempt"], 2);
    assert_eq!(chats[1].status.0, 0);
    assert!(!chats[1].attributes.contains_key("error.type"));
    let root = named(&spans, "invoke_agent agentloop")[0];
    assert_eq!(&edges(root)[..3], ["prepare.request", "request.overload_retry", "request.stream_opened"]);
    let retry: Vec<_> = root.events.iter().filter(|(n, _)| n == "agentloop.retry").collect();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].1["attempt"], 1);
    assert_eq!(retry[0].1["delay_ms"], 0);
}

#[test]
fn a_tool_batch_is_one_span_per_call_under_the_run() {
    let batch = Sse::new("claude-sonnet-4-5", 1200)
        .tool_use("toolu_a", "Read", &json!({"file_path": "greeting.txt"}))
        .tool_use("toolu_b", "Glob", &json!({"pattern": "*.txt"}))
        .tool_use("toolu_c", "Read", &json!({"file_path": "missing.txt"}))
        .stop("tool_use");
    let api = MockApi::start(vec![
        Reply::Sse(batch),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 1300).text("Done.").stop("end_turn")),
    ]);
    let receiver = Receiver::start();
    let (code, err) = run(&api, &receiver, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let spans = spans(&receiver.posts());
    assert_eq!(
        tree(&spans)[..5],
        [
            "invoke_agent agentloop",
            "  chat claude-sonnet-4-5",
            "  execute_tool Read",
            "  execute_tool Glob",
            "  execute_tool Read"
        ]
        .map(str::to_owned)
    );
    let ids: Vec<(&str, &str, i32)> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool"))
        .map(|s| (s.attributes["gen_ai.tool.call.id"].as_str().unwrap(), s.name.as_str(), s.status.0))
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [("toolu_a", "execute_tool Read", 0), ("toolu_b", "execute_tool Glob", 0), ("toolu_c", "execute_tool Read", 2)]
    );
    let missing = spans.iter().find(|s| s.attributes.get("gen_ai.tool.call.id") == Some(&json!("toolu_c"))).unwrap();
    assert_eq!(missing.attributes["error.type"], "tool_error");
}

#[test]
fn a_subagent_run_is_an_invoke_agent_span_under_its_agent_call() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greeting.txt");
    std::fs::write(&file, format!("{FILE_TEXT}\n")).unwrap();
    let api = MockApi::start(mock_api::greeter_delegation(&file));
    let receiver = Receiver::start();
    let agents = json!({"greeter": {"description": "Reads greeting files.", "prompt": "Quote the file.",
        "tools": ["Read"], "model": "claude-haiku-4-5"}})
    .to_string();
    let out = command(&api, &receiver, &[], &dir, &["--agents", &agents]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let spans = spans(&receiver.posts());
    assert_eq!(
        tree(&spans),
        [
            "invoke_agent agentloop",
            "  chat claude-sonnet-4-5",
            "  execute_tool Agent",
            "    invoke_agent greeter",
            "      chat claude-haiku-4-5",
            "      execute_tool Read",
            "      chat claude-haiku-4-5",
            "  chat claude-sonnet-4-5"
        ]
    );
    let child = named(&spans, "invoke_agent greeter")[0];
    let a = &child.attributes;
    assert_eq!(a["gen_ai.agent.name"], "greeter");
    assert_eq!(a["agentloop.terminal_reason"], "completed");
    assert_eq!(a["agentloop.background"], false);
    assert_eq!(a["gen_ai.request.model"], "claude-haiku-4-5");
    let root = named(&spans, "invoke_agent agentloop")[0];
    assert_eq!(a["gen_ai.conversation.id"], root.attributes["gen_ai.conversation.id"]);
    assert_eq!(edges(child).last().map(String::as_str), Some("checkpoint.completed"));
    assert_eq!(edges(child)[0], "prepare.request");
}

#[test]
fn sigterm_during_a_tool_call_still_flushes_the_runs_spans() {
    let api = MockApi::start(vec![Reply::Sse(
        Sse::new("claude-sonnet-4-5", 1200)
            .tool_use("toolu_sleep", "Bash", &json!({"command": "sleep 30"}))
            .stop("tool_use"),
    )]);
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let child = command(&api, &receiver, &[], &dir, &["--allowedTools", "Bash(sleep:*)"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The Bash call runs once the one request was answered; give it a moment to start.
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let spans = spans(&receiver.posts());
    assert_eq!(tree(&spans), ["invoke_agent agentloop", "  chat claude-sonnet-4-5", "  execute_tool Bash"], "{err}");
    let root = named(&spans, "invoke_agent agentloop")[0];
    assert_eq!(root.attributes["agentloop.terminal_reason"], "aborted_tools");
    assert_eq!(root.attributes["error.type"], "aborted_tools");
    assert_eq!(root.status, (2, "the run ended in aborted_tools".to_owned()));
    assert_eq!(edges(root).last().map(String::as_str), Some("acting.abort"));
    let bash = named(&spans, "execute_tool Bash")[0];
    assert!(bash.end > bash.start && bash.end <= root.end);
}

#[test]
fn the_json_protocol_carries_the_callers_trace_context_and_headers() {
    let api = MockApi::start(read_round_trip());
    let receiver = Receiver::start();
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (code, err) = run(
        &api,
        &receiver,
        &[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20sekrit"),
            ("OTEL_SERVICE_NAME", "agentloop"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("TRACEPARENT", traceparent),
            ("TRACESTATE", "vendor=1"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let posts = receiver.posts();
    assert!(!posts.is_empty());
    for post in &posts {
        assert_eq!(post.header("content-type"), Some("application/json"));
        assert_eq!(post.header("authorization"), Some("Bearer sekrit"));
        let body: Value = serde_json::from_slice(&post.body).unwrap();
        let resource = &body["resourceSpans"][0]["resource"]["attributes"];
        assert!(
            resource.as_array().unwrap().contains(&json!({"key": "deployment.environment",
            "value": {"stringValue": "ci"}})),
            "{resource}"
        );
    }
    let spans = spans(&posts);
    let root = named(&spans, "invoke_agent agentloop")[0];
    assert_eq!(root.parent, [0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31]);
    let trace_id: String = root.trace_id.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(spans.len(), 4);
}

#[test]
fn content_is_exported_only_when_a_variable_opts_in() {
    let api = MockApi::start(read_round_trip());
    let receiver = Receiver::start();
    let (code, err) = run(
        &api,
        &receiver,
        &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"), ("OTEL_METRICS_EXPORTER", "none")],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let spans = spans(&receiver.posts());
    let root = named(&spans, "invoke_agent agentloop")[0];
    let input: Value = serde_json::from_str(root.attributes["gen_ai.input.messages"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]));
    let tool = named(&spans, "execute_tool Read")[0];
    assert_eq!(tool.attributes["gen_ai.tool.call.arguments"], json!({"file_path": "greeting.txt"}).to_string());
    assert_eq!(tool.attributes["gen_ai.tool.call.result"], format!("     1\t{FILE_TEXT}\n"));
}

#[test]
fn a_collector_that_is_down_costs_one_warning_not_the_run() {
    let api = MockApi::start(read_round_trip());
    // A port nobody listens on: bound, then released.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let receiver = Receiver { port, posts: Arc::new(Mutex::new(Vec::new())) };
    let (code, err) = run(&api, &receiver, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with(&format!("agentloop: warning: telemetry: cannot reach http://127.0.0.1:{port}/v1/")),
        "{err}"
    );
}

/// Claude Code's spans (`../shared/fixtures/claude-code-otel/spans.jsonl`, recorded from
/// Claude Code 2.1.332) and agentloop's, side by side in one backend: for each GenAI
/// operation, every `gen_ai.*` attribute Claude Code sets is on agentloop's span too, but for
/// the two names where Claude Code departs from the conventions.
#[test]
fn every_genai_attribute_claude_code_sets_is_set_here_too() {
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/claude-code-otel/spans.jsonl"
    ))
    .unwrap();
    // `gen_ai.system` is the conventions' former name of `gen_ai.provider.name`, which both
    // set; the conventions call cache writes `cache_creation`, which agentloop sets.
    let departures = ["gen_ai.system", "gen_ai.usage.cache_write.input_tokens"];
    let mut theirs: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for line in fixture.lines() {
        let span: Value = serde_json::from_str(line).unwrap();
        let attributes = span["attributes"].as_object().unwrap();
        let Some(operation) = attributes.get("gen_ai.operation.name").and_then(Value::as_str) else { continue };
        let keys = attributes.keys().filter(|k| k.starts_with("gen_ai.") && !departures.contains(&k.as_str()));
        theirs.entry(operation.to_owned()).or_default().extend(keys.cloned());
    }
    assert_eq!(theirs.keys().collect::<Vec<_>>(), ["chat", "execute_tool", "invoke_agent"]);

    let api = MockApi::start(read_round_trip());
    let receiver = Receiver::start();
    let (code, err) = run(&api, &receiver, &[("OTEL_METRICS_EXPORTER", "none")], &[]);
    assert_eq!(code, 0, "{err}");
    let spans = spans(&receiver.posts());
    for (operation, keys) in &theirs {
        let ours: Vec<&SpanView> =
            spans.iter().filter(|s| s.attributes.get("gen_ai.operation.name") == Some(&json!(operation))).collect();
        assert!(!ours.is_empty(), "no {operation} span");
        for span in ours {
            let missing: Vec<&String> = keys.iter().filter(|k| !span.attributes.contains_key(*k)).collect();
            assert!(missing.is_empty(), "{} lacks {missing:?}", span.name);
        }
    }
}

/// The Claude Agent SDK's mode: one process, one run per prompt. Each prompt is its own
/// `invoke_agent` span, both children of the `TRACEPARENT` the SDK's process passed, in the
/// same conversation; the spans are exported when stdin closes.
#[test]
fn each_prompt_of_the_sdk_mode_is_a_run_span_under_the_callers_trace() {
    use std::io::{BufRead, BufReader, Write};
    let mut script = read_round_trip();
    script.push(Reply::Sse(Sse::new("claude-sonnet-4-5", 1400).text("Again: hello.").stop("end_turn")));
    let api = MockApi::start(script);
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), format!("{FILE_TEXT}\n")).unwrap();
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") || name.starts_with("ANTHROPIC_") || name == "TRACEPARENT" {
            command.env_remove(name);
        }
    }
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut child = command
        .env("AGENTLOOP_HOME", dir.path().join(".home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("TRACEPARENT", traceparent)
        .args(["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5", "--cwd", dir.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for prompt in [PROMPT, "Once more"] {
        writeln!(stdin, "{}", json!({"type": "user", "message": {"role": "user", "content": prompt}})).unwrap();
        stdin.flush().unwrap();
        // Wait for the prompt's result before the next.
        loop {
            let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if line["type"] == "result" {
                assert_eq!(line["subtype"], "success", "{line}");
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let spans = spans(&receiver.posts());
    let roots = named(&spans, "invoke_agent agentloop");
    assert_eq!(roots.len(), 2, "{:?}", tree(&spans));
    for root in &roots {
        let trace_id: String = root.trace_id.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(root.parent, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(root.attributes["agentloop.terminal_reason"], "completed");
    }
    assert_eq!(roots[0].attributes["gen_ai.conversation.id"], roots[1].attributes["gen_ai.conversation.id"]);
    assert_ne!(roots[0].span_id, roots[1].span_id);
    assert_eq!(named(&spans, "chat claude-sonnet-4-5").len(), 3);
}
