//! The table, edge by edge: every scenario in `examples/scenarios/` takes exactly its
//! expected edges to exactly its terminal reason, and together they take every edge of
//! `transitions/loop.toml`. A new edge without a scenario fails here, by name.

use std::collections::BTreeSet;
use std::sync::Arc;

use agentloop::audit::trace::replay;
use agentloop::engine::clock::VirtualClock;
use agentloop::engine::run::header;
use agentloop::engine::state::pairing_violation;
use agentloop::engine::table::shipped;
use agentloop::harness::{ScenarioRun, run_scenario, scenario_options};
use agentloop::protocol::{ContentBlock, Role};
use agentloop::scenario::Scenario;
use agentloop::scenario::builtin::SCENARIOS;

/// One turn whose reply calls tools.
const TOOL_TURN: &[&str] = &["prepare.request", "request.stream_opened", "consume.tools", "tools.done"];
const ESCALATE_THEN_RECOVER: &[&str] = &[
    "prepare.request",
    "request.stream_opened",
    "consume.truncated",
    "recover.max_output_tokens_escalate",
    "request.stream_opened",
    "consume.truncated",
    "recover.max_output_tokens_recovery",
];
const ANSWER: &[&str] = &["prepare.request", "request.stream_opened", "consume.end_turn"];

fn seq(parts: &[&[&'static str]]) -> Vec<&'static str> {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

/// `turns` turns whose replies call tools, then a final answer that completes the run.
fn tool_turns_then_answer(turns: usize) -> Vec<&'static str> {
    let mut edges = Vec::new();
    for _ in 0..turns {
        edges.extend_from_slice(TOOL_TURN);
        edges.push("checkpoint.next_turn");
    }
    edges.extend_from_slice(ANSWER);
    edges.push("checkpoint.completed");
    edges
}

/// (scenario, exact edge ids, terminal reason).
fn cases() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    let stop_hook_round: &[&'static str] =
        &["prepare.request", "request.stream_opened", "consume.end_turn", "checkpoint.stop_hook_blocking"];
    let mut cap = Vec::new();
    for _ in 0..8 {
        cap.push(stop_hook_round);
    }
    cap.push(ANSWER);
    cap.push(&["checkpoint.stop_hook_cap"]);
    let truncated_retry: &[&'static str] =
        &["prepare.request", "request.stream_opened", "consume.truncated", "recover.max_output_tokens_recovery"];
    vec![
        ("read-greeting", tool_turns_then_answer(1), "completed"),
        ("bad-tool-calls", tool_turns_then_answer(1), "completed"),
        ("max-turns", seq(&[TOOL_TURN, &["checkpoint.max_turns"]]), "max_turns"),
        (
            "abort-streaming",
            seq(&[&["prepare.request", "request.stream_opened", "sampling.abort"]]),
            "aborted_streaming",
        ),
        (
            "abort-tools",
            seq(&[&["prepare.request", "request.stream_opened", "consume.tools", "acting.abort"]]),
            "aborted_tools",
        ),
        (
            "abort-stop-hook",
            seq(&[&["prepare.request", "request.stream_opened", "consume.end_turn", "checkpoint.abort"]]),
            "aborted_tools",
        ),
        ("model-error", seq(&[&["prepare.request", "request.model_error"]]), "model_error"),
        (
            "flaky-network",
            seq(&[
                &["prepare.request", "request.retry", "request.retry", "request.stream_opened", "consume.retry"],
                &["request.stream_opened", "consume.end_turn", "checkpoint.completed"],
            ]),
            "completed",
        ),
        (
            "fallback-model",
            seq(&[
                &["prepare.request", "request.retry", "request.retry", "request.fallback"],
                &["request.stream_opened", "consume.end_turn", "checkpoint.completed"],
            ]),
            "completed",
        ),
        (
            "retries-exhausted",
            seq(&[&["prepare.request", "request.retry", "request.retry", "request.retries_exhausted"]]),
            "model_error",
        ),
        (
            "stream-cut-exhausted",
            seq(&[&[
                "prepare.request",
                "request.stream_opened",
                "consume.retry",
                "request.stream_opened",
                "consume.retries_exhausted",
            ]]),
            "model_error",
        ),
        ("stream-error", seq(&[&["prepare.request", "request.stream_opened", "consume.model_error"]]), "model_error"),
        (
            "stream-prompt-too-long",
            seq(&[
                &[
                    "prepare.request",
                    "request.stream_opened",
                    "consume.prompt_too_long",
                    "recover.reactive_compact_retry",
                ],
                ANSWER,
                &["checkpoint.completed"],
            ]),
            "completed",
        ),
        (
            "collapse-drain",
            seq(&[
                TOOL_TURN,
                &["checkpoint.next_turn"],
                TOOL_TURN,
                &["checkpoint.next_turn", "prepare.request", "request.prompt_too_long", "recover.collapse_drain_retry"],
                ANSWER,
                &["checkpoint.completed"],
            ]),
            "completed",
        ),
        (
            "reactive-compact",
            seq(&[
                &["prepare.request", "request.prompt_too_long", "recover.reactive_compact_retry"],
                ANSWER,
                &["checkpoint.completed"],
            ]),
            "completed",
        ),
        (
            "prompt-too-long",
            seq(&[
                &["prepare.request", "request.prompt_too_long", "recover.reactive_compact_retry"],
                &["prepare.request", "request.prompt_too_long", "recover.prompt_too_long"],
            ]),
            "prompt_too_long",
        ),
        (
            "max-output-escalate",
            seq(&[
                &[
                    "prepare.request",
                    "request.stream_opened",
                    "consume.truncated",
                    "recover.max_output_tokens_escalate",
                ],
                &["request.stream_opened", "consume.end_turn", "checkpoint.completed"],
            ]),
            "completed",
        ),
        ("max-output-recovery", seq(&[ESCALATE_THEN_RECOVER, ANSWER, &["checkpoint.completed"]]), "completed"),
        (
            "max-output-exhausted",
            seq(&[
                ESCALATE_THEN_RECOVER,
                truncated_retry,
                truncated_retry,
                &["prepare.request", "request.stream_opened", "consume.truncated", "recover.output_exhausted"],
            ]),
            "model_error",
        ),
        ("stop-hook-blocking", seq(&[stop_hook_round, ANSWER, &["checkpoint.completed"]]), "completed"),
        ("stop-hook-prevented", seq(&[ANSWER, &["checkpoint.stop_hook_prevented"]]), "stop_hook_prevented"),
        ("stop-hook-cap", seq(&cap), "completed"),
        ("hook-stopped", seq(&[TOOL_TURN, &["checkpoint.hook_stopped"]]), "hook_stopped"),
        (
            "token-budget",
            seq(&[
                ANSWER,
                &["checkpoint.token_budget_continuation"],
                ANSWER,
                &["checkpoint.token_budget_continuation"],
                ANSWER,
                &["checkpoint.completed"],
            ]),
            "completed",
        ),
        ("blocking-limit", seq(&[&["prepare.blocking_limit"]]), "blocking_limit"),
        ("edit-file", tool_turns_then_answer(2), "completed"),
        ("run-command", tool_turns_then_answer(2), "completed"),
        ("parallel-bash-failure", tool_turns_then_answer(1), "completed"),
        ("search-tree", tool_turns_then_answer(2), "completed"),
        (
            "pause-turn",
            seq(&[
                &["prepare.request", "request.stream_opened", "consume.pause_turn"],
                ANSWER,
                &["checkpoint.completed"],
            ]),
            "completed",
        ),
        ("autocompact", tool_turns_then_answer(1), "completed"),
        ("plan-mode", tool_turns_then_answer(1), "completed"),
        (
            "budget-exhausted",
            seq(&[
                TOOL_TURN,
                &["checkpoint.next_turn"],
                TOOL_TURN,
                &["checkpoint.next_turn", "prepare.request", "request.budget_exhausted"],
            ]),
            "budget_exhausted",
        ),
        (
            "structured-output",
            seq(&[
                ANSWER,
                &["checkpoint.stop_hook_blocking"],
                TOOL_TURN,
                &["checkpoint.structured_output_retry"],
                TOOL_TURN,
                &["checkpoint.structured_output"],
            ]),
            "completed",
        ),
        (
            "structured-output-exhausted",
            seq(&[
                TOOL_TURN,
                &["checkpoint.structured_output_retry"],
                TOOL_TURN,
                &["checkpoint.structured_output_retry"],
                TOOL_TURN,
                &["checkpoint.structured_output_retry"],
                TOOL_TURN,
                &["checkpoint.structured_output_retry"],
                TOOL_TURN,
                &["checkpoint.structured_output_retries_exhausted"],
            ]),
            "structured_output_retry_exhausted",
        ),
    ]
}

fn scenario(name: &str) -> Scenario {
    let (_, text) = SCENARIOS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no scenario {name}"));
    Scenario::parse(name, text).unwrap_or_else(|e| panic!("{e}"))
}

async fn run(name: &str) -> ScenarioRun {
    let dir = tempfile::tempdir().unwrap();
    run_scenario(&scenario(name), dir.path(), Arc::new(VirtualClock::new()))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[tokio::test]
async fn each_scenario_takes_exactly_its_edges() {
    for (name, edges, terminal) in cases() {
        let run = run(name).await;
        assert_eq!(run.outcome.edge_ids(), edges, "{name}: edge sequence");
        assert_eq!(run.outcome.terminal.as_str(), terminal, "{name}: terminal reason ({:?})", run.outcome.error);
        let terminals = run.outcome.trace.iter().filter(|r| r.kind == "terminal").count();
        assert_eq!(terminals, 1, "{name}: exactly one terminal record");
        assert_eq!(run.outcome.trace.last().unwrap().kind, "terminal", "{name}: the terminal record is last");
        for (i, (_, request)) in run.model.requests().iter().enumerate() {
            assert_eq!(pairing_violation(&request.messages), None, "{name}: request {i} breaks tool pairing");
        }
        assert_eq!(pairing_violation(&run.outcome.messages), None, "{name}: final transcript breaks tool pairing");
        let (served, _) = run.model.served();
        assert_eq!(served as u32, run.outcome.model_calls, "{name}: every main request reached the model");
    }
}

#[test]
fn every_table_edge_is_taken_by_some_scenario() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut taken = BTreeSet::new();
    for (name, _, _) in cases() {
        let run = rt.block_on(run(name));
        taken.extend(run.outcome.trace.iter().map(|r| r.edge.clone()));
    }
    let missing: Vec<&str> = shipped().edges.iter().map(|e| e.id.as_str()).filter(|id| !taken.contains(*id)).collect();
    assert!(missing.is_empty(), "edges no scenario takes: {missing:?}");
}

#[test]
fn every_shipped_scenario_has_expectations() {
    let expected: BTreeSet<&str> = cases().iter().map(|(n, _, _)| *n).collect();
    let shipped: BTreeSet<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
    assert_eq!(shipped, expected);
    let on_disk: BTreeSet<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_owned())
        .collect();
    assert_eq!(on_disk, shipped.iter().map(|s| s.to_string()).collect(), "examples/scenarios and the demo list differ");
}

#[tokio::test]
async fn aborted_stream_keeps_a_consistent_transcript() {
    let run = run("abort-streaming").await;
    let messages = &run.outcome.messages;
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[1].role, Role::Assistant);
    assert_eq!(messages[1].content, vec![ContentBlock::text("I'll read the greeting.")]);
    assert_eq!(messages[2].content, vec![ContentBlock::text("[Request interrupted by user]")]);
}

#[tokio::test]
async fn aborted_tools_answer_every_call() {
    let run = run("abort-tools").await;
    let last = run.outcome.messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    match &last.content[..] {
        [ContentBlock::ToolResult { is_error: true, content, .. }, ContentBlock::Text { text, .. }] => {
            // Whether the interrupt came before the spawned call began or while `sleep` ran,
            // the call is answered exactly once, as an error.
            let known = ["Interrupted by user: the tool did not run", "Command was cancelled"];
            assert!(known.contains(&content.as_str()), "{content:?}");
            assert_eq!(text, "[Request interrupted by user for tool use]");
        }
        other => panic!("unexpected last message {other:?}"),
    }
}

#[tokio::test]
async fn a_fatal_stream_error_answers_the_finished_call_with_the_error() {
    let run = run("stream-error").await;
    let last = run.outcome.messages.last().unwrap();
    match &last.content[..] {
        [ContentBlock::ToolResult { is_error: true, content, .. }] => {
            assert_eq!(content.as_str(), "Error: stream error invalid_request_error: messages.1: invalid request");
        }
        other => panic!("unexpected last message {other:?}"),
    }
    assert_eq!(run.outcome.error.as_deref(), Some("stream error invalid_request_error: messages.1: invalid request"));
}

#[tokio::test]
async fn retries_note_their_delay_and_cause() {
    let run = run("retries-exhausted").await;
    let retries: Vec<_> = run.outcome.trace.iter().filter(|r| r.edge == "request.retry").collect();
    assert_eq!(retries.len(), 2);
    for (attempt, r) in retries.iter().enumerate() {
        let base = 5u64 << attempt;
        let delay = r.delay_ms.unwrap();
        assert!((base..=base + base / 4).contains(&delay), "attempt {attempt}: {delay} ms");
        let detail = format!("HTTP 503 api_error: Service unavailable (request id req_scripted_{attempt})");
        assert_eq!(r.detail.as_deref(), Some(detail.as_str()));
    }
    assert_eq!(run.outcome.trace[1].counters["retries"], 1);
}

/// What the engine records, the auditor accepts: each scenario's JSONL trace (as
/// `--trace=jsonl` writes it) replays against the table without a finding.
#[tokio::test]
async fn every_scenario_trace_replays_clean() {
    for (name, _, terminal) in cases() {
        let run = run(name).await;
        let mut text = serde_json::to_string(&header(&scenario_options(&scenario(name)))).unwrap();
        for record in &run.outcome.trace {
            text.push('\n');
            text.push_str(&serde_json::to_string(record).unwrap());
        }
        let report = replay(shipped(), &format!("{name}.jsonl"), &text);
        assert_eq!(report.findings, vec![], "{name}");
        assert_eq!(report.records, run.outcome.trace.len(), "{name}");
        assert_eq!(report.terminal.as_deref(), Some(terminal), "{name}");
    }
}

/// Near the window, Prepare summarises the history through an aux request before the call:
/// no edge of its own, but the next request carries the summary instead of the history.
#[tokio::test]
async fn autocompact_replaces_the_history_before_the_call() {
    let run = run("autocompact").await;
    assert_eq!(run.model.served(), (2, 1));
    let warned = run.events.iter().any(
        |e| matches!(e, agentloop::engine::events::EngineEvent::Warning(w) if w.starts_with("autocompact: about")),
    );
    assert!(warned, "the compaction is announced");
    let requests = run.model.requests();
    let (_, last) = requests.last().unwrap();
    assert_eq!(last.messages.len(), 1);
    assert!(last.messages[0].all_text().contains("service.log was read: 400 requests"));
    assert_eq!(pairing_violation(&last.messages), None);
}
