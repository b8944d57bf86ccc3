//! Tests of the store against temporary directories and Claude Code's recorded transcript.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use super::reader::scan;
use super::repair::{RepairWrite, repair};
use super::time::parse_rfc3339;
use super::*;
use crate::engine::acting::INTERRUPTED_TOOLS;
use crate::protocol::{ContentBlock, Message, Role};
use crate::tools::orchestrate::OUTCOME_UNKNOWN_RESULT;

const CWD: &str = "/home/user/my.project_x";

fn store() -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("home"));
    (dir, store)
}

fn user(text: &str) -> Message {
    Message::user_text(text)
}

fn assistant(text: &str) -> Message {
    Message { role: Role::Assistant, content: vec![ContentBlock::text(text)] }
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolUse { id: id.into(), name: "Read".into(), input: json!({"file_path": format!("{id}.txt")}) }
}

fn calls(ids: &[&str]) -> Message {
    let mut content = vec![ContentBlock::text("Reading.")];
    content.extend(ids.iter().map(|id| call(id)));
    Message { role: Role::Assistant, content }
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, format!("contents of {id}"), false)
}

fn interrupted(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, OUTCOME_UNKNOWN_RESULT, true)
}

fn results(blocks: Vec<ContentBlock>) -> Message {
    Message { role: Role::User, content: blocks }
}

fn meta() -> SessionMeta {
    SessionMeta { model: "claude-opus-5-5".into(), table_sha256: "ab".repeat(32), permission_mode: "default".into() }
}

fn raw_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The uuids of the message lines and whether each names the previous one as its parent.
fn assert_chain(path: &Path) {
    let mut parent = Value::Null;
    for line in raw_lines(path) {
        match line["type"].as_str().unwrap() {
            "user" | "assistant" => {
                assert_eq!(line["parentUuid"], parent, "{line}");
                Uuid::parse(line["uuid"].as_str().unwrap()).unwrap();
                parent = line["uuid"].clone();
            }
            "agentloop-history" => {
                assert_eq!(line["logicalParentUuid"], parent);
                parent = Value::Null;
            }
            _ => assert!(line.get("uuid").is_none()),
        }
    }
}

fn fixture() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    root.join("shared/fixtures/claude-code-protocol/transcript-sample.jsonl")
}

#[test]
fn paths_follow_the_layout() {
    let store = SessionStore::new("/srv/al");
    let id = Uuid::parse("add9fc4b-0602-4806-8b35-58da17ae022c").unwrap();
    assert_eq!(store.project_dir(Path::new(CWD)), Path::new("/srv/al/projects/-home-user-my-project-x"));
    assert_eq!(
        store.path(Path::new("/home/user/project"), id),
        Path::new("/srv/al/projects/-home-user-project/add9fc4b-0602-4806-8b35-58da17ae022c.jsonl")
    );
}

#[test]
fn claude_codes_transcript_loads_as_its_messages() {
    let path = fixture();
    assert!(path.exists(), "{} is missing", path.display());
    let loaded = load(&path).unwrap();
    let assistant_line = |content: Vec<ContentBlock>| Message { role: Role::Assistant, content };
    let expected = vec![
        user("Read greeting.txt"),
        assistant_line(vec![
            ContentBlock::text("I'll read the file."),
            ContentBlock::ToolUse {
                id: "toolu_mock_47579df01d0d41988d49".into(),
                name: "Read".into(),
                input: json!({"file_path": "/home/user/project/greeting.txt"}),
            },
        ]),
        results(vec![ContentBlock::tool_result(
            "toolu_mock_47579df01d0d41988d49",
            "1\tHello from the mock!\n2\t",
            false,
        )]),
        assistant("The file greeting.txt says: \"Hello from the mock!\""),
        user("again please"),
        assistant("(mock: script exhausted)"),
        user("continue"),
        assistant("(mock: script exhausted)"),
    ];
    assert_eq!(loaded.messages, expected);
    assert_eq!(loaded.session_id.to_string(), "add9fc4b-0602-4806-8b35-58da17ae022c");
    assert_eq!(loaded.cwd.as_deref(), Some(Path::new("/home/user/project")));
    assert_eq!(loaded.last_uuid.as_deref(), Some("033edab9-f18e-4b18-bce3-fa74a5c56476"));
    assert_eq!(loaded.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(loaded.meta, None);
    assert_eq!(loaded.first_prompt.as_deref(), Some("Read greeting.txt"));
    assert_eq!((loaded.turns, loaded.prompts), (4, 0));
    assert_eq!(loaded.last_terminal_reason, None);
    assert_eq!(loaded.last_activity, parse_rfc3339("2026-12-01T07:29:39.270Z"));
    assert_eq!(loaded.repairs, vec![]);
    let summary = scan(&path, false).unwrap();
    assert_eq!((summary.turns, summary.first_prompt.as_deref()), (4, Some("Read greeting.txt")));
    assert_eq!(summary.last_uuid, loaded.last_uuid);
    let mut repaired = loaded.clone();
    assert_eq!(repaired.repair(), RepairReport { repairs: vec![], write: RepairWrite::Nothing });
    assert_eq!(repaired, loaded);
}

#[test]
fn a_written_session_loads_back_with_claude_code_shaped_lines() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    let id = w.session_id();
    assert_eq!(w.path(), store.path(cwd, id));
    w.meta(&meta()).unwrap();
    let history = vec![user("Read a.txt"), calls(&["t1"]), results(vec![result("t1")]), assistant("It says hi.")];
    let mut uuids = Vec::new();
    for m in &history {
        uuids.push(w.append(m).unwrap().unwrap());
    }
    assert_eq!(w.append(&Message { role: Role::User, content: vec![] }).unwrap(), None);
    w.prompt_end("completed", None, 2).unwrap();
    assert_eq!(w.last_uuid(), Some(uuids[3].to_string().as_str()));

    let dir_mode = fs::metadata(store.project_dir(cwd)).unwrap().permissions().mode() & 0o777;
    let file_mode = fs::metadata(w.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!((dir_mode, file_mode), (0o700, 0o600));

    let lines = raw_lines(w.path());
    assert_eq!(lines.len(), 6);
    let first = &lines[1];
    let text = fs::read_to_string(w.path()).unwrap();
    let raw = text.lines().nth(1).unwrap();
    assert!(raw.starts_with(r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user""#));
    let at = |key: &str| raw.find(&format!("\"{key}\":")).unwrap();
    let keys = first.as_object().unwrap().len();
    assert_eq!(keys, 12);
    assert!(
        [
            "parentUuid",
            "isSidechain",
            "type",
            "message",
            "uuid",
            "timestamp",
            "userType",
            "entrypoint",
            "cwd",
            "sessionId",
            "version",
            "gitBranch"
        ]
        .windows(2)
        .all(|k| at(k[0]) < at(k[1])),
        "keys in Claude Code's order: {raw}"
    );
    assert_eq!(first["parentUuid"], Value::Null);
    assert_eq!(first["isSidechain"], false);
    assert_eq!(first["type"], "user");
    assert_eq!(first["message"], json!({"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]}));
    assert_eq!(first["uuid"], uuids[0].to_string());
    assert_eq!(first["userType"], "external");
    assert_eq!(first["entrypoint"], "agentloop");
    assert_eq!(first["cwd"], CWD);
    assert_eq!(first["sessionId"], id.to_string());
    assert_eq!(first["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(first["gitBranch"], "HEAD", "no repository at {CWD}");
    let stamp = first["timestamp"].as_str().unwrap();
    assert_eq!((stamp.len(), &stamp[19..20], &stamp[23..]), (24, ".", "Z"));
    assert!(parse_rfc3339(stamp).is_some());
    assert_eq!(lines[2]["parentUuid"], uuids[0].to_string());
    assert_eq!(lines[2]["type"], "assistant");
    assert_eq!(
        lines[0],
        json!({"type": "agentloop-meta", "model": "claude-opus-5-5", "tableSha256": "ab".repeat(32),
            "permissionMode": "default", "cwd": CWD, "sessionId": id.to_string(),
            "timestamp": lines[0]["timestamp"], "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(
        lines[5],
        json!({"type": "agentloop-prompt-end", "terminalReason": "completed", "error": null, "turns": 2,
            "sessionId": id.to_string(), "timestamp": lines[5]["timestamp"]})
    );
    assert_chain(w.path());

    let loaded = store.load(cwd, id).unwrap();
    assert_eq!(loaded.messages, history);
    assert_eq!(loaded.session_id, id);
    assert_eq!(loaded.cwd.as_deref(), Some(cwd));
    assert_eq!(loaded.last_uuid, Some(uuids[3].to_string()));
    assert_eq!(loaded.meta, Some(meta()));
    assert_eq!(loaded.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(loaded.last_terminal_reason.as_deref(), Some("completed"));
    assert_eq!(loaded.last_error, None);
    assert_eq!((loaded.turns, loaded.prompts), (2, 1));
    assert_eq!(loaded.first_prompt.as_deref(), Some("Read a.txt"));
    assert_eq!(loaded.last_activity, parse_rfc3339(lines[5]["timestamp"].as_str().unwrap()));
    assert_eq!(loaded.repairs, vec![]);
}

/// The keys (dotted paths) of a value and the JSON type of each, down to `depth` levels.
fn shape(value: &Value, prefix: &str, depth: usize, out: &mut Vec<(String, &'static str)>) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.push((prefix.to_owned(), kind));
    if let (Value::Object(map), 1..) = (value, depth) {
        for (key, v) in map {
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            shape(v, &path, depth - 1, out);
        }
    }
}

#[test]
fn prompt_reply_and_result_lines_have_the_fields_of_claude_codes() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    let (prompt, prompt_id) = (Uuid::new_v4(), Uuid::new_v4());
    let origin = json!({"kind": "human"});
    let info = LineInfo {
        uuid: Some(prompt),
        prompt_id: Some(prompt_id),
        text_prompt: true,
        origin: Some(&origin),
        reply: None,
    };
    assert_eq!(w.append_with(&user("Read greeting.txt"), &info).unwrap(), Some(prompt));
    let reply = ReplyInfo {
        id: Some("msg_01".into()),
        model: Some("claude-opus-5-5".into()),
        stop_reason: Some(crate::protocol::StopReason::ToolUse),
        stop_sequence: None,
        usage: crate::protocol::Usage {
            input_tokens: Some(1075),
            output_tokens: Some(15),
            cache_creation_input_tokens: None,
            cache_read_input_tokens: Some(7),
        },
        request_id: Some("req_01".into()),
    };
    let info = LineInfo { prompt_id: Some(prompt_id), reply: Some(&reply), ..LineInfo::default() };
    let call = w.append_with(&calls(&["t1"]), &info).unwrap().unwrap();
    let info = LineInfo { prompt_id: Some(prompt_id), ..LineInfo::default() };
    w.append_with(&results(vec![result("t1")]), &info).unwrap();

    let ours = raw_lines(w.path());
    let theirs = raw_lines(&fixture());
    let first = |kind: &str, lines: &[Value]| lines.iter().find(|l| l["type"] == kind).unwrap().clone();
    let results_line = |lines: &[Value]| {
        lines.iter().find(|l| l["type"] == "user" && l["message"]["content"].is_array()).unwrap().clone()
    };
    // Every field of Claude Code's lines that its readers use is on ours, with the same type.
    let wanted: &[&str] = &[
        "parentUuid",
        "isSidechain",
        "promptId",
        "type",
        "message",
        "message.role",
        "message.content",
        "uuid",
        "timestamp",
        "userType",
        "entrypoint",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
    ];
    let reply_fields: &[&str] = &[
        "message.id",
        "message.type",
        "message.model",
        "message.stop_reason",
        "message.stop_sequence",
        "message.usage",
        "message.usage.input_tokens",
        "message.usage.cache_creation_input_tokens",
        "message.usage.cache_read_input_tokens",
        "message.usage.output_tokens",
        "requestId",
    ];
    for (kind, ours, theirs, extra) in [
        ("prompt", first("user", &ours), first("user", &theirs), &[][..]),
        ("reply", first("assistant", &ours), first("assistant", &theirs), reply_fields),
        ("result", results_line(&ours), results_line(&theirs), &["sourceToolAssistantUUID"][..]),
    ] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        shape(&ours, "", 3, &mut a);
        shape(&theirs, "", 3, &mut b);
        for key in wanted.iter().chain(extra).filter(|k| !(kind == "reply" && **k == "promptId")) {
            let find = |shape: &[(String, &'static str)]| shape.iter().find(|(k, _)| k == key).map(|(_, t)| *t);
            assert_eq!(find(&a), find(&b), "{kind} line, `{key}`: ours {ours}");
            assert!(find(&a).is_some(), "{kind} line has no `{key}`");
        }
    }
    let (prompt_line, reply_line, result_line) = (&ours[0], &ours[1], &ours[2]);
    assert_eq!(prompt_line["message"], json!({"role": "user", "content": "Read greeting.txt"}));
    assert_eq!(prompt_line["uuid"], prompt.to_string());
    assert_eq!(prompt_line["promptId"], prompt_id.to_string());
    assert_eq!(prompt_line["origin"], origin);
    assert_eq!(reply_line["message"]["id"], "msg_01");
    assert_eq!(reply_line["message"]["type"], "message");
    assert_eq!(reply_line["message"]["model"], "claude-opus-5-5");
    assert_eq!(reply_line["message"]["stop_reason"], "tool_use");
    assert_eq!(reply_line["message"]["stop_sequence"], Value::Null);
    assert_eq!(
        reply_line["message"]["usage"],
        json!({"input_tokens": 1075, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 7, "output_tokens": 15})
    );
    assert_eq!(reply_line["requestId"], "req_01");
    assert_eq!(reply_line.get("promptId"), None, "only user lines name their prompt");
    assert_eq!(result_line["sourceToolAssistantUUID"], call.to_string());
    assert_eq!(result_line["parentUuid"], call.to_string());
    // And they load back as the messages they are.
    let loaded = load(w.path()).unwrap();
    assert_eq!(loaded.messages, vec![user("Read greeting.txt"), calls(&["t1"]), results(vec![result("t1")])]);
    assert_eq!(loaded.model.as_deref(), Some("claude-opus-5-5"));
}

#[test]
fn the_store_reads_sessions_an_older_version_wrote_to_its_own_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = Path::new(CWD);
    let (claude, legacy) = (dir.path().join(".claude"), dir.path().join(".agentloop"));
    let old = SessionStore::new(&legacy);
    let mut w = old.create(cwd).unwrap();
    w.append(&user("from before")).unwrap();
    let old_id = w.session_id();
    let store = SessionStore::with_roots(paths::Roots { primary: claude.clone(), legacy: Some(legacy.clone()) });
    let mut fresh = store.create(cwd).unwrap();
    fresh.append(&user("from now")).unwrap();
    assert!(fresh.path().starts_with(claude.join("projects").join(paths::slug(cwd))), "written to Claude Code's");
    assert_eq!(store.find(cwd, old_id), Some(old.path(cwd, old_id)));
    assert_eq!(store.load(cwd, old_id).unwrap().messages, vec![user("from before")]);
    let mut listed: Vec<Uuid> = store.list(cwd).unwrap().into_iter().map(|s| s.id).collect();
    listed.sort();
    let mut expected = vec![old_id, fresh.session_id()];
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(store.find(cwd, Uuid::new_v4()), None);
}

#[test]
fn resuming_continues_the_chain_and_merges_same_role_lines() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    let id = w.session_id();
    w.append(&user("one")).unwrap();
    w.append(&assistant("two")).unwrap();
    drop(w);
    let loaded = store.load(cwd, id).unwrap();
    let mut w = loaded.writer().unwrap();
    assert_eq!(w.last_uuid(), loaded.last_uuid.as_deref());
    w.meta(&meta()).unwrap();
    w.append(&results(vec![ContentBlock::text("three")])).unwrap();
    w.append(&user("four")).unwrap();
    w.prompt_end("model_error", Some("overloaded"), 0).unwrap();
    assert_chain(w.path());
    let again = store.load(cwd, id).unwrap();
    assert_eq!(
        again.messages,
        vec![user("one"), assistant("two"), results(vec![ContentBlock::text("three"), ContentBlock::text("four")])]
    );
    assert_eq!(again.last_terminal_reason.as_deref(), Some("model_error"));
    assert_eq!(again.last_error.as_deref(), Some("overloaded"));
}

#[test]
fn a_history_snapshot_replaces_the_messages_and_restarts_the_chain() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    let id = w.session_id();
    w.append(&user("Read a.txt")).unwrap();
    w.append(&calls(&["t1"])).unwrap();
    w.append(&results(vec![result("t1")])).unwrap();
    let leaf = w.last_uuid().unwrap().to_owned();
    let compacted = vec![user("Summary: a.txt was read."), assistant("Noted.")];
    w.history(&compacted, HistoryReason::Compaction).unwrap();
    assert_eq!(w.last_uuid(), None);
    let loaded = store.load(cwd, id).unwrap();
    assert_eq!(loaded.messages, compacted);
    assert_eq!(loaded.last_uuid, None);
    w.append(&user("Next.")).unwrap();
    w.append(&assistant("Done.")).unwrap();
    let lines = raw_lines(w.path());
    assert_eq!(lines[3]["type"], "agentloop-history");
    assert_eq!(lines[3]["reason"], "compaction");
    assert_eq!(lines[3]["logicalParentUuid"], leaf);
    assert_eq!(lines[3]["messages"], serde_json::to_value(&compacted).unwrap());
    assert_eq!(lines[4]["parentUuid"], Value::Null);
    assert_chain(w.path());
    let loaded = store.load(cwd, id).unwrap();
    assert_eq!(loaded.messages, vec![compacted[0].clone(), compacted[1].clone(), user("Next."), assistant("Done.")]);
    assert_eq!(loaded.turns, 2);
    assert_eq!(loaded.first_prompt.as_deref(), Some("Read a.txt"));
    assert_eq!(scan(w.path(), false).unwrap().turns, 2);
}

/// A transcript whose last line was cut after `keep` bytes of it.
fn cut_transcript(store: &SessionStore, history: &[Message], cut: &Message, keep: usize) -> (Uuid, PathBuf) {
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    for m in history {
        w.append(m).unwrap();
    }
    let path = w.path().to_owned();
    let before = fs::read(&path).unwrap();
    w.append(cut).unwrap();
    let full = fs::read(&path).unwrap();
    fs::write(&path, &full[..full.len().min(before.len() + keep)]).unwrap();
    (w.session_id(), path)
}

#[test]
fn a_line_cut_mid_write_is_dropped_and_resume_cuts_it_off() {
    let (_dir, store) = store();
    let history = [user("Read a.txt"), assistant("Sure.")];
    let (id, path) = cut_transcript(&store, &history, &user("half of this line"), 40);
    let mut loaded = load(&path).unwrap();
    assert_eq!(loaded.messages, history);
    assert_eq!(loaded.repairs, vec![Repair::DroppedPartialLine { line: 3, bytes: 40 }]);
    let report = loaded.repair();
    assert_eq!(report, RepairReport { repairs: loaded.repairs.clone(), write: RepairWrite::Nothing });
    assert_eq!(loaded.messages, history);

    let mut w = loaded.writer().unwrap();
    assert_eq!(w.session_id(), id);
    w.append(&user("again")).unwrap();
    assert_chain(&path);
    let again = load(&path).unwrap();
    assert_eq!(again.messages, vec![history[0].clone(), history[1].clone(), user("again")]);
    assert_eq!(again.repairs, vec![]);
}

#[test]
fn a_complete_last_line_without_newline_is_kept_and_resume_ends_it() {
    let (_dir, store) = store();
    let history = [user("Read a.txt"), assistant("Sure.")];
    let (_, path) = cut_transcript(&store, &history[..1], &history[1], usize::MAX / 2);
    let full = fs::read(&path).unwrap();
    fs::write(&path, full.strip_suffix(b"\n").unwrap()).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!((loaded.messages.as_slice(), loaded.repairs.as_slice()), (&history[..], &[][..]));
    let mut w = loaded.writer().unwrap();
    w.append(&user("more")).unwrap();
    assert_eq!(load(&path).unwrap().messages.len(), 3);
    assert_chain(&path);
}

#[test]
fn a_malformed_line_in_the_middle_names_file_line_and_serde_error() {
    let (_dir, store) = store();
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("one")).unwrap();
    let path = w.path().to_owned();
    fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"type\":\"user\",\n").unwrap();
    w.append(&assistant("two")).unwrap();
    let err = load(&path).unwrap_err();
    assert!(matches!(err, SessionError::Json { line: 2, .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("{}:2: EOF while parsing a value at line 1 column 15", path.display()));

    // Valid JSON that is not a valid message line is an error even at the end.
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("one")).unwrap();
    let path = w.path().to_owned();
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"user\",\"message\":{}}\n")
        .unwrap();
    let err = load(&path).unwrap_err();
    assert_eq!(err.to_string(), format!("{}:2: missing field `role` at line 1 column 27", path.display()));

    // Unknown line types, blank lines and sidechains are skipped.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{}.jsonl", Uuid::new_v4()));
    let sidechain =
        json!({"type": "user", "isSidechain": true, "uuid": "x", "message": {"role": "user", "content": "sub"}});
    let text = format!(
        "{}\n\n{}\n{}\n",
        json!({"type": "summary", "summary": "s", "leafUuid": 3}),
        sidechain,
        json!({"type": "user", "parentUuid": null, "uuid": "u1", "message": {"role": "user", "content": "main"}})
    );
    fs::write(&path, text).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!((loaded.messages, loaded.last_uuid.as_deref()), (vec![user("main")], Some("u1")));
}

#[test]
fn no_session_id_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.jsonl");
    fs::write(&path, "").unwrap();
    assert_eq!(
        load(&path).unwrap_err().to_string(),
        format!("{}: no session id (the file name is not a UUID and no line has a sessionId)", path.display())
    );
}

#[test]
fn repair_answers_a_tool_use_without_result_in_a_new_message() {
    let mut messages = vec![user("Read a.txt and b.txt"), calls(&["t1", "t2"])];
    let report = repair(&mut messages, &Journaled::default());
    let answer = results(vec![interrupted("t1"), interrupted("t2"), ContentBlock::text(INTERRUPTED_TOOLS)]);
    assert_eq!(messages, vec![user("Read a.txt and b.txt"), calls(&["t1", "t2"]), answer.clone()]);
    assert_eq!(
        report,
        RepairReport {
            repairs: vec![Repair::AnsweredToolUses {
                message: 1,
                tool_use_ids: vec!["t1".into(), "t2".into()],
                new_message: true
            }],
            write: RepairWrite::Append(vec![answer]),
        }
    );
}

#[test]
fn repair_completes_a_partial_result_message_in_call_order() {
    let mut messages = vec![user("Read"), calls(&["t1", "t2"]), results(vec![result("t1")])];
    let report = repair(&mut messages, &Journaled::default());
    assert_eq!(messages[2], results(vec![result("t1"), interrupted("t2"), ContentBlock::text(INTERRUPTED_TOOLS)]));
    assert_eq!(messages.len(), 3);
    assert_eq!(
        report,
        RepairReport {
            repairs: vec![Repair::AnsweredToolUses { message: 1, tool_use_ids: vec!["t2".into()], new_message: false }],
            write: RepairWrite::Append(vec![results(vec![interrupted("t2"), ContentBlock::text(INTERRUPTED_TOOLS)])]),
        }
    );

    // The second call answered, the first not: the results are reordered, so a snapshot.
    let mut messages = vec![user("Read"), calls(&["t1", "t2"]), results(vec![result("t2")])];
    let report = repair(&mut messages, &Journaled::default());
    assert_eq!(messages[2], results(vec![interrupted("t1"), result("t2"), ContentBlock::text(INTERRUPTED_TOOLS)]));
    assert_eq!(report.write, RepairWrite::Snapshot);
}

#[test]
fn repair_mid_history_keeps_roles_alternating() {
    let mut messages = vec![user("Read"), calls(&["t1"]), user("never mind"), assistant("OK.")];
    let report = repair(&mut messages, &Journaled::default());
    assert_eq!(
        messages,
        vec![
            user("Read"),
            calls(&["t1"]),
            results(vec![interrupted("t1"), ContentBlock::text("never mind"), ContentBlock::text(INTERRUPTED_TOOLS)]),
            assistant("OK."),
        ]
    );
    assert_eq!(report.write, RepairWrite::Snapshot);
    for pair in messages.windows(2) {
        assert_ne!(pair[0].role, pair[1].role);
    }
}

#[test]
fn repair_leaves_a_clean_history_untouched() {
    let clean = [user("Read"), calls(&["t1", "t2"]), results(vec![result("t1"), result("t2")]), assistant("Done.")];
    for end in 1..=clean.len() {
        if end == 2 {
            continue; // ends with unanswered calls
        }
        let mut messages = clean[..end].to_vec();
        assert_eq!(
            repair(&mut messages, &Journaled::default()),
            RepairReport { repairs: vec![], write: RepairWrite::Nothing }
        );
        assert_eq!(messages, clean[..end]);
    }
}

#[test]
fn a_kill_during_tools_recovers_exactly_and_records_the_repair() {
    let (_dir, store) = store();
    let history = [user("Read a.txt and b.txt"), calls(&["t1", "t2"])];
    let (_, path) = cut_transcript(&store, &history, &results(vec![result("t1"), result("t2")]), 60);
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    let answer = results(vec![interrupted("t1"), interrupted("t2"), ContentBlock::text(INTERRUPTED_TOOLS)]);
    assert_eq!(loaded.messages, vec![history[0].clone(), history[1].clone(), answer.clone()]);
    assert_eq!(
        report.repairs,
        vec![
            Repair::DroppedPartialLine { line: 3, bytes: 60 },
            Repair::AnsweredToolUses { message: 1, tool_use_ids: vec!["t1".into(), "t2".into()], new_message: true },
        ]
    );
    let mut w = loaded.writer().unwrap();
    w.record_repair(&report, &loaded.messages).unwrap();
    assert_chain(&path);
    let again = load(&path).unwrap();
    assert_eq!(again.messages, loaded.messages);
    assert_eq!(again.repairs, vec![]);

    // A repair that needs a snapshot loads back the same way.
    let (_, path) = cut_transcript(&store, &[user("Read"), calls(&["t1", "t2"])], &results(vec![result("t2")]), 1000);
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    assert_eq!(report.write, RepairWrite::Snapshot);
    loaded.writer().unwrap().record_repair(&report, &loaded.messages).unwrap();
    assert_eq!(load(&path).unwrap().messages, loaded.messages);
    assert_chain(&path);
}

#[test]
fn a_tool_result_answering_no_call_or_a_call_twice_is_dropped_naming_its_line() {
    let (_dir, store) = store();
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("Read a.txt and b.txt")).unwrap(); // line 1
    w.append(&calls(&["t1", "t2"])).unwrap(); // line 2
    w.append(&results(vec![result("t1"), result("ghost"), result("t1")])).unwrap(); // line 3
    w.append(&results(vec![result("t2"), result("t2")])).unwrap(); // line 4
    w.append(&assistant("Done.")).unwrap(); // line 5
    w.append(&results(vec![result("t1"), ContentBlock::text("and?")])).unwrap(); // line 6
    let path = w.path().to_owned();
    drop(w);
    let mut loaded = load(&path).unwrap();
    let dropped = |line, id: &str, why| Repair::DroppedToolResult { line, tool_use_id: id.into(), why };
    assert_eq!(
        loaded.repairs,
        vec![
            dropped(3, "ghost", Unpaired::NoCall),
            dropped(3, "t1", Unpaired::Repeated),
            dropped(4, "t2", Unpaired::Repeated),
            dropped(6, "t1", Unpaired::NoCall),
        ]
    );
    let clean = vec![
        user("Read a.txt and b.txt"),
        calls(&["t1", "t2"]),
        results(vec![result("t1"), result("t2")]),
        assistant("Done."),
        user("and?"),
    ];
    assert_eq!(loaded.messages, clean);
    // Recorded as a snapshot, the file loads clean from then on.
    let report = loaded.repair();
    assert_eq!(report.write, RepairWrite::Snapshot);
    loaded.writer().unwrap().record_repair(&report, &loaded.messages).unwrap();
    let again = load(&path).unwrap();
    assert_eq!((again.messages, again.repairs), (clean, vec![]));
}

#[test]
fn one_writer_at_a_time_holds_a_transcript() {
    let (_dir, store) = store();
    let w = store.create(Path::new(CWD)).unwrap();
    let path = w.path().to_owned();
    let lock_file = super::lock::lock_path(&path);
    assert_eq!(lock_file, path.with_extension("jsonl.lock"));
    assert_eq!(fs::read_to_string(&lock_file).unwrap(), format!("{}\n", std::process::id()));
    let session = w.session_id().to_string();
    let refused = |e: SessionError| match e {
        SessionError::InUse { session: named, pid } => (named, pid),
        other => panic!("{other:?}"),
    };
    let expected = (session.clone(), Some(std::process::id()));
    assert_eq!(refused(load(&path).unwrap().writer().unwrap_err()), expected);
    assert_eq!(refused(SessionLock::acquire(&path).unwrap_err()), expected);
    assert_eq!(
        SessionLock::acquire(&path).unwrap_err().to_string(),
        format!("session {session} is in use by pid {}", std::process::id())
    );
    // Dropped, the writer lets go and the lock file goes; the next writer takes it.
    drop(w);
    assert!(!lock_file.exists());
    let again = load(&path).unwrap().writer().unwrap();
    assert!(lock_file.exists());
    drop(again);
    // A lock file a crash left behind (unlocked) is taken over.
    fs::write(&lock_file, "999999\n").unwrap();
    let lock = SessionLock::acquire(&path).unwrap();
    assert_eq!(fs::read_to_string(lock.path()).unwrap(), format!("{}\n", std::process::id()));
}

#[test]
fn listing_is_newest_first_with_summaries() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    assert_eq!(store.list(cwd).unwrap(), vec![]);
    assert_eq!(store.most_recent(cwd).unwrap(), None);

    let long = "Please   read\nthe file a.txt and then ".repeat(5);
    let mut old = store.create(cwd).unwrap();
    old.meta(&meta()).unwrap();
    old.append(&user(&long)).unwrap();
    old.append(&calls(&["t1"])).unwrap();
    old.append(&results(vec![result("t1")])).unwrap();
    old.append(&assistant("Done.")).unwrap();
    old.prompt_end("completed", None, 2).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut new = store.create(cwd).unwrap();
    new.append(&results(vec![ContentBlock::text("Hi")])).unwrap();
    new.prompt_end("aborted_streaming", Some("interrupted"), 0).unwrap();
    fs::write(store.project_dir(cwd).join("notes.jsonl"), "not a session").unwrap();
    fs::write(store.project_dir(cwd).join(format!("{}.txt", Uuid::new_v4())), "").unwrap();
    let broken = store.path(cwd, Uuid::new_v4());
    fs::write(&broken, "garbage\n{}\n").unwrap();
    let epoch = UNIX_EPOCH + Duration::from_secs(1);
    fs::File::options().write(true).open(&broken).unwrap().set_modified(epoch).unwrap();

    let list = store.list(cwd).unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].id, new.session_id());
    assert_eq!((list[0].turns, list[0].prompts), (0, 1));
    assert_eq!(list[0].first_prompt.as_deref(), Some("Hi"));
    assert_eq!(list[0].last_terminal_reason.as_deref(), Some("aborted_streaming"));
    assert_eq!(list[1].id, old.session_id());
    assert_eq!(list[1].path, old.path());
    assert_eq!((list[1].turns, list[1].prompts), (2, 1));
    assert_eq!(list[1].last_terminal_reason.as_deref(), Some("completed"));
    let prompt = list[1].first_prompt.as_deref().unwrap();
    assert_eq!(prompt.chars().count(), 80);
    assert_eq!(prompt, format!("{}…", &"Please read the file a.txt and then ".repeat(3)[..79]));
    assert_eq!(list[1].error, None);
    assert!(list[0].last_activity > list[1].last_activity);
    assert_eq!(list[2].path, broken);
    assert_eq!(list[2].last_activity, epoch);
    assert_eq!(list[2].error, Some(format!("{}:1: expected value at line 1 column 1", broken.display())));
    assert_eq!(store.most_recent(cwd).unwrap().map(|s| s.id), Some(new.session_id()));

    let loaded = store.load(cwd, old.session_id()).unwrap();
    assert_eq!((loaded.turns, loaded.prompts), (list[1].turns, list[1].prompts));
    assert_eq!(Some(loaded.last_activity.unwrap()), Some(list[1].last_activity));
}

#[test]
fn a_fork_copies_the_lines_with_their_uuids_as_claude_code_does() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    w.meta(&meta()).unwrap();
    let history = vec![user("Read"), calls(&["t1"]), results(vec![result("t1")]), assistant("Done.")];
    for m in &history {
        w.append(m).unwrap();
    }
    w.prompt_end("completed", None, 2).unwrap();
    let loaded = load(w.path()).unwrap();
    let new_id = Uuid::new_v4();
    let mut fork = store.fork(&loaded, new_id, None).unwrap();
    assert_eq!(fork.path(), store.path(cwd, new_id));
    fork.append(&user("And b.txt?")).unwrap();
    assert_chain(fork.path());
    let lines = raw_lines(fork.path());
    assert_eq!(lines[0]["forkedFrom"], loaded.session_id.to_string());
    assert_eq!(lines[0]["sessionId"], new_id.to_string());
    // The message lines and the prompt end as they were, but for the session id.
    let original = raw_lines(w.path());
    assert_eq!(lines.len(), original.len() + 1);
    for (copied, line) in lines[1..6].iter().zip(&original[1..6]) {
        let mut expected = line.clone();
        expected["sessionId"] = json!(new_id.to_string());
        assert_eq!(copied, &expected);
    }
    let forked = load(fork.path()).unwrap();
    let mut expected = history.clone();
    expected.push(user("And b.txt?"));
    assert_eq!(forked.messages, expected);
    assert_eq!(forked.meta, Some(meta()));
    assert_eq!(forked.session_id, new_id);
    assert_eq!(load(w.path()).unwrap().messages, history, "the original is untouched");
}

/// Two prompts, as a run writes them: each prompt line with its `promptId`, its turn, its end.
fn two_turns(w: &mut TranscriptWriter) -> [Uuid; 6] {
    let (p1, p2) = (Uuid::new_v4(), Uuid::new_v4());
    let line = |w: &mut TranscriptWriter, m: &Message, prompt: Uuid, text_prompt: bool| {
        let info = LineInfo { prompt_id: Some(prompt), text_prompt, ..LineInfo::default() };
        w.append_with(m, &info).unwrap().unwrap()
    };
    let a = line(w, &user("Reply with exactly: one"), p1, true);
    let b = line(w, &calls(&["t1"]), p1, false);
    let c = line(w, &results(vec![result("t1")]), p1, false);
    let d = line(w, &assistant("one"), p1, false);
    w.prompt_end("completed", None, 2).unwrap();
    let e = line(w, &user("Reply with exactly: two"), p2, true);
    let f = line(w, &assistant("two"), p2, false);
    w.prompt_end("completed", None, 1).unwrap();
    [a, b, c, d, e, f]
}

#[test]
fn a_resume_at_a_message_keeps_the_history_up_to_it() {
    let (_dir, store) = store();
    let cwd = Path::new(CWD);
    let mut w = store.create(cwd).unwrap();
    let [_, _, _, end_of_one, two, _] = two_turns(&mut w);
    let first_turn =
        vec![user("Reply with exactly: one"), calls(&["t1"]), results(vec![result("t1")]), assistant("one")];

    let cut = load_cut(w.path(), &end_of_one.to_string(), Some(&two.to_string())).unwrap();
    assert_eq!(cut.messages, first_turn);
    assert_eq!(cut.last_uuid, Some(end_of_one.to_string()));
    assert_eq!(cut.cut, Some(end_of_one.to_string()));

    // Forked: the new file holds the first turn's lines, then the next prompt chains from them.
    let fork_id = Uuid::new_v4();
    let mut fork = store.fork(&cut, fork_id, None).unwrap();
    fork.append_with(&user("Reply with exactly: three"), &LineInfo { text_prompt: true, ..LineInfo::default() })
        .unwrap();
    assert_chain(fork.path());
    let mut expected = first_turn.clone();
    expected.push(user("Reply with exactly: three"));
    assert_eq!(load(fork.path()).unwrap().messages, expected);
    let prompts: Vec<Value> = raw_lines(fork.path())
        .into_iter()
        .filter(|l| l["message"]["content"].is_string())
        .map(|l| l["message"]["content"].clone())
        .collect();
    assert_eq!(prompts, [json!("Reply with exactly: one"), json!("Reply with exactly: three")]);

    // In place: a snapshot of the kept history, and the next line is a branch off the cut
    // (once the first writer is gone: one writer at a time).
    let path = w.path().to_owned();
    drop(w);
    let mut again = cut.writer().unwrap();
    again.rewind(&cut.messages, cut.cut.as_deref().unwrap()).unwrap();
    let three = again.append(&user("Reply with exactly: three")).unwrap().unwrap();
    let lines = raw_lines(&path);
    let last = lines.last().unwrap();
    assert_eq!(last["uuid"], three.to_string());
    assert_eq!(last["parentUuid"], end_of_one.to_string());
    assert_eq!(lines[lines.len() - 2]["reason"], "rewind");
    assert_eq!(load(&path).unwrap().messages, expected);
    assert_eq!(load(&path).unwrap().last_uuid, Some(three.to_string()));
}

#[test]
fn a_resume_at_a_message_is_refused_when_it_drops_more_than_the_declared_turn() {
    let (_dir, store) = store();
    let mut w = store.create(Path::new(CWD)).unwrap();
    let [one, calling, answer, end_of_one, two, _] = two_turns(&mut w);
    let path = w.path().to_owned();
    let refusal = |at: Uuid, turn: &str| match load_cut(&path, &at.to_string(), Some(turn)) {
        Err(e @ SessionError::ResumeRefused { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    };
    let rejected = |at: Uuid, turn: &str, why: String| {
        format!(
            "Resume rejected by --resume-drops-turn: resuming at {at} would discard entries not attributable to turn {turn}: {why}"
        )
    };
    let other = Uuid::new_v4().to_string();
    assert_eq!(
        refusal(end_of_one, &other),
        rejected(
            end_of_one,
            &other,
            format!(
                "range does not start with the declared turn prompt; first discarded entry 0 [type=user, uuid={two}]"
            )
        )
    );
    assert_eq!(
        refusal(end_of_one, "nope"),
        rejected(end_of_one, "nope", "declared turn id is not a UUID: nope".into())
    );
    // Cut inside turn one, declaring it: what is dropped starts with its tool result.
    assert_eq!(
        refusal(calling, &one.to_string()),
        rejected(
            calling,
            &one.to_string(),
            format!(
                "range does not start with the declared turn prompt; first discarded entry 0 [type=user, uuid={answer}]"
            )
        )
    );
    // Declaring a tool-result line as the prompt.
    assert_eq!(
        refusal(calling, &answer.to_string()),
        rejected(
            calling,
            &answer.to_string(),
            format!("declared turn id names a non-prompt user entry; entry 0 [type=user, uuid={answer}]")
        )
    );
    match load_cut(&path, &other, None) {
        Err(e @ SessionError::NoMessage { .. }) => {
            assert_eq!(e.to_string(), format!("No message found with message.uuid of: {other}"));
        }
        other => panic!("{other:?}"),
    }
    // A third prompt after turn two's end: dropping from turn two drops two turns.
    let three = w
        .append_with(
            &user("three"),
            &LineInfo { prompt_id: Some(Uuid::new_v4()), text_prompt: true, ..LineInfo::default() },
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        refusal(end_of_one, &two.to_string()),
        rejected(
            end_of_one,
            &two.to_string(),
            format!("range contains an entry of a later turn; entry 2 [type=user, uuid={three}]")
        )
    );
}

#[test]
fn a_dropped_turn_may_hold_what_agentloop_added_to_it() {
    let (_dir, store) = store();
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("one")).unwrap();
    let kept = w.append(&assistant("one")).unwrap().unwrap();
    w.prompt_end("completed", None, 1).unwrap();
    // A transcript of an older version: no promptId; an interrupted turn adds a user line.
    let two = w.append(&user("two")).unwrap().unwrap();
    w.append(&calls(&["t1"])).unwrap();
    w.append(&results(vec![interrupted("t1")])).unwrap();
    w.append(&user("[Request interrupted by user]")).unwrap();
    w.prompt_end("aborted_tools", Some("interrupted"), 1).unwrap();
    let cut = load_cut(w.path(), &kept.to_string(), Some(&two.to_string())).unwrap();
    assert_eq!(cut.messages, vec![user("one"), assistant("one")]);
}
#[test]
fn loading_a_thousand_messages_is_one_fast_pass() {
    let (_dir, store) = store();
    let mut w = store.create(Path::new(CWD)).unwrap();
    for i in 0..250 {
        w.append(&user(&format!("prompt {i} {}", "x".repeat(200)))).unwrap();
        w.append(&calls(&[&format!("t{i}")])).unwrap();
        w.append(&results(vec![ContentBlock::tool_result(format!("t{i}"), "y".repeat(2000), false)])).unwrap();
        w.append(&assistant(&"z".repeat(300))).unwrap();
    }
    let start = std::time::Instant::now();
    let loaded = load(w.path()).unwrap();
    let elapsed = start.elapsed();
    let start = std::time::Instant::now();
    let summary = scan(w.path(), false).unwrap();
    let summary_elapsed = start.elapsed();
    eprintln!(
        "1000 messages ({} bytes): load {elapsed:?}, listing scan {summary_elapsed:?}",
        fs::metadata(w.path()).unwrap().len()
    );
    assert_eq!((loaded.messages.len(), loaded.turns), (1000, 500));
    assert_eq!((summary.turns, summary.first_prompt), (500, loaded.first_prompt.clone()));
    // Generous for unoptimized builds; the 50 ms target is for release builds.
    assert!(elapsed < Duration::from_millis(1000), "{elapsed:?}");
}

#[test]
fn a_kill_at_any_byte_of_the_last_line_loads_and_resumes() {
    let (_dir, store) = store();
    let history = [user("Read ü.txt"), calls(&["t1"])];
    let last = results(vec![result("t1"), ContentBlock::text("naïve — 🦀")]);
    let (_, path) = cut_transcript(&store, &history, &last, usize::MAX / 2);
    let full = fs::read(&path).unwrap();
    let start = full[..full.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    for cut in start..=full.len() {
        fs::write(&path, &full[..cut]).unwrap();
        let mut loaded = load(&path).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let complete = cut >= full.len() - 1;
        let expected: Vec<Message> =
            if complete { vec![history[0].clone(), history[1].clone(), last.clone()] } else { history.to_vec() };
        assert_eq!(loaded.messages, expected, "cut at {cut}");
        let dropped = if complete || cut == start {
            vec![]
        } else {
            vec![Repair::DroppedPartialLine { line: 3, bytes: cut - start }]
        };
        assert_eq!(loaded.repairs, dropped, "cut at {cut}");
        let report = loaded.repair();
        let mut w = loaded.writer().unwrap();
        w.record_repair(&report, &loaded.messages).unwrap();
        w.append(&assistant("Next.")).unwrap();
        let again = load(&path).unwrap();
        assert_eq!(again.repairs, vec![]);
        assert_eq!(again.messages.len(), 4, "cut at {cut}");
        assert_chain(&path);
    }
}

#[test]
fn claude_codes_compact_boundary_starts_the_history_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("add9fc4b-0602-4806-8b35-58da17ae022c.jsonl");
    let msg = |kind: &str, uuid: &str, parent: Value, content: &str| {
        json!({"type": kind, "parentUuid": parent, "uuid": uuid, "isSidechain": false,
            "message": {"role": kind, "content": content}})
    };
    let lines = [
        msg("user", "u1", Value::Null, "old prompt"),
        msg("assistant", "a1", json!("u1"), "old answer"),
        json!({"type": "system", "subtype": "compact_boundary", "parentUuid": null, "logicalParentUuid": "a1",
            "uuid": "b1", "content": "Conversation compacted", "isSidechain": false}),
        msg("user", "u2", json!("b1"), "Summary: old things."),
        msg("assistant", "a2", json!("u2"), "Go on."),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&path, text).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.messages, vec![user("Summary: old things."), assistant("Go on.")]);
    assert_eq!((loaded.turns, loaded.last_uuid.as_deref()), (1, Some("a2")));
    assert_eq!(loaded.first_prompt.as_deref(), Some("old prompt"));
    assert_eq!(scan(&path, false).unwrap().turns, 1);
}

#[test]
fn a_mirror_gets_the_lines_already_written_then_each_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut writer = TranscriptWriter::create(&path, Uuid::new_v4(), dir.path()).unwrap();
    writer.append(&user("first")).unwrap();
    let copied = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = copied.clone();
    let mirror = Mirror::new(move |at, line| {
        sink.lock().unwrap().push((at.to_path_buf(), serde_json::from_slice::<Value>(line).unwrap()));
    });
    writer.mirror_to(mirror, true).unwrap();
    writer.append(&assistant("second")).unwrap();
    let copied = copied.lock().unwrap();
    let on_disk: Vec<Value> =
        fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(copied.iter().map(|(_, line)| line.clone()).collect::<Vec<_>>(), on_disk);
    assert!(copied.iter().all(|(at, _)| at == &path));
    assert_eq!(on_disk.len(), 2);
}

/// Found by the `transcript` fuzz target: a reply that calls two tools under one id, cut off
/// before their results. The repair answers the id once, so recording the repair reloads as
/// the repaired history (a second answer would be dropped by the loader as a repeat).
#[test]
fn a_reply_repeating_a_tool_use_id_is_answered_once_and_its_repair_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f1e2d4c-5b6a-4789-8abc-def012345678.jsonl");
    let call_line = |uuid: &str, parent: &str, content: Value| {
        json!({"parentUuid": parent, "isSidechain": false, "type": "assistant",
               "message": {"role": "assistant", "model": "claude-x", "content": content},
               "uuid": uuid, "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678",
               "timestamp": "2026-01-02T03:04:06Z"})
    };
    let first = json!({"parentUuid": null, "isSidechain": false, "type": "user",
                       "message": {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
                       "uuid": "u1", "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678", "cwd": "/w",
                       "timestamp": "2026-01-02T03:04:05.678Z"});
    let reply = call_line(
        "a1",
        "u1",
        json!([{"type": "text", "text": "ok"},
               {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.txt"}},
               {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]),
    );
    fs::write(&path, format!("{first}\n{reply}\n{{\"type\":\"user\",\"mess")).unwrap();
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    assert_eq!(loaded.messages.len(), 3);
    assert_eq!(loaded.messages[2].content, vec![interrupted("t1"), ContentBlock::text(INTERRUPTED_TOOLS)]);
    let mut writer = loaded.writer().unwrap();
    writer.record_repair(&report, &loaded.messages).unwrap();
    drop(writer);
    assert_eq!(load(&path).unwrap().messages, loaded.messages);
}

/// A transcript cut while its tools ran: the reply's calls `t1`…`t4`, then the journal of
/// `t1` (finished), `t2` (started only) and `t3` (finished), then the kill; `t4` never
/// started.
fn cut_in_execute_tools(store: &SessionStore) -> PathBuf {
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("Read four files")).unwrap();
    let mut reply = calls(&["t1", "t2", "t3", "t4"]);
    if let ContentBlock::ToolUse { name, .. } = &mut reply.content[2] {
        *name = "Bash".into();
    }
    w.append(&reply).unwrap();
    let journal = w.journal().unwrap();
    journal.started("t1", "Read", true);
    journal.started("t2", "Bash", false);
    journal.finished("t1", &result("t1"));
    journal.started("t3", "Read", true);
    journal.finished("t3", &result("t3"));
    w.path().to_path_buf()
}

/// A new transcript of `store` cut after the prompt "Read" and a reply calling `t1` and `t2`,
/// with its tool journal.
fn reading_t1_and_t2(store: &SessionStore) -> (TranscriptWriter, ToolJournal) {
    let mut w = store.create(Path::new(CWD)).unwrap();
    w.append(&user("Read")).unwrap();
    w.append(&calls(&["t1", "t2"])).unwrap();
    let journal = w.journal().unwrap();
    (w, journal)
}

#[test]
fn the_journal_replays_finished_results_and_tells_the_interrupted_from_the_never_started() {
    let (_dir, store) = store();
    let path = cut_in_execute_tools(&store);
    let mut loaded = load(&path).unwrap();
    assert!(!loaded.journal.is_empty());
    let report = loaded.repair();
    assert_eq!(
        loaded.messages[2],
        results(vec![
            result("t1"),
            interrupted("t2"),
            result("t3"),
            ContentBlock::tool_result("t4", super::repair::NOT_STARTED_RESULT, true),
            ContentBlock::text(INTERRUPTED_TOOLS),
        ])
    );
    assert_eq!(
        report.repairs,
        vec![Repair::RecoveredToolUses {
            message: 1,
            replayed: vec!["t1".into(), "t3".into()],
            interrupted: vec!["t2".into()],
            not_started: vec!["t4".into()],
            rerun: vec![],
            run: vec![],
            new_message: true,
        }]
    );
    // Recorded, the repaired history is what the file loads as.
    let mut w = loaded.writer().unwrap();
    w.record_repair(&report, &loaded.messages).unwrap();
    drop(w);
    assert_eq!(load(&path).unwrap().messages, loaded.messages);
    assert_chain(&path);
}

#[test]
fn calls_that_were_only_queued_never_started_even_when_no_call_did() {
    let (_dir, store) = store();
    let (w, journal) = reading_t1_and_t2(&store);
    // Killed while both waited (a permission question, their hooks): queued, never started.
    journal.queued("t1", "Read");
    journal.queued("t2", "Read");
    let mut loaded = load(w.path()).unwrap();
    drop(w);
    assert!(!loaded.journal.is_empty());
    let (report, pending) = loaded.repair_resuming();
    assert_eq!(
        report.repairs,
        vec![Repair::RecoveredToolUses {
            message: 1,
            replayed: vec![],
            interrupted: vec![],
            not_started: vec![],
            rerun: vec![],
            run: vec!["t1".into(), "t2".into()],
            new_message: false,
        }]
    );
    assert!(!pending.unwrap().interrupted);
}

#[test]
fn a_resuming_repair_leaves_the_calls_that_can_run_to_the_resumed_run() {
    let (_dir, store) = store();
    let path = cut_in_execute_tools(&store);
    let mut loaded = load(&path).unwrap();
    let before = loaded.messages.clone();
    let (report, pending) = loaded.repair_resuming();
    // The cut reply stays unanswered: the resumed run answers it.
    assert_eq!(loaded.messages, before);
    assert_eq!(report.write, RepairWrite::Nothing);
    assert_eq!(
        report.repairs,
        vec![Repair::RecoveredToolUses {
            message: 1,
            replayed: vec!["t1".into(), "t3".into()],
            interrupted: vec!["t2".into()],
            not_started: vec![],
            rerun: vec![],
            run: vec!["t4".into()],
            new_message: false,
        }]
    );
    let pending = pending.unwrap();
    assert!(pending.interrupted, "t2 may have changed something");
    let to_run = pending.to_run();
    let ids: Vec<&str> = to_run.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["t4"]);
    // The results go back in call order, whatever order the run gave them in.
    let merged = pending.merge(vec![ContentBlock::tool_result("t4", "ran now", false)]);
    assert_eq!(
        merged,
        vec![result("t1"), interrupted("t2"), result("t3"), ContentBlock::tool_result("t4", "ran now", false)]
    );
    // A call the run gave no result for is answered as interrupted.
    assert_eq!(pending.merge(vec![])[3], interrupted("t4"));
    assert_eq!(
        super::RecoveredCalls::of(&report.repairs).unwrap().describe(),
        "2 results replayed (t1, t3), 1 call interrupted, its outcome unknown (t2), 1 call never started, to run now (t4)"
    );
}

#[test]
fn a_read_only_call_that_did_not_finish_runs_again_and_a_settled_phase_is_answered_at_once() {
    let (_dir, store) = store();
    let (w, journal) = reading_t1_and_t2(&store);
    journal.started("t1", "Read", true);
    journal.started("t2", "Bash", false);
    journal.finished("t2", &result("t2"));
    let path = w.path().to_path_buf();
    drop(w);
    let mut loaded = load(&path).unwrap();
    let (report, pending) = loaded.repair_resuming();
    let pending = pending.unwrap();
    assert!(!pending.interrupted);
    assert_eq!(pending.calls[0].result, None);
    assert_eq!(pending.calls[1].result, Some(result("t2")));
    assert!(matches!(&report.repairs[..], [Repair::RecoveredToolUses { rerun, run, replayed, .. }]
        if rerun == &["t1"] && run.is_empty() && replayed == &["t2"]));

    // Once t1 finished too, nothing is left to run: the phase is answered at once.
    let w = loaded.writer().unwrap();
    w.journal().unwrap().finished("t1", &result("t1"));
    drop(w);
    let mut settled = load(&path).unwrap();
    let (report, pending) = settled.repair_resuming();
    assert_eq!(pending, None);
    assert_eq!(settled.messages[2], results(vec![result("t1"), result("t2")]));
    assert!(matches!(report.write, RepairWrite::Append(_)));
}

#[test]
fn a_kill_after_the_last_result_leaves_the_history_of_an_uninterrupted_run() {
    let (_dir, store) = store();
    let (w, journal) = reading_t1_and_t2(&store);
    for id in ["t1", "t2"] {
        journal.started(id, "Read", true);
    }
    // They finish out of call order; the results go back in call order.
    journal.finished("t2", &result("t2"));
    journal.finished("t1", &result("t1"));
    let path = w.path().to_path_buf();
    drop(w);
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    assert_eq!(loaded.messages[2], results(vec![result("t1"), result("t2")]));
    assert!(matches!(&report.repairs[..], [Repair::RecoveredToolUses { replayed, interrupted, not_started, .. }]
        if replayed.len() == 2 && interrupted.is_empty() && not_started.is_empty()));
}

#[test]
fn journal_lines_are_skipped_by_readers_of_messages_and_answer_only_calls_of_the_cut_reply() {
    let (_dir, store) = store();
    let path = cut_in_execute_tools(&store);
    let lines = raw_lines(&path);
    let journal: Vec<&Value> = lines.iter().filter(|l| l["type"] == "agentloop-tool").collect();
    assert_eq!(journal.len(), 5);
    assert_eq!(journal[0]["phase"], "start");
    assert_eq!(journal[0]["toolUseId"], "t1");
    assert_eq!(journal[0]["readOnly"], true);
    assert_eq!(journal[2]["result"]["content"], "contents of t1");
    assert!(journal.iter().all(|l| l.get("uuid").is_none() && l["sessionId"].is_string()));
    // The chain of message lines is unbroken by them.
    assert_chain(&path);
    // A history whose calls are all answered is left alone, whatever the journal says.
    let mut loaded = load(&path).unwrap();
    loaded.messages.push(results(vec![result("t1"), result("t2"), result("t3"), result("t4")]));
    assert_eq!(loaded.repair().repairs, vec![]);
}

/// Found by the fuzzer: an `end` line whose result block names another call, or holds no
/// `tool_result` at all, replays as the answer to its own call, or not at all.
#[test]
fn a_journaled_result_answers_the_call_its_line_names() {
    let (_dir, store) = store();
    let (w, journal) = reading_t1_and_t2(&store);
    journal.started("t1", "Read", true);
    journal.finished("t1", &result("t0"));
    journal.started("t2", "Read", true);
    journal.finished("t2", &ContentBlock::text("not a result"));
    let path = w.path().to_path_buf();
    drop(w);
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    assert_eq!(
        loaded.messages[2],
        results(vec![
            ContentBlock::tool_result("t1", "contents of t0", false),
            interrupted("t2"),
            ContentBlock::text(INTERRUPTED_TOOLS)
        ])
    );
    let mut again = loaded.messages.clone();
    assert_eq!(repair(&mut again, &loaded.journal).write, RepairWrite::Nothing);
    let mut w = loaded.writer().unwrap();
    w.record_repair(&report, &loaded.messages).unwrap();
    drop(w);
    assert_eq!(load(&path).unwrap().messages, loaded.messages);
}

/// What a transcript's replies cost is read back for `--max-budget-usd` across a resume: a
/// reply Claude Code wrote as several lines (one per block, each with the reply's id and
/// usage) counts once, a reply nobody prices counts nothing and is named.
#[test]
fn the_spend_of_recorded_replies_is_counted_once_per_reply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f1e2d4c-5b6a-4789-8abc-def012345678.jsonl");
    let reply = |uuid: &str, id: &str, model: &str, input: u64, block: Value| {
        json!({"type": "assistant", "uuid": uuid, "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678",
               "message": {"role": "assistant", "id": id, "model": model, "content": [block],
                           "usage": {"input_tokens": input, "output_tokens": 0, "service_tier": "standard",
                                     "server_tool_use": {"web_search_requests": 0}}}})
    };
    let lines = [
        json!({"type": "user", "uuid": "u1", "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678",
               "message": {"role": "user", "content": "go"}}),
        // Haiku 4.5: $1 per million prompt tokens; the reply's two lines are one reply.
        reply(
            "a1",
            "msg_1",
            "claude-haiku-4-5",
            1_000_000,
            json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        ),
        reply("a2", "msg_1", "claude-haiku-4-5", 1_000_000, json!({"type": "text", "text": "one"})),
        json!({"type": "user", "uuid": "u2", "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678",
               "message": {"role": "user", "content": "again"}}),
        reply("a3", "msg_2", "claude-haiku-4-5", 500_000, json!({"type": "text", "text": "two"})),
        json!({"type": "user", "uuid": "u3", "sessionId": "3f1e2d4c-5b6a-4789-8abc-def012345678",
               "message": {"role": "user", "content": "more"}}),
        reply("a4", "msg_3", "mystery-1", 500_000, json!({"type": "text", "text": "three"})),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&path, text).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.spent_usd, 1.5);
    assert_eq!(loaded.unpriced_models, ["mystery-1"]);
}
