//! SSE `data` payloads to [`StreamEvent`]s, or straight into an [`Assembler`].
//!
//! Nearly every event of a reply is a `content_block_delta` carrying a few characters of text,
//! thinking or tool-input JSON, and the API writes those in one fixed compact form:
//! `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`.
//! That form is read directly: the string is unescaped, and its UTF-8 checked, in the same pass
//! that finds its end, straight onto the end of the string the assembler keeps for that block
//! ([`Assembler::piece_target`], [`crate::model::unescape`]), so a delta costs one copy and no
//! allocation. Everything else, any other spacing or key order included, goes to serde and is
//! pushed as an owned event. Both paths give the same result for the same input; the tests
//! check it.
//!
//! [`Intake`] is the reader the client runs: a [`Handler`] for the SSE parser that takes each
//! whole compact delta event (`event:` line, `data:` line, blank line) straight from the raw
//! bytes ([`framed_delta_into`]), so the event is scanned once, not three times, and hands
//! everything else, framed by the parser, to [`push_payload`]. [`decode`] is the plain reading
//! of one payload into an owned event, which the tests use as the reference.

use std::borrow::Cow;
use std::ops::ControlFlow;

use super::sse::{Event, Handler};
use crate::model::ModelError;
use crate::model::assemble::{Assembler, Step, TextKind, piece_step};
use crate::model::unescape::unescape_into;
use crate::protocol::StreamEvent;

/// Parse one SSE `data` payload into an owned event (serde, no fast path).
///
/// # Errors
/// [`ModelError::Protocol`] when the payload is not a JSON event object.
pub fn decode(data: &str) -> Result<StreamEvent, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Protocol(format!("bad event JSON ({e}): {}", snippet(data))))
}

/// Decode one payload and push it into `asm`: a compact delta straight into the block's
/// string, anything else through [`decode`] and [`Assembler::push`].
///
/// # Errors
/// [`ModelError::Protocol`] for a payload that is not a JSON event, or an event the
/// assembler refuses.
pub fn push_payload<'a>(asm: &'a mut Assembler, data: &str) -> Result<Step<'a>, ModelError> {
    let bytes = data.as_bytes();
    // (The string lent back is looked up again: returning the borrow `delta_into` gives on one
    // path only, and using `asm` on the other, is more than the borrow checker accepts.)
    if starts_with(bytes, DELTA_PREFIX)
        && let Some((appended, _)) = delta_into(bytes, DELTA_PREFIX.len(), &mut *asm, trailing_space)
    {
        return Ok(appended.step(asm));
    }
    asm.push(decode(data)?)
}

/// The exact bytes that start a compact delta event as the API frames it. The `event:` line
/// is optional (the name is not used).
const EVENT_LINE: &[u8; 27] = b"event: content_block_delta\n";
/// The start of a compact delta payload, up to its index.
const DELTA_PREFIX: &[u8; 38] = br#"{"type":"content_block_delta","index":"#;
/// The `data:` line of a compact delta, up to its index.
const DATA_LINE: &[u8; 44] = br#"data: {"type":"content_block_delta","index":"#;
/// What ends one framed: the delta object, the event object, the `data:` line, the blank line.
const EVENT_END: &[u8; 4] = b"}}\n\n";

/// Whether `bytes` starts with `prefix` (at least eight bytes long), compared a word at a time
/// (the last word overlapping the one before), which the compiler unrolls for each prefix
/// instead of calling `memcmp`.
#[inline]
fn starts_with<const N: usize>(bytes: &[u8], prefix: &[u8; N]) -> bool {
    const { assert!(N >= 8) };
    let Some(head) = bytes.first_chunk::<N>() else { return false };
    let word = |b: &[u8; N], at: usize| u64::from_le_bytes(*b[at..].first_chunk::<8>().unwrap_or(&[0; 8]));
    let mut at = 0;
    let mut same = true;
    while at + 8 < N {
        same &= word(head, at) == word(prefix, at);
        at += 8;
    }
    same && word(head, N - 8) == word(prefix, N - 8)
}

/// A whole compact delta event at the front of `bytes`, framed exactly as the API writes it
/// (an optional `event: content_block_delta` line, the compact `data:` line, a blank line, LF
/// line ends), decoded into `asm`: how many bytes it spans and the step. `None`, with `asm`
/// unchanged, for anything else (including bytes that are not UTF-8 and a block that never
/// started); the SSE parser and [`push_payload`] then read it.
#[inline(always)]
pub fn framed_delta_into<'a>(bytes: &[u8], asm: &'a mut Assembler) -> Option<(usize, Step<'a>)> {
    let mut at = if starts_with(bytes, EVENT_LINE) { EVENT_LINE.len() } else { 0 };
    if !starts_with(&bytes[at..], DATA_LINE) {
        return None;
    }
    at += DATA_LINE.len();
    let (appended, target) =
        delta_into(bytes, at, asm, |rest| (rest.first_chunk() == Some(EVENT_END)).then_some(EVENT_END.len()))?;
    let target: &'a String = target;
    let piece = Cow::Borrowed(&target[appended.start..]);
    Some((appended.end, piece_step(appended.index, appended.kind, piece)))
}

/// After a compact payload's string: `}}` and nothing but JSON whitespace.
fn trailing_space(rest: &[u8]) -> Option<usize> {
    let rest = rest.strip_prefix(b"}}")?;
    rest.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).then_some(rest.len() + 2)
}

/// A piece of a compact delta, appended to its block's string.
struct Appended {
    /// Where the delta ended in the input.
    end: usize,
    index: usize,
    kind: TextKind,
    /// Where the piece starts in the block's string.
    start: usize,
}

impl Appended {
    /// The step the piece makes, lending it from the block's string.
    #[inline]
    fn step(self, asm: &mut Assembler) -> Step<'_> {
        let piece = match self.kind {
            TextKind::InputJson => "",
            kind => {
                let text = asm.piece_target(self.index, kind).expect("the piece was just appended to this string");
                &text[self.start..]
            }
        };
        piece_step(self.index, self.kind, Cow::Borrowed(piece))
    }
}

/// The compact delta whose index starts at `bytes[at]`, its string unescaped onto the block's
/// own string in `asm`, if `tail` accepts what follows the string (and says how long it is):
/// where the piece is, and the string it went on. `None`, with `asm` unchanged, for anything
/// else.
#[inline]
fn delta_into<'a>(
    bytes: &[u8],
    at: usize,
    asm: &'a mut Assembler,
    tail: impl FnOnce(&[u8]) -> Option<usize>,
) -> Option<(Appended, &'a mut String)> {
    let (index, kind, quote) = delta_head(bytes, at)?;
    if bytes.get(quote) != Some(&b'"') {
        return None;
    }
    let target = asm.piece_target(index, kind)?;
    let start = target.len();
    let end = unescape_into(bytes, quote + 1, target)?;
    let Some(used) = tail(&bytes[end..]) else {
        target.truncate(start);
        return None;
    };
    Some((Appended { end: end + used, index, kind, start }, target))
}

/// A [`Handler`] for the SSE parser that decodes each event of a Messages stream into an
/// [`Assembler`] and reports each [`Step`] to a callback: compact deltas straight from the raw
/// bytes ([`framed_delta_into`]), anything else from the parser's events ([`push_payload`]).
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

/// Hand `step` on; break after the events nothing may follow and after a failure.
#[inline]
fn report<F: FnMut(Step<'_>)>(
    on_step: &mut F,
    failure: &mut Option<ModelError>,
    step: Result<Step<'_>, ModelError>,
) -> ControlFlow<()> {
    match step {
        Ok(step) => {
            let last = matches!(step, Step::Stopped | Step::Failed(_));
            on_step(step);
            if last { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }
        Err(error) => {
            *failure = Some(error);
            ControlFlow::Break(())
        }
    }
}

impl<F> Handler for Intake<'_, F>
where
    F: FnMut(Step<'_>),
{
    fn event(&mut self, event: Event<'_>) -> ControlFlow<()> {
        report(&mut self.on_step, &mut self.failure, push_payload(self.asm, event.data))
    }

    #[inline]
    fn whole_event(&mut self, bytes: &[u8]) -> Option<(usize, ControlFlow<()>)> {
        let (used, step) = framed_delta_into(bytes, self.asm)?;
        Some((used, report(&mut self.on_step, &mut self.failure, Ok(step))))
    }
}

const DELTA_TYPE: &[u8; 18] = br#","delta":{"type":""#;
const TEXT: &[u8; 19] = br#"text_delta","text":"#;
const INPUT_JSON: &[u8; 33] = br#"input_json_delta","partial_json":"#;
const THINKING: &[u8; 27] = br#"thinking_delta","thinking":"#;

/// From the index digits at `at` to the string of a compact delta: the index, the kind, and
/// where the string literal starts.
#[inline]
fn delta_head(bytes: &[u8], at: usize) -> Option<(usize, TextKind, usize)> {
    let rest = bytes.get(at..)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    // At most as many digits as the largest `usize` has, less one: the index cannot overflow.
    if digits == 0 || (digits > 1 && rest[0] == b'0') || digits > usize::MAX.ilog10() as usize {
        return None;
    }
    let index = rest[..digits].iter().fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
    let rest = &rest[digits..];
    if !starts_with(rest, DELTA_TYPE) {
        return None;
    }
    let rest = &rest[DELTA_TYPE.len()..];
    let (kind, key_len) = match rest.first()? {
        b't' if starts_with(rest, TEXT) => (TextKind::Text, TEXT.len()),
        b'i' if starts_with(rest, INPUT_JSON) => (TextKind::InputJson, INPUT_JSON.len()),
        b't' if starts_with(rest, THINKING) => (TextKind::Thinking, THINKING.len()),
        _ => return None,
    };
    Some((index, kind, bytes.len() - rest.len() + key_len))
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
    use crate::model::assemble::Assembled;
    use serde_json::json;

    /// An assembler with blocks 0 to 12 open: text, tool_use and thinking in turn, each text
    /// and thinking block with a first (empty) piece, which the fast path needs.
    fn open_blocks() -> Assembler {
        let mut asm = Assembler::new();
        for index in 0..13 {
            let block = match index % 3 {
                0 => json!({"type": "text", "text": ""}),
                1 => json!({"type": "tool_use", "id": format!("t{index}"), "name": "Read", "input": {}}),
                _ => json!({"type": "thinking", "thinking": ""}),
            };
            let start = json!({"type": "content_block_start", "index": index, "content_block": block});
            asm.push(serde_json::from_value(start).unwrap()).unwrap();
            match index % 3 {
                0 => asm.push_text(index, TextKind::Text, "").unwrap(),
                2 => asm.push_text(index, TextKind::Thinking, "").unwrap(),
                _ => Step::Quiet,
            };
        }
        asm
    }

    /// What pushing `data` gives (the step, as text) and leaves behind.
    type Pushed = (Result<String, ModelError>, Assembled);

    fn through_serde(data: &str) -> Pushed {
        let mut asm = open_blocks();
        let step = decode(data).and_then(|event| asm.push(event)).map(|step| format!("{step:?}"));
        (step, asm.finish())
    }

    fn through_push_payload(data: &str) -> Pushed {
        let mut asm = open_blocks();
        let step = push_payload(&mut asm, data).map(|step| format!("{step:?}"));
        (step, asm.finish())
    }

    /// Whether the fast path takes `data`; either way, `push_payload` must do what serde does.
    fn fast_and_agrees(data: &str) -> bool {
        let mut asm = open_blocks();
        let before = format!("{asm:?}");
        let taken = starts_with(data.as_bytes(), DELTA_PREFIX)
            && delta_into(data.as_bytes(), DELTA_PREFIX.len(), &mut asm, trailing_space).is_some();
        if !taken {
            assert_eq!(format!("{asm:?}"), before, "a refusal changes nothing: {data}");
        }
        assert_eq!(through_push_payload(data), through_serde(data), "{data}");
        taken
    }

    #[test]
    fn compact_deltas_take_the_fast_path() {
        let cases = [
            (r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#, "Hello"),
            (
                r#"{"type":"content_block_delta","index":12,"delta":{"type":"input_json_delta","partial_json":"{\"a\": \"b\\n"}}   "#,
                "",
            ),
            (
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"thinking_delta","thinking":"925 ÷ 5 \u00f7 \ud83d\ude00"}}"#,
                "925 ÷ 5 ÷ 😀",
            ),
            (r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#, ""),
        ];
        for (data, piece) in cases {
            assert!(fast_and_agrees(data), "{data}");
            let mut asm = open_blocks();
            let step = push_payload(&mut asm, data).unwrap();
            let text = match step {
                Step::Text { text, .. } | Step::Thinking { text } => text.into_owned(),
                Step::Quiet => String::new(),
                other => panic!("{other:?}"),
            };
            assert_eq!(text, piece);
        }
    }

    #[test]
    fn anything_else_goes_to_serde() {
        let fallbacks = [
            // Other spacing, key order, delta types, trailing data, bad numbers, raw controls,
            // bad escapes, a block that never started, a first piece of text for a block.
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"#,
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\tb\"}}",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\q"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"open\"#,
            r#"{"type":"content_block_delta","index":13,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"first text of a tool block"}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        for data in fallbacks {
            assert!(!fast_and_agrees(data), "{data}");
        }
        assert_eq!(
            through_push_payload(fallbacks[10]).0,
            Err(ModelError::Protocol("event names block 13, which never started".into()))
        );
        assert_eq!(through_push_payload(fallbacks[0]).0.as_deref(), Ok(r#"Text { index: 0, text: "x" }"#));
    }

    proptest::proptest! {
        #[test]
        fn any_encoded_string_is_taken_whole(text in ".*", kind in 0..3usize) {
            let (kind, key) = [("text_delta", "text"), ("input_json_delta", "partial_json"), ("thinking_delta", "thinking")][kind];
            let index = [0, 1, 2][["text", "partial_json", "thinking"].iter().position(|k| *k == key).unwrap()];
            let literal = serde_json::to_string(&text).unwrap();
            let data = format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","{key}":{literal}}}}}"#);
            proptest::prop_assert!(fast_and_agrees(&data));
        }

        #[test]
        fn any_literal_agrees_with_serde(body in r#"[a\\"/ubfnrtDd8Ee0-9\x00\x1f é]{0,24}"#) {
            let data = format!(r#"{{"type":"content_block_delta","index":2,"delta":{{"type":"thinking_delta","thinking":"{body}"}}}}"#);
            // fast_and_agrees checks agreement whichever path reads it.
            fast_and_agrees(&data);
        }
    }

    #[test]
    fn a_piece_for_a_block_that_stopped_still_lands_in_it() {
        let mut asm = open_blocks();
        asm.push(StreamEvent::ContentBlockStop { index: 0 }).unwrap();
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"late\n"}}"#;
        assert_eq!(push_payload(&mut asm, data).unwrap(), Step::Text { index: 0, text: Cow::Borrowed("late\n") });
        assert_eq!(asm.finish().content[0], json!({"type": "text", "text": "late\n"}));
    }

    #[test]
    fn framed_delta_takes_only_the_exact_framing() {
        let data = r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"a\tb"}}"#;
        let with_name = format!("event: content_block_delta\n{data}\n\nevent: ping\n");
        let mut asm = open_blocks();
        assert_eq!(framed_delta_into(with_name.as_bytes(), &mut asm), Some((with_name.len() - 12, Step::Quiet)));
        let bare = format!("{data}\n\n");
        assert_eq!(framed_delta_into(bare.as_bytes(), &mut asm), Some((bare.len(), Step::Quiet)));
        assert_eq!(asm.finish().content[1]["partial_json"], json!("a\tba\tb"), "both pieces are in the JSON buffer");
        // Anything else is left to the parser: other line ends, trailing bytes, another event
        // name, no blank line (yet), another shape of payload, bytes that are not UTF-8.
        let refused: Vec<Vec<u8>> = vec![
            format!("{data}\r\n\r\n").into(),
            format!("{data} \n\n").into(),
            format!("{data}\ndata: more\n\n").into(),
            format!("event: other\n{data}\n\n").into(),
            format!("{data}\n").into(),
            format!("{data}\n: comment\n\n").into(),
            (data.replace("input_json_delta\",\"partial_json", "signature_delta\",\"signature") + "\n\n").into(),
            (data.replace("data: ", "data:") + "\n\n").into(),
            (data.replace(r"a\tb", "a\u{1}b") + "\n\n").bytes().map(|b| if b == 1 { 0xFF } else { b }).collect(),
        ];
        for bytes in refused {
            let mut asm = open_blocks();
            let before = format!("{asm:?}");
            assert_eq!(framed_delta_into(&bytes, &mut asm), None, "{:?}", String::from_utf8_lossy(&bytes));
            assert_eq!(format!("{asm:?}"), before);
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
}
