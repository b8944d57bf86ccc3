//! Issue 20: what the sandbox adds to one Bash call. Target: at most 2 ms at the median.
//!
//! `cargo bench --bench sandbox` starts `bash -c true` the way the Bash tool does (its own
//! process group, stdio piped, waited for), `SAMPLES` times in each of four ways, taking
//! turns so that drift in the machine's speed falls on every way alike:
//!
//! - `direct`: `bash -c true`, as before the sandbox;
//! - `helper`: through `agentloop-sandbox` unconfined (the reaper only);
//! - `read-only`: the read-only policy of a call proven read-only;
//! - `writing`: the writing policy of an allowed call (protected paths bind-mounted where a
//!   mount namespace can be made);
//! - `ro+deny`, `wr+deny`: the same with a `Read(./.env)` deny rule in force (its carve-out,
//!   and for the writing policy `/dev`'s).
//!
//! It prints the median, 99th percentile and maximum of each, and the median added to
//! `direct`. Then it times whole calls of the Bash tool (`true`) as a run makes them: without
//! the helper (the library's `Sandbox::none()`, as before issue 20), with the sandbox off
//! (`sandbox.enabled: false`: the helper still reaps what a command leaves, unconfined) and
//! on, and prints what the helper and the sandbox add. No assertion: machines are noisy;
//! docs/performance.md records runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use agentloop::sandbox::{Launch, Network, Policy, Sandbox, SandboxSettings};
use agentloop::tools::Bash;
use agentloop::tools::{Tool, ToolContext};

/// Calls timed per way.
const SAMPLES: usize = 400;
/// The target for the added median, in milliseconds.
const TARGET_MS: f64 = 2.0;

fn main() {
    let exe = env!("CARGO_BIN_EXE_agentloop-sandbox");
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join(".env"), "k").unwrap();
    let temp = tempfile::tempdir().unwrap();
    let deny = vec![cwd.join(".env")];
    let read_only = serde_json::to_string(&Policy::read_only(&cwd, &[], Vec::new())).unwrap();
    let writing = serde_json::to_string(&Policy::writing(&cwd, temp.path(), Vec::new(), Network::CLOSED)).unwrap();
    let read_only_deny = serde_json::to_string(&Policy::read_only(&cwd, &[], deny.clone())).unwrap();
    let writing_deny = serde_json::to_string(&Policy::writing(&cwd, temp.path(), deny, Network::CLOSED)).unwrap();
    let ways: Vec<(&str, Vec<String>)> = vec![
        ("direct", vec!["bash".into(), "-c".into(), "true".into()]),
        ("helper", vec![exe.into(), "--".into(), "bash".into(), "-c".into(), "true".into()]),
        ("read-only", helper(exe, &read_only)),
        ("writing", helper(exe, &writing)),
        ("ro+deny", helper(exe, &read_only_deny)),
        ("wr+deny", helper(exe, &writing_deny)),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(SAMPLES); ways.len()];
    for (i, (_, argv)) in ways.iter().enumerate() {
        // Warm the page cache and check each way works.
        assert!(run(argv, &cwd).is_some(), "{} failed", ways[i].0);
    }
    for _ in 0..SAMPLES {
        for (i, (_, argv)) in ways.iter().enumerate() {
            times[i].push(run(argv, &cwd).expect("the call succeeds"));
        }
    }
    let direct = median(&mut times[0].clone());
    println!("sandbox cost of `bash -c true`, {SAMPLES} calls each (ms):");
    println!("{:<10} {:>8} {:>8} {:>8} {:>8}", "way", "median", "p99", "max", "added");
    for (i, (name, _)) in ways.iter().enumerate() {
        let samples = &mut times[i];
        samples.sort();
        let (med, p99, max) =
            (samples[samples.len() / 2], samples[samples.len() * 99 / 100], samples[samples.len() - 1]);
        println!(
            "{name:<10} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
            ms(med),
            ms(p99),
            ms(max),
            ms(med.saturating_sub(direct))
        );
    }
    let unconfined = median(&mut times[1].clone());
    for (i, (name, _)) in ways.iter().enumerate().skip(2) {
        let added = ms(median(&mut times[i].clone()).saturating_sub(unconfined));
        let verdict = if added <= TARGET_MS { "meets" } else { "misses" };
        println!(
            "{name}: {added:.3} ms added to the unconfined helper at the median ({verdict} the {TARGET_MS} ms target)"
        );
    }
    bash_tool_calls(exe, &cwd);
}

/// Whole Bash tool calls of `true`, read-only and writing, sandbox on and off, in turns.
fn bash_tool_calls(helper: &str, cwd: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let session = |enabled: bool| {
        let settings = SandboxSettings { enabled, ..SandboxSettings::default() };
        Arc::new(Sandbox::for_session(settings, cwd, Some(helper.into())).expect("a sandbox"))
    };
    let (on, off) = (session(true), session(false));
    let context = |sandbox: &Arc<Sandbox>, launch: Launch| ToolContext {
        sandbox: sandbox.clone(),
        launch,
        ..ToolContext::new(cwd)
    };
    let read_only = || Launch::ReadOnly { readable: Vec::new() };
    let ways = [
        ("no helper", context(&Sandbox::none(), Launch::Writing)),
        ("off, read-only", context(&off, read_only())),
        ("on, read-only", context(&on, read_only())),
        ("off, writing", context(&off, Launch::Writing)),
        ("on, writing", context(&on, Launch::Writing)),
    ];
    let input = serde_json::json!({"command": "true"});
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(SAMPLES); ways.len()];
    runtime.block_on(async {
        for _ in 0..SAMPLES {
            for (i, (_, ctx)) in ways.iter().enumerate() {
                let started = Instant::now();
                let output = Bash.call(input.clone(), ctx.clone()).await;
                assert!(!output.is_error, "{}", output.content);
                times[i].push(started.elapsed());
            }
        }
    });
    println!("\nBash tool calls of `true`, {SAMPLES} each (ms):");
    println!("{:<16} {:>8} {:>8} {:>8}", "sandbox", "median", "p99", "max");
    let mut medians = Vec::new();
    for (i, (name, _)) in ways.iter().enumerate() {
        let samples = &mut times[i];
        samples.sort();
        let (med, p99, max) =
            (samples[samples.len() / 2], samples[samples.len() * 99 / 100], samples[samples.len() - 1]);
        medians.push(med);
        println!("{name:<16} {:>8.3} {:>8.3} {:>8.3}", ms(med), ms(p99), ms(max));
    }
    println!(
        "the helper (reaping what a call leaves, sandbox off) adds {:.3} ms to a Bash call at the median",
        ms(medians[1].saturating_sub(medians[0]))
    );
    for (pair, name) in [((1, 2), "read-only"), ((3, 4), "writing")] {
        let added = ms(medians[pair.1].saturating_sub(medians[pair.0]));
        let verdict = if added <= TARGET_MS { "meets" } else { "misses" };
        println!(
            "the sandbox adds {added:.3} ms to a {name} Bash call at the median ({verdict} the {TARGET_MS} ms target)"
        );
    }
}

fn helper(exe: &str, policy: &str) -> Vec<String> {
    [exe, "--policy", policy, "--", "bash", "-c", "true"].iter().map(|s| s.to_string()).collect()
}

fn run(argv: &[String], cwd: &Path) -> Option<Duration> {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .output()
        .ok()?
        .status;
    status.success().then(|| started.elapsed())
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
