//! The JSON shapes of transcript lines, written and read.
//!
//! Message lines follow Claude Code's transcript (`parentUuid`, `isSidechain`, `promptId`,
//! `type`, `message`, `requestId`, `uuid`, `timestamp`, `userType`, `entrypoint`, `cwd`,
//! `sessionId`, `version`, `gitBranch`; an assistant `message` with the API's `id`, `model`,
//! `stop_reason`, `stop_sequence` and `usage`) so its readers can read ours. Our own
//! bookkeeping lines have `agentloop-` types.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uuid;
use crate::protocol::{ContentBlock, Message, Role, StopReason, Usage};

/// `type` of a user message line.
pub const USER: &str = "user";
/// `type` of an assistant message line.
pub const ASSISTANT: &str = "assistant";
/// `type` of the line written when a session starts, resumes or is forked.
pub const META: &str = "agentloop-meta";
/// `type` of the line written after each prompt's turn sequence.
pub const PROMPT_END: &str = "agentloop-prompt-end";
/// `type` of the line that replaces the whole history (compaction, collapse, repair).
pub const HISTORY: &str = "agentloop-history";
/// `type` of Claude Code's event lines; with `subtype` [`COMPACT_BOUNDARY`] one starts the
/// history again after a compaction.
pub const SYSTEM: &str = "system";
/// `subtype` of Claude Code's compaction boundary.
pub const COMPACT_BOUNDARY: &str = "compact_boundary";

/// What the engine ran with, recorded when a session starts or resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// The model id.
    pub model: String,
    /// SHA-256 of the transition table the engine ran.
    pub table_sha256: String,
    /// The permission mode (`default`, `plan`, ...).
    pub permission_mode: String,
}

/// Why a history snapshot replaced the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryReason {
    /// Compaction replaced the history with a summary.
    Compaction,
    /// Old tool results were collapsed in place.
    Collapse,
    /// A loaded history was repaired in a way appending cannot express.
    Repair,
    /// A resume cut the history back to an earlier message (`--resume-session-at`); the
    /// next message line chains from that message (`leafUuid`), a branch as Claude Code
    /// writes one.
    Rewind,
}

/// What the Messages API said about one reply, beside its content: the transcript line and
/// the stream-json line of the reply carry it as Claude Code's do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyInfo {
    /// The message id (`msg_…`), from `message_start`.
    pub id: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// Why it stopped.
    pub stop_reason: Option<StopReason>,
    /// The stop sequence that matched.
    pub stop_sequence: Option<String>,
    /// Its token counts.
    pub usage: Usage,
    /// The API's id for the request (the `request-id` response header).
    pub request_id: Option<String>,
}

/// What a message line carries beside its message ([`crate::session::TranscriptWriter::append_with`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LineInfo<'a> {
    /// The line's uuid; a fresh one when `None`.
    pub uuid: Option<Uuid>,
    /// For a reply of the model: what the API said about it.
    pub reply: Option<&'a ReplyInfo>,
    /// The prompt whose turn sequence the line belongs to (`promptId`, on user lines).
    pub prompt_id: Option<Uuid>,
    /// The user's prompt, given as text: `content` is written as a plain string when it is
    /// one text block, as Claude Code writes a prompt.
    pub text_prompt: bool,
    /// Where the prompt came from (`origin`, as the Claude Agent SDK stamps it).
    pub origin: Option<&'a Value>,
}

/// The `model` of an assistant line that no reply info came with (a message agentloop made
/// itself), as Claude Code marks its own.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// A user or assistant line, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageLineOut<'a> {
    pub parent_uuid: Option<&'a str>,
    pub is_sidechain: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<&'a str>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: MessageOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<&'a str>,
    pub uuid: &'a str,
    pub timestamp: &'a str,
    #[serde(rename = "sourceToolAssistantUUID", skip_serializing_if = "Option::is_none")]
    pub source_tool_assistant_uuid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<&'a Value>,
    pub user_type: &'static str,
    pub entrypoint: &'static str,
    pub cwd: &'a str,
    pub session_id: &'a str,
    pub version: &'static str,
    pub git_branch: &'a str,
}

/// The `message` of a line: a user message as the API takes it (its content a plain string
/// for a text prompt), or an assistant message as the API returned it.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum MessageOut<'a> {
    User { role: Role, content: ContentOut<'a> },
    Assistant(AssistantOut<'a>),
}

/// A user message's `content`.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ContentOut<'a> {
    Text(&'a str),
    Blocks(&'a [ContentBlock]),
}

/// An assistant `message`, in the Messages API's shape.
#[derive(Serialize)]
pub(crate) struct AssistantOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub role: Role,
    pub model: &'a str,
    pub content: &'a [ContentBlock],
    pub stop_reason: Option<&'a StopReason>,
    pub stop_sequence: Option<&'a str>,
    pub usage: UsageOut,
}

/// `usage` with every count a number, as usage reporters require.
#[derive(Serialize)]
pub(crate) struct UsageOut {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
}

impl From<&Usage> for UsageOut {
    fn from(u: &Usage) -> Self {
        UsageOut {
            input_tokens: u.input_tokens.unwrap_or(0),
            cache_creation_input_tokens: u.cache_creation_input_tokens.unwrap_or(0),
            cache_read_input_tokens: u.cache_read_input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
        }
    }
}

/// An `agentloop-meta` line, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetaLineOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(flatten)]
    pub meta: &'a SessionMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<&'a str>,
    pub cwd: &'a str,
    pub session_id: &'a str,
    pub timestamp: &'a str,
    pub version: &'static str,
}

/// An `agentloop-prompt-end` line, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptEndOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub terminal_reason: &'a str,
    pub error: Option<&'a str>,
    pub turns: u32,
    pub session_id: &'a str,
    pub timestamp: &'a str,
}

/// An `agentloop-history` line, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistoryOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub reason: HistoryReason,
    pub logical_parent_uuid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf_uuid: Option<&'a str>,
    pub messages: &'a [Message],
    pub session_id: &'a str,
    pub timestamp: &'a str,
}

/// The fields every line is read for first. Lenient: a field of an unexpected JSON type
/// (in some line type we do not know) reads as absent rather than failing the line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub uuid: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub session_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub subtype: Option<String>,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub is_sidechain: Option<bool>,
}

/// A user or assistant line, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageLineIn {
    pub message: WireMessage,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// An `agentloop-meta` line, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetaLineIn {
    #[serde(flatten)]
    pub meta: SessionMeta,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// An `agentloop-prompt-end` line, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptEndIn {
    pub terminal_reason: String,
    #[serde(default)]
    pub error: Option<String>,
}

/// An `agentloop-history` line, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistoryIn {
    pub messages: Vec<WireMessage>,
    /// The line the next message line chains from (a rewind), if not none.
    #[serde(default)]
    pub leaf_uuid: Option<String>,
}

/// A message as transcripts hold it: our [`Message`], or Claude Code's, whose `content` may be
/// a plain string and whose assistant messages carry `id`, `model`, `usage`... (ignored but
/// `model`).
#[derive(Deserialize)]
pub(crate) struct WireMessage {
    pub role: Role,
    #[serde(deserialize_with = "string_or_blocks")]
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub model: Option<String>,
    /// The API's message id of a reply: Claude Code writes one line per block of a reply,
    /// each with the reply's id and usage, so a reply's cost is counted once per id.
    #[serde(default, deserialize_with = "lenient_string")]
    pub id: Option<String>,
    /// What the reply cost in tokens, as the API reported it.
    #[serde(default, deserialize_with = "lenient_usage")]
    pub usage: Option<crate::protocol::Usage>,
}

impl WireMessage {
    pub fn into_message(self) -> Message {
        Message { role: self.role, content: self.content }
    }
}

fn lenient_usage<'de, D: Deserializer<'de>>(d: D) -> Result<Option<crate::protocol::Usage>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

/// `content` as a string (one text block) or a list of blocks, without buffering.
fn string_or_blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContentBlock>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<ContentBlock>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or a list of content blocks")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![ContentBlock::text(v)])
        }

        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(vec![ContentBlock::text(v)])
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))
        }
    }
    d.deserialize_any(V)
}
