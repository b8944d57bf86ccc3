use std::path::Path;

use serde_json::json;

use super::*;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A user directory and a project, both with an `agents/` directory.
fn dirs() -> (tempfile::TempDir, ConfigDirs) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("home/.claude")).unwrap();
    std::fs::create_dir_all(root.path().join("project")).unwrap();
    let dirs = ConfigDirs { user: Some(root.path().join("home/.claude")), project: root.path().join("project") };
    (root, dirs)
}

fn names(agents: &Agents) -> Vec<String> {
    agents.names()
}

#[test]
fn claude_codes_greeter_file_reads_as_its_definition() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/claude-code-protocol/agents/greeter.md");
    let (_root, dirs) = dirs();
    let text = std::fs::read_to_string(&fixture).unwrap();
    write(&dirs.project, ".claude/agents/greeter.md", &text);
    let (agents, warnings) = Agents::discover(&SettingSources::all(), &dirs, None).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(names(&agents), vec!["general-purpose", "greeter"]);
    let greeter = agents.get("greeter").unwrap();
    assert_eq!(greeter.description, "Reads greeting files and reports their text. Use for any greeting.txt question.");
    assert_eq!(greeter.tools, Some(vec!["Read".to_owned(), "Grep".to_owned()]));
    assert_eq!(greeter.model, AgentModel::Id("claude-haiku-4-5".into()));
    assert_eq!(greeter.prompt, "You are the greeter subagent. Read the file you are asked about and quote it.");
    assert_eq!((greeter.source, greeter.source.as_str()), (AgentSource::Project, "project"));
    assert_eq!(agents.iter().map(|a| a.source.as_str()).collect::<Vec<_>>(), vec!["built-in", "project"]);
    let parent: Vec<String> = ["Agent", "Bash", "Grep", "Read", "Write"].iter().map(|s| s.to_string()).collect();
    assert_eq!(greeter.child_tools(&parent), vec!["Grep", "Read"]);
}

#[test]
fn the_general_purpose_agent_has_every_tool_but_agent() {
    let agents = Agents::default();
    let gp = agents.get(GENERAL_PURPOSE).unwrap();
    assert_eq!((gp.source, &gp.model, gp.tools.as_ref()), (AgentSource::BuiltIn, &AgentModel::Inherit, None));
    let parent: Vec<String> = ["Agent", "Bash", "Read"].iter().map(|s| s.to_string()).collect();
    assert_eq!(gp.child_tools(&parent), vec!["Bash", "Read"]);
}

#[test]
fn later_sources_replace_earlier_ones_and_setting_sources_decide_which_files_load() {
    let (_root, dirs) = dirs();
    let agent = |description: &str| format!("---\ndescription: {description}\n---\nBody of {description}.\n");
    write(dirs.user.as_ref().unwrap(), "agents/reviewer.md", &agent("user reviewer"));
    write(dirs.user.as_ref().unwrap(), "agents/Planner.md", &agent("user planner"));
    write(&dirs.project, ".claude/agents/reviewer.md", &agent("project reviewer"));
    let flag = r#"{"reviewer": {"description": "flag reviewer", "prompt": "p"}, "explore": {"description": "flag explore", "prompt": "p", "tools": ["Read"], "maxTurns": 3}}"#;

    let (agents, _) = Agents::discover(&SettingSources::all(), &dirs, Some(flag)).unwrap();
    // Sorted ignoring case, as Claude Code lists them.
    assert_eq!(names(&agents), vec!["explore", "general-purpose", "Planner", "reviewer"]);
    assert_eq!(agents.get("reviewer").unwrap().description, "project reviewer");
    assert_eq!(agents.get("explore").unwrap().max_turns, Some(3));

    let user_only = SettingSources::parse(Some("user")).unwrap();
    let (agents, _) = Agents::discover(&user_only, &dirs, Some(flag)).unwrap();
    assert_eq!(agents.get("reviewer").unwrap().description, "flag reviewer", "the flag is above the user's files");

    let (agents, _) = Agents::discover(&SettingSources::none(), &dirs, None).unwrap();
    assert_eq!(names(&agents), vec!["general-purpose"]);

    // The SDK's definitions come last of all.
    let mut agents = Agents::discover(&SettingSources::all(), &dirs, None).unwrap().0;
    let sdk = json!({"reviewer": {"description": "sdk reviewer", "prompt": "Review.", "model": "inherit",
                                  "disallowedTools": ["Write"], "permissionMode": "plan"}});
    assert_eq!(agents.add_json("initialize.agents", &sdk, AgentSource::Sdk).unwrap(), Vec::<String>::new());
    let reviewer = agents.get("reviewer").unwrap();
    assert_eq!((reviewer.description.as_str(), reviewer.source), ("sdk reviewer", AgentSource::Sdk));
    assert_eq!((reviewer.permission_mode, &reviewer.disallowed_tools), (Some(Mode::Plan), &vec!["Write".to_owned()]));
}

#[test]
fn a_bad_definition_is_skipped_with_a_warning_naming_the_line() {
    let (_root, dirs) = dirs();
    write(&dirs.project, ".claude/agents/nodesc.md", "---\nname: nodesc\n---\nBody.\n");
    write(&dirs.project, ".claude/agents/turns.md", "---\ndescription: d\nmaxTurns: zero\n---\nBody.\n");
    write(&dirs.project, ".claude/agents/mode.md", "---\ndescription: d\npermissionMode: yolo\n---\n");
    write(&dirs.project, ".claude/agents/name.md", "---\nname: two words\ndescription: d\n---\n");
    write(&dirs.project, ".claude/agents/open.md", "---\ndescription: d\n");
    let (agents, warnings) = Agents::discover(&SettingSources::all(), &dirs, None).unwrap();
    assert_eq!(names(&agents), vec!["general-purpose"]);
    let p = |f: &str| dirs.project.join(".claude/agents").join(f).display().to_string();
    assert_eq!(
        warnings,
        vec![
            format!(
                "{}:3: `yolo` is not a permission mode (default, acceptEdits, plan, bypassPermissions); the agent is ignored",
                p("mode.md")
            ),
            format!(
                "{}:2: `two words` is not an agent name (letters, digits, `-`, `_`, `:`, `.`); the agent is ignored",
                p("name.md")
            ),
            format!(
                "{}:1: an agent needs a `description`: the model chooses agents by it; the agent is ignored",
                p("nodesc.md")
            ),
            format!(
                "{}:1: the frontmatter block opened here is never closed by a `---` line; the agent is ignored",
                p("open.md")
            ),
            format!("{}:3: `zero` is not a positive whole number of turns; the agent is ignored", p("turns.md")),
        ]
    );
}

#[test]
fn json_definitions_name_the_key_that_is_wrong() {
    let mut agents = Agents::default();
    let value = json!({"a": {"description": "d"}, "b": {"description": "d", "prompt": "p", "tools": "Read"},
                       "c": {"description": "d", "prompt": "p", "maxTurns": -1}});
    let warnings = agents.add_json("--agents", &value, AgentSource::Flag).unwrap();
    assert_eq!(
        warnings,
        vec![
            "--agents.a.prompt: an agent needs a `prompt`: its system prompt; the agent is ignored",
            "--agents.b.tools: must be a list of tool names; the agent is ignored",
            "--agents.c.maxTurns: `-1` is not a positive whole number of turns; the agent is ignored",
        ]
    );
    let refused = agents.add_json("--agents", &json!(["a"]), AgentSource::Flag).unwrap_err();
    assert_eq!(refused.to_string(), "--agents: must be an object of agent definitions by name");
    let (_root, dirs) = dirs();
    let bad = Agents::discover(&SettingSources::all(), &dirs, Some("{not json")).unwrap_err();
    assert!(bad.to_string().starts_with("--agents: not JSON: key must be a string at line 1 column 2"), "{bad}");
}

#[test]
fn model_aliases_resolve_and_ids_pass_through() {
    assert_eq!(resolve_model("inherit"), AgentModel::Inherit);
    assert_eq!(resolve_model(""), AgentModel::Inherit);
    assert_eq!(resolve_model("sonnet"), AgentModel::Id("claude-sonnet-4-5".into()));
    assert_eq!(resolve_model("claude-opus-4-1"), AgentModel::Id("claude-opus-4-1".into()));
}
