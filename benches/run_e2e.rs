//! Benchmark (c) of issue 4: a whole 2-turn Read task, `agentloop run -p … --model
//! claude-sonnet-4-5`, as a separate process of the optimised binary against a local Messages
//! API mock on 127.0.0.1 that answers at once (a `tool_use` of Read, then the answer).
//!
//! `cargo bench --bench run_e2e` runs it `RUNS` times after `WARMUP` unmeasured runs and
//! prints the median, minimum and maximum wall time (spawn to exit) and the peak resident set
//! size of each run, read with `wait4` (the child's own `ru_maxrss`); then, for scale, the
//! median wall time of `agentloop --version` (start-up alone) and, when GNU time is
//! installed, its "Maximum resident set size" for one run as a cross-check. Targets: under
//! 50 ms and under 20 MB. Every run is checked to have printed the answer.

mod common;

#[path = "../tests/common/mock_api.rs"]
mod mock_api;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_api::{MockApi, ROUND_TRIP_ANSWER as ANSWER, read_round_trip};

const RUNS: usize = 21;
const WARMUP: usize = 3;
const BINARY: &str = env!("CARGO_BIN_EXE_agentloop");

/// The binary to run: `AGENTLOOP_BENCH_BINARY` when set (to compare another build in the
/// same sitting), else the one cargo built for this benchmark.
fn binary() -> String {
    std::env::var("AGENTLOOP_BENCH_BINARY").unwrap_or_else(|_| BINARY.to_owned())
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").expect("write greeting.txt");
    dir
}

/// `launcher… agentloop run …` against `api` in `dir`.
fn task(launcher: &[&str], api: &MockApi, dir: &Path) -> Command {
    let mut command = match launcher {
        [program, args @ ..] => {
            let mut c = Command::new(program);
            c.args(args).arg(binary());
            c
        }
        [] => Command::new(binary()),
    };
    command
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        // The session transcript is written, as in every run, but not into the user's home.
        .env("AGENTLOOP_HOME", dir.join(".agentloop-home"))
        .args(["run", "-p", "Read greeting.txt and tell me what it says", "--model", "claude-sonnet-4-5", "--cwd"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    command
}

/// One measured run: wall time and peak RSS in KiB.
#[expect(clippy::zombie_processes, reason = "the child is reaped by `wait4`, which also reports its usage")]
fn once() -> (Duration, u64) {
    let api = MockApi::start(read_round_trip());
    let dir = work_dir();
    let mut command = task(&[], &api, dir.path());
    command.stderr(Stdio::null());
    let start = Instant::now();
    let mut child = command.spawn().expect("spawn agentloop");
    let (status, usage) = common::child::wait4(child.id());
    let wall = start.elapsed();
    let mut out = String::new();
    child.stdout.take().expect("piped stdout").read_to_string(&mut out).expect("read stdout");
    assert!(status == 0 && out.contains(ANSWER), "the run failed (status {status}): {out}");
    assert_eq!(api.requests().len(), 2);
    // ru_maxrss is in KiB on Linux.
    (wall, usage.ru_maxrss as u64)
}

/// One run under GNU time (`/usr/bin/time -v`): its "Maximum resident set size" line, if
/// the tool is installed.
fn gnu_time_peak() -> Option<String> {
    if !Path::new("/usr/bin/time").exists() {
        return None;
    }
    let api = MockApi::start(read_round_trip());
    let dir = work_dir();
    let out = task(&["/usr/bin/time", "-v"], &api, dir.path()).stderr(Stdio::piped()).output().ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr.lines().find(|l| l.contains("Maximum resident set size")).map(|l| l.trim().to_owned())
}

/// Median wall time of `agentloop --version`: process start-up and exit alone.
fn startup_median() -> Duration {
    let mut walls: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let status = Command::new(binary())
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .expect("run agentloop --version");
            assert!(status.success());
            start.elapsed()
        })
        .collect();
    walls.sort();
    walls[RUNS / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once as a smoke test.
    if !std::env::args().any(|a| a == "--bench") {
        let (wall, rss) = once();
        eprintln!("run_e2e smoke run: {:.1} ms, {:.1} MiB", ms(wall), rss as f64 / 1024.0);
        return;
    }
    for _ in 0..WARMUP {
        once();
    }
    let (mut walls, mut rss): (Vec<Duration>, Vec<u64>) = (0..RUNS).map(|_| once()).unzip();
    walls.sort();
    rss.sort();
    println!("binary: {}", binary());
    println!(
        "2-turn Read task, {RUNS} runs: wall median {:.1} ms (min {:.1}, max {:.1}; target < 50 ms); \
         peak RSS median {:.1} MiB (max {:.1}; target < 20 MB)",
        ms(walls[RUNS / 2]),
        ms(walls[0]),
        ms(walls[RUNS - 1]),
        rss[RUNS / 2] as f64 / 1024.0,
        rss[RUNS - 1] as f64 / 1024.0
    );
    println!("agentloop --version, {RUNS} runs: wall median {:.1} ms", ms(startup_median()));
    match gnu_time_peak() {
        Some(line) => println!("GNU time, one run of the task: {line}"),
        None => println!("GNU time: /usr/bin/time is not installed; no cross-check"),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
