//! Transcripts as Claude Code's own tools read them, written by runs against a local Messages
//! API server with the store in Claude Code's directory (`CLAUDE_CONFIG_DIR`, no
//! `AGENTLOOP_HOME`): a usage reporter made for Claude Code (usage summed per `message.id` +
//! `requestId`, sessions counted per project directory) counts ours; the uuid of a message on
//! stdout is the uuid on disk; `--resume-session-at` and `--resume-drops-turn` cut a history as
//! Claude Code does; sessions an older agentloop wrote under `~/.agentloop` still resume.

use crate::mock_api;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// A scratch home with Claude Code's directory in it, and working directories.
struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        Dirs { root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn claude(&self) -> PathBuf {
        self.root.path().join("claude")
    }

    /// A working directory (canonical, as the slug is made from it).
    fn project(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }
}

/// agentloop with the store in `CLAUDE_CONFIG_DIR` (set when `claude` is given), `HOME` the
/// scratch home, no `AGENTLOOP_HOME`.
fn agentloop(dirs: &Dirs, claude: Option<&Path>, api: &MockApi, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in
        ["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "AGENTLOOP_HOME", "CLAUDE_CONFIG_DIR"]
    {
        command.env_remove(name);
    }
    if let Some(dir) = claude {
        command.env("CLAUDE_CONFIG_DIR", dir);
    }
    let out = command
        .env("HOME", dirs.home())
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .args(["--model", MODEL, "--cwd"])
        .arg(cwd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A text reply of message `id` to a prompt of `input_tokens` tokens (the mock counts
/// `len / 4 + 1` output tokens for the text).
fn reply(id: &str, input_tokens: u64, text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, input_tokens).id(id).text(text).stop("end_turn"))
}

/// The session id of a run's result line (the last line of json and stream-json output).
fn session_of(stdout: &str) -> String {
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    last["session_id"].as_str().unwrap().to_owned()
}

/// What a usage reporter made for Claude Code's transcripts reports for one project
/// directory: the sessions (transcripts with at least one usage entry), the token sums and the
/// entries counted (each reply once, however many transcripts hold it).
#[derive(Debug, Default, PartialEq, Eq)]
struct ProjectUsage {
    sessions: usize,
    input_tokens: u64,
    output_tokens: u64,
    entries: usize,
}

/// Read `<config>/projects/*/*.jsonl` as such a reporter does: a line is a usage entry when it
/// has a `timestamp` and `message.usage` with numeric `input_tokens` and `output_tokens`; an
/// entry whose `message.id` + `requestId` pair was seen before (in any file) adds no tokens.
fn usage_report(config: &Path) -> BTreeMap<String, ProjectUsage> {
    let mut seen = HashSet::new();
    let mut report = BTreeMap::new();
    for project in std::fs::read_dir(config.join("projects")).unwrap() {
        let project = project.unwrap().path();
        let usage: &mut ProjectUsage =
            report.entry(project.file_name().unwrap().to_string_lossy().into_owned()).or_default();
        for file in std::fs::read_dir(&project).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let mut usage_entries = 0;
            for line in std::fs::read_to_string(&file).unwrap().lines() {
                let Ok(entry) = serde_json::from_str::<Value>(line) else { continue };
                let tokens = &entry["message"]["usage"];
                let (Some(input), Some(output)) = (tokens["input_tokens"].as_u64(), tokens["output_tokens"].as_u64())
                else {
                    continue;
                };
                if !entry["timestamp"].is_string() {
                    continue;
                }
                usage_entries += 1;
                if let (Some(id), Some(request)) = (entry["message"]["id"].as_str(), entry["requestId"].as_str())
                    && !seen.insert(format!("{id}:{request}"))
                {
                    continue;
                }
                usage.input_tokens += input;
                usage.output_tokens += output;
                usage.entries += 1;
            }
            if usage_entries > 0 {
                usage.sessions += 1;
            }
        }
    }
    report
}

/// The lines of session `id`'s transcript under `config`.
fn lines_of(config: &Path, cwd: &Path, id: &str) -> Vec<Value> {
    let path = config.join("projects").join(slug(cwd)).join(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Claude Code's directory name for a working directory.
fn slug(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The prompts of a transcript that are stored as plain strings, as the Agent SDK's
/// `get_session_messages` shows them.
fn string_prompts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .filter_map(|l| l["message"]["content"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_usage_reporter_made_for_claude_code_counts_our_sessions_and_tokens() {
    let dirs = Dirs::new();
    let (a, b) = (dirs.project("alpha"), dirs.project("beta"));
    let claude = dirs.claude();
    let json = ["--output-format", "json"];

    let api = MockApi::start(vec![reply("msg_a1", 1000, "One.")]);
    let (code, out, err) = agentloop(&dirs, Some(&claude), &api, &a, &[&["-p", "one"][..], &json].concat());
    assert_eq!(code, 0, "{err}");
    let first = session_of(&out);
    let api = MockApi::start(vec![reply("msg_a2", 1100, "Two!")]);
    let (code, _, err) =
        agentloop(&dirs, Some(&claude), &api, &a, &[&["--resume", &first, "-p", "two"][..], &json].concat());
    assert_eq!(code, 0, "{err}");
    let api = MockApi::start(vec![reply("msg_a3", 1200, "Three.")]);
    let (code, _, err) = agentloop(&dirs, Some(&claude), &api, &a, &[&["-p", "three"][..], &json].concat());
    assert_eq!(code, 0, "{err}");
    // A fork copies the first session's entries: the reporter counts each reply once.
    let api = MockApi::start(vec![reply("msg_a4", 1300, "Four")]);
    let fork = ["--resume", &first, "--fork-session", "-p", "four"];
    let (code, _, err) = agentloop(&dirs, Some(&claude), &api, &a, &[&fork[..], &json].concat());
    assert_eq!(code, 0, "{err}");
    let api = MockApi::start(vec![reply("msg_b1", 900, "Bee.")]);
    let (code, _, err) = agentloop(&dirs, Some(&claude), &api, &b, &[&["-p", "bee"][..], &json].concat());
    assert_eq!(code, 0, "{err}");

    let report = usage_report(&claude);
    let expected = BTreeMap::from([
        (slug(&a), ProjectUsage { sessions: 3, input_tokens: 1000 + 1100 + 1200 + 1300, output_tokens: 8, entries: 4 }),
        (slug(&b), ProjectUsage { sessions: 1, input_tokens: 900, output_tokens: 2, entries: 1 }),
    ]);
    assert_eq!(report, expected);

    // The first session's reply lines, as the reporter and a transcript viewer read them.
    let lines = lines_of(&claude, &a, &first);
    let replies: Vec<&Value> = lines.iter().filter(|l| l["type"] == "assistant").collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["message"]["id"], "msg_a1");
    assert_eq!(replies[0]["requestId"], "req_mock_1");
    assert_eq!(replies[0]["message"]["type"], "message");
    assert_eq!(replies[0]["message"]["model"], MODEL);
    assert_eq!(replies[0]["message"]["stop_reason"], "end_turn");
    assert_eq!(
        replies[0]["message"]["usage"],
        json!({"input_tokens": 1000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 2})
    );
    assert_eq!(string_prompts(&lines), ["one", "two"]);
    assert!(!dirs.home().join(".claude").exists(), "CLAUDE_CONFIG_DIR decides, not HOME");
}

#[test]
fn the_uuid_of_a_message_on_stdout_is_its_uuid_on_disk() {
    let dirs = Dirs::new();
    let cwd = dirs.project("p");
    let api = MockApi::start(vec![reply("msg_1", 1000, "Hello there.")]);
    let args = ["-p", "hi", "--output-format", "stream-json", "--verbose"];
    let (code, out, err) = agentloop(&dirs, None, &api, &cwd, &args);
    assert_eq!(code, 0, "{err}");
    let printed: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let id = session_of(&out);
    // Without CLAUDE_CONFIG_DIR the store is ~/.claude, where Claude Code's tools look.
    let lines = lines_of(&dirs.home().join(".claude"), &cwd, &id);
    let on_disk = |kind: &str| lines.iter().find(|l| l["type"] == kind).unwrap().clone();
    let on_stdout = |kind: &str| printed.iter().find(|l| l["type"] == kind).unwrap().clone();
    for kind in ["user", "assistant"] {
        assert_eq!(on_stdout(kind)["uuid"], on_disk(kind)["uuid"], "{kind}");
    }
    let reply = on_stdout("assistant");
    assert_eq!(reply["message"]["id"], "msg_1");
    assert_eq!(reply["request_id"], "req_mock_1");
    assert_eq!(on_disk("user")["message"], json!({"role": "user", "content": "hi"}));
}

/// Two prompts in one session; its id, the uuid of turn one's reply, and turn two's prompt.
fn two_turns(dirs: &Dirs, cwd: &Path) -> (String, String, String) {
    let claude = dirs.claude();
    let api = MockApi::start(vec![reply("msg_1", 1000, "one")]);
    let (code, out, err) =
        agentloop(dirs, Some(&claude), &api, cwd, &["-p", "Reply with: one", "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    let id = session_of(&out);
    let api = MockApi::start(vec![reply("msg_2", 1000, "two")]);
    let (code, _, err) = agentloop(dirs, Some(&claude), &api, cwd, &["--resume", &id, "-p", "Reply with: two"]);
    assert_eq!(code, 0, "{err}");
    let lines = lines_of(&claude, cwd, &id);
    let keep = lines.iter().find(|l| l["type"] == "assistant").unwrap()["uuid"].as_str().unwrap().to_owned();
    let two = lines.iter().find(|l| l["message"]["content"] == "Reply with: two").unwrap()["uuid"].as_str().unwrap();
    (id, keep, two.to_owned())
}

/// The (role, text) of each message a request sent.
fn sent(api: &MockApi) -> Vec<(String, String)> {
    api.bodies()[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect::<String>();
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(r, t)| (r.to_string(), t.to_string())).collect()
}

#[test]
fn resume_session_at_forks_without_the_turn_it_drops() {
    let dirs = Dirs::new();
    let cwd = dirs.project("p");
    let claude = dirs.claude();
    let (id, keep, two) = two_turns(&dirs, &cwd);

    let api = MockApi::start(vec![reply("msg_3", 1000, "three")]);
    let args = [
        "--resume",
        &id,
        "--fork-session",
        "--resume-session-at",
        &keep,
        "--resume-drops-turn",
        &two,
        "-p",
        "Reply with: three",
        "--output-format",
        "json",
    ];
    let (code, out, err) = agentloop(&dirs, Some(&claude), &api, &cwd, &args);
    assert_eq!(code, 0, "{err}");
    let fork = session_of(&out);
    assert_ne!(fork, id);
    assert_eq!(sent(&api), pairs(&[("user", "Reply with: one"), ("assistant", "one"), ("user", "Reply with: three")]));
    assert_eq!(string_prompts(&lines_of(&claude, &cwd, &fork)), ["Reply with: one", "Reply with: three"]);
    assert_eq!(string_prompts(&lines_of(&claude, &cwd, &id)), ["Reply with: one", "Reply with: two"], "untouched");
    // The fork keeps the kept lines' uuids, as Claude Code's does.
    assert!(lines_of(&claude, &cwd, &fork).iter().any(|l| l["uuid"] == keep.as_str()));
}

#[test]
fn resume_session_at_refuses_to_drop_what_is_not_the_declared_turn() {
    let dirs = Dirs::new();
    let cwd = dirs.project("p");
    let claude = dirs.claude();
    let (id, keep, _) = two_turns(&dirs, &cwd);
    let api = MockApi::start(vec![]);
    let wrong = "5b1d8f0e-1111-4222-8333-944455556666";
    let args = [
        "--resume",
        &id,
        "--fork-session",
        "--resume-session-at",
        &keep,
        "--resume-drops-turn",
        wrong,
        "-p",
        "x",
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let (code, out, err) = agentloop(&dirs, Some(&claude), &api, &cwd, &args);
    assert_eq!(code, 2, "{err}");
    let result: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let two =
        lines_of(&claude, &cwd, &id).iter().find(|l| l["message"]["content"] == "Reply with: two").unwrap()["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
    let why = format!(
        "Resume rejected by --resume-drops-turn: resuming at {keep} would discard entries not attributable to turn \
{wrong}: range does not start with the declared turn prompt; first discarded entry 0 [type=user, uuid={two}]"
    );
    assert_eq!(
        (&result["type"], &result["subtype"], &result["is_error"]),
        (&json!("result"), &json!("error_during_execution"), &json!(true))
    );
    assert_eq!(result["errors"], json!([why]));
    assert_eq!(err, format!("agentloop: {why}\n"));
    assert_eq!(api.requests().len(), 0, "nothing was sent");
    let files = std::fs::read_dir(claude.join("projects").join(slug(&cwd))).unwrap().count();
    assert_eq!(files, 1, "nothing was forked");
    assert_eq!(string_prompts(&lines_of(&claude, &cwd, &id)), ["Reply with: one", "Reply with: two"]);

    let unknown = "0f1d8f0e-1111-4222-8333-944455556666";
    let args = ["--resume", &id, "--resume-session-at", unknown, "-p", "x", "--output-format", "json"];
    let (code, out, _) = agentloop(&dirs, Some(&claude), &api, &cwd, &args);
    assert_eq!(code, 2);
    let result: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(result["errors"], json!([format!("No message found with message.uuid of: {unknown}")]));
    let (code, _, err) =
        agentloop(&dirs, Some(&claude), &api, &cwd, &["--resume", &id, "--resume-drops-turn", wrong, "-p", "x"]);
    assert_eq!((code, err.as_str()), (2, "agentloop: --resume-drops-turn requires --resume-session-at\n"));
}

#[test]
fn resume_session_at_without_a_fork_goes_on_from_the_cut_in_the_same_session() {
    let dirs = Dirs::new();
    let cwd = dirs.project("p");
    let claude = dirs.claude();
    let (id, keep, two) = two_turns(&dirs, &cwd);
    let api = MockApi::start(vec![reply("msg_3", 1000, "three")]);
    let args = ["--resume", &id, "--resume-session-at", &keep, "--resume-drops-turn", &two, "-p", "Reply with: three"];
    let (code, _, err) = agentloop(&dirs, Some(&claude), &api, &cwd, &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(sent(&api), pairs(&[("user", "Reply with: one"), ("assistant", "one"), ("user", "Reply with: three")]));
    // The next resume goes on from the branch.
    let api = MockApi::start(vec![reply("msg_4", 1000, "four")]);
    let (code, _, err) = agentloop(&dirs, Some(&claude), &api, &cwd, &["--resume", &id, "-p", "Reply with: four"]);
    assert_eq!(code, 0, "{err}");
    let expected = [
        ("user", "Reply with: one"),
        ("assistant", "one"),
        ("user", "Reply with: three"),
        ("assistant", "three"),
        ("user", "Reply with: four"),
    ];
    assert_eq!(sent(&api), pairs(&expected));
    // For a reader that follows the chain from the last line: one, three, four (two is a
    // branch left behind).
    let lines = lines_of(&claude, &cwd, &id);
    let by_uuid: BTreeMap<&str, &Value> = lines.iter().filter_map(|l| Some((l["uuid"].as_str()?, l))).collect();
    let mut chain = Vec::new();
    let mut at = lines.iter().rev().find(|l| l["type"] == "user" || l["type"] == "assistant");
    while let Some(line) = at {
        chain.push(line["message"]["content"].as_str().map_or_else(|| "(reply)".to_owned(), str::to_owned));
        at = line["parentUuid"].as_str().and_then(|p| by_uuid.get(p).copied());
    }
    chain.reverse();
    assert_eq!(chain, ["Reply with: one", "(reply)", "Reply with: three", "(reply)", "Reply with: four", "(reply)"]);
}

#[test]
fn a_session_an_older_version_wrote_to_agentloop_home_still_resumes() {
    let dirs = Dirs::new();
    let cwd = dirs.project("p");
    let legacy = dirs.home().join(".agentloop");
    // An older agentloop: its store was $HOME/.agentloop (what AGENTLOOP_HOME names here).
    let mut command = Command::cargo_bin("agentloop").unwrap();
    let api = MockApi::start(vec![reply("msg_1", 1000, "one")]);
    let out = command
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("AGENTLOOP_HOME", &legacy)
        .env("HOME", dirs.home())
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .args(["--model", MODEL, "--cwd"])
        .arg(&cwd)
        .args(["-p", "one", "--output-format", "json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let id = session_of(&String::from_utf8_lossy(&out.stdout));

    let api = MockApi::start(vec![reply("msg_2", 1000, "two")]);
    let (code, _, err) = agentloop(&dirs, None, &api, &cwd, &["--resume", &id, "-p", "two"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(sent(&api), pairs(&[("user", "one"), ("assistant", "one"), ("user", "two")]));
    assert_eq!(string_prompts(&lines_of(&legacy, &cwd, &id)), ["one", "two"], "resumed where it is");
    let api = MockApi::start(vec![reply("msg_3", 1000, "three")]);
    let (code, _, err) = agentloop(&dirs, None, &api, &cwd, &["--continue", "-p", "three"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(string_prompts(&lines_of(&legacy, &cwd, &id)), ["one", "two", "three"], "--continue finds it");
}
