//! A strict, incremental server-sent-events framer (the WHATWG "event stream" format).
//!
//! Bytes go in with [`Parser::push`] in chunks of any size; complete events come out of
//! [`Parser::next_event`]. The rules are the standard's:
//! - a line ends in LF, CRLF or CR, and a CR ending one chunk followed by an LF starting the
//!   next is one line end;
//! - a line starting with `:` is a comment;
//! - `field: value` drops one optional space after the colon; a line without a colon is a field
//!   with an empty value; `data` lines are joined with `\n`; `event` names the event;
//! - an event is dispatched only by the blank line after it, and data still pending when the
//!   stream ends is discarded (a half-received event never reaches the caller);
//! - a UTF-8 byte-order mark at the very start is skipped.
//!
//! `id` and `retry` are parsed as fields and ignored: a Messages stream cannot be resumed.
//! UTF-8 is checked once per chunk, as the bytes arrive (a character split across chunks waits
//! for the rest of it; invalid bytes become U+FFFD as the standard says); from then on the parser
//! works on text. Every input byte is checked and scanned (memchr) once and copied once (a line
//! split across chunks, twice), so the cost is linear in the input whatever the chunking. Events
//! are lent out ([`Event`] borrows the parser), so reading a stream allocates nothing per event
//! once the buffers have grown.

use std::collections::VecDeque;
use std::ops::Range;

use memchr::{memchr, memchr2};

/// One dispatched event, borrowed from the [`Parser`] until the next call on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` name, when the event had a non-empty one.
    pub event: Option<&'a str>,
    /// The `data:` lines, joined with `\n`.
    pub data: &'a str,
}

/// Where a dispatched event's name and data sit in the parser's buffer.
#[derive(Debug, Clone)]
struct Ready {
    event: Option<Range<usize>>,
    data: Range<usize>,
}

/// The incremental framer. See the module documentation for the rules it follows.
#[derive(Debug, Default)]
pub struct Parser {
    /// The start of a character split across chunks (at most 3 bytes).
    split_char: Vec<u8>,
    /// Text of a line whose end has not arrived yet.
    partial: String,
    /// The previous chunk ended in CR: an LF at the start of the next one ends nothing.
    after_cr: bool,
    /// At least one line has been processed (the BOM can only come before the first).
    seen_line: bool,
    /// The dispatched events not yet taken, then the data of the event being read (from
    /// `pending`), each of its lines followed by LF.
    buf: String,
    /// Where the event being read starts in `buf`.
    pending: usize,
    /// Name of the event being read.
    event: String,
    /// Dispatched events not yet taken, oldest first.
    ready: VecDeque<Ready>,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the stream. Events they complete become available from
    /// [`Parser::next_event`].
    pub fn push(&mut self, bytes: &[u8]) {
        if self.ready.is_empty() && self.pending > 0 {
            // Every dispatched event has been taken: keep only the event being read.
            self.buf.drain(..self.pending);
            self.pending = 0;
        }
        if self.split_char.is_empty() {
            self.push_bytes(bytes);
        } else {
            // Rare (a chunk boundary inside a character): decode the joined bytes.
            let mut joined = std::mem::take(&mut self.split_char);
            joined.extend_from_slice(bytes);
            self.push_bytes(&joined);
        }
    }

    /// The next complete event, oldest first.
    pub fn next_event(&mut self) -> Option<Event<'_>> {
        let ready = self.ready.pop_front()?;
        Some(Event { event: ready.event.map(|range| &self.buf[range]), data: &self.buf[ready.data] })
    }

    /// Whether bytes of an event that has not been dispatched yet are held. At the end of a
    /// stream such an event is discarded, as the standard says.
    pub fn has_pending(&self) -> bool {
        !self.split_char.is_empty()
            || !self.partial.is_empty()
            || self.buf.len() > self.pending
            || !self.event.is_empty()
    }

    /// Decode `bytes` as UTF-8, keeping an incomplete character at the end for the next chunk.
    fn push_bytes(&mut self, mut bytes: &[u8]) {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => return self.push_text(text),
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    // Checked just above: `valid` is valid UTF-8.
                    self.push_text(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        None => return self.split_char.extend_from_slice(rest),
                        Some(invalid) => {
                            self.push_text("\u{FFFD}");
                            bytes = &rest[invalid..];
                        }
                    }
                }
            }
        }
    }

    fn push_text(&mut self, mut text: &str) {
        if self.after_cr && !text.is_empty() {
            self.after_cr = false;
            text = text.strip_prefix('\n').unwrap_or(text);
        }
        while let Some(pos) = memchr2(b'\n', b'\r', text.as_bytes()) {
            let mut next = pos + 1;
            if text.as_bytes()[pos] == b'\r' {
                match text.as_bytes().get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.partial.is_empty() {
                self.line(&text[..pos]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.push_str(&text[..pos]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            text = &text[next..];
        }
        self.partial.push_str(text);
    }

    fn line(&mut self, mut line: &str) {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return;
        }
        let (field, value) = match memchr(b':', line.as_bytes()) {
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                self.buf.reserve(value.len() + 1);
                self.buf.push_str(value);
                self.buf.push('\n');
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        if self.buf.len() == self.pending {
            self.event.clear();
            return;
        }
        // Leave out the LF after the last data line.
        let data = self.pending..self.buf.len() - 1;
        let event = (!self.event.is_empty()).then(|| {
            let start = self.buf.len();
            self.buf.push_str(&self.event);
            start..self.buf.len()
        });
        self.event.clear();
        self.ready.push_back(Ready { event, data });
        self.pending = self.buf.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Owned = (Option<String>, String);

    fn ev(event: Option<&str>, data: &str) -> Owned {
        (event.map(str::to_owned), data.to_owned())
    }

    fn owned(e: Event<'_>) -> Owned {
        ev(e.event, e.data)
    }

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<Owned> {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            p.push(chunk);
            while let Some(e) = p.next_event() {
                out.push(owned(e));
            }
        }
        out
    }

    fn parse(input: &[u8]) -> Vec<Owned> {
        parse_chunks(&[input])
    }

    #[test]
    fn lf_crlf_and_cr_line_ends() {
        let want = vec![ev(Some("a"), "1"), ev(None, "2")];
        assert_eq!(parse(b"event: a\ndata: 1\n\ndata: 2\n\n"), want);
        assert_eq!(parse(b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"), want);
        assert_eq!(parse(b"event: a\rdata: 1\r\rdata: 2\r\r"), want);
        assert_eq!(parse(b"event: a\r\ndata: 1\r\rdata: 2\n\r\n"), want);
    }

    #[test]
    fn cr_at_chunk_end_then_lf_is_one_line_end() {
        let want = vec![ev(None, "x"), ev(None, "y")];
        assert_eq!(parse_chunks(&[b"data: x\r", b"\n\r", b"\ndata: y\r", b"\r"]), want);
        // A CR then a chunk that does not start with LF: the CR alone ended the line.
        assert_eq!(parse_chunks(&[b"data: x\r", b"\rdata: y\n\n"]), want);
        // Empty chunks in between keep the pending CR.
        assert_eq!(parse_chunks(&[b"data: x\r", b"", b"\n\n", b"data: y\n\n"]), want);
    }

    #[test]
    fn comments_fields_and_spaces() {
        let input = b": keep-alive\nevent:ping\ndata:a\ndata:  b\ndata\nid: 7\nretry: 10\nunknown: z\n\n";
        assert_eq!(parse(input), vec![ev(Some("ping"), "a\n b\n")]);
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing_and_reset_the_name() {
        assert_eq!(parse(b"\n\nevent: lost\n\ndata: d\n\n"), vec![ev(None, "d")]);
        // An empty data line still makes an event, with empty data.
        assert_eq!(parse(b"data:\n\n"), vec![ev(None, "")]);
    }

    #[test]
    fn pending_event_at_end_of_stream_is_discarded() {
        let mut p = Parser::new();
        p.push(b"data: done\n\ndata: half");
        assert_eq!(p.next_event().map(owned), Some(ev(None, "done")));
        assert_eq!(p.next_event(), None);
        assert!(p.has_pending());
        let mut p = Parser::new();
        p.push(b"data: no blank line\n");
        assert_eq!(p.next_event(), None);
    }

    #[test]
    fn events_not_taken_survive_later_pushes() {
        let mut p = Parser::new();
        p.push(b"event: one\ndata: a\n\n");
        p.push(b"data: b\n\ndata: ");
        assert_eq!(p.next_event().map(owned), Some(ev(Some("one"), "a")));
        p.push(b"c\n\n");
        assert_eq!(p.next_event().map(owned), Some(ev(None, "b")));
        assert_eq!(p.next_event().map(owned), Some(ev(None, "c")));
        assert_eq!(p.next_event(), None);
        p.push(b"data: d\n\n");
        assert_eq!(p.next_event().map(owned), Some(ev(None, "d")));
    }

    #[test]
    fn utf8_split_across_chunks_and_bom() {
        let text = "data: 925 ÷ 5 = 185 ✓\n\n".as_bytes();
        let want = vec![ev(None, "925 ÷ 5 = 185 ✓")];
        for cut in 0..=text.len() {
            assert_eq!(parse_chunks(&[&text[..cut], &text[cut..]]), want, "cut at {cut}");
        }
        assert_eq!(parse_chunks(&[b"\xEF\xBB", b"\xBFdata: b\n\n"]), vec![ev(None, "b")]);
        // Invalid UTF-8 decodes to U+FFFD instead of failing, whatever the chunking.
        assert_eq!(parse(b"data: \xFF\n\n"), vec![ev(None, "\u{FFFD}")]);
        let mixed: &[u8] = b"data: a\xE2\x82\xE2\x82\xAC\xF0\x9F\x98b\xC3\n\n";
        let want = vec![ev(None, &String::from_utf8_lossy(&mixed[6..mixed.len() - 2]))];
        assert_eq!(want[0].1, "a\u{FFFD}€\u{FFFD}b\u{FFFD}");
        for size in 1..mixed.len() {
            let chunks: Vec<&[u8]> = mixed.chunks(size).collect();
            assert_eq!(parse_chunks(&chunks), want, "chunks of {size}");
        }
    }

    #[test]
    fn a_long_line_fed_byte_by_byte_is_read_in_linear_time() {
        // Re-scanning the pending line on every chunk would make this ~10^10 steps.
        let text = "x".repeat(256 * 1024);
        let mut p = Parser::new();
        p.push(b"data: ");
        for byte in text.as_bytes() {
            p.push(std::slice::from_ref(byte));
        }
        p.push(b"\n\n");
        assert_eq!(p.next_event().map(|e| e.data.len()), Some(text.len()));
    }

    #[test]
    fn one_byte_chunks_match_whole_input() {
        let input = b"event: a\r\ndata: {\"x\":1}\r\n\r\n: c\rdata: 2\r\r";
        let whole = parse(input);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse_chunks(&bytes), whole);
        assert_eq!(whole, vec![ev(Some("a"), "{\"x\":1}"), ev(None, "2")]);
    }
}
