//! Subagents driven by whole runs of the scripted model: each child is a machine of the same
//! table, its requests answered from its own script (routed by its first message), its events
//! forwarded to the parent's sink, its report the `Agent` call's result.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentloop::engine::clock::VirtualClock;
use agentloop::engine::events::{EngineEvent, SubagentReport, SubagentRun};
use agentloop::engine::machine::Deps;
use agentloop::engine::run::run;
use agentloop::harness::{ScenarioRun, run_scenario, run_scenario_approved, scenario_options, scenario_tools};
use agentloop::hooks::command::CommandHooks;
use agentloop::model::scripted::ScriptedModel;
use agentloop::permissions::{Approval, ApprovalRequest, Approver, Mode, Policy};
use agentloop::protocol::{ContentBlock, Role};
use agentloop::scenario::Scenario;
use agentloop::tools::ShellEnv;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn parse(doc: Value) -> Scenario {
    Scenario::parse("test", &doc.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn builtin(name: &str) -> Scenario {
    agentloop::scenario::builtin::load(name).unwrap()
}

async fn run_in_tempdir(scenario: &Scenario) -> (ScenarioRun, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let run = run_scenario(scenario, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    (run, dir)
}

fn agent_call(prompt: &str, kind: &str, background: bool) -> Value {
    json!({"type": "tool_use", "name": "Agent",
        "input": {"description": "Do a part", "prompt": prompt, "subagent_type": kind, "run_in_background": background}})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn reply(blocks: Vec<Value>) -> Value {
    json!({"content": blocks})
}

/// The subagents' starts and ends, in the order the parent's sink saw them.
fn lifecycle(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::SubagentStarted { agent, .. } => Some(format!("start {}", agent.prompt)),
            EngineEvent::SubagentEnded { agent, report } => {
                Some(format!("end {} {}", agent.prompt, report.terminal.as_str()))
            }
            _ => None,
        })
        .collect()
}

fn ends(events: &[EngineEvent]) -> Vec<(Arc<SubagentRun>, SubagentReport)> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::SubagentEnded { agent, report } => Some((agent.clone(), (**report).clone())),
            _ => None,
        })
        .collect()
}

/// The edges one subagent's run took, from its forwarded transitions.
fn child_edges(events: &[EngineEvent], prompt: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Subagent { agent, event } if agent.prompt == prompt => match &**event {
                EngineEvent::Transition(record) => Some(record.edge.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The `tool_result` blocks of the parent's last user message with a result: `(text, is_error)`.
fn results_of(messages: &[agentloop::protocol::Message]) -> Vec<(String, bool)> {
    let message = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. })))
        .expect("a user message with tool results");
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, is_error, .. } => Some((content.as_str().to_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

const GREETER: &str = "You are the greeter subagent. Read the file you are asked about and quote it.";

fn greeter(extra: Value) -> Value {
    let mut definition =
        json!({"description": "Reads greeting files.", "prompt": GREETER, "tools": ["Read", "Grep"], "model": "haiku"});
    definition.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"greeter": definition})
}

/// The demo: a synchronous child reads the file with its own model, tools and prompt, and
/// its report is the `Agent` call's result; its records carry its place in the run tree.
#[tokio::test]
async fn a_synchronous_child_reads_a_file_and_reports_back() {
    let (run, _dir) = run_in_tempdir(&builtin("subagent")).await;
    let outcome = &run.outcome;
    assert_eq!(outcome.terminal.as_str(), "completed", "{:?}", outcome.error);
    let child_prompt = "SUBTASK: read greeting.txt and report its text";
    let child_requests: Vec<_> = run
        .model
        .requests()
        .into_iter()
        .filter(|(_, r)| r.messages.first().map(|m| m.text()).as_deref() == Some(child_prompt))
        .collect();
    assert_eq!(child_requests.len(), 2);
    for (_, request) in &child_requests {
        assert_eq!(request.model, "claude-haiku-4-5");
        assert_eq!(request.system, GREETER);
        let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tools, ["Read", "Grep"], "exactly the definition's tools, never Agent");
    }
    assert_eq!(
        child_edges(&run.events, child_prompt),
        [
            "prepare.request",
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
    let ended = ends(&run.events);
    assert_eq!(ended.len(), 1);
    let (agent, report) = &ended[0];
    assert_eq!(
        (agent.agent_type.as_str(), agent.background, agent.model.as_str()),
        ("greeter", false, "claude-haiku-4-5")
    );
    assert_eq!((report.status, report.tool_uses, report.turns), ("completed", 1, 2));
    assert_eq!(report.tools_used, ["Read"]);
    assert_eq!(report.summary, "The file says: Hello from the subagent demo!");
    // The parent's Agent call: its id is the child's parent_tool_use_id on every record.
    let call = outcome.messages[1].tool_uses().next().unwrap().id.to_owned();
    assert_eq!(agent.tool_use_id, call);
    let links: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Subagent { event, .. } => match &**event {
                EngineEvent::Transition(r) => Some(r.link.clone().expect("a child's record is linked")),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(links.iter().all(|l| l.parent_tool_use_id == call && l.run_id == agent.run_id), "{links:?}");
    assert!(outcome.trace.iter().all(|r| r.link.is_none()), "the parent's records are its own");
    let results = results_of(&outcome.messages);
    assert_eq!(results.len(), 1);
    assert!(!results[0].1);
    assert!(results[0].0.contains("\nThe file says: Hello from the subagent demo!\nagentId: "), "{}", results[0].0);
    // The child's cost is the parent's too, and its tokens are reported apart.
    assert_eq!(outcome.delegated.len(), 1);
    assert_eq!(outcome.delegated[0].0, "claude-haiku-4-5");
    assert_eq!(outcome.delegated[0].1, report.usage);
    assert!(outcome.cost_usd > report.cost_usd && report.cost_usd > 0.0);
}

/// A background child: the call answers at once, the parent ends its turn, and the child's
/// end starts a turn of its own (`checkpoint.task_notification`) carrying the report.
#[tokio::test]
async fn a_background_childs_end_starts_a_parent_turn() {
    let (run, _dir) = run_in_tempdir(&builtin("background-subagent")).await;
    let outcome = &run.outcome;
    assert_eq!(outcome.terminal.as_str(), "completed", "{:?}", outcome.error);
    let launched = results_of(&outcome.messages);
    assert!(launched[0].0.contains("started in the background"), "{launched:?}");
    let last_user = outcome.messages.iter().rev().find(|m| m.role == Role::User).unwrap();
    let note = last_user.text();
    assert!(note.starts_with("<task-notification>\n<task-id>a"), "{note}");
    assert!(note.contains("<status>completed</status>"), "{note}");
    assert!(note.contains("<result>\nThe file says: Hello from the background!\n</result>"), "{note}");
    let notified = outcome.trace.iter().position(|r| r.edge == "checkpoint.task_notification").unwrap();
    assert_eq!(outcome.trace[notified].counters["turns"], 97, "a notification turn is a turn");
    let ended = ends(&run.events);
    assert_eq!(ended.len(), 1);
    assert!(ended[0].0.background);
    assert_eq!(outcome.final_text, "The greeter reports: Hello from the background!");
    assert_eq!(outcome.delegated.len(), 1, "the child's cost joins the parent's when it reports");
}

fn two_children(background: bool) -> Scenario {
    parse(json!({
        "prompt": "Read both files with two greeters.",
        "files": {"a.txt": "alpha\n", "b.txt": "beta\n"},
        "agents": greeter(json!({})),
        "responses": [
            reply(vec![agent_call("CHILD A", "greeter", background), agent_call("CHILD B", "greeter", background)]),
            reply(vec![text("Both read.")]),
        ],
        "subagents": [
            {"prompt": "CHILD A", "responses": [
                {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}}], "chunk_delay_ms": 5},
                reply(vec![text("A says alpha")])]},
            {"prompt": "CHILD B", "responses": [
                {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "b.txt"}}], "chunk_delay_ms": 5},
                reply(vec![text("B says beta")])]}
        ]
    }))
}

/// Two `Agent` calls of one reply run side by side, and their results come back in call order.
#[tokio::test]
async fn two_children_run_in_parallel() {
    let (run, _dir) = run_in_tempdir(&two_children(false)).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    let order = lifecycle(&run.events);
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(order[..2].iter().all(|e| e.starts_with("start ")), "both started before either ended: {order:?}");
    let results = results_of(&run.outcome.messages);
    assert!(results[0].0.contains("A says alpha") && results[1].0.contains("B says beta"), "{results:?}");
    assert_eq!(run.model.subagents_served(), [2, 2]);
    let stats = run.outcome.subagents.clone().unwrap();
    assert_eq!((stats.spawned, stats.requested.foreground, stats.completed, stats.max_depth), (2, 2, 2, 1));
    assert_eq!(stats.by_type, [("greeter".to_owned(), 2)].into());
}

/// A child bound by its definition's `maxTurns` ends as `max_turns` in its own machine; the
/// parent reads that in an error result and goes on.
#[tokio::test]
async fn a_child_hits_its_own_max_turns() {
    let scenario = parse(json!({
        "prompt": "Ask the greeter.",
        "files": {"a.txt": "alpha\n"},
        "agents": greeter(json!({"maxTurns": 1})),
        "responses": [
            reply(vec![agent_call("READ A", "greeter", false)]),
            {"content": [text("The greeter ran out of turns.")],
             "expect": {"tool_result_is_error": [true], "last_user_text_contains": "its run ended with `max_turns`"}}
        ],
        "subagents": [{"prompt": "READ A", "responses": [
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}}]}]}]
    }));
    let (run, _dir) = run_in_tempdir(&scenario).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    let ended = ends(&run.events);
    assert_eq!(ended[0].1.terminal.as_str(), "max_turns");
    assert_eq!(ended[0].1.status, "failed");
    assert_eq!(
        child_edges(&run.events, "READ A"),
        ["prepare.request", "request.stream_opened", "consume.tools", "tools.done", "checkpoint.max_turns"]
    );
}

/// A child whose definition asks for plan mode cannot write, whatever the parent's mode.
#[tokio::test]
async fn a_child_in_plan_mode_is_refused_a_write() {
    let scenario = parse(json!({
        "prompt": "Have the planner write.",
        "settings": {"permissions": {"defaultMode": "bypassPermissions"}},
        "agents": greeter(json!({"permissionMode": "plan", "tools": ["Read", "Write"]})),
        "responses": [
            reply(vec![agent_call("WRITE IT", "greeter", false)]),
            reply(vec![text("It could not write.")])
        ],
        "subagents": [{"prompt": "WRITE IT", "responses": [
            {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": "out.txt", "content": "x"}}]},
            {"content": [text("Plan mode refused the write.")], "expect": {"tool_result_is_error": [true]}}]}]
    }));
    let (run, dir) = run_in_tempdir(&scenario).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert!(!dir.path().join("out.txt").exists(), "plan mode held in the child");
    assert_eq!(ends(&run.events)[0].1.summary, "Plan mode refused the write.");
}

/// Answers every question with `AllowOnce` and records it.
#[derive(Default)]
struct Allowing {
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for Allowing {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(async { Approval::AllowOnce })
    }
}

/// A child's call the policy cannot decide goes to the parent's approver, which is told which
/// subagent asks.
#[tokio::test]
async fn a_childs_question_goes_to_the_parents_approver_naming_the_child() {
    let scenario = parse(json!({
        "prompt": "Have the writer write.",
        "agents": greeter(json!({"tools": ["Write"]})),
        "responses": [
            reply(vec![agent_call("WRITE IT", "greeter", false)]),
            reply(vec![text("Written.")])
        ],
        "subagents": [{"prompt": "WRITE IT", "responses": [
            {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": "out.txt", "content": "x\n"}}]},
            {"content": [text("Wrote it.")], "expect": {"tool_result_is_error": [false]}}]}]
    }));
    let dir = tempfile::tempdir().unwrap();
    let approver = Arc::new(Allowing::default());
    let run = run_scenario_approved(
        &scenario,
        dir.path(),
        Arc::new(VirtualClock::new()),
        scenario_tools(&scenario),
        scenario_options(&scenario),
        approver.clone(),
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "x\n");
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "Write");
    let agent = asked[0].agent.as_deref().unwrap();
    let id = &ends(&run.events)[0].0.agent_id;
    assert_eq!(agent, format!("greeter {id}"));
}

/// An interrupt while two children run ends each child through its own abort edge, before the
/// parent's tool phase ends through `acting.abort`.
#[tokio::test]
async fn an_interrupt_while_two_children_run_ends_them_first() {
    let sleeping = |prompt: &str| {
        json!({"prompt": prompt, "responses": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 30"}}]}]})
    };
    let scenario = parse(json!({
        "prompt": "Run two sleepers.",
        "settings": {"permissions": {"defaultMode": "bypassPermissions"}},
        "agents": {"sleeper": {"description": "Sleeps.", "prompt": "Sleep.", "tools": ["Bash"]}},
        "responses": [reply(vec![agent_call("SLEEP A", "sleeper", false), agent_call("SLEEP B", "sleeper", false)])],
        "subagents": [sleeping("SLEEP A"), sleeping("SLEEP B")]
    }));
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let model = Arc::new(ScriptedModel::new(&scenario, cancel.clone()));
    let deps = Deps {
        model,
        tools: scenario_tools(&scenario),
        hooks: Arc::new(CommandHooks::new(Default::default())),
        effects: Arc::new(VirtualClock::new()),
        cancel: cancel.clone(),
        cwd: dir.path().to_path_buf(),
        policy: Arc::new(Policy::new(Mode::BypassPermissions, dir.path().to_path_buf())),
        shell_env: Arc::new(ShellEnv::inherited(&[])),
        sandbox: agentloop::sandbox::Sandbox::none(),
        approver: Arc::new(agentloop::permissions::Unattended),
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let sleeping_now = Arc::new(AtomicUsize::new(0));
    let (log, sleepers) = (events.clone(), sleeping_now.clone());
    let sink = move |event: &EngineEvent| {
        if let EngineEvent::Subagent { event: inner, .. } = event
            && let EngineEvent::ToolStarted { name, .. } = &**inner
            && name == "Bash"
            && sleepers.fetch_add(1, Ordering::SeqCst) == 1
        {
            // Both children's commands are running: the user presses Ctrl+C.
            cancel.cancel();
        }
        log.lock().unwrap().push(event.clone());
    };
    let outcome = run(deps, scenario_options(&scenario), &scenario.prompt, Box::new(sink)).await.unwrap();
    assert_eq!(outcome.terminal.as_str(), "aborted_tools");
    assert_eq!(outcome.edge_ids(), ["prepare.request", "request.stream_opened", "consume.tools", "acting.abort"]);
    let events = events.lock().unwrap().clone();
    let order = lifecycle(&events);
    assert_eq!(order.len(), 4, "{order:?}");
    for prompt in ["SLEEP A", "SLEEP B"] {
        assert_eq!(
            child_edges(&events, prompt),
            ["prepare.request", "request.stream_opened", "consume.tools", "acting.abort"],
            "{prompt}"
        );
    }
    let parent_abort =
        events.iter().position(|e| matches!(e, EngineEvent::Transition(r) if r.edge == "acting.abort")).unwrap();
    let last_end = events.iter().rposition(|e| matches!(e, EngineEvent::SubagentEnded { .. })).unwrap();
    assert!(last_end < parent_abort, "the children ended before the parent's abort edge");
    let stats = outcome.subagents.unwrap();
    assert_eq!((stats.spawned, stats.killed.user, stats.killed.parent, stats.completed), (2, 2, 0, 0));
}

/// A subagent type nobody defined is an error result naming the agents there are.
#[tokio::test]
async fn an_unknown_subagent_type_is_an_error_result() {
    let scenario = parse(json!({
        "prompt": "Delegate.",
        "responses": [
            reply(vec![agent_call("X", "nobody", false)]),
            {"content": [text("No such agent.")], "expect": {"tool_result_is_error": [true],
                "last_user_text_contains": "Agent type 'nobody' not found. Available agents: general-purpose"}}
        ]
    }));
    let (run, _dir) = run_in_tempdir(&scenario).await;
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    assert!(ends(&run.events).is_empty());
}

/// `isolation: "worktree"`: the child works in a fresh worktree of the repository; one it
/// changed is kept and named in the result, the parent's tree is untouched, and one it did not
/// change is removed.
#[tokio::test]
async fn a_child_in_a_worktree_changes_its_copy_and_the_worktree_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg("git init -q && echo base > base.txt && git add base.txt && git -c user.name=t -c user.email=t@t commit -q -m base")
        .current_dir(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let isolated = |prompt: &str| {
        json!({"type": "tool_use", "name": "Agent", "input": {"description": "Isolated", "prompt": prompt,
            "subagent_type": "writer", "isolation": "worktree"}})
    };
    let scenario = parse(json!({
        "prompt": "Change a copy, then look at one.",
        "settings": {"permissions": {"defaultMode": "acceptEdits"}},
        "agents": {"writer": {"description": "Writes.", "prompt": "Write.", "tools": ["Read", "Write"]}},
        "responses": [
            reply(vec![isolated("WRITE A COPY")]),
            reply(vec![isolated("ONLY LOOK")]),
            reply(vec![text("Done.")])
        ],
        "subagents": [
            {"prompt": "WRITE A COPY", "responses": [
                {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": "new.txt", "content": "made in the worktree\n"}}]},
                {"content": [text("Wrote new.txt.")], "expect": {"tool_result_is_error": [false]}}]},
            {"prompt": "ONLY LOOK", "responses": [
                {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "base.txt"}}]},
                {"content": [text("It says base.")], "expect": {"last_user_text_contains": "base"}}]}
        ]
    }));
    let run = run_scenario(&scenario, dir.path(), Arc::new(VirtualClock::new())).await.unwrap();
    assert_eq!(run.outcome.terminal.as_str(), "completed", "{:?}", run.outcome.error);
    let top = dir.path().canonicalize().unwrap();
    let ended = ends(&run.events);
    let (writer, looker) = (&ended[0].0, &ended[1].0);
    let kept = top.join(".claude/worktrees").join(format!("agent-{}", writer.agent_id));
    assert_eq!(std::fs::read_to_string(kept.join("new.txt")).unwrap(), "made in the worktree\n");
    assert!(!top.join("new.txt").exists(), "the parent's tree is untouched");
    assert!(
        !top.join(".claude/worktrees").join(format!("agent-{}", looker.agent_id)).exists(),
        "an unchanged one goes"
    );
    let texts: Vec<String> = run
        .outcome
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(content.as_str().to_owned()),
            _ => None,
        })
        .collect();
    let kept_note = format!(
        "Its worktree has changes and was kept at {} (0 new commit(s)); git status:\n?? new.txt",
        kept.display()
    );
    assert!(texts[0].ends_with(&kept_note), "{}", texts[0]);
    assert!(texts[1].ends_with("Its worktree had no changes and was removed."), "{}", texts[1]);
}

/// A session whose subagent was running when the process died: `--resume` repairs the
/// child's sidechain transcript (its unanswered call gets a result) and marks its meta file
/// `interrupted`, beside repairing the parent's.
#[test]
fn resume_repairs_the_sidechain_of_a_subagent_that_was_running() {
    use assert_cmd::cargo::CommandCargoExt;
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/subagent.json");
    let agentloop = |args: &[&str]| {
        let out = std::process::Command::cargo_bin("agentloop")
            .unwrap()
            .env("AGENTLOOP_HOME", home.path())
            .env_remove("ANTHROPIC_API_KEY")
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cwd = work.path().to_str().unwrap();
    let model = format!("scripted:{scenario}");
    let (code, out, err) = agentloop(&["run", "--model", &model, "--cwd", cwd, "--output-format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let result: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let id = result["session_id"].as_str().unwrap().to_owned();
    let project = std::fs::read_dir(home.path().join("projects")).unwrap().next().unwrap().unwrap().path();
    let subagents = project.join(&id).join("subagents");
    let meta_path = std::fs::read_dir(&subagents)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".meta.json"))
        .unwrap();
    let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    assert_eq!(meta["status"], "completed");
    assert_eq!(meta["sessionId"], id.as_str());
    let agent = meta["agentId"].as_str().unwrap().to_owned();
    let sidechain = subagents.join(format!("agent-{agent}.jsonl"));
    let lines: Vec<Value> =
        std::fs::read_to_string(&sidechain).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let messages: Vec<&Value> = lines.iter().filter(|l| l["type"] == "user" || l["type"] == "assistant").collect();
    assert_eq!(messages.len(), 4, "prompt, call, result, report");
    for line in &messages {
        assert_eq!((line["isSidechain"].clone(), line["agentId"].clone()), (json!(true), json!(agent)));
        assert_eq!(line["sessionId"], id.as_str());
    }
    // The process dies while the child's Read runs: its result and what follows are not
    // written, and its meta file still says it runs.
    let call = messages[1]["uuid"].as_str().unwrap();
    let written = std::fs::read_to_string(&sidechain).unwrap();
    let cut: Vec<&str> = written.lines().take_while(|l| !l.contains(&format!("\"parentUuid\":\"{call}\""))).collect();
    std::fs::write(&sidechain, cut.join("\n") + "\n").unwrap();
    meta["status"] = json!("running");
    std::fs::write(&meta_path, meta.to_string()).unwrap();

    let again = format!("scripted:{}", {
        let file = work.path().join("again.json");
        std::fs::write(
            &file,
            json!({"prompt": "And now?", "responses": [{"content": [text("Still hello.")]}]}).to_string(),
        )
        .unwrap();
        file.display().to_string()
    });
    let (code, _, err) = agentloop(&["run", "--model", &again, "--cwd", cwd, "--resume", &id, "-p", "And now?"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!("subagent {agent} was running when the session ended: 1 repair(s) to its transcript")),
        "{err}"
    );
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    assert_eq!(meta["status"], "interrupted");
    let last: Value =
        serde_json::from_str(std::fs::read_to_string(&sidechain).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["isSidechain"], true);
    assert_eq!(last["agentId"], agent.as_str());
    let block = &last["message"]["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], messages[1]["message"]["content"][0]["id"]);
    assert_eq!(block["is_error"], true);
}

/// The stream-json of a synchronous child has the shape of Claude Code 2.1.332's
/// (`fixtures/claude-code-protocol/subagent-sync.stdout.jsonl`): the same lifecycle lines in
/// the same order, and every field Claude Code gives the task lines, the child's lines and the
/// call's `tool_use_result` (its harness bookkeeping aside).
#[test]
fn the_stream_json_of_a_synchronous_child_has_claude_codes_shape() {
    use assert_cmd::cargo::CommandCargoExt;
    use std::collections::BTreeSet;
    let work = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenarios/subagent.json");
    let out = std::process::Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", work.path().join("home"))
        .args(["-p", "What does greeting.txt say? Ask the greeter.", "--output-format", "stream-json", "--verbose"])
        .args(["--model", &format!("scripted:{scenario}"), "--cwd", work.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let parse = |text: &str| -> Vec<Value> { text.lines().map(|l| serde_json::from_str(l).unwrap()).collect() };
    let ours = parse(&String::from_utf8_lossy(&out.stdout));
    let fixture = parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/fixtures/claude-code-protocol/subagent-sync.stdout.jsonl"
        ))
        .unwrap(),
    );
    let kind = |line: &Value| {
        let mut kind = line["type"].as_str().unwrap().to_owned();
        if let Some(subtype) = line["subtype"].as_str().filter(|_| kind == "system") {
            kind = format!("{kind}/{subtype}");
        }
        if line["parent_tool_use_id"].is_string() {
            kind.push_str(" (child)");
        }
        kind
    };
    // The lifecycle, as both write it (Claude Code's progress line comes at another moment,
    // and agentloop's own tool lines are not Claude Code's).
    let lifecycle = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(kind)
            .filter(|k| {
                k.starts_with("system/task_") && k != "system/task_progress"
                    || k.ends_with("(child)") && !k.starts_with("system/")
            })
            .collect()
    };
    assert_eq!(lifecycle(&ours), lifecycle(&fixture));
    assert_eq!(
        lifecycle(&ours),
        [
            "system/task_started",
            "user (child)",
            "assistant (child)",
            "user (child)",
            "system/task_updated",
            "system/task_notification"
        ]
    );
    let keys = |lines: &[Value], wanted: &str| -> BTreeSet<String> {
        lines.iter().filter(|l| kind(l) == wanted).flat_map(|l| l.as_object().unwrap().keys().cloned()).collect()
    };
    for wanted in [
        "system/task_started",
        "system/task_progress",
        "system/task_updated",
        "system/task_notification",
        "user (child)",
        "assistant (child)",
    ] {
        let missing: Vec<String> = keys(&fixture, wanted)
            .difference(&keys(&ours, wanted))
            .filter(|k| !["timestamp", "request_id", "tool_result_meta"].contains(&k.as_str()))
            .cloned()
            .collect();
        assert!(missing.is_empty(), "{wanted} lacks {missing:?}");
    }
    let result_of = |lines: &[Value]| -> BTreeSet<String> {
        let line = lines.iter().find(|l| l["tool_use_result"].is_object()).expect("a tool_use_result");
        line["tool_use_result"].as_object().unwrap().keys().cloned().collect()
    };
    let harness = ["canContinueAgent", "harnessNoteCount", "harnessSectionHash", "harnessTailCount", "toolStats"];
    let missing: Vec<String> =
        result_of(&fixture).difference(&result_of(&ours)).filter(|k| !harness.contains(&k.as_str())).cloned().collect();
    assert!(missing.is_empty(), "tool_use_result lacks {missing:?}");
    let stats = |lines: &[Value]| lines.iter().find(|l| l["type"] == "result").unwrap()["subagent_stats"].clone();
    let (theirs, mine) = (stats(&fixture), stats(&ours));
    assert_eq!(mine, theirs, "the same counts, under the same names");
    let init = ours.iter().find(|l| kind(l) == "system/init").unwrap();
    assert_eq!(init["agents"], json!(["general-purpose", "greeter"]));
}

/// A subagent's calls share its parent's nested memory: the child's first Read in `sub/` gets
/// `sub/CLAUDE.md` (its scripted model checks it), and the parent's later Read there does not
/// get it again.
#[test]
fn a_child_and_its_parent_attach_nested_memory_once() {
    use assert_cmd::cargo::CommandCargoExt;
    let work = tempfile::tempdir().unwrap();
    let read =
        |id: &str, file: &str| json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": file}});
    let scenario = json!({
        "name": "nested-memory-shared",
        "prompt": "Ask the greeter, then read sub/other.txt.",
        "files": {"sub/CLAUDE.md": "Sub rules.\n", "sub/greeting.txt": "Hello!\n", "sub/other.txt": "Other.\n"},
        "agents": greeter(json!({})),
        "responses": [
            reply(vec![agent_call("SUBTASK: read sub/greeting.txt", "greeter", false)]),
            reply(vec![read("toolu_parent", "sub/other.txt")]),
            reply(vec![text("Done.")]),
        ],
        "subagents": [{"prompt": "SUBTASK: read sub/greeting.txt", "responses": [
            reply(vec![read("toolu_child", "sub/greeting.txt")]),
            {"content": [text("It says Hello!")], "expect": {"last_user_text_contains": "\n\n## "}},
        ]}]
    });
    let file = work.path().join("scenario.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let project = work.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = std::process::Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", work.path().join("home"))
        .args(["-p", "go", "--output-format", "stream-json", "--verbose", "--setting-sources", "project"])
        .args(["--model", &format!("scripted:{}", file.display()), "--cwd", project.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let result = |id: &str| -> String {
        lines
            .iter()
            .filter(|l| l["type"] == "user")
            .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
            .find(|b| b["tool_use_id"] == id)
            .unwrap_or_else(|| panic!("no result of {id}"))["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let sub = project.canonicalize().unwrap().join("sub/CLAUDE.md");
    assert!(
        result("toolu_child").ends_with(&format!(
            "## {} (project instructions, checked into the repository)\n\nSub rules.\n</system-reminder>",
            sub.display()
        )),
        "{}",
        result("toolu_child")
    );
    assert_eq!(result("toolu_parent"), "     1\tOther.\n");
}
