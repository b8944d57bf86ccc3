//! A model attempt as a journal keeps it: the reply read to its end (or the failure that
//! stopped it) as a value, and the same reply streamed again from that value.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::assemble::{Assembler, Step};
use crate::model::reply::{self, Reply};
use crate::model::{Model, ModelError, ModelRequest, ReplyStream};
use crate::protocol::{ApiErrorBody, Delta, MessageDeltaBody, MessageStart, StopReason, StreamEvent, Usage};

/// One model attempt, read to its end: what the reply held and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedAttempt {
    /// The failure that kept the reply from opening; nothing else is set then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Failure>,
    /// The server's `request-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// What streamed, assembled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Recording>,
    /// The failure that cut the reply off after it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failure>,
}

/// The reply an attempt streamed, as its events left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// `message_start`'s id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The blocks, whole.
    pub content: Vec<Value>,
    /// Why the model stopped, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Which stop sequence matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// The usage the reply reported.
    pub usage: Usage,
    /// Whether `message_stop` arrived.
    pub complete: bool,
    /// The `error` event that ended the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiErrorBody>,
}

/// A [`ModelError`] as a journal keeps it. A refused redirect is kept as the configuration
/// error it is treated as (its class is the same: fatal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    /// [`ModelError::Http`].
    Http {
        /// Status code.
        status: u16,
        /// The API's error type.
        error_type: String,
        /// The server's message.
        message: String,
        /// The `request-id` header.
        request_id: Option<String>,
        /// The `retry-after` delay in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// [`ModelError::Stream`].
    Stream {
        /// The API's error type.
        error_type: String,
        /// The server's message.
        message: String,
    },
    /// [`ModelError::Connection`].
    Connection {
        /// What failed.
        message: String,
    },
    /// [`ModelError::Idle`].
    Idle {
        /// The idle timeout in milliseconds.
        ms: u64,
    },
    /// [`ModelError::Incomplete`].
    Incomplete,
    /// [`ModelError::Protocol`].
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// [`ModelError::Oversized`].
    Oversized {
        /// The limit.
        bytes: usize,
    },
    /// [`ModelError::Script`].
    Script {
        /// What was wrong.
        message: String,
    },
    /// [`ModelError::Config`] and [`ModelError::Redirect`].
    Config {
        /// What was wrong.
        message: String,
    },
}

impl From<&ModelError> for Failure {
    fn from(error: &ModelError) -> Failure {
        match error {
            ModelError::Http { status, kind, message, request_id, retry_after } => Failure::Http {
                status: *status,
                error_type: kind.clone(),
                message: message.clone(),
                request_id: request_id.clone(),
                retry_after_ms: retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            },
            ModelError::Stream { kind, message } => {
                Failure::Stream { error_type: kind.clone(), message: message.clone() }
            }
            ModelError::Connection(message) => Failure::Connection { message: message.clone() },
            ModelError::Idle(d) => Failure::Idle { ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX) },
            ModelError::Incomplete => Failure::Incomplete,
            ModelError::Protocol(message) => Failure::Protocol { message: message.clone() },
            ModelError::Oversized(bytes) => Failure::Oversized { bytes: *bytes },
            ModelError::Script(message) => Failure::Script { message: message.clone() },
            ModelError::Config(message) => Failure::Config { message: message.clone() },
            ModelError::Redirect(refused) => Failure::Config { message: refused.to_string() },
        }
    }
}

impl From<Failure> for ModelError {
    fn from(failure: Failure) -> ModelError {
        match failure {
            Failure::Http { status, error_type, message, request_id, retry_after_ms } => ModelError::Http {
                status,
                kind: error_type,
                message,
                request_id,
                retry_after: retry_after_ms.map(Duration::from_millis),
            },
            Failure::Stream { error_type, message } => ModelError::Stream { kind: error_type, message },
            Failure::Connection { message } => ModelError::Connection(message),
            Failure::Idle { ms } => ModelError::Idle(Duration::from_millis(ms)),
            Failure::Incomplete => ModelError::Incomplete,
            Failure::Protocol { message } => ModelError::Protocol(message),
            Failure::Oversized { bytes } => ModelError::Oversized(bytes),
            Failure::Script { message } => ModelError::Script(message),
            Failure::Config { message } => ModelError::Config(message),
        }
    }
}

impl RecordedAttempt {
    /// Send `request` to `model` and read its reply to the end.
    pub async fn record(model: &dyn Model, request: ModelRequest) -> RecordedAttempt {
        let mut stream = match model.stream(request).await {
            Ok(stream) => stream,
            Err(error) => {
                return RecordedAttempt {
                    refused: Some(Failure::from(&error)),
                    request_id: None,
                    reply: None,
                    failed: None,
                };
            }
        };
        let request_id = stream.request_id().map(str::to_owned);
        let mut asm = Assembler::new();
        let failed = reply::read_to_end(&mut stream, &mut asm, &mut |_: Step<'_>| {}).await.err();
        if failed.is_none() && asm.is_complete() {
            reply::finish(&mut stream).await;
        }
        let whole = asm.finish();
        let reply = Recording {
            id: whole.id,
            model: whole.model,
            content: whole.content,
            stop_reason: whole.stop_reason,
            stop_sequence: whole.stop_sequence,
            usage: whole.usage,
            complete: whole.complete,
            error: whole.error,
        };
        RecordedAttempt { refused: None, request_id, reply: Some(reply), failed: failed.as_ref().map(Failure::from) }
    }

    /// The attempt again: its refusal, or a reply streaming what it streamed and ending as it
    /// ended.
    ///
    /// # Errors
    /// The recorded refusal.
    pub fn replay(self) -> Result<ReplyStream, ModelError> {
        if let Some(refused) = self.refused {
            return Err(refused.into());
        }
        let mut events: Vec<Result<StreamEvent, ModelError>> = Vec::new();
        if let Some(reply) = self.reply {
            events.extend(reply.events().into_iter().map(Ok));
        }
        if let Some(failed) = self.failed {
            events.push(Err(failed.into()));
        }
        let inner = reply::from_events(Box::pin(futures::stream::iter(events)));
        Ok(Box::pin(Replay { inner, request_id: self.request_id }))
    }
}

impl Recording {
    /// The events that stream this reply: each block started empty and filled by one delta
    /// per piece, the stop reason and usage, then `message_stop` or the `error` event, as the
    /// original ended.
    fn events(self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        if self.id.is_none()
            && self.model.is_none()
            && self.content.is_empty()
            && !self.complete
            && self.error.is_none()
        {
            // Nothing started before the failure.
            return events;
        }
        let start = MessageStart { id: self.id, model: self.model, usage: Some(self.usage), ..MessageStart::default() };
        events.push(StreamEvent::MessageStart { message: start });
        for (index, block) in self.content.into_iter().enumerate() {
            let Value::Object(mut block) = block else { continue };
            let mut deltas = Vec::new();
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(Value::String(text)) = block.insert("text".into(), Value::String(String::new())) {
                        deltas.push(Delta::TextDelta { text });
                    }
                }
                Some("thinking") => {
                    if let Some(Value::String(thinking)) = block.insert("thinking".into(), Value::String(String::new()))
                    {
                        deltas.push(Delta::ThinkingDelta { thinking });
                    }
                }
                Some("tool_use" | "server_tool_use") => {
                    if let Some(input) = block.insert("input".into(), Value::Object(Map::new())) {
                        deltas.push(Delta::InputJsonDelta { partial_json: input.to_string() });
                    }
                }
                _ => {}
            }
            events.push(StreamEvent::ContentBlockStart { index, content_block: Value::Object(block) });
            events.extend(deltas.into_iter().map(|delta| StreamEvent::ContentBlockDelta { index, delta }));
            events.push(StreamEvent::ContentBlockStop { index });
        }
        if self.stop_reason.is_some() || self.stop_sequence.is_some() {
            events.push(StreamEvent::MessageDelta {
                delta: MessageDeltaBody { stop_reason: self.stop_reason, stop_sequence: self.stop_sequence },
                usage: Some(self.usage),
            });
        }
        if let Some(error) = self.error {
            events.push(StreamEvent::Error { error });
        } else if self.complete {
            events.push(StreamEvent::MessageStop);
        }
        events
    }
}

/// A replayed reply, with the request id of the one it replays.
struct Replay {
    inner: ReplyStream,
    request_id: Option<String>,
}

impl Reply for Replay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        asm: &mut Assembler,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Poll<Option<Result<(), ModelError>>> {
        self.inner.as_mut().poll_read(cx, asm, on_step)
    }

    fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::assemble::Assembler;
    use crate::protocol::{ContentBlock, Message};

    /// What a replayed reply assembles to, and how its reading ended.
    async fn read_back(attempt: RecordedAttempt) -> (Result<(), ModelError>, crate::model::assemble::Assembled) {
        let mut stream = attempt.replay().unwrap();
        let mut asm = Assembler::new();
        let ended = reply::read_to_end(&mut stream, &mut asm, &mut |_: Step<'_>| {}).await;
        (ended, asm.finish())
    }

    #[test]
    fn a_refusal_comes_back_as_the_same_error_with_its_class() {
        let refused = ModelError::Http {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            request_id: Some("req_1".into()),
            retry_after: Some(Duration::from_millis(1500)),
        };
        let attempt =
            RecordedAttempt { refused: Some(Failure::from(&refused)), request_id: None, reply: None, failed: None };
        let stored: RecordedAttempt = serde_json::from_value(serde_json::to_value(&attempt).unwrap()).unwrap();
        let Err(again) = stored.replay() else { panic!("a refusal replays as one") };
        assert_eq!(again, refused);
        assert_eq!(again.class(), refused.class());
    }

    #[tokio::test]
    async fn a_whole_reply_and_a_cut_one_assemble_as_they_did() {
        let message = Message {
            role: crate::protocol::Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "Reading.".into(), citations: None },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "a.txt"}),
                },
            ],
        };
        let mut asm = Assembler::new();
        let mut live = reply::whole(&message, StopReason::ToolUse);
        reply::read_to_end(&mut live, &mut asm, &mut |_: Step<'_>| {}).await.unwrap();
        let whole = asm.finish();
        let recording = Recording {
            id: whole.id.clone(),
            model: whole.model.clone(),
            content: whole.content.clone(),
            stop_reason: whole.stop_reason.clone(),
            stop_sequence: None,
            usage: whole.usage,
            complete: true,
            error: None,
        };
        let attempt =
            RecordedAttempt { refused: None, request_id: Some("req_2".into()), reply: Some(recording), failed: None };
        let (ended, again) = read_back(attempt.clone()).await;
        assert_eq!(ended, Ok(()));
        assert_eq!(again.content, whole.content);
        assert_eq!(again.stop_reason, Some(StopReason::ToolUse));
        assert!(again.complete);
        assert_eq!(attempt.clone().replay().unwrap().request_id(), Some("req_2"));

        // The same reply cut off by a dropped connection after its blocks.
        let mut cut = attempt;
        if let Some(reply) = cut.reply.as_mut() {
            reply.complete = false;
            reply.stop_reason = None;
        }
        cut.failed = Some(Failure::from(&ModelError::Connection("reset by peer".into())));
        let (ended, again) = read_back(cut).await;
        assert_eq!(ended, Err(ModelError::Connection("reset by peer".into())));
        assert_eq!(again.content, whole.content);
        assert!(!again.complete);
    }
}
