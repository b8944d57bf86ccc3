//! One SSE `data` payload to one [`StreamEvent`], dispatched on its JSON `type`.
//!
//! Nearly every event of a reply is a `content_block_delta` carrying a few characters of text,
//! thinking or tool-input JSON, and the API writes those in one fixed compact form:
//! `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`.
//! That form is read directly, unescaping the string in the same pass that finds its end
//! (eight bytes at a time), and everything else, any other spacing or key order included, goes
//! to serde. Both paths give the same event for the same input; the tests check it.
//!
//! [`decode`] gives an owned [`StreamEvent`] (one `String` per delta). [`decode_borrowed`] and
//! [`apply`] allocate nothing for a compact delta: its text is lent from the payload itself
//! when it has no escapes, else from a [`Scratch`] buffer the caller reuses, and [`apply`]
//! appends it straight to an [`Assembler`]. [`Reader`] goes one step further for the framer:
//! it takes a whole compact delta event, `event:` line, `data:` line and blank line, straight
//! from the chunk's text ([`framed_delta`]), so the event is scanned once, not three times.

use std::ops::{ControlFlow, Range};

use super::sse::{Event, Handler};
use crate::model::ModelError;
use crate::model::assemble::{Assembler, Step, TextKind};
use crate::protocol::StreamEvent;

/// One decoded payload: a piece of text lent out, or any other event, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded<'a> {
    /// A compact `content_block_delta` carrying a piece of text, thinking or tool-input JSON.
    Text {
        /// Block index.
        index: usize,
        /// Which text the piece extends.
        kind: TextKind,
        /// The piece, unescaped.
        text: &'a str,
    },
    /// Any other event.
    Event(StreamEvent),
}

impl<'a> Decoded<'a> {
    /// The same event, owned.
    pub fn into_owned(self) -> StreamEvent {
        match self {
            Decoded::Text { index, kind, text } => {
                StreamEvent::ContentBlockDelta { index, delta: kind.delta(text.to_owned()) }
            }
            Decoded::Event(event) => event,
        }
    }

    /// Push the event into `asm`: [`Assembler::push_text`] for a piece of text, else
    /// [`Assembler::push`].
    ///
    /// # Errors
    /// What the assembler refuses.
    pub fn apply(self, asm: &mut Assembler) -> Result<Step<'a>, ModelError> {
        match self {
            Decoded::Text { index, kind, text } => asm.push_text(index, kind, text),
            Decoded::Event(event) => asm.push(event),
        }
    }
}

/// A buffer for unescaped text, reused from one event to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    text: String,
}

impl Scratch {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Parse one SSE `data` payload.
///
/// # Errors
/// [`ModelError::Protocol`] when the payload is not a JSON event object.
pub fn decode(data: &str) -> Result<StreamEvent, ModelError> {
    let mut scratch = Scratch::new();
    let (index, kind, text) = match compact_delta(data, &mut scratch) {
        Some((index, kind, Lent::Plain(range))) => (index, kind, data[range].to_owned()),
        // The unescaped text is in `scratch`, which becomes the event's own string.
        Some((index, kind, Lent::Unescaped)) => (index, kind, scratch.text),
        None => return serde(data),
    };
    Ok(StreamEvent::ContentBlockDelta { index, delta: kind.delta(text) })
}

/// Parse one SSE `data` payload, lending the text of a compact delta instead of allocating it:
/// from `data` itself when the JSON string has no escapes, else from `scratch`.
///
/// # Errors
/// [`ModelError::Protocol`] when the payload is not a JSON event object.
pub fn decode_borrowed<'a>(data: &'a str, scratch: &'a mut Scratch) -> Result<Decoded<'a>, ModelError> {
    let Some((index, kind, lent)) = compact_delta(data, scratch) else {
        return serde(data).map(Decoded::Event);
    };
    let text = match lent {
        Lent::Plain(range) => &data[range],
        Lent::Unescaped => scratch.text.as_str(),
    };
    Ok(Decoded::Text { index, kind, text })
}

/// Decode one payload and push it into `asm`: [`decode`] then [`Assembler::push`], without
/// allocating for a compact delta ([`decode_borrowed`] then [`Assembler::push_text`]).
///
/// # Errors
/// [`ModelError::Protocol`] for a payload that is not a JSON event, or an event the
/// assembler refuses.
pub fn apply<'a>(asm: &mut Assembler, data: &'a str, scratch: &'a mut Scratch) -> Result<Step<'a>, ModelError> {
    decode_borrowed(data, scratch)?.apply(asm)
}

/// The exact bytes that start a compact delta event as the API frames it. The `event:` line
/// is optional (the name is not used).
const EVENT_LINE: &[u8] = b"event: content_block_delta\n";
const DATA_LINE: &[u8] = b"data: {\"type\":\"content_block_delta\",\"index\":";
/// What ends one: the delta object, the event object, the `data:` line, the blank line.
const EVENT_END: &[u8] = b"}}\n\n";

/// A whole compact delta event at the front of `text`, framed exactly as the API writes it
/// (an optional `event: content_block_delta` line, the compact `data:` line, a blank line, LF
/// line ends): how many bytes it spans and the decoded event. `None` for anything else; the
/// SSE parser and [`decode`] then read it.
pub fn framed_delta<'a>(text: &'a str, scratch: &'a mut Scratch) -> Option<(usize, Decoded<'a>)> {
    let bytes = text.as_bytes();
    let mut at = if bytes.starts_with(EVENT_LINE) { EVENT_LINE.len() } else { 0 };
    if !bytes[at..].starts_with(DATA_LINE) {
        return None;
    }
    at += DATA_LINE.len();
    let (index, kind, quote) = delta_head(bytes, at)?;
    let (lent, end) = json_string(text, quote, &mut scratch.text)?;
    if !bytes[end..].starts_with(EVENT_END) {
        return None;
    }
    let text = match lent {
        Lent::Plain(range) => &text[range],
        Lent::Unescaped => scratch.text.as_str(),
    };
    Some((end + EVENT_END.len(), Decoded::Text { index, kind, text }))
}

/// A [`Handler`] for the SSE parser that decodes each event of a Messages stream and lends
/// it to a callback: compact deltas straight from the raw bytes ([`framed_delta`]), anything
/// else from the parser's events ([`decode_borrowed`]).
pub struct Reader<'s, F> {
    scratch: &'s mut Scratch,
    on_event: F,
}

impl<'s, F> Reader<'s, F>
where
    F: FnMut(Result<Decoded<'_>, ModelError>) -> ControlFlow<()>,
{
    /// A reader lending unescaped text from `scratch`. Breaking in `on_event` stops the feed.
    pub fn new(scratch: &'s mut Scratch, on_event: F) -> Self {
        Self { scratch, on_event }
    }
}

impl<F> Handler for Reader<'_, F>
where
    F: FnMut(Result<Decoded<'_>, ModelError>) -> ControlFlow<()>,
{
    fn event(&mut self, event: Event<'_>) -> ControlFlow<()> {
        (self.on_event)(decode_borrowed(event.data, self.scratch))
    }

    fn whole_event(&mut self, text: &str) -> Option<(usize, ControlFlow<()>)> {
        let (used, decoded) = framed_delta(text, self.scratch)?;
        Some((used, (self.on_event)(Ok(decoded))))
    }
}

fn serde(data: &str) -> Result<StreamEvent, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Protocol(format!("bad event JSON ({e}): {}", snippet(data))))
}

const DELTA_PREFIX: &str = r#"{"type":"content_block_delta","index":"#;
const DELTA_TYPE: &str = r#","delta":{"type":""#;
const TEXT: &str = r#"text_delta","text":"#;
const INPUT_JSON: &str = r#"input_json_delta","partial_json":"#;
const THINKING: &str = r#"thinking_delta","thinking":"#;

/// Where a decoded string is: a range of the input (it had no escapes), or the scratch bytes.
enum Lent {
    Plain(Range<usize>),
    Unescaped,
}

/// The compact delta form: its index, kind and text, or `None` for serde to handle.
fn compact_delta(data: &str, scratch: &mut Scratch) -> Option<(usize, TextKind, Lent)> {
    let bytes = data.as_bytes();
    if !data.starts_with(DELTA_PREFIX) {
        return None;
    }
    let (index, kind, quote) = delta_head(bytes, DELTA_PREFIX.len())?;
    let (lent, end) = json_string(data, quote, &mut scratch.text)?;
    let rest = bytes[end..].strip_prefix(b"}}")?;
    if !rest.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    Some((index, kind, lent))
}

/// From the index digits at `at` to the string of a compact delta: the index, the kind, and
/// where the string literal starts.
#[inline]
fn delta_head(bytes: &[u8], at: usize) -> Option<(usize, TextKind, usize)> {
    let rest = &bytes[at..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || (digits > 1 && rest[0] == b'0') || digits > 18 {
        return None;
    }
    let index = rest[..digits].iter().fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
    let rest = rest[digits..].strip_prefix(DELTA_TYPE.as_bytes())?;
    let (kind, key) = match rest.first()? {
        b't' if rest.starts_with(TEXT.as_bytes()) => (TextKind::Text, TEXT),
        b'i' if rest.starts_with(INPUT_JSON.as_bytes()) => (TextKind::InputJson, INPUT_JSON),
        b't' if rest.starts_with(THINKING.as_bytes()) => (TextKind::Thinking, THINKING),
        _ => return None,
    };
    Some((index, kind, bytes.len() - rest.len() + key.len()))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is `"`, `\` or a control character (below 0x20),
/// and maybe of some bytes after the first such byte, never before it: the lowest set bit
/// marks the first byte that ends a run of plain string characters.
#[inline]
fn specials(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x;
    (zero_byte(quote) | zero_byte(backslash) | (word.wrapping_sub(ONES * 0x20) & !word)) & HIGHS
}

/// The eight bytes at `at`, if there are eight.
#[inline]
fn word_at(bytes: &[u8], at: usize) -> Option<[u8; 8]> {
    let mut word = [0; 8];
    word.copy_from_slice(bytes.get(at..at + 8)?);
    Some(word)
}

/// The first byte at or after `at` that is `"`, `\` or a control character.
#[inline]
fn find_special(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(word) = word_at(bytes, at) {
        let found = specials(u64::from_le_bytes(word));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|i| at + i)
}

/// What each byte after a backslash stands for in a JSON string: the byte it unescapes to,
/// or 0 for `u` (four hex digits follow) and for anything JSON does not allow.
const UNESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The JSON string literal whose opening quote is at byte `quote` of `text`: where its value
/// is and where the literal ends. Without escapes the value is a range of `text`; with them it
/// is unescaped into `out`, run by run (each run a slice of `text`, so no UTF-8 check is
/// needed). `None` for anything serde would reject (raw control characters, bad escapes, lone
/// surrogates) or an unterminated literal, so that serde reports the error.
fn json_string(text: &str, quote: usize, out: &mut String) -> Option<(Lent, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(quote) != Some(&b'"') {
        return None;
    }
    let start = quote + 1;
    let mut at = find_special(bytes, start)?;
    if bytes[at] == b'"' {
        return Some((Lent::Plain(start..at), at + 1));
    }
    out.clear();
    let mut run = start;
    loop {
        // `bytes[at]` ends the plain run from `run`: an ASCII byte, so a character boundary.
        out.push_str(&text[run..at]);
        match bytes[at] {
            b'"' => return Some((Lent::Unescaped, at + 1)),
            b'\\' => {
                let escaped = *bytes.get(at + 1)?;
                let byte = UNESCAPE[usize::from(escaped)];
                if byte != 0 {
                    out.push(char::from(byte));
                    run = at + 2;
                } else if escaped == b'u' {
                    let (ch, used) = unicode_escape(&bytes[at..])?;
                    out.push(ch);
                    run = at + used;
                } else {
                    return None;
                }
            }
            // JSON forbids raw control characters inside strings: let serde report them.
            _ => return None,
        }
        at = find_special(bytes, run)?;
    }
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, at the start of `bytes`: the character and
/// the bytes it took.
fn unicode_escape(bytes: &[u8]) -> Option<(char, usize)> {
    let first = hex4(bytes.get(2..6)?)?;
    match first {
        0xD800..=0xDBFF => {
            if bytes.get(6..8)? != b"\\u" {
                return None;
            }
            let second = hex4(bytes.get(8..12)?)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return None;
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(first)?, 6)),
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
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
    use crate::protocol::Delta;

    fn delta(index: usize, delta: Delta) -> StreamEvent {
        StreamEvent::ContentBlockDelta { index, delta }
    }

    /// The fast path must agree with serde on everything it accepts.
    fn same_as_serde(data: &str) -> Option<StreamEvent> {
        let mut scratch = Scratch::new();
        let fast = compact_delta(data, &mut scratch).map(|(index, kind, lent)| {
            let text = match lent {
                Lent::Plain(range) => data[range].to_owned(),
                Lent::Unescaped => scratch.text.clone(),
            };
            StreamEvent::ContentBlockDelta { index, delta: kind.delta(text) }
        });
        if let Some(event) = &fast {
            assert_eq!(decode(data).as_ref(), Ok(event), "{data}");
            let mut scratch = Scratch::new();
            assert_eq!(decode_borrowed(data, &mut scratch).map(Decoded::into_owned).as_ref(), Ok(event), "{data}");
            assert_eq!(serde_json::from_str::<StreamEvent>(data).ok().as_ref(), Some(event), "{data}");
        }
        fast
    }

    #[test]
    fn compact_deltas_take_the_fast_path() {
        let cases = [
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
                delta(0, Delta::TextDelta { text: "Hello".into() }),
            ),
            (
                r#"{"type":"content_block_delta","index":12,"delta":{"type":"input_json_delta","partial_json":"{\"a\": \"b\\n"}}   "#,
                delta(12, Delta::InputJsonDelta { partial_json: "{\"a\": \"b\\n".into() }),
            ),
            (
                r#"{"type":"content_block_delta","index":3,"delta":{"type":"thinking_delta","thinking":"925 ÷ 5 \u00f7 \ud83d\ude00"}}"#,
                delta(3, Delta::ThinkingDelta { thinking: "925 ÷ 5 ÷ 😀".into() }),
            ),
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
                delta(0, Delta::TextDelta { text: String::new() }),
            ),
        ];
        for (data, want) in cases {
            assert_eq!(same_as_serde(data), Some(want.clone()), "{data}");
            assert_eq!(decode(data).unwrap(), want);
        }
    }

    #[test]
    fn anything_else_goes_to_serde() {
        let fallbacks = [
            // Other spacing, key order, delta types, trailing data, bad numbers, raw controls.
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
            r#"{"type":"message_stop"}"#,
        ];
        for data in fallbacks {
            assert_eq!(same_as_serde(data), None, "{data}");
        }
        assert_eq!(decode(fallbacks[0]).unwrap(), delta(0, Delta::TextDelta { text: "x".into() }));
        assert_eq!(decode(fallbacks[2]).unwrap(), delta(0, Delta::SignatureDelta { signature: "s".into() }));
        for bad in &fallbacks[4..] {
            if *bad != r#"{"type":"message_stop"}"# {
                assert!(matches!(decode(bad), Err(ModelError::Protocol(_))), "{bad}");
            }
        }
    }

    #[test]
    fn escapes_decode_like_serde() {
        let literals = [
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u0041\u00e9\u00E9\u2713\ud83d\ude00 ok""#,
            r#""\u0000 nul""#,
            r#""lone \ud800 lead""#,
            r#""lone \udc00 trail""#,
            r#""bad pair \ud83d\u0041""#,
            r#""short \u12""#,
            r#""not hex \u12G4""#,
            r#""ends in backslash \"#,
        ];
        for literal in literals {
            let data = format!("{DELTA_PREFIX}0{DELTA_TYPE}{TEXT}{literal}}}}}");
            let fast = same_as_serde(&data);
            let slow = serde_json::from_str::<StreamEvent>(&data).ok();
            assert_eq!(fast, slow, "{literal}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_encoded_string_round_trips(text in ".*") {
            let data = format!("{DELTA_PREFIX}7{DELTA_TYPE}{INPUT_JSON}{}}}}}", serde_json::to_string(&text).unwrap());
            proptest::prop_assert_eq!(same_as_serde(&data), Some(delta(7, Delta::InputJsonDelta { partial_json: text })));
        }

        #[test]
        fn any_literal_agrees_with_serde(body in r#"[a\\"/ubfnrtDd8Ee0-9\x00\x1f é]{0,24}"#) {
            let data = format!("{DELTA_PREFIX}0{DELTA_TYPE}{THINKING}\"{body}\"}}}}");
            // same_as_serde asserts agreement whenever the fast path answers.
            if same_as_serde(&data).is_none()
                && let Ok(StreamEvent::ContentBlockDelta { .. }) = serde_json::from_str::<StreamEvent>(&data)
            {
                proptest::prop_assert!(body.contains('"'), "fast path refused valid {data}");
            }
        }
    }

    #[test]
    fn plain_text_is_lent_from_the_payload_and_escaped_text_from_scratch() {
        let plain = r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"plain"}}"#;
        let mut scratch = Scratch::new();
        let Ok(Decoded::Text { index: 2, kind: TextKind::Text, text }) = decode_borrowed(plain, &mut scratch) else {
            panic!("not a compact text delta")
        };
        assert_eq!(text, "plain");
        assert!(plain.as_bytes().as_ptr_range().contains(&text.as_ptr()));
        let escaped =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#;
        let decoded = decode_borrowed(escaped, &mut scratch).unwrap();
        assert_eq!(decoded, Decoded::Text { index: 0, kind: TextKind::InputJson, text: r#"{"a""# });
        assert_eq!(scratch.text, r#"{"a""#);
        let ping = decode_borrowed(r#"{"type":"ping"}"#, &mut scratch).unwrap();
        assert_eq!(ping, Decoded::Event(StreamEvent::Ping));
    }

    #[test]
    fn apply_pushes_like_decode_then_push() {
        let events = [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb"}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "c"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ];
        let mut fast = Assembler::new();
        let mut owned = Assembler::new();
        let mut steps = Vec::new();
        for data in events {
            let mut scratch = Scratch::new();
            let step = apply(&mut fast, data, &mut scratch).unwrap();
            assert_eq!(step, owned.push(decode(data).unwrap()).unwrap(), "{data}");
            steps.push(format!("{step:?}"));
        }
        assert_eq!(
            steps,
            ["Quiet", r#"Text { index: 0, text: "a\nb" }"#, r#"Text { index: 0, text: "c" }"#, "BlockDone(0)"]
        );
        assert_eq!(fast.finish(), owned.finish());
        let mut scratch = Scratch::new();
        assert_eq!(
            apply(&mut Assembler::new(), events[1], &mut scratch),
            Err(ModelError::Protocol("event names block 0, which never started".into()))
        );
    }

    #[test]
    fn the_word_scan_finds_the_first_special_byte() {
        let naive = |bytes: &[u8], at: usize| bytes[at..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        // Every byte value at every offset of a 19-byte string, after every start.
        for special in 0..=255u8 {
            for pos in 0..19 {
                let mut bytes = vec![b'a'; 19];
                // Bytes just below and above the special one probe for borrow mistakes.
                bytes[pos] = special;
                if pos + 1 < 19 {
                    bytes[pos + 1] = b'"';
                }
                for at in 0..=pos {
                    assert_eq!(
                        find_special(&bytes, at),
                        naive(&bytes, at).map(|i| at + i),
                        "{special:#x} at {pos} from {at}"
                    );
                }
            }
        }
        assert_eq!(find_special(b"\xC3\xA9\x1F\x7F\x80\xFF\x21\x5C", 0), Some(2));
        assert_eq!(find_special(b"plain text, no end", 0), None);
    }

    #[test]
    fn framed_delta_takes_only_the_exact_framing() {
        let data = r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a\tb"}}"#;
        let with_name = format!("event: content_block_delta\n{data}\n\nevent: ping\n");
        let mut scratch = Scratch::new();
        let want = Decoded::Text { index: 1, kind: TextKind::Text, text: "a\tb" };
        assert_eq!(framed_delta(&with_name, &mut scratch), Some((with_name.len() - 12, want.clone())));
        let bare = format!("{data}\n\n");
        assert_eq!(framed_delta(&bare, &mut scratch), Some((bare.len(), want)));
        // Anything else is left to the parser: other line ends, trailing bytes, another event
        // name, no blank line (yet), another shape of payload.
        let refused = [
            format!("{data}\r\n\r\n"),
            format!("{data} \n\n"),
            format!("{data}\ndata: more\n\n"),
            format!("event: other\n{data}\n\n"),
            format!("{data}\n"),
            format!("{data}\n: comment\n\n"),
            data.replace("text_delta\",\"text", "signature_delta\",\"signature") + "\n\n",
            data.replace("data: ", "data:") + "\n\n",
        ];
        for text in refused {
            assert_eq!(framed_delta(&text, &mut scratch), None, "{text:?}");
        }
    }

    #[test]
    fn protocol_errors_quote_the_payload() {
        let err = decode("{not json").unwrap_err();
        assert_eq!(
            err,
            ModelError::Protocol("bad event JSON (key must be a string at line 1 column 2): {not json".into())
        );
    }
}
