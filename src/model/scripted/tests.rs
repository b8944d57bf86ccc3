//! Tests of the scripted model: each stream goes through the shared [`Assembler`], so they
//! show what the engine will see.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::timeout;

use super::*;
use crate::model::DEFAULT_MAX_TOKENS;
use crate::model::assemble::Assembler;
use crate::protocol::{ApiErrorBody, ContentBlock, Message, Role, StopReason, StreamEvent, Usage};

const MODEL: &str = "claude-test";
/// 14 characters: with the 17 of "Read greeting.txt", 31 / 4 = 7 estimated input tokens.
const SYSTEM: &str = "You are terse.";

fn model(text: &str) -> (ScriptedModel, CancellationToken) {
    let scenario = Scenario::parse("test.json", text).unwrap();
    let cancel = CancellationToken::new();
    (ScriptedModel::new(&scenario, cancel.clone()), cancel)
}

fn request(purpose: Purpose, messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        system: SYSTEM.into(),
        system_context: None,
        server_tools: Vec::new(),
        messages: messages.into(),
        tools: Vec::new(),
        max_tokens: DEFAULT_MAX_TOKENS,
        thinking: None,
        purpose,
    }
}

fn main_request() -> ModelRequest {
    request(Purpose::Main, vec![Message::user_text("Read greeting.txt")])
}

fn ev(value: Value) -> StreamEvent {
    serde_json::from_value(value).unwrap()
}

/// All events of a stream that ends by itself.
async fn collect(stream: EventStream) -> Vec<StreamEvent> {
    let events = timeout(Duration::from_secs(5), stream.collect::<Vec<_>>()).await.expect("the stream ends");
    events.into_iter().map(Result::unwrap).collect()
}

fn assemble(events: &[StreamEvent]) -> Assembler {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event.clone()).unwrap();
    }
    assembler
}

async fn stream_main(m: &ScriptedModel) -> Vec<StreamEvent> {
    collect(m.answer(main_request()).unwrap()).await
}

fn script_error(result: Result<EventStream, ModelError>) -> String {
    match result {
        Err(ModelError::Script(message)) => message,
        Err(other) => panic!("not a script error: {other}"),
        Ok(_) => panic!("the request succeeded"),
    }
}

#[tokio::test]
async fn text_and_tool_use_stream_like_the_api() {
    let (m, _) = model(
        r#"{"responses": [{"content": [
            {"type": "text", "text": "Let me read it."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "greeting.txt"}}]}]}"#,
    );
    let events = stream_main(&m).await;
    let expected = [
        json!({"type": "message_start", "message": {"id": "msg_scripted_0", "model": MODEL, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me read it."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"file_pa"}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "th\":\"gree"}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "ting.txt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        // 15 + 4 + 28 characters of output: 47 / 4 = 11 tokens.
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"input_tokens": null, "output_tokens": 11}}),
        json!({"type": "message_stop"}),
    ];
    assert_eq!(events, expected.map(ev).to_vec());

    let done = assemble(&events).finish();
    assert_eq!(
        done.content,
        vec![
            json!({"type": "text", "text": "Let me read it."}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "greeting.txt"}}),
        ]
    );
    assert_eq!(done.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(done.usage, Usage { input_tokens: Some(7), output_tokens: Some(11), ..Usage::default() });
    assert_eq!(done.model.as_deref(), Some(MODEL));
    assert!(done.complete);
    assert_eq!(m.served(), (1, 0));
}

#[tokio::test]
async fn long_text_and_thinking_arrive_in_pieces_and_given_usage_wins() {
    let text = "The file greeting.txt says: hello from step one. That is all it says — nothing more.";
    let scenario = json!({"responses": [{"content": [
        {"type": "thinking", "thinking": "The user wants the greeting read back to them."},
        {"type": "text", "text": text}],
        "usage": {"input_tokens": 50, "output_tokens": 7}}]});
    let (m, _) = model(&scenario.to_string());
    let events = stream_main(&m).await;
    let text_pieces: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ContentBlockDelta { index: 1, delta: crate::protocol::Delta::TextDelta { text } } => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        text_pieces,
        vec!["The file greeting.txt sa", "ys: hello from step one.", " That is all it says —", " nothing more."]
    );
    let done = assemble(&events).finish();
    assert_eq!(
        done.content,
        vec![
            json!({"type": "thinking", "thinking": "The user wants the greeting read back to them.",
                "signature": "sig_scripted"}),
            json!({"type": "text", "text": text}),
        ]
    );
    assert_eq!(done.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(done.usage, Usage { input_tokens: Some(50), output_tokens: Some(7), ..Usage::default() });
}

#[tokio::test]
async fn tool_uses_without_id_get_unique_ids() {
    let (m, _) = model(
        r#"{"responses": [
            {"content": [{"type": "text", "text": "Two reads."},
                         {"type": "tool_use", "name": "Read", "input": {"file_path": "a"}},
                         {"type": "tool_use", "name": "Read", "input": {"file_path": "b"}}]},
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "c"}}]}]}"#,
    );
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (message, dropped) = assemble(&stream_main(&m).await).finish().into_message();
        assert!(dropped.is_empty());
        ids.extend(message.tool_uses().map(|t| t.id.to_owned()));
    }
    assert_eq!(ids, ["toolu_scripted_0_1", "toolu_scripted_0_2", "toolu_scripted_1_0"]);
}

#[tokio::test]
async fn max_tokens_truncates_the_last_tool_call() {
    let (m, _) = model(
        r#"{"responses": [{"content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "greeting.txt"}}],
            "stop_reason": "max_tokens"}]}"#,
    );
    let events = stream_main(&m).await;
    assert!(!events.contains(&StreamEvent::ContentBlockStop { index: 1 }));
    let assembler = assemble(&events);
    assert!(assembler.is_complete());
    assert_eq!(assembler.finished_block(0), Some(ContentBlock::text("Reading.")));
    assert_eq!(assembler.finished_block(1), None);
    let done = assembler.finish();
    assert_eq!(
        done.content[1],
        json!({"type": "tool_use", "id": "toolu_9", "name": "Read", "input": null,
            "partial_json": "{\"file_path\":\"", "input_complete": false})
    );
    assert_eq!(done.stop_reason, Some(StopReason::MaxTokens));
    let (message, dropped) = done.into_message();
    assert_eq!(dropped, ["toolu_9"]);
    assert_eq!(message.content, vec![ContentBlock::text("Reading.")]);
}

#[tokio::test]
async fn http_errors_fail_the_request() {
    let (m, _) = model(
        r#"{"responses": [
            {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded", "retry_after_s": 3}},
            {"content": [{"type": "text", "text": "ok"}]}]}"#,
    );
    let err = m.answer(main_request()).err().expect("an HTTP error");
    assert_eq!(
        err,
        ModelError::Http {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            request_id: Some("req_scripted_0".into()),
            retry_after: Some(Duration::from_secs(3)),
        }
    );
    assert!(err.is_overloaded());
    // The retry takes the next reply.
    let done = assemble(&stream_main(&m).await).finish();
    assert_eq!(done.content, vec![json!({"type": "text", "text": "ok"})]);
    assert_eq!(m.served(), (2, 0));
}

#[tokio::test]
async fn after_blocks_sends_an_error_event() {
    let (m, _) = model(
        r#"{"responses": [{"content": [{"type": "text", "text": "Partial"}, {"type": "text", "text": "never"}],
            "error": {"type": "overloaded_error", "message": "Overloaded", "after_blocks": 1}}]}"#,
    );
    let events = stream_main(&m).await;
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Error {
            error: ApiErrorBody { kind: "overloaded_error".into(), message: "Overloaded".into() }
        })
    );
    let done = assemble(&events).finish();
    assert_eq!(done.content, vec![json!({"type": "text", "text": "Partial"})]);
    assert_eq!(done.error, Some(ApiErrorBody { kind: "overloaded_error".into(), message: "Overloaded".into() }));
    assert!(!done.complete);
    assert_eq!(done.stop_reason, None);
}

#[tokio::test]
async fn cut_after_blocks_ends_without_message_stop() {
    let (m, _) = model(
        r#"{"responses": [{"content": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
            "cut_after_blocks": 1}]}"#,
    );
    let events = stream_main(&m).await;
    assert_eq!(events.len(), 4, "message_start and one block: {events:?}");
    let assembler = assemble(&events);
    assert!(!assembler.is_complete());
    let done = assembler.finish();
    assert_eq!(done.content, vec![json!({"type": "text", "text": "One."})]);
    assert_eq!(done.stop_reason, None);
    assert_eq!(done.error, None);
}

#[tokio::test]
async fn expect_mismatches_name_reply_field_and_values() {
    let user_turn = Message {
        role: Role::User,
        content: vec![
            ContentBlock::tool_result("toolu_1", "hello from step one", false),
            ContentBlock::tool_result("toolu_2", "No such file", true),
        ],
    };
    let cases = [
        (json!({"max_tokens": 64000}), "responses[0].expect.max_tokens: expected 64000, got 16000"),
        (json!({"model": "claude-other"}), r#"responses[0].expect.model: expected "claude-other", got "claude-test""#),
        (
            json!({"last_user_text_contains": "goodbye"}),
            "responses[0].expect.last_user_text_contains: expected the last user message to contain \"goodbye\", \
             got \"hello from step one\\nNo such file\"",
        ),
        (
            json!({"tool_result_is_error": [false, false]}),
            "responses[0].expect.tool_result_is_error: expected [false, false], got [false, true]",
        ),
    ];
    for (expect, message) in cases {
        let (m, _) = model(&json!({"responses": [{"expect": expect}]}).to_string());
        let got = script_error(m.answer(request(Purpose::Main, vec![user_turn.clone()])));
        assert_eq!(got, message);
        assert_eq!(ModelError::Script(got).to_string(), format!("scripted model: {message}"));
    }

    let all_hold = json!({"responses": [{"expect": {"max_tokens": 16000, "model": MODEL,
        "last_user_text_contains": "step one", "tool_result_is_error": [false, true]}}]});
    let (m, _) = model(&all_hold.to_string());
    assert!(m.answer(request(Purpose::Main, vec![user_turn])).is_ok());

    let (m, _) = model(r#"{"responses": [{"expect": {"last_user_text_contains": "x"}}]}"#);
    assert_eq!(
        script_error(m.answer(request(Purpose::Main, Vec::new()))),
        "responses[0].expect.last_user_text_contains: expected the last user message to contain \"x\", \
         got no user message"
    );
}

#[tokio::test]
async fn requests_past_the_end_fail_loudly() {
    let (m, _) = model(r#"{"responses": [{}, {}]}"#);
    stream_main(&m).await;
    stream_main(&m).await;
    assert_eq!(script_error(m.answer(main_request())), "main request 3 is past the end of the script (2 responses)");
    assert_eq!(script_error(m.answer(main_request())), "main request 4 is past the end of the script (2 responses)");
    assert_eq!(
        script_error(m.answer(request(Purpose::Aux, Vec::new()))),
        "aux request 1 is past the end of the script (0 aux responses)"
    );
    assert_eq!(m.served(), (2, 0));
    assert_eq!(m.requests().len(), 5);
}

#[tokio::test]
async fn abort_in_stream_phase_cancels_after_block_zero_and_pends() {
    let (m, cancel) = model(
        r#"{"abort": {"response": 1, "phase": "stream"},
            "responses": [{"content": [{"type": "text", "text": "first"}]},
                          {"content": [{"type": "text", "text": "Working"}, {"type": "text", "text": "never"}]}]}"#,
    );
    stream_main(&m).await;
    assert!(!cancel.is_cancelled(), "reply 0 is not the abort's reply");

    let mut stream = m.answer(main_request()).unwrap();
    let mut assembler = Assembler::new();
    loop {
        let event = stream.next().await.expect("an event").unwrap();
        let last = event == StreamEvent::ContentBlockStop { index: 0 };
        assembler.push(event).unwrap();
        if last {
            break;
        }
    }
    assert!(!cancel.is_cancelled());
    let next = timeout(Duration::from_millis(50), stream.next()).await;
    assert!(next.is_err(), "the stream pends after the abort");
    assert!(cancel.is_cancelled());
    assert_eq!(assembler.finished_block(0), Some(ContentBlock::text("Working")));
    assert_eq!(assembler.block_count(), 1);
}

#[tokio::test]
async fn abort_in_tools_phase_cancels_when_its_reply_runs_tools() {
    let (m, cancel) = model(
        r#"{"abort": {"response": 1, "phase": "tools"},
            "responses": [{"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a"}}]},
                          {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "b"}}]}]}"#,
    );
    m.tool_phase_started();
    stream_main(&m).await;
    m.tool_phase_started();
    assert!(!cancel.is_cancelled());
    stream_main(&m).await;
    assert!(!cancel.is_cancelled(), "streaming alone does not abort");
    m.tool_phase_started();
    assert!(cancel.is_cancelled());
}

#[tokio::test]
async fn aux_requests_take_aux_replies() {
    let (m, _) = model(
        r#"{"responses": [{"content": [{"type": "text", "text": "main"}]}],
            "aux": [{"content": [{"type": "text", "text": "Summary."},
                                 {"type": "tool_use", "name": "Read", "input": {}}]}]}"#,
    );
    let aux = request(Purpose::Aux, vec![Message::user_text("Summarise.")]);
    let events = collect(m.answer(aux.clone()).unwrap()).await;
    assert_eq!(m.served(), (0, 1));
    let (message, _) = assemble(&events).finish().into_message();
    assert_eq!(
        message.content,
        vec![
            ContentBlock::text("Summary."),
            ContentBlock::ToolUse { id: "toolu_scripted_aux_0_1".into(), name: "Read".into(), input: json!({}) },
        ]
    );
    let done = assemble(&stream_main(&m).await).finish();
    assert_eq!(done.content, vec![json!({"type": "text", "text": "main"})]);
    assert_eq!(m.served(), (1, 1));
    let log: Vec<(Purpose, String)> = m.requests().into_iter().map(|(p, r)| (p, r.messages[0].all_text())).collect();
    assert_eq!(log, [(Purpose::Aux, "Summarise.".to_owned()), (Purpose::Main, "Read greeting.txt".to_owned())]);
}

#[tokio::test]
async fn chunk_delay_paces_every_event_after_message_start() {
    let (m, _) = model(r#"{"responses": [{"content": [{"type": "text", "text": "Hi."}], "chunk_delay_ms": 15}]}"#);
    let mut stream = m.answer(main_request()).unwrap();
    let started = Instant::now();
    assert!(matches!(stream.next().await, Some(Ok(StreamEvent::MessageStart { .. }))));
    assert!(started.elapsed() < Duration::from_millis(15), "message_start is not delayed");
    let rest = collect(stream).await;
    // content_block_start, one delta, content_block_stop, message_delta, message_stop.
    assert_eq!(rest.len(), 5);
    assert!(started.elapsed() >= Duration::from_millis(75), "{:?}", started.elapsed());
}
