//! SSE parse + assemble throughput against a bare memchr newline scan over the same bytes.
//!
//! The input is a generated ~50 MB Messages stream of text blocks and tool_use blocks, with
//! deltas of 1 to 64 characters (the sizes the API streams), fed in 16 KiB chunks as a socket
//! would deliver them. Beside two memchr baselines: framing alone; the synchronous core of the
//! client (`parse_and_assemble`: `Parser::feed_with` a `decode::Intake`, serde per event); the
//! serde reference with one owned `StreamEvent` per event (`parse_and_assemble_owned`); and
//! what the engine runs (`reply_and_assemble`: the `Reply` over a body stream, read to its end
//! with text joined per read as the engine joins it). Before criterion starts, the last two are also timed in
//! interleaved pairs with the newline scan (`common::Interleaved`), and the median ratio is
//! printed. `cargo bench --bench sse`; the ratios go to docs/performance.md.

mod common;

use std::hint::black_box;
use std::ops::ControlFlow;

use agentloop::engine::reply_steps::{ReplySteps, Seen};
use agentloop::internals::anthropic::Parser;
use agentloop::internals::anthropic::sse_reply;
use agentloop::internals::anthropic::{Intake, decode};
use agentloop::model::assemble::{Assembler, Step};
use agentloop::model::reply;
use common::{Interleaved, Rng};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const TARGET_BYTES: usize = 50 * 1024 * 1024;
const CHUNK: usize = 16 * 1024;

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

/// The synchronous core of the client: each chunk fed to the parser with a `decode::Intake`
/// (each event decoded by serde and pushed); `finish()` parses the tool inputs.
fn parse_and_assemble(bytes: &[u8]) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    for chunk in bytes.chunks(CHUNK) {
        let mut intake = Intake::new(&mut assembler, |step: Step<'_>| {
            black_box(step);
        });
        let _ = parser.feed_with(chunk, &mut intake);
        assert!(intake.failure().is_none());
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

/// Every event framed by the parser, then `push(assembler, data)`; `finish()`.
fn assemble_each_event(bytes: &[u8], push: fn(&mut Assembler, &str)) -> usize {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    for chunk in bytes.chunks(CHUNK) {
        let _ = parser.feed(chunk, |event| {
            push(&mut assembler, event.data);
            ControlFlow::Continue(())
        });
    }
    let done = assembler.finish();
    assert!(done.complete);
    done.content.len()
}

/// The reference: parser events read by serde into one owned `StreamEvent` each, pushed.
fn parse_and_assemble_owned(bytes: &[u8]) -> usize {
    assemble_each_event(bytes, |asm, data| {
        asm.push(decode(data).unwrap()).unwrap();
    })
}

/// What the engine runs: the `Reply` over a body of chunks, read to its end, the steps of each
/// read gathered by the engine's own `ReplySteps` (the text of a read joined into the one
/// string of its `TextDelta` event).
fn reply_and_assemble(bytes: &'static [u8]) -> usize {
    let body = futures::stream::iter(bytes.chunks(CHUNK).map(Ok::<_, std::io::Error>));
    let mut reply = sse_reply(body, std::time::Duration::from_secs(60));
    let mut assembler = Assembler::new();
    let mut shown = 0;
    futures::executor::block_on(async {
        let mut steps = ReplySteps::default();
        loop {
            let mut note = |step: Step<'_>| steps.note(step);
            let Some(read) = reply::read(&mut reply, &mut assembler, &mut note).await else { break };
            read.unwrap();
            for seen in steps.take() {
                if let Seen::Text { text, .. } = seen {
                    shown += black_box(text).len();
                }
            }
        }
    });
    let done = assembler.finish();
    assert!(done.complete && shown > 0);
    done.content.len()
}

/// The baseline: memchr visiting every newline.
fn newline_positions(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).fold(0usize, |acc, at| acc ^ at)
}

/// The scan and `f` timed in interleaved pairs ([`Interleaved`]), so that drift between them
/// (clock speed, other load) falls on both sides: the median, lowest and highest of the
/// per-pair ratios (speed of `f` over speed of the scan).
fn paired_ratio(bytes: &'static [u8], name: &str, f: fn(&'static [u8]) -> usize) {
    const PAIRS: usize = 31;
    let run = Interleaved::measure(PAIRS, 1, &|| newline_positions(black_box(bytes)), &|| f(black_box(bytes)));
    let pct = |r: f64| 100.0 * r;
    eprintln!(
        "paired, {PAIRS} pairs: {name} at {:.1}% of the positions scan (lowest {:.1}%, highest {:.1}%)",
        pct(run.median()),
        pct(run.lowest()),
        pct(run.highest())
    );
}

fn bench(c: &mut Criterion) {
    // Leaked so that the stream adapter (which wants a 'static body) can read it too.
    let bytes: &'static [u8] = generate().leak();
    let events = memchr::memmem::find_iter(bytes, b"\n\n").count();
    eprintln!("input: {} bytes, {events} events, {CHUNK}-byte chunks", bytes.len());
    paired_ratio(bytes, "reply_and_assemble", reply_and_assemble);
    paired_ratio(bytes, "parse_and_assemble", parse_and_assemble);
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    // The baseline the issue names: memchr's newline count (a dedicated SIMD counting loop).
    // memchr's newline count: a dedicated SIMD counting loop that never stops at a newline.
    group.bench_function("memchr_newline_count", |b| b.iter(|| memchr::memchr_iter(b'\n', black_box(bytes)).count()));
    // The baseline: a scan that stops at every newline, as any line parser must.
    group.bench_function("memchr_newline_positions", |b| b.iter(|| newline_positions(black_box(bytes))));
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
    group.bench_function("parse_and_assemble", |b| b.iter(|| parse_and_assemble(black_box(bytes))));
    group.bench_function("parse_and_assemble_owned", |b| b.iter(|| parse_and_assemble_owned(black_box(bytes))));
    group.bench_function("reply_and_assemble", |b| b.iter(|| reply_and_assemble(black_box(bytes))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
