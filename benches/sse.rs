//! SSE parse + assemble throughput against a bare memchr newline count over the same bytes.
//!
//! The input is a generated ~50 MB Messages stream of text blocks and tool_use blocks, with
//! deltas of 1 to 64 characters (the sizes the API streams), fed in 16 KiB chunks as a socket
//! would deliver them. Stages are measured separately (framing, framing + decode, everything)
//! beside two memchr baselines. `cargo bench --bench sse`; the ratios go to
//! docs/performance.md.

use std::hint::black_box;

use agentloop::model::anthropic::decode::decode;
use agentloop::model::anthropic::sse::Parser;
use agentloop::model::assemble::Assembler;
use agentloop::protocol::StreamEvent;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
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

fn parse_and_assemble(bytes: &[u8]) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    for chunk in bytes.chunks(CHUNK) {
        parser.push(chunk);
        while let Some(event) = parser.next_event() {
            assembler.push(decode(event.data).unwrap()).unwrap();
        }
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

fn bench(c: &mut Criterion) {
    let bytes = generate();
    let events = memchr::memmem::find_iter(&bytes, b"\n\n").count();
    eprintln!("input: {} bytes, {events} events, {CHUNK}-byte chunks", bytes.len());
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    // The baseline the issue names: memchr's newline count (a dedicated SIMD counting loop).
    group.bench_function("memchr_newline_count", |b| b.iter(|| memchr::memchr_iter(b'\n', black_box(&bytes)).count()));
    // A scan that stops at every newline, as any line parser must.
    group.bench_function("memchr_newline_positions", |b| {
        b.iter(|| memchr::memchr_iter(b'\n', black_box(&bytes)).fold(0usize, |acc, at| acc ^ at))
    });
    group.bench_function("framing", |b| {
        b.iter(|| {
            let mut parser = Parser::new();
            let mut total = 0;
            for chunk in black_box(&bytes).chunks(CHUNK) {
                parser.push(chunk);
                while let Some(event) = parser.next_event() {
                    total += event.data.len();
                }
            }
            total
        })
    });
    group.bench_function("framing_and_decode", |b| {
        b.iter(|| {
            let mut parser = Parser::new();
            let mut pings = 0;
            for chunk in black_box(&bytes).chunks(CHUNK) {
                parser.push(chunk);
                while let Some(event) = parser.next_event() {
                    pings += usize::from(decode(event.data).unwrap() == StreamEvent::Ping);
                }
            }
            pings
        })
    });
    group.bench_function("parse_and_assemble", |b| b.iter(|| parse_and_assemble(black_box(&bytes))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
