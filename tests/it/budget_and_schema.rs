//! `--max-budget-usd` and `--json-schema` end to end: the built `agentloop` against the local
//! Messages API mock, asserting on the requests the mock received and the result frame.

use crate::mock_api;

use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-haiku-4-5";

/// `agentloop -p PROMPT --output-format json` against `api` in `dir`, with `args` after.
fn run(api: &MockApi, dir: &std::path::Path, prompt: &str, args: &[&str]) -> (i32, Value, String) {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"] {
        command.env_remove(name);
    }
    let out = command
        .env("AGENTLOOP_HOME", dir.join("home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .args(["-p", prompt, "--model", MODEL, "--output-format", "json", "--cwd"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (out.status.code().unwrap_or(-1), result, String::from_utf8_lossy(&out.stderr).into())
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    dir
}

/// A reply to a prompt of `input_tokens` uncached tokens that reads `file`.
fn read(input_tokens: u64, id: &str, file: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, input_tokens).tool_use(id, "Read", &json!({"file_path": file})).stop("tool_use"))
}

/// The fields of a result frame a test pins (the rest — ids, durations — vary by run).
fn pinned(result: &Value) -> Value {
    let keys = [
        "type",
        "subtype",
        "is_error",
        "errors",
        "result",
        "stop_reason",
        "num_turns",
        "terminal_reason",
        "total_cost_usd",
        "structured_output",
    ];
    keys.iter().filter_map(|k| result.get(*k).map(|v| (k.to_string(), v.clone()))).collect()
}

/// Haiku 4.5 costs $1 in, $5 out, $1.25 to write the cache per million tokens. Under a $0.12
/// cap the first request fits with its full output cap (its prompt is a few thousand tokens);
/// its reply reports 40,000 uncached prompt tokens, so the second request's prompt alone is
/// priced at $0.05 and its output cap comes down to what is left; the third cannot fit its
/// prompt, so it is never sent and the run ends under the cap.
#[test]
fn the_cap_lowers_the_output_cap_then_ends_before_a_request_that_cannot_fit() {
    let api = MockApi::start(vec![read(40_000, "toolu_1", "a.txt"), read(40_050, "toolu_2", "b.txt")]);
    let dir = work_dir();
    let (code, result, err) = run(&api, dir.path(), "Read a.txt and b.txt.", &["--max-budget-usd", "0.12"]);
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 2, "the third request is not sent: {err}");
    assert_eq!(bodies[0]["max_tokens"], 16_000);
    assert_eq!(bodies[1]["max_tokens"], 5_982, "lowered to what is left after its prompt");
    // Each reply's usage at haiku's prices: 40,000 in and 15 out, then 40,050 in and 15 out.
    let spent = 0.040075 + 0.040125;
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        pinned(&result),
        json!({
            "type": "result",
            "subtype": "error_max_budget_usd",
            "is_error": true,
            "errors": ["reached the maximum budget of $0.12: the next request was not sent, as it could cost up to \
                        $0.055195 ($0.050075 for its prompt) and $0.039800 is left"],
            "stop_reason": null,
            "num_turns": 3,
            "terminal_reason": "budget_exhausted",
            "total_cost_usd": spent,
        })
    );
    assert!(result["total_cost_usd"].as_f64().unwrap() <= 0.12);
}

/// A cap the first request's prompt cannot fit ends the run before anything is sent.
#[test]
fn a_cap_too_small_for_the_first_request_sends_nothing() {
    let api = MockApi::start(Vec::new());
    let dir = work_dir();
    let (code, result, err) = run(&api, dir.path(), "Hi.", &["--max-budget-usd", "0.0001"]);
    assert_eq!(api.requests().len(), 0, "{err}");
    assert_eq!(code, 1);
    assert_eq!((&result["subtype"], &result["total_cost_usd"]), (&json!("error_max_budget_usd"), &json!(0.0)));
    let error = result["errors"][0].as_str().unwrap();
    assert!(error.starts_with("reached the maximum budget of $0.0001: the next request was not sent"), "{error}");
}

const SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}"#;

/// The schema is offered as the `StructuredOutput` tool; a call that misses it goes back as
/// an `is_error` result naming what is wrong, and the first call that matches ends the run
/// with its input as the result's `structured_output`, without another request.
#[test]
fn a_matching_structured_output_call_ends_the_run_with_it() {
    let call = |id: &str, input: Value| {
        Reply::Sse(Sse::new(MODEL, 100).tool_use(id, "StructuredOutput", &input).stop("tool_use"))
    };
    let api = MockApi::start(vec![call("toolu_1", json!({"answer": "four"})), call("toolu_2", json!({"answer": 4}))]);
    let dir = work_dir();
    let (code, result, err) = run(&api, dir.path(), "What is 2 + 2?", &["--json-schema", SCHEMA]);
    assert_eq!(code, 0, "{err}");
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 2);
    let tools = bodies[0]["tools"].as_array().unwrap();
    let offered = tools.iter().find(|t| t["name"] == "StructuredOutput").expect("StructuredOutput is offered");
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(offered["input_schema"], schema);
    assert!(offered["description"].as_str().unwrap().contains("final answer"), "{offered}");
    let answer = &bodies[1]["messages"][2]["content"][0];
    assert_eq!(answer["tool_use_id"], "toolu_1");
    assert_eq!(answer["is_error"], true);
    assert_eq!(answer["content"], "Output does not match the required schema: /answer: must be an integer");
    assert_eq!(
        pinned(&result),
        json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "result": "{\"answer\":4}",
            "stop_reason": "tool_use",
            "num_turns": 2,
            "terminal_reason": "completed",
            // 100 + 100 prompt tokens, 14 + 13 output tokens.
            "total_cost_usd": 0.000335,
            "structured_output": {"answer": 4},
        })
    );
}

/// A schema the validator cannot use is refused before anything runs.
#[test]
fn an_unusable_schema_is_a_usage_error() {
    let api = MockApi::start(Vec::new());
    let dir = work_dir();
    let mut command = Command::cargo_bin("agentloop").unwrap();
    let out = command
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .args(["-p", "hi", "--model", MODEL, "--json-schema", r#"{"type":"object","if":{}}"#])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: --json-schema: the schema: the keyword `if` is not supported\n"
    );
    assert_eq!(api.requests().len(), 0);
}

/// The cap is the session's: in the SDK's stream-json mode a later prompt starts with what the
/// earlier ones spent, and one whose request cannot fit ends at once without sending it.
#[test]
fn the_cap_spans_the_prompts_of_a_session() {
    let answer = Reply::Sse(Sse::new(MODEL, 60_000).text("Done.").stop("end_turn"));
    let api = MockApi::start(vec![answer]);
    let dir = work_dir();
    let mut child = Command::cargo_bin("agentloop")
        .unwrap()
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .args(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--model", MODEL, "--max-budget-usd", "0.1", "--cwd"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for prompt in ["first", "second"] {
            let line = json!({"type": "user", "message": {"role": "user", "content": prompt},
                              "parent_tool_use_id": null, "session_id": ""});
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "result")
        .collect();
    let subtypes: Vec<&Value> = results.iter().map(|r| &r["subtype"]).collect();
    assert_eq!(subtypes, [&json!("success"), &json!("error_max_budget_usd")], "{stdout}");
    // The first reply cost $0.06 (60,000 uncached prompt tokens); the second prompt's request
    // would repeat them as cache writes, $0.075, with $0.04 left.
    assert_eq!(api.requests().len(), 1);
}

/// The cap holds across processes: a resumed session starts with what its transcript records
/// as spent. The first process spends $0.06001 (60,000 uncached prompt tokens of Haiku 4.5 and
/// two output tokens) with no cap; resumed under a $0.065 cap, less than $0.005 is left, not
/// enough for the smallest output cap worth sending (1024 tokens at $5 per million), so the
/// request is never sent. A new session under the same cap sends it.
#[test]
fn the_cap_spans_a_resumed_session() {
    let answer = Reply::Sse(Sse::new(MODEL, 60_000).text("Done.").stop("end_turn"));
    let api = MockApi::start(vec![answer]);
    let dir = work_dir();
    let id = "0b6c2c1e-9d4f-4b8e-8a61-5d1f0e2a7c3b";
    let (code, result, err) = run(&api, dir.path(), "first", &["--session-id", id]);
    assert_eq!(code, 0, "{err}");
    // 60,000 prompt tokens at $1 and the reply's two output tokens at $5 per million.
    assert_eq!(result["total_cost_usd"], json!(0.06001));

    let (code, result, err) = run(&api, dir.path(), "second", &["--resume", id, "--max-budget-usd", "0.065"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    assert_eq!(api.requests().len(), 1, "the resumed run sent nothing");

    // A fork carries the spend too; a new session under the same cap does not.
    let (code, result, _) =
        run(&api, dir.path(), "third", &["--resume", id, "--fork-session", "--max-budget-usd", "0.065"]);
    assert_eq!((code, result["subtype"].as_str()), (1, Some("error_max_budget_usd")));
    let api = MockApi::start(vec![Reply::Sse(Sse::new(MODEL, 100).text("Fine.").stop("end_turn"))]);
    let (code, result, err) = run(&api, dir.path(), "fresh", &["--max-budget-usd", "0.065"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(result["result"], "Fine.");
}
