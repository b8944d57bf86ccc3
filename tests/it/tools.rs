//! Tool execution as the engine drives it: calls start while the reply still streams, and
//! the phase's results come back in call order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop::engine::clock::VirtualClock;
use agentloop::engine::events::EngineEvent;
use agentloop::harness::{run_scenario, run_scenario_with, scenario_options};
use agentloop::protocol::{ContentBlock, Role};
use agentloop::scenario::Scenario;
use agentloop::tools::Edit;
use agentloop::tools::Read;
use agentloop::tools::{Registry, Tool, ToolContext, ToolOutput};
use futures::future::BoxFuture;
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
        .rposition(|e| matches!(e, EngineEvent::TextDelta { text: t, .. } if long_text.contains(t.as_str())))
        .unwrap();
    let reply_done = position(&|e| matches!(e, EngineEvent::Transition(r) if r.edge == "consume.tools"));
    assert!(started < last_text, "the Read started at event {started}, after the last text delta {last_text}");
    assert!(
        matches!(&run.events[started], EngineEvent::ToolStarted { early: true, .. }),
        "a read-only call is marked as started early"
    );
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

/// Wraps a real tool and observes how its calls overlap.
struct Observed {
    inner: Arc<dyn Tool>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    barrier: Option<Arc<tokio::sync::Barrier>>,
}

impl Tool for Observed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> serde_json::Value {
        self.inner.input_schema()
    }
    fn is_concurrency_safe(&self, input: &serde_json::Value) -> bool {
        self.inner.is_concurrency_safe(input)
    }
    fn kind(&self) -> agentloop::tools::ToolKind {
        self.inner.kind()
    }
    fn permission_subject(&self, input: &serde_json::Value) -> agentloop::tools::Subject {
        self.inner.permission_subject(input)
    }
    fn is_read_only(&self, input: &serde_json::Value) -> bool {
        self.inner.is_read_only(input)
    }
    fn failure_cancels_siblings(&self) -> bool {
        self.inner.failure_cancels_siblings()
    }
    fn call(&self, input: serde_json::Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let inner = self.inner.clone();
        let in_flight = self.in_flight.clone();
        let max = self.max_in_flight.clone();
        let barrier = self.barrier.clone();
        Box::pin(async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(now, Ordering::SeqCst);
            let gated = input.get("file_path").and_then(|p| p.as_str()) != Some("e.txt");
            if let Some(barrier) = barrier.filter(|_| gated) {
                // Passes only when all three calls are inside `call` at the same time.
                if tokio::time::timeout(Duration::from_secs(10), barrier.wait()).await.is_err() {
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    return ToolOutput::error("barrier timed out: the calls did not overlap");
                }
            } else {
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            let out = inner.call(input, ctx).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            out
        })
    }
}

fn observed(inner: Arc<dyn Tool>, barrier: Option<Arc<tokio::sync::Barrier>>) -> (Arc<Observed>, Arc<AtomicUsize>) {
    let max = Arc::new(AtomicUsize::new(0));
    let tool = Observed { inner, in_flight: Arc::default(), max_in_flight: max.clone(), barrier };
    (Arc::new(tool), max)
}

/// Three Reads in one reply run at the same time (a 3-party barrier inside the tool only
/// opens if a.txt, b.txt and c.txt are read at once); two Edits in one reply never do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_overlap_and_edits_do_not() {
    let read = |p: &str| json!({"type": "tool_use", "name": "Read", "input": {"file_path": p}});
    let edit = |old: &str, new: &str| json!({"type": "tool_use", "name": "Edit", "input": {"file_path": "e.txt", "old_string": old, "new_string": new}});
    let s = scenario(json!({
        "prompt": "go",
        "files": {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "e.txt": "one two\n"},
        "settings": {"permissions": {"defaultMode": "acceptEdits"}},
        "responses": [
            {"content": [read("a.txt"), read("b.txt"), read("c.txt"), read("e.txt")]},
            {"content": [edit("one", "1"), edit("two", "2")],
             "expect": {"tool_result_is_error": [false, false, false, false]}},
            {"content": [{"type": "text", "text": "done"}], "expect": {"tool_result_is_error": [false, false]}}
        ]
    }));
    let mut tools = Registry::standard();
    let (reads, max_reads) = observed(Arc::new(Read), Some(Arc::new(tokio::sync::Barrier::new(3))));
    let (edits, max_edits) = observed(Arc::new(Edit), None);
    tools.register(reads);
    tools.register(edits);
    let dir = tempfile::tempdir().unwrap();
    let run =
        run_scenario_with(&s, dir.path(), Arc::new(VirtualClock::new()), tools, scenario_options(&s)).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert!(max_reads.load(Ordering::SeqCst) >= 3, "reads in flight at once: {}", max_reads.load(Ordering::SeqCst));
    assert_eq!(max_edits.load(Ordering::SeqCst), 1, "edits must run one at a time");
    assert_eq!(std::fs::read_to_string(dir.path().join("e.txt")).unwrap(), "1 2\n");
}

/// A Write through a dangling symlink to a file outside the working directory is refused by
/// the permission layer (which resolves the symlink, as the tool does), even in acceptEdits
/// mode, and the outside file is never created.
#[tokio::test]
async fn a_write_through_a_dangling_symlink_to_the_outside_is_refused() {
    let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (root, out) = (inside.path().canonicalize().unwrap(), outside.path().canonicalize().unwrap());
    std::os::unix::fs::symlink(out.join("x"), root.join("notes.md")).unwrap();
    let s = scenario(json!({
        "prompt": "write the notes",
        "settings": {"permissions": {"defaultMode": "acceptEdits"}},
        "responses": [
            {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": "notes.md", "content": "x"}}]},
            {"content": [{"type": "text", "text": "refused"}], "expect": {"tool_result_is_error": [true]}}
        ]
    }));
    let run = run_scenario(&s, &root, Arc::new(VirtualClock::new())).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    let expected = format!(
        "{} is outside the working directory {}; a rule such as `Write(/{}/**)` would allow it.",
        out.join("x").display(),
        root.display(),
        out.display()
    );
    assert!(
        matches!(&run.outcome.messages[2].content[0], ContentBlock::ToolResult { is_error: true, content, .. } if content.as_str() == expected),
        "{:?}",
        run.outcome.messages[2]
    );
    assert!(!out.join("x").exists());
}

/// A `Read(./secrets/**)` deny rule holds for every tool that reads, through the whole engine:
/// Read and Bash are refused, Grep and Glob over the tree skip the directory.
#[tokio::test]
async fn a_read_deny_rule_hides_a_directory_from_every_reading_tool() {
    let s = scenario(json!({
        "prompt": "find the needle",
        "files": {"src/a.txt": "needle\n", "secrets/key": "needle\n"},
        "settings": {"permissions": {"deny": ["Read(./secrets/**)"]}},
        "responses": [
            {"content": [
                {"type": "tool_use", "name": "Grep", "input": {"pattern": "needle", "output_mode": "files_with_matches"}},
                {"type": "tool_use", "name": "Glob", "input": {"pattern": "**/*"}},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "secrets/key"}}
             ], "stop_reason": "tool_use"},
            // A failing Bash call cancels the calls beside it: the Bash calls come alone.
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "cat secrets/key"}}],
             "stop_reason": "tool_use", "expect": {"tool_result_is_error": [false, false, true]}},
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "grep -r needle ."}}],
             "stop_reason": "tool_use", "expect": {"tool_result_is_error": [true]}},
            {"content": [{"type": "text", "text": "done"}], "expect": {"tool_result_is_error": [true]}}
        ]
    }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    let results: Vec<&str> = [2, 4, 6]
        .iter()
        .flat_map(|&i| &run.outcome.messages[i].content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(results[0], root.join("src/a.txt").display().to_string());
    assert_eq!(results[1], root.join("src/a.txt").display().to_string());
    assert_eq!(results[2], "Permission to use Read was denied by the rule `Read(./secrets/**)`.");
    assert_eq!(
        results[3],
        format!(
            "Permission to use Bash was denied by the rule `Read(./secrets/**)`: it reaches {}.",
            root.join("secrets/key").display()
        )
    );
    assert_eq!(
        results[4],
        format!("Permission to use Bash was denied by the rule `Read(./secrets/**)`: it reaches {}.", root.display())
    );
}

/// A call that can change something never starts before the reply's `message_stop`: here the
/// stream is cut after a Bash call that appends to a file, the request is retried and the
/// model issues the same call again. The command runs once, after the second reply ended.
#[tokio::test]
async fn a_mutating_call_never_runs_for_a_cut_stream() {
    let bash = json!({"type": "tool_use", "name": "Bash", "input": {"command": "echo run >> counter.txt"}});
    let s = scenario(json!({
        "prompt": "count",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [
            {"content": [bash, {"type": "text", "text": "Appending a line. ".repeat(4)}],
             "chunk_delay_ms": 20, "cut_after_blocks": 2},
            {"content": [bash, {"type": "text", "text": "Appending a line."}], "chunk_delay_ms": 20},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("counter.txt")).unwrap(), "run\n");
    assert_eq!(
        run.outcome.edge_ids(),
        vec![
            "prepare.request",
            "request.stream_opened",
            "consume.retry",
            "request.stream_opened",
            "consume.tools",
            "tools.done",
            "checkpoint.next_turn",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
    let starts: Vec<(&str, bool)> = run
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ToolStarted { name, early, .. } => Some((name.as_str(), *early)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![("Bash", false)]);
}

/// Looks into the run's spill directory and records the modes of it and of the files in it.
struct SpillProbe {
    dir: std::path::PathBuf,
    seen: Arc<std::sync::Mutex<Vec<(String, u32)>>>,
}

impl Tool for SpillProbe {
    fn name(&self) -> &'static str {
        "SpillProbe"
    }
    fn description(&self) -> &'static str {
        "test tool: the modes of the spill directory and its files"
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool {
        true
    }
    fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let mut seen = vec![("dir".to_owned(), mode(&self.dir))];
        let mut files: Vec<_> = std::fs::read_dir(&self.dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        seen.extend(files.iter().map(|f| (f.file_name().unwrap().to_string_lossy().into_owned(), mode(f))));
        *self.seen.lock().unwrap() = seen;
        Box::pin(async { ToolOutput::ok("probed") })
    }
}

/// A result over the cap is saved whole in the run's spill directory, which only its user
/// can read (directory 0700, file 0600) and which is removed when the run ends.
#[tokio::test]
async fn spilled_results_are_private_and_removed_at_the_end() {
    let s = scenario(json!({
        "prompt": "go",
        "files": {"big.txt": "a line of the big file\n".repeat(50)},
        "options": {"tool_result_cap": 100},
        "responses": [
            {"content": [{"type": "tool_use", "id": "toolu_big", "name": "Read", "input": {"file_path": "big.txt"}}]},
            {"content": [{"type": "tool_use", "name": "SpillProbe", "input": {}}]},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    }));
    let options = scenario_options(&s);
    let spill = std::env::temp_dir().join(format!("agentloop-{}", options.run_id));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tools = Registry::standard();
    tools.register(Arc::new(SpillProbe { dir: spill.clone(), seen: seen.clone() }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario_with(&s, dir.path(), Arc::new(VirtualClock::new()), tools, options).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert_eq!(*seen.lock().unwrap(), vec![("dir".to_owned(), 0o700), ("toolu_big.txt".to_owned(), 0o600)]);
    assert!(!spill.exists(), "{} is left behind", spill.display());
}

/// A read-only call that a tool hook runs for waits for the reply's end too (a hook command
/// can change anything): the PreToolUse hook here runs once although the first stream is cut
/// after the call and the model issues it again.
#[tokio::test]
async fn a_call_with_a_tool_hook_never_starts_before_the_reply_ends() {
    let read = json!({"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}});
    let hook = json!({"matcher": "Read", "hooks": [{"type": "command", "command": "echo hook >> hooks.txt"}]});
    let s = scenario(json!({
        "prompt": "read",
        "files": {"a.txt": "alpha\n"},
        "settings": {"hooks": {"PreToolUse": [hook]}},
        "responses": [
            {"content": [read, {"type": "text", "text": "Reading the file. ".repeat(4)}],
             "chunk_delay_ms": 20, "cut_after_blocks": 2},
            {"content": [read]},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    }));
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert_eq!(std::fs::read_to_string(dir.path().join("hooks.txt")).unwrap(), "hook\n");
    let early: Vec<bool> = run
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ToolStarted { early, .. } => Some(*early),
            _ => None,
        })
        .collect();
    assert_eq!(early, vec![false]);
}

/// `TodoWrite` through the binary: each call replaces the session's list, the result says how
/// it stands, and stream-json carries the list before and after as `tool_use_result`, as
/// Claude Code's does.
#[test]
fn todo_write_keeps_the_plan_and_stream_json_shows_it() {
    use assert_cmd::cargo::CommandCargoExt;
    let item = |content: &str, status: &str| json!({"content": content, "status": status, "activeForm": format!("Doing {content}")});
    let plan = json!({"todos": [item("tests", "in_progress"), item("docs", "pending")]});
    let done = json!({"todos": [item("tests", "completed"), item("docs", "completed")]});
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("todo.json");
    let doc = json!({"prompt": "Plan it.", "responses": [
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": plan}]},
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": done}],
         "expect": {"tool_result_is_error": [false],
                    "last_user_text_contains": "The todo list is updated: 2 item(s), 1 in progress, 1 pending, 0 completed."}},
        {"content": [{"type": "text", "text": "All done."}],
         "expect": {"last_user_text_contains": "2 item(s), 0 in progress, 0 pending, 2 completed."}}
    ]});
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", work.path().join("home"))
        .args(["-p", "Plan it.", "--output-format", "stream-json", "--verbose", "--model"])
        .arg(format!("scripted:{}", file.display()))
        .args(["--cwd", work.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let results: Vec<&serde_json::Value> = lines.iter().filter_map(|l| l.get("tool_use_result")).collect();
    assert_eq!(
        results,
        [
            &json!({"oldTodos": [], "newTodos": plan["todos"]}),
            &json!({"oldTodos": plan["todos"], "newTodos": done["todos"]})
        ]
    );
    let result = lines.last().unwrap();
    assert_eq!((result["subtype"].as_str(), result["result"].as_str()), (Some("success"), Some("All done.")));
}
