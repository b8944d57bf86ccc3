//! The buffer of a request body, handed back when the HTTP client is done with it, so the next
//! body is written into memory the process already has.
//!
//! A late request of a long session is a megabyte or more. Allocated fresh each time, a buffer
//! that size comes from `mmap` and goes back with `munmap` (glibc serves allocations above its
//! threshold that way, and a body that grows past the last one's size stays above it), so
//! every page of every body was faulted in anew: measured over HTTP, a 4000-turn session took
//! 300 000 page faults, 55 times a 500-turn one's, which made the kernel's share of its CPU
//! grow as the square of its length. A [`BodyBuffer`] keeps the last buffer: a body is sent as
//! [`Bytes`] owning its `Vec`, and when hyper drops it (written, or the request abandoned) the
//! `Vec` comes back here for the next body.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

/// One spare buffer for consecutive request bodies. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct BodyBuffer {
    spare: Arc<Mutex<Option<Vec<u8>>>>,
}

impl BodyBuffer {
    /// The spare buffer, holding the body last sent from it, when it is back (its memory
    /// already in place); else a new, empty one.
    pub fn take(&self) -> Vec<u8> {
        self.spare.lock().unwrap_or_else(PoisonError::into_inner).take().unwrap_or_default()
    }

    /// `body` as bytes to send, its buffer coming back to this one once they are dropped.
    pub fn send(&self, body: Vec<u8>) -> Bytes {
        Bytes::from_owner(Returning { body, home: Arc::downgrade(&self.spare) })
    }
}

/// A sent body's buffer, on its way back to the [`BodyBuffer`] it came from.
struct Returning {
    body: Vec<u8>,
    /// Weak, so a body the HTTP client still holds does not keep a dropped model's buffer.
    home: Weak<Mutex<Option<Vec<u8>>>>,
}

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        if let Some(home) = self.home.upgrade() {
            *home.lock().unwrap_or_else(PoisonError::into_inner) = Some(std::mem::take(&mut self.body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_body_gives_its_buffer_back_for_the_next() {
        let buffers = BodyBuffer::default();
        let mut first = buffers.take();
        first.extend_from_slice(b"{\"model\":\"m\"}");
        let address = first.as_ptr();
        let sent = buffers.send(first);
        assert_eq!(&sent[..], b"{\"model\":\"m\"}");
        // Still being sent: the next body gets a buffer of its own.
        let second = buffers.take();
        assert_eq!(second.capacity(), 0);
        drop(sent);
        let third = buffers.take();
        assert_eq!(third.as_ptr(), address, "the first body's memory, reused");
        assert_eq!(third, b"{\"model\":\"m\"}", "still holding the body sent from it");
    }

    #[test]
    fn a_body_may_outlive_its_buffer() {
        let buffers = BodyBuffer::default();
        let mut body = buffers.take();
        body.extend_from_slice(b"data");
        let sent = buffers.send(body);
        drop(buffers);
        let copy = sent.clone();
        drop(sent);
        assert_eq!(&copy[..], b"data");
    }
}
