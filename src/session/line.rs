//! The JSON shapes of transcript lines, written and read.
//!
//! Message lines follow Claude Code's transcript (`parentUuid`, `isSidechain`, `type`,
//! `message`, `uuid`, `timestamp`, `userType`, `entrypoint`, `cwd`, `sessionId`, `version`)
//! so its readers can read ours. Our own bookkeeping lines have `agentloop-` types.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{ContentBlock, Message, Role};

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
}

/// A user or assistant line, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageLineOut<'a> {
    pub parent_uuid: Option<&'a str>,
    pub is_sidechain: bool,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: &'a Message,
    pub uuid: &'a str,
    pub timestamp: &'a str,
    pub user_type: &'static str,
    pub entrypoint: &'static str,
    pub cwd: &'a str,
    pub session_id: &'a str,
    pub version: &'static str,
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
pub(crate) struct HistoryIn {
    pub messages: Vec<WireMessage>,
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
}

impl WireMessage {
    pub fn into_message(self) -> Message {
        Message { role: self.role, content: self.content }
    }
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
