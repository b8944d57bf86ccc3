//! Issue 9: the cost of a permission check on a Bash call. Target: a median under 50 µs per
//! command, so that the check never shows in a turn.
//!
//! `cargo bench --bench permissions` generates 10,000 command lines as a coding agent writes
//! them (`common::commands`: git, cargo, npm, pytest, viewing and searching, pipelines, `&&`
//! chains, loops, `$(…)`, `bash -c`, here-documents; about 40% compound, 10 to 300 bytes) and
//! checks each as the engine does: `Bash.is_concurrency_safe(&input)` says whether the call
//! only reads (the executor schedules on it), and `Policy::decide(&Bash, &input)` decides, under a realistic rule
//! set in the default mode, in a temporary working directory that holds a small project and a
//! real `git init` repository. The JSON inputs are built before any timing.
//!
//! Criterion times all 10,000 checks together. Then each line is timed on its own, one call at
//! a time, in `ROUNDS` rounds over all lines (so a line never runs twice in a row, and drift in
//! the machine's speed falls on every line alike); the median of a line's rounds is its time,
//! and the median, 99th percentile and maximum of those over the lines are printed, for the
//! whole check and, timed in the same rounds, for each of its two halves.

mod common;

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentloop::permissions::{Decision, Mode, Policy};
use agentloop::tools::Bash;
use agentloop::tools::Tool;
use common::commands::{CommandLine, command_lines};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

/// Command lines checked.
const LINES: usize = 10_000;
/// Timings of each line (odd, so the median is one of them).
const ROUNDS: usize = 21;
/// The target for the median per command.
const TARGET_MICROS: f64 = 50.0;

const ALLOW: &[&str] = &[
    "Bash(git status:*)",
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(cargo test:*)",
    "Bash(npm run build:*)",
    "Bash(ls:*)",
];
const DENY: &[&str] = &["Bash(rm:*)", "Bash(git push:*)", "Bash(curl:*)", "Read(./secrets/**)", "Read(**/.env)"];

/// A small project: sources, tests, secrets, an `.env`, and a git repository.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let files = [
        ("Cargo.toml", "[package]\nname = \"foo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n"),
        ("package.json", "{\"name\": \"web\", \"scripts\": {\"build\": \"tsc\", \"test\": \"vitest\"}}\n"),
        ("README.md", "# foo\n"),
        ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        ("src/lib.rs", "pub mod config;\n"),
        ("src/config.rs", "pub struct Config;\n"),
        ("src/engine/mod.rs", "// TODO: the engine\n"),
        ("tests/test_parser.py", "def test_parses():\n    assert True\n"),
        ("web/src/config.ts", "export const retries = 3;\n"),
        ("secrets/api.key", "not-a-real-key\n"),
        (".env", "TOKEN=not-a-real-token\n"),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dir");
        std::fs::write(path, text).expect("write file");
    }
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "initial"]);
    dir
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(root).status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("warning: `git {}` failed in the bench workspace; checks that read .git will not", args.join(" "));
    }
}

fn policy(cwd: &Path) -> Policy {
    let strings = |rules: &[&str]| rules.iter().map(|r| r.to_string()).collect::<Vec<_>>();
    Policy::new(Mode::Default, cwd.to_path_buf()).with_rules(&strings(ALLOW), &strings(DENY), &[]).expect("rules parse")
}

/// What the engine does before a Bash call runs.
fn check(policy: &Policy, input: &Value) -> Decision {
    black_box(Bash.is_concurrency_safe(input));
    policy.decide(&Bash, input)
}

/// Each of `count` lines timed alone under each function of `timed`, `ROUNDS` times: round
/// after round, each function over all lines in turn (so a line never runs twice in a row, and
/// drift in the machine's speed falls on every line and function alike). For each function,
/// the median of each line's rounds.
fn per_line_medians(count: usize, timed: &[&dyn Fn(usize)]) -> Vec<Vec<Duration>> {
    let mut times = vec![vec![Vec::with_capacity(ROUNDS); count]; timed.len()];
    for _ in 0..ROUNDS {
        for (f, times) in timed.iter().zip(&mut times) {
            for (line, times) in times.iter_mut().enumerate() {
                let start = Instant::now();
                f(black_box(line));
                times.push(start.elapsed());
            }
        }
    }
    times
        .into_iter()
        .map(|lines| {
            lines
                .into_iter()
                .map(|mut t| {
                    t.sort_unstable();
                    t[ROUNDS / 2]
                })
                .collect()
        })
        .collect()
}

/// Median, 99th percentile and maximum of `times`, sorted in place.
fn spread(times: &mut [Duration]) -> (Duration, Duration, Duration) {
    times.sort_unstable();
    let at = |q: usize| times[(times.len() * q / 100).min(times.len() - 1)];
    (at(50), at(99), times[times.len() - 1])
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn describe(lines: &[CommandLine], read_only: &[bool], decisions: &[Decision]) {
    let mut lengths: Vec<usize> = lines.iter().map(|l| l.text.len()).collect();
    lengths.sort_unstable();
    let mut distinct: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let compound = lines.iter().filter(|l| l.compound).count();
    let allowed = decisions.iter().filter(|d| matches!(d, Decision::Allow { .. })).count();
    let by_rule =
        decisions.iter().filter(|d| matches!(d, Decision::Deny(why) if why.contains("denied by the rule"))).count();
    let pct = |n: usize| 100.0 * n as f64 / lines.len() as f64;
    eprintln!(
        "{} command lines ({} distinct): {:.1}% compound; length {}–{} bytes, median {}; \
         {:.1}% read-only (is_concurrency_safe)",
        lines.len(),
        distinct.len(),
        pct(compound),
        lengths[0],
        lengths[lengths.len() - 1],
        lengths[lengths.len() / 2],
        pct(read_only.iter().filter(|r| **r).count()),
    );
    eprintln!(
        "decisions: {:.1}% allowed, {:.1}% denied by a deny rule, {:.1}% denied otherwise \
         (mode default, nobody to ask)",
        pct(allowed),
        pct(by_rule),
        pct(lines.len() - allowed - by_rule)
    );
}

fn bench(c: &mut Criterion) {
    let dir = workspace();
    let policy = policy(dir.path());
    let lines = command_lines(0x5eed_0009_c0de_d00d, LINES);
    let inputs: Vec<Value> = lines.iter().map(|l| json!({"command": l.text})).collect();
    let read_only: Vec<bool> = inputs.iter().map(|i| Bash.is_concurrency_safe(i)).collect();
    let decisions: Vec<Decision> = inputs.iter().map(|i| check(&policy, i)).collect();
    describe(&lines, &read_only, &decisions);
    // Not timings: the policy must be deciding, or the numbers mean nothing.
    let verdict = |command: &str| check(&policy, &json!({"command": command}));
    assert!(matches!(verdict("git status --short"), Decision::Allow { .. }));
    assert!(matches!(verdict("rm -rf build"), Decision::Deny(_)));

    let mut group = c.benchmark_group("permissions");
    group.throughput(Throughput::Elements(LINES as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("is_concurrency_safe_and_decide_10000_lines", |b| {
        b.iter(|| {
            for input in &inputs {
                black_box(check(&policy, black_box(input)));
            }
        })
    });
    group.finish();

    // The clock's own cost, included in every per-call time below.
    let clock = |_: usize| {};
    let whole = |line: usize| {
        black_box(check(&policy, &inputs[line]));
    };
    let safe = |line: usize| {
        black_box(Bash.is_concurrency_safe(&inputs[line]));
    };
    let decide = |line: usize| {
        black_box(policy.decide(&Bash, &inputs[line]));
    };
    let [mut clock, mut whole, mut safe, mut decide] =
        <[_; 4]>::try_from(per_line_medians(LINES, &[&clock, &whole, &safe, &decide])).expect("four");
    let (clock_median, _, _) = spread(&mut clock);
    let compound: Vec<Duration> = whole.iter().zip(&lines).filter(|(_, l)| l.compound).map(|(t, _)| *t).collect();
    let simple: Vec<Duration> = whole.iter().zip(&lines).filter(|(_, l)| !l.compound).map(|(t, _)| *t).collect();
    let slowest = whole.iter().enumerate().max_by_key(|(_, t)| **t).map(|(i, _)| i).expect("lines");

    let (median, p99, max) = spread(&mut whole);
    eprintln!(
        "permission check: median {:.2} µs/command, p99 {:.2} µs, max {:.2} µs over {LINES} lines \
         (target < {TARGET_MICROS:.0} µs)",
        micros(median),
        micros(p99),
        micros(max)
    );
    for (name, mut times) in [("compound", compound), ("simple", simple)] {
        let (median, p99, max) = spread(&mut times);
        eprintln!(
            "  {name} lines ({}): median {:.2} µs, p99 {:.2} µs, max {:.2} µs",
            times.len(),
            micros(median),
            micros(p99),
            micros(max)
        );
    }
    for (name, times) in [("is_concurrency_safe", &mut safe), ("decide", &mut decide)] {
        let (median, p99, max) = spread(times);
        eprintln!(
            "  {name} alone: median {:.2} µs, p99 {:.2} µs, max {:.2} µs",
            micros(median),
            micros(p99),
            micros(max)
        );
    }
    let mut shown: String = lines[slowest].text.chars().take(100).collect();
    if shown.len() < lines[slowest].text.len() {
        shown.push('…');
    }
    eprintln!("  slowest line: {shown:?}");
    eprintln!(
        "  each call timed alone, median of {ROUNDS} rounds per line; the clock's own cost \
         (median {:.3} µs) is included",
        micros(clock_median)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
