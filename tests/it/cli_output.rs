//! What the `agentloop` binary prints: text output over retried attempts, the stream-json
//! `system/init` line, spilled tool results and settings errors.

use std::process::Output;

use crate::binary;

/// Runs the binary with stdin closed and no way to reach a real API.
fn agentloop(args: &[&str]) -> Output {
    binary::offline_agentloop().args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The stream-json `system/init` line names the permission mode as Claude Code does: as it is
/// written on the command line.
#[test]
fn stream_json_init_names_the_permission_mode_as_given() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/read-greeting.json");
    for (given, printed) in [(None, "default"), (Some("acceptEdits"), "acceptEdits"), (Some("plan"), "plan")] {
        let dir = tempfile::tempdir().unwrap();
        let model = format!("scripted:{scenario}");
        let mut args = vec!["run", "--model", &model, "--cwd", dir.path().to_str().unwrap()];
        args.extend(["--output-format", "stream-json"]);
        if let Some(mode) = given {
            args.extend(["--permission-mode", mode]);
        }
        let out = agentloop(&args);
        let first = stdout(&out).lines().next().map(str::to_owned).unwrap_or_default();
        let init: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(init["subtype"], "init", "{}", stderr(&out));
        assert_eq!(init["permissionMode"], printed);
    }
}

/// A typo in a hook event name fails settings loading (exit 2) instead of silently disabling
/// the hook; the message names the file, the JSON path and the known events.
#[test]
fn a_misspelt_hook_event_is_bad_usage() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let hooks =
        r#"{"hooks": {"preToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#;
    std::fs::write(&settings, hooks).unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/read-greeting.json");
    let model = format!("scripted:{scenario}");
    let out = agentloop(&[
        "run",
        "--model",
        &model,
        "--cwd",
        dir.path().to_str().unwrap(),
        "--settings",
        settings.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "agentloop: {}: at hooks.preToolUse: unknown hook event `preToolUse` (did you mean `PreToolUse`?); known \
             events: PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, Notification, UserPromptSubmit, \
             Stop, SubagentStart, SubagentStop, PreCompact, SessionStart, SessionEnd\n",
            settings.display()
        )
    );
}

/// With stdout a pipe, text mode prints a reply only once it can no longer be retried: the
/// text of a cut stream's attempt ("Hel") never shows, nor does a truncated reply that is sent
/// again with a larger cap.
#[test]
fn text_output_never_repeats_an_abandoned_attempt() {
    for (demo, expected) in [("flaky-network", "Hello!\n"), ("max-output-escalate", "The whole essay.\n")] {
        let out = agentloop(&["demo", demo]);
        assert_eq!(out.status.code(), Some(0), "{demo}: {}", stderr(&out));
        assert_eq!(stdout(&out), expected, "{demo}");
    }
}

/// The trace's tool lines and stream-json's `tool_started` lines say whether a call started
/// while the reply streamed (the read-only `wc -l notes.txt`) or after it (`rm notes.txt`).
#[test]
fn tool_starts_are_marked_early_or_after_the_reply() {
    let out = agentloop(&["demo", "run-command", "--trace"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let starts: Vec<String> =
        stderr(&out).lines().filter_map(|line| line.split_once("⇢ ").map(|(_, start)| start.to_owned())).collect();
    assert_eq!(starts, ["Bash toolu_scripted_0_0 started early", "Bash toolu_scripted_1_0 started after reply"]);

    let dir = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/run-command.json");
    let model = format!("scripted:{scenario}");
    let cwd = dir.path().to_str().unwrap();
    let out = agentloop(&["run", "--model", &model, "--cwd", cwd, "--output-format", "stream-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let early: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line["subtype"] == "tool_started")
        .map(|line| line["started_early"].clone())
        .collect();
    assert_eq!(early, [true, false]);
}
