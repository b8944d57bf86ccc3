//! Issue 11 over HTTP: agentloop's own CPU time per turn in a long session against a local
//! Messages API server, as users run it (`agentloop run -p … --model claude-sonnet-4-5`).
//!
//! The server (`benches/common/turn_server.rs`) runs on threads of this process and answers
//! request `k` with a streamed reply of the same shape as `run_e2e`'s mock (built with the
//! tests' `Sse`): a short text and one `tool_use` of Read on a small file, and the last
//! request with the final answer. The optimised binary runs as a child process with
//! `ANTHROPIC_BASE_URL` pointing at it and `--max-turns N+10`. Its CPU time is the child's own
//! `ru_utime + ru_stime` from `wait4`, so the server's work (in this process) is not in it.
//!
//! Sizes 0 (the answer at once: one request, start-up and exit), 100, 900 and 1000 tool turns
//! are each run `ROUNDS` times, the sizes interleaved within a round (the order alternating
//! between rounds), and the medians reported. Besides the per-turn average of a whole run
//! (CPU / N), differences of medians give the average cost of a turn inside a range:
//! turns 1–100 are `cpu(100) − cpu(0)` over 100, turns 901–1000 `cpu(1000) − cpu(900)` over
//! 100. With a cost per turn that does not grow with the history those two are equal; the
//! issue measured 0.08 ms per turn at the start and 5.5 ms by turn 1000 before its fixes.
//! Every run is checked to exit 0, print the answer and send every tool result back.

mod common;

#[path = "../tests/common/mock_api.rs"]
mod mock_api;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::turn_server::{Turn, TurnServer};
use mock_api::Sse;
use serde_json::json;

const BINARY: &str = env!("CARGO_BIN_EXE_agentloop");

/// The binary to run: `AGENTLOOP_BENCH_BINARY` when set (to compare another build in the
/// same sitting), else the one cargo built for this benchmark.
fn binary() -> String {
    std::env::var("AGENTLOOP_BENCH_BINARY").unwrap_or_else(|_| BINARY.to_owned())
}
const MODEL: &str = "claude-sonnet-4-5";
const PROMPT: &str = "Read the notes one by one, then say how they are.";
const ANSWER: &str = "Read every note; all is well.";
const SIZES: [usize; 4] = [0, 100, 900, 1000];
const ROUNDS: usize = 3;

/// The replies of a session of `turns` Read turns, then the answer.
fn script(turns: usize) -> Vec<Turn> {
    let mut script: Vec<Turn> = (0..turns)
        .map(|i| {
            let file = format!("notes/{}.txt", i % 10);
            Turn {
                sse: Sse::new(MODEL, 1200 + 60 * i as u64)
                    .text(&format!("Reading {file}."))
                    .tool_use(&id(i), "Read", &json!({ "file_path": file }))
                    .stop("tool_use"),
                expect: if i == 0 { PROMPT.to_owned() } else { format!("\"{}\"", id(i - 1)) },
            }
        })
        .collect();
    script.push(Turn {
        sse: Sse::new(MODEL, 1200 + 60 * turns as u64).text(ANSWER).stop("end_turn"),
        expect: if turns == 0 { PROMPT.to_owned() } else { format!("\"{}\"", id(turns - 1)) },
    });
    script
}

fn id(turn: usize) -> String {
    format!("toolu_{turn:05}")
}

/// What one run measured.
#[derive(Clone, Copy)]
struct Run {
    wall: Duration,
    user: Duration,
    system: Duration,
    rss_kib: u64,
    /// The size of the last request's body, in bytes.
    last_body: usize,
}

impl Run {
    fn cpu(&self) -> Duration {
        self.user + self.system
    }
}

/// One session of `turns` Read turns as a fresh process in a fresh directory.
#[expect(clippy::zombie_processes, reason = "the child is reaped by `wait4`, which also reports its usage")]
fn once(turns: usize) -> Run {
    let server = TurnServer::start(script(turns));
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("notes")).expect("work dir");
    for i in 0..10 {
        std::fs::write(work.join(format!("notes/{i}.txt")), format!("note {i}: a short line of text\n"))
            .expect("write a note");
    }
    let out_path = dir.path().join("out.txt");
    let out = std::fs::File::create(&out_path).expect("output file");
    let mut command = Command::new(binary());
    command
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .args(["run", "-p", PROMPT, "--model", MODEL, "--max-turns"])
        .arg((turns + 10).to_string())
        .arg("--cwd")
        .arg(&work)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null());
    let start = Instant::now();
    let child = command.spawn().expect("spawn agentloop");
    let (status, usage) = common::child::wait4(child.id());
    let wall = start.elapsed();
    let printed = std::fs::read_to_string(&out_path).expect("read output");
    assert!(status == 0 && printed.contains(ANSWER), "the run of {turns} turns failed (status {status}): {printed}");
    let problems = server.problems();
    assert!(problems.is_empty(), "the server saw bad requests:\n{}", problems.join("\n"));
    let sizes = server.body_sizes();
    assert_eq!(sizes.len(), turns + 1, "one request per turn and one for the answer");
    let (user, system) = common::child::user_and_system(&usage);
    Run { wall, user, system, rss_kib: common::child::peak_rss_kib(&usage), last_body: sizes[turns] }
}

/// One run's line: round `round` (from 0) of a session of `turns` turns.
fn print_round(round: usize, turns: usize, run: &Run) {
    println!(
        "  round {}: {turns:>4} turns: wall {:>8.1} ms, CPU {:>7.1} ms (user {:.1}, sys {:.1}), peak RSS {:.1} MiB, \
         last body {} B",
        round + 1,
        ms(run.wall),
        ms(run.cpu()),
        ms(run.user),
        ms(run.system),
        mib(run.rss_kib),
        run.last_body
    );
}

fn median(runs: &[Run], key: impl Fn(&Run) -> f64) -> f64 {
    let mut values: Vec<f64> = runs.iter().map(key).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs a short session once as a smoke test.
    if !std::env::args().any(|a| a == "--bench") {
        let run = once(10);
        eprintln!(
            "long_session_http smoke run (10 turns): wall {:.1} ms, CPU {:.1} ms, {:.1} MiB",
            ms(run.wall),
            ms(run.cpu()),
            mib(run.rss_kib)
        );
        return;
    }
    println!("binary: {}", binary());
    if std::env::var_os("AGENTLOOP_BENCH_LINEAR").is_some() {
        linearity();
        return;
    }
    println!("load average before: {}", loadavg());
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); SIZES.len()];
    for round in 0..ROUNDS {
        let order: Vec<usize> =
            if round % 2 == 0 { (0..SIZES.len()).collect() } else { (0..SIZES.len()).rev().collect() };
        for i in order {
            let run = once(SIZES[i]);
            print_round(round, SIZES[i], &run);
            runs[i].push(run);
        }
    }
    println!("load average after: {}", loadavg());
    let cpu: Vec<f64> = runs.iter().map(|r| median(r, |x| ms(x.cpu()))).collect();
    let wall: Vec<f64> = runs.iter().map(|r| median(r, |x| ms(x.wall))).collect();
    let rss: Vec<f64> = runs.iter().map(|r| median(r, |x| mib(x.rss_kib))).collect();
    println!("medians of {ROUNDS} runs:");
    for (i, turns) in SIZES.iter().enumerate() {
        let per_turn =
            if *turns == 0 { String::new() } else { format!(", CPU per turn {:.3} ms", cpu[i] / *turns as f64) };
        println!(
            "  {turns:>4} turns: wall {:.1} ms, CPU {:.1} ms{per_turn}, peak RSS {:.1} MiB, last body {} B",
            wall[i], cpu[i], rss[i], runs[i][0].last_body
        );
    }
    let (c0, c100, c900, c1000) = (cpu[0], cpu[1], cpu[2], cpu[3]);
    println!(
        "ratio 1000/100: CPU {:.2} (linear is 10), wall {:.2}, peak RSS {:.2}",
        c1000 / c100,
        wall[3] / wall[1],
        rss[3] / rss[1]
    );
    println!(
        "CPU per turn, whole run: {:.3} ms at 100 turns, {:.3} ms at 1000 turns (ratio {:.2})",
        c100 / 100.0,
        c1000 / 1000.0,
        (c1000 / 1000.0) / (c100 / 100.0)
    );
    println!(
        "CPU per turn by differences: turns 1-100 {:.3} ms, turns 101-1000 {:.3} ms, turns 901-1000 {:.3} ms \
         (start-up and the answer alone: {:.1} ms)",
        (c100 - c0) / 100.0,
        (c1000 - c100) / 900.0,
        (c1000 - c900) / 100.0,
        c0
    );
}

/// Issue 26's measure of linear cost: sessions of 500 and 4000 turns, `ROUNDS` runs each
/// (interleaved), and the 4000-turn CPU against 8 times the 500-turn CPU (at most 1.5).
fn linearity() {
    const SMALL: usize = 500;
    const LARGE: usize = 4000;
    println!("load average before: {}", loadavg());
    let mut small = Vec::new();
    let mut large = Vec::new();
    for round in 0..ROUNDS {
        let sizes = if round % 2 == 0 { [SMALL, LARGE] } else { [LARGE, SMALL] };
        for turns in sizes {
            let run = once(turns);
            print_round(round, turns, &run);
            if turns == SMALL { small.push(run) } else { large.push(run) }
        }
    }
    println!("load average after: {}", loadavg());
    let (cpu_small, cpu_large) = (median(&small, |x| ms(x.cpu())), median(&large, |x| ms(x.cpu())));
    let (rss_small, rss_large) = (median(&small, |x| mib(x.rss_kib)), median(&large, |x| mib(x.rss_kib)));
    println!(
        "medians of {ROUNDS}: {SMALL} turns CPU {cpu_small:.1} ms, {rss_small:.1} MiB; {LARGE} turns CPU {cpu_large:.1} ms, \
         {rss_large:.1} MiB"
    );
    println!(
        "CPU({LARGE}) / (8 x CPU({SMALL})) = {:.2} (linear is 1, the target at most 1.5); memory kept per turn between \
         them {:.1} KiB",
        cpu_large / (8.0 * cpu_small),
        (rss_large - rss_small) * 1024.0 / (LARGE - SMALL) as f64
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
