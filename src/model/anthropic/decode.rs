//! SSE `data` payloads to [`StreamEvent`]s, pushed into an [`Assembler`].
//!
//! Every payload is read by serde. Nearly every event of a reply is a `content_block_delta`
//! carrying a piece of text, thinking or tool-input JSON; serde reads that shape into a small
//! borrowed view (`PieceEvent`) whose piece is borrowed from the payload unless it holds
//! escapes, and the piece is appended with [`Assembler::push_text`]. Anything else (other
//! events, other deltas, a delta serde will not read that way) is read into an owned
//! [`StreamEvent`] ([`decode`], the plain reading, which the tests use as the reference) and
//! pushed with [`Assembler::push`]. Both give the same result for the same payload. There is
//! no hand-written JSON reader: a Messages stream runs at a few kilobytes a second, and this
//! path reads hundreds of megabytes a second (docs/performance.md).
//!
//! [`Intake`] is the reader the client runs: a [`Handler`] for the SSE parser that decodes each
//! event the parser frames and pushes it.

use std::borrow::Cow;
use std::ops::ControlFlow;

use serde::Deserialize;

use super::sse::{Event, Handler};
use crate::model::ModelError;
use crate::model::assemble::{Assembler, Step, TextKind};
use crate::protocol::StreamEvent;

/// Parse one SSE `data` payload into an owned event.
///
/// # Errors
/// [`ModelError::Protocol`] when the payload is not a JSON event object.
pub fn decode(data: &str) -> Result<StreamEvent, ModelError> {
    let event = serde_json::from_str(data);
    match event {
        Ok(StreamEvent::Unknown) | Err(_) => {
            if let Some(error) = foreign_error(data) {
                return Ok(StreamEvent::Error { error });
            }
        }
        Ok(_) => {}
    }
    event.map_err(|e| ModelError::Protocol(format!("bad event JSON ({e}): {}", snippet(data))))
}

/// An error event in another server's shape, not the Messages API's `{"type": "error",
/// "error": {…}}`: llama.cpp's `{"code": 500, "message": …, "type": "server_error"}` and the
/// OpenAI style `{"error": {"message": …, "type"?: …, "code"?: …}}`. `None` for anything else
/// (an unknown event type stays ignored).
fn foreign_error(data: &str) -> Option<crate::protocol::ApiErrorBody> {
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    let body = match value.get("error") {
        Some(inner) if inner.is_object() => inner,
        _ => &value,
    };
    let message = body.get("message")?.as_str()?.to_owned();
    let kind = body.get("type").and_then(serde_json::Value::as_str);
    let code = body.get("code");
    // Only what says it is an error: a type ending in `error`, or a code beside the message.
    if !(kind.is_some_and(|k| k.ends_with("error")) || code.is_some() || value.get("error").is_some()) {
        return None;
    }
    let kind = match (kind, code) {
        (Some(kind), _) => kind.to_owned(),
        (None, Some(code)) => code.as_str().map_or_else(|| format!("error {code}"), str::to_owned),
        (None, None) => "error".to_owned(),
    };
    Some(crate::protocol::ApiErrorBody { kind, message })
}

/// Decode one payload and push it into `asm`: a delta carrying a piece of text through its
/// borrowed view, anything else through [`decode`] and [`Assembler::push`].
///
/// # Errors
/// [`ModelError::Protocol`] for a payload that is not a JSON event, or an event the assembler
/// refuses.
pub fn push_payload<'a>(asm: &mut Assembler, data: &'a str) -> Result<Step<'a>, ModelError> {
    if let Ok(event) = serde_json::from_str::<PieceEvent<'a>>(data)
        && event.kind == "content_block_delta"
        && let Some((kind, piece)) = event.delta.piece()
    {
        return match piece {
            Cow::Borrowed(piece) => asm.push_text(event.index, kind, piece),
            Cow::Owned(piece) => {
                asm.push_text(event.index, kind, &piece)?;
                Ok(crate::model::assemble::piece_step(event.index, kind, Cow::Owned(piece)))
            }
        };
    }
    asm.push(decode(data)?)
}

/// A `content_block_delta` event as serde reads it without building a [`StreamEvent`]: its
/// `type`, its index and its delta, every other key ignored (as [`StreamEvent`] ignores them).
#[derive(Deserialize)]
struct PieceEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    index: usize,
    #[serde(borrow)]
    delta: PieceDelta<'a>,
}

/// The delta of a [`PieceEvent`]: its `type` and whichever of the three piece keys it has.
#[derive(Deserialize)]
struct PieceDelta<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow, default)]
    text: Option<Piece<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Piece<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Piece<'a>>,
}

/// A piece of text, borrowed from the payload when it holds no escapes.
#[derive(Deserialize)]
struct Piece<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'a> PieceDelta<'a> {
    /// The kind and the piece, when the delta's `type` is one of the three that carry a piece
    /// and its key is there; `None` for the owned path to decide.
    fn piece(self) -> Option<(TextKind, Cow<'a, str>)> {
        let (kind, piece) = match self.kind {
            "text_delta" => (TextKind::Text, self.text),
            "input_json_delta" => (TextKind::InputJson, self.partial_json),
            "thinking_delta" => (TextKind::Thinking, self.thinking),
            _ => return None,
        };
        Some((kind, piece?.0))
    }
}

/// A `Handler` for the SSE parser that decodes each event of a Messages stream ([`push_payload`]),
/// pushes it into an [`Assembler`] and reports each [`Step`] to a callback.
///
/// The feed stops after `message_stop`, an `error` event or the first failure, which is kept
/// for [`Intake::failure`].
pub struct Intake<'a, F> {
    asm: &'a mut Assembler,
    on_step: F,
    failure: Option<ModelError>,
}

impl<'a, F> Intake<'a, F>
where
    F: FnMut(Step<'_>),
{
    /// An intake pushing into `asm`, calling `on_step` with what each event changed.
    pub fn new(asm: &'a mut Assembler, on_step: F) -> Self {
        Self { asm, on_step, failure: None }
    }

    /// The error that stopped the feed, if one did (bad event JSON, or an event the assembler
    /// refused).
    pub fn failure(self) -> Option<ModelError> {
        self.failure
    }
}

impl<F> Handler for Intake<'_, F>
where
    F: FnMut(Step<'_>),
{
    /// Decode and push the event; break after the events nothing may follow and after a
    /// failure.
    fn event(&mut self, event: Event<'_>) -> ControlFlow<()> {
        match push_payload(self.asm, event.data) {
            Ok(step) => {
                let last = matches!(step, Step::Stopped | Step::Failed(_));
                (self.on_step)(step);
                if last { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            }
            Err(error) => {
                self.failure = Some(error);
                ControlFlow::Break(())
            }
        }
    }
}

/// The start of a payload, for error messages.
fn snippet(data: &str) -> &str {
    match data.char_indices().nth(200) {
        Some((end, _)) => &data[..end],
        None => data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_delta_is_decoded_and_pushed_onto_its_block() {
        let mut asm = Assembler::new();
        let mut steps = Vec::new();
        let mut intake = Intake::new(&mut asm, |step: Step<'_>| steps.push(format!("{step:?}")));
        for data in [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\tb \u00e9 \ud83d\ude00"}}"#,
            r#"{"type": "content_block_delta", "delta": {"text": "!", "type": "text_delta"}, "index": 0}"#,
        ] {
            assert_eq!(intake.event(Event { event: None, data }), ControlFlow::Continue(()));
        }
        assert!(intake.failure().is_none());
        let started = r#"BlockStarted { index: 0, block: Object {"text": String(""), "type": String("text")} }"#;
        assert_eq!(steps, [started, r#"Text { index: 0, text: "a\tb é 😀" }"#, r#"Text { index: 0, text: "!" }"#]);
        assert_eq!(asm.finish().content[0], json!({"type": "text", "text": "a\tb é 😀!"}));
    }

    /// Other servers' error events are errors with their message, not ignored or a protocol
    /// failure; an unknown event that is no error stays ignored.
    #[test]
    fn foreign_error_events_keep_their_message() {
        let error = |kind: &str, message: &str| StreamEvent::Error {
            error: crate::protocol::ApiErrorBody { kind: kind.into(), message: message.into() },
        };
        let llama = r#"{"code":500,"message":"Compute error.","type":"server_error"}"#;
        assert_eq!(decode(llama).unwrap(), error("server_error", "Compute error."));
        let openai = r#"{"error":{"message":"The server had an error","type":null,"code":"server_error"}}"#;
        assert_eq!(decode(openai).unwrap(), error("server_error", "The server had an error"));
        let bare = r#"{"error":{"message":"context window exceeded"}}"#;
        assert_eq!(decode(bare).unwrap(), error("error", "context window exceeded"));
        assert_eq!(decode(r#"{"type":"brand_new_event","message":"hi"}"#).unwrap(), StreamEvent::Unknown);
        assert!(matches!(decode("not json"), Err(ModelError::Protocol(_))));
    }

    /// An assembler with a text, a tool_use and a thinking block open.
    fn open_blocks() -> Assembler {
        let mut asm = Assembler::new();
        let blocks = [
            json!({"type": "text", "text": ""}),
            json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {}}),
            json!({"type": "thinking", "thinking": ""}),
        ];
        for (index, block) in blocks.into_iter().enumerate() {
            let start = json!({"type": "content_block_start", "index": index, "content_block": block});
            asm.push(serde_json::from_value(start).unwrap()).unwrap();
        }
        asm
    }

    /// `push_payload` gives the step and the reply that `decode` then `Assembler::push` give.
    fn agrees_with_the_owned_path(data: &str) {
        let (mut viewed, mut owned) = (open_blocks(), open_blocks());
        let step = push_payload(&mut viewed, data).map(|step| format!("{step:?}"));
        let reference = decode(data).and_then(|event| owned.push(event)).map(|step| format!("{step:?}"));
        assert_eq!(step, reference, "{data}");
        assert_eq!(viewed.finish(), owned.finish(), "{data}");
    }

    #[test]
    fn the_borrowed_view_reads_deltas_as_the_owned_event_does() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": \"b\\n"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"thinking_delta","thinking":"925 \u00f7 \ud83d\ude00"}}"#,
            r#"{"delta": {"text": "x", "type": "text_delta"}, "index": 0, "type": "content_block_delta", "extra": 1}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","thinking":"ignored"}}"#,
            // Refused by the view, decided by the owned path.
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"wrong key"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"s"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"no such block"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} trailing"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\q"}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            agrees_with_the_owned_path(data);
        }
        let mut asm = open_blocks();
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"plain"}}"#;
        let step = push_payload(&mut asm, data).unwrap();
        assert!(matches!(step, Step::Text { text: Cow::Borrowed("plain"), .. }), "{step:?}");
    }

    proptest::proptest! {
        #[test]
        fn any_piece_reads_as_the_owned_event_does(text in ".*", kind in 0..3usize) {
            let (name, key) = [("text_delta", "text"), ("input_json_delta", "partial_json"), ("thinking_delta", "thinking")][kind];
            let literal = serde_json::to_string(&text).unwrap();
            agrees_with_the_owned_path(&format!(
                r#"{{"type":"content_block_delta","index":{kind},"delta":{{"type":"{name}","{key}":{literal}}}}}"#
            ));
        }
    }

    #[test]
    fn intake_stops_after_the_last_event_and_keeps_the_failure() {
        let mut asm = Assembler::new();
        let mut steps = Vec::new();
        let mut intake = Intake::new(&mut asm, |step: Step<'_>| steps.push(format!("{step:?}")));
        let ping = Event { event: Some("ping"), data: r#"{"type":"ping"}"# };
        assert_eq!(intake.event(ping), ControlFlow::Continue(()));
        let stop = Event { event: None, data: r#"{"type":"message_stop"}"# };
        assert_eq!(intake.event(stop), ControlFlow::Break(()));
        let bad = Event { event: None, data: "{not json" };
        assert_eq!(intake.event(bad), ControlFlow::Break(()));
        let failure = intake.failure();
        assert_eq!(steps, ["Quiet", "Stopped"]);
        assert_eq!(
            failure,
            Some(ModelError::Protocol("bad event JSON (key must be a string at line 1 column 2): {not json".into()))
        );
    }

    #[test]
    fn a_piece_for_a_block_that_never_started_is_a_protocol_error() {
        let mut asm = Assembler::new();
        let mut intake = Intake::new(&mut asm, |_: Step<'_>| {});
        let data = r#"{"type":"content_block_delta","index":13,"delta":{"type":"text_delta","text":"x"}}"#;
        assert_eq!(intake.event(Event { event: None, data }), ControlFlow::Break(()));
        assert_eq!(intake.failure(), Some(ModelError::Protocol("event names block 13, which never started".into())));
    }
}
