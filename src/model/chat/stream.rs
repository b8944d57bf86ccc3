//! A streamed Chat Completions reply as the Messages API's events, so everything after the
//! model (assembly, the table's facts, retries) is the same code for every provider.
//!
//! Each `data:` chunk (`{"choices": [{"delta": {…}, "finish_reason": …}], "usage": …}`)
//! becomes events: the first one a `message_start` (with the served model's name); text a
//! text block; `reasoning_content` (llama.cpp, DeepSeek, vLLM) a thinking block; each tool
//! call, by its `index`, a `tool_use` block whose arguments arrive as `input_json_delta`
//! pieces (the id and name come with the first piece; a server that sends no id gets
//! `call_N`). `finish_reason` becomes the stop reason (`length` is `max_tokens`, so the
//! escalation and recovery edges apply; `tool_calls` is `tool_use`, and so is a `stop` after
//! tool calls), the usage of the last chunk the message's usage, and `data: [DONE]` (or the
//! body's end after a `finish_reason`) the `message_stop`. An error object in the stream is an
//! `error` event with its message. A body that ends before any `finish_reason` is left
//! incomplete, which the engine retries as a cut stream.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::model::ModelError;
use crate::model::reply::ReplyStream;
use crate::protocol::{Delta, MessageDeltaBody, MessageStart, StopReason, StreamEvent, Usage};

/// One streamed chunk, with what agentloop reads of it.
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: ChoiceDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: FunctionDelta,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChatUsage {
    /// As the Messages API counts: `input_tokens` without the cached part.
    fn to_usage(&self) -> Usage {
        let cached = self.prompt_tokens_details.as_ref().and_then(|d| d.cached_tokens);
        Usage {
            input_tokens: self.prompt_tokens.map(|p| p.saturating_sub(cached.unwrap_or(0))),
            output_tokens: self.completion_tokens,
            cache_creation_input_tokens: None,
            cache_read_input_tokens: cached,
        }
    }
}

/// A tool call being streamed.
#[derive(Debug)]
struct ToolSlot {
    /// Its block, once started (it starts when its name is known).
    block: Option<usize>,
    id: Option<String>,
    name: String,
    /// Arguments that came before the name.
    held: String,
}

/// Turns chunks into Messages API events.
#[derive(Debug, Default)]
pub struct Translator {
    started: bool,
    next_block: usize,
    text: Option<usize>,
    thinking: Option<usize>,
    tools: BTreeMap<u64, ToolSlot>,
    finish: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl Translator {
    /// A translator for one reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events of one `data:` payload; `[DONE]` ends the message.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] for a payload that is not a chunk.
    pub fn data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(self.end());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("bad chunk JSON ({e}): {}", data.chars().take(200).collect::<String>()))
        })?;
        let mut events = Vec::new();
        if let Some(error) = chunk.error {
            events.push(StreamEvent::Error { error: super::stream_error(&error) });
            self.stopped = true;
            return Ok(events);
        }
        if !self.started {
            self.started = true;
            events.push(StreamEvent::MessageStart {
                message: MessageStart { id: chunk.id.clone(), model: chunk.model.clone(), ..MessageStart::default() },
            });
        }
        if let Some(usage) = &chunk.usage {
            self.usage = usage.to_usage();
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.reasoning_content.filter(|t| !t.is_empty()) {
                let index = self.open_thinking(&mut events);
                events.push(StreamEvent::ContentBlockDelta { index, delta: Delta::ThinkingDelta { thinking: text } });
            }
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                let index = self.open_text(&mut events);
                events.push(StreamEvent::ContentBlockDelta { index, delta: Delta::TextDelta { text } });
            }
            for call in choice.delta.tool_calls {
                self.tool_delta(call, &mut events);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(events)
    }

    /// The events that end the message at the end of the body: the stop, if a
    /// `finish_reason` came (a server that sends no `[DONE]`); nothing otherwise, so the reply
    /// is incomplete.
    pub fn body_ended(&mut self) -> Vec<StreamEvent> {
        if self.finish.is_some() { self.end() } else { Vec::new() }
    }

    fn end(&mut self) -> Vec<StreamEvent> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        let mut events = Vec::new();
        if !self.started {
            events.push(StreamEvent::MessageStart { message: MessageStart::default() });
        }
        self.close_text_and_thinking(&mut events);
        for slot in self.tools.values() {
            if let Some(index) = slot.block {
                events.push(StreamEvent::ContentBlockStop { index });
            }
        }
        let called = self.tools.values().any(|slot| slot.block.is_some());
        let stop_reason = match self.finish.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            _ if called => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        events.push(StreamEvent::MessageDelta {
            delta: MessageDeltaBody { stop_reason: Some(stop_reason), stop_sequence: None },
            usage: Some(self.usage),
        });
        events.push(StreamEvent::MessageStop);
        events
    }

    fn open_text(&mut self, events: &mut Vec<StreamEvent>) -> usize {
        if let Some(index) = self.thinking.take() {
            events.push(StreamEvent::ContentBlockStop { index });
        }
        *self.text.get_or_insert_with(|| {
            let index = self.next_block;
            self.next_block += 1;
            events.push(StreamEvent::ContentBlockStart { index, content_block: json!({"type": "text", "text": ""}) });
            index
        })
    }

    fn open_thinking(&mut self, events: &mut Vec<StreamEvent>) -> usize {
        if let Some(index) = self.text.take() {
            events.push(StreamEvent::ContentBlockStop { index });
        }
        *self.thinking.get_or_insert_with(|| {
            let index = self.next_block;
            self.next_block += 1;
            let block = json!({"type": "thinking", "thinking": "", "signature": ""});
            events.push(StreamEvent::ContentBlockStart { index, content_block: block });
            index
        })
    }

    fn close_text_and_thinking(&mut self, events: &mut Vec<StreamEvent>) {
        for index in [self.text.take(), self.thinking.take()].into_iter().flatten() {
            events.push(StreamEvent::ContentBlockStop { index });
        }
    }

    fn tool_delta(&mut self, call: ToolCallDelta, events: &mut Vec<StreamEvent>) {
        let key = call.index.unwrap_or(self.tools.len() as u64);
        let slot = self.tools.entry(key).or_insert_with(|| ToolSlot {
            block: None,
            id: None,
            name: String::new(),
            held: String::new(),
        });
        if slot.id.is_none() {
            slot.id = call.id.filter(|id| !id.is_empty());
        }
        if let Some(name) = call.function.name {
            slot.name.push_str(&name);
        }
        let arguments = call.function.arguments.unwrap_or_default();
        if slot.block.is_none() {
            if slot.name.is_empty() {
                slot.held.push_str(&arguments);
                return;
            }
            // A tool call starts: the text before it is done.
            let (text, thinking) = (self.text.take(), self.thinking.take());
            for index in [text, thinking].into_iter().flatten() {
                events.push(StreamEvent::ContentBlockStop { index });
            }
            let index = self.next_block;
            self.next_block += 1;
            let id = slot.id.clone().unwrap_or_else(|| format!("call_{key}"));
            events.push(StreamEvent::ContentBlockStart {
                index,
                content_block: json!({"type": "tool_use", "id": id, "name": slot.name, "input": {}}),
            });
            slot.block = Some(index);
            let held = std::mem::take(&mut slot.held);
            if !held.is_empty() {
                events.push(StreamEvent::ContentBlockDelta {
                    index,
                    delta: Delta::InputJsonDelta { partial_json: held },
                });
            }
        }
        if let Some(index) = slot.block
            && !arguments.is_empty()
        {
            events.push(StreamEvent::ContentBlockDelta {
                index,
                delta: Delta::InputJsonDelta { partial_json: arguments },
            });
        }
    }
}

impl crate::model::translate::Translate for Translator {
    fn data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ModelError> {
        Translator::data(self, data)
    }

    fn body_ended(&mut self) -> Vec<StreamEvent> {
        Translator::body_ended(self)
    }
}

/// A Chat Completions response body as a reply ([`crate::model::translate::reply`]).
pub fn chat_reply<S, B, E>(body: S, idle_timeout: Duration) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    crate::model::translate::reply(body, idle_timeout, Translator::new())
}

#[cfg(test)]
mod tests;
