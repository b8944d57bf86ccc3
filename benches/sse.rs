//! SSE parse + assemble throughput against a bare memchr newline scan over the same bytes.
//!
//! The input is a generated ~50 MB Messages stream of text blocks and tool_use blocks, with
//! deltas of 1 to 64 characters (the sizes the API streams), fed in 16 KiB chunks as a socket
//! would deliver them. Stages are measured separately (framing, framing + decode, everything)
//! beside two memchr baselines, and the whole path three ways: lending each delta's text
//! (`parse_and_assemble`), with one owned `StreamEvent` per event (`parse_and_assemble_owned`),
//! and through the `EventStream` adapter the engine reads (`event_stream_and_assemble`).
//! `cargo bench --bench sse`; the ratios go to docs/performance.md.

use std::hint::black_box;
use std::ops::ControlFlow;

use agentloop::model::ModelError;
use agentloop::model::anthropic::decode::{Decoded, Reader, Scratch, apply, decode, decode_borrowed};
use agentloop::model::anthropic::sse::Parser;
use agentloop::model::anthropic::stream::event_stream;
use agentloop::model::assemble::Assembler;
use agentloop::protocol::StreamEvent;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::json;

const TARGET_BYTES: usize = 50 * 1024 * 1024;
const CHUNK: usize = 16 * 1024;

/// A small deterministic generator (xorshift), so every run sees the same stream.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Append one event in the API's own framing and compact JSON, keys in the API's order.
fn event(out: &mut String, kind: &str, json: &str) {
    out.push_str("event: ");
    out.push_str(kind);
    out.push_str("\ndata: ");
    out.push_str(json);
    out.push_str("\n\n");
}

fn delta(out: &mut String, index: usize, kind: &str, key: &str, value: &str) {
    let value = serde_json::to_string(value).unwrap();
    let json =
        format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","{key}":{value}}}}}"#);
    event(out, "content_block_delta", &json);
}

fn generate() -> Vec<u8> {
    // Mostly ASCII prose and code, with the escapes code brings (newlines, quotes, tabs) and
    // an occasional non-ASCII character.
    const WORDS: &[&str] = &[
        "the ",
        "file ",
        "reads ",
        "a ",
        "line ",
        "and ",
        "then ",
        "returns ",
        "value",
        ". ",
        ", ",
        "fn main() {",
        "\n",
        "    ",
        "let x = 1;",
        "\"quoted\"",
        "{\"a\": 1}",
        "\t",
        "// comment",
        "Ok(())",
        "café ",
        "✓",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut out = String::with_capacity(TARGET_BYTES + 4096);
    event(
        &mut out,
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1000,"output_tokens":1}}}"#,
    );
    let mut index = 0;
    while out.len() < TARGET_BYTES {
        let tool = index % 2 == 1;
        let start = if tool {
            format!(r#"{{"type":"tool_use","id":"toolu_{index}","name":"Write","input":{{}}}}"#)
        } else {
            r#"{"type":"text","text":""}"#.to_owned()
        };
        let json = format!(r#"{{"type":"content_block_start","index":{index},"content_block":{start}}}"#);
        event(&mut out, "content_block_start", &json);
        // Text pieces, or the pieces of the JSON text of {"content": "<pieces>"}.
        let mut pieces = Vec::new();
        for _ in 0..200 {
            let mut piece = String::new();
            let len = 1 + rng.below(64) as usize;
            while piece.len() < len {
                piece.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            pieces.push(piece);
        }
        if tool {
            let whole = serde_json::to_string(&json!({"content": pieces.concat()})).unwrap();
            let mut rest = whole.as_str();
            while !rest.is_empty() {
                let mut cut = (1 + rng.below(64) as usize).min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                delta(&mut out, index, "input_json_delta", "partial_json", &rest[..cut]);
                rest = &rest[cut..];
            }
        } else {
            for piece in pieces {
                delta(&mut out, index, "text_delta", "text", &piece);
            }
        }
        let json = format!(r#"{{"type":"content_block_stop","index":{index}}}"#);
        event(&mut out, "content_block_stop", &json);
        index += 1;
    }
    event(
        &mut out,
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":123456}}"#,
    );
    event(&mut out, "message_stop", r#"{"type":"message_stop"}"#);
    out.into_bytes()
}

/// The whole path, lending each delta's text: compact deltas taken whole from the raw bytes
/// (`decode::Reader`), the rest framed and decoded, all pushed into the assembler; `finish()`.
fn parse_and_assemble(bytes: &[u8]) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    let mut scratch = Scratch::new();
    let mut reader = Reader::new(&mut scratch, |decoded: Result<Decoded<'_>, ModelError>| {
        decoded.unwrap().apply(&mut assembler).unwrap();
        ControlFlow::Continue(())
    });
    for chunk in bytes.chunks(CHUNK) {
        let _ = parser.feed_with(chunk, &mut reader);
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

/// The whole path through the parser's events, each lent to `decode::apply` (no whole-event
/// fast path).
fn parse_and_assemble_events(bytes: &[u8]) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    let mut scratch = Scratch::new();
    for chunk in bytes.chunks(CHUNK) {
        let _ = parser.feed(chunk, |event| {
            apply(&mut assembler, event.data, &mut scratch).unwrap();
            ControlFlow::Continue(())
        });
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

/// The whole path with one owned `StreamEvent` per event, as the `EventStream` seam carries
/// (parser events, `decode`).
fn parse_and_assemble_owned(bytes: &[u8]) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    for chunk in bytes.chunks(CHUNK) {
        let _ = parser.feed(chunk, |event| {
            assembler.push(decode(event.data).unwrap()).unwrap();
            ControlFlow::Continue(())
        });
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

/// What the engine runs: the `EventStream` adapter over a body of chunks, each event pushed.
fn event_stream_and_assemble(bytes: &'static [u8]) -> usize {
    let body = futures::stream::iter(bytes.chunks(CHUNK).map(Ok::<_, std::io::Error>));
    let mut events = event_stream(body, std::time::Duration::from_secs(60));
    let mut assembler = Assembler::new();
    futures::executor::block_on(async {
        while let Some(event) = events.next().await {
            assembler.push(event.unwrap()).unwrap();
        }
    });
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

fn bench(c: &mut Criterion) {
    // Leaked so that the stream adapter (which wants a 'static body) can read it too.
    let bytes: &'static [u8] = generate().leak();
    let events = memchr::memmem::find_iter(bytes, b"\n\n").count();
    eprintln!("input: {} bytes, {events} events, {CHUNK}-byte chunks", bytes.len());
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    // The baseline the issue names: memchr's newline count (a dedicated SIMD counting loop).
    // memchr's newline count: a dedicated SIMD counting loop that never stops at a newline.
    group.bench_function("memchr_newline_count", |b| b.iter(|| memchr::memchr_iter(b'\n', black_box(bytes)).count()));
    // The baseline: a scan that stops at every newline, as any line parser must.
    group.bench_function("memchr_newline_positions", |b| {
        b.iter(|| memchr::memchr_iter(b'\n', black_box(bytes)).fold(0usize, |acc, at| acc ^ at))
    });
    group.bench_function("framing", |b| {
        b.iter(|| {
            let mut parser = Parser::new();
            let mut total = 0;
            for chunk in black_box(bytes).chunks(CHUNK) {
                let _ = parser.feed(chunk, |event| {
                    total += event.data.len();
                    ControlFlow::Continue(())
                });
            }
            total
        })
    });
    group.bench_function("framing_and_decode", |b| {
        b.iter(|| {
            let mut parser = Parser::new();
            let mut scratch = Scratch::new();
            let mut total = 0;
            for chunk in black_box(bytes).chunks(CHUNK) {
                let _ = parser.feed(chunk, |event| {
                    total += match decode_borrowed(event.data, &mut scratch).unwrap() {
                        Decoded::Text { text, .. } => text.len(),
                        Decoded::Event(event) => usize::from(event == StreamEvent::Ping),
                    };
                    ControlFlow::Continue(())
                });
            }
            total
        })
    });
    group.bench_function("parse_and_assemble", |b| b.iter(|| parse_and_assemble(black_box(bytes))));
    group.bench_function("parse_and_assemble_events", |b| b.iter(|| parse_and_assemble_events(black_box(bytes))));
    group.bench_function("parse_and_assemble_owned", |b| b.iter(|| parse_and_assemble_owned(black_box(bytes))));
    group.bench_function("event_stream_and_assemble", |b| b.iter(|| event_stream_and_assemble(black_box(bytes))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
