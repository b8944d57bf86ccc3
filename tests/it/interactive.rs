//! The interactive session (`agentloop` on a terminal with no `-p`), driven on a
//! pseudo-terminal against the local Messages API mock: a prompt answered with a Read, a Bash
//! call asked about and run after `y`, the status line naming the state while a slow reply
//! streams, Ctrl+C interrupting it and the next prompt answered, `/cost`, and Ctrl+D or two
//! Ctrl+C leaving.

use crate::installed;
use crate::mock_api;
use crate::pty;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, ROUND_TRIP_ANSWER, Reply, Sse, read_round_trip};
use pty::Pty;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

/// `agentloop` on a PTY in `dir`, against `api`, with a scratch home and no colour.
fn session(api: &MockApi, dir: &Path, home: &Path, args: &[&str]) -> Pty {
    session_with(api, dir, home, args, &[])
}

/// [`session`] with `env` set besides (no editor unless it names one).
fn session_with(api: &MockApi, dir: &Path, home: &Path, args: &[&str], env: &[(&str, &Path)]) -> Pty {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    command.env_remove("VISUAL").env_remove("EDITOR").envs(env.iter().copied());
    command
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("AGENTLOOP_HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join("claude"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .current_dir(dir)
        .args(args);
    Pty::spawn(command)
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    dir
}

#[test]
fn a_prompt_is_answered_with_a_read_then_cost_and_ctrl_d_leaves() {
    let api = MockApi::start(read_round_trip());
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("/help for commands", WAIT);
    pty.expect("> ", WAIT);
    pty.send("Read greeting.txt\r");
    pty.expect("Reading it.", WAIT);
    pty.expect("● Read(greeting.txt)", WAIT);
    pty.expect("⎿ Read ok", WAIT);
    pty.expect(ROUND_TRIP_ANSWER, WAIT);
    pty.expect("> ", WAIT);
    pty.send("/cost\r");
    pty.expect("1 prompt(s) · 2500 input + ", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["messages"][0]["content"][0]["text"], "Read greeting.txt");
    let history = std::fs::read_to_string(home.path().join("history")).unwrap();
    assert!(history.contains("Read greeting.txt"), "{history}");
    assert!(history.contains("/cost"), "{history}");
}

#[test]
fn a_bash_call_asks_and_runs_after_y() {
    let api = bash_then_answer("touch made.txt", "Made it.");
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("make a file\r");
    // The call's start line comes before its question.
    pty.expect("● Bash(touch made.txt)", WAIT);
    pty.expect("? Bash(touch made.txt)", WAIT);
    pty.expect("y allow once", WAIT);
    pty.expect("n deny · Esc deny and interrupt", WAIT);
    pty.send("y");
    pty.expect("allowed once", WAIT);
    pty.expect("⎿ Bash ok", WAIT);
    pty.expect("Made it.", WAIT);
    pty.expect("> ", WAIT);
    assert!(dir.path().join("made.txt").exists());
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0);
    let result = &api.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert_ne!(result["is_error"], true, "{result}");
}

#[test]
fn a_custom_command_is_listed_completed_and_its_span_asked_about() {
    let api = MockApi::start(vec![Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("Hello, Ada!").stop("end_turn"))]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let commands = dir.path().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.md"),
        "---\ndescription: Greet someone\nargument-hint: NAME\n---\nGreet $0 warmly.\nMarked: !`touch greeted.txt`\n",
    )
    .unwrap();
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("/help\r");
    pty.expect("custom commands:", WAIT);
    pty.expect("/greet NAME          Greet someone (project)", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/gr\t");
    pty.expect("/greet", WAIT);
    pty.send(" Ada\r");
    // The span is a Bash call like the model's: it is asked about.
    pty.expect("? Bash(touch greeted.txt)", WAIT);
    pty.send("y");
    pty.expect("Hello, Ada!", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    assert!(dir.path().join("greeted.txt").exists());
    let prompt = api.requests()[0].body["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(
        prompt,
        "<command-message>greet</command-message>\n<command-name>/greet</command-name>\n<command-args>Ada</command-args>\n\n\
Greet Ada warmly.\nMarked: \n"
    );
}

#[test]
fn ctrl_c_interrupts_a_slow_reply_and_the_next_prompt_is_answered() {
    let slow = Sse::new("claude-sonnet-4-5", 100).text("This will take a while.").stop("end_turn");
    let api = MockApi::start(vec![
        Reply::paused_before(slow, "content_block_stop", Duration::from_secs(60)),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Second answer.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("take your time\r");
    // The text streams, and the status line under it names the state the machine is in.
    pty.expect("This will take a while.", WAIT);
    pty.expect("Consume · ", WAIT);
    pty.send("\x03");
    pty.expect("interrupted", WAIT);
    pty.expect("> ", WAIT);
    pty.send("and now?\r");
    pty.expect("Second answer.", WAIT);
    pty.expect("> ", WAIT);
    // At an empty prompt the first Ctrl+C says how to leave, the second leaves.
    pty.send("\x03");
    pty.expect("Ctrl+C again to leave", WAIT);
    pty.send("\x03");
    assert_eq!(pty.wait(WAIT), 0);
    let second = &api.requests()[1].body["messages"];
    assert_eq!(second[0]["content"][0]["text"], "take your time", "{second}");
    let last = second.as_array().unwrap().last().unwrap()["content"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["text"], "and now?", "{second}");
}

#[test]
fn without_an_api_key_it_says_how_to_set_one() {
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::cargo_bin("agentloop").unwrap();
    command
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .env("AGENTLOOP_HOME", home.path())
        .env("NO_COLOR", "1");
    let mut pty = Pty::spawn(command);
    pty.expect("ANTHROPIC_API_KEY", WAIT);
    pty.expect("agentloop demo", WAIT);
    assert_eq!(pty.wait(WAIT), 2);
}

#[test]
fn n_denies_with_a_reason_and_a_allows_for_the_session() {
    let bash = |id: &str, command: &str| {
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 100).tool_use(id, "Bash", &json!({"command": command})).stop("tool_use"),
        )
    };
    let api = MockApi::start(vec![
        bash("toolu_01", "touch a.txt"),
        bash("toolu_02", "touch b.txt"),
        bash("toolu_03", "touch b.txt"),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Done.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("make files\r");
    pty.expect("? Bash(touch a.txt)", WAIT);
    pty.expect("Esc deny and interrupt", WAIT);
    pty.send("n");
    pty.expect("reason for the model", WAIT);
    // Echoed and edited by the session (Backspace), not by the terminal.
    pty.send("use b.txtt\x7f\r");
    pty.expect("⎿ Bash error", WAIT);
    pty.expect("? Bash(touch b.txt)", WAIT);
    let offer = pty.expect("for this session", WAIT);
    assert!(offer.contains("a allow Bash("), "{offer}");
    pty.send("a");
    pty.expect("allowed for this session: Bash(", WAIT);
    pty.expect("⎿ Bash ok", WAIT);
    // The grant covers the same call again: it runs without a question.
    let rest = pty.expect("Done.", WAIT);
    assert!(!rest.contains("? Bash"), "{rest}");
    assert!(rest.contains("⎿ Bash ok"), "{rest}");
    pty.expect("> ", WAIT);
    pty.send("/permissions\r");
    pty.expect("mode: default", WAIT);
    pty.expect("allowed for this session: Bash(", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    assert!(!dir.path().join("a.txt").exists());
    assert!(dir.path().join("b.txt").exists());
    let denied = &api.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(denied["content"].to_string().contains("The user denied this tool call: use b.txt\""), "{denied}");
}

#[test]
fn trace_shows_transitions_and_a_backslash_continues_the_line() {
    let api = MockApi::start(vec![Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("Two lines.").stop("end_turn"))]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("/trace\r");
    pty.expect("trace on", WAIT);
    pty.expect("> ", WAIT);
    pty.send("line one\\\rline two\r");
    pty.expect("prepare.request", WAIT);
    pty.expect("Two lines.", WAIT);
    pty.expect("■ completed", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0);
    assert_eq!(api.requests()[0].body["messages"][0]["content"][0]["text"], "line one\nline two");
}

#[test]
fn a_retried_stream_erases_its_partial_text() {
    let cut = Sse::new("claude-sonnet-4-5", 100).text("A partial attempt.").stop("end_turn");
    let api = MockApi::start(vec![
        Reply::dropped_before(cut, "content_block_stop"),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("The whole answer.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &["--retry-base-delay-ms", "1"]);
    pty.expect("> ", WAIT);
    pty.send("go\r");
    pty.expect("A partial attempt.", WAIT);
    // Between the cut attempt and the answer: back to the attempt's first column, and the
    // screen cleared from there.
    let between = pty.expect("The whole answer.", WAIT);
    assert!(between.contains("\r\x1b[J"), "{between:?}");
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    assert_eq!(api.requests().len(), 2);
}

#[test]
fn alt_enter_and_ctrl_j_insert_newlines() {
    let api =
        MockApi::start(vec![Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("Three lines.").stop("end_turn"))]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    // Alt+Enter arrives as ESC CR, Ctrl+J as LF; only the last CR sends the input.
    pty.send("line one\x1b\rline two\nline three\r");
    pty.expect("Three lines.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    assert_eq!(api.requests()[0].body["messages"][0]["content"][0]["text"], "line one\nline two\nline three");
    // The history keeps it as one entry (newlines escaped).
    let history = std::fs::read_to_string(home.path().join("history")).unwrap();
    assert!(history.contains("line one\\nline two\\nline three"), "{history}");
}

#[test]
fn a_resumed_session_shows_its_last_exchanges() {
    let api = MockApi::start(vec![
        Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("First answer.").stop("end_turn")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Second answer.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &["first question"]);
    pty.expect("First answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let mut pty = session(&api, dir.path(), home.path(), &["--continue"]);
    pty.expect("resumed session", WAIT);
    pty.expect("> first question", WAIT);
    pty.expect("  First answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("second question\r");
    pty.expect("Second answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/clear\r");
    pty.expect("new session", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/resume\r");
    pty.expect("1. ", WAIT);
    pty.expect("first question", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/resume 2\r");
    pty.expect("resumed session", WAIT);
    pty.expect("> second question", WAIT);
    pty.expect("  Second answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    assert_eq!(api.requests()[1].body["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn esc_denies_and_interrupts_the_turn() {
    let api = bash_then_answer("touch nope.txt", "Understood.");
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("make a file\r");
    pty.expect("Esc deny and interrupt", WAIT);
    pty.send("\x1b");
    pty.expect("denied; interrupting", WAIT);
    pty.expect("interrupted", WAIT);
    pty.expect("> ", WAIT);
    assert!(!dir.path().join("nope.txt").exists());
    pty.send("ok, never mind\r");
    pty.expect("Understood.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let result = &api.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true, "{result}");
}

#[test]
fn sigterm_at_the_prompt_ends_the_session_with_143() {
    let api = MockApi::start(vec![]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(pty.pid(), libc::SIGTERM);
    }
    assert_eq!(pty.wait(WAIT), 143);
}

/// Whether `request` is a compaction's summary request (recognised by its system prompt).
fn is_summary_request(request: &mock_api::Recorded) -> bool {
    request.body["system"][0]["text"] == agentloop::internals::context::COMPACT_SYSTEM
}

/// Every transcript file under `home`, read.
fn transcripts(home: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![home.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    found
}

#[test]
fn compact_replaces_the_history_with_a_summary_and_ctrl_c_stops_it() {
    const SUMMARY: &str = "The user asked a first question; it was answered.";
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    let api = MockApi::start(vec![
        Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("First answer.").stop("end_turn")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Second answer.").stop("end_turn")),
    ])
    .answer_side_requests(move |request| {
        if !is_summary_request(request) {
            return None;
        }
        let body = Sse::new("claude-sonnet-4-5", 500).text(SUMMARY).stop("end_turn");
        // The first summary request hangs (and is interrupted); the second is answered.
        Some(match summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Reply::paused_before(body, "content_block_stop", Duration::from_secs(60)),
            _ => Reply::Sse(body),
        })
    });
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("/compact\r");
    pty.expect("nothing to compact: the conversation is empty", WAIT);
    pty.expect("> ", WAIT);
    pty.send("first question\r");
    pty.expect("First answer.", WAIT);
    pty.expect("> ", WAIT);
    // Interrupted: the history stays as it was.
    pty.send("/compact\r");
    pty.expect("compacting history", WAIT);
    pty.send("\x03");
    pty.expect("compaction interrupted; the history is unchanged", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/compact keep the file names\r");
    let done = pty.expect(" tokens\r\n", WAIT);
    assert!(done.contains("compacted: 2 messages → 1 summary · about "), "{done}");
    pty.expect("> ", WAIT);
    // The summary's tokens count: 100 + 500 input.
    pty.send("/cost\r");
    pty.expect("1 prompt(s) · 600 input + ", WAIT);
    pty.expect("> ", WAIT);
    pty.send("second question\r");
    pty.expect("Second answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);

    let requests = api.requests();
    let summary_requests: Vec<_> = requests.iter().filter(|r| is_summary_request(r)).collect();
    assert_eq!(summary_requests.len(), 2);
    let instruction = summary_requests[1].body["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        instruction,
        format!(
            "{}\n\nAdditional instructions: keep the file names",
            agentloop::internals::context::COMPACT_INSTRUCTION
        )
    );
    // The next prompt sends exactly the compacted history, with the prompt after the summary.
    let next: Vec<_> = requests.iter().filter(|r| !is_summary_request(r)).collect();
    assert_eq!(next.len(), 2);
    let compacted = &agentloop::internals::context::compacted_history(SUMMARY)[0];
    assert_eq!(
        next[1].body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": compacted.text()},
            {"type": "text", "text": "second question", "cache_control": {"type": "ephemeral"}}
        ]}])
    );
    // The transcript holds the compacted history as a snapshot.
    let transcript = transcripts(home.path()).concat();
    let snapshot = transcript
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["type"] == "agentloop-history")
        .unwrap_or_else(|| panic!("no history snapshot in {transcript}"));
    assert_eq!(snapshot["reason"], "compaction");
    assert_eq!(snapshot["messages"][0]["content"][0]["text"], compacted.text());
}

/// `--mcp-config` with the real server-everything (from npm, installed once into
/// `.ci/cache/npm` by `.ci/install-mcp-servers`, run here when it is missing) as `everything`.
fn everything_config() -> String {
    let entry = installed::mcp_server("server-everything");
    json!({"mcpServers": {"everything": {"type": "stdio", "command": "node", "args": [entry, "stdio"]}}}).to_string()
}

#[test]
fn an_mcp_tool_is_asked_about_and_runs_after_y() {
    let api = MockApi::start(vec![
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 100)
                .tool_use("toolu_01", "mcp__everything__echo", &json!({"message": "hello from mcp"}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("The server echoed it.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let config = everything_config();
    let mut pty = session(&api, dir.path(), home.path(), &["--mcp-config", &config]);
    pty.expect("MCP servers: everything", WAIT);
    pty.expect("> ", WAIT);
    pty.send("echo something\r");
    pty.expect("● mcp__everything__echo(hello from mcp)", WAIT);
    pty.expect("? mcp__everything__echo(hello from mcp)", WAIT);
    pty.expect("a allow mcp__everything__echo for this session", WAIT);
    pty.send("y");
    pty.expect("allowed once", WAIT);
    pty.expect("⎿ mcp__everything__echo ok · ", WAIT);
    pty.expect("Echo: hello from mcp", WAIT);
    pty.expect("The server echoed it.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let requests = api.requests();
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    let result = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert_ne!(result["is_error"], true, "{result}");
    assert!(result["content"].to_string().contains("Echo: hello from mcp"), "{result}");
}

/// A server whose first reply runs `command` with Bash and whose second answers `answer`.
fn bash_then_answer(command: &str, answer: &str) -> MockApi {
    MockApi::start(vec![
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 100)
                .tool_use("toolu_01", "Bash", &json!({"command": command}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text(answer).stop("end_turn")),
    ])
}

/// A reply of `tokens` unique 7-character text deltas (`w00000 `, `w00001 `, …), one event
/// every `interval`: slow enough to type during it.
fn slow_text(tokens: usize) -> Sse {
    let text: String = (0..tokens).map(|i| format!("w{i:05} ")).collect();
    Sse::new("claude-sonnet-4-5", 100).text(&text)
}

/// The text of the last block of the last message of `request`.
fn last_text(request: &mock_api::Recorded) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let content = messages.last().unwrap()["content"].as_array().unwrap();
    content.last().unwrap()["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn keys_typed_while_a_reply_streams_are_echoed_queued_and_run_next() {
    let api = MockApi::start(vec![
        Reply::Paced {
            body: slow_text(40).stop("end_turn"),
            interval: Duration::from_millis(100),
            log: mock_api::EventLog::default(),
        },
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Second answer.").stop("end_turn")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 300).text("Third answer.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("take your time\r");
    pty.expect("w00002 ", WAIT);
    // Typed, with a Backspace, while the reply streams: echoed at once under it.
    pty.send("helo\x7flo");
    pty.expect("› hello", WAIT);
    pty.send("\r");
    pty.expect("queued: hello", WAIT);
    // Unfinished when the turns end: it pre-fills the editor.
    pty.send("dräft");
    pty.expect("› dräft", WAIT);
    pty.expect("w00039 ", WAIT);
    // The queued prompt runs next, shown as the user's line.
    pty.expect("> hello", WAIT);
    pty.expect("Second answer.", WAIT);
    pty.expect("> dräft", WAIT);
    pty.send(" two\r");
    pty.expect("Third answer.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    // The echo came while the reply was still streaming.
    let screen = pty.output();
    let echoed = screen.find("› hello").unwrap();
    let reply_end = screen.find("w00039 ").unwrap();
    assert!(echoed < reply_end, "{screen}");
    let requests = api.requests();
    let prompts: Vec<String> = requests.iter().map(last_text).collect();
    assert_eq!(prompts, vec!["take your time", "hello", "dräft two"]);
}

#[test]
fn a_question_in_the_middle_takes_y_and_the_type_ahead_keeps_its_keys() {
    let first = slow_text(20).tool_use("toolu_01", "Bash", &json!({"command": "touch made.txt"})).stop("tool_use");
    let api = MockApi::start(vec![
        Reply::Paced { body: first, interval: Duration::from_millis(100), log: mock_api::EventLog::default() },
        Reply::Paced {
            body: slow_text(20).stop("end_turn"),
            interval: Duration::from_millis(100),
            log: mock_api::EventLog::default(),
        },
        Reply::Sse(Sse::new("claude-sonnet-4-5", 300).text("Queued one answered.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("make a file\r");
    pty.expect("w00002 ", WAIT);
    pty.send("ab");
    pty.expect("› ab", WAIT);
    // The question takes the next key; the buffer keeps what was typed before it.
    pty.expect("? Bash(touch made.txt)", WAIT);
    pty.expect("Esc deny and interrupt", WAIT);
    // A pasted `y` is no answer: it goes to the buffer.
    pty.send("\x1b[200~y\x1b[201~");
    pty.send("y");
    pty.expect("y — allowed once", WAIT);
    pty.expect("⎿ Bash ok", WAIT);
    pty.send("c\r");
    pty.expect("queued: abyc", WAIT);
    pty.expect("> abyc", WAIT);
    pty.expect("Queued one answered.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    assert!(dir.path().join("made.txt").exists());
    let requests = api.requests();
    assert_eq!(requests.len(), 3);
    let result = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert_ne!(result["is_error"], true, "{result}");
    assert_eq!(last_text(&requests[2]), "abyc");
}

#[test]
fn ctrl_c_puts_the_queued_prompts_back_into_the_line_instead_of_running_them() {
    let slow = Sse::new("claude-sonnet-4-5", 100).text("This will take a while.").stop("end_turn");
    let api = MockApi::start(vec![
        Reply::paused_before(slow, "content_block_stop", Duration::from_secs(60)),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Both at once.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("take your time\r");
    pty.expect("This will take a while.", WAIT);
    pty.send("first\r");
    pty.expect("queued: first", WAIT);
    pty.send("second");
    pty.expect("› second", WAIT);
    pty.send("\x03");
    pty.expect("interrupted", WAIT);
    // Back at the prompt with both in the line, nothing sent.
    pty.expect("> first", WAIT);
    pty.expect("second", WAIT);
    pty.send("\r");
    pty.expect("Both at once.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let requests = api.requests();
    let prompts: Vec<String> = requests.iter().map(last_text).collect();
    assert_eq!(prompts, vec!["take your time", "first\nsecond"]);
}

#[test]
fn a_block_pasted_during_a_turn_is_one_prompt_with_its_newlines() {
    let api = MockApi::start(vec![
        Reply::Paced {
            body: slow_text(30).stop("end_turn"),
            interval: Duration::from_millis(100),
            log: mock_api::EventLog::default(),
        },
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Pasted one answered.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("take your time\r");
    pty.expect("w00002 ", WAIT);
    // The terminal brackets a paste; its Enter is a newline, and Alt+Enter adds one too.
    pty.send("\x1b[200~first line\rsecond line\x1b[201~");
    pty.expect("› first line↵second line", WAIT);
    pty.send("\x1b\rthird\r");
    pty.expect("queued: first line", WAIT);
    pty.expect("Pasted one answered.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let prompts: Vec<String> = api.requests().iter().map(last_text).collect();
    assert_eq!(prompts, vec!["take your time", "first line\nsecond line\nthird"]);
}

/// A server's question in the middle of a call (server-everything's elicitation tool): `a`
/// accepts, then one line per field in the server's order — a name typed, Enter for every
/// other field (its default, or left out) — and the server gets the form with the defaults.
#[test]
fn an_mcp_servers_question_is_asked_field_by_field() {
    let tool = "mcp__everything__trigger-elicitation-request";
    let api = MockApi::start(vec![
        Reply::Sse(Sse::new("claude-sonnet-4-5", 100).tool_use("toolu_01", tool, &json!({})).stop("tool_use")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Thanks for the details.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let config = everything_config();
    let mut pty = session(&api, dir.path(), home.path(), &["--mcp-config", &config, "--allowedTools", tool]);
    pty.expect("MCP servers: everything", WAIT);
    pty.expect("> ", WAIT);
    pty.send("ask me\r");
    pty.expect("? MCP server `everything` asks: Please provide inputs for the following fields:", WAIT);
    pty.expect("a accept and fill in the form · d decline · c or Esc cancel", WAIT);
    pty.send("a");
    pty.expect("a — accepted", WAIT);
    pty.expect("String — Your full, legal name (text): ", WAIT);
    pty.send("\r");
    pty.expect("this field is required", WAIT);
    pty.send("Ada Lovelace\r");
    pty.expect("Boolean — Agree to the terms and conditions (y or n) [none]: ", WAIT);
    pty.send("y\r");
    pty.expect("[It was a dark and stormy night.]: ", WAIT);
    for _ in 0..11 {
        pty.send("\r");
    }
    pty.expect("ok · ", WAIT);
    pty.expect("✅ User provided the requested information!", WAIT);
    pty.expect("Thanks for the details.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0);
    let requests = api.requests();
    let result = requests[1].body["messages"][2]["content"][0]["content"].to_string();
    for field in
        [r#"\"name\": \"Ada Lovelace\""#, r#"\"check\": true"#, r#"\"firstLine\": \"It was a dark and stormy night.\""#]
    {
        assert!(result.contains(field), "{field} not in {result}");
    }
}

/// A byte that is not UTF-8 typed at the prompt (0xff) is dropped: the session goes on and the
/// line keeps what was typed before and after it. (Keys that arrive in the same read as the bad
/// byte, as in a paste, are lost with it: rustyline drops its read buffer; see docs.)
#[test]
fn a_bad_byte_at_the_prompt_is_dropped_and_the_line_kept() {
    let api = MockApi::start(vec![Reply::Sse(Sse::new("claude-sonnet-4-5", 100).text("Hi there.").stop("end_turn"))]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("say hel");
    pty.expect("say hel", WAIT);
    pty.send_bytes(b"\xff");
    // The line is shown again as it was, and the keys after it go on from there.
    pty.expect("> say hel", WAIT);
    pty.send("lo\r");
    pty.expect("Hi there.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["messages"][0]["content"][0]["text"], "say hello");
}

/// The duration shown when a call finishes is its run time alone, not the time its question
/// waited: answered after two seconds, a `touch` shows milliseconds.
#[test]
fn a_calls_duration_leaves_out_the_time_its_question_waited() {
    let api = bash_then_answer("touch waited.txt", "Done.");
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("make a file\r");
    pty.expect("n deny · Esc deny and interrupt", WAIT);
    std::thread::sleep(Duration::from_secs(2));
    pty.send("y");
    pty.expect("⎿ Bash ok · ", WAIT);
    let shown = pty.expect("Done.", WAIT);
    // `21 ms · (no output)`: the duration, then the preview.
    let duration =
        shown.split(['\r', '\n']).next().unwrap_or_default().split(" · ").next().unwrap_or_default().to_owned();
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0);
    assert!(duration.ends_with(" ms"), "the question's two seconds were counted: {duration:?}");
}

/// A subagent's calls show under its `Agent` call, named by its type, with its start and end.
#[test]
fn a_subagents_calls_show_under_its_agent_call() {
    let dir = work_dir();
    let file = dir.path().join("greeting.txt");
    let agent =
        json!({"description": "Read greeting", "prompt": "SUBTASK: read greeting.txt", "run_in_background": false});
    let api = MockApi::start(vec![
        Reply::Sse(Sse::new("claude-sonnet-4-5", 900).tool_use("toolu_agent", "Agent", &agent).stop("tool_use")),
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 300)
                .tool_use("toolu_read", "Read", &json!({"file_path": file}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 400).text("The file says hello.").stop("end_turn")),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 1000).text("The subagent says the file says hello.").stop("end_turn")),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("Delegate the reading\r");
    pty.expect("↳ subagent general-purpose a", WAIT);
    pty.expect("started: Read greeting", WAIT);
    pty.expect("↳ general-purpose ● Read(", WAIT);
    pty.expect("↳ general-purpose   ⎿ Read ok", WAIT);
    pty.expect("completed (completed) after", WAIT);
    pty.expect("The subagent says the file says hello.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    assert_eq!(api.requests().len(), 4);
}

/// `/memory` lists the memory loaded at the start and the nested memory a Read attached, and
/// `/memory N` opens file N in `$EDITOR` on the terminal (here a script that records its
/// argument); `/help` names both commands.
#[test]
fn memory_lists_the_files_loaded_and_opens_one_in_the_editor() {
    let read = Sse::new("claude-sonnet-4-5", 100)
        .tool_use("toolu_01", "Read", &json!({"file_path": "sub/x.txt"}))
        .stop("tool_use");
    let api = MockApi::start(vec![
        Reply::Sse(read),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Read it.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let project = dir.path().canonicalize().unwrap();
    std::fs::write(project.join("CLAUDE.md"), "Project rules.\n").unwrap();
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::write(project.join("sub/CLAUDE.md"), "Sub rules.\n").unwrap();
    std::fs::write(project.join("sub/x.txt"), "x\n").unwrap();
    let opened = home.path().join("opened");
    let editor = home.path().join("editor.sh");
    std::fs::write(&editor, format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display())).unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = [("EDITOR", editor.as_path()), ("HOME", home.path())];
    let mut pty = session_with(&api, &project, home.path(), &[], &env);
    pty.expect("> ", WAIT);
    pty.send("/help\r");
    pty.expect("/memory [N]          list the memory files loaded, or open file N", WAIT);
    pty.expect("/init [TEXT]         ask the model to study the project and write a CLAUDE.md", WAIT);
    pty.expect("> ", WAIT);
    pty.send("read sub/x.txt\r");
    pty.expect("Read it.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/memory\r");
    let p = project.display();
    pty.expect("loaded at the start of the session (lowest precedence first):", WAIT);
    pty.expect(&format!(" 1. {p}/CLAUDE.md · project · 15 bytes"), WAIT);
    pty.expect("attached since, when the model first touched a file they cover:", WAIT);
    pty.expect(&format!(" 2. {p}/sub/CLAUDE.md · project · 11 bytes"), WAIT);
    pty.expect("/memory N opens file N in $VISUAL or $EDITOR", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/memory open 2\r");
    pty.expect(&format!("closed {p}/sub/CLAUDE.md"), WAIT);
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), format!("{p}/sub/CLAUDE.md"));
    pty.expect("> ", WAIT);
    pty.send("/memory 9\r");
    pty.expect("no memory file 9; /memory lists them", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    let result = &api.requests()[1].body["messages"][2]["content"][0];
    assert!(result["content"].as_str().unwrap().ends_with("Sub rules.\n</system-reminder>"), "{result}");
}

/// `/init` sends the model the request to write a starting CLAUDE.md, with the rest of the
/// line after it; the Write it answers with is asked about like any other.
#[test]
fn init_asks_the_model_to_write_a_claude_md() {
    let write = Sse::new("claude-sonnet-4-5", 100)
        .tool_use("toolu_01", "Write", &json!({"file_path": "CLAUDE.md", "content": "# Notes\n"}))
        .stop("tool_use");
    let api = MockApi::start(vec![
        Reply::Sse(write),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("Wrote CLAUDE.md.").stop("end_turn")),
    ]);
    let (dir, home) = (work_dir(), tempfile::tempdir().unwrap());
    let mut pty = session(&api, dir.path(), home.path(), &[]);
    pty.expect("> ", WAIT);
    pty.send("/init mention the greeting\r");
    pty.expect("? Write(CLAUDE.md)", WAIT);
    pty.send("y");
    pty.expect("Wrote CLAUDE.md.", WAIT);
    pty.expect("> ", WAIT);
    pty.send("/exit\r");
    assert_eq!(pty.wait(WAIT), 0, "{}", pty.output());
    assert_eq!(std::fs::read_to_string(dir.path().join("CLAUDE.md")).unwrap(), "# Notes\n");
    let prompt = api.requests()[0].body["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(
        prompt.starts_with("Study this repository, then write a CLAUDE.md file in the working directory: "),
        "{prompt}"
    );
    assert!(prompt.ends_with("\n\nAdditional instructions: mention the greeting"), "{prompt}");
}
