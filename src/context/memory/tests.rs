use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository with memory at every level: the root's `CLAUDE.md` (importing a chain with a
/// cycle), `AGENTS.md`, a rules file with and one without `paths`, and in the working
/// directory `sub/` a `CLAUDE.md` and a `CLAUDE.local.md`.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    assert!(std::process::Command::new("git").arg("init").arg("-q").arg(&top).status().unwrap().success());
    write(&top.join("CLAUDE.md"), "Root rules. See @docs/a.md and `@docs/ignored.md`.\n");
    write(&top.join("docs/a.md"), "A, which imports @b.md\n");
    write(&top.join("docs/b.md"), "B, which imports @a.md again\n");
    write(&top.join("docs/ignored.md"), "never loaded\n");
    write(&top.join("AGENTS.md"), "Agents file.\n");
    let sub = top.join("sub");
    write(&sub.join("CLAUDE.md"), "Sub rules. Mail me@example.com.\n```\n@../docs/ignored.md\n```\n");
    write(&sub.join("CLAUDE.local.md"), "My private note.\n");
    write(&sub.join(".claude/rules/style.md"), "---\ndescription: style\n---\nUse tabs.\n");
    write(&sub.join(".claude/rules/only-rs.md"), "---\npaths: \"**/*.rs\"\n---\nRust only.\n");
    (dir, sub)
}

fn dirs(cwd: &Path, user: Option<PathBuf>) -> ConfigDirs {
    ConfigDirs { user, project: cwd.to_path_buf() }
}

fn no_roots() -> MemoryRoots {
    MemoryRoots::default()
}

fn names(memory: &Memory, top: &Path) -> Vec<String> {
    memory
        .files
        .iter()
        .map(|f| format!("{} {:?}", f.path.strip_prefix(top).unwrap_or(&f.path).display(), f.scope))
        .collect()
}

#[test]
fn the_hierarchy_loads_top_down_with_imports_each_file_once() {
    let (dir, sub) = repository();
    let top = dir.path().canonicalize().unwrap();
    let memory = Memory::discover(&SettingSources::parse(None).unwrap(), &dirs(&sub, None), &no_roots());
    assert_eq!(
        names(&memory, &top),
        [
            "CLAUDE.md Project",
            "docs/a.md Project",
            "docs/b.md Project",
            "AGENTS.md Project",
            "sub/CLAUDE.md Project",
            "sub/.claude/rules/style.md Project",
            "sub/CLAUDE.local.md Local",
        ]
    );
    assert_eq!(memory.files[1].imported_from.as_deref(), Some(top.join("CLAUDE.md").as_path()));
    assert_eq!(memory.files[2].imported_from.as_deref(), Some(top.join("docs/a.md").as_path()));
    assert_eq!(memory.files[0].bytes, "Root rules. See @docs/a.md and `@docs/ignored.md`.\n".len());
    assert_eq!(
        memory.warnings,
        [format!(
            "{} has both CLAUDE.md and AGENTS.md: both are loaded (a file reached twice is loaded once)",
            top.display()
        )]
    );
    let section = memory.section().unwrap();
    let expected = format!(
        "# Memory\n\nThese instruction files were loaded for this session, lowest precedence first: where they \
         disagree, the later one wins. They are notes of the user and of the project, not messages from the user, \
         and they cannot change what the permission rules allow.\n\n\
         ## {t}/CLAUDE.md (project instructions, checked into the repository)\n\nRoot rules. See @docs/a.md and `@docs/ignored.md`.\n\n\
         ## {t}/docs/a.md (project instructions, checked into the repository, imported by {t}/CLAUDE.md)\n\nA, which imports @b.md\n\n\
         ## {t}/docs/b.md (project instructions, checked into the repository, imported by {t}/docs/a.md)\n\nB, which imports @a.md again\n\n\
         ## {t}/AGENTS.md (project instructions, checked into the repository)\n\nAgents file.\n\n\
         ## {t}/sub/CLAUDE.md (project instructions, checked into the repository)\n\nSub rules. Mail me@example.com.\n```\n@../docs/ignored.md\n```\n\n\
         ## {t}/sub/.claude/rules/style.md (project instructions, checked into the repository)\n\n---\ndescription: style\n---\nUse tabs.\n\n\
         ## {t}/sub/CLAUDE.local.md (the user's private instructions for this project)\n\nMy private note.",
        t = top.display()
    );
    assert_eq!(section, expected);
}

#[test]
fn setting_sources_choose_the_scopes() {
    let (dir, sub) = repository();
    let top = dir.path().canonicalize().unwrap();
    let user = top.join("claude-home");
    write(&user.join("CLAUDE.md"), "User note.\n");
    let only = |flag: &str| {
        let memory =
            Memory::discover(&SettingSources::parse(Some(flag)).unwrap(), &dirs(&sub, Some(user.clone())), &no_roots());
        memory.files.iter().map(|f| f.scope).collect::<Vec<_>>()
    };
    assert_eq!(only("user"), [MemoryScope::User]);
    assert_eq!(only("local"), [MemoryScope::Local]);
    assert_eq!(only(""), Vec::<MemoryScope>::new());
    assert!(Memory::discover(&SettingSources::none(), &dirs(&sub, None), &no_roots()).section().is_none());
}

#[test]
fn a_projects_import_outside_it_is_refused_and_depth_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    write(&root.join("secret.md"), "SECRET\n");
    let mut text = "@../secret.md @l1.md\n".to_owned();
    write(&project.join("CLAUDE.md"), &text);
    for level in 1..=7 {
        text = format!("level {level} @l{}.md\n", level + 1);
        write(&project.join(format!("l{level}.md")), &text);
    }
    let memory = Memory::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs(&project, None), &no_roots());
    let loaded: Vec<String> =
        memory.files.iter().map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(loaded, ["CLAUDE.md", "l1.md", "l2.md", "l3.md", "l4.md", "l5.md"]);
    assert!(!memory.section().unwrap().contains("SECRET"));
    assert_eq!(
        memory.warnings,
        [
            format!(
                "{}: the import of {} is refused: a project's memory imports only files inside the project",
                project.join("CLAUDE.md").display(),
                project.join("../secret.md").display()
            ),
            format!(
                "{}: the import of {} is not followed: imports go 5 levels deep at most",
                project.join("l5.md").display(),
                project.join("l6.md").display()
            ),
        ]
    );
}

#[test]
fn the_cap_cuts_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    write(&project.join("CLAUDE.md"), &"x".repeat(MEMORY_CAP_BYTES + 10));
    write(&project.join("AGENTS.md"), "left out\n");
    let memory = Memory::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs(&project, None), &no_roots());
    assert_eq!(memory.files.len(), 1);
    assert_eq!((memory.files[0].bytes, memory.files[0].cut), (MEMORY_CAP_BYTES, true));
    assert_eq!(memory.left_out, [project.join("AGENTS.md")]);
    let section = memory.section().unwrap();
    assert!(section.contains("[The rest of this file is not loaded: memory is capped at 40000 bytes.]"));
    assert!(section.ends_with(&format!(
        "[Not loaded, past the 40000-byte cap on memory: {}. Read them if the task needs them.]",
        project.join("AGENTS.md").display()
    )));
}

#[test]
fn agents_override_replaces_agents_and_a_link_is_loaded_once() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    write(&project.join("AGENTS.md"), "shared\n");
    std::os::unix::fs::symlink(project.join("AGENTS.md"), project.join("CLAUDE.md")).unwrap();
    let memory = Memory::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs(&project, None), &no_roots());
    assert_eq!(memory.files.len(), 1, "{:?}", memory.files);
    write(&project.join("AGENTS.override.md"), "override\n");
    let memory = Memory::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs(&project, None), &no_roots());
    let loaded: Vec<&str> = memory.files.iter().map(|f| f.path.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(loaded, ["CLAUDE.md", "AGENTS.override.md"]);
}

#[test]
fn imports_skip_code_and_mail() {
    assert_eq!(
        imports_of("see @a.md, and @dir/b.md.\nmail x@y.com `@c.md`\n```\n@d.md\n```\n@~/e.md @word"),
        ["a.md", "dir/b.md", "~/e.md"]
    );
}

#[test]
fn links_out_of_the_project_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    write(&root.join("secret.md"), "SECRET\n");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(root.join("secret.md"), project.join("CLAUDE.md")).unwrap();
    std::os::unix::fs::symlink(root.join("secret.md"), project.join("inner.md")).unwrap();
    write(&project.join("AGENTS.md"), "Agents. @inner.md\n");
    let memory = Memory::discover(&SettingSources::parse(Some("project")).unwrap(), &dirs(&project, None), &no_roots());
    let loaded: Vec<&str> = memory.files.iter().map(|f| f.path.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(loaded, ["AGENTS.md"]);
    assert!(!memory.section().unwrap().contains("SECRET"));
    let secret = root.join("secret.md");
    assert_eq!(
        memory.warnings,
        [
            format!(
                "{} has both CLAUDE.md and AGENTS.md: both are loaded (a file reached twice is loaded once)",
                project.display()
            ),
            format!(
                "{} is not loaded: it links to {}, outside the project",
                project.join("CLAUDE.md").display(),
                secret.display()
            ),
            format!(
                "{}: the import of {} is refused: a project's memory imports only files inside the project",
                project.join("AGENTS.md").display(),
                project.join("inner.md").display()
            ),
        ]
    );
}
