//! What the SDK tests read of the requests the mock recorded: a request's conversation as
//! (role, text) pairs, and whether fragments of it come in order. Shared by `tests/it/sdk.rs`
//! (the Python SDK) and `tests/it/ts_sdk.rs` (the TypeScript SDK).

use serde_json::Value;

/// A request's messages as (role, text): a string content, or its text blocks and tool
/// results' texts joined by newlines. Claude Code's `system` role messages are left out.
pub fn transcript(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("user" | "assistant")))
        .map(|m| (m["role"].as_str().unwrap().to_owned(), content_text(&m["content"])))
        .collect()
}

/// The text of a message's content: a string, or its text blocks and tool results' texts
/// joined by newlines.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_owned(),
                Some("tool_result") => content_text(&b["content"]),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether `haystack` holds each of `needles` (role, text fragment) in this order; successive
/// fragments may be in the same message (two prompts a CLI merged into one user message).
pub fn in_order(haystack: &[(String, String)], needles: &[(&str, &str)]) -> bool {
    let (mut message, mut offset) = (0, 0);
    needles.iter().all(|(role, fragment)| {
        while let Some((r, text)) = haystack.get(message) {
            if let Some(at) = text.get(offset..).filter(|_| r == role).and_then(|rest| rest.find(fragment)) {
                offset += at + fragment.len();
                return true;
            }
            (message, offset) = (message + 1, 0);
        }
        false
    })
}

#[test]
fn in_order_finds_fragments_in_order() {
    let history = [("user".to_owned(), "one two".to_owned()), ("assistant".to_owned(), "three".to_owned())];
    assert!(in_order(&history, &[("user", "one"), ("user", "two"), ("assistant", "three")]));
    assert!(!in_order(&history, &[("user", "two"), ("user", "one")]));
    assert!(!in_order(&history, &[("assistant", "three"), ("user", "one")]));
    assert!(!in_order(&history, &[("user", "three")]));
}
