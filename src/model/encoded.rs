//! Request bodies assembled from each message's JSON, written once, and grown in place.
//!
//! The Messages, Chat Completions and Responses APIs are stateless, so every request carries
//! the whole history; encoding it anew each turn made a session's CPU grow as the square of
//! its length (serde_json writing the body was most of a late turn). The messages behind a
//! [`Transcript`]'s `Arc`s never change in place — an append adds one, a merge into the last
//! one or a rewrite (collapse, compaction) replaces the `Arc` — so a message's JSON can be
//! kept beside it, keyed by the `Arc` itself: each message is encoded once (the Messages
//! API's last message once more, with the cache breakpoint the kept bytes never include).
//!
//! Several histories may share one client (a subagent's beside its parent's, side requests).
//! Each is a *lane*: the entries of its messages in order, found by the `Arc` of its first
//! message. A request walks its lane comparing pointers, reuses the entries up to the first
//! message that differs (a merge into the last message, or the end), and encodes the rest. A
//! rewrite (collapse, compaction) changes every `Arc`, the first included, and so starts a
//! new lane. Every [`KEEP_FOR`] requests, lanes that many requests have not used are dropped,
//! so a finished history is freed.
//!
//! Every provider's body ends with its history (`"messages": [...]}` or `"input": [...]}`),
//! so a body is three parts: the *head* (every other field, and the array's `[`), the kept
//! messages joined by commas, and the *tail* (what is not kept: the Messages API's marked
//! last message) and `]}`. The buffer the last body was written into comes back from the
//! HTTP client ([`BodyBuffer`]) still holding that body; when the next body has the same head
//! and continues the same lane, the bytes of the messages both share are left where they
//! are, and only what follows is written. A late request of a long session then costs what
//! it adds, not a copy of the megabyte before it.
//!
//! [`Transcript`]: crate::protocol::Transcript

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::body_buffer::BodyBuffer;
use crate::protocol::Message;

/// How many requests an unused lane is kept for (at least; swept every as many requests).
pub const KEEP_FOR: u64 = 16;

/// The kept JSON of the messages recent requests carried, and the buffer of the last body.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    /// Keyed by the address behind the lane's first `Arc`, which the lane's own clone keeps
    /// alive, so an address is never reused while its lane exists.
    lanes: HashMap<usize, Lane>,
    /// Requests assembled so far.
    requests: u64,
    /// The buffer bodies are written into, back from the HTTP client after each request.
    pub(crate) buffer: BodyBuffer,
    /// What the last body assembled holds, to grow it in place.
    last: Option<LastBody>,
    /// How many bytes the last body assembled wrote (the rest it found in place).
    #[cfg(test)]
    written: usize,
}

/// The layout of the last body assembled.
#[derive(Debug, Clone, Copy)]
struct LastBody {
    /// Its buffer's address and length: a buffer that comes back with both is that body.
    address: usize,
    len: usize,
    /// Its lane's key, and how many of that lane's entries it holds after its head.
    lane: usize,
    entries: usize,
    head_len: usize,
}

/// One history's kept messages, in order.
#[derive(Debug)]
struct Lane {
    entries: Vec<Entry>,
    /// The request that last used this lane.
    used: u64,
}

#[derive(Debug)]
struct Entry {
    /// Holds the message, so its address stays its own.
    message: Arc<Message>,
    /// What the message is in the body's array: one JSON value, several joined by commas
    /// (Chat Completions' `tool` messages, Responses' input items), or nothing.
    json: Box<str>,
    /// Where the entry ends, counted from just after the array's `[`: the bytes of the
    /// entries up to this one and the commas between them.
    end: usize,
}

fn key(message: &Arc<Message>) -> usize {
    Arc::as_ptr(message) as usize
}

/// The head of a body: `body_with_no_history`, a provider's body serialized with its last
/// field (the history) an empty array, without the closing `]}`.
///
/// # Panics
/// If the body does not end with an empty array, which would be a provider's bug: its
/// history must be its last field.
pub fn head(mut body_with_no_history: Vec<u8>) -> Vec<u8> {
    assert!(body_with_no_history.ends_with(b"[]}"), "a body's last field is its history");
    body_with_no_history.truncate(body_with_no_history.len() - 2);
    body_with_no_history
}

/// `values` as array elements joined by commas: what one message is in a body where it
/// becomes several items.
///
/// # Errors
/// A value serde_json cannot write (none it built itself).
pub fn joined(values: &[serde_json::Value]) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(value)?);
    }
    Ok(out)
}

/// An empty array, the history's place in the body [`head`] is made of.
#[derive(Debug, Clone, Copy)]
pub struct NoHistory;

impl serde::Serialize for NoHistory {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde::ser::SerializeSeq::end(serializer.serialize_seq(Some(0))?)
    }
}

impl EncodedMessages {
    /// The next request body, ready to send: `encode` writes it with the kept messages of
    /// `kept` (locked while it does), and the bytes hand their buffer back to `kept` once the
    /// HTTP client drops them. The one way every model client turns a request into a body.
    ///
    /// # Errors
    /// Whatever `encode` returns.
    pub(crate) fn next_body<E>(
        kept: &std::sync::Mutex<EncodedMessages>,
        encode: impl FnOnce(&mut EncodedMessages) -> Result<Vec<u8>, E>,
    ) -> Result<bytes::Bytes, E> {
        let mut encoded = kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let body = encode(&mut encoded)?;
        Ok(encoded.buffer.send(body))
    }

    /// The body of one request: `head` (ending in an element of the array when `lead`, as
    /// Chat Completions' `system` message, else in its `[`), then each of `messages` as
    /// `encode` makes it (encoded only for the messages its lane does not hold yet), joined
    /// by commas, then what `tail` writes (told whether an element precedes it, so it knows
    /// to write a comma first), then `]}`.
    ///
    /// Every [`KEEP_FOR`] requests, lanes no request has used for that long are dropped first.
    ///
    /// # Errors
    /// The first error of `encode` or `tail`.
    pub fn assemble(
        &mut self,
        head: &[u8],
        lead: bool,
        messages: &[Arc<Message>],
        mut encode: impl FnMut(&Message) -> Result<String, serde_json::Error>,
        tail: impl FnOnce(&mut Vec<u8>, bool) -> Result<(), serde_json::Error>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        self.requests += 1;
        let now = self.requests;
        if now.is_multiple_of(KEEP_FOR) {
            self.lanes.retain(|_, lane| now - lane.used <= KEEP_FOR);
        }
        let last = self.last.take();
        let mut body = self.buffer.take();
        let (lane_key, entries, same): (usize, &[Entry], usize) = match messages.first() {
            None => (0, &[], 0),
            Some(first) => {
                let lane_key = key(first);
                let lane = self.lanes.entry(lane_key).or_insert_with(|| Lane { entries: Vec::new(), used: now });
                lane.used = now;
                let same =
                    lane.entries.iter().zip(messages).take_while(|(entry, m)| Arc::ptr_eq(&entry.message, m)).count();
                lane.entries.truncate(same);
                for message in &messages[same..] {
                    let json = encode(message)?.into_boxed_str();
                    let before = lane.entries.last().map_or(0, |entry| entry.end);
                    let comma = usize::from(before > 0 && !json.is_empty());
                    let end = before + comma + json.len();
                    lane.entries.push(Entry { message: Arc::clone(message), json, end });
                }
                (lane_key, &lane.entries, same)
            }
        };
        // The entries the last body holds that this one starts with, when the buffer is that
        // body, it continued this lane and its head is this head.
        let kept = match last {
            Some(last)
                if body.as_ptr() as usize == last.address
                    && body.len() == last.len
                    && last.lane == lane_key
                    && last.head_len == head.len()
                    && body.get(..head.len()) == Some(head) =>
            {
                same.min(last.entries)
            }
            _ => 0,
        };
        // Where the kept entries end, counted from just after the array's `[` (after the lead
        // element when there is one, and the comma that follows it once an entry has bytes).
        let kept_end = kept.checked_sub(1).map_or(0, |i| entries[i].end);
        if kept > 0 {
            body.truncate(head.len() + usize::from(lead && kept_end > 0) + kept_end);
        } else {
            body.clear();
            body.reserve(last.map_or(0, |last| last.len) + 64 * 1024);
            body.extend_from_slice(head);
        }
        #[cfg(test)]
        let found = if kept > 0 { body.len() } else { 0 };
        let mut written = lead || kept_end > 0;
        for entry in &entries[kept..] {
            if entry.json.is_empty() {
                continue;
            }
            if written {
                body.push(b',');
            }
            body.extend_from_slice(entry.json.as_bytes());
            written = true;
        }
        tail(&mut body, written)?;
        body.extend_from_slice(b"]}");
        #[cfg(test)]
        {
            self.written = body.len() - found;
        }
        self.last = Some(LastBody {
            address: body.as_ptr() as usize,
            len: body.len(),
            lane: lane_key,
            entries: entries.len(),
            head_len: head.len(),
        });
        Ok(body)
    }

    /// How many messages are kept, in all lanes.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.values().map(|lane| lane.entries.len()).sum()
    }
}

/// A stand-in for the HTTP client in the providers' tests: it drops most bodies at once, so
/// their buffer is back for the next, and holds every third until after the next is sent, so
/// that one is written into a new buffer and the one that then comes back is not the last.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct TestClient {
    sent: usize,
    held: Option<bytes::Bytes>,
}

#[cfg(test)]
impl TestClient {
    /// Send `body`, assembled by `kept`.
    pub(crate) fn send(&mut self, kept: &EncodedMessages, body: Vec<u8>) {
        let bytes = kept.buffer.send(body);
        self.sent += 1;
        let older = self.held.take();
        if self.sent.is_multiple_of(3) {
            self.held = Some(bytes);
        } else {
            drop(bytes);
        }
        drop(older);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Role, Transcript};

    fn assistant(text: &str) -> Message {
        Message { role: Role::Assistant, content: vec![ContentBlock::text(text)] }
    }

    /// A provider whose messages are their text as a JSON string (nothing for no text), the
    /// head `{"h":[` or with a lead element.
    struct Provider {
        encoded: Vec<String>,
        lead: bool,
    }

    impl Provider {
        fn body(&mut self, kept: &mut EncodedMessages, history: &Transcript, tail: &str) -> String {
            let head: &[u8] = if self.lead { br#"{"h":["lead""# } else { br#"{"h":["# };
            let encode = |message: &Message| {
                let text: String = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                self.encoded.push(text.clone());
                Ok(if text.is_empty() { String::new() } else { format!("\"{text}\"") })
            };
            let tail = |body: &mut Vec<u8>, comma: bool| {
                if !tail.is_empty() {
                    if comma {
                        body.push(b',');
                    }
                    body.extend_from_slice(tail.as_bytes());
                }
                Ok(())
            };
            String::from_utf8(kept.assemble(head, self.lead, history, encode, tail).unwrap()).unwrap()
        }
    }

    #[test]
    fn a_message_is_encoded_once_and_a_replaced_one_again() {
        let mut history = Transcript::from(vec![Message::user_text("a"), assistant("b")]);
        let mut kept = EncodedMessages::default();
        let mut provider = Provider { encoded: Vec::new(), lead: false };
        assert_eq!(provider.body(&mut kept, &history, ""), r#"{"h":["a","b"]}"#);
        assert_eq!(provider.encoded.len(), 2);
        // A merge into the last message replaces its Arc (the kept entry shares it), so the
        // merged message is encoded anew; the first is reused.
        history.push_merging(assistant("c"));
        assert_eq!(provider.body(&mut kept, &history, "\"t\""), r#"{"h":["a","bc","t"]}"#);
        assert_eq!(provider.encoded.len(), 3);
        assert_eq!(kept.len(), 2, "the merged message replaced its entry in the lane");
        // A rewrite replaces every Arc: all of it is encoded again in a new lane, and the old
        // lane goes once KEEP_FOR requests have passed without it.
        history.edit(|messages| messages[0] = Message::user_text("z"));
        provider.body(&mut kept, &history, "");
        assert_eq!(provider.encoded.len(), 5);
        assert_eq!(kept.len(), 4);
        for _ in 0..2 * KEEP_FOR {
            provider.body(&mut kept, &history, "");
        }
        assert_eq!(kept.len(), 2);
        assert_eq!(provider.encoded.len(), 5, "nothing encoded twice");
    }

    #[test]
    fn two_histories_sharing_a_client_keep_their_entries() {
        let parent = Transcript::from(vec![Message::user_text("parent")]);
        let child = Transcript::from(vec![Message::user_text("child")]);
        let mut kept = EncodedMessages::default();
        let mut provider = Provider { encoded: Vec::new(), lead: false };
        for _ in 0..3 * KEEP_FOR {
            provider.body(&mut kept, &parent, "");
            provider.body(&mut kept, &child, "");
        }
        assert_eq!(kept.len(), 2, "each history's one message, kept throughout");
        assert_eq!(provider.encoded.len(), 2);
    }

    /// A body whose buffer is back is grown in place: the shared messages' bytes stay where
    /// they are and the body is what it would be written whole, with or without a lead
    /// element, empty messages, a tail, and a changed head or a rewrite in between.
    #[test]
    fn a_body_grows_in_place_from_the_last_one_and_is_the_body_written_whole() {
        for lead in [false, true] {
            let mut kept = EncodedMessages::default();
            let mut provider = Provider { encoded: Vec::new(), lead };
            let mut history = Transcript::from(vec![Message::user_text("a")]);
            let whole = |history: &Transcript, tail: &str| {
                Provider { encoded: Vec::new(), lead }.body(&mut EncodedMessages::default(), history, tail)
            };
            let mut addresses = Vec::new();
            for turn in 0..6 {
                // A message with no text is one this provider writes as nothing (as Chat
                // Completions writes a message of thinking only).
                let message = if turn % 2 == 0 {
                    assistant("b")
                } else {
                    let call = ContentBlock::ToolUse {
                        id: format!("t{turn}"),
                        name: "Read".into(),
                        input: serde_json::json!({}),
                    };
                    Message { role: Role::Assistant, content: vec![call] }
                };
                history.push_merging(message);
                history.push_merging(Message::user_text("c"));
                let body = provider.body(&mut kept, &history, "\"t\"");
                assert_eq!(body, whole(&history, "\"t\""), "turn {turn}, lead {lead}");
                // Only what follows the last body's messages is written: `,"b","c"` or `,"c"`,
                // then `,"t"]}`.
                let added = if turn == 0 {
                    body.len()
                } else if turn % 2 == 0 {
                    14
                } else {
                    10
                };
                assert_eq!(kept.written, added, "turn {turn}, lead {lead}");
                let bytes = kept.buffer.send(body.into_bytes());
                addresses.push(bytes.as_ptr());
            }
            assert!(addresses.windows(2).all(|pair| pair[0] == pair[1]), "one buffer throughout");
            // Replaced encodings (`encode` counts each call): two messages a turn, the first once.
            assert_eq!(provider.encoded.len(), 1 + 2 * 6);
            let body = provider.body(&mut kept, &history, "");
            let mut held = kept.buffer.send(body.into_bytes());
            // Held by the client: the next body is written into a new buffer, in full.
            history.push_merging(assistant("d"));
            let body = provider.body(&mut kept, &history, "");
            assert_eq!(body, whole(&history, ""));
            // The older body comes back after the newer one: it is not the last body.
            let newer = kept.buffer.send(body.into_bytes());
            drop(newer);
            drop(std::mem::replace(&mut held, bytes::Bytes::new()));
            history.push_merging(Message::user_text("e"));
            assert_eq!(provider.body(&mut kept, &history, ""), whole(&history, ""));
            history.edit(|messages| messages.truncate(2));
            assert_eq!(provider.body(&mut kept, &history, "\"t\""), whole(&history, "\"t\""));
        }
    }
}
