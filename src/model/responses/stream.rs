//! A streamed Responses reply as the Messages API's events.
//!
//! Each output item (by `output_index`) becomes a block: a `message` item's
//! `response.output_text.delta` pieces a text block, a `function_call` item a `tool_use`
//! block (its `call_id` the id) whose `response.function_call_arguments.delta` pieces are
//! `input_json_delta`s, a `reasoning` item's summary pieces a thinking block. The item's
//! `response.output_item.done` closes its block. `response.completed` ends the message
//! (`tool_use` when a function was called, else `end_turn`), `response.incomplete` with
//! `max_output_tokens` ends it as `max_tokens`, and `response.failed` or an `error` event is
//! an `error` event with the server's code and message. Usage comes from the final response.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::Stream;
use serde_json::{Value, json};

use crate::model::ModelError;
use crate::model::reply::ReplyStream;
use crate::protocol::{Delta, MessageDeltaBody, MessageStart, StopReason, StreamEvent, Usage};

/// What an output item's block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Thinking,
}

/// Turns Responses events into Messages API events.
#[derive(Debug, Default)]
pub struct Translator {
    started: bool,
    next_block: usize,
    /// Open blocks by output index.
    open: BTreeMap<u64, (usize, Kind)>,
    called: bool,
    stopped: bool,
}

impl Translator {
    /// A translator for one reply.
    pub fn new() -> Self {
        Self::default()
    }

    fn start(&mut self, events: &mut Vec<StreamEvent>, response: &Value) {
        if !self.started {
            self.started = true;
            let message = MessageStart {
                id: response["id"].as_str().map(str::to_owned),
                model: response["model"].as_str().map(str::to_owned),
                ..MessageStart::default()
            };
            events.push(StreamEvent::MessageStart { message });
        }
    }

    /// The block of output item `output`, opened as `kind` if it is not open yet.
    fn block(&mut self, events: &mut Vec<StreamEvent>, output: u64, kind: Kind, item: &Value) -> usize {
        if let Some((index, _)) = self.open.get(&output) {
            return *index;
        }
        let index = self.next_block;
        self.next_block += 1;
        let content_block = match kind {
            Kind::Text => json!({"type": "text", "text": ""}),
            Kind::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
            Kind::Tool => {
                self.called = true;
                let id = item["call_id"].as_str().or_else(|| item["id"].as_str()).unwrap_or("call_0");
                json!({"type": "tool_use", "id": id, "name": item["name"].as_str().unwrap_or_default(), "input": {}})
            }
        };
        events.push(StreamEvent::ContentBlockStart { index, content_block });
        self.open.insert(output, (index, kind));
        index
    }

    fn close(&mut self, events: &mut Vec<StreamEvent>, output: u64) {
        if let Some((index, _)) = self.open.remove(&output) {
            events.push(StreamEvent::ContentBlockStop { index });
        }
    }

    fn end(&mut self, events: &mut Vec<StreamEvent>, response: &Value, stop: StopReason) {
        self.start(events, response);
        let outputs: Vec<u64> = self.open.keys().copied().collect();
        for output in outputs {
            self.close(events, output);
        }
        let usage = &response["usage"];
        let cached = usage["input_tokens_details"]["cached_tokens"].as_u64();
        let usage = Usage {
            input_tokens: usage["input_tokens"].as_u64().map(|n| n.saturating_sub(cached.unwrap_or(0))),
            output_tokens: usage["output_tokens"].as_u64(),
            cache_creation_input_tokens: None,
            cache_read_input_tokens: cached,
        };
        events.push(StreamEvent::MessageDelta {
            delta: MessageDeltaBody { stop_reason: Some(stop), stop_sequence: None },
            usage: Some(usage),
        });
        events.push(StreamEvent::MessageStop);
        self.stopped = true;
    }
}

impl crate::model::translate::Translate for Translator {
    fn data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ModelError> {
        let event: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!(
                "bad Responses event JSON ({e}): {}",
                data.chars().take(200).collect::<String>()
            ))
        })?;
        let mut events = Vec::new();
        if self.stopped {
            return Ok(events);
        }
        let output = event["output_index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or_default() {
            "response.created" | "response.in_progress" => self.start(&mut events, &event["response"]),
            "response.output_item.added" => {
                self.start(&mut events, &Value::Null);
                let item = &event["item"];
                if item["type"] == "function_call" {
                    self.block(&mut events, output, Kind::Tool, item);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.start(&mut events, &Value::Null);
                let index = self.block(&mut events, output, Kind::Text, &Value::Null);
                let text = event["delta"].as_str().unwrap_or_default().to_owned();
                events.push(StreamEvent::ContentBlockDelta { index, delta: Delta::TextDelta { text } });
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.start(&mut events, &Value::Null);
                let index = self.block(&mut events, output, Kind::Thinking, &Value::Null);
                let thinking = event["delta"].as_str().unwrap_or_default().to_owned();
                events.push(StreamEvent::ContentBlockDelta { index, delta: Delta::ThinkingDelta { thinking } });
            }
            "response.function_call_arguments.delta" => {
                let index = self.block(&mut events, output, Kind::Tool, &event);
                let partial_json = event["delta"].as_str().unwrap_or_default().to_owned();
                events.push(StreamEvent::ContentBlockDelta { index, delta: Delta::InputJsonDelta { partial_json } });
            }
            "response.output_item.done" => self.close(&mut events, output),
            "response.completed" => {
                let stop = if self.called { StopReason::ToolUse } else { StopReason::EndTurn };
                self.end(&mut events, &event["response"], stop);
            }
            "response.incomplete" => {
                let reason = event["response"]["incomplete_details"]["reason"].as_str().unwrap_or_default();
                let stop = match reason {
                    "max_output_tokens" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    other => StopReason::Other(other.to_owned()),
                };
                self.end(&mut events, &event["response"], stop);
            }
            "response.failed" | "error" => {
                let error = match event["response"]["error"].is_object() {
                    true => &event["response"]["error"],
                    false => event.get("error").filter(|e| e.is_object()).unwrap_or(&event),
                };
                events.push(StreamEvent::Error { error: crate::model::chat::stream_error(error) });
                self.stopped = true;
            }
            // Content part boundaries, `*.done` echoes, keep-alives: nothing to add.
            _ => {}
        }
        Ok(events)
    }

    fn body_ended(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
}

/// A Responses body as a reply ([`crate::model::translate::reply`]).
pub fn responses_reply<S, B, E>(body: S, idle_timeout: Duration) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    crate::model::translate::reply(body, idle_timeout, Translator::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ContentBlock;

    async fn assemble(body: &str) -> Result<(crate::protocol::Message, Option<StopReason>, Usage), ModelError> {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body.as_bytes().chunks(11).map(|c| Ok(c.to_vec())).collect();
        let mut reply = responses_reply(futures::stream::iter(pieces), Duration::from_secs(5));
        let done = crate::model::side::read_whole(&mut reply).await?;
        let (stop, usage) = (done.stop_reason.clone(), done.usage);
        Ok((done.into_message().0, stop, usage))
    }

    fn sse(events: &[Value]) -> String {
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
    }

    #[tokio::test]
    async fn text_then_a_function_call_assemble_with_usage() {
        let body = sse(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5-mini", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant"}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "look."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "Read", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"file_path\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": " \"a.txt\"}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "item_id": "fc_1", "arguments": "{\"file_path\": \"a.txt\"}"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call"}}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                   "usage": {"input_tokens": 300, "input_tokens_details": {"cached_tokens": 256}, "output_tokens": 20}}}),
        ]);
        let (message, stop, usage) = assemble(&body).await.unwrap();
        assert_eq!(
            message.content,
            vec![
                ContentBlock::text("Let me look."),
                ContentBlock::ToolUse {
                    id: "call_9".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a.txt"})
                },
            ]
        );
        assert_eq!(stop, Some(StopReason::ToolUse));
        assert_eq!(
            (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens),
            (Some(44), Some(256), Some(20))
        );
    }

    #[tokio::test]
    async fn incomplete_is_max_tokens_and_failed_keeps_its_message() {
        let body = sse(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "The answer"}),
            json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
        ]);
        assert_eq!(assemble(&body).await.unwrap().1, Some(StopReason::MaxTokens));
        let failed = sse(&[json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "The model failed to generate a response."}}})]);
        assert_eq!(
            assemble(&failed).await.unwrap_err(),
            ModelError::Stream {
                kind: "server_error".into(),
                message: "The model failed to generate a response.".into()
            }
        );
        let cut = sse(&[json!({"type": "response.output_text.delta", "output_index": 0, "delta": "The answer"})]);
        assert_eq!(assemble(&cut).await.unwrap_err(), ModelError::Incomplete);
    }
}
