//! The long-session benchmark of issue 11: a scripted run of 100 and of 1000 Read turns, each
//! run as a separate process of the optimised binary (`agentloop run --model scripted:FILE`).
//!
//! The scenario is generated here: every reply but the last is one `tool_use` of Read on a
//! small file, the last one ends the turn; `max_turns` is set above the number of turns. For
//! each size the benchmark prints the wall time (spawn to exit) and the peak resident set size
//! read with `wait4` (the child's own `ru_maxrss`, as `run_e2e` does) and its CPU time (user +
//! system, from the same `wait4`), then the ratios
//! 1000/100. Targets: 1000 turns in at most 1.5 s and 64 MB, wall ratio at most 15 (linear is
//! 10). Every run is checked to have ended with the final answer.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_agentloop");

/// The binary to run: `AGENTLOOP_BENCH_BINARY` when set (to compare another build in the
/// same sitting), else the one cargo built for this benchmark.
fn binary() -> String {
    std::env::var("AGENTLOOP_BENCH_BINARY").unwrap_or_else(|_| BINARY.to_owned())
}
const ANSWER: &str = "Read every file; all is well.";

/// A scenario of `turns` Read tool turns followed by a final answer.
fn scenario(turns: usize) -> Value {
    let mut responses: Vec<Value> = (0..turns)
        .map(|i| {
            json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": format!("notes/{}.txt", i % 10)}}]})
        })
        .collect();
    responses.push(json!({"content": [{"type": "text", "text": ANSWER}]}));
    let files: serde_json::Map<String, Value> =
        (0..10).map(|i| (format!("notes/{i}.txt"), json!(format!("note {i}: a short line of text\n")))).collect();
    json!({
        "name": format!("long-session-{turns}"),
        "description": "benchmark: many Read turns, then an answer",
        "prompt": "Read the notes one by one.",
        "files": files,
        "options": {"max_turns": turns + 10},
        "responses": responses,
    })
}

/// One run of `turns` turns, writing its session transcript: wall time, CPU time (user +
/// system) and peak RSS in KiB.
fn once(turns: usize) -> (Duration, Duration, u64) {
    run(turns, true)
}

/// One run of `turns` turns, with or without its session transcript.
#[expect(clippy::zombie_processes, reason = "the child is reaped by `wait4`, which also reports its usage")]
fn run(turns: usize, transcript: bool) -> (Duration, Duration, u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("scenario.json");
    std::fs::write(&file, serde_json::to_vec(&scenario(turns)).expect("serialize")).expect("write scenario");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("work dir");
    let out_path = dir.path().join("out.txt");
    let out = std::fs::File::create(&out_path).expect("output file");
    let mut command = Command::new(binary());
    command
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .arg("run")
        .arg("--model")
        .arg(format!("scripted:{}", file.display()))
        .arg("--cwd")
        .arg(&work)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null());
    if !transcript {
        command.arg("--no-session-persistence");
    }
    let start = Instant::now();
    let child = command.spawn().expect("spawn agentloop");
    let (status, usage) = common::child::wait4(child.id());
    let wall = start.elapsed();
    let printed = std::fs::read_to_string(&out_path).expect("read output");
    assert!(status == 0 && printed.contains(ANSWER), "the run of {turns} turns failed (status {status}): {printed}");
    (wall, common::child::cpu_time(&usage), common::child::peak_rss_kib(&usage))
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs a short session once as a smoke test.
    if !std::env::args().any(|a| a == "--bench") {
        let (wall, cpu, rss) = once(10);
        eprintln!("long_session smoke run (10 turns): {:.1} ms, CPU {:.1} ms, {:.1} MiB", ms(wall), ms(cpu), mib(rss));
        return;
    }
    println!("binary: {}", binary());
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", loadavg.trim());
    let (wall_100, cpu_100, rss_100) = once(100);
    let (wall_1000, cpu_1000, rss_1000) = once(1000);
    println!(
        "100 Read turns: wall {:.1} ms, CPU {:.1} ms, peak RSS {:.1} MiB",
        ms(wall_100),
        ms(cpu_100),
        mib(rss_100)
    );
    println!(
        "1000 Read turns: wall {:.1} ms (target <= 1500 ms), CPU {:.1} ms, peak RSS {:.1} MiB (target <= 64 MB)",
        ms(wall_1000),
        ms(cpu_1000),
        mib(rss_1000)
    );
    println!(
        "ratio 1000/100: wall {:.1} (target <= 15; linear is 10), CPU {:.1}, peak RSS {:.1}",
        wall_1000.as_secs_f64() / wall_100.as_secs_f64(),
        cpu_1000.as_secs_f64() / cpu_100.as_secs_f64(),
        rss_1000 as f64 / rss_100 as f64
    );
    // Issue 12: what writing the session transcript (one line per message, one `write` each)
    // adds to the 1000-turn run, in interleaved pairs; target under 5%.
    let mut ratios = Vec::new();
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let (wall_on, cpu_on, _) = run(1000, true);
        let (wall_off, cpu_off, _) = run(1000, false);
        ratios.push(cpu_on.as_secs_f64() / cpu_off.as_secs_f64());
        with.push(ms(wall_on));
        without.push(ms(wall_off));
    }
    ratios.sort_by(f64::total_cmp);
    with.sort_by(f64::total_cmp);
    without.sort_by(f64::total_cmp);
    println!(
        "transcript on/off at 1000 turns, {PAIRS} interleaved pairs: median CPU ratio {:.3} (target < 1.05; range {:.3}-{:.3}), median wall {:.1} vs {:.1} ms",
        ratios[PAIRS / 2],
        ratios[0],
        ratios[PAIRS - 1],
        with[PAIRS / 2],
        without[PAIRS / 2]
    );
    println!("load average after: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}

/// Interleaved pairs of 1000-turn runs with and without the transcript.
const PAIRS: usize = 7;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
