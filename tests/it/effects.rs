//! The effects seam (`agentloop::engine::effects`) carries everything a durable runner needs:
//! a run whose steps go through a journal, replayed from that journal, reaches the same edges
//! with the same messages and the same message ids, and runs nothing again: no model request,
//! no tool. A mutating call the journal saw start and never finish is answered as
//! interrupted, not run a second time; a read-only one runs again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop::engine::clock::{Clock, VirtualClock};
use agentloop::engine::effects::{Effects, Journal, Replayed, Step};
use agentloop::engine::events::EngineEvent;
use agentloop::harness::{run_scenario_with, scenario_options, scenario_tools};
use agentloop::protocol::{ContentBlock, Message};
use agentloop::scenario::Scenario;
use agentloop::session::Uuid;
use futures::future::BoxFuture;
use serde_json::Value;

/// One entry of a tape: a step's label, and its value once it finished.
#[derive(Debug, Clone)]
struct Entry {
    label: String,
    value: Option<Value>,
}

/// A journal kept in memory: entries it holds are handed back in order without running their
/// work; past them, work runs and is appended. An entry without a value is a step that
/// started and never finished.
#[derive(Default)]
struct Tape {
    entries: Mutex<Vec<Entry>>,
    next: AtomicU64,
    /// Steps whose work ran in this life of the run.
    ran: Mutex<Vec<String>>,
}

impl Journal for Tape {
    fn step<'a>(&'a self, step: Step, work: BoxFuture<'a, Value>) -> BoxFuture<'a, Replayed> {
        Box::pin(async move {
            let label = step.label();
            let at = usize::try_from(self.next.fetch_add(1, Ordering::SeqCst)).unwrap();
            let held = self.entries.lock().unwrap().get(at).cloned();
            if let Some(entry) = &held {
                assert_eq!(entry.label, label, "the replay asked for another step at {at}");
                if let Some(value) = &entry.value {
                    return Replayed::Value(value.clone());
                }
                if matches!(step, Step::ToolCall { mutating: true, .. }) {
                    return Replayed::Interrupted;
                }
            }
            self.ran.lock().unwrap().push(label.clone());
            let value = work.await;
            let mut entries = self.entries.lock().unwrap();
            let entry = Entry { label, value: Some(value.clone()) };
            if held.is_some() {
                entries[at] = entry;
            } else {
                entries.push(entry);
            }
            Replayed::Value(value)
        })
    }
}

/// A virtual clock, ids counted from one, and a [`Tape`].
struct Taped {
    clock: VirtualClock,
    ids: AtomicU64,
    tape: Tape,
}

impl Taped {
    fn new(entries: Vec<Entry>) -> Arc<Taped> {
        let tape = Tape { entries: Mutex::new(entries), ..Tape::default() };
        Arc::new(Taped { clock: VirtualClock::new(), ids: AtomicU64::new(0), tape })
    }
}

impl Clock for Taped {
    fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        self.clock.sleep(d)
    }
}

impl Effects for Taped {
    fn new_id(&self) -> Uuid {
        let n = self.ids.fetch_add(1, Ordering::SeqCst) + 1;
        Uuid::parse(&format!("00000000-0000-4000-8000-{n:012x}")).unwrap()
    }

    fn journal(&self) -> Option<&dyn Journal> {
        Some(&self.tape)
    }
}

/// An overloaded first attempt (a backoff), a Read and a mutating Bash call, a reply cut
/// off mid-stream (retried), then the answer.
fn scenario() -> Scenario {
    Scenario::parse(
        "journaled.json",
        r#"{
          "name": "journaled",
          "prompt": "Log the run and read the notes.",
          "files": {"notes.txt": "ship on friday\n"},
          "settings": {"permissions": {"defaultMode": "bypassPermissions"}},
          "options": {"retry_base_delay_ms": 5},
          "responses": [
            {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}},
            {"content": [
              {"type": "tool_use", "id": "toolu_notes", "name": "Read", "input": {"file_path": "notes.txt"}},
              {"type": "tool_use", "id": "toolu_log", "name": "Bash", "input": {"command": "echo ran >> log.txt"}}
            ]},
            {"content": [{"type": "text", "text": "Log"}, {"type": "text", "text": "ged."}], "cut_after_blocks": 1},
            {"content": [{"type": "text", "text": "Logged; the notes say ship on friday."}]}
          ]
        }"#,
    )
    .unwrap()
}

struct Ran {
    edges: Vec<String>,
    messages: Vec<Message>,
    uuids: Vec<String>,
    requests: usize,
    steps_run: Vec<String>,
    tape: Vec<Entry>,
}

async fn run(dir: &std::path::Path, entries: Vec<Entry>) -> Ran {
    let scenario = scenario();
    let effects = Taped::new(entries);
    let done =
        run_scenario_with(&scenario, dir, effects.clone(), scenario_tools(&scenario), scenario_options(&scenario))
            .await
            .unwrap();
    let uuids = done
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Message { uuid, .. } => Some(uuid.to_string()),
            _ => None,
        })
        .collect();
    Ran {
        edges: done.outcome.edge_ids().into_iter().map(str::to_owned).collect(),
        messages: done.outcome.messages.clone(),
        uuids,
        requests: done.model.requests().len(),
        steps_run: effects.tape.ran.lock().unwrap().clone(),
        tape: effects.tape.entries.lock().unwrap().clone(),
    }
}

fn log_lines(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("log.txt")).map(|t| t.lines().count()).unwrap_or(0)
}

fn result_of(messages: &[Message], id: &str) -> (String, bool) {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, content, is_error } if tool_use_id == id => {
                Some((content.as_str().to_owned(), *is_error))
            }
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_journaled_run_replays_to_the_same_edges_and_ids_without_running_anything() {
    let first_dir = tempfile::tempdir().unwrap();
    let first = run(first_dir.path(), Vec::new()).await;
    let labels: Vec<&str> = first.tape.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "model attempt 1",
            "model attempt 2",
            "tool Read toolu_notes",
            "tool Bash toolu_log",
            "model attempt 3",
            "model attempt 4",
        ]
    );
    assert_eq!(first.steps_run, labels);
    assert_eq!(first.requests, 4);
    assert_eq!(log_lines(first_dir.path()), 1);
    assert_eq!(
        first.edges,
        [
            "prepare.request",
            "request.overload_retry",
            "request.stream_opened",
            "consume.tools",
            "tools.done",
            "checkpoint.next_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.retry",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed",
        ]
    );
    assert_eq!(first.uuids.len(), 4);
    assert_eq!(first.uuids[0], "00000000-0000-4000-8000-000000000001");

    // The same run from its journal, in a directory where nothing ran.
    let again_dir = tempfile::tempdir().unwrap();
    let again = run(again_dir.path(), first.tape.clone()).await;
    assert_eq!(again.steps_run, Vec::<String>::new());
    assert_eq!(again.requests, 0);
    assert_eq!(log_lines(again_dir.path()), 0, "the Bash call was not run again");
    assert_eq!(again.edges, first.edges);
    assert_eq!(again.messages, first.messages);
    assert_eq!(again.uuids, first.uuids);
}

/// The tape of an uninterrupted run cut where a kill would leave it: the steps before
/// `label`, and `label` started without a value.
fn killed_during(tape: &[Entry], label: &str) -> Vec<Entry> {
    let at = tape.iter().position(|e| e.label == label).unwrap();
    let mut cut = tape[..=at].to_vec();
    cut[at].value = None;
    cut
}

#[tokio::test]
async fn a_mutating_call_a_kill_cut_off_is_reported_not_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let first = run(dir.path(), Vec::new()).await;
    let again = run(dir.path(), killed_during(&first.tape, "tool Bash toolu_log")).await;
    // The model attempts after the kill are sent; the scripted model kept its place.
    assert_eq!(again.steps_run, ["model attempt 3", "model attempt 4"]);
    assert_eq!(log_lines(dir.path()), 1, "the Bash call ran once, in the first life");
    let (bash, bash_error) = result_of(&again.messages, "toolu_log");
    assert_eq!(bash, agentloop::tools::OUTCOME_UNKNOWN_RESULT);
    assert!(bash_error);
    assert_eq!(result_of(&again.messages, "toolu_notes"), result_of(&first.messages, "toolu_notes"));
    assert_eq!(again.edges, first.edges);
    assert_eq!(again.uuids, first.uuids);
}

#[tokio::test]
async fn a_read_only_call_a_kill_cut_off_runs_again_and_the_calls_after_it_run() {
    let first_dir = tempfile::tempdir().unwrap();
    let first = run(first_dir.path(), Vec::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let again = run(dir.path(), killed_during(&first.tape, "tool Read toolu_notes")).await;
    assert_eq!(again.steps_run, ["tool Read toolu_notes", "tool Bash toolu_log", "model attempt 3", "model attempt 4"]);
    assert_eq!(log_lines(dir.path()), 1);
    assert_eq!(again.messages, first.messages);
    assert_eq!(again.edges, first.edges);
    assert_eq!(again.uuids, first.uuids);
}
