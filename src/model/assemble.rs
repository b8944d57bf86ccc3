//! Assembly of [`StreamEvent`]s into one assistant message.
//!
//! The rules are those of `fixtures/anthropic-sse/SOURCES.md`: blocks start at consecutive
//! indexes, deltas append (signatures set), a tool input's JSON is gathered per block and parsed
//! strictly at `content_block_stop`, unknown events, deltas and block types are tolerated, and
//! usage counts from `message_delta` overwrite those of `message_start`. A tool_use whose JSON
//! never completed is marked `input_complete: false` and is never executed.
//!
//! Events come in owned ([`Assembler::push`]), or, for the pieces of text that make up nearly
//! all of a reply, without an event: [`Assembler::push_text`] appends a borrowed piece. Either
//! way the [`Step`] lends the piece back.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::model::ModelError;
use crate::protocol::{ApiErrorBody, ContentBlock, Delta, Message, Role, StopReason, StreamEvent, Usage};

/// What one pushed event changed, for callers that show progress or start tools early.
///
/// The text of a [`Step::Text`] or [`Step::Thinking`] is the piece that was pushed: owned when
/// it came in an owned event, borrowed otherwise (from the caller's piece, or from the block's
/// own string for a reader that decoded it there).
#[derive(Debug, Clone, PartialEq)]
pub enum Step<'a> {
    /// Nothing a caller needs to see.
    Quiet,
    /// Text appended to block `index`.
    Text {
        /// Block index.
        index: usize,
        /// The appended text.
        text: Cow<'a, str>,
    },
    /// Thinking text appended to block `index`.
    Thinking {
        /// Block index.
        index: usize,
        /// The appended thinking.
        text: Cow<'a, str>,
    },
    /// `message_start` arrived: [`Assembler::message_id`], the model and the first usage are known.
    Started,
    /// Block `index` started; the block as it started (a `tool_use` with its id and name and
    /// an empty input, an empty `text`).
    BlockStarted {
        /// Block index.
        index: usize,
        /// The block as the `content_block_start` event gave it.
        block: Value,
    },
    /// A piece of a tool call's input JSON appended to block `index`.
    InputJson {
        /// Block index.
        index: usize,
        /// The piece.
        text: Cow<'a, str>,
    },
    /// Block `index` is complete.
    BlockDone(usize),
    /// `message_delta` arrived: the stop reason and the final usage are known.
    Delta,
    /// `message_stop` arrived: the message is complete.
    Stopped,
    /// An `error` event ended the stream.
    Failed(ApiErrorBody),
}

/// Which text of a block a streamed piece extends: the three delta types that carry a piece
/// of a string (`text_delta`, `thinking_delta`, `input_json_delta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// `text_delta`: the block's `text`.
    Text,
    /// `thinking_delta`: the block's `thinking`.
    Thinking,
    /// `input_json_delta`: the JSON text of a tool's input, parsed when the block stops.
    InputJson,
}

/// Gathers the events of one reply.
#[derive(Debug, Default)]
pub struct Assembler {
    blocks: Vec<Map<String, Value>>,
    json_buffers: Vec<String>,
    /// The text and thinking appended to each open block, merged into it when it closes, so
    /// that a delta is one append, without a lookup in the block's map.
    pending: Vec<Pending>,
    closed: Vec<bool>,
    stop_reason: Option<StopReason>,
    stop_sequence: Option<String>,
    usage: Usage,
    id: Option<String>,
    model: Option<String>,
    started: bool,
    stopped: bool,
    error: Option<ApiErrorBody>,
}

/// Text and thinking appended to an open block; `Some` once a delta of that kind arrived.
#[derive(Debug, Default)]
struct Pending {
    text: Option<String>,
    thinking: Option<String>,
}

/// The assembled reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The blocks, as JSON objects with every key the stream gave.
    pub content: Vec<Value>,
    /// Why the model stopped, if it said.
    pub stop_reason: Option<StopReason>,
    /// Which stop sequence matched.
    pub stop_sequence: Option<String>,
    /// Merged usage.
    pub usage: Usage,
    /// The message id (`msg_…`), from `message_start`.
    pub id: Option<String>,
    /// The model that answered, from `message_start`.
    pub model: Option<String>,
    /// Whether `message_stop` arrived.
    pub complete: bool,
    /// The `error` event that ended the stream, if any.
    pub error: Option<ApiErrorBody>,
}

impl Assembler {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Apply one event.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] when a block starts out of order or a delta names no block.
    pub fn push(&mut self, event: StreamEvent) -> Result<Step<'static>, ModelError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.started = true;
                self.id = message.id;
                self.model = message.model;
                for block in message.content {
                    self.open_block(block)?;
                }
                if let Some(usage) = message.usage {
                    self.usage.merge(&usage);
                }
                if message.stop_reason.is_some() {
                    self.stop_reason = message.stop_reason;
                }
                Ok(Step::Started)
            }
            StreamEvent::ContentBlockStart { index, content_block } => {
                if index != self.blocks.len() {
                    return Err(ModelError::Protocol(format!(
                        "content_block_start index {index} but expected {}",
                        self.blocks.len()
                    )));
                }
                self.open_block(content_block.clone())?;
                Ok(Step::BlockStarted { index, block: content_block })
            }
            StreamEvent::ContentBlockDelta { index, delta } => self.apply_delta(index, delta),
            StreamEvent::ContentBlockStop { index } => {
                self.check_index(index)?;
                if self.closed[index] {
                    return Ok(Step::Quiet);
                }
                self.close_block(index);
                Ok(Step::BlockDone(index))
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if delta.stop_sequence.is_some() {
                    self.stop_sequence = delta.stop_sequence;
                }
                if let Some(usage) = usage {
                    self.usage.merge(&usage);
                }
                Ok(Step::Delta)
            }
            StreamEvent::MessageStop => {
                self.stopped = true;
                Ok(Step::Stopped)
            }
            StreamEvent::Error { error } => {
                self.error = Some(error.clone());
                Ok(Step::Failed(error))
            }
            StreamEvent::Ping | StreamEvent::Unknown => Ok(Step::Quiet),
        }
    }

    /// Block `index` as a typed block, once it is complete. `None` for a tool_use whose input
    /// never became valid JSON: such a call must not run.
    pub fn finished_block(&self, index: usize) -> Option<ContentBlock> {
        let block = self.blocks.get(index)?;
        if !self.closed[index] || block.get("input_complete") == Some(&Value::Bool(false)) {
            return None;
        }
        serde_json::from_value(Value::Object(block.clone())).ok()
    }

    /// The message id `message_start` gave, if any.
    pub fn message_id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The model `message_start` named, if any.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The usage merged so far.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The stop reason and stop sequence, once `message_delta` gave them.
    pub fn stop(&self) -> (Option<&StopReason>, Option<&str>) {
        (self.stop_reason.as_ref(), self.stop_sequence.as_deref())
    }

    /// Whether `message_stop` has arrived.
    pub fn is_complete(&self) -> bool {
        self.stopped
    }

    /// Number of blocks started so far.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Close every open block and return the result.
    pub fn finish(mut self) -> Assembled {
        for index in 0..self.blocks.len() {
            if !self.closed[index] {
                self.close_block(index);
            }
        }
        Assembled {
            content: self.blocks.into_iter().map(Value::Object).collect(),
            stop_reason: self.stop_reason,
            stop_sequence: self.stop_sequence,
            usage: self.usage,
            id: self.id,
            model: self.model,
            complete: self.stopped,
            error: self.error,
        }
    }

    fn open_block(&mut self, block: Value) -> Result<(), ModelError> {
        let Value::Object(map) = block else {
            return Err(ModelError::Protocol("content block is not an object".into()));
        };
        self.blocks.push(map);
        self.json_buffers.push(String::new());
        self.pending.push(Pending::default());
        self.closed.push(false);
        Ok(())
    }

    fn check_index(&self, index: usize) -> Result<(), ModelError> {
        if index < self.blocks.len() { Ok(()) } else { Err(unknown_block(index)) }
    }

    /// Apply a `content_block_delta` of kind `kind` carrying `piece`, exactly as
    /// [`Assembler::push`] applies the owned event, without the event: the piece is appended
    /// where it belongs and lent back in the step.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] when block `index` never started.
    pub fn push_text<'a>(&mut self, index: usize, kind: TextKind, piece: &'a str) -> Result<Step<'a>, ModelError> {
        self.append_piece(index, kind, piece)?;
        Ok(piece_step(index, kind, Cow::Borrowed(piece)))
    }

    /// Append a piece where it belongs. Text and thinking wait beside an open block and are
    /// merged into it when it closes (no map lookup per piece); a block that already closed
    /// takes them directly.
    fn append_piece(&mut self, index: usize, kind: TextKind, piece: &str) -> Result<(), ModelError> {
        self.check_index(index)?;
        let closed = self.closed[index];
        let (pending, key) = match kind {
            TextKind::InputJson => {
                self.json_buffers[index].push_str(piece);
                return Ok(());
            }
            TextKind::Text => (&mut self.pending[index].text, "text"),
            TextKind::Thinking => (&mut self.pending[index].thinking, "thinking"),
        };
        if !closed {
            pending.get_or_insert_default().push_str(piece);
            return Ok(());
        }
        let block = &mut self.blocks[index];
        match block.get_mut(key) {
            Some(Value::String(text)) => text.push_str(piece),
            _ => {
                block.insert(key.into(), Value::String(piece.to_owned()));
            }
        }
        Ok(())
    }

    fn apply_delta(&mut self, index: usize, delta: Delta) -> Result<Step<'static>, ModelError> {
        self.check_index(index)?;
        let (kind, text) = match delta {
            Delta::TextDelta { text } => (TextKind::Text, text),
            Delta::ThinkingDelta { thinking } => (TextKind::Thinking, thinking),
            Delta::InputJsonDelta { partial_json } => (TextKind::InputJson, partial_json),
            other => return Ok(self.apply_other_delta(index, other)),
        };
        self.append_piece(index, kind, &text)?;
        Ok(piece_step(index, kind, Cow::Owned(text)))
    }

    /// The deltas that carry no piece of text.
    fn apply_other_delta(&mut self, index: usize, delta: Delta) -> Step<'static> {
        let block = &mut self.blocks[index];
        match delta {
            Delta::SignatureDelta { signature } => {
                block.insert("signature".into(), Value::String(signature));
                Step::Quiet
            }
            Delta::CitationsDelta { citation } => {
                let list = block.entry("citations").or_insert_with(|| Value::Array(Vec::new()));
                if !list.is_array() {
                    *list = Value::Array(Vec::new());
                }
                if let Value::Array(items) = list {
                    items.push(citation);
                }
                Step::Quiet
            }
            Delta::TextDelta { .. } | Delta::ThinkingDelta { .. } | Delta::InputJsonDelta { .. } | Delta::Unknown => {
                Step::Quiet
            }
        }
    }

    fn close_block(&mut self, index: usize) {
        self.closed[index] = true;
        let block = &mut self.blocks[index];
        let pending = std::mem::take(&mut self.pending[index]);
        if let Some(text) = pending.text {
            merge_str(block, "text", text);
        }
        if let Some(thinking) = pending.thinking {
            merge_str(block, "thinking", thinking);
        }
        let takes_input =
            matches!(block.get("type").and_then(Value::as_str), Some("tool_use" | "server_tool_use" | "mcp_tool_use"));
        let buffer = std::mem::take(&mut self.json_buffers[index]);
        if !takes_input || buffer.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(&buffer) {
            Ok(input) => {
                block.insert("input".into(), input);
            }
            Err(_) => {
                block.insert("input".into(), Value::Null);
                block.insert("partial_json".into(), Value::String(buffer));
                block.insert("input_complete".into(), Value::Bool(false));
            }
        }
    }
}

/// What a piece of text of kind `kind` appended to block `index` reports.
#[inline]
pub(crate) fn piece_step(index: usize, kind: TextKind, piece: Cow<'_, str>) -> Step<'_> {
    match kind {
        TextKind::Text => Step::Text { index, text: piece },
        TextKind::Thinking => Step::Thinking { index, text: piece },
        TextKind::InputJson => Step::InputJson { index, text: piece },
    }
}

/// A piece or a stop for a block that never started.
fn unknown_block(index: usize) -> ModelError {
    ModelError::Protocol(format!("event names block {index}, which never started"))
}

/// Append a whole pending text to the string at `key` (moved in when the block held none), or
/// set `key` to it if it holds no string.
fn merge_str(block: &mut Map<String, Value>, key: &str, text: String) {
    match block.get_mut(key) {
        Some(Value::String(s)) if !s.is_empty() => s.push_str(&text),
        Some(Value::String(s)) => *s = text,
        _ => {
            block.insert(key.into(), Value::String(text));
        }
    }
}

impl Assembled {
    /// The reply as an assistant message. Tool calls whose input never completed are left
    /// out (they never run, so they need no result); their ids are returned beside it.
    pub fn into_message(self) -> (Message, Vec<String>) {
        let mut dropped = Vec::new();
        let mut content = Vec::with_capacity(self.content.len());
        for raw in self.content {
            if raw.get("input_complete") == Some(&Value::Bool(false)) {
                let id = raw.get("id").and_then(Value::as_str).unwrap_or_default();
                dropped.push(id.to_owned());
                continue;
            }
            match serde_json::from_value::<ContentBlock>(raw.clone()) {
                Ok(block) => content.push(block),
                Err(_) => content.push(ContentBlock::Other(raw)),
            }
        }
        (Message { role: Role::Assistant, content }, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(v: Value) -> StreamEvent {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn gathers_tool_json_and_marks_truncated_input() {
        let mut a = Assembler::new();
        a.push(ev(json!({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}))).unwrap();
        a.push(ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}))).unwrap();
        a.push(ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}))).unwrap();
        a.push(ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" \"a.txt\"}"}}))).unwrap();
        assert_eq!(a.push(ev(json!({"type":"content_block_stop","index":0}))).unwrap(), Step::BlockDone(0));
        assert_eq!(
            a.finished_block(0),
            Some(ContentBlock::ToolUse { id: "t1".into(), name: "Read".into(), input: json!({"file_path": "a.txt"}) })
        );
        a.push(ev(json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t2","name":"Read","input":{}}}))).unwrap();
        a.push(ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_pa"}}))).unwrap();
        a.push(ev(json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}})))
            .unwrap();
        let done = a.finish();
        assert!(!done.complete);
        assert_eq!(done.usage.input_tokens, Some(5));
        assert_eq!(done.usage.output_tokens, Some(9));
        assert_eq!(done.content[1]["input_complete"], json!(false));
        let (message, dropped) = done.into_message();
        assert_eq!(dropped, vec!["t2".to_string()]);
        assert_eq!(message.tool_uses().count(), 1);
    }

    #[test]
    fn text_gathered_while_open_merges_like_appending_to_the_block() {
        let start =
            |index: usize, block: Value| ev(json!({"type":"content_block_start","index":index,"content_block":block}));
        let mut a = Assembler::new();
        a.push(start(0, json!({"type":"text","text":"pre-"}))).unwrap();
        a.push(start(1, json!({"type":"text","text":null}))).unwrap();
        a.push(start(2, json!({"type":"thinking"}))).unwrap();
        a.push(start(3, json!({"type":"text"}))).unwrap();
        for (index, kind, piece) in [
            (0, TextKind::Text, "a"),
            (1, TextKind::Text, "b"),
            (0, TextKind::Text, "c"),
            (1, TextKind::Text, "d"),
            (2, TextKind::Thinking, "e"),
            (3, TextKind::Text, ""),
        ] {
            a.push_text(index, kind, piece).unwrap();
        }
        assert_eq!(a.push(ev(json!({"type":"content_block_stop","index":0}))).unwrap(), Step::BlockDone(0));
        // A piece for a block that already stopped still lands in it.
        assert_eq!(a.push_text(0, TextKind::Text, "!").unwrap(), Step::Text { index: 0, text: Cow::Borrowed("!") });
        assert_eq!(
            a.push_text(2, TextKind::Thinking, "f").unwrap(),
            Step::Thinking { index: 2, text: Cow::Borrowed("f") }
        );
        let done = a.finish();
        assert_eq!(
            done.content,
            vec![
                json!({"type":"text","text":"pre-ac!"}),
                json!({"type":"text","text":"bd"}),
                json!({"type":"thinking","thinking":"ef"}),
                json!({"type":"text","text":""}),
            ]
        );
    }

    #[test]
    fn out_of_order_block_is_a_protocol_error() {
        let mut a = Assembler::new();
        let err = a
            .push(ev(json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})))
            .unwrap_err();
        assert!(matches!(err, ModelError::Protocol(_)));
    }
}
