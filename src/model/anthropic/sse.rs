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
//! The parser works on bytes and decodes UTF-8 only when an event is dispatched, so a
//! character split across chunks is never a problem. Every input byte is scanned once
//! (memchr) and copied at most twice, so the cost is linear in the input whatever the chunking.

use std::collections::VecDeque;

use memchr::{memchr, memchr2};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, when the event had a non-empty one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The incremental framer. See the module documentation for the rules it follows.
#[derive(Debug, Default)]
pub struct Parser {
    /// Bytes of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The previous chunk ended in CR: an LF at the start of the next one ends nothing.
    after_cr: bool,
    /// At least one line has been processed (the BOM can only come before the first).
    seen_line: bool,
    /// Data of the event being read, each line followed by LF.
    data: Vec<u8>,
    /// Name of the event being read.
    event: Vec<u8>,
    /// Events dispatched and not yet taken.
    ready: VecDeque<SseEvent>,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the stream. Events they complete become available from
    /// [`Parser::next_event`].
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(pos) = memchr2(b'\n', b'\r', bytes) {
            let mut next = pos + 1;
            if bytes[pos] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.partial.is_empty() {
                self.line(&bytes[..pos]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&bytes[..pos]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            bytes = &bytes[next..];
        }
        self.partial.extend_from_slice(bytes);
    }

    /// The next complete event, oldest first.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Whether bytes of an event that has not been dispatched yet are held. At the end of a
    /// stream such an event is discarded, as the standard says.
    pub fn has_pending(&self) -> bool {
        !self.partial.is_empty() || !self.data.is_empty() || !self.event.is_empty()
    }

    fn line(&mut self, mut line: &[u8]) {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return;
        }
        let (field, value) = match memchr(b':', line) {
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.reserve(value.len() + 1);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        self.data.pop();
        let data = utf8(std::mem::take(&mut self.data));
        let event = if self.event.is_empty() { None } else { Some(utf8(std::mem::take(&mut self.event))) };
        self.ready.push_back(SseEvent { event, data });
    }
}

/// Decode as the standard does: invalid sequences become U+FFFD.
fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            p.push(chunk);
            while let Some(e) = p.next_event() {
                out.push(e);
            }
        }
        out
    }

    fn parse(input: &[u8]) -> Vec<SseEvent> {
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
        assert_eq!(p.next_event(), Some(ev(None, "done")));
        assert_eq!(p.next_event(), None);
        assert!(p.has_pending());
        let mut p = Parser::new();
        p.push(b"data: no blank line\n");
        assert_eq!(p.next_event(), None);
    }

    #[test]
    fn utf8_split_across_chunks_and_bom() {
        let text = "data: 925 ÷ 5 = 185 ✓\n\n".as_bytes();
        let want = vec![ev(None, "925 ÷ 5 = 185 ✓")];
        for cut in 0..=text.len() {
            assert_eq!(parse_chunks(&[&text[..cut], &text[cut..]]), want, "cut at {cut}");
        }
        assert_eq!(parse_chunks(&[b"\xEF\xBB", b"\xBFdata: b\n\n"]), vec![ev(None, "b")]);
        // Invalid UTF-8 decodes to U+FFFD instead of failing.
        assert_eq!(parse(b"data: \xFF\n\n"), vec![ev(None, "\u{FFFD}")]);
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
