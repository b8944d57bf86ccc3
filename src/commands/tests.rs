use super::*;

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The commands of the recording made with Claude Code 2.1.332: project commands (one in a
/// subdirectory, one two levels down, one without frontmatter), a user command and a name
/// both have.
fn fixture() -> (tempfile::TempDir, ConfigDirs) {
    let root = tempfile::tempdir().unwrap();
    let dirs = ConfigDirs { user: Some(root.path().join("claude")), project: root.path().join("project") };
    let project = dirs.project.join(".claude/commands");
    let user = dirs.user.clone().unwrap().join("commands");
    write(
        project.join("testcmd.md"),
        "---\ndescription: Test command\nargument-hint: \"[first] [second]\"\nmodel: claude-haiku-4-5\n---\n\n\
Args: $ARGUMENTS\n",
    );
    write(
        project.join("git/commit.md"),
        "---\ndescription: Commit things\nallowed-tools: Bash(git add:*), Bash(git commit:*)\n---\nCommit $ARGUMENTS\n",
    );
    write(project.join("deep/er/nest.md"), "Nested deep body\n");
    write(project.join("plainc.md"), "\n\nNo frontmatter body $ARGUMENTS\n");
    write(project.join("dup.md"), "---\ndescription: proj\n---\nPROJECT dup\n");
    write(project.join("notes.txt"), "not a command");
    write(user.join("usercmd.md"), "---\ndescription: user one\n---\nUser command body\n");
    write(user.join("dup.md"), "---\ndescription: user dup\n---\nUSER dup\n");
    (root, dirs)
}

#[test]
fn files_name_commands_with_subdirectories_joined_by_colons() {
    let (_root, dirs) = fixture();
    let (commands, warnings) = Commands::discover(&SettingSources::all(), &dirs);
    assert_eq!(warnings, Vec::<String>::new());
    // The order and names Claude Code 2.1.332 lists them in.
    assert_eq!(commands.slash_commands(), ["deep:er:nest", "dup", "git:commit", "plainc", "testcmd", "usercmd"]);
    let testcmd = commands.get("testcmd").unwrap();
    assert_eq!(
        (testcmd.description.as_str(), testcmd.argument_hint.as_str(), testcmd.model.as_deref()),
        ("Test command", "[first] [second]", Some("claude-haiku-4-5"))
    );
    assert_eq!(testcmd.body, "Args: $ARGUMENTS\n");
    assert_eq!(commands.get("git:commit").unwrap().allowed_tools, ["Bash(git add:*)", "Bash(git commit:*)"]);
    assert_eq!(commands.get("plainc").unwrap().description, "No frontmatter body $ARGUMENTS");
    // The user's command wins over the project's.
    let dup = commands.get("dup").unwrap();
    assert_eq!((dup.body.as_str(), dup.source), ("USER dup\n", SettingSource::User));
}

#[test]
fn only_the_chosen_sources_give_commands() {
    let (_root, dirs) = fixture();
    let names = |flag| Commands::discover(&SettingSources::parse(Some(flag)).unwrap(), &dirs).0.slash_commands();
    assert_eq!(names("user"), ["dup", "usercmd"]);
    assert_eq!(names("project"), ["deep:er:nest", "dup", "git:commit", "plainc", "testcmd"]);
    assert_eq!(names("local"), Vec::<String>::new());
    assert_eq!(names(""), Vec::<String>::new());
    assert_eq!(
        Commands::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs).0.get("dup").unwrap().body,
        "PROJECT dup\n"
    );
}

#[test]
fn the_sdk_gets_claude_codes_entries() {
    let (_root, dirs) = fixture();
    let (commands, _) = Commands::discover(&SettingSources::all(), &dirs);
    let entries = commands.initialize_entries();
    assert_eq!(entries[1], json!({"name": "dup", "description": "user dup (user)", "argumentHint": ""}));
    assert_eq!(
        entries[4],
        json!({"name": "testcmd", "description": "Test command (project)", "argumentHint": "[first] [second]"})
    );
}

#[test]
fn a_prompt_finds_its_command_and_arguments() {
    let (_root, dirs) = fixture();
    let (commands, _) = Commands::discover(&SettingSources::all(), &dirs);
    let (command, args) = commands.find("/git:commit fix the parser").unwrap();
    assert_eq!((command.name.as_str(), args), ("git:commit", " fix the parser"));
    assert_eq!(commands.find("  /testcmd").map(|(c, a)| (c.name.as_str(), a)), Some(("testcmd", "")));
    assert_eq!(commands.find("/nosuch x").map(|(c, _)| c.name.clone()), None);
    assert_eq!(commands.find("testcmd x").map(|(c, _)| c.name.clone()), None);
    assert_eq!(commands.find("/testcmdx").map(|(c, _)| c.name.clone()), None);
}

#[test]
fn bad_files_are_skipped_with_warnings_naming_file_and_line() {
    let (_root, dirs) = fixture();
    let project = dirs.project.join(".claude/commands");
    write(project.join("broken.md"), "---\ndescription: x\nallowed-tools: [Bash\n---\nbody\n");
    write(project.join("alias.md"), "---\nmodel: haiku\n---\nbody\n");
    write(project.join("inherits.md"), "---\nmodel: inherit\n---\nbody\n");
    let (commands, warnings) = Commands::discover(&SettingSources::all(), &dirs);
    assert_eq!(commands.get("broken"), None);
    assert_eq!(commands.get("alias").unwrap().model, None);
    assert_eq!(commands.get("inherits").unwrap().model, None);
    assert_eq!(
        warnings,
        [
            format!(
                "{}:2: model `haiku` is not a claude-… model name; /alias runs on the session's model",
                project.join("alias.md").display()
            ),
            format!(
                "{}:3: a list opened with [ must close with ] on the same line; the command is ignored",
                project.join("broken.md").display()
            ),
        ]
    );
}
