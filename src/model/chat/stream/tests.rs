use super::*;
use crate::protocol::{ContentBlock, Role};

/// The message a whole body (in `pieces`, split anywhere) assembles to, with its stop reason
/// and usage; `Err` with the reply's failure.
async fn assemble(pieces: &[&str]) -> Result<(crate::protocol::Message, Option<StopReason>, Usage), ModelError> {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = pieces.iter().map(|p| Ok(p.as_bytes().to_vec())).collect();
    let mut reply = chat_reply(futures::stream::iter(chunks), Duration::from_secs(5));
    let done = crate::model::side::read_whole(&mut reply).await?;
    let (stop, usage) = (done.stop_reason.clone(), done.usage);
    Ok((done.into_message().0, stop, usage))
}

fn sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test]
async fn text_and_two_tool_calls_split_at_awkward_places_assemble() {
    let body = sse(&[
        json!({"id": "chatcmpl-1", "model": "qwen2.5-coder", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "look."}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Read", "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "Glob", "arguments": "{\"pattern\""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "path\": \"a.txt\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": ": \"*.rs\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100}}}),
    ]);
    // Split the body every 7 bytes: chunks never line up with events.
    let pieces: Vec<&str> = body.as_bytes().chunks(7).map(|c| std::str::from_utf8(c).unwrap()).collect();
    let (message, stop, usage) = assemble(&pieces).await.unwrap();
    assert_eq!(message.role, Role::Assistant);
    assert_eq!(
        message.content,
        vec![
            ContentBlock::text("Let me look."),
            ContentBlock::ToolUse { id: "call_a".into(), name: "Read".into(), input: json!({"file_path": "a.txt"}) },
            ContentBlock::ToolUse { id: "call_b".into(), name: "Glob".into(), input: json!({"pattern": "*.rs"}) },
        ]
    );
    assert_eq!(stop, Some(StopReason::ToolUse));
    assert_eq!(usage.input_tokens, Some(20));
    assert_eq!(usage.cache_read_input_tokens, Some(100));
    assert_eq!(usage.output_tokens, Some(30));
}

#[tokio::test]
async fn length_is_max_tokens_and_a_call_without_an_id_gets_one() {
    let body = sse(&[
        json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "Bash", "arguments": "{\"command\": \"ls\"}"}}]}}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
    ]);
    let (message, stop, _) = assemble(&[&body]).await.unwrap();
    assert_eq!(
        message.content,
        vec![ContentBlock::ToolUse { id: "call_0".into(), name: "Bash".into(), input: json!({"command": "ls"}) }]
    );
    assert_eq!(stop, Some(StopReason::ToolUse), "a stop after tool calls is a tool_use");
    let body = sse(&[json!({"choices": [{"delta": {"content": "The answer is"}, "finish_reason": "length"}]})]);
    let (_, stop, _) = assemble(&[&body]).await.unwrap();
    assert_eq!(stop, Some(StopReason::MaxTokens));
}

#[tokio::test]
async fn reasoning_content_is_a_thinking_block() {
    let body = sse(&[
        json!({"choices": [{"delta": {"reasoning_content": "Think first."}}]}),
        json!({"choices": [{"delta": {"content": "Done."}, "finish_reason": "stop"}]}),
    ]);
    let (message, stop, _) = assemble(&[&body]).await.unwrap();
    assert_eq!(
        message.content,
        vec![
            ContentBlock::Thinking { thinking: "Think first.".into(), signature: String::new() },
            ContentBlock::text("Done.")
        ]
    );
    assert_eq!(stop, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn an_error_in_the_stream_keeps_its_message_and_a_cut_body_is_incomplete() {
    let body = "data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}\n\ndata: {\"error\": {\"message\": \"the KV cache is full\", \"type\": \"server_error\"}}\n\n";
    assert_eq!(
        assemble(&[body]).await.unwrap_err(),
        ModelError::Stream { kind: "server_error".into(), message: "the KV cache is full".into() }
    );
    let cut = "data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}\n\n";
    assert_eq!(assemble(&[cut]).await.unwrap_err(), ModelError::Incomplete);
    // A finish_reason and then the end of the body, with no [DONE]: the message is whole.
    let no_done = "data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}, \"finish_reason\": \"stop\"}]}\n\n";
    assert_eq!(assemble(&[no_done]).await.unwrap().1, Some(StopReason::EndTurn));
}

#[test]
fn openai_error_bodies_give_their_code_and_message() {
    let body = br#"{"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#;
    let error = super::super::http_error(400, Some("Bad Request"), &reqwest::header::HeaderMap::new(), body);
    let ModelError::Http { kind, message, .. } = &error else { panic!("{error:?}") };
    assert_eq!(kind, "context_length_exceeded");
    assert_eq!(message, "This model's maximum context length is 8192 tokens.");
    assert_eq!(error.class(), crate::model::ErrorClass::PromptTooLong);
    let vllm = br#"{"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", "type": "BadRequestError", "code": 400}"#;
    let error = super::super::http_error(400, None, &reqwest::header::HeaderMap::new(), vllm);
    assert_eq!(error.class(), crate::model::ErrorClass::PromptTooLong);
}
