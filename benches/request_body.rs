//! Benchmark (b) of issue 4: building the `POST /v1/messages` body for a 200-message history
//! (`model::anthropic::request::to_json`: model, system prompt, the six tool definitions,
//! the messages and the three `cache_control` breakpoints) versus `serde_json::to_vec` of the
//! same messages alone. Target: at most 1.5× the bare serialisation.
//!
//! `cargo bench --bench request_body` runs both under criterion, then measures the ratio once
//! more by interleaving the two (median of per-round ratios), so that machine load hits both
//! sides alike, and prints it. The history is generated deterministically: a prompt, then 99
//! turns of an assistant message (text and a `tool_use`) and a user message (its `tool_result`,
//! 500 to 4,000 characters of code with quotes, backslashes, tabs and some non-ASCII text).

mod common;

use std::hint::black_box;
use std::time::Duration;

use agentloop::internals::anthropic::to_json;
use agentloop::model::{ModelRequest, Purpose};
use agentloop::protocol::{ContentBlock, Message, Role, Transcript};
use agentloop::tools::Registry;
use common::{Interleaved, Rng};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// Messages in the history.
const MESSAGES: usize = 200;

/// Lines of code as a Read result shows them: `     N\t` then the line.
fn code(rng: &mut Rng, chars: usize) -> String {
    const LINES: &[&str] = &[
        "fn main() {",
        "    let path = \"src\\\\lib.rs\";",
        "    println!(\"{} → {}\", a, b);",
        "    // Parse the \"quoted\" value; ü and 中文 are fine.",
        "\tif x < 10 && y > 2 { return Err(\"bad\".into()); }",
        "}",
        "",
        "use std::collections::HashMap;",
    ];
    let mut out = String::with_capacity(chars + 80);
    let mut n = 1;
    while out.len() < chars {
        out.push_str(&format!("{n:>6}\t{}\n", LINES[rng.below(LINES.len() as u64) as usize]));
        n += 1;
    }
    out
}

fn history() -> Vec<Message> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut messages = vec![Message::user_text("Find where the config is parsed and fix the off-by-one in it.")];
    let mut turn = 0;
    while messages.len() < MESSAGES {
        let id = format!("toolu_{turn:04}");
        let (name, input) = match turn % 3 {
            0 => ("Read", json!({"file_path": format!("src/module_{turn}.rs")})),
            1 => ("Grep", json!({"pattern": "fn parse_[a-z]+\\(", "path": "src", "output_mode": "content"})),
            _ => (
                "Edit",
                json!({"file_path": format!("src/module_{turn}.rs"), "old_string": "i <= n", "new_string": "i < n"}),
            ),
        };
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text(format!("Step {turn}: let me look at the next place the value is used.")),
                ContentBlock::ToolUse { id: id.clone(), name: name.into(), input },
            ],
        });
        let chars = 500 + rng.below(3500) as usize;
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(id, code(&mut rng, chars), false)],
        });
        turn += 1;
    }
    messages.truncate(MESSAGES);
    messages
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: agentloop::engine::options::DEFAULT_SYSTEM_PROMPT.into(),
        system_context: None,
        server_tools: Vec::new(),
        messages: history().into(),
        tools: Registry::standard().definitions(),
        max_tokens: 16_000,
        thinking: None,
        purpose: Purpose::Main,
    }
}

fn body(request: &ModelRequest) -> usize {
    to_json(black_box(request)).expect("the body serialises").len()
}

fn bare(messages: &Transcript) -> usize {
    serde_json::to_vec(black_box(messages)).expect("the messages serialise").len()
}

/// Median over `rounds` of (time of `iters` bodies) / (time of `iters` bare serialisations),
/// interleaved ([`Interleaved`]), and the mean time of one of each.
fn interleaved_ratio(request: &ModelRequest, rounds: usize, iters: usize) -> (f64, Duration, Duration) {
    let run = Interleaved::measure(rounds, iters, &|| body(request), &|| bare(&request.messages));
    (run.median(), run.first_each, run.second_each)
}

fn bench(c: &mut Criterion) {
    let request = request();
    let body_len = body(&request);
    let bare_len = bare(&request.messages);
    eprintln!(
        "history: {} messages; request body {body_len} bytes, bare messages {bare_len} bytes",
        request.messages.len()
    );
    let mut group = c.benchmark_group("request_body");
    group.throughput(Throughput::Bytes(bare_len as u64));
    group.bench_function("to_json_whole_body", |b| b.iter(|| body(&request)));
    group.bench_function("serde_json_to_vec_messages", |b| b.iter(|| bare(&request.messages)));
    group.finish();

    let (ratio, body_time, bare_time) = interleaved_ratio(&request, 41, 50);
    eprintln!(
        "interleaved, 41 rounds of 50: to_json {:.1} µs, serde_json::to_vec(messages) {:.1} µs, \
         median ratio {ratio:.3} (target ≤ 1.5)",
        body_time.as_secs_f64() * 1e6,
        bare_time.as_secs_f64() * 1e6
    );
    let no_tools = ModelRequest { tools: Vec::new(), system: String::new(), ..request.clone() };
    let (ratio, _, _) = interleaved_ratio(&no_tools, 41, 50);
    eprintln!("same, without system prompt and tools (the wrappers' own cost): median ratio {ratio:.3}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
