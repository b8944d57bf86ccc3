//! A strict, incremental server-sent-events framer (the WHATWG "event stream" format).
//!
//! Bytes go in with [`Parser::feed`] in chunks of any size, and each event they complete is
//! handed to a callback as it is found. (The pair [`Parser::push`] and [`Parser::next_event`]
//! queues the events instead, at the cost of one copy of each; the fixture tests read their
//! reference path through it.) The rules
//! are the standard's:
//! - a line ends in LF, CRLF or CR, and a CR ending one chunk followed by an LF starting the
//!   next is one line end;
//! - a line starting with `:` is a comment;
//! - `field: value` drops one optional space after the colon; a line without a colon is a field
//!   with an empty value; `data` lines are joined with `\n`; `event` names the event;
//! - an event is dispatched only by the blank line after it, and data still pending when the
//!   stream ends is discarded (a half-received event never reaches the caller);
//! - the stream is UTF-8, invalid bytes becoming U+FFFD, and a byte-order mark at the very
//!   start is skipped.
//!
//! `id` and `retry` are parsed as fields and ignored: a Messages stream cannot be resumed.
//!
//! A line, and the data of one event, may be at most [`MAX_EVENT_BYTES`] (16 MiB) long. Past
//! that the parser stops ([`Parser::overflowed`]) and holds nothing more, so a stream without
//! line ends cannot grow its buffers without bound; the reply fails with
//! [`crate::model::ModelError::Oversized`], which is retried. The check is one length
//! comparison per chunk and per line, never per byte.
//!
//! The parser works on bytes and checks the UTF-8 of each line it reads when the line is
//! complete, so a character split across chunks is simply part of a line that waits for its
//! end (invalid bytes become U+FFFD; line ends are ASCII, so checking line by line gives what
//! checking the whole stream would). An event whose lines all lie in one chunk, the usual
//! case, is lent out of the chunk itself: its name and its single `data` line are borrowed,
//! not copied. Only what spans a chunk boundary and events with several `data` lines are
//! copied, into buffers that are reused, so reading a stream allocates nothing per event once
//! they have grown. Every input byte is scanned (memchr) once, so the cost is linear in the
//! input whatever the chunking.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ops::{ControlFlow, Range};

use memchr::{memchr, memchr2};

/// One dispatched event, borrowed from the chunk being fed or from the [`Parser`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` name, when the event had a non-empty one.
    pub event: Option<&'a str>,
    /// The `data:` lines, joined with `\n`.
    pub data: &'a str,
}

/// What [`Parser::feed_with`] hands the events to.
pub trait Handler {
    /// One complete event. Breaking stops the feed: the rest of the chunk is dropped unread.
    fn event(&mut self, event: Event<'_>) -> ControlFlow<()>;
}

/// A callback as a [`Handler`].
struct Callback<F>(F);

impl<F> Handler for Callback<F>
where
    F: FnMut(Event<'_>) -> ControlFlow<()>,
{
    fn event(&mut self, event: Event<'_>) -> ControlFlow<()> {
        (self.0)(event)
    }
}

/// Where a queued event's name and data sit in [`Parser::queued`].
#[derive(Debug, Clone)]
struct Ready {
    event: Option<Range<usize>>,
    data: Range<usize>,
}

/// The incremental framer. See the module documentation for the rules it follows.
#[derive(Debug, Default)]
pub struct Parser {
    /// Bytes of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The previous chunk ended in CR: an LF at the start of the next one ends nothing.
    after_cr: bool,
    /// At least one line has been read (a BOM can only start the first).
    seen_line: bool,
    /// The `data` lines of the event being read, each followed by LF, when they could not be
    /// borrowed (they came in an earlier chunk, or there are several).
    data: String,
    /// The name of the event being read, when it came in an earlier chunk.
    event: String,
    /// Events queued by [`Parser::push`] and not yet taken: names and data, back to back.
    queued: String,
    /// Where each queued event lies in `queued`, oldest first.
    ready: VecDeque<Ready>,
    /// A line or an event's data passed [`MAX_EVENT_BYTES`]: the stream is unusable.
    overflowed: bool,
}

/// What the event being read has borrowed from the chunk being fed: its only `data` line and
/// its name. Whatever is still borrowed when the chunk ends is copied into the parser.
#[derive(Default)]
struct Borrowed<'t> {
    data: Option<&'t str>,
    event: Option<&'t str>,
}

/// `bytes` as text, borrowed when valid (checked with SIMD by `simdutf8`, much quicker on
/// valid text than the lossy decoder), with U+FFFD for invalid bytes otherwise.
#[inline]
fn utf8_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The longest line, and the longest data of one event, the parser holds: 16 MiB. A real
/// event is a few kilobytes at most (a whole tool input arrives in many deltas).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the stream, calling `on_event` with each event they complete, in
    /// order. When `on_event` breaks, the rest of `bytes` is dropped unread and the break is
    /// returned: the caller is done with the stream (it saw its last event) and feeds no more.
    pub fn feed<F>(&mut self, bytes: &[u8], on_event: F) -> ControlFlow<()>
    where
        F: FnMut(Event<'_>) -> ControlFlow<()>,
    {
        self.feed_with(bytes, &mut Callback(on_event))
    }

    /// [`Parser::feed`] with a [`Handler`] instead of a callback.
    ///
    /// A line or event data longer than [`MAX_EVENT_BYTES`] breaks the feed and marks the parser
    /// [`Parser::overflowed`]; every later feed breaks at once.
    pub fn feed_with<H: Handler>(&mut self, mut bytes: &[u8], handler: &mut H) -> ControlFlow<()> {
        if self.overflowed {
            return ControlFlow::Break(());
        }
        if bytes.is_empty() {
            return ControlFlow::Continue(());
        }
        if self.after_cr {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        if !self.partial.is_empty() {
            // The end of a line begun in an earlier chunk.
            let Some((end, next)) = self.line_end(bytes) else {
                return self.hold(bytes);
            };
            if self.partial.len() + end > MAX_EVENT_BYTES {
                return self.overflow();
            }
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&bytes[..end]);
            let mut borrowed = Borrowed::default();
            let flow = self.line(&line, &mut borrowed, handler);
            self.keep(borrowed);
            line.clear();
            self.partial = line;
            flow?;
            bytes = &bytes[next..];
        }
        let mut borrowed = Borrowed::default();
        let flow = self.lines(bytes, &mut borrowed, handler);
        self.keep(borrowed);
        flow
    }

    /// Feed the next bytes of the stream, queueing the events they complete (copied into the
    /// parser) for [`Parser::next_event`].
    pub fn push(&mut self, bytes: &[u8]) {
        let mut queued = std::mem::take(&mut self.queued);
        let mut ready = std::mem::take(&mut self.ready);
        if ready.is_empty() {
            // Every queued event has been taken.
            queued.clear();
        }
        let _ = self.feed(bytes, |sse| {
            let event = sse.event.map(|name| {
                let start = queued.len();
                queued.push_str(name);
                start..queued.len()
            });
            let start = queued.len();
            queued.push_str(sse.data);
            ready.push_back(Ready { event, data: start..queued.len() });
            ControlFlow::Continue(())
        });
        self.queued = queued;
        self.ready = ready;
    }

    /// The next event queued by [`Parser::push`], oldest first.
    pub fn next_event(&mut self) -> Option<Event<'_>> {
        let ready = self.ready.pop_front()?;
        Some(Event { event: ready.event.map(|range| &self.queued[range]), data: &self.queued[ready.data] })
    }

    /// Whether a line or an event's data passed [`MAX_EVENT_BYTES`]. The parser then holds
    /// nothing and reads nothing more.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Stop for good: a line or an event passed the cap. What was held is released.
    #[cold]
    fn overflow(&mut self) -> ControlFlow<()> {
        self.overflowed = true;
        self.partial = Vec::new();
        self.data = String::new();
        self.event = String::new();
        ControlFlow::Break(())
    }

    /// Keep `bytes`, the start of a line whose end has not arrived, unless that makes the
    /// line longer than the cap.
    fn hold(&mut self, bytes: &[u8]) -> ControlFlow<()> {
        if self.partial.len() + bytes.len() > MAX_EVENT_BYTES {
            return self.overflow();
        }
        self.partial.extend_from_slice(bytes);
        ControlFlow::Continue(())
    }

    /// Whether bytes of an event that has not been dispatched yet are held. At the end of a
    /// stream such an event is discarded, as the standard says.
    pub fn has_pending(&self) -> bool {
        !self.partial.is_empty() || !self.data.is_empty() || !self.event.is_empty()
    }

    /// Read the complete lines of `bytes`; keep the incomplete last one.
    fn lines<'t, H: Handler>(
        &mut self,
        mut bytes: &'t [u8],
        borrowed: &mut Borrowed<'t>,
        handler: &mut H,
    ) -> ControlFlow<()> {
        loop {
            let Some((end, next)) = self.line_end(bytes) else {
                return self.hold(bytes);
            };
            self.line(&bytes[..end], borrowed, handler)?;
            bytes = &bytes[next..];
        }
    }

    /// Where the first line of `bytes` ends and the next begins. A CR at the very end may be
    /// the first half of a CRLF: the next chunk is told to skip an LF.
    #[inline]
    fn line_end(&mut self, bytes: &[u8]) -> Option<(usize, usize)> {
        let end = match bytes.first() {
            // A blank line, the end of every event: no search needed.
            Some(b'\n') => 0,
            _ => memchr2(b'\n', b'\r', bytes)?,
        };
        let mut next = end + 1;
        if bytes[end] == b'\r' {
            match bytes.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                None => self.after_cr = true,
            }
        }
        Some((end, next))
    }

    /// One complete line, checked as UTF-8 here (invalid bytes become U+FFFD).
    fn line<'t, H: Handler>(
        &mut self,
        mut line: &'t [u8],
        borrowed: &mut Borrowed<'t>,
        handler: &mut H,
    ) -> ControlFlow<()> {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch(borrowed, handler);
        }
        if line.len() > MAX_EVENT_BYTES {
            return self.overflow();
        }
        let (field, value) = if let Some(value) = line.strip_prefix(b"data:") {
            (&b"data"[..], value)
        } else {
            match memchr(b':', line) {
                Some(0) => return ControlFlow::Continue(()),
                Some(colon) => (&line[..colon], &line[colon + 1..]),
                None => (line, &b""[..]),
            }
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match field {
            b"data" => match utf8_lossy(value) {
                Cow::Borrowed(value) if self.data.is_empty() && borrowed.data.is_none() => borrowed.data = Some(value),
                value => {
                    let first_len = borrowed.data.map_or(0, |first| first.len() + 1);
                    if self.data.len() + first_len + value.len() + 1 > MAX_EVENT_BYTES {
                        return self.overflow();
                    }
                    if let Some(first) = borrowed.data.take() {
                        self.data.push_str(first);
                        self.data.push('\n');
                    }
                    self.data.reserve(value.len() + 1);
                    self.data.push_str(&value);
                    self.data.push('\n');
                }
            },
            b"event" => match utf8_lossy(value) {
                Cow::Borrowed(name) => borrowed.event = Some(name),
                Cow::Owned(name) => {
                    borrowed.event = None;
                    self.event = name;
                }
            },
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn dispatch<H: Handler>(&mut self, borrowed: &mut Borrowed<'_>, handler: &mut H) -> ControlFlow<()> {
        let name = borrowed.event.take().unwrap_or(&self.event);
        let data = match borrowed.data.take() {
            Some(data) => Some(data),
            // Leave out the LF after the last data line.
            None => self.data.len().checked_sub(1).map(|end| &self.data[..end]),
        };
        let flow = match data {
            Some(data) => handler.event(Event { event: (!name.is_empty()).then_some(name), data }),
            None => ControlFlow::Continue(()),
        };
        self.data.clear();
        self.event.clear();
        flow
    }

    /// The chunk that `borrowed` points into is ending: copy what it still holds.
    fn keep(&mut self, borrowed: Borrowed<'_>) {
        if self.overflowed {
            return;
        }
        if let Some(data) = borrowed.data {
            self.data.push_str(data);
            self.data.push('\n');
        }
        if let Some(name) = borrowed.event {
            self.event.clear();
            self.event.push_str(name);
        }
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
    fn a_line_without_end_past_the_cap_stops_the_parser_and_frees_its_buffer() {
        let mut p = Parser::new();
        let chunk = vec![b'a'; 1024 * 1024];
        let mut events = 0;
        let mut chunks = 0;
        while p.feed(&chunk, |_| {
            events += 1;
            ControlFlow::Continue(())
        }) == ControlFlow::Continue(())
        {
            chunks += 1;
            assert!(p.partial.len() <= MAX_EVENT_BYTES, "the held line never passes the cap");
        }
        assert_eq!(chunks, 16, "16 chunks of 1 MiB fill the cap exactly; the 17th passes it");
        assert!(p.overflowed());
        assert_eq!((p.partial.capacity(), p.data.capacity()), (0, 0));
        // Nothing is read after the overflow, not even a complete event.
        assert_eq!(p.feed(b"\n\ndata: x\n\n", |_| ControlFlow::Continue(())), ControlFlow::Break(()));
        assert_eq!(events, 0);
    }

    #[test]
    fn a_whole_line_or_event_data_past_the_cap_overflows() {
        // One line, complete in its chunk.
        let mut line = b"data: ".to_vec();
        line.resize(MAX_EVENT_BYTES + 1, b'x');
        line.extend_from_slice(b"\n\n");
        let mut p = Parser::new();
        assert_eq!(p.feed(&line, |_| ControlFlow::Continue(())), ControlFlow::Break(()));
        assert!(p.overflowed());
        // Many data lines of one event, each well under the cap.
        let mut p = Parser::new();
        let data_line = format!("data: {}\n", "y".repeat(1024 * 1024 - 1));
        let mut fed = 0;
        while p.feed(data_line.as_bytes(), |_| ControlFlow::Continue(())) == ControlFlow::Continue(()) {
            fed += 1;
            assert!(p.data.len() <= MAX_EVENT_BYTES);
        }
        assert_eq!(fed, 16);
        assert!(p.overflowed());
        // A line exactly at the cap is read.
        let mut exact = b"data: ".to_vec();
        exact.resize(MAX_EVENT_BYTES, b'z');
        exact.extend_from_slice(b"\n\n");
        let mut p = Parser::new();
        let mut len = 0;
        assert_eq!(
            p.feed(&exact, |e| {
                len = e.data.len();
                ControlFlow::Continue(())
            }),
            ControlFlow::Continue(())
        );
        assert_eq!(len, MAX_EVENT_BYTES - 6);
        assert!(!p.overflowed());
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
