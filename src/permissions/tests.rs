//! Policy decisions for the file tools and the modes; Bash verdicts over a whole corpus live
//! in tests/it/permissions.rs.

use super::*;
use crate::tools::{Registry, ToolContext, ToolOutput};
use futures::future::BoxFuture;
use serde_json::json;

/// A notebook editor this crate does not ship: it says it edits files and which path.
struct NotebookEdit;

impl Tool for NotebookEdit {
    fn name(&self) -> &'static str {
        "NotebookEdit"
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    fn kind(&self) -> ToolKind {
        ToolKind::EditsFiles
    }
    fn permission_subject(&self, input: &Value) -> Subject {
        Subject::path_field(input, "notebook_path", None)
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async { ToolOutput::ok("") })
    }
}

/// The decision for a call of the standard tool (or the notebook editor) named `tool`.
fn decide(p: &Policy, tool: &str, input: &Value) -> Decision {
    match tool {
        "NotebookEdit" => p.decide(&NotebookEdit, input),
        _ => p.decide(Registry::standard().get(tool).expect("a standard tool").as_ref(), input),
    }
}

fn policy(mode: Mode, allow: &[&str], deny: &[&str]) -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let p = Policy::new(mode, dir.path().to_path_buf()).with_rules(&s(allow), &s(deny), &[]).unwrap();
    (dir, p)
}

#[test]
fn modes_decide_unruled_calls() {
    let write = json!({"file_path": "src/a.rs", "content": ""});
    let bash = json!({"command": "cargo build"});
    let (_d, p) = policy(Mode::Default, &[], &[]);
    assert!(decide(&p, "Read", &json!({"file_path": "src/a.rs"})).is_allowed());
    assert!(!decide(&p, "Write", &write).is_allowed());
    let (_d, p) = policy(Mode::AcceptEdits, &[], &[]);
    assert!(decide(&p, "Write", &write).is_allowed());
    assert!(!decide(&p, "Bash", &bash).is_allowed());
    let (_d, p) = policy(Mode::Plan, &[], &[]);
    assert_eq!(
        decide(&p, "Edit", &write),
        Decision::Deny("Edit is not allowed in plan mode: only read-only tools run.".into())
    );
    let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
    assert!(decide(&p, "Bash", &bash).is_allowed());
}

#[test]
fn accept_edits_asks_before_a_file_tool_changes_a_protected_path() {
    let (_d, p) = policy(Mode::AcceptEdits, &[], &[]);
    let reason = "it edits a protected path (git's hooks and config, .claude, .agentloop, .mcp.json), which \
                  acceptEdits does not cover";
    for path in [".git/hooks/pre-commit", ".git/config", ".claude/settings.json", ".agentloop/x", ".mcp.json"] {
        let input = json!({"file_path": path, "content": "x"});
        assert_eq!(decide(&p, "Write", &input), Decision::Ask { reason: reason.into(), suggestion: None }, "{path}");
    }
    assert!(decide(&p, "Write", &json!({"file_path": ".gitignore", "content": ""})).is_allowed());
    assert!(decide(&p, "Read", &json!({"file_path": ".mcp.json"})).is_allowed());
    // A rule that names the path allows it, as for any edit.
    let (_d, p) = policy(Mode::AcceptEdits, &["Edit(.claude/**)"], &[]);
    assert!(decide(&p, "Write", &json!({"file_path": ".claude/settings.json", "content": ""})).is_allowed());
}

#[test]
fn rules_in_claude_code_syntax() {
    let (_d, p) = policy(Mode::Default, &["Bash(git status:*)", "Edit(src/**)"], &["Read(./secrets/**)", "Bash(rm:*)"]);
    assert!(decide(&p, "Bash", &json!({"command": "git status --short"})).is_allowed());
    assert!(!decide(&p, "Bash", &json!({"command": "git statusx"})).is_allowed());
    assert!(!decide(&p, "Bash", &json!({"command": "git status && curl evil"})).is_allowed());
    assert!(decide(&p, "Edit", &json!({"file_path": "src/lib.rs"})).is_allowed());
    assert!(!decide(&p, "Edit", &json!({"file_path": "README.md"})).is_allowed());
    let denied = decide(&p, "Read", &json!({"file_path": "secrets/key.pem"}));
    assert_eq!(denied, Decision::Deny("Permission to use Read was denied by the rule `Read(./secrets/**)`.".into()));
    assert!(!decide(&p, "Bash", &json!({"command": "ls; rm -rf x"})).is_allowed());
}

#[test]
fn deny_wins_over_allow_and_outside_needs_a_rule() {
    let (_d, p) = policy(Mode::BypassPermissions, &["Bash"], &["Bash(rm:*)"]);
    assert!(!decide(&p, "Bash", &json!({"command": "rm -rf /"})).is_allowed());
    let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
    let outside = decide(&p, "Read", &json!({"file_path": "/etc/hostname"}));
    assert!(matches!(outside, Decision::Deny(ref m) if m.contains("outside the working directory")), "{outside:?}");
    let (_d, p) = policy(Mode::Default, &["Read(//etc/**)"], &[]);
    assert_eq!(
        decide(&p, "Read", &json!({"file_path": "/etc/hostname"})),
        Decision::Allow { outside: true, guard_git: false, read_only: false }
    );
}

#[test]
fn outside_the_working_directory_is_a_question_when_someone_can_be_asked() {
    let (_d, p) = policy(Mode::Default, &[], &["Write(//etc/shadow)"]);
    let write = json!({"file_path": "/srv/notes/a.txt", "content": "x"});
    let why = format!("/srv/notes/a.txt is outside the working directory {}", p.cwd.display());
    assert_eq!(
        decide(&p, "Write", &write),
        Decision::Deny(format!("{why}; a rule such as `Write(//srv/notes/**)` would allow it."))
    );
    let asking = p.clone().asking_outside();
    assert_eq!(
        decide(&asking, "Write", &write),
        Decision::Ask { reason: why.clone(), suggestion: Some("Write(//srv/notes/**)".into()) }
    );
    let read = decide(&asking, "Read", &json!({"file_path": "/srv/notes/a.txt"}));
    assert!(matches!(read, Decision::Ask { .. }), "{read:?}");
    assert!(asking.is_outside(Registry::standard().get("Write").unwrap().as_ref(), &write));
    assert!(!asking.is_outside(Registry::standard().get("Write").unwrap().as_ref(), &json!({"file_path": "src/a"})));
    // Deny rules still win, and plan mode never asks.
    let shadow = decide(&asking, "Write", &json!({"file_path": "/etc/shadow", "content": "x"}));
    assert!(matches!(shadow, Decision::Deny(ref m) if m.contains("denied by the rule")), "{shadow:?}");
    asking.set_mode(Mode::Plan);
    let planned = decide(&asking, "Read", &json!({"file_path": "/srv/notes/a.txt"}));
    assert_eq!(planned, Decision::Deny(format!("{why}; a rule such as `Read(//srv/notes/**)` would allow it.")));
}

#[test]
fn edit_rules_cover_every_editing_tool_and_read_rules_every_reading_tool() {
    let (_d, p) = policy(Mode::AcceptEdits, &[], &["Edit(./secrets/**)", "Read(./secrets/**)"]);
    let write = decide(&p, "Write", &json!({"file_path": "secrets/a", "content": "x"}));
    assert_eq!(write, Decision::Deny("Permission to use Write was denied by the rule `Edit(./secrets/**)`.".into()));
    let notebook = decide(&p, "NotebookEdit", &json!({"notebook_path": "secrets/n.ipynb"}));
    assert!(!notebook.is_allowed());
    let grep = decide(&p, "Grep", &json!({"pattern": "x", "path": "secrets"}));
    assert_eq!(grep, Decision::Deny("Permission to use Grep was denied by the rule `Read(./secrets/**)`.".into()));
    let glob = decide(&p, "Glob", &json!({"pattern": "*", "path": "secrets/sub"}));
    assert!(!glob.is_allowed());
    // Searching the whole tree is allowed: the walk skips what the rule hides.
    assert!(decide(&p, "Grep", &json!({"pattern": "x"})).is_allowed());
    assert!(p.read_deny().hides(&p.cwd.join("secrets/key")));
    assert!(!p.read_deny().hides(&p.cwd.join("src/key")));
    // An Edit allow rule lets Write in too.
    let (_d, p) = policy(Mode::Default, &["Edit(src/**)"], &[]);
    assert!(decide(&p, "Write", &json!({"file_path": "src/new.rs", "content": ""})).is_allowed());
}

#[test]
fn plan_mode_is_absolute() {
    let (_d, p) = policy(Mode::Plan, &["Bash", "Edit", "Write", "Bash(npm test:*)"], &[]);
    for (tool, input) in [
        ("Write", json!({"file_path": "src/a.rs", "content": ""})),
        ("Edit", json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"})),
        ("Bash", json!({"command": "npm test"})),
        ("Bash", json!({"command": "rm -rf src"})),
        ("Bash", json!({"command": "ls > out.txt"})),
    ] {
        let d = decide(&p, tool, &input);
        assert!(!d.is_allowed(), "{tool} {input} ran in plan mode: {d:?}");
    }
    assert!(decide(&p, "Bash", &json!({"command": "git status"})).is_allowed());
    assert!(decide(&p, "Read", &json!({"file_path": "src/a.rs"})).is_allowed());
}

#[test]
fn bad_rules_and_modes_are_named() {
    assert_eq!(
        Rule::parse("Bash(ls", Path::new("/")).unwrap_err().to_string(),
        "bad permission rule `Bash(ls`: missing `)`"
    );
    assert_eq!(
        "sometimes".parse::<Mode>().unwrap_err().to_string(),
        "unknown permission mode `sometimes` (expected default, acceptEdits, plan or bypassPermissions)"
    );
}

/// The question for a Bash line: its reason and the session rule offered, if any.
fn bash_question(p: &Policy, command: &str) -> (String, Option<String>) {
    match decide(p, "Bash", &json!({ "command": command })) {
        Decision::Ask { reason, suggestion } => (reason, suggestion),
        other => panic!("{command}: not a question but {other:?}"),
    }
}

#[test]
fn questions_suggest_a_narrow_rule_or_none() {
    let (_d, p) = policy(Mode::Default, &[], &[]);
    let suggested = |command: &str| bash_question(&p, command).1;
    assert_eq!(
        bash_question(&p, "git commit -m 'fix it'"),
        ("no allow rule covers `git commit -m fix it`".into(), Some("Bash(git commit:*)".into()))
    );
    assert_eq!(suggested("cargo build --release"), Some("Bash(cargo build:*)".into()));
    assert_eq!(suggested("make"), Some("Bash(make)".into()));
    assert_eq!(suggested("npm run 'build prod'"), Some("Bash(npm run:*)".into()));
    // A first argument that is an option or a path is no subcommand: only the exact line.
    assert_eq!(suggested("rm -rf build"), Some("Bash(rm -rf build)".into()));
    assert_eq!(suggested("touch src/a.rs"), Some("Bash(touch src/a.rs)".into()));
    // Never the bare tool: more than one command, a wrapper, a variable, a substitution.
    for command in [
        "git add . && git commit -m x",
        "sudo make install",
        "xargs rm < list",
        "FOO=1 make",
        "rm $X",
        "echo $(date) > out",
        "chmod +x 'a b'",
    ] {
        assert_eq!(suggested(command), None, "{command}");
    }
    // File tools: the tool's name; an ask rule wants to be asked every time.
    let edit = decide(&p, "Edit", &json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"}));
    assert_eq!(
        edit,
        Decision::Ask { reason: "it changes things and no rule allows it".into(), suggestion: Some("Edit".into()) }
    );
    let dir = tempfile::tempdir().unwrap();
    let asks = Policy::new(Mode::AcceptEdits, dir.path().into()).with_rules(&[], &[], &["Bash(npm:*)".into()]).unwrap();
    assert_eq!(bash_question(&asks, "npm test"), ("the rule `Bash(npm:*)` asks for it".into(), None));
}

#[test]
fn grants_work_like_allow_rules_and_are_shared_by_clones() {
    let (_d, p) = policy(Mode::Default, &[], &["Bash(git push:*)"]);
    let clone = p.clone();
    p.grant("Bash(git commit:*)").unwrap();
    p.grant("Bash").unwrap();
    assert_eq!(clone.grants().rules(), ["Bash(git commit:*)", "Bash"]);
    assert!(decide(&clone, "Bash", &json!({"command": "git commit -m x"})).is_allowed());
    // Deny rules still win over a grant.
    assert_eq!(
        decide(&clone, "Bash", &json!({"command": "git push"})),
        Decision::Deny("Permission to use Bash was denied by the rule `Bash(git push:*)` (it runs `git push`).".into())
    );
    assert!(matches!(p.grant("Bash(ls"), Err(PermissionError::Rule { .. })));
    assert_eq!(p.grants().rules().len(), 2);
    // A file-tool grant; plan mode still refuses what it covers.
    let (_d, p) = policy(Mode::Default, &[], &[]);
    p.grant("Write").unwrap();
    assert!(decide(&p, "Write", &json!({"file_path": "src/a.rs", "content": ""})).is_allowed());
    let (_d, plan) = policy(Mode::Plan, &[], &[]);
    plan.grant("Write").unwrap();
    plan.grant("Bash").unwrap();
    assert_eq!(
        decide(&plan, "Write", &json!({"file_path": "src/a.rs", "content": ""})),
        Decision::Deny("Write is not allowed in plan mode: only read-only tools run.".into())
    );
    assert!(!decide(&plan, "Bash", &json!({"command": "touch x"})).is_allowed());
}

/// A mode change reaches every clone at once (the SDK's `set_permission_mode` during a run).
#[test]
fn a_mode_change_reaches_every_clone() {
    let (_dir, policy) = policy(Mode::Default, &[], &[]);
    let running = policy.clone();
    policy.set_mode(Mode::Plan);
    assert_eq!(running.mode(), Mode::Plan);
    let edit = json!({"file_path": "a.txt", "old_string": "a", "new_string": "b"});
    assert_eq!(
        running.decide(&crate::tools::edit::Edit, &edit),
        Decision::Deny("Edit is not allowed in plan mode: only read-only tools run.".into())
    );
    running.set_mode(Mode::BypassPermissions);
    assert_eq!(policy.mode(), Mode::BypassPermissions);
}

#[test]
fn a_tool_denied_whole_is_withheld_and_one_denied_in_part_is_not() {
    let (_dir, policy) = policy(Mode::Default, &[], &["Bash", "mcp__calc", "mcp__web__fetch", "Edit(src/**)"]);
    assert!(policy.withholds("Bash"));
    assert!(policy.withholds("mcp__calc__add"), "a whole server's rule covers its tools");
    assert!(policy.withholds("mcp__web__fetch"));
    assert!(!policy.withholds("mcp__web__search"));
    assert!(!policy.withholds("Edit"), "a rule with a path refuses only some calls");
    assert!(!policy.withholds("Read"));
}

/// WebFetch and WebSearch are asked about in every mode but bypassPermissions unless a rule
/// allows them; `WebFetch(domain:…)` names a host exactly, `domain:*.x` the hosts below it.
#[test]
fn fetches_are_asked_about_unless_a_domain_rule_allows_them() {
    let fetch = |url: &str| json!({"url": url, "prompt": "p"});
    let (_d, p) = policy(Mode::Default, &[], &[]);
    assert_eq!(
        decide(&p, "WebFetch", &fetch("https://docs.rs/x")),
        Decision::Ask {
            reason: "it reaches docs.rs on the network and no rule allows that domain".into(),
            suggestion: Some("WebFetch(domain:docs.rs)".into()),
        }
    );
    assert_eq!(
        decide(&p, "WebSearch", &json!({"query": "statig"})),
        Decision::Ask {
            reason: "it reaches the network and no rule allows it".into(),
            suggestion: Some("WebSearch".into())
        }
    );
    let (_d, p) = policy(Mode::AcceptEdits, &["WebFetch(domain:docs.rs)", "WebFetch(domain:*.rust-lang.org)"], &[]);
    assert!(decide(&p, "WebFetch", &fetch("https://DOCS.rs:8443/statig")).is_allowed());
    assert!(decide(&p, "WebFetch", &fetch("https://doc.rust-lang.org/std")).is_allowed());
    assert!(!decide(&p, "WebFetch", &fetch("https://rust-lang.org/")).is_allowed());
    assert!(!decide(&p, "WebFetch", &fetch("https://docs.rs.evil.com/")).is_allowed());
    assert!(!decide(&p, "WebFetch", &fetch("https://evil-docs.rs/")).is_allowed());
    // Tricks on the URL: the host is what the URL parser says it is.
    assert!(!decide(&p, "WebFetch", &fetch("https://docs.rs@evil.com/")).is_allowed(), "user info is not the host");
    assert!(!decide(&p, "WebFetch", &fetch("https://docs.rs.evil.com#docs.rs")).is_allowed());
    assert!(!decide(&p, "WebFetch", &fetch("https://d\u{043e}cs.rs/")).is_allowed(), "a look-alike letter");
    assert!(!decide(&p, "WebFetch", &fetch("https://docs.rs./")).is_allowed(), "a trailing dot is another name");
    assert!(!decide(&p, "WebFetch", &fetch("file:///etc/passwd")).is_allowed());
    assert!(decide(&p, "WebFetch", &fetch("HTTPS://DOCS.RS/statig")).is_allowed());
    assert!(!decide(&p, "WebSearch", &json!({"query": "x"})).is_allowed(), "a WebFetch rule is not about WebSearch");
    let (_d, p) = policy(Mode::Default, &["WebFetch"], &["WebFetch(domain:evil.com)"]);
    assert!(decide(&p, "WebFetch", &fetch("https://good.com/")).is_allowed());
    assert_eq!(
        decide(&p, "WebFetch", &fetch("https://evil.com/")),
        Decision::Deny("Permission to use WebFetch was denied by the rule `WebFetch(domain:evil.com)`.".into())
    );
    let (_d, p) = policy(Mode::Plan, &[], &[]);
    assert!(matches!(decide(&p, "WebFetch", &fetch("https://docs.rs/")), Decision::Deny(_)));
    let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
    assert!(decide(&p, "WebFetch", &fetch("https://docs.rs/")).is_allowed());
    for bad in ["WebFetch(docs.rs)", "WebFetch(domain:)", "WebFetch(domain:a b)", "WebFetch(domain:a/b)"] {
        let error = Rule::parse(bad, Path::new("/")).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "bad permission rule `{bad}`: a WebFetch rule names a host: `WebFetch(domain:example.com)` or \
                 `WebFetch(domain:*.example.com)`"
            )
        );
    }
}
