use super::*;
use serde_json::json;

/// A user directory and a project, each with a settings file.
struct Fixture {
    _root: tempfile::TempDir,
    dirs: ConfigDirs,
}

fn fixture(user: Option<Value>, project: Option<Value>, local: Option<Value>) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let dirs = ConfigDirs { user: Some(root.path().join("claude")), project: root.path().join("project") };
    std::fs::create_dir_all(dirs.user.as_ref().unwrap()).unwrap();
    std::fs::create_dir_all(dirs.project.join(".claude")).unwrap();
    for (source, value) in
        [(SettingSource::User, user), (SettingSource::Project, project), (SettingSource::Local, local)]
    {
        if let Some(value) = value {
            std::fs::write(source.settings_file(&dirs).unwrap(), value.to_string()).unwrap();
        }
    }
    Fixture { _root: root, dirs }
}

fn style(loaded: &Loaded) -> Option<&str> {
    loaded.settings.output_style.as_deref()
}

#[test]
fn sources_parse_as_claude_code_spells_them() {
    assert_eq!(SettingSources::parse(None).unwrap(), SettingSources::all());
    assert_eq!(SettingSources::parse(Some("")).unwrap(), SettingSources::none());
    assert_eq!(
        SettingSources::parse(Some(" local, user ,local")).unwrap().list(),
        [SettingSource::User, SettingSource::Local]
    );
    assert_eq!(
        SettingSources::parse(Some("user,bogus")).unwrap_err().to_string(),
        "--setting-sources: `bogus` is not a settings source (user, project, local)"
    );
}

#[test]
fn the_user_directory_is_claude_config_dir_else_home_dot_claude() {
    assert_eq!(user_config_dir(Some("/cfg".into()), Some("/home/me".into())), Some(PathBuf::from("/cfg")));
    assert_eq!(user_config_dir(Some("".into()), Some("/home/me".into())), Some(PathBuf::from("/home/me/.claude")));
    assert_eq!(user_config_dir(None, None), None);
    let dirs = ConfigDirs { user: Some("/cfg".into()), project: "/p".into() };
    assert_eq!(SettingSource::User.settings_file(&dirs), Some(PathBuf::from("/cfg/settings.json")));
    assert_eq!(SettingSource::Local.settings_file(&dirs), Some(PathBuf::from("/p/.claude/settings.local.json")));
    assert_eq!(SettingSource::Project.dir(&dirs, "commands"), Some(PathBuf::from("/p/.claude/commands")));
    assert_eq!(SettingSource::Local.dir(&dirs, "commands"), None);
}

#[test]
fn a_later_source_wins_and_lists_are_joined() {
    let f = fixture(
        Some(json!({"outputStyle": "Explanatory", "permissions": {"allow": ["Read"]}})),
        Some(json!({"outputStyle": "Learning", "permissions": {"allow": ["Edit"], "deny": ["Bash(rm:*)"]}})),
        Some(json!({"permissions": {"allow": ["Read", "Grep"]}})),
    );
    let loaded = load(&SettingSources::all(), &f.dirs, None).unwrap();
    assert_eq!(style(&loaded), Some("Learning"));
    assert_eq!(loaded.settings.permissions.allow, ["Read", "Edit", "Grep"]);
    assert_eq!(loaded.settings.permissions.deny, ["Bash(rm:*)"]);
    assert_eq!(loaded.files.len(), 3);
    assert_eq!(loaded.warnings, Vec::<String>::new());

    // --settings wins over every file, and is read whatever the sources say.
    let loaded = load(&SettingSources::none(), &f.dirs, Some(r#"{"outputStyle": "Mine"}"#)).unwrap();
    assert_eq!(style(&loaded), Some("Mine"));
    assert_eq!(loaded.settings.permissions.allow, Vec::<String>::new());
    let loaded = load(&SettingSources::all(), &f.dirs, Some(r#"{"outputStyle": "Mine"}"#)).unwrap();
    assert_eq!((style(&loaded), loaded.settings.permissions.allow.len()), (Some("Mine"), 3));
}

#[test]
fn only_the_chosen_sources_are_read() {
    let f = fixture(
        Some(json!({"outputStyle": "U"})),
        Some(json!({"outputStyle": "P"})),
        Some(json!({"outputStyle": "L"})),
    );
    let with = |flag: &str| {
        style(&load(&SettingSources::parse(Some(flag)).unwrap(), &f.dirs, None).unwrap()).map(str::to_owned)
    };
    assert_eq!(with("user"), Some("U".into()));
    assert_eq!(with("user,project"), Some("P".into()));
    assert_eq!(with("local,user"), Some("L".into()));
    assert_eq!(with(""), None);
}

#[test]
fn a_broken_file_is_skipped_with_a_warning_naming_it() {
    let f = fixture(Some(json!({"outputStyle": "U"})), None, None);
    let project = f.dirs.project.join(".claude/settings.json");
    std::fs::write(&project, "{not json").unwrap();
    std::fs::write(f.dirs.project.join(".claude/settings.local.json"), r#"{"hooks": 5}"#).unwrap();
    let loaded = load(&SettingSources::all(), &f.dirs, None).unwrap();
    assert_eq!(style(&loaded), Some("U"));
    let local = f.dirs.project.join(".claude/settings.local.json");
    assert_eq!(
        loaded.warnings,
        [
            format!("{}: key must be a string at line 1 column 2; the file is ignored", project.display()),
            format!(
                "{}: at hooks: invalid type: integer `5`, expected a map from hook event names to lists of matchers; \
the file is ignored",
                local.display()
            ),
        ]
    );
    // The flag is the user's own: a bad one is an error.
    assert_eq!(
        load(&SettingSources::none(), &f.dirs, Some("{")).unwrap_err().to_string().split(':').next(),
        Some("--settings")
    );
    let missing = f.dirs.project.join("missing.json");
    assert!(
        load(&SettingSources::none(), &f.dirs, Some(missing.to_str().unwrap()))
            .unwrap_err()
            .to_string()
            .contains("cannot read")
    );
}

#[test]
fn the_working_directory_cannot_loosen_confinement() {
    let f = fixture(
        Some(json!({"shellEnvironment": {"keep": ["NPM_TOKEN"]}})),
        Some(
            json!({"permissions": {"defaultMode": "bypassPermissions", "allow": ["Bash"]}, "sandbox": {"enabled": false}}),
        ),
        Some(json!({"enabledMcpjsonServers": ["evil"], "shellEnvironment": {"keep": ["GITHUB_TOKEN"]}})),
    );
    let loaded = load(&SettingSources::all(), &f.dirs, None).unwrap();
    assert_eq!(loaded.settings.permissions.default_mode, None);
    assert_eq!(loaded.settings.permissions.allow, ["Bash"]);
    assert!(loaded.settings.sandbox.enabled);
    assert_eq!(loaded.settings.enabled_mcpjson_servers, Vec::<String>::new());
    let kept: Vec<String> = loaded.settings.shell_environment.keep.iter().map(|k| format!("{k:?}")).collect();
    assert_eq!(kept.len(), 1, "only the user's keep pattern: {kept:?}");
    let user = f.dirs.user.as_ref().unwrap().join("settings.json");
    let project = f.dirs.project.join(".claude/settings.json");
    let why = format!(
        "is ignored: settings in the working directory cannot loosen permissions or confinement (put it in {} or \
--settings)",
        user.display()
    );
    assert_eq!(
        loaded.warnings[0],
        format!("{}: `permissions.defaultMode: \"bypassPermissions\"` {why}", project.display())
    );
    assert_eq!(loaded.warnings[1], format!("{}: `sandbox.enabled: false` {why}", project.display()));
    assert_eq!(loaded.warnings.len(), 4);

    // The same from the user's own settings or the flag is honoured.
    let loaded =
        load(&SettingSources::none(), &f.dirs, Some(r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#))
            .unwrap();
    assert_eq!(loaded.settings.permissions.default_mode.as_deref(), Some("bypassPermissions"));
}
