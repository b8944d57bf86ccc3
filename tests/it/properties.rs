//! Random scripted runs: random mixes of tool calls, HTTP and mid-stream errors, cut streams,
//! truncations, aborts and hook outcomes. Whatever the mix, a run ends in exactly one terminal
//! record, takes only declared edges (the engine fails the run otherwise), never breaks the
//! tool_use/tool_result pairing, and never sends more model requests in a turn than the
//! auditor proves the table allows.

use std::sync::{Arc, OnceLock};

use agentloop::audit::flow::flow_bound;
use agentloop::engine::clock::VirtualClock;
use agentloop::engine::state::pairing_violation;
use agentloop::engine::table::shipped;
use agentloop::harness::run_scenario;
use agentloop::scenario::Scenario;
use proptest::prelude::*;
use serde_json::{Value, json};

const PTL: &str = "prompt is too long: 250000 tokens > 200000 maximum";

#[derive(Debug, Clone)]
enum Reply {
    Answer { output_tokens: u64 },
    Tools(Vec<Call>),
    Http(u16),
    MidStream { kind: &'static str, after: usize },
    Cut,
    Truncated { with_tool: bool },
}

#[derive(Debug, Clone, Copy)]
enum Call {
    ReadGood,
    ReadMissing,
    ReadBadInput,
    Unknown,
}

#[derive(Debug, Clone, Copy)]
enum StopHook {
    None,
    BlockOnce,
    AlwaysBlock,
    Prevent,
}

fn call_json(c: Call) -> Value {
    match c {
        Call::ReadGood => json!({"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}}),
        Call::ReadMissing => json!({"type": "tool_use", "name": "Read", "input": {"file_path": "missing.txt"}}),
        Call::ReadBadInput => json!({"type": "tool_use", "name": "Read", "input": {"path": 3}}),
        Call::Unknown => json!({"type": "tool_use", "name": "Teleport", "input": {}}),
    }
}

fn reply_json(r: &Reply) -> Value {
    let text = json!({"type": "text", "text": "working on it"});
    match r {
        Reply::Answer { output_tokens } => {
            json!({"content": [text], "usage": {"input_tokens": 10, "output_tokens": output_tokens}})
        }
        Reply::Tools(calls) => {
            let mut content = vec![text];
            content.extend(calls.iter().map(|c| call_json(*c)));
            json!({"content": content})
        }
        Reply::Http(status) => {
            let (kind, message) = match status {
                529 => ("overloaded_error", "Overloaded"),
                400 => ("invalid_request_error", PTL),
                401 => ("authentication_error", "invalid x-api-key"),
                429 => ("rate_limit_error", "slow down"),
                _ => ("api_error", "boom"),
            };
            json!({"error": {"status": status, "type": kind, "message": message}})
        }
        Reply::MidStream { kind, after } => {
            let message = if *kind == "invalid_request_error" && *after == 0 { PTL } else { "stream failed" };
            json!({"content": [text, call_json(Call::ReadGood)], "error": {"type": kind, "message": message, "after_blocks": after}})
        }
        Reply::Cut => json!({"content": [text, {"type": "text", "text": "more"}], "cut_after_blocks": 1}),
        Reply::Truncated { with_tool } => {
            let mut content = vec![text];
            if *with_tool {
                content.push(call_json(Call::ReadGood));
            }
            json!({"content": content, "stop_reason": "max_tokens"})
        }
    }
}

fn reply() -> impl Strategy<Value = Reply> {
    let call =
        prop_oneof![Just(Call::ReadGood), Just(Call::ReadMissing), Just(Call::ReadBadInput), Just(Call::Unknown)];
    prop_oneof![
        3 => (1u64..800).prop_map(|output_tokens| Reply::Answer { output_tokens }),
        4 => prop::collection::vec(call, 1..4).prop_map(Reply::Tools),
        2 => prop::sample::select(vec![529u16, 500, 429, 401, 400]).prop_map(Reply::Http),
        1 => (prop::sample::select(vec!["overloaded_error", "invalid_request_error"]), 0usize..2)
            .prop_map(|(kind, after)| Reply::MidStream { kind, after }),
        1 => Just(Reply::Cut),
        2 => any::<bool>().prop_map(|with_tool| Reply::Truncated { with_tool }),
    ]
}

fn stop_hook() -> impl Strategy<Value = StopHook> {
    prop_oneof![
        4 => Just(StopHook::None),
        1 => Just(StopHook::BlockOnce),
        1 => Just(StopHook::AlwaysBlock),
        1 => Just(StopHook::Prevent),
    ]
}

#[derive(Debug, Clone)]
struct Plan {
    replies: Vec<Reply>,
    max_turns: u32,
    max_retries: u32,
    fallback: bool,
    budget: Option<u64>,
    stop_hook: StopHook,
    pre_hook_stops: bool,
    abort: Option<(usize, bool)>,
    aux: usize,
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(reply(), 1..12),
        1u32..5,
        0u32..4,
        any::<bool>(),
        prop::option::weighted(0.3, 500u64..3000),
        stop_hook(),
        prop::bool::weighted(0.1),
        prop::option::weighted(0.25, (0usize..12, any::<bool>())),
        0usize..3,
    )
        .prop_map(|(replies, max_turns, max_retries, fallback, budget, stop_hook, pre_hook_stops, abort, aux)| {
            Plan { replies, max_turns, max_retries, fallback, budget, stop_hook, pre_hook_stops, abort, aux }
        })
}

fn scenario(plan: &Plan) -> Option<Scenario> {
    let mut hooks = serde_json::Map::new();
    let stop_command = match plan.stop_hook {
        StopHook::None => None,
        StopHook::BlockOnce => Some(
            "input=$(cat); case \"$input\" in *'\"stop_hook_active\":true'*) exit 0;; esac; echo again >&2; exit 2",
        ),
        StopHook::AlwaysBlock => Some("echo again >&2; exit 2"),
        StopHook::Prevent => Some("echo '{\"continue\": false}'"),
    };
    if let Some(command) = stop_command {
        hooks.insert("Stop".into(), json!([{"hooks": [{"type": "command", "command": command}]}]));
    }
    if plan.pre_hook_stops {
        hooks.insert(
            "PreToolUse".into(),
            json!([{"hooks": [{"type": "command", "command": "echo '{\"continue\": false}'"}]}]),
        );
    }
    let abort = plan.abort.and_then(|(index, stream)| {
        let reply = plan.replies.get(index)?;
        let fits = match (reply, stream) {
            (Reply::Http(_), _) => false,
            (Reply::MidStream { after: 0, .. }, true) => false,
            (_, true) => true,
            (Reply::Tools(_), false) => true,
            (_, false) => false,
        };
        fits.then(|| json!({"response": index, "phase": if stream { "stream" } else { "tools" }}))
    });
    let mut options = json!({"max_turns": plan.max_turns, "max_retries": plan.max_retries, "retry_base_delay_ms": 1});
    if plan.fallback {
        options["fallback_model"] = json!("claude-haiku-4-5");
    }
    if let Some(b) = plan.budget {
        options["token_budget"] = json!(b);
    }
    let mut doc = json!({
        "name": "random",
        "prompt": "Do the task.",
        "files": {"a.txt": "alpha\n"},
        "options": options,
        "settings": {"hooks": hooks},
        "responses": plan.replies.iter().map(reply_json).collect::<Vec<_>>(),
        "aux": (0..plan.aux).map(|_| json!({"content": [{"type": "text", "text": "summary"}]})).collect::<Vec<_>>(),
    });
    if let Some(a) = abort {
        doc["abort"] = a;
    }
    Scenario::parse("random.json", &doc.to_string()).ok()
}

/// The most main requests one turn can send, as `agentloop audit` bounds it from the table
/// at the default bounds (every generated run has bounds at or below them): the flow bound,
/// which the exploration shows attained on the shipped table.
fn per_turn_bound() -> u64 {
    static BOUND: OnceLock<u64> = OnceLock::new();
    *BOUND.get_or_init(|| {
        let bound = flow_bound(shipped(), None).expect("the shipped table has a worst case");
        bound.per_turn.including_resends
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_runs_end_once_and_keep_their_invariants(plan in plan()) {
        let Some(scenario) = scenario(&plan) else { return Err(TestCaseError::reject("not a valid scenario")) };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let run = rt.block_on(run_scenario(&scenario, dir.path(), Arc::new(VirtualClock::new())));
        let run = match run {
            Ok(run) => run,
            Err(e) => return Err(TestCaseError::fail(format!("engine failed: {e}"))),
        };
        let trace = &run.outcome.trace;
        prop_assert_eq!(trace.iter().filter(|r| r.kind == "terminal").count(), 1);
        prop_assert_eq!(trace.last().map(|r| r.kind), Some("terminal"));
        prop_assert_eq!(trace.last().and_then(|r| r.reason), Some(run.outcome.terminal.as_str()));
        for (i, (_, request)) in run.model.requests().iter().enumerate() {
            prop_assert_eq!(pairing_violation(&request.messages), None, "request {}", i);
        }
        prop_assert_eq!(pairing_violation(&run.outcome.messages), None);
        let bound = per_turn_bound();
        let mut per_turn = std::collections::BTreeMap::<u32, u64>::new();
        for r in trace.iter().filter(|r| r.to == "Request") {
            *per_turn.entry(r.turn).or_default() += 1;
        }
        for (turn, calls) in per_turn {
            prop_assert!(calls <= bound, "turn {} sent {} requests, bound {}", turn, calls, bound);
        }
    }
}
