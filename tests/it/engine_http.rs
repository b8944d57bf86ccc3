//! The whole engine (`engine::run::run`, the standard tools, a temp working directory, a
//! `VirtualClock`) driving the real `AnthropicModel` against a local server that speaks the
//! Messages API protocol: SSE replies, HTTP errors with headers, dropped connections.
//!
//! Each case asserts the exact edge ids of the trace and the terminal reason, and what the
//! engine sent. The mock refuses, and the test fails on, any request whose history has a
//! `tool_use` without exactly one matching `tool_result` in the very next message.

use crate::mock_api;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentloop::engine::clock::{Clock, VirtualClock};
use agentloop::engine::events::EngineEvent;
use agentloop::engine::machine::Deps;
use agentloop::engine::options::EngineOptions;
use agentloop::engine::reason::TerminalReason;
use agentloop::engine::run::{RunOutcome, run};
use agentloop::harness::policy;
use agentloop::hooks::NoHooks;
use agentloop::hooks::settings::Permissions;
use agentloop::internals::context::{COLLAPSED_PREFIX, COMPACT_SYSTEM, compacted_history};
use agentloop::model::anthropic::{AnthropicConfig, AnthropicModel, Auth, Secret};
use agentloop::tools::Registry;
use agentloop::tools::ShellEnv;
use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "claude-sonnet-4-5";
const GREETING: &str = "Hello from the greeting file!\n";

/// What one engine run against the mock left behind.
struct Finished {
    outcome: RunOutcome,
    /// The body of every request, in order.
    bodies: Vec<Value>,
    clock: Arc<VirtualClock>,
}

impl Finished {
    fn edges(&self) -> Vec<&str> {
        self.outcome.edge_ids()
    }
}

fn options() -> EngineOptions {
    EngineOptions { model: MODEL.into(), run_id: "run-engine-http".into(), ..EngineOptions::default() }
}

/// Run the engine on `prompt` against `api`, in a temp directory holding `greeting.txt`,
/// `a.txt` and `b.txt`.
async fn run_against(api: &MockApi, options: EngineOptions, prompt: &str) -> Finished {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new("sk-ant-test")));
    config.base_url = api.base_url();
    config.idle_timeout = Duration::from_secs(20);
    let clock = Arc::new(VirtualClock::new());
    let deps = Deps {
        model: Arc::new(AnthropicModel::new(config).unwrap()),
        tools: Registry::standard(),
        hooks: Arc::new(NoHooks),
        effects: clock.clone(),
        cancel: CancellationToken::new(),
        cwd: dir.path().to_path_buf(),
        policy: Arc::new(policy(&Permissions::default(), None, &[], &[], dir.path()).unwrap()),
        shell_env: ShellEnv::inherited_default(),
        sandbox: agentloop::sandbox::Sandbox::none(),
        approver: Arc::new(agentloop::permissions::Unattended),
    };
    let outcome = run(deps, options, prompt, Box::new(|_: &EngineEvent| {})).await.unwrap();
    assert_eq!(api.problems(), Vec::<String>::new(), "the mock refused requests");
    assert_eq!(api.unserved(), 0, "every scripted reply was asked for");
    Finished { outcome, bodies: api.bodies(), clock }
}

fn write_files(dir: &Path) {
    std::fs::write(dir.join("greeting.txt"), GREETING).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.join("b.txt"), "beta\n").unwrap();
}

fn read_call(id: &str, file: &str) -> String {
    Sse::new(MODEL, 400).text("Let me read it.").tool_use(id, "Read", &json!({"file_path": file})).stop("tool_use")
}

fn answer(text: &str) -> String {
    Sse::new(MODEL, 500).text(text).stop("end_turn")
}

/// The messages of a request body with the `cache_control` breakpoints taken out, so they
/// compare with the conversation as the engine holds it.
fn messages(body: &Value) -> Value {
    let mut messages = body["messages"].clone();
    for message in messages.as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    messages
}

fn tool_result_text(body: &Value, message: usize) -> String {
    body["messages"][message]["content"][0]["content"].as_str().unwrap().to_owned()
}

/// A Read turn then an answer.
const ROUND_TRIP: [&str; 9] = [
    "prepare.request",
    "request.stream_opened",
    "consume.tools",
    "tools.done",
    "checkpoint.next_turn",
    "prepare.request",
    "request.stream_opened",
    "consume.end_turn",
    "checkpoint.completed",
];

#[tokio::test]
async fn a_read_round_trip_completes() {
    let api = MockApi::start(vec![
        Reply::Sse(read_call("toolu_01", "greeting.txt")),
        Reply::Sse(answer("It says: Hello from the greeting file!")),
    ]);
    let done = run_against(&api, options(), "Read greeting.txt and tell me what it says").await;
    assert_eq!(done.edges(), ROUND_TRIP);
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    assert_eq!(done.outcome.error, None);
    assert_eq!(done.outcome.final_text, "It says: Hello from the greeting file!");
    assert_eq!(done.outcome.model_calls, 2);
    assert_eq!(done.bodies.len(), 2);
    let second = &done.bodies[1];
    assert_eq!(
        messages(second),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Read greeting.txt and tell me what it says"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "greeting.txt"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": tool_result_text(second, 2)},
            ]},
        ])
    );
    assert_eq!(tool_result_text(second, 2), "     1\tHello from the greeting file!\n");
    assert_eq!(second["model"], MODEL);
    assert_eq!(second["max_tokens"], 16000);
    assert_eq!(second["stream"], true);
}

#[tokio::test]
async fn a_connection_dropped_mid_reply_is_retried_and_the_partial_call_never_runs() {
    // The first reply breaks off after the Read call's input arrived but before its
    // content_block_stop: the call is unfinished, so it must not run, and nothing of the
    // partial reply may reach the history.
    let api = MockApi::start(vec![
        Reply::dropped_before(read_call("toolu_cut", "greeting.txt"), "event: content_block_stop\ndata: {\"index\":1"),
        Reply::Sse(read_call("toolu_01", "greeting.txt")),
        Reply::Sse(answer("It says hello.")),
    ]);
    let done = run_against(&api, options(), "Read greeting.txt").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.retry",
            "request.stream_opened",
            "consume.tools",
            "tools.done",
            "checkpoint.next_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    let retry = &done.outcome.trace[2];
    assert!(retry.detail.as_deref().unwrap().starts_with("connection error: "), "{:?}", retry.detail);
    assert_eq!(done.bodies.len(), 3);
    assert_eq!(done.bodies[1], done.bodies[0], "the retry re-sends the same request");
    assert_eq!(
        messages(&done.bodies[2])[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "     1\tHello from the greeting file!\n"},
        ]})
    );
    let all = serde_json::to_string(&done.outcome.messages).unwrap();
    assert!(!all.contains("toolu_cut"), "the unfinished call left no trace: {all}");
}

#[tokio::test]
async fn three_overloads_switch_to_the_fallback_model() {
    let overloaded = || Reply::error(529, "overloaded_error", "Overloaded");
    let api = MockApi::start(vec![overloaded(), overloaded(), overloaded(), Reply::Sse(answer("Done."))]);
    let options = EngineOptions { fallback_model: Some("claude-haiku-4-5".into()), ..options() };
    let done = run_against(&api, options, "Say done").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.overload_retry",
            "request.overload_retry",
            "request.fallback",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    let models: Vec<&str> = done.bodies.iter().map(|b| b["model"].as_str().unwrap()).collect();
    assert_eq!(models, [MODEL, MODEL, MODEL, "claude-haiku-4-5"]);
    // Backoff 500 ms · 2ⁿ plus up to 25 % jitter, slept on the virtual clock; none before the
    // switch.
    let delays: Vec<Option<u64>> = done.outcome.trace.iter().map(|r| r.delay_ms).collect();
    let (first, second) = (delays[1].unwrap(), delays[2].unwrap());
    assert!((500..=625).contains(&first), "{first}");
    assert!((1000..=1250).contains(&second), "{second}");
    assert_eq!(delays[3], None);
    // The trace rounds each delay down to whole milliseconds.
    let slept = done.clock.elapsed();
    assert!(slept >= Duration::from_millis(first + second) && slept < Duration::from_millis(first + second + 2));
    assert_eq!(
        done.outcome.trace[3].detail.as_deref(),
        Some("HTTP 529 overloaded_error: Overloaded; switching to claude-haiku-4-5")
    );
}

#[tokio::test]
async fn a_rate_limit_waits_as_long_as_retry_after_says() {
    let message = "Number of request tokens has exceeded your per-minute rate limit";
    let api = MockApi::start(vec![
        Reply::error(429, "rate_limit_error", message).header("retry-after", "3"),
        Reply::Sse(answer("Done.")),
    ]);
    let done = run_against(&api, options(), "Say done").await;
    assert_eq!(
        done.edges(),
        ["prepare.request", "request.retry", "request.stream_opened", "consume.end_turn", "checkpoint.completed"]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    let retry = &done.outcome.trace[1];
    assert_eq!(retry.delay_ms, Some(3000));
    assert_eq!(retry.detail.as_deref(), Some(format!("HTTP 429 rate_limit_error: {message}").as_str()));
    assert_eq!(done.clock.elapsed(), Duration::from_secs(3));
    assert_eq!(done.bodies[0], done.bodies[1]);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_retry_cap_ends_the_run_at_once() {
    let api = MockApi::start(vec![Reply::error(429, "rate_limit_error", "slow down").header("retry-after", "99999")]);
    let done = run_against(&api, options(), "Say done").await;
    assert_eq!(done.edges(), ["prepare.request", "request.wait_over_cap"]);
    assert_eq!(done.outcome.terminal, TerminalReason::ModelError);
    assert_eq!(
        done.outcome.error.as_deref(),
        Some(
            "the server asked to wait 27.8 h before retrying, more than the cap of 32.0s (--retry-max-delay-ms): \
             HTTP 429 rate_limit_error: slow down"
        )
    );
    assert_eq!(done.clock.elapsed(), Duration::ZERO, "nothing was waited for");
    assert_eq!(done.bodies.len(), 1);
}

#[tokio::test]
async fn unauthorized_ends_the_run_with_the_message_and_request_id() {
    let api = MockApi::start(vec![
        Reply::error(401, "authentication_error", "invalid x-api-key")
            .header("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy"),
    ]);
    let done = run_against(&api, options(), "Say done").await;
    assert_eq!(done.edges(), ["prepare.request", "request.model_error"]);
    assert_eq!(done.outcome.terminal, TerminalReason::ModelError);
    assert_eq!(
        done.outcome.error.as_deref(),
        Some("HTTP 401 authentication_error: invalid x-api-key (request id req_011CSHoEeqs5C35K2UUqR7Fy)")
    );
    assert_eq!(done.bodies.len(), 1, "a 401 is not retried");
    let sent = &api.requests()[0];
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
}

const PROMPT_TOO_LONG: &str = "prompt is too long: 204817 tokens > 200000 maximum";

#[tokio::test]
async fn prompt_too_long_after_two_reads_collapses_the_older_result_and_retries() {
    let api = MockApi::start(vec![
        Reply::Sse(read_call("toolu_a", "a.txt")),
        Reply::Sse(read_call("toolu_b", "b.txt")),
        Reply::error(400, "invalid_request_error", PROMPT_TOO_LONG),
        Reply::Sse(answer("Read both.")),
    ]);
    let done = run_against(&api, options(), "Read a.txt, then b.txt").await;
    let mut expected = [&ROUND_TRIP[..5], &ROUND_TRIP[..5]].concat();
    expected.extend([
        "prepare.request",
        "request.prompt_too_long",
        "recover.collapse_drain_retry",
        "prepare.request",
        "request.stream_opened",
        "consume.end_turn",
        "checkpoint.completed",
    ]);
    assert_eq!(done.edges(), expected);
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    assert_eq!(done.outcome.trace[12].detail.as_deref(), Some("collapsed 1 older tool result(s)"));
    assert_eq!(done.bodies.len(), 4);
    // Before: both results whole. After: the older one is a marker, the newer one whole; the
    // blocks stay, so every call still has its result.
    assert_eq!(tool_result_text(&done.bodies[2], 2), "     1\talpha\n");
    assert_eq!(tool_result_text(&done.bodies[3], 2), format!("{COLLAPSED_PREFIX}older tool result of 13 characters]"));
    assert_eq!(tool_result_text(&done.bodies[3], 4), "     1\tbeta\n");
    assert_eq!(messages(&done.bodies[3]).as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn prompt_too_long_on_the_first_request_compacts_with_an_aux_request_and_retries() {
    let summary = "The user asked for a greeting; nothing was done yet.";
    let api = MockApi::start(vec![
        Reply::error(400, "invalid_request_error", PROMPT_TOO_LONG),
        Reply::Sse(answer(summary)),
        Reply::Sse(answer("Hello!")),
    ]);
    let done = run_against(&api, options(), "Greet me").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.prompt_too_long",
            "recover.reactive_compact_retry",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    assert_eq!(done.outcome.final_text, "Hello!");
    let systems: Vec<&str> = done.bodies.iter().map(|b| b["system"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(systems, [options().system.as_str(), COMPACT_SYSTEM, options().system.as_str()]);
    assert_eq!(done.bodies[1].get("tools"), None, "the aux request offers no tools");
    assert_eq!(messages(&done.bodies[2]), serde_json::to_value(compacted_history(summary)).unwrap());
}

/// A session's requests share one connection: each response is read to its end, so the
/// connection goes back to the pool before the next request.
///
/// hyper returns a drained connection to the pool from a task of its own, which a loaded
/// machine may run after the next request has already opened a connection; so the session
/// runs up to three times and one of them must use a single connection. A client that drops
/// its bodies unread opens three every time.
#[tokio::test]
async fn a_session_uses_one_connection() {
    // Each body ends 40 ms after its `message_stop`, as a real server's may.
    let late = |body: String| Reply::LateEnd { body, tail: Duration::from_millis(40) };
    let mut seen = Vec::new();
    for _ in 0..3 {
        let api = MockApi::start(vec![
            late(read_call("toolu_a", "a.txt")),
            late(read_call("toolu_b", "b.txt")),
            late(answer("Read both.")),
        ]);
        let done = run_against(&api, options(), "Read a.txt, then b.txt").await;
        assert_eq!(done.outcome.terminal, TerminalReason::Completed);
        assert_eq!(done.bodies.len(), 3);
        seen.push(api.connections());
        if api.connections() == 1 {
            return;
        }
    }
    panic!("every run opened more than one connection: {seen:?}");
}

/// llama.cpp's refusal of a prompt over its context (`-c 512`), in its own error shape, takes
/// the same edges as the Messages API's "prompt is too long".
#[tokio::test]
async fn a_local_servers_context_overflow_takes_the_prompt_too_long_edges() {
    let llama = Reply::Error {
        status: 400,
        headers: Vec::new(),
        body: json!({"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 1260, "n_ctx": 512,
                               "message": "request (1260 tokens) exceeds the available context size (512 tokens), try increasing it"}}),
    };
    let api = MockApi::start(vec![llama, Reply::Sse(answer("A summary.")), Reply::Sse(answer("Hello!"))]);
    let done = run_against(&api, options(), "Greet me").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.prompt_too_long",
            "recover.reactive_compact_retry",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
}

/// A server's own error event mid-stream (llama.cpp's `{"code", "message", "type"}`, no
/// `error` envelope) ends the run with its message at once, not as a cut stream retried.
#[tokio::test]
async fn a_servers_own_error_event_mid_stream_ends_the_run_with_its_message() {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": MODEL, "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let body = format!(
        "event: message_start\ndata: {start}\n\nevent: error\ndata: {}\n\n",
        json!({"code": 500, "message": "Compute error: the KV cache is full", "type": "server_error"})
    );
    let api = MockApi::start(vec![Reply::Sse(body)]);
    let done = run_against(&api, options(), "Greet me").await;
    assert_eq!(done.edges(), ["prepare.request", "request.stream_opened", "consume.model_error"]);
    assert_eq!(done.outcome.terminal, TerminalReason::ModelError);
    assert_eq!(done.bodies.len(), 1, "not retried");
    assert_eq!(done.outcome.error.as_deref(), Some("stream error server_error: Compute error: the KV cache is full"));
}

#[tokio::test]
async fn a_truncated_reply_is_sent_again_with_64000_max_tokens() {
    let api = MockApi::start(vec![
        Reply::Sse(
            Sse::new(MODEL, 300)
                .text("The answer begins here and then is cut")
                .output_tokens(16_000)
                .stop("max_tokens"),
        ),
        Reply::Sse(answer("The whole answer.")),
    ]);
    let done = run_against(&api, options(), "Answer at length").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.truncated",
            "recover.max_output_tokens_escalate",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    assert_eq!(done.outcome.final_text, "The whole answer.");
    assert_eq!(done.bodies[0]["max_tokens"], 16000);
    assert_eq!(done.bodies[1]["max_tokens"], 64000);
    assert_eq!(done.bodies[1]["messages"], done.bodies[0]["messages"], "the truncated reply was dropped");
}

/// A cap the user set (`--max-output-tokens`) is sent as it is and never escalated: a
/// truncated reply takes the recovery edge, with the same cap.
#[tokio::test]
async fn a_users_output_cap_is_never_escalated() {
    let api = MockApi::start(vec![
        Reply::Sse(
            Sse::new(MODEL, 300).text("The answer begins here and then is cut").output_tokens(2_000).stop("max_tokens"),
        ),
        Reply::Sse(answer("and here it ends.")),
    ]);
    let capped = EngineOptions { max_output_tokens: Some(2_000), ..options() };
    let done = run_against(&api, capped, "Answer at length").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.truncated",
            "recover.max_output_tokens_recovery",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(
        (done.bodies[0]["max_tokens"].as_u64(), done.bodies[1]["max_tokens"].as_u64()),
        (Some(2000), Some(2000))
    );
}

#[tokio::test]
async fn pause_turn_sends_the_paused_reply_back_to_continue() {
    let search = json!({"query": "agentloop state machine"});
    let api = MockApi::start(vec![
        Reply::Sse(
            Sse::new(MODEL, 300)
                .text("Searching the web.")
                .server_tool_use("srvtoolu_01", "web_search", &search)
                .stop("pause_turn"),
        ),
        Reply::Sse(answer(" Found it.")),
    ]);
    let done = run_against(&api, options(), "Search for agentloop").await;
    assert_eq!(
        done.edges(),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.pause_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(done.outcome.terminal, TerminalReason::Completed);
    let sent = &done.bodies[1]["messages"];
    assert_eq!(sent.as_array().unwrap().len(), 2);
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Searching the web."},
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": search,
             "cache_control": {"type": "ephemeral"}},
        ]})
    );
    assert_eq!(done.outcome.final_text, "Searching the web. Found it.");
}

#[tokio::test]
async fn the_mock_refuses_a_history_whose_tool_use_has_no_result() {
    use agentloop::model::{Model, ModelError, ModelRequest, Purpose};
    use agentloop::protocol::{ContentBlock, Message, Role};

    let api = MockApi::start(vec![Reply::Sse(answer("never served"))]);
    let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new("sk-ant-test")));
    config.base_url = api.base_url();
    let model = AnthropicModel::new(config).unwrap();
    let call =
        ContentBlock::ToolUse { id: "toolu_1".into(), name: "Read".into(), input: json!({"file_path": "a.txt"}) };
    let request = ModelRequest {
        model: MODEL.into(),
        system: String::new(),
        system_context: None,
        server_tools: Vec::new(),
        messages: vec![
            Message::user_text("Read a.txt"),
            Message { role: Role::Assistant, content: vec![call] },
            Message::user_text("where is the result?"),
        ]
        .into(),
        tools: Vec::new(),
        max_tokens: 16_000,
        thinking: None,
        purpose: Purpose::Main,
    };
    let problem = "request 1: tool_use/tool_result pairing broken: message 2: tool_results [] do not answer the \
calls [\"toolu_1\"] before it";
    let error = model.stream(request).await.err().unwrap();
    assert_eq!(
        error,
        ModelError::Http {
            status: 400,
            kind: "invalid_request_error".into(),
            message: format!("mock: {problem}"),
            request_id: None,
            retry_after: None,
        }
    );
    assert_eq!(api.take_problems(), [problem]);
    assert_eq!(api.unserved(), 1, "a refused request consumes no scripted reply");
}
