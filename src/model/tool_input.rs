//! The gathered input JSON of a tool call, parsed when its block stops.
//!
//! Most tool inputs are flat objects of strings (`{"file_path": "…", "content": "…"}`), and the
//! large ones are those carrying a whole file for Write or Edit, dense with escapes. That shape
//! is read directly, each value unescaped in one pass ([`crate::model::unescape`]); anything
//! else (numbers, booleans, nesting, escaped keys, errors) goes to serde. Both give the same
//! value for the same text; the tests check it against serde.

use memchr::memchr;
use serde_json::{Map, Value};

use crate::model::unescape::unescape_into;

/// Parse a tool's input JSON.
///
/// # Errors
/// serde's error when the text is not one JSON value.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    match flat_strings(text.as_bytes()) {
        Some(map) => Ok(Value::Object(map)),
        None => serde_json::from_str(text),
    }
}

/// `bytes` as an object whose values are all strings and whose keys need no unescaping, or
/// `None` for serde to read.
fn flat_strings(bytes: &[u8]) -> Option<Map<String, Value>> {
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    let mut map = Map::new();
    if bytes.get(at) == Some(&b'}') {
        return ends(bytes, at + 1).then_some(map);
    }
    loop {
        let (key, after) = plain_key(bytes, at)?;
        at = skip_space(bytes, after);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let mut value = String::new();
        at = unescape_into(bytes, at + 1, &mut value)?;
        // The unescaper reserved room for all the text after the value's start.
        if value.capacity() > 2 * value.len() + 64 {
            value.shrink_to_fit();
        }
        map.insert(key, Value::String(value));
        at = skip_space(bytes, at);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return ends(bytes, at + 1).then_some(map),
            _ => return None,
        }
    }
}

/// A key literal at `at` with no escapes, control characters or invalid UTF-8: the key and
/// where the literal ends.
fn plain_key(bytes: &[u8], at: usize) -> Option<(String, usize)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let rest = &bytes[at + 1..];
    let len = memchr(b'"', rest)?;
    let key = &rest[..len];
    if key.iter().any(|&b| b == b'\\' || b < 0x20) {
        return None;
    }
    Some((std::str::from_utf8(key).ok()?.to_owned(), at + 1 + len + 1))
}

/// The first byte at or after `at` that is not JSON whitespace.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Whether only whitespace follows `at`.
fn ends(bytes: &[u8], at: usize) -> bool {
    skip_space(bytes, at) == bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The fast path, when it answers, gives what serde gives; `parse` always does.
    fn agrees(text: &str) -> bool {
        let fast = flat_strings(text.as_bytes());
        let serde = serde_json::from_str::<Value>(text).ok();
        if let Some(map) = &fast {
            assert_eq!(Some(Value::Object(map.clone())), serde, "{text:?}");
        }
        assert_eq!(parse(text).ok(), serde, "{text:?}");
        fast.is_some()
    }

    #[test]
    fn flat_string_objects_take_the_fast_path() {
        for text in [
            r#"{"file_path":"/tmp/a.txt","content":"line one\nline \"two\"\t\u00e9 ✓\n"}"#,
            " {\n  \"pattern\" : \"fn \\\\w+\" ,\"path\":\"src\"\r\n}\t",
            "{}",
            " { } ",
            r#"{"a":"1","a":"2"}"#,
        ] {
            assert!(agrees(text), "{text}");
        }
        assert_eq!(parse(r#"{"a":"1","a":"2"}"#).unwrap(), serde_json::json!({"a": "2"}));
    }

    #[test]
    fn anything_else_goes_to_serde() {
        for text in [
            r#"{"command":"ls","timeout":1000}"#,
            r#"{"edits":[{"old":"a"}]}"#,
            r#"{"flag":true}"#,
            r#"{"k\u0065y":"escaped key"}"#,
            r#"{"a":"1",}"#,
            r#"{"a":"1"} x"#,
            r#"{"a":"1""#,
            r#"{"a" "1"}"#,
            r#"{"a":"bad \q escape"}"#,
            "[\"not an object\"]",
            "",
            "{\"a\":\"1\"}{}",
        ] {
            assert!(!agrees(text), "{text}");
        }
    }

    proptest! {
        #[test]
        fn any_flat_object_of_strings_reads_like_serde(
            pairs in prop::collection::vec(("[a-z_]{1,12}", ".*"), 0..5),
            space in prop::sample::select(vec!["", " ", "\n  ", "\t"]),
        ) {
            let body: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{}{space}", serde_json::to_string(v).unwrap()))
                .collect();
            let text = format!("{space}{{{}}}{space}", body.join(","));
            prop_assert!(agrees(&text), "{}", text);
        }

        #[test]
        fn any_text_agrees_with_serde(text in r#"[{}":, a\\n\x00é0-9tru\[\]]{0,30}"#) {
            agrees(&text);
        }
    }
}
