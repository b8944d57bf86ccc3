//! The table, edge by edge: every scenario in `examples/scenarios/` takes exactly its
//! `outcome` (its exact edges and terminal reason), and together they take every edge of
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
use agentloop::scenario::builtin::SCENARIOS;
use agentloop::scenario::{Outcome, Scenario};

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

/// Each scenario's `outcome`: the edges its run takes and the reason it ends with.
fn outcome(name: &str) -> Outcome {
    scenario(name).outcome.unwrap_or_else(|| panic!("{name}: the scenario has no `outcome`"))
}

#[tokio::test]
async fn each_scenario_takes_exactly_its_edges() {
    for (name, _) in SCENARIOS {
        let expected = outcome(name);
        let run = run(name).await;
        assert_eq!(run.outcome.edge_ids(), expected.edges, "{name}: edge sequence");
        assert_eq!(run.outcome.terminal.as_str(), expected.reason, "{name}: terminal reason ({:?})", run.outcome.error);
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

/// Together the scenarios' outcomes take every edge of the table (each outcome is checked
/// against its run above).
#[test]
fn every_table_edge_is_taken_by_some_scenario() {
    let mut taken = BTreeSet::new();
    for (name, _) in SCENARIOS {
        taken.extend(outcome(name).edges);
    }
    let missing: Vec<&str> = shipped().edges.iter().map(|e| e.id.as_str()).filter(|id| !taken.contains(*id)).collect();
    assert!(missing.is_empty(), "edges no scenario takes: {missing:?}");
}

/// Every file in `examples/scenarios/` is a built-in scenario (`build.rs` embeds them all),
/// named after its file.
#[test]
fn every_scenario_file_is_built_in_under_its_name() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_owned())
        .collect();
    let shipped: BTreeSet<String> = SCENARIOS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(on_disk, shipped);
    for (name, _) in SCENARIOS {
        assert_eq!(scenario(name).name, *name, "the scenario's `name` is its file's");
    }
    assert_eq!(SCENARIOS[0].0, agentloop::scenario::builtin::DEFAULT_DEMO);
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
    for (name, _) in SCENARIOS {
        let terminal = outcome(name).reason;
        let run = run(name).await;
        let mut text = serde_json::to_string(&header(&scenario_options(&scenario(name)))).unwrap();
        for record in &run.outcome.trace {
            text.push('\n');
            text.push_str(&serde_json::to_string(record).unwrap());
        }
        let report = replay(shipped(), &format!("{name}.jsonl"), &text);
        assert_eq!(report.findings, vec![], "{name}");
        assert_eq!(report.records, run.outcome.trace.len(), "{name}");
        assert_eq!(report.terminal.as_deref(), Some(terminal.as_str()), "{name}");
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
