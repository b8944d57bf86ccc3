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
//! Several histories may share one client (a subagent's beside its parent's, side requests):
//! every [`KEEP_FOR`] requests, the entries that many requests have not used are dropped, so
//! each history keeps its entries while it is in use, and a finished one is freed. A lookup
//! hashes only the address, so assembling a request costs a pointer hash per message and a
//! copy of its bytes.
//!
//! [`Transcript`]: crate::protocol::Transcript

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::protocol::Message;

/// How many requests an unused entry is kept for (at least; swept every as many requests).
pub const KEEP_FOR: u64 = 16;

/// Hashes an address: one multiplication (Fibonacci hashing), for keys that are already
/// unique and need no protection from collisions chosen by an attacker.
#[derive(Debug, Default, Clone, Copy)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.0 = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The kept JSON of the messages recent requests carried.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    /// Keyed by the address behind the `Arc`, which the entry's own clone keeps alive, so an
    /// address is never reused while its entry exists.
    entries: HashMap<usize, Entry, BuildHasherDefault<AddressHasher>>,
    /// Requests assembled so far.
    requests: u64,
}

#[derive(Debug)]
struct Entry {
    /// Holds the message, so its address stays its own.
    _message: Arc<Message>,
    json: Box<RawValue>,
    /// The request that last used this entry.
    used: u64,
}

fn key(message: &Arc<Message>) -> usize {
    Arc::as_ptr(message) as usize
}

impl EncodedMessages {
    /// The JSON of each of `messages`, encoding those not yet kept, for one request. Every
    /// [`KEEP_FOR`] requests, entries no request has used for that long are dropped first.
    ///
    /// # Errors
    /// A message that cannot be encoded (a [`crate::protocol::ContentBlock::Other`] that is
    /// not a JSON object).
    pub fn encode<'a>(&'a mut self, messages: &[Arc<Message>]) -> Result<Vec<&'a RawValue>, serde_json::Error> {
        self.requests += 1;
        let now = self.requests;
        if now.is_multiple_of(KEEP_FOR) {
            self.entries.retain(|_, entry| now - entry.used <= KEEP_FOR);
        }
        for message in messages {
            match self.entries.get_mut(&key(message)) {
                Some(entry) => entry.used = now,
                None => {
                    let json = serde_json::value::to_raw_value(&**message)?;
                    self.entries.insert(key(message), Entry { _message: Arc::clone(message), json, used: now });
                }
            }
        }
        Ok(messages.iter().map(|message| &*self.entries[&key(message)].json).collect())
    }

    /// How many messages are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
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
        // A rewrite replaces every Arc: all of it is encoded again, and the old entries go
        // once KEEP_FOR requests have passed without them.
        history.edit(|messages| messages[0] = Message::user_text("z"));
        let third = texts(&kept.encode(&history).unwrap());
        assert_eq!(third[0], r#"{"role":"user","content":[{"type":"text","text":"z"}]}"#);
        assert_eq!(kept.len(), 5);
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
