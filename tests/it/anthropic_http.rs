//! `AnthropicModel` against local servers on 127.0.0.1: wiremock for well-formed answers, and a
//! raw TCP server for what wiremock cannot do (a connection dropped mid-reply, a stall).

use std::time::Duration;

use agentloop::model::anthropic::RedirectRefused;
use agentloop::model::anthropic::{AnthropicConfig, AnthropicModel, Auth, Secret};
use agentloop::model::assemble::{Assembled, Assembler};
use agentloop::model::{ErrorClass, Model, ModelError, ModelRequest, Purpose, ReplyStream, reply};
use agentloop::protocol::{ContentBlock, Message, Role, StopReason, ToolDefinition};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-test-key-never-shown";

fn model(base_url: &str, idle: Duration) -> AnthropicModel {
    let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new(KEY)));
    config.base_url = base_url.to_owned();
    config.idle_timeout = idle;
    AnthropicModel::new(config).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "You are terse.".into(),
        system_context: None,
        server_tools: Vec::new(),
        messages: vec![
            Message::user_text("Read greeting.txt"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "toolu_0".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "greeting.txt"}),
                }],
            },
            Message { role: Role::User, content: vec![ContentBlock::tool_result("toolu_0", "hello", false)] },
        ]
        .into(),
        tools: vec![
            ToolDefinition {
                name: "Read".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object"}),
            },
            ToolDefinition {
                name: "Bash".into(),
                description: "Run a command".into(),
                input_schema: json!({"type": "object"}),
            },
        ],
        max_tokens: 64_000,
        thinking: None,
        purpose: Purpose::Main,
    }
}

/// Frame events the way the API does: `event: <type>` then `data: <json>` then a blank line.
fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
}

fn text_and_tool_reply() -> String {
    sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 100}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It says "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello — ✓"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"ec"}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "ho hi\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"type": "message_delta", "stop_reason": "tool_use"},
               "usage": {"output_tokens": 42}}),
        json!({"type": "message_stop"}),
    ])
}

async fn assemble(mut reply: ReplyStream) -> (Assembled, Option<ModelError>) {
    let mut assembler = Assembler::new();
    let error = reply::read_to_end(&mut reply, &mut assembler, &mut |_| {}).await.err();
    (assembler.finish(), error)
}

async fn open(model: &AnthropicModel) -> Result<ReplyStream, ModelError> {
    model.stream(request()).await
}

#[tokio::test]
async fn streams_text_and_tool_use_with_the_right_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(text_and_tool_reply(), "text/event-stream; charset=utf-8"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let model = model(&server.uri(), Duration::from_secs(5));
    let (assembled, error) = assemble(open(&model).await.unwrap()).await;
    assert_eq!(error, None);
    assert!(assembled.complete);
    assert_eq!(
        assembled.content,
        vec![
            json!({"type": "text", "text": "It says hello — ✓"}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "echo hi"}}),
        ]
    );
    assert_eq!(assembled.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(assembled.usage.input_tokens, Some(120));
    assert_eq!(assembled.usage.output_tokens, Some(42));
    assert_eq!(assembled.usage.cache_read_input_tokens, Some(100));

    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    let header = |name: &str| sent.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("x-api-key").as_deref(), Some(KEY));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("authorization"), None);
    let cc = json!({"type": "ephemeral"});
    assert_eq!(
        sent.body_json::<Value>().unwrap(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 64000,
            "stream": true,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": cc}],
            "tools": [
                {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
                {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}, "cache_control": cc},
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Read greeting.txt"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_0", "name": "Read", "input": {"file_path": "greeting.txt"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_0", "content": "hello", "cache_control": cc},
                ]},
            ],
        })
    );
}

#[tokio::test]
async fn bearer_token_goes_in_authorization() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_and_tool_reply(), "text/event-stream"))
        .mount(&server)
        .await;
    let mut config = AnthropicConfig::new(Auth::Bearer(Secret::new("tok-123")));
    config.base_url = format!("{}/", server.uri());
    let model = AnthropicModel::new(config).unwrap();
    let (assembled, _) = assemble(open(&model).await.unwrap()).await;
    assert!(assembled.complete);
    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.url.path(), "/v1/messages");
    assert_eq!(sent.headers.get("authorization").unwrap().to_str().unwrap(), "Bearer tok-123");
    assert!(sent.headers.get("x-api-key").is_none());
}

async fn error_server(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/v1/messages")).respond_with(template).mount(&server).await;
    server
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[tokio::test]
async fn unauthorized_names_the_message_and_request_id() {
    let server = error_server(
        ResponseTemplate::new(401)
            .insert_header("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
            .set_body_json(error_body("authentication_error", "invalid x-api-key")),
    )
    .await;
    let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
    assert_eq!(
        error,
        ModelError::Http {
            status: 401,
            kind: "authentication_error".into(),
            message: "invalid x-api-key".into(),
            request_id: Some("req_011CSHoEeqs5C35K2UUqR7Fy".into()),
            retry_after: None,
        }
    );
    assert_eq!(
        error.to_string(),
        "HTTP 401 authentication_error: invalid x-api-key (request id req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
    assert!(!format!("{error} {error:?}").contains(KEY));
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let server = error_server(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "17")
            .set_body_json(error_body("rate_limit_error", "Number of request tokens has exceeded your rate limit")),
    )
    .await;
    let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
    assert_eq!(error.retry_after(), Some(Duration::from_secs(17)));
    let ModelError::Http { status, kind, .. } = &error else { panic!("{error:?}") };
    assert_eq!((*status, kind.as_str()), (429, "rate_limit_error"));
}

#[tokio::test]
async fn overloaded_is_http_529() {
    let server =
        error_server(ResponseTemplate::new(529).set_body_json(error_body("overloaded_error", "Overloaded"))).await;
    let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
    assert_eq!(
        error,
        ModelError::Http {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            request_id: None,
            retry_after: None,
        }
    );
    assert!(error.is_overloaded());
}

#[tokio::test]
async fn a_200_that_is_not_an_event_stream_is_a_protocol_error() {
    let server = error_server(ResponseTemplate::new(200).set_body_json(json!({"type": "message"}))).await;
    let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
    let ModelError::Protocol(message) = &error else { panic!("{error:?}") };
    assert_eq!(message, "expected a text/event-stream reply, got \"application/json\": {\"type\":\"message\"}");
}

/// A one-shot HTTP server: reads one whole request, writes `response`, then closes the
/// connection, or holds it open for `hold` first.
async fn raw_server(response: String, hold: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        socket.write_all(response.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        tokio::time::sleep(hold).await;
    });
    format!("http://{address}")
}

/// Read headers and a `content-length` body, so that closing the socket sends a clean FIN.
async fn read_request(socket: &mut TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "client closed before sending a request");
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
            if data.len() >= end + 4 + length {
                return;
            }
        }
    }
}

fn half_reply() -> String {
    let body = text_and_tool_reply();
    let cut = body.find("ho hi").unwrap();
    body[..cut].to_owned()
}

#[tokio::test]
async fn connection_closed_mid_reply_is_an_incomplete_stream() {
    // No content-length: the body ends when the connection closes, so the client sees a clean
    // end of body without message_stop.
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let base = raw_server(format!("{head}{}", half_reply()), Duration::ZERO).await;
    let (assembled, error) = assemble(open(&model(&base, Duration::from_secs(5))).await.unwrap()).await;
    assert_eq!(error, None);
    assert!(!assembled.complete);
    assert_eq!(assembled.content[0], json!({"type": "text", "text": "It says hello — ✓"}));
    assert_eq!(assembled.content[1]["input_complete"], json!(false));
    let (_, dropped) = assembled.into_message();
    assert_eq!(dropped, vec!["toolu_1".to_string()]);
}

#[tokio::test]
async fn connection_dropped_before_content_length_is_a_connection_error() {
    let half = half_reply();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        text_and_tool_reply().len()
    );
    let base = raw_server(format!("{head}{half}"), Duration::ZERO).await;
    let (assembled, error) = assemble(open(&model(&base, Duration::from_secs(5))).await.unwrap()).await;
    assert!(matches!(error, Some(ModelError::Connection(_))), "{error:?}");
    assert!(!assembled.complete);
}

#[tokio::test]
async fn a_stalled_stream_fails_as_idle() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
    let base = raw_server(format!("{head}{}", half_reply()), Duration::from_secs(10)).await;
    let idle = Duration::from_millis(300);
    let started = tokio::time::Instant::now();
    let (assembled, error) = assemble(open(&model(&base, idle)).await.unwrap()).await;
    assert_eq!(error, Some(ModelError::Idle(idle)));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(assembled.content.len(), 2);
}

#[tokio::test]
async fn a_server_that_never_answers_fails_as_idle() {
    let base = raw_server(String::new(), Duration::from_secs(10)).await;
    let idle = Duration::from_millis(300);
    let error = open(&model(&base, idle)).await.err().unwrap();
    assert_eq!(error, ModelError::Idle(idle));
}

#[tokio::test]
async fn a_refused_connection_is_a_connection_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = open(&model(&base, Duration::from_secs(5))).await.err().unwrap();
    let ModelError::Connection(message) = &error else { panic!("{error:?}") };
    assert!(!message.contains(KEY));
}

#[tokio::test]
async fn an_error_whose_body_stalls_still_reports_the_status() {
    let head = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\nrequest-id: req_slow\r\n\r\n{\"type\"";
    let base = raw_server(head.to_owned(), Duration::from_secs(10)).await;
    let error = open(&model(&base, Duration::from_millis(300))).await.err().unwrap();
    assert_eq!(
        error,
        ModelError::Http {
            status: 503,
            kind: "http_error".into(),
            message: "Service Unavailable".into(),
            request_id: Some("req_slow".into()),
            retry_after: None,
        }
    );
}

/// A wiremock server listening on `ip` (any port).
async fn server_on(ip: &str) -> MockServer {
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    MockServer::builder().listener(listener).start().await
}

/// `status` to `location`.
fn redirect_to(status: u16, location: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).insert_header("location", location)
}

/// A 307 or 308 to another origin, another host (127.0.0.2) or another port of the same
/// host, is not followed: the request fails with the refusal, not retried (`Fatal`), and the
/// other server hears nothing, so `x-api-key` never reaches it.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_the_key_stays() {
    let server = server_on("127.0.0.1").await;
    for (ip, status) in [("127.0.0.2", 307), ("127.0.0.1", 307), ("127.0.0.1", 308)] {
        let elsewhere = server_on(ip).await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(text_and_tool_reply(), "text/event-stream"))
            .mount(&elsewhere)
            .await;
        server.reset().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(redirect_to(status, &format!("{}/v1/messages", elsewhere.uri())))
            .mount(&server)
            .await;
        let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
        let (from, to) = (server.uri(), elsewhere.uri());
        assert_eq!(error, ModelError::Redirect(RedirectRefused::CrossOrigin { from: from.clone(), to: to.clone() }));
        assert_eq!(
            error.to_string(),
            format!(
                "the model server at {from} redirected to {to}; agentloop does not follow redirects to another \
origin, so the credentials stay with the configured server"
            )
        );
        assert_eq!(error.class(), ErrorClass::Fatal);
        assert_eq!(elsewhere.received_requests().await.unwrap().len(), 0, "{to} heard from the client");
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}

/// A 307 within the origin is followed with the key and the body, and the reply streams.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_key() {
    let server = server_on("127.0.0.1").await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(redirect_to(307, &format!("{}/moved/v1/messages", server.uri())))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/moved/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_and_tool_reply(), "text/event-stream"))
        .mount(&server)
        .await;
    let (assembled, error) = assemble(open(&model(&server.uri(), Duration::from_secs(5))).await.unwrap()).await;
    assert_eq!(error, None);
    assert!(assembled.complete);
    let received = server.received_requests().await.unwrap();
    let paths: Vec<&str> = received.iter().map(|r| r.url.path()).collect();
    assert_eq!(paths, ["/v1/messages", "/moved/v1/messages"]);
    for sent in &received {
        assert_eq!(sent.headers.get("x-api-key").unwrap().to_str().unwrap(), KEY);
        assert_eq!(sent.body_json::<Value>().unwrap()["model"], "claude-sonnet-4-5");
    }
}

/// Redirects within the origin end after ten hops, with a refusal that is not retried.
#[tokio::test]
async fn endless_redirects_within_the_origin_are_refused() {
    let server = server_on("127.0.0.1").await;
    Mock::given(method("POST"))
        .respond_with(redirect_to(307, &format!("{}/v1/messages", server.uri())))
        .mount(&server)
        .await;
    let error = open(&model(&server.uri(), Duration::from_secs(5))).await.err().unwrap();
    assert_eq!(error, ModelError::Redirect(RedirectRefused::TooMany { origin: server.uri() }));
    assert_eq!(error.class(), ErrorClass::Fatal);
    assert_eq!(server.received_requests().await.unwrap().len(), 11);
}
