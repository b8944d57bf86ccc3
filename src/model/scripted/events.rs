//! Turning one scripted reply into the [`StreamEvent`]s the real API would send for it, and
//! those into an [`EventStream`].
//!
//! The shapes follow the Anthropic stream: blocks start empty and grow by deltas, a tool's input
//! arrives as JSON fragments, and a reply truncated by `max_tokens` leaves its last tool call
//! unfinished. Which reply to stream, and whether to fail instead, is decided by the caller.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::model::EventStream;
use crate::protocol::{ApiErrorBody, Delta, MessageDeltaBody, MessageStart, StopReason, StreamEvent, Usage};
use crate::scenario::{ScriptBlock, ScriptedResponse};

/// Bytes of text (rounded down to a char boundary) per `text_delta` / `thinking_delta`.
const TEXT_PIECE: usize = 24;
/// Signature of a scripted thinking block that gives none.
const DEFAULT_SIGNATURE: &str = "sig_scripted";

/// One step of a scripted stream.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Item {
    /// Send this event.
    Event(StreamEvent),
    /// Cancel the run's token, then never send anything again (the user pressed Ctrl+C).
    Abort,
}

/// What a reply's events need besides the reply itself.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// `message_start` id.
    pub message_id: String,
    /// Prefix of generated tool ids; block `b` gets `{prefix}_{b}`.
    pub tool_id_prefix: String,
    /// Model named in `message_start`.
    pub model: String,
    /// Prompt tokens reported in `message_start`.
    pub input_tokens: u64,
    /// Cache writes and reads reported in `message_start`, when the script gives them.
    pub cache: (Option<u64>, Option<u64>),
    /// Abort right after block 0 (`abort` with phase `stream`).
    pub abort_after_first_block: bool,
    /// The request's output cap: what a `max_tokens` stop reports as generated when the
    /// script gives no usage (a reply cut at its cap used all of it).
    pub max_tokens: u32,
}

/// How a stream ends.
enum Ending {
    /// `message_delta` and `message_stop`.
    Stop,
    /// An SSE `error` event.
    Error(ApiErrorBody),
    /// Nothing: the connection dropped.
    Cut,
}

/// The items of one reply, in order. `blocks` are `response.content`, checked.
pub(super) fn build(response: &ScriptedResponse, blocks: &[ScriptBlock], plan: &Plan) -> Vec<Item> {
    let (streamed, ending) = match (&response.error, response.cut_after_blocks) {
        (Some(error), _) => (
            error.after_blocks.unwrap_or(0),
            Ending::Error(ApiErrorBody { kind: error.kind.clone(), message: error.message.clone() }),
        ),
        (None, Some(n)) => (n, Ending::Cut),
        (None, None) => (blocks.len(), Ending::Stop),
    };
    let stop_reason = response.stop_reason();
    // A truncated reply ends inside its last tool call; only a normally ending stream truncates.
    let truncated_last = matches!(ending, Ending::Stop)
        && stop_reason.is_truncation()
        && blocks.last().is_some_and(ScriptBlock::is_tool_use);

    let mut items = vec![Item::Event(message_start(plan))];
    for (index, block) in blocks.iter().take(streamed).enumerate() {
        let truncated = truncated_last && index + 1 == blocks.len();
        let id = format!("{}_{index}", plan.tool_id_prefix);
        items.extend(block_events(index, block, &id, truncated).into_iter().map(Item::Event));
        if index == 0 && plan.abort_after_first_block {
            items.push(Item::Abort);
            return items;
        }
    }
    match ending {
        Ending::Stop => {
            let output_tokens = match response.usage.and_then(|u| u.output_tokens) {
                Some(n) => n,
                None if stop_reason == StopReason::MaxTokens => u64::from(plan.max_tokens),
                None => (blocks.iter().map(ScriptBlock::char_len).sum::<usize>() / 4).max(1) as u64,
            };
            items.push(Item::Event(message_delta(stop_reason, output_tokens)));
            items.push(Item::Event(StreamEvent::MessageStop));
        }
        Ending::Error(error) => items.push(Item::Event(StreamEvent::Error { error })),
        Ending::Cut => {}
    }
    items
}

/// Play `items` as a stream, sleeping `delay` before every event after the first.
pub(super) fn into_stream(items: Vec<Item>, delay: Duration, cancel: CancellationToken) -> EventStream {
    let state = (items.into_iter(), true);
    Box::pin(futures::stream::unfold(state, move |(mut items, first)| {
        let cancel = cancel.clone();
        async move {
            match items.next()? {
                Item::Event(event) => {
                    if !first && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok(event), (items, false)))
                }
                Item::Abort => {
                    // Like a real stream the user walked away from: it neither ends nor errs.
                    cancel.cancel();
                    futures::future::pending::<()>().await;
                    None
                }
            }
        }
    }))
}

fn message_start(plan: &Plan) -> StreamEvent {
    StreamEvent::MessageStart {
        message: MessageStart {
            id: Some(plan.message_id.clone()),
            model: Some(plan.model.clone()),
            usage: Some(Usage {
                input_tokens: Some(plan.input_tokens),
                output_tokens: Some(1),
                cache_creation_input_tokens: plan.cache.0,
                cache_read_input_tokens: plan.cache.1,
            }),
            ..MessageStart::default()
        },
    }
}

fn message_delta(stop_reason: StopReason, output_tokens: u64) -> StreamEvent {
    StreamEvent::MessageDelta {
        delta: MessageDeltaBody { stop_reason: Some(stop_reason), stop_sequence: None },
        usage: Some(Usage { output_tokens: Some(output_tokens), ..Usage::default() }),
    }
}

/// The events of one block: start, deltas and (unless `truncated`) stop.
fn block_events(index: usize, block: &ScriptBlock, generated_id: &str, truncated: bool) -> Vec<StreamEvent> {
    let delta = |delta| StreamEvent::ContentBlockDelta { index, delta };
    let mut events = Vec::new();
    match block {
        ScriptBlock::Text { text, citations } => {
            events.push(start(index, json!({"type": "text", "text": ""})));
            events.extend(citations.iter().map(|citation| delta(Delta::CitationsDelta { citation: citation.clone() })));
            events.extend(pieces(text, TEXT_PIECE).map(|piece| delta(Delta::TextDelta { text: piece.to_owned() })));
        }
        ScriptBlock::Server(block) if block.get("type").and_then(Value::as_str) == Some("server_tool_use") => {
            let mut opened = block.clone();
            let input = opened.insert("input".into(), json!({})).unwrap_or_else(|| json!({}));
            events.push(start(index, Value::Object(opened)));
            events.push(delta(Delta::InputJsonDelta { partial_json: input.to_string() }));
        }
        ScriptBlock::Server(block) => events.push(start(index, Value::Object(block.clone()))),
        ScriptBlock::ToolUse { id, name, input } => {
            let id = id.as_deref().unwrap_or(generated_id);
            events.push(start(index, json!({"type": "tool_use", "id": id, "name": name, "input": {}})));
            let json = Value::Object(input.clone()).to_string();
            let sent = if truncated { &json[..floor_boundary(&json, json.len() / 2)] } else { json.as_str() };
            events.extend(
                thirds(sent).into_iter().map(|piece| delta(Delta::InputJsonDelta { partial_json: piece.to_owned() })),
            );
        }
        ScriptBlock::Thinking { thinking, signature } => {
            events.push(start(index, json!({"type": "thinking", "thinking": "", "signature": ""})));
            events.extend(
                pieces(thinking, TEXT_PIECE).map(|piece| delta(Delta::ThinkingDelta { thinking: piece.to_owned() })),
            );
            let signature = signature.as_deref().unwrap_or(DEFAULT_SIGNATURE).to_owned();
            events.push(delta(Delta::SignatureDelta { signature }));
        }
    }
    if !truncated {
        events.push(StreamEvent::ContentBlockStop { index });
    }
    events
}

fn start(index: usize, content_block: Value) -> StreamEvent {
    StreamEvent::ContentBlockStart { index, content_block }
}

/// `text` in pieces of at most `size` bytes, cut on char boundaries (a piece holds at least
/// one char, so a char wider than `size` still makes progress).
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = floor_boundary(rest, size.min(rest.len()));
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// `text` in up to three non-empty pieces of about equal length, cut on char boundaries.
fn thirds(text: &str) -> Vec<&str> {
    let first = floor_boundary(text, text.len() / 3);
    let second = floor_boundary(text, text.len() * 2 / 3);
    [&text[..first], &text[first..second], &text[second..]].into_iter().filter(|p| !p.is_empty()).collect()
}

/// The largest char boundary of `text` at or below `at` (`str::floor_char_boundary` is newer
/// than the crate's minimum Rust version).
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pieces_respect_char_boundaries() {
        let text = "ααααααααααααααααααααααααα!"; // 25 two-byte chars and one byte
        let got: Vec<&str> = pieces(text, TEXT_PIECE).collect();
        assert_eq!(got, vec!["αααααααααααα", "αααααααααααα", "α!"]);
        assert_eq!(pieces("", TEXT_PIECE).count(), 0);
        assert_eq!(pieces("é", 1).collect::<Vec<_>>(), vec!["é"]);
    }

    #[test]
    fn json_splits_into_two_or_three_pieces() {
        assert_eq!(thirds("{}"), vec!["{", "}"]);
        assert_eq!(thirds(r#"{"a":1}"#), vec![r#"{""#, r#"a""#, ":1}"]);
        // Byte 3 falls inside the first "é": the cut moves back to byte 2.
        assert_eq!(thirds(r#"{"éé":1}"#), vec![r#"{""#, "éé", r#"":1}"#]);
    }
}
