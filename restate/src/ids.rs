//! Message ids a replay derives again: the n-th id of a prompt is a hash of the session, the
//! prompt's number and n, so the replayed transcript has the same uuids as the first life's,
//! and a run that was never interrupted has them too.

use std::sync::atomic::{AtomicU64, Ordering};

use agentloop::session::Uuid;
use sha2::{Digest, Sha256};

/// The ids of one prompt of one session.
#[derive(Debug)]
pub struct Ids {
    seed: String,
    next: AtomicU64,
}

impl Ids {
    /// The ids of prompt `prompt` (from 0) of session `session`.
    pub fn new(session: &str, prompt: u64) -> Ids {
        Ids { seed: format!("{session}\n{prompt}"), next: AtomicU64::new(0) }
    }

    /// The next id.
    pub fn next(&self) -> Uuid {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        self.named(&n.to_string())
    }

    /// The id this prompt gives `name` (its run id: `run`).
    pub fn named(&self, name: &str) -> Uuid {
        let digest = Sha256::digest(format!("{}\n{name}", self.seed).as_bytes());
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        // A version 4 UUID's version and variant bits.
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]);
        Uuid::parse(&text).expect("the text is a version 4 UUID")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_session_and_prompt_give_the_same_ids_and_another_prompt_others() {
        let (a, b, c) = (Ids::new("s", 0), Ids::new("s", 0), Ids::new("s", 1));
        let first: Vec<Uuid> = (0..3).map(|_| a.next()).collect();
        let again: Vec<Uuid> = (0..3).map(|_| b.next()).collect();
        assert_eq!(first, again);
        assert_ne!(first[0], first[1]);
        assert_ne!(c.next(), first[0]);
        assert_eq!(a.named("run"), b.named("run"));
        let text = first[0].to_string();
        assert_eq!(&text[14..15], "4");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
    }
}
