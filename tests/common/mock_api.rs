//! A local stand-in for the Anthropic Messages API on 127.0.0.1, shared by the HTTP tests and
//! the end-to-end benchmark (each includes this file with `#[path]`).
//!
//! [`MockApi`] serves a scripted queue of [`Reply`]s in order, one per `POST /v1/messages`,
//! over plain HTTP/1.1 with keep-alive: an SSE reply framed as the API frames it, an HTTP
//! error with a JSON body and headers, or a reply whose connection drops mid-body. It records
//! every request (headers and parsed JSON body). An SSE reply comes with a `request-id` header
//! (`req_mock_N` for the Nth request), as the API sends one.
//!
//! On every request it checks the invariant users of coding agents see broken most often:
//! each `tool_use` in the history has exactly one matching `tool_result`, in the very next
//! user message ([`pairing_violation`]). A request that breaks it, a body that is not JSON, or
//! a request past the end of the script is answered with a 400 (as the real API would refuse
//! it) and noted as a problem; dropping a `MockApi` that noted a problem fails the test.
//!
//! It is written on blocking `std::net` threads so that it works the same from a tokio test,
//! a plain test that spawns the binary, and a benchmark.

// Each test crate that includes this file uses only part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use agentloop::engine::state::pairing_violation;
use agentloop::protocol::Message;
use serde_json::{Value, json};

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `200 OK`, `content-type: text/event-stream`, this body; the connection stays open.
    Sse(String),
    /// `200 OK`, `content-type: application/json`, this body: the answer to a request that did
    /// not ask to stream (Claude Code checks a model that way before `set_model` switches).
    Json(Value),
    /// An HTTP error status with extra headers and a JSON body.
    Error {
        /// The status code.
        status: u16,
        /// Extra response headers, e.g. `retry-after` or `request-id`.
        headers: Vec<(String, String)>,
        /// The JSON body.
        body: Value,
    },
    /// `200 OK` announcing the whole of `body` in `content-length`, but only its first `sent`
    /// bytes are written before the connection is closed.
    Dropped {
        /// The whole SSE body the headers promise.
        body: String,
        /// How many bytes of it are sent.
        sent: usize,
    },
    /// `200 OK` announcing the whole of `body`, whose SSE events are written one at a time,
    /// `interval` apart (a reply streaming at a steady rate); `log` gets the time each event
    /// was written and its text.
    Paced {
        /// The whole SSE body.
        body: String,
        /// The time between two events.
        interval: Duration,
        /// When each event was written.
        log: EventLog,
    },
    /// `200 OK` announcing the whole of `body`, of which the first `at` bytes are written at
    /// once and the rest only after `pause`: a slow reply, to interrupt while it streams. The
    /// pause ends early if the client closes the connection.
    Paused {
        /// The whole SSE body.
        body: String,
        /// How many bytes are written before the pause.
        at: usize,
        /// How long the rest waits.
        pause: Duration,
    },
    /// `200 OK` in chunked transfer encoding: `body` as one chunk at once, and the chunk that
    /// ends the body only after `tail` (a server that flushes `message_stop` and closes its
    /// stream a moment later).
    LateEnd {
        /// The whole SSE body.
        body: String,
        /// How long the end of the body waits.
        tail: Duration,
    },
}

impl Reply {
    /// An API error: `{"type": "error", "error": {"type": kind, "message": message}}`.
    pub fn error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::Error {
            status,
            headers: Vec::new(),
            body: json!({"type": "error", "error": {"type": kind, "message": message}}),
        }
    }

    /// The same reply with one more response header (errors only).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Error { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// `body` cut just before the first occurrence of `marker`, the connection then closed.
    pub fn dropped_before(body: String, marker: &str) -> Reply {
        let sent = body.find(marker).unwrap_or_else(|| panic!("{marker:?} is not in the body"));
        Reply::Dropped { body, sent }
    }

    /// `body` written up to just before the first occurrence of `marker`, the rest after
    /// `pause`.
    pub fn paused_before(body: String, marker: &str, pause: Duration) -> Reply {
        let at = body.find(marker).unwrap_or_else(|| panic!("{marker:?} is not in the body"));
        Reply::Paused { body, at, pause }
    }
}

/// When each event of a [`Reply::Paced`] was written (after its write and flush returned),
/// with the event's text.
#[derive(Clone, Default)]
pub struct EventLog(pub Arc<Mutex<Vec<(Instant, String)>>>);

impl EventLog {
    /// The events written so far.
    pub fn events(&self) -> Vec<(Instant, String)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventLog({} events)", self.0.lock().unwrap_or_else(|e| e.into_inner()).len())
    }
}

impl PartialEq for EventLog {
    fn eq(&self, other: &EventLog) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Builds an SSE reply the way the API streams one: `message_start`, each block as
/// `content_block_start` / deltas / `content_block_stop`, a `ping`, `message_delta` with the
/// stop reason and output tokens, `message_stop`. Text is streamed a few characters per
/// delta and tool input as several `input_json_delta` pieces, so assembly is exercised.
#[derive(Debug, Clone)]
pub struct Sse {
    events: Vec<Value>,
    blocks: usize,
    input_tokens: u64,
    output_tokens: u64,
}

impl Sse {
    /// A reply from `model` to a prompt of `input_tokens` tokens.
    pub fn new(model: &str, input_tokens: u64) -> Sse {
        let start = json!({"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}});
        Sse { events: vec![start], blocks: 0, input_tokens, output_tokens: 0 }
    }

    /// Report `n` output tokens in `message_delta` (else an estimate from the blocks): a
    /// `max_tokens` stop at the cap reports the cap.
    #[allow(dead_code, reason = "only some test crates cut replies at their cap")]
    pub fn output_tokens(mut self, n: u64) -> Sse {
        self.output_tokens = n;
        self
    }

    /// The message's id (`msg_mock` unless set).
    pub fn id(mut self, id: &str) -> Sse {
        self.events[0]["message"]["id"] = json!(id);
        self
    }

    /// A text block, streamed 7 characters per delta.
    pub fn text(mut self, text: &str) -> Sse {
        let index = self.blocks;
        self.blocks += 1;
        self.events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}));
        if index == 0 {
            self.events.push(json!({"type": "ping"}));
        }
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(7) {
            let piece: String = piece.iter().collect();
            self.events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}));
        }
        self.events.push(json!({"type": "content_block_stop", "index": index}));
        self.output_tokens += text.len() as u64 / 4 + 1;
        self
    }

    /// A `tool_use` block whose input JSON arrives in three pieces.
    pub fn tool_use(self, id: &str, name: &str, input: &Value) -> Sse {
        self.input_block("tool_use", id, name, input)
    }

    /// A block sent whole in its `content_block_start` (a server tool's result, such as
    /// `web_search_tool_result`).
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn block(mut self, block: Value) -> Sse {
        let index = self.blocks;
        self.blocks += 1;
        self.events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        self.events.push(json!({"type": "content_block_stop", "index": index}));
        self
    }

    /// A text block with one citation, sent as the API sends it: a `citations_delta`, then
    /// the text.
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn cited_text(mut self, text: &str, citation: &Value) -> Sse {
        let index = self.blocks;
        self.blocks += 1;
        self.events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}));
        self.events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "citations_delta", "citation": citation}}));
        self.events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": text}}));
        self.events.push(json!({"type": "content_block_stop", "index": index}));
        self.output_tokens += text.len() as u64 / 4 + 1;
        self
    }

    /// A `server_tool_use` block (a tool the API runs itself, e.g. `web_search`).
    pub fn server_tool_use(self, id: &str, name: &str, input: &Value) -> Sse {
        self.input_block("server_tool_use", id, name, input)
    }

    fn input_block(mut self, kind: &str, id: &str, name: &str, input: &Value) -> Sse {
        let index = self.blocks;
        self.blocks += 1;
        self.events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": kind, "id": id, "name": name, "input": {}}}));
        let json = input.to_string();
        let (a, b) = (json.len() / 3, 2 * json.len() / 3);
        let (a, b) = (floor_char(&json, a), floor_char(&json, b));
        for piece in ["", &json[..a], &json[a..b], &json[b..]] {
            self.events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        self.events.push(json!({"type": "content_block_stop", "index": index}));
        self.output_tokens += json.len() as u64 / 4 + 10;
        self
    }

    /// The whole body, ending with `stop_reason`.
    pub fn stop(mut self, stop_reason: &str) -> String {
        self.events.push(json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}}));
        self.events.push(json!({"type": "message_stop"}));
        let mut body = String::new();
        for event in &self.events {
            let kind = event["type"].as_str().expect("every event has a type");
            body.push_str(&format!("event: {kind}\ndata: {event}\n\n"));
        }
        body
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One request the mock received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The request line, e.g. `POST /v1/messages HTTP/1.1`.
    pub request_line: String,
    /// Header names (lowercased) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`null` if it was not JSON).
    pub body: Value,
    /// The body's bytes as sent (for the prompt cache's prefix, which is bytes, not JSON).
    pub raw: Vec<u8>,
}

impl Recorded {
    /// The value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Answers some requests outside the script (see [`MockApi::answer_side_requests`]).
type SideRequests = Box<dyn Fn(&Recorded) -> Option<Reply> + Send>;

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    problems: Vec<String>,
    side: Option<SideRequests>,
    other_roles: bool,
    /// Requests are Chat Completions (`POST /v1/chat/completions`), checked as such.
    chat: bool,
    /// Requests are Responses (`POST /v1/responses`), checked as such.
    responses: bool,
    /// The context window `GET /props` reports (llama.cpp's shape); `None` answers 404.
    window: Option<u64>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("script", &self.script)
            .field("requests", &self.requests)
            .field("problems", &self.problems)
            .field("side", &self.side.as_ref().map(|_| "answer_side_requests"))
            .field("other_roles", &self.other_roles)
            .finish()
    }
}

impl Shared {
    /// Record a request, check it, and choose its answer.
    fn answer(&mut self, request: Recorded) -> Reply {
        // A client asking for the server's context window: answered, not recorded.
        match request.request_line.as_str() {
            "GET /props HTTP/1.1" => {
                return match self.window {
                    Some(n) => Reply::Json(json!({"default_generation_settings": {"n_ctx": n}, "total_slots": 1})),
                    None => Reply::error(404, "not_found_error", "mock: no /props"),
                };
            }
            "GET /v1/models HTTP/1.1" => return Reply::error(404, "not_found_error", "mock: no model list"),
            _ => {}
        }
        if let Some(reply) = self.side.as_ref().and_then(|side| side(&request)) {
            self.requests.push(request);
            return reply;
        }
        let n = self.requests.len() + 1;
        let problem = if self.chat {
            check_chat(&request)
        } else if self.responses {
            check_responses(&request)
        } else {
            check(&request, self.other_roles)
        };
        let refusal = problem.map(|problem| format!("request {n}: {problem}"));
        self.requests.push(request);
        if let Some(problem) = refusal {
            self.problems.push(problem.clone());
            return Reply::error(400, "invalid_request_error", &format!("mock: {problem}"));
        }
        match self.script.pop_front() {
            Some(reply) => reply,
            None => {
                let problem = format!("request {n} came after the end of the script");
                self.problems.push(problem.clone());
                Reply::error(400, "invalid_request_error", &format!("mock: {problem}"))
            }
        }
    }
}

/// What is wrong with a Chat Completions request, if anything: the endpoint, the messages,
/// and that every assistant message's tool calls are answered by `tool` messages right after
/// it (and no `tool` message answers a call that was not made).
fn check_chat(request: &Recorded) -> Option<String> {
    if request.request_line != "POST /v1/chat/completions HTTP/1.1" {
        return Some(format!("unexpected request line {:?}", request.request_line));
    }
    let Some(messages) = request.body.get("messages").and_then(Value::as_array) else {
        return Some("the body has no `messages` list".into());
    };
    let mut open: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message["role"].as_str() {
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Some(format!("message {i} answers {id:?}, which no open tool call has"));
                };
                open.remove(at);
            }
            Some(role @ ("system" | "user" | "assistant")) => {
                if !open.is_empty() {
                    return Some(format!("message {i} ({role}) comes before the results of {open:?}"));
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    open.push(call["id"].as_str().unwrap_or_default().to_owned());
                }
            }
            other => return Some(format!("message {i} has role {other:?}")),
        }
    }
    None
}

/// What is wrong with a Responses request, if anything: the endpoint, the input, and that
/// every `function_call` item is answered by one `function_call_output` after it.
fn check_responses(request: &Recorded) -> Option<String> {
    if request.request_line != "POST /v1/responses HTTP/1.1" {
        return Some(format!("unexpected request line {:?}", request.request_line));
    }
    let Some(input) = request.body.get("input").and_then(Value::as_array) else {
        return Some("the body has no `input` list".into());
    };
    let mut open: Vec<String> = Vec::new();
    for (i, item) in input.iter().enumerate() {
        let call = item["call_id"].as_str().unwrap_or_default().to_owned();
        match item["type"].as_str() {
            Some("function_call") => open.push(call),
            Some("function_call_output") => match open.iter().position(|o| *o == call) {
                Some(at) => {
                    open.remove(at);
                }
                None => return Some(format!("item {i} answers {call:?}, which no open call has")),
            },
            _ if !open.is_empty() => return Some(format!("item {i} comes before the outputs of {open:?}")),
            _ => {}
        }
    }
    (!open.is_empty()).then(|| format!("calls {open:?} have no output"))
}

/// What is wrong with a request, if anything: the endpoint, the JSON, and tool pairing;
/// with `other_roles`, messages whose role is neither user nor assistant are left out.
fn check(request: &Recorded, other_roles: bool) -> Option<String> {
    // A query string is fine (Claude Code sends `?beta=true`).
    let path = request.request_line.strip_prefix("POST ").and_then(|rest| rest.strip_suffix(" HTTP/1.1"));
    if path.and_then(|path| path.split('?').next()) != Some("/v1/messages") {
        return Some(format!("unexpected request line {:?}", request.request_line));
    }
    let Some(messages) = request.body.get("messages") else {
        return Some("the body has no `messages`".into());
    };
    let mut messages = messages.clone();
    if let (true, Some(list)) = (other_roles, messages.as_array_mut()) {
        list.retain(|m| matches!(m["role"].as_str(), Some("user" | "assistant")));
    }
    // The API takes a plain string for a text-only content (Claude Code sends some so).
    for message in messages.as_array_mut().into_iter().flatten() {
        if let Some(text) = message["content"].as_str() {
            message["content"] = json!([{"type": "text", "text": text}]);
        }
    }
    match serde_json::from_value::<Vec<Message>>(messages) {
        Ok(messages) => pairing_violation(&messages).map(|v| format!("tool_use/tool_result pairing broken: {v}")),
        Err(e) => Some(format!("`messages` do not parse: {e}")),
    }
}

/// A scripted Messages API server on 127.0.0.1.
#[derive(Debug)]
pub struct MockApi {
    address: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl MockApi {
    /// Listen on a free port and serve `script`, one reply per request, in order.
    pub fn start(script: Vec<Reply>) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let address = listener.local_addr().expect("local address");
        let shared = Arc::new(Mutex::new(Shared { script: script.into(), ..Shared::default() }));
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (accept_shared, accept_stop, accepted) = (shared.clone(), stop.clone(), connections.clone());
        thread::spawn(move || {
            for socket in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(socket) = socket else { continue };
                accepted.fetch_add(1, Ordering::SeqCst);
                // Answer at once: no Nagle delay on small writes.
                let _ = socket.set_nodelay(true);
                let shared = accept_shared.clone();
                thread::spawn(move || serve(socket, &shared));
            }
        });
        MockApi { address, shared, stop, connections }
    }

    /// TCP connections accepted so far: a client that reuses its connection opens one.
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Answer each request for which `side` gives a reply with that reply, unchecked and
    /// outside the script (it is still recorded): for a client that sends requests of its
    /// own beside the conversation under test.
    pub fn answer_side_requests(self, side: impl Fn(&Recorded) -> Option<Reply> + Send + 'static) -> MockApi {
        self.lock().side = Some(Box::new(side));
        self
    }

    /// A mock of a Chat Completions server (`POST /v1/chat/completions`): requests are
    /// checked as that protocol's, and `script` holds its replies.
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn start_chat(script: Vec<Reply>) -> MockApi {
        let mock = MockApi::start(script);
        mock.lock().chat = true;
        mock
    }

    /// Report a context window of `n` tokens at `GET /props`, as llama.cpp's server does.
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn with_window(self, n: u64) -> MockApi {
        self.lock().window = Some(n);
        self
    }

    /// A mock of an OpenAI Responses server (`POST /v1/responses`).
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn start_responses(script: Vec<Reply>) -> MockApi {
        let mock = MockApi::start(script);
        mock.lock().responses = true;
        mock
    }

    /// Accept messages whose role is neither `user` nor `assistant` (Claude Code sends
    /// `system` messages), leaving them out of the checks.
    pub fn allow_other_roles(self) -> MockApi {
        self.lock().other_roles = true;
        self
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The bodies of every request received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.lock().requests.iter().map(|r| r.body.clone()).collect()
    }

    /// Scripted replies not yet served.
    pub fn unserved(&self) -> usize {
        self.lock().script.len()
    }

    /// Problems noted so far (broken pairing, bad bodies, requests past the script).
    pub fn problems(&self) -> Vec<String> {
        self.lock().problems.clone()
    }

    /// Take the problems noted so far, so that dropping the mock does not fail the test (for
    /// tests of the mock's own checks).
    pub fn take_problems(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().problems)
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
        let problems = self.problems();
        if !problems.is_empty() && !thread::panicking() {
            panic!("the mock API saw bad requests:\n{}", problems.join("\n"));
        }
    }
}

/// Answer requests on one connection until the client closes it or a reply drops it.
fn serve(mut socket: TcpStream, shared: &Mutex<Shared>) {
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut socket, &mut buffer) {
        let (reply, n) = {
            let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
            let reply = shared.answer(request);
            (reply, shared.requests.len())
        };
        let written = match reply {
            Reply::Sse(body) => {
                // Numbered as the requests are, like the API's `request-id`.
                let id = vec![("request-id".to_owned(), format!("req_mock_{n}"))];
                write_response(&mut socket, 200, &id, "text/event-stream; charset=utf-8", body.as_bytes())
            }
            Reply::Json(body) => write_response(&mut socket, 200, &[], "application/json", body.to_string().as_bytes()),
            Reply::Error { status, headers, body } => {
                write_response(&mut socket, status, &headers, "application/json", body.to_string().as_bytes())
            }
            Reply::Dropped { body, sent } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let mut response = head.into_bytes();
                response.extend_from_slice(&body.as_bytes()[..sent]);
                let _ = socket.write_all(&response);
                let _ = socket.flush();
                let _ = socket.shutdown(Shutdown::Both);
                return;
            }
            Reply::Paced { body, interval, log } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if socket.write_all(head.as_bytes()).and_then(|()| socket.flush()).is_err() {
                    return;
                }
                let start = Instant::now();
                let mut result = Ok(());
                for (n, event) in body.split_inclusive("\n\n").enumerate() {
                    let due = start + interval * n as u32;
                    thread::sleep(due.saturating_duration_since(Instant::now()));
                    result = socket.write_all(event.as_bytes()).and_then(|()| socket.flush());
                    if result.is_err() {
                        break;
                    }
                    log.0.lock().unwrap_or_else(|e| e.into_inner()).push((Instant::now(), event.to_owned()));
                }
                result
            }
            Reply::LateEnd { body, tail } => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
                let chunk = format!("{head}{:x}\r\n{body}\r\n", body.len());
                if socket.write_all(chunk.as_bytes()).and_then(|()| socket.flush()).is_err() {
                    return;
                }
                thread::sleep(tail);
                socket.write_all(b"0\r\n\r\n").and_then(|()| socket.flush())
            }
            Reply::Paused { body, at, pause } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let mut response = head.into_bytes();
                response.extend_from_slice(&body.as_bytes()[..at]);
                if socket.write_all(&response).and_then(|()| socket.flush()).is_err() {
                    return;
                }
                if !wait_unless_closed(&socket, pause) {
                    return;
                }
                socket.write_all(&body.as_bytes()[at..]).and_then(|()| socket.flush())
            }
        };
        if written.is_err() {
            return;
        }
    }
}

/// Sleep for `pause`, waking early if the client closes `socket` (or sends anything);
/// whether the connection is still open.
fn wait_unless_closed(socket: &TcpStream, pause: Duration) -> bool {
    let end = Instant::now() + pause;
    let mut probe = [0u8; 1];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        let _ = socket.set_read_timeout(Some(left.min(Duration::from_millis(100))));
        match socket.peek(&mut probe) {
            Ok(0) => return false,
            Ok(_) => {
                let _ = socket.set_read_timeout(None);
                return true;
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return false,
        }
        let _ = socket.set_read_timeout(None);
    }
}

fn write_response(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Error",
    };
    let mut head = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    // One write: a head and a body written apart would wait on the client's delayed ACK.
    let mut response = head.into_bytes();
    response.extend_from_slice(body);
    socket.write_all(&response)?;
    socket.flush()
}

/// Read one request (head and `content-length` body) from `socket`; `buffer` keeps bytes
/// read past it. `None` once the client has closed the connection.
fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = socket.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let n = socket.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
    let raw = buffer[body_start..body_start + length].to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    buffer.drain(..body_start + length);
    Some(Recorded { request_line, headers, body, raw })
}

/// The final answer of [`read_round_trip`].
#[allow(dead_code)] // not every test binary that includes this module uses it
pub const ROUND_TRIP_ANSWER: &str = "It says: Hello from the greeting file!";

/// The two replies of a Read round trip: a call to Read greeting.txt, then the answer.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn read_round_trip() -> Vec<Reply> {
    vec![
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 1200)
                .text("Reading it.")
                .tool_use("toolu_01", "Read", &serde_json::json!({"file_path": "greeting.txt"}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 1300).text(ROUND_TRIP_ANSWER).stop("end_turn")),
    ]
}

/// The report of the subagent in [`greeter_delegation`].
#[allow(dead_code)] // not every test binary that includes this module uses it
pub const GREETER_REPORT: &str = "The file says: Hello from the greeting file!";

/// The parent's answer in [`greeter_delegation`].
#[allow(dead_code)] // not every test binary that includes this module uses it
pub const GREETER_ANSWER: &str = "The greeter says the file greets us.";

/// The replies of a delegation to the `greeter` subagent, as the requests arrive: the parent's
/// synchronous `Agent` call `toolu_agent` (prompt `SUBTASK: read greeting.txt`), the child's
/// `Read` of `file` and its report [`GREETER_REPORT`] (on `claude-haiku-4-5`), then the
/// parent's answer [`GREETER_ANSWER`].
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn greeter_delegation(file: &std::path::Path) -> Vec<Reply> {
    let call = serde_json::json!({"description": "Read greeting", "prompt": "SUBTASK: read greeting.txt",
        "subagent_type": "greeter", "run_in_background": false});
    vec![
        Reply::Sse(Sse::new("claude-sonnet-4-5", 1200).tool_use("toolu_agent", "Agent", &call).stop("tool_use")),
        Reply::Sse(
            Sse::new("claude-haiku-4-5", 300)
                .tool_use("toolu_read", "Read", &serde_json::json!({"file_path": file}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-haiku-4-5", 400).text(GREETER_REPORT).stop("end_turn")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 1000).text(GREETER_ANSWER).stop("end_turn")),
    ]
}
