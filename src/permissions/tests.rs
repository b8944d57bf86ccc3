//! Policy decisions for the file tools and the modes; Bash verdicts over a whole corpus live
//! in tests/permissions.rs.

use super::*;
use serde_json::json;

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
    assert!(p.decide("Read", &json!({"file_path": "src/a.rs"}), true).is_allowed());
    assert!(!p.decide("Write", &write, false).is_allowed());
    let (_d, p) = policy(Mode::AcceptEdits, &[], &[]);
    assert!(p.decide("Write", &write, false).is_allowed());
    assert!(!p.decide("Bash", &bash, false).is_allowed());
    let (_d, p) = policy(Mode::Plan, &[], &[]);
    assert_eq!(
        p.decide("Edit", &write, false),
        Decision::Deny("Edit is not allowed in plan mode: only read-only tools run.".into())
    );
    let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
    assert!(p.decide("Bash", &bash, false).is_allowed());
}

#[test]
fn rules_in_claude_code_syntax() {
    let (_d, p) = policy(Mode::Default, &["Bash(git status:*)", "Edit(src/**)"], &["Read(./secrets/**)", "Bash(rm:*)"]);
    assert!(p.decide("Bash", &json!({"command": "git status --short"}), false).is_allowed());
    assert!(!p.decide("Bash", &json!({"command": "git statusx"}), false).is_allowed());
    assert!(!p.decide("Bash", &json!({"command": "git status && curl evil"}), false).is_allowed());
    assert!(p.decide("Edit", &json!({"file_path": "src/lib.rs"}), false).is_allowed());
    assert!(!p.decide("Edit", &json!({"file_path": "README.md"}), false).is_allowed());
    let denied = p.decide("Read", &json!({"file_path": "secrets/key.pem"}), true);
    assert_eq!(denied, Decision::Deny("Permission to use Read was denied by the rule `Read(./secrets/**)`.".into()));
    assert!(!p.decide("Bash", &json!({"command": "ls; rm -rf x"}), true).is_allowed());
}

#[test]
fn deny_wins_over_allow_and_outside_needs_a_rule() {
    let (_d, p) = policy(Mode::BypassPermissions, &["Bash"], &["Bash(rm:*)"]);
    assert!(!p.decide("Bash", &json!({"command": "rm -rf /"}), false).is_allowed());
    let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
    let outside = p.decide("Read", &json!({"file_path": "/etc/hostname"}), true);
    assert!(matches!(outside, Decision::Deny(ref m) if m.contains("outside the working directory")), "{outside:?}");
    let (_d, p) = policy(Mode::Default, &["Read(//etc/**)"], &[]);
    assert_eq!(
        p.decide("Read", &json!({"file_path": "/etc/hostname"}), true),
        Decision::Allow { outside: true, guard_git: false }
    );
}

#[test]
fn edit_rules_cover_every_editing_tool_and_read_rules_every_reading_tool() {
    let (_d, p) = policy(Mode::AcceptEdits, &[], &["Edit(./secrets/**)", "Read(./secrets/**)"]);
    let write = p.decide("Write", &json!({"file_path": "secrets/a", "content": "x"}), false);
    assert_eq!(write, Decision::Deny("Permission to use Write was denied by the rule `Edit(./secrets/**)`.".into()));
    let notebook = p.decide("NotebookEdit", &json!({"notebook_path": "secrets/n.ipynb"}), false);
    assert!(!notebook.is_allowed());
    let grep = p.decide("Grep", &json!({"pattern": "x", "path": "secrets"}), true);
    assert_eq!(grep, Decision::Deny("Permission to use Grep was denied by the rule `Read(./secrets/**)`.".into()));
    let glob = p.decide("Glob", &json!({"pattern": "*", "path": "secrets/sub"}), true);
    assert!(!glob.is_allowed());
    // Searching the whole tree is allowed: the walk skips what the rule hides.
    assert!(p.decide("Grep", &json!({"pattern": "x"}), true).is_allowed());
    assert!(p.read_deny().hides(&p.cwd.join("secrets/key")));
    assert!(!p.read_deny().hides(&p.cwd.join("src/key")));
    // An Edit allow rule lets Write in too.
    let (_d, p) = policy(Mode::Default, &["Edit(src/**)"], &[]);
    assert!(p.decide("Write", &json!({"file_path": "src/new.rs", "content": ""}), false).is_allowed());
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
        let d = p.decide(tool, &input, false);
        assert!(!d.is_allowed(), "{tool} {input} ran in plan mode: {d:?}");
    }
    assert!(p.decide("Bash", &json!({"command": "git status"}), true).is_allowed());
    assert!(p.decide("Read", &json!({"file_path": "src/a.rs"}), true).is_allowed());
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
