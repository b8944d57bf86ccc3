//! The approval seam driven by whole runs of the scripted model: a scripted approver answers
//! from a queue and records every question it is asked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop::engine::acting::INTERRUPTED_TOOLS;
use agentloop::engine::clock::VirtualClock;
use agentloop::engine::events::EngineEvent;
use agentloop::harness::{ScenarioRun, run_scenario, run_scenario_approved, scenario_options};
use agentloop::permissions::{Approval, ApprovalRequest, Approver};
use agentloop::protocol::{ContentBlock, Message, Role};
use agentloop::scenario::Scenario;
use agentloop::tools::INTERRUPTED_RESULT;
use agentloop::tools::Registry;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// Answers from a queue (a missing answer fails the test) and records the questions; counts
/// how many questions were open at once.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Approval>>,
    asked: Mutex<Vec<ApprovalRequest>>,
    open: AtomicUsize,
    most_open: AtomicUsize,
    /// How long each answer takes (real time).
    think: Duration,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Approval>) -> Arc<Self> {
        Arc::new(Scripted { answers: Mutex::new(answers.into_iter().collect()), ..Scripted::default() })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Scripted {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_open.fetch_max(open, Ordering::SeqCst);
            self.asked.lock().unwrap().push(request.clone());
            tokio::time::sleep(self.think).await;
            let answer = self.answers.lock().unwrap().pop_front();
            self.open.fetch_sub(1, Ordering::SeqCst);
            answer.unwrap_or_else(|| panic!("unscripted question: {request:?}"))
        })
    }
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn write(id: &str, path: &str) -> Value {
    tool_use(id, "Write", json!({"file_path": path, "content": "x\n"}))
}

fn bash(id: &str, command: &str) -> Value {
    tool_use(id, "Bash", json!({"command": command}))
}

/// A scenario whose replies are the given tool_use lists, then "done".
fn scenario(permissions: Value, replies: Vec<Vec<Value>>) -> Scenario {
    let mut responses: Vec<Value> = replies.into_iter().map(|content| json!({"content": content})).collect();
    responses.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let doc = json!({"prompt": "go", "files": {"a.txt": "alpha\n"}, "settings": {"permissions": permissions},
        "responses": responses});
    Scenario::parse("test.json", &doc.to_string()).unwrap()
}

async fn run_with(s: &Scenario, dir: &std::path::Path, approver: Arc<dyn Approver>) -> ScenarioRun {
    let clock = Arc::new(VirtualClock::new());
    run_scenario_approved(s, dir, clock, Registry::standard(), scenario_options(s), approver).await.unwrap()
}

/// Every tool result of the run, as (id, text, is_error).
fn results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                Some((tool_use_id.clone(), content.as_str().to_owned(), *is_error))
            }
            _ => None,
        })
        .collect()
}

fn request(id: &str, tool: &str, input: Value, reason: &str, suggestion: Option<&str>) -> ApprovalRequest {
    ApprovalRequest {
        tool_use_id: id.into(),
        tool: tool.into(),
        input,
        reason: reason.into(),
        suggestion: suggestion.map(str::to_owned),
        agent: None,
    }
}

const CHANGES: &str = "it changes things and no rule allows it";

#[tokio::test]
async fn allow_once_runs_the_call_and_asks_again_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(json!({}), vec![vec![write("w1", "b.txt")], vec![write("w2", "c.txt")]]);
    let approver = Scripted::new([Approval::AllowOnce, Approval::AllowOnce]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed");
    let input = |p: &str| json!({"file_path": p, "content": "x\n"});
    assert_eq!(
        approver.asked(),
        vec![
            request("w1", "Write", input("b.txt"), CHANGES, Some("Write")),
            request("w2", "Write", input("c.txt"), CHANGES, Some("Write")),
        ]
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "x\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("c.txt")).unwrap(), "x\n");
    assert!(results(&run.outcome.messages).iter().all(|(_, _, is_error)| !is_error));
    let answered: Vec<&Approval> = run
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ApprovalAnswered { approval, .. } => Some(approval),
            _ => None,
        })
        .collect();
    assert_eq!(answered, [&Approval::AllowOnce, &Approval::AllowOnce]);
}

/// One grant covers the second call of the same reply (judged again once the first question
/// is answered) and a call of a later turn.
#[tokio::test]
async fn allow_for_session_runs_the_call_and_does_not_ask_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(
        json!({}),
        vec![vec![bash("b1", "git init -q one"), bash("b2", "git init -q two")], vec![bash("b3", "git init -q three")]],
    );
    let approver = Scripted::new([Approval::AllowForSession { rule: "Bash(git init:*)".into() }]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed");
    assert_eq!(
        approver.asked(),
        vec![request(
            "b1",
            "Bash",
            json!({"command": "git init -q one"}),
            "no allow rule covers `git init -q one`",
            Some("Bash(git init:*)")
        )]
    );
    for repo in ["one", "two", "three"] {
        assert!(dir.path().join(repo).join(".git").is_dir(), "{repo} was not created");
    }
    assert_eq!(results(&run.outcome.messages).iter().filter(|(_, _, is_error)| *is_error).count(), 0);
}

/// A rule that does not parse allows the call once, with a warning.
#[tokio::test]
async fn an_unparsable_session_rule_allows_once_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(json!({}), vec![vec![write("w1", "b.txt")], vec![write("w2", "c.txt")]]);
    let approver = Scripted::new([
        Approval::AllowForSession { rule: "Write(b.txt".into() },
        Approval::Deny { message: "no more".into() },
    ]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(approver.asked().len(), 2);
    assert!(dir.path().join("b.txt").exists() && !dir.path().join("c.txt").exists());
    let warnings: Vec<&String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, ["bad permission rule `Write(b.txt`: missing `)`; the call of Write w1 was allowed once"]);
}

#[tokio::test]
async fn deny_answers_the_call_with_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(json!({}), vec![vec![write("w1", "b.txt")]]);
    let approver = Scripted::new([Approval::Deny { message: "Not now; write to a.txt instead.".into() }]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed");
    assert!(!dir.path().join("b.txt").exists());
    assert_eq!(results(&run.outcome.messages), [("w1".into(), "Not now; write to a.txt instead.".into(), true)]);
}

/// The denied call gets the message, the call after it the interrupted result, and the run
/// ends as if the user had interrupted the tools.
#[tokio::test]
async fn deny_and_interrupt_ends_the_run_with_every_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(json!({}), vec![vec![write("w1", "b.txt"), write("w2", "c.txt")]]);
    let approver = Scripted::new([Approval::DenyAndInterrupt { message: "Stop: wrong file.".into() }]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(run.outcome.terminal.as_str(), "aborted_tools");
    assert_eq!(approver.asked().len(), 1);
    assert!(!dir.path().join("b.txt").exists() && !dir.path().join("c.txt").exists());
    let last = run.outcome.messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert_eq!(
        last.content,
        vec![
            ContentBlock::tool_result("w1", "Stop: wrong file.", true),
            ContentBlock::tool_result("w2", INTERRUPTED_RESULT, true),
            ContentBlock::text(INTERRUPTED_TOOLS),
        ]
    );
    assert_eq!(run.outcome.edge_ids().last(), Some(&"acting.abort"));
}

#[tokio::test]
async fn deny_rules_are_never_sent_to_the_approver() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(
        json!({"deny": ["Bash(rm:*)", "Edit(./b.txt)"]}),
        vec![vec![write("w1", "b.txt"), bash("b1", "rm -rf src")]],
    );
    let approver = Scripted::new([]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(approver.asked(), []);
    assert_eq!(
        results(&run.outcome.messages),
        [
            ("w1".into(), "Permission to use Write was denied by the rule `Edit(./b.txt)`.".into(), true),
            (
                "b1".into(),
                "Permission to use Bash was denied by the rule `Bash(rm:*)` (it runs `rm -rf src`).".into(),
                true
            ),
        ]
    );
}

/// Plan mode refuses what changes anything and turns what an ask rule would ask into today's
/// denial: it never asks.
#[tokio::test]
async fn plan_mode_never_asks() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(
        json!({"defaultMode": "plan", "ask": ["Read"], "allow": ["Write"]}),
        vec![vec![write("w1", "b.txt"), tool_use("r1", "Read", json!({"file_path": "a.txt"}))]],
    );
    let approver = Scripted::new([]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(approver.asked(), []);
    assert_eq!(
        results(&run.outcome.messages),
        [
            ("w1".into(), "Write is not allowed in plan mode: only read-only tools run.".into(), true),
            (
                "r1".into(),
                "Permission to use Read was not granted: the rule `Read` asks for it, and this run cannot ask anyone. \
Allow it with --allowedTools (e.g. `Read` or a narrower rule) or a permission mode."
                    .into(),
                true
            ),
        ]
    );
}

/// Without an approver (`agentloop run -p`) the model reads exactly what it always did.
#[tokio::test]
async fn the_default_approver_keeps_the_unattended_message() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(json!({}), vec![vec![write("w1", "b.txt")]]);
    let run = run_scenario(&s, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    let message = "Permission to use Write was not granted: it changes things and no rule allows it, and this run \
cannot ask anyone. Allow it with --allowedTools (e.g. `Write` or a narrower rule) or a permission mode.";
    assert_eq!(results(&run.outcome.messages), [("w1".into(), message.into(), true)]);
    assert!(run.events.iter().any(|e| matches!(e, EngineEvent::ApprovalAnswered {
        approval: Approval::Deny { message: m }, .. } if m == message)));
}

/// Read-only calls run concurrently, but their questions are put one at a time, in call order.
#[tokio::test]
async fn concurrent_calls_are_asked_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let reads: Vec<Value> =
        (1..=3).map(|i| tool_use(&format!("r{i}"), "Read", json!({"file_path": "a.txt"}))).collect();
    let s = scenario(json!({"ask": ["Read"]}), vec![reads]);
    let approver = Arc::new(Scripted {
        answers: Mutex::new([Approval::AllowOnce, Approval::AllowOnce, Approval::AllowOnce].into()),
        think: Duration::from_millis(30),
        ..Scripted::default()
    });
    let run = run_with(&s, dir.path(), approver.clone()).await;
    let asked = approver.asked();
    assert_eq!(asked.iter().map(|r| r.tool_use_id.as_str()).collect::<Vec<_>>(), ["r1", "r2", "r3"]);
    assert!(asked.iter().all(|r| r.reason == "the rule `Read` asks for it" && r.suggestion.is_none()));
    assert_eq!(approver.most_open.load(Ordering::SeqCst), 1);
    assert_eq!(results(&run.outcome.messages).len(), 3);
    assert!(results(&run.outcome.messages).iter().all(|(_, text, is_error)| !is_error && text == "     1\talpha\n"));
}

/// An approval with a changed input (the SDK's `updatedInput`) runs the call with it, judged
/// again: a deny rule still refuses the changed call, and nobody is asked twice.
#[tokio::test]
async fn an_allowed_change_runs_the_changed_input_and_deny_rules_still_hold() {
    let dir = tempfile::tempdir().unwrap();
    let s =
        scenario(json!({"deny": ["Write(secret.txt)"]}), vec![vec![write("w1", "b.txt")], vec![write("w2", "c.txt")]]);
    let approver = Scripted::new([
        Approval::AllowChanged { input: json!({"file_path": "b.txt", "content": "changed\n"}) },
        Approval::AllowChanged { input: json!({"file_path": "secret.txt", "content": "leak\n"}) },
    ]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed");
    assert_eq!(approver.asked().len(), 2);
    assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "changed\n");
    assert!(!dir.path().join("secret.txt").exists(), "the deny rule holds for the changed call");
    assert!(!dir.path().join("c.txt").exists(), "the model's own input did not run");
    let r = results(&run.outcome.messages);
    assert_eq!((r[0].0.as_str(), r[0].2), ("w1", false));
    assert_eq!(r[1], ("w2".into(), "Permission to use Write was denied by the rule `Write(secret.txt)`.".into(), true));
}

/// A scenario whose settings carry `hooks` as well as permissions.
fn scenario_with_hooks(permissions: Value, hooks: Value, replies: Vec<Vec<Value>>) -> Scenario {
    let mut responses: Vec<Value> = replies.into_iter().map(|content| json!({"content": content})).collect();
    responses.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let doc = json!({"prompt": "go", "files": {"a.txt": "alpha\n"},
        "settings": {"permissions": permissions, "hooks": hooks}, "responses": responses});
    Scenario::parse("test.json", &doc.to_string()).unwrap()
}

fn pre_hook(matcher: &str, decision: &str) -> Value {
    let output = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
        "permissionDecisionReason": format!("the hook says {decision}")}});
    json!({"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": format!("echo '{output}'")}]}]})
}

/// A PreToolUse hook's `permissionDecision`: `allow` runs a call nobody was asked about,
/// `ask` puts an allowed call to the approver, and a deny rule beats a hook's `allow`.
#[tokio::test]
async fn hook_permission_decisions_settle_or_raise_questions_and_deny_rules_still_win() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario_with_hooks(
        json!({"deny": ["Write(c.txt)"]}),
        pre_hook("Write", "allow"),
        vec![vec![write("w1", "b.txt")], vec![write("w2", "c.txt")]],
    );
    let approver = Scripted::new([]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(approver.asked(), vec![], "the hook's allow settled the question");
    assert!(dir.path().join("b.txt").exists());
    assert!(!dir.path().join("c.txt").exists(), "the deny rule wins over the hook");
    let r = results(&run.outcome.messages);
    assert_eq!(r[1], ("w2".into(), "Permission to use Write was denied by the rule `Write(c.txt)`.".into(), true));

    let dir = tempfile::tempdir().unwrap();
    let read = tool_use("r1", "Read", json!({"file_path": "a.txt"}));
    let s = scenario_with_hooks(json!({}), pre_hook("Read", "ask"), vec![vec![read]]);
    let approver = Scripted::new([Approval::Deny { message: "not that one".into() }]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert_eq!(approver.asked(), vec![request("r1", "Read", json!({"file_path": "a.txt"}), "the hook says ask", None)]);
    assert_eq!(results(&run.outcome.messages), vec![("r1".into(), "not that one".into(), true)]);
}

/// The ways around the rules through an approval or a hook: a changed input that hides a
/// denied command behind `;`, a changed input that writes outside the working directory, and
/// a hook's `allow` in plan mode. Each is refused as the rules say.
#[tokio::test]
async fn changed_inputs_and_hook_allows_do_not_get_through_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let s =
        scenario(json!({"deny": ["Bash(rm:*)"]}), vec![vec![bash("b1", "touch made.txt")], vec![write("w1", "b.txt")]]);
    let approver = Scripted::new([
        Approval::AllowChanged { input: json!({"command": "touch made.txt; rm -rf a.txt"}) },
        Approval::AllowChanged { input: json!({"file_path": target, "content": "x\n"}) },
    ]);
    let run = run_with(&s, dir.path(), approver.clone()).await;
    assert!(dir.path().join("a.txt").exists(), "the hidden rm did not run");
    assert!(!target.exists(), "nothing was written outside the working directory");
    let r = results(&run.outcome.messages);
    assert_eq!(
        r[0],
        (
            "b1".into(),
            "Permission to use Bash was denied by the rule `Bash(rm:*)` (it runs `rm -rf a.txt`).".into(),
            true
        )
    );
    assert!(!dir.path().join("made.txt").exists(), "the changed line did not run at all");
    assert!(r[1].2 && r[1].1.contains("is outside the working directory"), "{:?}", r[1]);

    let dir = tempfile::tempdir().unwrap();
    let doc = json!({"prompt": "go", "files": {"a.txt": "alpha\n"},
        "settings": {"permissions": {"defaultMode": "plan"}, "hooks": pre_hook("Write", "allow")},
        "responses": [{"content": [write("w1", "b.txt")]}, {"content": [{"type": "text", "text": "done"}]}]});
    let s = Scenario::parse("test.json", &doc.to_string()).unwrap();
    let run = run_with(&s, dir.path(), Scripted::new([])).await;
    assert!(!dir.path().join("b.txt").exists(), "plan mode wins over the hook's allow");
    assert_eq!(
        results(&run.outcome.messages),
        vec![("w1".into(), "Write is not allowed in plan mode: only read-only tools run.".into(), true)]
    );
}
