//! Benchmark (a) of issue 3: a reply with 5 Bash calls streamed over about 1 s, each call
//! taking about 200 ms. Wall time with execution while the reply streams versus after it.
//!
//! `cargo bench --bench streaming` prints the medians of several runs of each mode and their
//! ratio (target: streaming ≤ 0.6× after-the-reply). Both modes run in the same process, one
//! after the other, so the ratio is measured under the same machine load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop::engine::clock::SystemClock;
use agentloop::harness::{run_scenario_with, scenario_options};
use agentloop::scenario::Scenario;
use agentloop::tools::Registry;
use serde_json::json;

const RUNS: usize = 5;

fn scenario() -> Scenario {
    let mut content = Vec::new();
    for i in 0..5 {
        content.push(json!({"type": "tool_use", "name": "Bash", "input": {"command": "sleep 0.2", "description": format!("step {i}")}}));
        content
            .push(json!({"type": "text", "text": "Now the next step of the plan, explained in a sentence or two. "}));
    }
    let doc = json!({
        "name": "bench-streaming",
        "prompt": "Run the five steps.",
        "settings": {"permissions": {"allow": ["Bash(sleep:*)"]}},
        "responses": [
            {"content": content, "chunk_delay_ms": 20},
            {"content": [{"type": "text", "text": "All five steps ran."}]}
        ]
    });
    Scenario::parse("bench-streaming.json", &doc.to_string()).expect("the bench scenario parses")
}

async fn once(s: &Scenario, stream_tools: bool) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut options = scenario_options(s);
    options.stream_tools = stream_tools;
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
    let mut streaming = Vec::new();
    let mut after = Vec::new();
    for _ in 0..RUNS {
        streaming.push(once(&s, true).await);
        after.push(once(&s, false).await);
    }
    let (a, b) = (median(streaming), median(after));
    println!("execution while streaming: median {:.0} ms over {RUNS} runs", a.as_secs_f64() * 1e3);
    println!("execution after the reply: median {:.0} ms over {RUNS} runs", b.as_secs_f64() * 1e3);
    println!("ratio streaming / after: {:.2} (target <= 0.60)", a.as_secs_f64() / b.as_secs_f64());
}
