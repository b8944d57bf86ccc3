//! Benchmark (a) of issue 3: a reply with 5 read-only Bash calls streamed over about 1 s, each
//! call taking about 200 ms. Wall time with execution while the reply streams versus after it.
//!
//! Only concurrency-safe (read-only) calls start before the reply's `message_stop` (a call that
//! can change anything waits for the whole reply, so a retried stream never runs it twice), so
//! the calls here are read-only: `timeout 0.2 tail -f /dev/null || true`, which the read-only
//! classifier accepts and which takes 200 ms. Two settings are measured: one call at a time
//! (`max_tool_concurrency = 1`, the case of calls that cannot overlap each other) and the
//! default concurrency, where the five calls may also overlap each other after the reply.
//!
//! `cargo bench --bench streaming` prints the medians of several runs of each mode and their
//! ratios (target for one call at a time: streaming ≤ 0.6× after-the-reply). All modes run in
//! the same process, interleaved, so the ratios are measured under the same machine load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop::engine::clock::SystemClock;
use agentloop::harness::{run_scenario_with, scenario_options};
use agentloop::internals::shell::is_read_only;
use agentloop::scenario::Scenario;
use agentloop::tools::Registry;
use serde_json::json;

const RUNS: usize = 5;

/// A read-only command that takes about 200 ms and succeeds.
const SLOW_READ: &str = "timeout 0.2 tail -f /dev/null || true";

fn scenario() -> Scenario {
    assert!(is_read_only(SLOW_READ), "the bench needs a read-only command");
    let mut content = Vec::new();
    for i in 0..5 {
        content.push(json!({"type": "tool_use", "name": "Bash", "input": {"command": SLOW_READ, "description": format!("step {i}")}}));
        content
            .push(json!({"type": "text", "text": "Now the next step of the plan, explained in a sentence or two. "}));
    }
    let doc = json!({
        "name": "bench-streaming",
        "prompt": "Run the five steps.",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [
            {"content": content, "chunk_delay_ms": 20},
            {"content": [{"type": "text", "text": "All five steps ran."}]}
        ]
    });
    Scenario::parse("bench-streaming.json", &doc.to_string()).expect("the bench scenario parses")
}

async fn once(s: &Scenario, stream_tools: bool, max_tool_concurrency: Option<usize>) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut options = scenario_options(s);
    options.stream_tools = stream_tools;
    if let Some(limit) = max_tool_concurrency {
        options.max_tool_concurrency = limit;
    }
    let start = Instant::now();
    let run = run_scenario_with(s, dir.path(), Arc::new(SystemClock::new()), Registry::standard(), options)
        .await
        .expect("the bench run works");
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let s = scenario();
    for (label, limit, target) in
        [("one call at a time", Some(1), " (target <= 0.60)"), ("default concurrency", None, "")]
    {
        let mut streaming = Vec::new();
        let mut after = Vec::new();
        for _ in 0..RUNS {
            streaming.push(once(&s, true, limit).await);
            after.push(once(&s, false, limit).await);
        }
        let (a, b) = (median(streaming), median(after));
        println!("{label}: execution while streaming: median {:.0} ms over {RUNS} runs", a.as_secs_f64() * 1e3);
        println!("{label}: execution after the reply: median {:.0} ms over {RUNS} runs", b.as_secs_f64() * 1e3);
        println!("{label}: ratio streaming / after: {:.2}{target}", a.as_secs_f64() / b.as_secs_f64());
    }
}
