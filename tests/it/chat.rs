//! `--model chat:NAME` and `--model responses:NAME` through the binary against mocks of those
//! protocols: the loop's requests in each, tool calls paired with their results, and the
//! recovery edges a local server's failures take.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::binary::offline_agentloop;
use crate::mock_api::{MockApi, Reply};

/// A streamed Chat Completions body of `chunks`, ending with `[DONE]`.
fn chat_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

fn text(content: &str, finish: &str) -> Reply {
    text_of(content, finish, 8)
}

/// A text reply that reports `completion_tokens` generated.
fn text_of(content: &str, finish: &str, completion_tokens: u64) -> Reply {
    Reply::Sse(chat_sse(&[
        json!({"id": "chatcmpl-1", "model": "qwen2.5-coder-0.5b", "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": completion_tokens}}),
    ]))
}

/// The edges of the trace at `path`.
fn edges_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["edge"].as_str().map(str::to_owned))
        .collect()
}

fn read_call() -> Reply {
    Reply::Sse(chat_sse(&[
        json!({"id": "chatcmpl-0", "model": "qwen2.5-coder-0.5b", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
               "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "path\": \"greeting.txt\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 12}}),
    ]))
}

/// `agentloop -p PROMPT --model chat:qwen --output-format stream-json --verbose` in `dir`.
fn run(dir: &Path, api: &MockApi, prompt: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let out = offline_agentloop()
        .current_dir(dir)
        .env("OPENAI_BASE_URL", format!("{}/v1", api.base_url()))
        .env_remove("OPENAI_API_KEY")
        .args(["-p", prompt, "--model", "chat:qwen", "--output-format", "stream-json", "--verbose"])
        .args(args)
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    (out, lines)
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "Hello from the greeting file!\n").unwrap();
    dir
}

#[test]
fn a_read_round_trip_over_chat_completions() {
    let dir = work_dir();
    let api = MockApi::start_chat(vec![read_call(), text("It says hello.", "stop")]);
    let (out, lines) = run(dir.path(), &api, "What does greeting.txt say?", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "qwen");
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["messages"][0]["role"], "system");
    assert_eq!(bodies[0]["messages"][1], json!({"role": "user", "content": "What does greeting.txt say?"}));
    let read = bodies[0]["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "Read").unwrap();
    assert_eq!(read["type"], "function");
    assert_eq!(read["function"]["parameters"]["required"], json!(["file_path"]));
    // The call and its result, as the protocol pairs them.
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": "Read", "arguments": "{\"file_path\":\"greeting.txt\"}"}}]})
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    assert!(messages[3]["content"].as_str().unwrap().contains("Hello from the greeting file!"), "{}", messages[3]);
    // The assistant lines name the model the server says answered, not the one asked for.
    let assistant = lines.iter().find(|l| l["type"] == "assistant").unwrap();
    assert_eq!(assistant["message"]["model"], "qwen2.5-coder-0.5b");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["result"], "It says hello.");
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(result["usage"]["input_tokens"], 90);
    assert_eq!(result["usage"]["output_tokens"], 20);
}

#[test]
fn length_escalates_the_output_cap_as_max_tokens_does() {
    let dir = work_dir();
    let api =
        MockApi::start_chat(vec![text_of("The answer begins", "length", 16_000), text("The whole answer.", "stop")]);
    let (out, lines) = run(dir.path(), &api, "Answer at length", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = api.bodies();
    assert_eq!((bodies[0]["max_tokens"].as_u64(), bodies[1]["max_tokens"].as_u64()), (Some(16000), Some(64000)));
    assert_eq!(lines.last().unwrap()["result"], "The whole answer.");
}

/// `length` after 8145 of 16 000 tokens: the server's window filled, not the cap. No
/// escalation (a 64K cap cannot help); the history is compacted and the same cap sent again.
#[test]
fn length_below_the_cap_is_a_full_context_not_an_escalation() {
    let dir = work_dir();
    let api = MockApi::start_chat(vec![
        text_of("The answer begins", "length", 8145),
        text("A short summary.", "stop"),
        text("The whole answer.", "stop"),
    ]);
    let trace = dir.path().join("trace.jsonl");
    let (out, lines) =
        run(dir.path(), &api, "Answer at length", &["--trace=jsonl", "--trace-file", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        edges_of(&trace),
        [
            "prepare.request",
            "request.stream_opened",
            "consume.context_full",
            "recover.reactive_compact_retry",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
    let bodies = api.bodies();
    let caps: Vec<Option<u64>> = bodies.iter().map(|b| b["max_tokens"].as_u64()).collect();
    assert_eq!(caps.len(), 3);
    assert_eq!((caps[0], caps[2]), (Some(16000), Some(16000)));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the context window filled during the reply: it stopped on max_tokens after 8145 of the 16000 output tokens allowed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines.last().unwrap()["result"], "The whole answer.");
}

#[test]
fn a_context_overflow_takes_the_prompt_too_long_edges() {
    let dir = work_dir();
    let llama = || Reply::Error {
        status: 400,
        headers: Vec::new(),
        body: json!({"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 1260, "n_ctx": 512,
                               "message": "request (1260 tokens) exceeds the available context size (512 tokens), try increasing it"}}),
    };
    let api = MockApi::start_chat(vec![llama(), text("A short summary.", "stop"), text("Hello!", "stop")]);
    let trace = dir.path().join("trace.jsonl");
    let (out, _) = run(dir.path(), &api, "Greet me", &["--trace=jsonl", "--trace-file", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let edges: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["edge"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        edges,
        [
            "prepare.request",
            "request.prompt_too_long",
            "recover.reactive_compact_retry",
            "prepare.request",
            "request.stream_opened",
            "consume.end_turn",
            "checkpoint.completed"
        ]
    );
}

fn responses_sse(events: &[Value]) -> Reply {
    Reply::Sse(events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect())
}

#[test]
fn a_read_round_trip_over_the_responses_api() {
    let dir = work_dir();
    let call = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5-mini"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "Read", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"file_path\": \"greeting.txt\"}"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call"}}),
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 40, "output_tokens": 10}}}),
    ]);
    let answer = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_2", "model": "gpt-5-mini"}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "It says hello."}),
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 60, "output_tokens": 5}}}),
    ]);
    let api = MockApi::start_responses(vec![call, answer]);
    let out = offline_agentloop()
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", api.base_url()))
        .env_remove("OPENAI_API_KEY")
        .args(["-p", "What does greeting.txt say?", "--model", "responses:gpt-5-mini", "--output-format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "It says hello.");
    assert_eq!(result["usage"]["input_tokens"], 100);
    let bodies = api.bodies();
    assert_eq!(bodies[0]["model"], "gpt-5-mini");
    assert_eq!(bodies[0]["store"], false);
    assert!(bodies[0]["instructions"].as_str().unwrap().starts_with("You are agentloop"));
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"type": "function_call", "call_id": "call_7", "name": "Read", "arguments": "{\"file_path\":\"greeting.txt\"}"})
    );
    assert_eq!(input[2]["type"], "function_call_output");
    assert!(input[2]["output"].as_str().unwrap().contains("Hello from the greeting file!"));
}

/// A small local model that writes its tool call as text: the text is kept (nothing runs),
/// and the trace and stderr say so.
#[test]
fn tool_call_syntax_leaked_into_text_is_kept_as_text_and_reported() {
    let dir = work_dir();
    let leaked = "<tool_call>{\"name\": \"Bash\", \"arguments\": {\"command\": \"touch pwned\"}}</tool_call>";
    let api = MockApi::start_chat(vec![text(leaked, "stop")]);
    let trace = dir.path().join("trace.jsonl");
    let (out, lines) = run(dir.path(), &api, "hi", &["--trace=jsonl", "--trace-file", trace.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(!dir.path().join("pwned").exists());
    assert_eq!(lines.last().unwrap()["result"], leaked);
    let note = "the reply's text holds tool-call syntax (<tool_call>); it is kept as text, not run";
    assert!(String::from_utf8_lossy(&out.stderr).contains(note));
    let records: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let end = records.iter().find(|r| r["edge"] == "consume.end_turn").unwrap();
    assert_eq!(end["detail"], note, "{end}");
}

/// The OpenAI providers read each body to its end too: one connection for a session whose
/// bodies end 40 ms after their last chunk.
///
/// A drained connection goes back to the pool from a task of hyper's own, which a loaded
/// machine may run after the next request has already opened a connection; so the session
/// runs up to three times and one of them must use a single connection. A client that drops
/// its bodies unread opens two every time.
#[test]
fn a_chat_session_uses_one_connection() {
    let late = |reply: Reply| match reply {
        Reply::Sse(body) => Reply::LateEnd { body, tail: std::time::Duration::from_millis(40) },
        other => other,
    };
    let mut seen = Vec::new();
    for _ in 0..3 {
        let dir = work_dir();
        let api = MockApi::start_chat(vec![late(read_call()), late(text("It says hello.", "stop"))]);
        let (out, _) = run(dir.path(), &api, "What does greeting.txt say?", &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(api.bodies().len(), 2);
        seen.push(api.connections());
        if api.connections() == 1 {
            return;
        }
    }
    panic!("every run opened more than one connection: {seen:?}");
}

/// A model no price table knows costs "unknown" (`total_cost_usd: null`, the model named in
/// `unpriced_models`), priced as the model the server says answered; the settings'
/// `modelPrices` give it a price, by name prefix, in dollars per million tokens.
#[test]
fn an_unpriced_model_costs_unknown_until_the_settings_price_it() {
    let dir = work_dir();
    let json_run = |settings: Option<&str>| {
        let api = MockApi::start_chat(vec![text("Hello!", "stop")]);
        let mut command = offline_agentloop();
        command.current_dir(dir.path()).env("OPENAI_BASE_URL", format!("{}/v1", api.base_url())).args([
            "-p",
            "Greet me",
            "--model",
            "chat:qwen",
            "--output-format",
            "json",
        ]);
        if let Some(settings) = settings {
            let path = dir.path().join("prices.json");
            std::fs::write(&path, settings).unwrap();
            command.arg("--settings").arg(&path);
        }
        let out = command.output().unwrap();
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).ok(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, result, stderr) = json_run(None);
    let result = result.unwrap_or_else(|| panic!("no result: {stderr}"));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(result["total_cost_usd"], Value::Null);
    assert_eq!(result["unpriced_models"], json!(["qwen2.5-coder-0.5b"]));
    assert_eq!(result["usage"]["input_tokens"], 50);

    // 50 prompt tokens at $1 and 8 generated at $2 per million.
    let (code, result, stderr) = json_run(Some(
        r#"{"modelPrices": {"qwen2.5-coder": {"input": 1.0, "output": 2.0}, "q": {"input": 9, "output": 9}}}"#,
    ));
    let result = result.unwrap_or_else(|| panic!("no result: {stderr}"));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(result["total_cost_usd"].as_f64(), Some(0.000066), "the longest prefix wins");
    assert_eq!(result.get("unpriced_models"), None);

    let (code, _, stderr) = json_run(Some(r#"{"modelPrices": {"qwen2.5-coder": {"input": -1, "output": 2}}}"#));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("modelPrices.qwen2.5-coder.input"), "{stderr}");
}

/// A server that says its context window (llama.cpp's `GET /props`) is believed: a prompt
/// over the blocking limit of a 2048-token window ends at once, before any request; and
/// `--context-window` overrides what the server says.
#[test]
fn the_servers_context_window_sets_the_blocking_limit() {
    let dir = work_dir();
    let long = "Summarise this note about the build. ".repeat(250);
    let api = MockApi::start_chat(vec![]).with_window(2048);
    let (out, _) = run(dir.path(), &api, &long, &["--system-prompt", "Be brief."]);
    assert_eq!(out.status.code(), Some(agentloop::TerminalReason::BlockingLimit.exit_code().into()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("over the blocking limit of 1810 for a 2048-token window"), "{stderr}");
    assert!(api.bodies().is_empty(), "nothing was sent");

    let api = MockApi::start_chat(vec![text("A summary.", "stop")]).with_window(2048);
    let (out, lines) = run(dir.path(), &api, &long, &["--system-prompt", "Be brief.", "--context-window", "200000"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines.last().unwrap()["result"], "A summary.");
}

/// The settings' `modelProviders` say where `chat:` requests go and which variable holds
/// the key, when `OPENAI_BASE_URL` and `OPENAI_API_KEY` do not; a project's settings file may
/// not say it (the whole conversation would go to the repository's server).
#[test]
fn model_providers_in_the_users_settings_choose_the_server_and_the_key() {
    let dir = work_dir();
    let api = MockApi::start_chat(vec![text("Hello!", "stop")]);
    let settings = dir.path().join("user-settings.json");
    let provider = json!({"modelProviders": {"chat": {"baseUrl": format!("{}/v1", api.base_url()), "apiKeyEnv": "LOCAL_LLM_KEY"}}});
    std::fs::write(&settings, provider.to_string()).unwrap();
    let out = offline_agentloop()
        .current_dir(dir.path())
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("LOCAL_LLM_KEY", "sk-local-123")
        .args(["-p", "Greet me", "--model", "chat:qwen", "--output-format", "json", "--settings"])
        .arg(&settings)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-local-123"));

    // The same block in the project's .claude/settings.json is ignored, with a warning, though
    // that file is above the user's: the user's provider is used.
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(dir.path().join(".claude/settings.json"), provider.to_string()).unwrap();
    let users = MockApi::start_chat(vec![text("Hello again!", "stop")]);
    let config = tempfile::tempdir().unwrap();
    let user_provider = json!({"modelProviders": {"chat": {"baseUrl": format!("{}/v1", users.base_url())}}});
    std::fs::write(config.path().join("settings.json"), user_provider.to_string()).unwrap();
    let out = offline_agentloop()
        .current_dir(dir.path())
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("CLAUDE_CONFIG_DIR", config.path())
        .args(["-p", "Greet me", "--model", "chat:qwen", "--setting-sources", "user,project"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("settings.json: `modelProviders: "), "{stderr}");
    assert!(stderr.contains("is ignored"), "{stderr}");
    assert_eq!(users.requests().len(), 1);
    assert_eq!(users.requests()[0].header("authorization"), None);
    assert_eq!(api.requests().len(), 1, "the project's provider was not used");
}
