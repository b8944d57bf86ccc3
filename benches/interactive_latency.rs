//! The interactive session's latency (issue 14's "Done when"): the optimised binary on a
//! pseudo-terminal against the local Messages API mock on 127.0.0.1.
//!
//! 1. **Keystroke to echo**: at the idle `> ` prompt, one key is typed at a time and the time
//!    from writing it to the PTY to reading its echo back is taken (`KEYS` keys, the line
//!    cleared with Ctrl+U every 40).
//! 2. **Text delta to screen**: a reply streams `DELTAS` text deltas at 200 events/s (one SSE
//!    event every 5 ms, each delta a unique 7-character token); for each delta, the time from
//!    the mock's write of its event to the socket to the token's last byte being read from the
//!    PTY. The status line is redrawn as it streams, as on a real terminal.
//!
//! 3. **Ctrl+C to feedback while streaming**: during a reply streaming at 200 events/s, the
//!    time from Ctrl+C to `interrupting…` on the screen (`INTERRUPTS` replies).
//!
//! 4. **Keystroke to echo while streaming**: during a reply streaming at 200 events/s, one key
//!    is typed at a time into the type-ahead buffer and the time from writing it to the PTY to
//!    reading back the redrawn `› …` line that ends with it is taken (`STREAM_KEYS` keys, the
//!    buffer cleared with Ctrl+U every 20). The text deltas that stream meanwhile are timed as
//!    in 2 (those written before the last key), so both are known while typing.
//!
//! Times on both sides are taken in this process (the mock and the PTY reader are threads of
//! it), so they share one clock. `cargo bench --bench interactive_latency` prints p50, p95,
//! p99 and max of each; the target is one frame, 16 ms.

#[path = "../tests/common/mock_api.rs"]
mod mock_api;
#[path = "../tests/common/pty.rs"]
mod pty;

use std::process::Command;
use std::time::{Duration, Instant};

use mock_api::{EventLog, MockApi, Reply, Sse};
use pty::Pty;

const BINARY: &str = env!("CARGO_BIN_EXE_agentloop");
const KEYS: usize = 400;
const STREAM_KEYS: usize = 400;
/// Deltas of the reply typed over: longer than the typing takes (20 s at 200 events/s).
const STREAM_DELTAS: usize = 4000;
const INTERRUPTS: usize = 30;
const DELTAS: usize = 1000;
/// 200 events per second.
const INTERVAL: Duration = Duration::from_millis(5);
const WAIT: Duration = Duration::from_secs(30);
/// One frame at 60 Hz.
const FRAME_MS: f64 = 16.0;

fn main() {
    // `cargo bench` passes `--bench`; a filter that excludes this benchmark skips it.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"interactive_latency".contains(a.as_str())) {
        return;
    }
    let text: String = (0..DELTAS).map(|i| format!("t{i:05} ")).collect();
    let log = EventLog::default();
    let body = Sse::new("claude-sonnet-4-5", 100).text(&text).stop("end_turn");
    let mut script = vec![Reply::Paced { body: body.clone(), interval: INTERVAL, log: log.clone() }];
    for _ in 0..INTERRUPTS {
        script.push(Reply::Paced { body: body.clone(), interval: INTERVAL, log: EventLog::default() });
    }
    let typed_over: String = (0..STREAM_DELTAS).map(|i| format!("s{i:05} ")).collect();
    let typed_log = EventLog::default();
    let typed_body = Sse::new("claude-sonnet-4-5", 100).text(&typed_over).stop("end_turn");
    script.push(Reply::Paced { body: typed_body, interval: INTERVAL, log: typed_log.clone() });
    let api = MockApi::start(script);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut command = Command::new(BINARY);
    command
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .current_dir(dir.path());
    let mut pty = Pty::spawn(command);
    pty.expect("> ", WAIT);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!pty.kernel_echo(), "the line editor echoes keys, not the terminal");

    let echo = keystrokes(&mut pty);
    report("keystroke to echo (idle prompt)", &echo);

    pty.send("\x15stream please\r");
    pty.expect(&format!("t{:05} ", DELTAS - 1), Duration::from_secs(60));
    pty.expect("> ", WAIT);
    let deltas = delta_latencies(&pty, &log, None);
    assert_eq!(deltas.len(), DELTAS, "every delta was found on the screen");
    let span = log.events().last().unwrap().0 - log.events()[0].0;
    println!(
        "  ({} SSE events in {:.2}s: {:.0} events/s)",
        log.events().len(),
        span.as_secs_f64(),
        log.events().len() as f64 / span.as_secs_f64()
    );
    report("text delta to screen (200 events/s)", &deltas);

    let mut interrupts = Vec::new();
    for _ in 0..INTERRUPTS {
        pty.send("stream again\r");
        pty.expect(&format!("t{:05} ", 100), WAIT);
        let from = pty.len();
        let sent = Instant::now();
        pty.send("\x03");
        let at = wait_for(&pty, from, "interrupting…".as_bytes());
        interrupts.push(ms(pty.arrival(at).expect("arrival") - sent));
        pty.expect("interrupted", WAIT);
        pty.expect("> ", WAIT);
        std::thread::sleep(Duration::from_millis(50));
    }
    report("Ctrl+C to feedback (while streaming)", &interrupts);

    pty.send("type over this\r");
    pty.expect(&format!("s{:05} ", 100), WAIT);
    let (echo, last_key) = keystrokes_while_streaming(&mut pty);
    let events = typed_log.events().len();
    assert!(events < STREAM_DELTAS, "the reply was still streaming after the last key ({events} events)");
    report("keystroke to echo (while streaming 200 events/s)", &echo);
    let deltas = delta_latencies(&pty, &typed_log, Some(last_key));
    report(&format!("text delta to screen (while typing; {} deltas)", deltas.len()), &deltas);
    pty.send("\x03");
    pty.expect("interrupted", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
}

/// Type `KEYS` keys one at a time; the time to each one's echo, in ms.
fn keystrokes(pty: &mut Pty) -> Vec<f64> {
    let mut times = Vec::with_capacity(KEYS);
    for n in 0..KEYS {
        if n % 40 == 0 && n > 0 {
            pty.send("\x15");
            wait_quiet(pty);
        }
        let key = (b'a' + (n % 26) as u8) as char;
        let from = pty.len();
        let sent = Instant::now();
        pty.send(&key.to_string());
        let at = wait_for(pty, from, key.to_string().as_bytes());
        times.push(ms(pty.arrival(at).expect("arrival") - sent));
    }
    pty.send("\x15");
    wait_quiet(pty);
    times
}

/// Type `STREAM_KEYS` keys one at a time while a reply streams; the time from each key to the
/// type-ahead line that ends with it, in ms, and when the last key was typed.
fn keystrokes_while_streaming(pty: &mut Pty) -> (Vec<f64>, Instant) {
    let mut times = Vec::with_capacity(STREAM_KEYS);
    let mut buffer = String::new();
    let mut last = Instant::now();
    for n in 0..STREAM_KEYS {
        if n % 20 == 0 && n > 0 {
            pty.send("\x15");
            buffer.clear();
            std::thread::sleep(Duration::from_millis(10));
        }
        // Capitals: the streamed tokens have none, so the echo is not found in them.
        let key = (b'A' + (n % 26) as u8) as char;
        buffer.push(key);
        let needle = format!("› {buffer}");
        let from = pty.len();
        last = Instant::now();
        pty.send(&key.to_string());
        let at = wait_for(pty, from, needle.as_bytes());
        times.push(ms(pty.arrival(at).expect("arrival") - last));
        // Keys at no fixed phase of the 5 ms stream.
        std::thread::sleep(Duration::from_micros(1500 + (n as u64 * 733) % 3000));
    }
    pty.send("\x15");
    (times, last)
}

/// Wait until `needle` appears at or after byte `from`; its last byte's offset.
fn wait_for(pty: &Pty, from: usize, needle: &[u8]) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        let bytes = pty.bytes();
        if let Some(at) = bytes[from.min(bytes.len())..].windows(needle.len()).position(|w| w == needle) {
            return from + at + needle.len() - 1;
        }
        assert!(Instant::now() < deadline, "no echo of {needle:?}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Wait until nothing has been printed for 50 ms.
fn wait_quiet(pty: &Pty) {
    let mut len = pty.len();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = pty.len();
        if now == len {
            return;
        }
        len = now;
    }
}

/// For each text delta the mock wrote (before `until`, when given), the time until its token
/// was read from the PTY, in ms.
fn delta_latencies(pty: &Pty, log: &EventLog, until: Option<Instant>) -> Vec<f64> {
    let screen = pty.bytes();
    let mut from = 0;
    let mut times = Vec::new();
    for (sent, event) in log.events() {
        if !event.contains("\"text_delta\"") || until.is_some_and(|until| sent > until) {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(event.lines().find_map(|l| l.strip_prefix("data: ")).expect("data line"))
                .expect("JSON event");
        let token = value["delta"]["text"].as_str().expect("text").to_owned();
        let at = screen[from..]
            .windows(token.len())
            .position(|w| w == token.as_bytes())
            .unwrap_or_else(|| panic!("{token:?} is not on the screen"));
        let last = from + at + token.len() - 1;
        from = last + 1;
        times.push(ms(pty.arrival(last).expect("arrival").saturating_duration_since(sent)));
    }
    times
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(what: &str, times: &[f64]) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1];
    let max = sorted[sorted.len() - 1];
    println!(
        "{what}: n={} p50={:.2} ms p95={:.2} ms p99={:.2} ms max={:.2} ms ({} over {FRAME_MS} ms)",
        sorted.len(),
        at(0.50),
        at(0.95),
        at(0.99),
        max,
        sorted.iter().filter(|t| **t > FRAME_MS).count()
    );
}
