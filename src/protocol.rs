//! Wire types of the Anthropic Messages API, and nothing else.
//!
//! These structs mirror the JSON the API sends and accepts. They carry no loop
//! logic: the engine converts them into its own decisions at one boundary
//! (`model::assemble`), and the providers (`model::scripted`, `model::anthropic`)
//! produce the same [`StreamEvent`]s so everything after the model is shared.
//! [`Transcript`] holds a conversation so that requests share its messages.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the engine speaking for the user (tool results, hook feedback).
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// The blocks of the message, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![ContentBlock::text(text)] }
    }

    /// All text of the message: text blocks and the text of tool results, joined by newlines.
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            let piece = match block {
                ContentBlock::Text { text, .. } => text.as_str(),
                ContentBlock::ToolResult { content, .. } => content.as_str(),
                _ => continue,
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(piece);
        }
        out
    }

    /// The text blocks of the message, concatenated (what a user reads as the reply).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The `tool_use` blocks of the message, in call order.
    pub fn tool_uses(&self) -> impl Iterator<Item = ToolUse<'_>> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some(ToolUse { id, name, input }),
            _ => None,
        })
    }
}

/// A borrowed view of one `tool_use` block.
#[derive(Debug, Clone, Copy)]
pub struct ToolUse<'a> {
    /// The id the matching `tool_result` must carry.
    pub id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The tool's input, as the model wrote it.
    pub input: &'a Value,
}

/// One block of a message.
///
/// Block types the engine does not act on (server tool blocks, `compaction`, future types)
/// are kept verbatim in [`ContentBlock::Other`] so they round-trip to the API unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Citations attached by server tools, kept as the API sent them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        citations: Option<Vec<Value>>,
    },
    /// Extended thinking.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// Opaque signature the API needs back.
        #[serde(default)]
        signature: String,
    },
    /// Thinking the API chose to encrypt.
    RedactedThinking {
        /// Opaque payload.
        data: String,
    },
    /// A call of one of our tools.
    ToolUse {
        /// Unique id of the call.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input.
        input: Value,
    },
    /// The answer to one `tool_use`.
    ToolResult {
        /// The id of the `tool_use` this answers.
        tool_use_id: String,
        /// What the tool returned.
        content: ToolResultContent,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
    },
    /// Any other block, kept as sent.
    #[serde(untagged)]
    Other(Value),
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ContentBlock {
    /// A text block without citations.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into(), citations: None }
    }

    /// A tool result block.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: ToolResultContent::Text(content.into()),
            is_error,
        }
    }

    /// A tool result of `text` followed by `images` (media type, base64 data): a block list
    /// when there are images, a plain string otherwise. An empty text is left out of a block
    /// list (the API refuses empty text blocks).
    pub fn tool_result_with_images(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        images: impl IntoIterator<Item = (String, String)>,
        is_error: bool,
    ) -> Self {
        let text = text.into();
        let mut images = images.into_iter().peekable();
        if images.peek().is_none() {
            return ContentBlock::tool_result(tool_use_id, text, is_error);
        }
        let mut blocks = Vec::new();
        if !text.is_empty() {
            blocks.push(serde_json::json!({"type": "text", "text": text}));
        }
        blocks.extend(images.map(|(media_type, data)| {
            serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }));
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: ToolResultContent::Blocks(blocks),
            is_error,
        }
    }

    /// Characters of payload in the block, used for token estimates.
    pub fn char_len(&self) -> usize {
        match self {
            ContentBlock::Text { text, .. } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::RedactedThinking { data } => data.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content.char_len(),
            ContentBlock::Other(v) => v.to_string().len(),
        }
    }
}

/// The content of a tool result: the API accepts a string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// A plain string (what our tools produce).
    Text(String),
    /// Blocks, kept as sent.
    Blocks(Vec<Value>),
}

/// What one image block of a tool result counts for in a token estimate, in characters: about
/// 1,600 tokens, the cost of an image at the API's largest unscaled size.
pub const IMAGE_ESTIMATE_CHARS: usize = 6_400;

impl ToolResultContent {
    /// The text of the result; for a block list, its first text block (or an empty string).
    pub fn as_str(&self) -> &str {
        match self {
            ToolResultContent::Text(s) => s,
            ToolResultContent::Blocks(blocks) => {
                blocks.iter().find_map(|b| b.get("text").and_then(Value::as_str)).unwrap_or("")
            }
        }
    }

    /// Characters of payload, for token estimates: the text, and
    /// [`IMAGE_ESTIMATE_CHARS`] for each image.
    pub fn char_len(&self) -> usize {
        match self {
            ToolResultContent::Text(s) => s.len(),
            ToolResultContent::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("image") => IMAGE_ESTIMATE_CHARS,
                    _ => b.get("text").and_then(Value::as_str).map_or_else(|| b.to_string().len(), str::len),
                })
                .sum(),
        }
    }
}

/// Token usage reported by the API. Every count is optional: streams may omit any of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// Overwrite each count that `newer` reports (the API's counts are cumulative).
    pub fn merge(&mut self, newer: &Usage) {
        fn take(old: &mut Option<u64>, new: Option<u64>) {
            if new.is_some() {
                *old = new;
            }
        }
        take(&mut self.input_tokens, newer.input_tokens);
        take(&mut self.output_tokens, newer.output_tokens);
        take(&mut self.cache_creation_input_tokens, newer.cache_creation_input_tokens);
        take(&mut self.cache_read_input_tokens, newer.cache_read_input_tokens);
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A natural end of turn.
    EndTurn,
    /// The model wants tools run.
    ToolUse,
    /// The output cap was hit: the reply is truncated.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// A server tool paused the turn; send the reply back to continue.
    PauseTurn,
    /// The model declined.
    Refusal,
    /// The context window filled while generating: treated like `max_tokens`.
    ModelContextWindowExceeded,
    /// A reason this version does not know.
    #[serde(untagged)]
    Other(String),
}

impl StopReason {
    /// Whether the reply was cut off by an output or context limit.
    pub fn is_truncation(&self) -> bool {
        matches!(self, StopReason::MaxTokens | StopReason::ModelContextWindowExceeded)
    }
}

/// The `error` object of an API error body or an SSE `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiErrorBody {
    /// The error type, e.g. `overloaded_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

/// One server-sent event of a streamed Messages response, dispatched on its JSON `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The message begins.
    MessageStart {
        /// The message skeleton (content is normally empty).
        message: MessageStart,
    },
    /// A content block begins at `index`.
    ContentBlockStart {
        /// Position of the block.
        index: usize,
        /// The block as started, extra keys included.
        content_block: Value,
    },
    /// A piece of a block.
    ContentBlockDelta {
        /// Position of the block.
        index: usize,
        /// The piece.
        delta: Delta,
    },
    /// A block is complete.
    ContentBlockStop {
        /// Position of the block.
        index: usize,
    },
    /// Top-level message changes (stop reason, usage).
    MessageDelta {
        /// Stop reason and sequence.
        #[serde(default)]
        delta: MessageDeltaBody,
        /// Cumulative usage.
        #[serde(default)]
        usage: Option<Usage>,
    },
    /// The message is complete.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// The stream failed.
    Error {
        /// What failed.
        error: ApiErrorBody,
    },
    /// An event type this version does not know: ignored.
    #[serde(other)]
    Unknown,
}

/// The `message` of a `message_start` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageStart {
    /// Message id.
    #[serde(default)]
    pub id: Option<String>,
    /// Model that answers.
    #[serde(default)]
    pub model: Option<String>,
    /// Content already present (normally empty).
    #[serde(default)]
    pub content: Vec<Value>,
    /// Stop reason, normally null here.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Stop sequence, normally null here.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Initial usage.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// The `delta` of a `content_block_delta` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// Text appended to a text block.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of a tool input's JSON.
    InputJsonDelta {
        /// Raw JSON fragment.
        partial_json: String,
    },
    /// Thinking text appended.
    ThinkingDelta {
        /// The text.
        thinking: String,
    },
    /// Sets the thinking block's signature.
    SignatureDelta {
        /// The signature.
        signature: String,
    },
    /// Appends one citation.
    CitationsDelta {
        /// The citation.
        citation: Value,
    },
    /// A delta type this version does not know: ignored.
    #[serde(other)]
    Unknown,
}

/// The `delta` of a `message_delta` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageDeltaBody {
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Which stop sequence matched.
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// A tool definition as sent to the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the input.
    pub input_schema: Value,
}

/// A conversation whose messages are shared, not copied: each message sits behind an [`Arc`],
/// and so does the list of them, so a request built from the history clones one pointer
/// (not one per message), and the history keeps a running count of its payload characters
/// (see [`ContentBlock::char_len`]) for token estimates, so nothing has to walk or
/// re-serialize the messages to estimate them.
///
/// Appending is the common change and costs only the new message (the list is copied only
/// if a request still shares it); changes to older messages (collapsing tool results,
/// compaction) go through [`Transcript::edit`], which recounts.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    messages: Arc<Vec<Arc<Message>>>,
    chars: usize,
}

impl Transcript {
    /// Characters of payload in every message (the sum of their blocks' `char_len`).
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// Append `message`, merging it into the last message when both have the same role.
    /// Empty messages are not appended. Returns the (possibly merged) last message if
    /// something was appended. Only the last message is copied, and only if a request still
    /// shares it.
    pub fn push_merging(&mut self, message: Message) -> Option<&Message> {
        if message.content.is_empty() {
            return None;
        }
        self.chars += message_chars(&message);
        let messages = Arc::make_mut(&mut self.messages);
        match messages.last_mut() {
            Some(last) if last.role == message.role => Arc::make_mut(last).content.extend(message.content),
            _ => messages.push(Arc::new(message)),
        }
        self.messages.last().map(|m| &**m)
    }

    /// Change the messages in place with `f` on an owned copy of them, then recount. Linear in
    /// the history: for the rare rewrites (collapse, compaction), not for every turn.
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut Vec<Message>) -> R) -> R {
        let mut owned = self.to_messages();
        let result = f(&mut owned);
        *self = Transcript::from(owned);
        result
    }

    /// An owned copy of the messages.
    pub fn to_messages(&self) -> Vec<Message> {
        self.messages.iter().map(|m| Message::clone(m)).collect()
    }
}

fn message_chars(message: &Message) -> usize {
    message.content.iter().map(ContentBlock::char_len).sum()
}

impl From<Vec<Message>> for Transcript {
    fn from(messages: Vec<Message>) -> Self {
        let chars = messages.iter().map(message_chars).sum();
        Transcript { messages: Arc::new(messages.into_iter().map(Arc::new).collect()), chars }
    }
}

impl std::ops::Deref for Transcript {
    type Target = [Arc<Message>];

    fn deref(&self) -> &Self::Target {
        &self.messages
    }
}

impl Serialize for Transcript {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.messages.iter().map(|m| &**m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_result_with_images_is_a_block_list_and_counts_them() {
        let images = vec![("image/png".to_owned(), "iVBORw0K".to_owned())];
        let block = ContentBlock::tool_result_with_images("t1", "a screenshot", images.clone(), false);
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "a screenshot"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}
            ]})
        );
        assert_eq!(block.char_len(), "a screenshot".len() + IMAGE_ESTIMATE_CHARS);
        let ContentBlock::ToolResult { content, .. } = &block else { unreachable!() };
        assert_eq!(content.as_str(), "a screenshot");
        // No text: the list holds the image alone; no images: a plain string.
        let only_image = ContentBlock::tool_result_with_images("t2", "", images, true);
        assert_eq!(
            serde_json::to_value(&only_image).unwrap()["content"],
            json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}])
        );
        assert_eq!(
            ContentBlock::tool_result_with_images("t3", "text", Vec::new(), false),
            ContentBlock::tool_result("t3", "text", false)
        );
    }

    #[test]
    fn a_transcript_shares_messages_and_counts_characters() {
        let mut history = Transcript::from(vec![Message::user_text("Read a.txt")]);
        let call = ContentBlock::ToolUse { id: "t1".into(), name: "Read".into(), input: json!({"file_path": "a.txt"}) };
        history.push_merging(Message { role: Role::Assistant, content: vec![call] });
        let sent = history.clone();
        assert!(Arc::ptr_eq(&sent[1], &history[1]), "a copy shares the messages");
        history.push_merging(Message { role: Role::User, content: vec![ContentBlock::tool_result("t1", "hi", false)] });
        history.push_merging(Message::user_text("and more"));
        assert_eq!(sent.len(), 2, "a request built earlier does not see later messages");
        assert_eq!(history.len(), 3);
        assert_eq!(history[2].content.len(), 2, "same-role messages merge");
        let recount = Transcript::from(history.to_messages()).chars();
        assert_eq!(history.chars(), recount);
        history.edit(|m| m.truncate(1));
        assert_eq!(history.chars(), "Read a.txt".len());
        assert_eq!(
            serde_json::to_value(&history).unwrap(),
            json!([{"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]}])
        );
    }

    #[test]
    fn unknown_blocks_round_trip_verbatim() {
        let raw = json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}});
        let block: ContentBlock = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(block, ContentBlock::Other(raw.clone()));
        assert_eq!(serde_json::to_value(&block).unwrap(), raw);
    }

    #[test]
    fn tool_result_omits_false_is_error() {
        let block = ContentBlock::tool_result("toolu_1", "ok", false);
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"})
        );
    }

    #[test]
    fn unknown_event_and_delta_types_parse() {
        let ev: StreamEvent = serde_json::from_str(r#"{"type":"brand_new","x":1}"#).unwrap();
        assert_eq!(ev, StreamEvent::Unknown);
        let ev: StreamEvent =
            serde_json::from_str(r#"{"type":"content_block_delta","index":0,"delta":{"type":"odd_delta"}}"#).unwrap();
        assert_eq!(ev, StreamEvent::ContentBlockDelta { index: 0, delta: Delta::Unknown });
    }

    #[test]
    fn stop_reason_keeps_unknown_values() {
        let r: StopReason = serde_json::from_str(r#""something_new""#).unwrap();
        assert_eq!(r, StopReason::Other("something_new".into()));
        assert!(StopReason::ModelContextWindowExceeded.is_truncation());
    }
}
