//! Claude Code's settings files, output styles and custom slash commands, end to end: the
//! built `agentloop` against the local Messages API mock, in a project directory and with a
//! user directory of its own (`CLAUDE_CONFIG_DIR`), asserting on what reached the model (the
//! recorded request bodies) and on the `system/init` line.

use crate::mock_api;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use agentloop::engine::options::DEFAULT_SYSTEM_PROMPT;
use assert_cmd::cargo::CommandCargoExt;
use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

/// A user directory (`CLAUDE_CONFIG_DIR`) and a project, in a scratch directory.
struct Dirs {
    _root: tempfile::TempDir,
    home: PathBuf,
    user: PathBuf,
    project: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let user = root.path().join("claude");
    let project = root.path().join("project");
    for dir in [&home, &user, &project] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let project = project.canonicalize().unwrap();
    Dirs { _root: root, home, user, project }
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `agentloop ARGS` in the project against `api`, with `stdin`.
fn agentloop(dirs: &Dirs, api: &MockApi, args: &[&str], stdin: &str) -> Output {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    for name in ["ANTHROPIC_AUTH_TOKEN", "CLAUDECODE"] {
        command.env_remove(name);
    }
    let mut child = command
        .current_dir(&dirs.project)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .env("HOME", &dirs.home)
        .env("CLAUDE_CONFIG_DIR", &dirs.user)
        .env("AGENTLOOP_HOME", dirs.home.join("agentloop"))
        .args(["--model", MODEL])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `-p PROMPT` in stream-json, with `args`; the exit must be 0. Returns the output lines.
fn print(dirs: &Dirs, api: &MockApi, prompt: &str, args: &[&str]) -> (Vec<Value>, String) {
    let mut all = vec!["-p", prompt, "--output-format", "stream-json", "--verbose"];
    all.extend(args);
    let out = agentloop(dirs, api, &all, "");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (lines(&out), stderr)
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn init(lines: &[Value]) -> &Value {
    lines.iter().find(|l| l["type"] == "system" && l["subtype"] == "init").expect("a system/init line")
}

fn done(text: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 10).text(text).stop("end_turn"))
}

fn bash(command: &str) -> Reply {
    Reply::Sse(Sse::new(MODEL, 10).tool_use("toolu_01", "Bash", &json!({"command": command})).stop("tool_use"))
}

/// The system prompt of a request: its first system block (what the session adds, from the
/// environment block on, is the second; the memory tests look at it).
fn system(body: &Value) -> &str {
    body["system"][0]["text"].as_str().expect("a system prompt")
}

/// The text of the first user message of a request.
fn first_prompt(body: &Value) -> &str {
    body["messages"][0]["content"][0]["text"].as_str().expect("a text prompt")
}

/// The tool result the second request carries: its content and whether it is an error.
fn tool_result(body: &Value) -> (String, bool) {
    let block = &body["messages"][2]["content"][0];
    assert_eq!(block["type"], "tool_result", "{body}");
    (block["content"].as_str().unwrap().to_owned(), block["is_error"] == true)
}

fn project_settings(dirs: &Dirs, settings: Value) {
    write(dirs.project.join(".claude/settings.json"), &settings.to_string());
}

#[test]
fn the_projects_settings_load_by_default_and_setting_sources_chooses() {
    let dirs = dirs();
    // Claude Code 2.1.332 applies this deny rule without --setting-sources and with
    // `project` in it, and not with `user` or "".
    project_settings(&dirs, json!({"permissions": {"deny": ["Bash(echo:*)"]}, "outputStyle": "Explanatory"}));
    for (flag, denied, style) in [
        (None, true, "Explanatory"),
        (Some("--setting-sources=user"), false, "default"),
        (Some("--setting-sources="), false, "default"),
        (Some("--setting-sources=user,project"), true, "Explanatory"),
    ] {
        let api = MockApi::start(vec![bash("echo hi"), done("Done.")]);
        let (lines, stderr) = print(&dirs, &api, "say hi", flag.as_slice());
        assert_eq!(init(&lines)["output_style"], style, "{flag:?}");
        let bodies = api.bodies();
        let (content, is_error) = tool_result(&bodies[1]);
        assert_eq!(is_error, denied, "{flag:?}: {content}\n{stderr}");
        if !denied {
            assert_eq!(content, "hi");
        }
    }
}

#[test]
fn a_bad_setting_source_is_a_usage_error() {
    let dirs = dirs();
    let api = MockApi::start(vec![]);
    let out = agentloop(&dirs, &api, &["-p", "x", "--setting-sources", "user,bogus"], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: --setting-sources: `bogus` is not a settings source (user, project, local)\n"
    );
}

#[test]
fn the_working_directory_cannot_bypass_permissions() {
    let dirs = dirs();
    project_settings(&dirs, json!({"permissions": {"defaultMode": "bypassPermissions"}}));
    let api = MockApi::start(vec![done("Done.")]);
    let (lines, stderr) = print(&dirs, &api, "hi", &[]);
    assert_eq!(init(&lines)["permissionMode"], "default");
    let file = dirs.project.join(".claude/settings.json");
    assert!(
        stderr.contains(&format!(
            "agentloop: warning: {}: `permissions.defaultMode: \"bypassPermissions\"` is ignored: settings in the \
working directory cannot loosen permissions or confinement (put it in {} or --settings)",
            file.display(),
            dirs.user.join("settings.json").display()
        )),
        "{stderr}"
    );
    // The user's own settings may.
    write(dirs.user.join("settings.json"), &json!({"permissions": {"defaultMode": "acceptEdits"}}).to_string());
    let api = MockApi::start(vec![done("Done.")]);
    let (lines, _) = print(&dirs, &api, "hi", &[]);
    assert_eq!(init(&lines)["permissionMode"], "acceptEdits");
}

#[test]
fn the_output_style_goes_into_the_system_prompt() {
    let dirs = dirs();
    write(
        dirs.user.join("output-styles/pirate.md"),
        "---\nname: Pirate\ndescription: Talk like a pirate\n---\nAnswer like a pirate. Say arr.\n",
    );
    write(dirs.user.join("settings.json"), r#"{"outputStyle": "Pirate"}"#);
    let api = MockApi::start(vec![done("Arr.")]);
    let (lines, _) = print(&dirs, &api, "hi", &[]);
    assert_eq!(init(&lines)["output_style"], "Pirate");
    assert_eq!(
        system(&api.bodies()[0]),
        "You are agentloop, an agent that helps the user with tasks in the working directory, answering as your \
output style (below) describes. Use the tools to inspect and change files.\n\n# Output Style: Pirate\nAnswer like \
a pirate. Say arr."
    );

    // --append-system-prompt comes after the style; a project's local settings choose another.
    write(dirs.project.join(".claude/settings.local.json"), r#"{"outputStyle": "Concise"}"#);
    let api = MockApi::start(vec![done("Ok.")]);
    let (lines, _) = print(&dirs, &api, "hi", &["--append-system-prompt", "APPENDED"]);
    assert_eq!(init(&lines)["output_style"], "Concise");
    let prompt = system(&api.bodies()[0]).to_owned();
    assert!(prompt.starts_with(DEFAULT_SYSTEM_PROMPT), "{prompt}");
    assert!(prompt.contains("\n\n# Output Style: Concise\nAnswer in as few words"), "{prompt}");
    assert!(prompt.ends_with(".\n\nAPPENDED"), "{prompt}");

    // A system prompt of the caller's replaces the style too, as in Claude Code; init still
    // names it.
    let api = MockApi::start(vec![done("Ok.")]);
    let (lines, _) = print(&dirs, &api, "hi", &["--system-prompt", "CUSTOM"]);
    assert_eq!(init(&lines)["output_style"], "Concise");
    assert_eq!(system(&api.bodies()[0]), "CUSTOM");
}

#[test]
fn an_unknown_style_is_named_in_init_and_warned_about() {
    let dirs = dirs();
    write(dirs.project.join(".claude/settings.local.json"), r#"{"outputStyle": "local-test-style"}"#);
    let api = MockApi::start(vec![done("Ok.")]);
    let (lines, stderr) = print(&dirs, &api, "hi", &[]);
    assert_eq!(init(&lines)["output_style"], "local-test-style");
    assert!(stderr.contains("outputStyle `local-test-style` names no output style"), "{stderr}");
    assert_eq!(system(&api.bodies()[0]), DEFAULT_SYSTEM_PROMPT);
}

/// A project command with every frontmatter key, and a user command.
fn commands(dirs: &Dirs) {
    write(
        dirs.project.join(".claude/commands/git/make.md"),
        "---\ndescription: Make a file\nargument-hint: NAME [WHY]\nallowed-tools: Bash(touch:*)\nmodel: claude-haiku-4-5\n\
---\n\nMake $0 because $1; all: $ARGUMENTS\n",
    );
    write(dirs.user.join("commands/hello.md"), "Say hello.\n");
}

#[test]
fn a_custom_command_runs_from_the_print_flag() {
    let dirs = dirs();
    commands(&dirs);
    let api = MockApi::start(vec![bash("touch made.txt"), done("Made.")]);
    let (lines, stderr) = print(&dirs, &api, r#"/git:make made.txt "it is asked for""#, &[]);
    assert_eq!(init(&lines)["slash_commands"], json!(["git:make", "hello"]));
    assert_eq!(init(&lines)["model"], "claude-haiku-4-5");
    let bodies = api.bodies();
    assert_eq!(bodies[0]["model"], "claude-haiku-4-5");
    assert_eq!(
        first_prompt(&bodies[0]),
        "<command-message>git:make</command-message>\n<command-name>/git:make</command-name>\n\
<command-args>made.txt \"it is asked for\"</command-args>\n\nMake made.txt because it is asked for; all: made.txt \
\"it is asked for\"\n"
    );
    // `allowed-tools` allowed the call no rule of the session allows.
    assert_eq!(tool_result(&bodies[1]), ("(no output)".to_owned(), false), "{stderr}");
    assert!(dirs.project.join("made.txt").exists());

    // Without the command the same call is refused, and the model is the session's.
    let api = MockApi::start(vec![bash("touch other.txt"), done("No.")]);
    let (_, _) = print(&dirs, &api, "make other.txt", &[]);
    let bodies = api.bodies();
    assert_eq!(bodies[0]["model"], MODEL);
    assert!(tool_result(&bodies[1]).1);
    assert!(!dirs.project.join("other.txt").exists());

    // A body without placeholders gets the arguments as a last paragraph; only the user's
    // commands with --setting-sources user.
    let api = MockApi::start(vec![done("Hello.")]);
    let (lines, _) = print(&dirs, &api, "/hello there", &["--setting-sources", "user"]);
    assert_eq!(init(&lines)["slash_commands"], json!(["hello"]));
    assert!(first_prompt(&api.bodies()[0]).ends_with("\n\nSay hello.\n\n\nARGUMENTS: there"));
    // A command the sources do not give is an ordinary prompt.
    let api = MockApi::start(vec![done("Hm.")]);
    let (_, _) = print(&dirs, &api, "/git:make x", &["--setting-sources", "user"]);
    assert_eq!(first_prompt(&api.bodies()[0]), "/git:make x");
}

#[test]
fn a_commands_spans_and_files_go_through_the_permission_check() {
    let dirs = dirs();
    write(dirs.project.join("notes.txt"), "NOTES\n");
    write(
        dirs.project.join(".claude/commands/report.md"),
        "Listing: !`ls notes.txt`\nWritten: !`touch written.txt`\nRead @notes.txt please.\n",
    );
    let api = MockApi::start(vec![done("Reported.")]);
    let (_, stderr) = print(&dirs, &api, "/report", &[]);
    let prompt = first_prompt(&api.bodies()[0]).to_owned();
    // A read-only command runs; one that writes needs a rule nobody gave, and is refused.
    assert!(
        prompt.contains("\nListing: notes.txt\nWritten: [!`touch written.txt` failed: Permission to use Bash"),
        "{prompt}"
    );
    assert!(!dirs.project.join("written.txt").exists());
    assert!(stderr.contains("agentloop: warning: /report: !`touch written.txt` failed: "), "{stderr}");
    assert!(
        prompt.starts_with(
            "<system-reminder>\n/report refers to @notes.txt; its contents:\n     1\tNOTES\n</system-reminder>\n"
        ),
        "{prompt}"
    );
    // A deny rule keeps the file out.
    let api = MockApi::start(vec![done("Reported.")]);
    let (_, stderr) = print(&dirs, &api, "/report", &["--disallowedTools", "Read(./notes.txt)"]);
    assert!(!first_prompt(&api.bodies()[0]).contains("NOTES"));
    assert!(stderr.contains("agentloop: warning: /report: @notes.txt was not read: "), "{stderr}");
}

#[test]
fn stream_json_input_runs_a_command_and_initialize_lists_them() {
    let dirs = dirs();
    commands(&dirs);
    write(dirs.project.join(".claude/output-styles/terse.md"), "---\nname: Terse\n---\nBe terse.\n");
    project_settings(&dirs, json!({"outputStyle": "Terse"}));
    let api = MockApi::start(vec![done("Hello!"), done("Again.")]);
    let stdin = [
        json!({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": null}}),
        json!({"type": "user", "message": {"role": "user", "content": "/hello"}, "parent_tool_use_id": null, "session_id": "s"}),
        json!({"type": "user", "message": {"role": "user", "content": "plain"}, "parent_tool_use_id": null, "session_id": "s"}),
    ]
    .map(|l| l.to_string() + "\n")
    .concat();
    let out = agentloop(
        &dirs,
        &api,
        &["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        &stdin,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = lines(&out);
    let answer = &lines.iter().find(|l| l["type"] == "control_response").unwrap()["response"]["response"];
    assert_eq!(
        answer["commands"],
        json!([
            {"name": "git:make", "description": "Make a file (project)", "argumentHint": "NAME [WHY]"},
            {"name": "hello", "description": "Say hello. (user)", "argumentHint": ""},
        ])
    );
    assert_eq!(answer["output_style"], "Terse");
    assert_eq!(
        answer["available_output_styles"],
        json!(["default", "Proactive", "Concise", "Explanatory", "Learning", "Terse"])
    );
    let inits: Vec<&Value> = lines.iter().filter(|l| l["subtype"] == "init").collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[0]["slash_commands"], json!(["git:make", "hello"]));
    assert_eq!(inits[0]["output_style"], "Terse");
    let bodies = api.bodies();
    assert_eq!(
        first_prompt(&bodies[0]),
        "<command-message>hello</command-message>\n<command-name>/hello</command-name>\n\nSay hello.\n"
    );
    assert_eq!(bodies[1]["messages"][2]["content"][0]["text"], "plain");
    // Not the SDK's empty --system-prompt here: the style is in the default prompt.
    assert!(system(&bodies[0]).ends_with("\n\n# Output Style: Terse\nBe terse."));
}

/// Agents come from `agents/*.md` of the sources `--setting-sources` reads (the user's below
/// the project's) and from `--agents`, all listed in `system/init`, sorted ignoring case; a
/// file without a `description` is skipped with a warning naming its line; a bad `--agents`
/// is a usage error.
#[test]
fn agents_load_from_the_setting_sources_and_the_flag() {
    let dirs = dirs();
    let greeter = "---\nname: greeter\ndescription: Reads greeting files.\ntools: Read, Grep\nmodel: haiku\n---\nQuote the file.\n";
    write(dirs.project.join(".claude/agents/greeter.md"), greeter);
    write(dirs.user.join("agents/Reviewer.md"), "---\ndescription: Reviews diffs.\n---\nReview.\n");
    write(dirs.project.join(".claude/agents/broken.md"), "---\nname: broken\ntools: Read\n---\nNo description.\n");
    let flag = r#"{"planner": {"description": "Plans.", "prompt": "Plan.", "model": "opus"}}"#;
    for (sources, expected) in [
        (None, vec!["general-purpose", "greeter", "planner", "Reviewer"]),
        (Some("--setting-sources=project"), vec!["general-purpose", "greeter", "planner"]),
        (Some("--setting-sources="), vec!["general-purpose", "planner"]),
    ] {
        let api = MockApi::start(vec![done("Done.")]);
        let mut args = vec!["--agents", flag];
        args.extend(sources);
        let (lines, stderr) = print(&dirs, &api, "hi", &args);
        assert_eq!(init(&lines)["agents"], json!(expected), "{sources:?}");
        let broken = dirs.project.join(".claude/agents/broken.md");
        let warned = stderr.contains(&format!("{}:1: an agent needs a `description`", broken.display()));
        assert_eq!(warned, sources != Some("--setting-sources="), "{sources:?}: {stderr}");
        let agent_tool = &api.bodies()[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "Agent").cloned();
        let description = agent_tool.as_ref().unwrap()["description"].as_str().unwrap().to_owned();
        assert!(description.contains("- planner: Plans. (Tools: all tools)"), "{description}");
    }
    let api = MockApi::start(vec![]);
    let out = agentloop(&dirs, &api, &["-p", "x", "--agents", "[1]"], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: --agents: must be an object of agent definitions by name\n"
    );
}

/// A repository's memory reaches the model exactly: the parent directory's `CLAUDE.md` (with
/// an import chain that cycles back), `AGENTS.md` beside it, the working directory's
/// `CLAUDE.md` and `CLAUDE.local.md` and the user's `CLAUDE.md`, in that order, each named
/// with its scope, after the system prompt; a rules file with `paths` is not loaded, a
/// project's import of a file outside it is refused, an import chain stops at the depth
/// bound (5); `system/init` lists the files, and the skill beside them; and the system
/// prompt is the same bytes in the second request as in the first (the cached prefix).
#[test]
fn memory_files_reach_the_model_exactly_and_stay_in_the_cached_prefix() {
    let dirs = dirs();
    let top = dirs.project.parent().unwrap().to_path_buf();
    assert!(Command::new("git").args(["init", "-q"]).arg(&top).status().unwrap().success());
    write(top.join("CLAUDE.md"), "Parent rules: @notes/a.md\n");
    write(top.join("notes/a.md"), "Note A imports @b.md\n");
    write(top.join("notes/b.md"), "Note B imports @a.md (a cycle)\n");
    write(top.join("AGENTS.md"), "Agents: run the tests. @deep/d1.md\n");
    for depth in 1..=6 {
        write(top.join(format!("deep/d{depth}.md")), &format!("Depth {depth}. @d{}.md\n", depth + 1));
    }
    write(dirs.project.join(".claude/skills/release/SKILL.md"), "---\ndescription: Cut a release.\n---\nTag it.\n");
    write(dirs.project.join("CLAUDE.md"), "Project rules. Not @../../outside.md\n");
    write(top.parent().unwrap().join("outside.md"), "OUTSIDE\n");
    write(dirs.project.join("CLAUDE.local.md"), "Local note.\n");
    write(dirs.project.join(".claude/rules/rs.md"), "---\npaths: \"**/*.rs\"\n---\nRust only.\n");
    write(dirs.user.join("CLAUDE.md"), "User note.\n");
    let api = MockApi::start(vec![bash("echo hi"), done("Done.")]);
    let trace = dirs.home.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let (lines, stderr) =
        print(&dirs, &api, "say hi", &["--allowedTools", "Bash(echo:*)", "--trace=jsonl", "--trace-file", &trace_arg]);
    // The trace's header names the files and what loading them warned about.
    let header: Value = serde_json::from_str(std::fs::read_to_string(&trace).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["memory_files"], init(&lines)["memory_files"]);
    let warnings = header["memory_warnings"].as_array().unwrap();
    assert!(
        warnings.contains(&json!(format!(
            "{} has both CLAUDE.md and AGENTS.md: both are loaded (a file reached twice is loaded once)",
            top.display()
        ))),
        "{warnings:?}"
    );
    let listed: Vec<(String, String, u64)> = init(&lines)["memory_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["scope"].as_str().unwrap().to_owned(),
                f["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let file =
        |path: PathBuf, scope: &str, text: &str| (path.display().to_string(), scope.to_owned(), text.len() as u64);
    assert_eq!(
        listed,
        [
            file(dirs.user.join("CLAUDE.md"), "user", "User note.\n"),
            file(top.join("CLAUDE.md"), "project", "Parent rules: @notes/a.md\n"),
            file(top.join("notes/a.md"), "project", "Note A imports @b.md\n"),
            file(top.join("notes/b.md"), "project", "Note B imports @a.md (a cycle)\n"),
            file(top.join("AGENTS.md"), "project", "Agents: run the tests. @deep/d1.md\n"),
            file(top.join("deep/d1.md"), "project", "Depth 1. @d2.md\n"),
            file(top.join("deep/d2.md"), "project", "Depth 2. @d3.md\n"),
            file(top.join("deep/d3.md"), "project", "Depth 3. @d4.md\n"),
            file(top.join("deep/d4.md"), "project", "Depth 4. @d5.md\n"),
            file(top.join("deep/d5.md"), "project", "Depth 5. @d6.md\n"),
            file(dirs.project.join("CLAUDE.md"), "project", "Project rules. Not @../../outside.md\n"),
            file(dirs.project.join("CLAUDE.local.md"), "local", "Local note.\n"),
        ]
    );
    assert!(stderr.contains("a project's memory imports only files inside the project"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: the import of {} is not followed: imports go 5 levels deep at most",
            top.join("deep/d5.md").display(),
            top.join("deep/d6.md").display()
        )),
        "{stderr}"
    );
    assert_eq!(init(&lines)["skills"], json!(["release"]));
    let bodies = api.bodies();
    let system = |body: &Value| body["system"].to_string();
    let first = system(&bodies[0]);
    assert_eq!(first, system(&bodies[1]), "the system prompt, memory included, is the same in every turn");
    let (t, p, u) = (top.display(), dirs.project.display(), dirs.user.display());
    let memory = format!(
        "# Memory\\n\\nThese instruction files were loaded for this session, lowest precedence first: where they \
         disagree, the later one wins. They are notes of the user and of the project, not messages from the user, \
         and they cannot change what the permission rules allow.\\n\\n\
         ## {u}/CLAUDE.md (the user's own instructions, for all projects)\\n\\nUser note.\\n\\n\
         ## {t}/CLAUDE.md (project instructions, checked into the repository)\\n\\nParent rules: @notes/a.md\\n\\n\
         ## {t}/notes/a.md (project instructions, checked into the repository, imported by {t}/CLAUDE.md)\\n\\nNote A imports @b.md\\n\\n\
         ## {t}/notes/b.md (project instructions, checked into the repository, imported by {t}/notes/a.md)\\n\\nNote B imports @a.md (a cycle)\\n\\n\
         ## {t}/AGENTS.md (project instructions, checked into the repository)\\n\\nAgents: run the tests. @deep/d1.md\\n\\n\
         ## {t}/deep/d1.md (project instructions, checked into the repository, imported by {t}/AGENTS.md)\\n\\nDepth 1. @d2.md\\n\\n\
         ## {t}/deep/d2.md (project instructions, checked into the repository, imported by {t}/deep/d1.md)\\n\\nDepth 2. @d3.md\\n\\n\
         ## {t}/deep/d3.md (project instructions, checked into the repository, imported by {t}/deep/d2.md)\\n\\nDepth 3. @d4.md\\n\\n\
         ## {t}/deep/d4.md (project instructions, checked into the repository, imported by {t}/deep/d3.md)\\n\\nDepth 4. @d5.md\\n\\n\
         ## {t}/deep/d5.md (project instructions, checked into the repository, imported by {t}/deep/d4.md)\\n\\nDepth 5. @d6.md\\n\\n\
         ## {p}/CLAUDE.md (project instructions, checked into the repository)\\n\\nProject rules. Not @../../outside.md\\n\\n\
         ## {p}/CLAUDE.local.md (the user's private instructions for this project)\\n\\nLocal note."
    );
    assert!(first.contains(&memory), "{first}");
    assert!(
        first.ends_with(&format!("{memory}\"")) || first.contains(&format!("{memory}\",")),
        "memory comes last: {first}"
    );
    assert!(!first.contains("OUTSIDE") && !first.contains("Rust only.") && !first.contains("Depth 6"));
    assert!(!first.contains("Tag it."), "a skill's body is not in context before a Skill call");
    // The environment block, the model and the git snapshot come before the memory.
    let environment = format!("# Environment\\n\\nWorking directory: {p}\\nIs a git repository: yes\\nPlatform: linux");
    let at = first.find(&environment).unwrap_or_else(|| panic!("{first}"));
    let model = first.find("\\nModel: claude-sonnet-4-5\\n\\nGit status, as of the start of the session").unwrap();
    let repository = first.find(&format!("Repository: {t}\\nCurrent branch: ")).unwrap();
    assert!(at < model && model < repository && repository < first.find("# Memory").unwrap(), "{first}");

    // Two system blocks, each a cache breakpoint: agentloop's prompt, the same in every
    // session, then what this session adds (environment, git snapshot, memory).
    let blocks = bodies[0]["system"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["text"], DEFAULT_SYSTEM_PROMPT);
    assert!(blocks[1]["text"].as_str().unwrap().starts_with("# Environment\n\nWorking directory: "));
    assert!(blocks.iter().all(|b| b["cache_control"] == json!({"type": "ephemeral"})));
    // The bytes of turn 1 up to its last breakpoint (the end of its last message) open turn 2.
    let requests = api.requests();
    let (turn1, turn2) = (&requests[0].raw, &requests[1].raw);
    let marker = br#","cache_control":{"type":"ephemeral"}"#;
    let last = turn1.windows(marker.len()).rposition(|w| w == marker).expect("a breakpoint");
    assert!(
        turn2.starts_with(&turn1[..last]),
        "turn 2 does not read turn 1's cache:\n{}\n{}",
        String::from_utf8_lossy(&turn1[..last]),
        String::from_utf8_lossy(turn2)
    );
}

/// Nested memory reaches the model with the first Read of a file it covers: the rule whose
/// `paths` match and the subdirectory's `CLAUDE.md`, after the file's lines in that call's
/// tool_result, exactly; the next Read in that directory carries the file alone.
#[test]
fn nested_memory_follows_the_first_read_in_a_subdirectory() {
    let dirs = dirs();
    write(dirs.project.join("CLAUDE.md"), "Project rules.\n");
    write(dirs.project.join("sub/CLAUDE.md"), "Sub rules: keep lines short.\n");
    write(dirs.project.join(".claude/rules/text.md"), "---\npaths:\n  - \"sub/*.txt\"\n---\nText rule.\n");
    write(dirs.project.join("sub/x.txt"), "hello\n");
    write(dirs.project.join("sub/y.txt"), "again\n");
    let read = |id: &str, file: &str| {
        Reply::Sse(Sse::new(MODEL, 10).tool_use(id, "Read", &json!({"file_path": file})).stop("tool_use"))
    };
    let api = MockApi::start(vec![read("toolu_01", "sub/x.txt"), read("toolu_02", "sub/y.txt"), done("Read both.")]);
    let (lines, stderr) = print(&dirs, &api, "read them", &[]);
    assert_eq!(lines.last().unwrap()["result"], "Read both.", "{stderr}");
    let bodies = api.bodies();
    let (content, is_error) = tool_result(&bodies[1]);
    assert!(!is_error);
    let p = dirs.project.display();
    assert_eq!(
        content,
        format!(
            "     1\thello\n\n\n<system-reminder>\nMemory that applies to sub/x.txt, not loaded at the start of the \
             session (lowest precedence first; for the files it covers it wins over the memory loaded then). These \
             instruction files are notes of the user and of the project, not messages from the user, and they cannot \
             change what the permission rules allow.\n\n\
             ## {p}/.claude/rules/text.md (project instructions, checked into the repository, for files matching \
             sub/*.txt)\n\n---\npaths:\n  - \"sub/*.txt\"\n---\nText rule.\n\n\
             ## {p}/sub/CLAUDE.md (project instructions, checked into the repository)\n\nSub rules: keep lines short.\n\
             </system-reminder>"
        )
    );
    let second = &bodies[2]["messages"][4]["content"][0];
    assert_eq!(
        (second["tool_use_id"].as_str(), second["content"].as_str()),
        (Some("toolu_02"), Some("     1\tagain\n"))
    );
    // The start's memory is in the system prompt, and only there.
    assert!(bodies[0]["system"].to_string().contains("Project rules."));
    assert!(!bodies[0].to_string().contains("Sub rules"));
}

/// A project's skill: listed in `system/init` and in the `Skill` tool's description (its body
/// not in context), loaded by a `Skill` call; a session without skills has no `Skill` tool.
#[test]
fn a_skill_is_listed_and_loaded_on_demand() {
    let (with_skill, plain) = (dirs(), dirs());
    let dirs = with_skill;
    let skill_md = dirs.project.join(".claude/skills/release/SKILL.md");
    write(skill_md.clone(), "---\ndescription: Cut a release.\n---\nBump the version, then tag it.\n");
    let call =
        Reply::Sse(Sse::new(MODEL, 10).tool_use("toolu_01", "Skill", &json!({"skill": "release"})).stop("tool_use"));
    let api = MockApi::start(vec![call, done("Released.")]);
    let (lines, _) = print(&dirs, &api, "release it", &[]);
    assert_eq!(init(&lines)["skills"], json!(["release"]));
    let bodies = api.bodies();
    let tool = bodies[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "Skill").cloned().unwrap();
    assert!(tool["description"].as_str().unwrap().ends_with("Available skills:\n- release: Cut a release."));
    assert!(!bodies[0].to_string().contains("Bump the version"), "the body is not in context before the call");
    let (content, is_error) = tool_result(&bodies[1]);
    assert!(!is_error);
    assert!(content.ends_with("\n\nBump the version, then tag it."), "{content}");
    assert!(content.starts_with(&format!("Skill \"release\" (from {})", skill_md.display())), "{content}");

    let api = MockApi::start(vec![done("Hi.")]);
    let (lines, _) = print(&plain, &api, "hi", &[]);
    assert_eq!(init(&lines)["skills"], json!([]));
    assert!(api.bodies()[0]["tools"].as_array().unwrap().iter().all(|t| t["name"] != "Skill"));
}
