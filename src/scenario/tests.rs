//! Tests of scenario parsing, checking and file writing.

use super::*;
use serde_json::json;

/// The example of DESIGN.md, "Scripted model — the embedded default".
const DESIGN_EXAMPLE: &str = r#"{"name": "read-greeting",
 "prompt": "Read greeting.txt and tell me what it says.",
 "files": {"greeting.txt": "hello from step one\n"},
 "options": {"max_turns": 8, "token_budget": null, "context_window": 200000},
 "settings": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}},
 "abort": {"response": 1, "phase": "stream"},
 "responses": [
   {"content": [{"type": "text", "text": "I'll read it."},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "greeting.txt"}}],
    "stop_reason": "tool_use"},
   {"content": [{"type": "text", "text": "Oops."}],
    "error": {"status": 400, "type": "invalid_request_error",
              "message": "prompt is too long: 210000 tokens > 200000 maximum", "after_blocks": 1}},
   {"content": [{"type": "text", "text": "It says hello."}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 50, "output_tokens": 7}, "chunk_delay_ms": 0,
    "expect": {"max_tokens": 64000}}
 ],
 "aux": [{"content": [{"type": "text", "text": "Summary of the conversation so far…"}]}]}"#;

fn parse_err(text: &str) -> String {
    match Scenario::parse("bad.json", text) {
        Ok(s) => panic!("parsed: {s:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn parses_the_design_example() {
    let s = Scenario::parse("example.json", DESIGN_EXAMPLE).unwrap();
    assert_eq!(s.name, "read-greeting");
    assert_eq!(s.description, "");
    assert_eq!(s.prompt, "Read greeting.txt and tell me what it says.");
    assert_eq!(s.files, BTreeMap::from([("greeting.txt".to_owned(), "hello from step one\n".to_owned())]));
    assert_eq!(
        s.options,
        ScenarioOptions { max_turns: Some(8), context_window: Some(200_000), ..ScenarioOptions::default() }
    );
    assert_eq!(s.settings, json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}}));
    assert_eq!(s.abort, Some(AbortSpec { response: 1, phase: AbortPhase::Stream }));
    assert_eq!(s.responses.len(), 3);
    assert_eq!(s.responses[0].stop_reason(), StopReason::ToolUse);
    assert_eq!(
        s.responses[1].error,
        Some(ScriptedError {
            status: Some(400),
            kind: "invalid_request_error".into(),
            message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
            after_blocks: Some(1),
            retry_after_s: None,
        })
    );
    assert_eq!(
        s.responses[2].usage,
        Some(ScriptedUsage { input_tokens: Some(50), output_tokens: Some(7), ..ScriptedUsage::default() })
    );
    assert_eq!(s.responses[2].expect, Some(Expect { max_tokens: Some(64_000), ..Expect::default() }));
    assert_eq!(s.aux.len(), 1);
    assert_eq!(s.aux[0].chunk_delay_ms, 0);
}

#[test]
fn only_responses_is_required() {
    let s = Scenario::parse("min.json", r#"{"responses": [{}]}"#).unwrap();
    assert_eq!(s.name, "");
    assert!(s.files.is_empty());
    assert_eq!(s.options, ScenarioOptions::default());
    assert_eq!(s.settings, Value::Null);
    assert_eq!(s.abort, None);
    assert!(s.aux.is_empty());
    assert!(s.responses[0].content.is_empty());
    assert_eq!(s.responses[0].stop_reason(), StopReason::EndTurn);
}

#[test]
fn stop_reason_defaults_from_the_blocks() {
    let s = Scenario::parse(
        "s.json",
        r#"{"responses": [
            {"content": [{"type": "tool_use", "name": "Read", "input": {}}]},
            {"content": [{"type": "text", "text": "x"}], "stop_reason": "max_tokens"},
            {"stop_reason": "brand_new"}]}"#,
    )
    .unwrap();
    assert_eq!(s.responses[0].stop_reason(), StopReason::ToolUse);
    assert_eq!(s.responses[1].stop_reason(), StopReason::MaxTokens);
    assert_eq!(s.responses[2].stop_reason(), StopReason::Other("brand_new".into()));
}

#[test]
fn shape_errors_name_file_path_and_position() {
    let wrong_type = r#"{
  "responses": [
    {"content": []},
    {
      "content": [],
      "error": {
        "status": "x", "type": "api_error", "message": "boom"}
    }
  ]
}"#;
    assert_eq!(
        parse_err(wrong_type),
        r#"bad.json: at responses[1].error.status: invalid type: string "x", expected u16 (line 7, column 21)"#
    );
    assert_eq!(
        parse_err(r#"{"options": {"max_turn": 3}, "responses": []}"#),
        "bad.json: at options.max_turn: unknown field `max_turn`, expected one of `max_turns`, `token_budget`, \
         `context_window`, `fallback_model`, `max_retries`, `retry_base_delay_ms`, `model`, `max_tool_concurrency`, \
         `tool_result_cap`, `max_budget_usd`, `json_schema` (line 1, column 23)"
    );
    assert_eq!(
        parse_err(r#"{"responses": [{"contents": []}]}"#),
        "bad.json: at responses[0].contents: unknown field `contents`, expected one of `content`, `stop_reason`, \
         `usage`, `chunk_delay_ms`, `expect`, `error`, `cut_after_blocks` (line 1, column 26)"
    );
    assert_eq!(parse_err(r#"{"name": "x"}"#), "bad.json: missing field `responses` (line 1, column 13)");
    assert_eq!(
        parse_err("{\"responses\": [\n  {\"content\": []}\n  {\"content\": []}]}"),
        "bad.json: at responses: expected `,` or `]` (line 3, column 3)"
    );
    assert_eq!(parse_err(r#"{"responses": []} x"#), "bad.json: trailing characters (line 1, column 19)");
    assert_eq!(parse_err(""), "bad.json: EOF while parsing a value (line 1, column 0)");
    assert_eq!(
        parse_err(r#"{"responses": [], "abort": {"response": 0, "phase": "later"}}"#),
        "bad.json: at abort.phase: unknown variant `later`, expected one of `stream`, `tools`, `stop_hooks` (line 1, column 59)"
    );
}

#[test]
fn rule_errors_name_file_and_path() {
    let cases = [
        (
            r#"{"responses": [{"content": [{"type": "text", "text": "a"}, {"type": "tool_use", "input": {}}]}]}"#,
            "bad.json: at responses[0].content[1]: a tool_use block needs `name`, a string",
        ),
        (
            r#"{"responses": [], "aux": [{"content": [{"type": "text"}]}]}"#,
            "bad.json: at aux[0].content[0]: a text block needs `text`, a string",
        ),
        (
            r#"{"responses": [{"error": {"type": "api_error", "message": "boom"}}]}"#,
            "bad.json: at responses[0].error: needs `status` (an HTTP error) or `after_blocks` (an SSE error event)",
        ),
        (
            r#"{"responses": [{"error": {"type": "api_error", "message": "boom", "after_blocks": 1}}]}"#,
            "bad.json: at responses[0].error.after_blocks: is 1, but the response has 0 content blocks",
        ),
        (
            r#"{"responses": [{"cut_after_blocks": 0, "error": {"status": 500, "type": "api_error", "message": "x"}}]}"#,
            "bad.json: at responses[0]: `cut_after_blocks` and `error` cannot both be given",
        ),
        (
            r#"{"responses": [{}], "abort": {"response": 1, "phase": "tools"}}"#,
            "bad.json: at abort.response: response 1 is past the end of `responses` (1 responses)",
        ),
        (
            r#"{"responses": [{"content": [{"type": "text", "text": "a"}], "cut_after_blocks": 0}],
                "abort": {"response": 0, "phase": "stream"}}"#,
            "bad.json: at abort: phase `stream` needs responses[0] to stream at least one block",
        ),
        (
            r#"{"responses": [{"content": [{"type": "text", "text": "a"}]}], "abort": {"response": 0, "phase": "tools"}}"#,
            "bad.json: at abort: phase `tools` needs responses[0] to call a tool",
        ),
        (
            r#"{"files": {"../escape.txt": "x"}, "responses": []}"#,
            r#"bad.json: at files["../escape.txt"]: the path contains `..`"#,
        ),
        (r#"{"files": {"/etc/x": "x"}, "responses": []}"#, r#"bad.json: at files["/etc/x"]: the path is absolute"#),
    ];
    for (text, message) in cases {
        assert_eq!(parse_err(text), message, "{text}");
    }
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    let err = Scenario::load(&path).unwrap_err();
    assert!(matches!(&err, ScenarioError::Read { path: p, .. } if *p == path), "{err}");
    fs::write(&path, r#"{"responses": 3}"#).unwrap();
    assert_eq!(
        Scenario::load(&path).unwrap_err().to_string(),
        format!("{}: at responses: invalid type: integer `3`, expected a sequence (line 1, column 15)", path.display())
    );
    fs::write(&path, r#"{"name": "ok", "responses": []}"#).unwrap();
    assert_eq!(Scenario::load(&path).unwrap().name, "ok");
}

fn with_files(files: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::parse("s.json", r#"{"responses": []}"#).unwrap();
    s.files = files.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    s
}

#[test]
fn write_files_creates_only_absent_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("kept.txt"), "mine").unwrap();
    let s = with_files(&[("kept.txt", "theirs"), ("a/b/new.txt", "new"), ("top.txt", "top")]);
    let written = s.write_files(dir.path()).unwrap();
    assert_eq!(written, vec![dir.path().join("a/b/new.txt"), dir.path().join("top.txt")]);
    assert_eq!(fs::read_to_string(dir.path().join("kept.txt")).unwrap(), "mine");
    assert_eq!(fs::read_to_string(dir.path().join("a/b/new.txt")).unwrap(), "new");
    assert_eq!(fs::read_to_string(dir.path().join("top.txt")).unwrap(), "top");
    assert_eq!(s.write_files(dir.path()).unwrap(), Vec::<PathBuf>::new());
}

#[test]
fn write_files_refuses_paths_outside_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, why) in
        [("../x.txt", "the path contains `..`"), ("/tmp/x.txt", "the path is absolute"), ("", "the path is empty")]
    {
        let s = with_files(&[("a.txt", "a"), (bad, "x")]);
        let err = s.write_files(dir.path()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), format!("scenario file `{bad}`: {why}"));
        assert!(!dir.path().join("a.txt").exists(), "nothing is written when a path is bad");
    }
}
