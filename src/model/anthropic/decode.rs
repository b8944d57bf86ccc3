//! One SSE `data` payload to one [`StreamEvent`], dispatched on its JSON `type`.
//!
//! Nearly every event of a reply is a `content_block_delta` carrying a few characters of text,
//! thinking or tool-input JSON, and the API writes those in one fixed compact form:
//! `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`.
//! [`decode`] reads exactly that form directly, unescaping the string in the same pass that
//! finds its end, and hands everything else, any other spacing or key order included, to
//! serde. Both paths give the same event for the same input; the tests check it.

use crate::model::ModelError;
use crate::protocol::{Delta, StreamEvent};

/// Parse one SSE `data` payload.
///
/// # Errors
/// [`ModelError::Protocol`] when the payload is not a JSON event object.
pub fn decode(data: &str) -> Result<StreamEvent, ModelError> {
    if let Some(event) = compact_delta(data) {
        return Ok(event);
    }
    serde_json::from_str(data).map_err(|e| ModelError::Protocol(format!("bad event JSON ({e}): {}", snippet(data))))
}

const DELTA_PREFIX: &str = r#"{"type":"content_block_delta","index":"#;
const TEXT: &str = r#","delta":{"type":"text_delta","text":"#;
const INPUT_JSON: &str = r#","delta":{"type":"input_json_delta","partial_json":"#;
const THINKING: &str = r#","delta":{"type":"thinking_delta","thinking":"#;

/// The compact delta form, or `None` for serde to handle.
fn compact_delta(data: &str) -> Option<StreamEvent> {
    let rest = data.strip_prefix(DELTA_PREFIX)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits > 1 && rest.starts_with('0')) {
        return None;
    }
    let index: usize = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    let (make, rest): (fn(String) -> Delta, &str) = if let Some(rest) = rest.strip_prefix(TEXT) {
        (|text| Delta::TextDelta { text }, rest)
    } else if let Some(rest) = rest.strip_prefix(INPUT_JSON) {
        (|partial_json| Delta::InputJsonDelta { partial_json }, rest)
    } else if let Some(rest) = rest.strip_prefix(THINKING) {
        (|thinking| Delta::ThinkingDelta { thinking }, rest)
    } else {
        return None;
    };
    let (value, rest) = json_string(rest)?;
    let rest = rest.strip_prefix("}}")?;
    if !rest.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    Some(StreamEvent::ContentBlockDelta { index, delta: make(value) })
}

/// A JSON string literal at the start of `s`: its value and what follows it. `None` for
/// anything serde would reject (raw control characters, bad escapes, lone surrogates) or an
/// unterminated literal, so that serde reports the error.
fn json_string(s: &str) -> Option<(String, &str)> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    // The literal runs to the end of the payload but for `}}`: a tight upper bound.
    let mut out = String::with_capacity(s.len());
    let mut at = 1;
    loop {
        let stop = at + memchr::memchr2(b'"', b'\\', &bytes[at..])?;
        let plain = &s[at..stop];
        // JSON forbids raw control characters inside strings: let serde report them.
        if plain.bytes().fold(false, |seen, b| seen | (b < 0x20)) {
            return None;
        }
        out.push_str(plain);
        let (ch, used) = match bytes[stop] {
            b'"' => return Some((out, &s[stop + 1..])),
            b'\\' => match bytes.get(stop + 1)? {
                b'"' => ('"', 2),
                b'\\' => ('\\', 2),
                b'/' => ('/', 2),
                b'b' => ('\u{8}', 2),
                b'f' => ('\u{c}', 2),
                b'n' => ('\n', 2),
                b'r' => ('\r', 2),
                b't' => ('\t', 2),
                b'u' => unicode_escape(&bytes[stop..])?,
                _ => return None,
            },
            _ => return None,
        };
        out.push(ch);
        at = stop + used;
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

    fn delta(index: usize, delta: Delta) -> StreamEvent {
        StreamEvent::ContentBlockDelta { index, delta }
    }

    /// The fast path must agree with serde on everything it accepts.
    fn same_as_serde(data: &str) -> Option<StreamEvent> {
        let fast = compact_delta(data);
        if let Some(event) = &fast {
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
            let data = format!("{DELTA_PREFIX}0{TEXT}{literal}}}}}");
            let fast = same_as_serde(&data);
            let slow = serde_json::from_str::<StreamEvent>(&data).ok();
            assert_eq!(fast, slow, "{literal}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_encoded_string_round_trips(text in ".*") {
            let data = format!("{DELTA_PREFIX}7{INPUT_JSON}{}}}}}", serde_json::to_string(&text).unwrap());
            proptest::prop_assert_eq!(same_as_serde(&data), Some(delta(7, Delta::InputJsonDelta { partial_json: text })));
        }

        #[test]
        fn any_literal_agrees_with_serde(body in r#"[a\\"/ubfnrtDd8Ee0-9\x00\x1f é]{0,24}"#) {
            let data = format!("{DELTA_PREFIX}0{THINKING}\"{body}\"}}}}");
            // same_as_serde asserts agreement whenever the fast path answers.
            if same_as_serde(&data).is_none()
                && let Ok(StreamEvent::ContentBlockDelta { .. }) = serde_json::from_str::<StreamEvent>(&data)
            {
                proptest::prop_assert!(body.contains('"'), "fast path refused valid {data}");
            }
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
