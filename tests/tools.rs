//! Tool execution as the engine drives it: calls start while the reply still streams, and
//! the phase's results come back in call order.

use std::sync::Arc;

use agentloop::engine::clock::VirtualClock;
use agentloop::engine::events::EngineEvent;
use agentloop::harness::run_scenario;
use agentloop::protocol::{ContentBlock, Role};
use agentloop::scenario::Scenario;
use serde_json::json;

fn scenario(doc: serde_json::Value) -> Scenario {
    Scenario::parse("test.json", &doc.to_string()).unwrap()
}

/// A tool starts (and here even finishes) before the reply's `message_stop`: the scripted
/// reply streams a long text after the call, one event every 20 ms.
#[tokio::test]
async fn a_tool_starts_before_the_reply_ends() {
    let long_text = "This sentence keeps the stream open for a while after the tool call. ".repeat(4);
    let s = scenario(json!({
        "prompt": "go",
        "files": {"a.txt": "alpha\n"},
        "responses": [
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}},
                         {"type": "text", "text": long_text}],
             "chunk_delay_ms": 20},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    let position = |pred: &dyn Fn(&EngineEvent) -> bool| run.events.iter().position(pred).unwrap();
    let started = position(&|e| matches!(e, EngineEvent::ToolStarted { name, .. } if name == "Read"));
    let finished = position(&|e| matches!(e, EngineEvent::ToolFinished { name, .. } if name == "Read"));
    let last_text = run
        .events
        .iter()
        .rposition(|e| matches!(e, EngineEvent::TextDelta(t) if long_text.contains(t.as_str())))
        .unwrap();
    let reply_done = position(&|e| matches!(e, EngineEvent::Transition(r) if r.edge == "consume.tools"));
    assert!(started < last_text, "the Read started at event {started}, after the last text delta {last_text}");
    assert!(finished < last_text, "the Read finished at event {finished}, after the last text delta {last_text}");
    assert!(finished < reply_done);
    assert_eq!(run.outcome.terminal.as_str(), "completed");
    let results = &run.outcome.messages[2];
    assert_eq!(results.role, Role::User);
    assert!(
        matches!(&results.content[0], ContentBlock::ToolResult { is_error: false, content, .. } if content.as_str() == "     1\talpha\n")
    );
}

/// A tool_use whose JSON never completed (the reply was cut by max_tokens) never runs.
#[tokio::test]
async fn a_truncated_tool_call_never_runs() {
    let s = scenario(json!({
        "prompt": "go",
        "files": {"a.txt": "alpha\n"},
        "responses": [
            {"content": [{"type": "text", "text": "reading"},
                         {"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}}],
             "stop_reason": "max_tokens"},
            {"content": [{"type": "text", "text": "done"}], "expect": {"max_tokens": 64000}}
        ]
    }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    assert!(!run.events.iter().any(|e| matches!(e, EngineEvent::ToolStarted { .. })));
    assert_eq!(
        run.outcome.edge_ids(),
        vec![
            "prepare.request",
            "request.stream_opened",
            "consume.truncated",
            "recover.max_output_tokens_escalate",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
}
