//! The SSE framer (`model::anthropic::sse::Parser`) on any bytes, in any chunking.
//!
//! The first byte seeds how the rest is cut into chunks. Invariants: feeding the stream in
//! those chunks frames exactly the events one feed of the whole stream frames (the framer is
//! incremental), and the queueing pair `push`/`next_event` frames them too.
#![no_main]

use std::ops::ControlFlow;

use agentloop::internals::anthropic::Parser;
use libfuzzer_sys::fuzz_target;

/// An owned event: its name and its data.
type Owned = (Option<String>, String);

/// Cut `bytes` into chunks of 1..=64 bytes, lengths drawn from a generator seeded by `seed`.
fn chunks(seed: u8, bytes: &[u8]) -> Vec<&[u8]> {
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let len = (((state >> 16) % 64) as usize + 1).min(rest.len());
        let (head, tail) = rest.split_at(len);
        out.push(head);
        rest = tail;
    }
    out
}

fn feed_all(parts: &[&[u8]]) -> (Vec<Owned>, bool) {
    let mut parser = Parser::new();
    let mut events = Vec::new();
    for part in parts {
        let flow = parser.feed(part, |event| {
            events.push((event.event.map(str::to_owned), event.data.to_owned()));
            ControlFlow::Continue(())
        });
        assert_eq!(flow.is_break(), parser.overflowed());
    }
    (events, parser.has_pending())
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, stream)) = data.split_first() else { return };
    let (whole, whole_pending) = feed_all(&[stream]);
    let (chunked, chunked_pending) = feed_all(&chunks(seed, stream));
    assert_eq!(whole, chunked, "chunking changed the events");
    assert_eq!(whole_pending, chunked_pending, "chunking changed what is pending");

    let mut parser = Parser::new();
    let mut queued = Vec::new();
    for part in chunks(seed.wrapping_add(1), stream) {
        parser.push(part);
        while let Some(event) = parser.next_event() {
            queued.push((event.event.map(str::to_owned), event.data.to_owned()));
        }
    }
    assert_eq!(whole, queued, "push/next_event framed other events");
});
