//! Each message's JSON, written once and spliced into every later request body.
//!
//! The Messages API is stateless, so every request carries the whole history; encoding it
//! anew each turn made a session's CPU grow as the square of its length (serde_json writing
//! the body was most of a late turn). The messages behind a [`Transcript`]'s `Arc`s never
//! change in place — an append adds one, a merge into the last one or a rewrite (collapse,
//! compaction) replaces the `Arc` — so a message's JSON can be kept beside it, keyed by the
//! `Arc` itself, and a request is assembled from kept bytes: each message is encoded once
//! (once more for the request where it is last and carries the cache breakpoint, which the
//! kept bytes never include).
//!
//! Several histories may share one client (a subagent's beside its parent's, side requests).
//! Each is a *lane*: the entries of its messages in order, found by the `Arc` of its first
//! message. A request walks its lane comparing pointers, reuses the entries up to the first
//! message that differs (a merge into the last message, or the end), and encodes the rest,
//! so assembling a request costs a pointer comparison per message and a copy of its bytes. A
//! rewrite (collapse, compaction) changes every `Arc`, the first included, and so starts a
//! new lane. Every [`KEEP_FOR`] requests, lanes that many requests have not used are dropped,
//! so a finished history is freed.
//!
//! [`Transcript`]: crate::protocol::Transcript

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::protocol::Message;

/// How many requests an unused lane is kept for (at least; swept every as many requests).
pub const KEEP_FOR: u64 = 16;

/// The kept JSON of the messages recent requests carried.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    /// Keyed by the address behind the lane's first `Arc`, which the lane's own clone keeps
    /// alive, so an address is never reused while its lane exists.
    lanes: HashMap<usize, Lane>,
    /// Requests assembled so far.
    requests: u64,
    /// The size of the last body assembled, to size the next one's buffer.
    pub(crate) last_body_len: usize,
}

/// One history's kept messages, in order.
#[derive(Debug, Default)]
struct Lane {
    entries: Vec<Entry>,
    /// The request that last used this lane.
    used: u64,
}

#[derive(Debug)]
struct Entry {
    /// Holds the message, so its address stays its own.
    message: Arc<Message>,
    json: Box<RawValue>,
}

fn key(message: &Arc<Message>) -> usize {
    Arc::as_ptr(message) as usize
}

impl EncodedMessages {
    /// The JSON of each of `messages`, encoding those its lane does not hold yet, for one
    /// request. Every [`KEEP_FOR`] requests, lanes no request has used for that long are
    /// dropped first.
    ///
    /// # Errors
    /// A message that cannot be encoded (a [`crate::protocol::ContentBlock::Other`] that is
    /// not a JSON object).
    pub fn encode<'a>(&'a mut self, messages: &[Arc<Message>]) -> Result<Vec<&'a RawValue>, serde_json::Error> {
        self.requests += 1;
        let now = self.requests;
        if now.is_multiple_of(KEEP_FOR) {
            self.lanes.retain(|_, lane| now - lane.used <= KEEP_FOR);
        }
        let Some(first) = messages.first() else { return Ok(Vec::new()) };
        let lane = self.lanes.entry(key(first)).or_default();
        lane.used = now;
        let same = lane.entries.iter().zip(messages).take_while(|(entry, m)| Arc::ptr_eq(&entry.message, m)).count();
        lane.entries.truncate(same);
        for message in &messages[same..] {
            let json = serde_json::value::to_raw_value(&**message)?;
            lane.entries.push(Entry { message: Arc::clone(message), json });
        }
        Ok(lane.entries.iter().map(|entry| &*entry.json).collect())
    }

    /// How many messages are kept, in all lanes.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.values().map(|lane| lane.entries.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Role, Transcript};

    fn assistant(text: &str) -> Message {
        Message { role: Role::Assistant, content: vec![ContentBlock::text(text)] }
    }

    fn texts(encoded: &[&RawValue]) -> Vec<String> {
        encoded.iter().map(|raw| raw.get().to_owned()).collect()
    }

    #[test]
    fn a_message_is_encoded_once_and_a_replaced_one_again() {
        let mut history = Transcript::from(vec![Message::user_text("a"), assistant("b")]);
        let mut kept = EncodedMessages::default();
        let first = texts(&kept.encode(&history).unwrap());
        assert_eq!(
            first,
            [
                r#"{"role":"user","content":[{"type":"text","text":"a"}]}"#,
                r#"{"role":"assistant","content":[{"type":"text","text":"b"}]}"#,
            ]
        );
        // A merge into the last message replaces its Arc (the kept entry shares it), so the
        // merged message is encoded anew; the first is reused.
        history.push_merging(assistant("c"));
        let second = texts(&kept.encode(&history).unwrap());
        assert_eq!(second[0], first[0]);
        assert_eq!(
            second[1],
            r#"{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]}"#
        );
        assert_eq!(history[1].role, Role::Assistant);
        assert_eq!(kept.len(), 2, "the merged message replaced its entry in the lane");
        // A rewrite replaces every Arc: all of it is encoded again in a new lane, and the old
        // lane goes once KEEP_FOR requests have passed without it.
        history.edit(|messages| messages[0] = Message::user_text("z"));
        let third = texts(&kept.encode(&history).unwrap());
        assert_eq!(third[0], r#"{"role":"user","content":[{"type":"text","text":"z"}]}"#);
        assert_eq!(kept.len(), 4);
        for _ in 0..2 * KEEP_FOR {
            kept.encode(&history).unwrap();
        }
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn two_histories_sharing_a_client_keep_their_entries() {
        let parent = Transcript::from(vec![Message::user_text("parent")]);
        let child = Transcript::from(vec![Message::user_text("child")]);
        let mut kept = EncodedMessages::default();
        for _ in 0..3 * KEEP_FOR {
            kept.encode(&parent).unwrap();
            kept.encode(&child).unwrap();
        }
        assert_eq!(kept.len(), 2, "each history's one message, kept throughout");
    }
}
