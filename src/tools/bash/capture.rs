//! Capped capture of one output stream: the head and the tail are kept, the middle is
//! counted and replaced by a note, so a command that prints a megabyte costs the model a
//! bounded number of characters while the start and the end (often the error) survive.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The bytes kept of one stream: at most `cap`, split between the head and the tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl Capture {
    /// An empty capture keeping at most `cap` bytes (the first half and the last half).
    pub fn new(cap: usize) -> Self {
        let tail_cap = cap / 2;
        Capture { head_cap: cap - tail_cap, tail_cap, head: Vec::new(), tail: VecDeque::new(), total: 0 }
    }

    /// Append bytes the stream produced.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len();
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    /// Bytes the stream produced in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The kept text; when bytes were dropped, a note naming `stream` and how many bytes
    /// were cut separates the head from the tail. Cuts never split a UTF-8 character.
    pub fn render(&self, stream: &str) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let cut = self.total - self.head.len() - tail.len();
        if cut == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = &self.head[..self.head.len() - incomplete_suffix(&self.head)];
        let tail = &tail[leading_continuations(&tail)..];
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}\n… [{cut} bytes cut from the middle of {stream}] …\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Read `reader` to its end (or first error) into `capture`.
pub async fn pump(mut reader: impl AsyncRead + Unpin, capture: &mut Capture) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = reader.read(&mut buf).await
        && n > 0
    {
        capture.push(&buf[..n]);
    }
}

/// Length of an unfinished UTF-8 sequence at the end of `bytes`.
pub fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if need > back { back } else { 0 };
        }
    }
    0
}

/// Continuation bytes (at most 3) at the start of `bytes`: the rest of a character cut off.
fn leading_continuations(bytes: &[u8]) -> usize {
    bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_up_to_the_cap() {
        let mut c = Capture::new(10);
        c.push(b"abcd");
        c.push(b"efghij");
        assert_eq!(c.render("stdout"), "abcdefghij");
        assert_eq!(c.total(), 10);
    }

    #[test]
    fn keeps_head_and_tail_across_chunks() {
        let mut c = Capture::new(6);
        for chunk in [&b"ab"[..], b"cd", b"efgh", b"i", b"jk"] {
            c.push(chunk);
        }
        assert_eq!(c.render("stderr"), "abc\n… [5 bytes cut from the middle of stderr] …\nijk");
        let mut big = Capture::new(6);
        big.push(b"0123456789");
        assert_eq!(big.render("stdout"), "012\n… [4 bytes cut from the middle of stdout] …\n789");
    }

    #[test]
    fn never_splits_a_character() {
        let text = "aaaéé€€bbb".as_bytes(); // 3 + 2 + 2 + 3 + 3 + 3 = 16 bytes
        let mut c = Capture::new(10);
        c.push(text);
        // Head: "aaaé" (5 bytes). Tail: the last 5 bytes are the end of a € and "bbb".
        assert_eq!(c.render("stdout"), "aaaé\n… [8 bytes cut from the middle of stdout] …\nbbb");
        let mut c = Capture::new(8);
        c.push(text);
        // Head: "aaa" and the first byte of an é, which is dropped.
        assert_eq!(c.render("stdout"), "aaa\n… [10 bytes cut from the middle of stdout] …\nbbb");
    }
}
