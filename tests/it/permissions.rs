//! The permission boundary over a corpus of Bash command lines (tests/permissions/
//! bash_corpus.tsv): each line names a rule set, the expected verdict (allow, ask, deny) and
//! the command. Plus property tests: an allowed command composed with a forbidden one is never
//! allowed, and a denied program is caught wherever it is put.

use std::path::Path;

use agentloop::permissions::{Decision, Mode, Policy, unattended_message};
use agentloop::tools::Bash;
use agentloop::tools::{Subject, Tool, ToolContext, ToolKind, ToolOutput};
use futures::future::BoxFuture;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The rule sets the corpus names: mode, allow rules, deny rules, and the working directory
/// inside the project (`src` is a subdirectory of the project's repository).
fn rule_set(name: &str) -> (Mode, &'static [&'static str], &'static [&'static str], &'static str) {
    match name {
        "allow-ls-git-status" => (Mode::Default, &["Bash(git status:*)", "Bash(ls:*)"], &[], ""),
        "allow-bash-deny-rm" => (Mode::Default, &["Bash"], &["Bash(rm:*)"], ""),
        "no-rules" => (Mode::Default, &[], &[], ""),
        "no-rules-in-src" => (Mode::Default, &[], &[], "src"),
        "deny-read-secrets" => (Mode::Default, &[], &["Read(./secrets/**)"], ""),
        "deny-read-env" => (Mode::Default, &[], &["Read(./.env)"], ""),
        "plan-with-allow-rules" => (Mode::Plan, &["Bash(npm test:*)", "Bash", "Edit"], &[], ""),
        "exact-and-prefix" => (Mode::Default, &["Bash(npm test)", "Bash(cargo test:*)", "Bash(echo:*)"], &[], ""),
        "cd-allowed" => (Mode::Default, &["Bash(cd:*)"], &[], ""),
        "bypass-deny-push" => (Mode::BypassPermissions, &[], &["Bash(rm:*)", "Bash(git push:*)"], ""),
        other => panic!("the corpus names an unknown rule set `{other}`"),
    }
}

/// A working directory like a small project: sources, secrets (`secrets/key`, `.env`), a
/// symlink out (`link-out` → /etc), a file named like an option (`--pre=sh.log`), a git repo.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("README.md"), "# p\n").unwrap();
    std::fs::write(root.join("notes.txt"), "b\na\n").unwrap();
    std::fs::write(root.join("secrets/key"), "sk-secret\n").unwrap();
    std::fs::write(root.join(".env"), "API_KEY=sk-secret\n").unwrap();
    std::fs::write(root.join("--pre=sh.log"), "").unwrap();
    std::os::unix::fs::symlink("/etc", root.join("link-out")).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(git.success());
    dir
}

fn policy(dir: &Path, set: &str) -> Policy {
    let (mode, allow, deny, cwd) = rule_set(set);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    Policy::new(mode, dir.join(cwd)).with_rules(&s(allow), &s(deny), &[]).unwrap()
}

/// What the engine does: the policy decides on what the Bash tool says about the call.
fn verdict(policy: &Policy, command: &str) -> (&'static str, Decision) {
    let input = json!({ "command": command });
    let decision = policy.decide(&Bash, &input);
    let word = match &decision {
        Decision::Allow { .. } => "allow",
        Decision::Ask { .. } => "ask",
        // Plan mode never asks: what would be a question there is today's unattended denial.
        Decision::Deny(m) if m.contains("was not granted") => "ask",
        Decision::Deny(_) => "deny",
    };
    (word, decision)
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

#[test]
fn every_corpus_line_gets_its_verdict() {
    let dir = project();
    let corpus =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/permissions/bash_corpus.tsv"))
            .unwrap();
    let mut wrong = Vec::new();
    let mut count = 0;
    for (n, line) in corpus.lines().enumerate().filter(|(_, l)| !l.starts_with('#') && !l.is_empty()) {
        let mut fields = line.splitn(3, '\t');
        let (set, want, command) = (fields.next().unwrap(), fields.next().unwrap(), unescape(fields.next().unwrap()));
        let (got, decision) = verdict(&policy(dir.path(), set), &command);
        count += 1;
        if got != want {
            wrong.push(format!("line {}: [{set}] {command:?}: want {want}, got {decision:?}", n + 1));
        }
    }
    assert!(count >= 600, "the corpus has {count} lines");
    assert!(wrong.is_empty(), "{} of {count} lines wrong:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn messages_name_the_rule_and_the_reason() {
    let dir = project();
    let deny = policy(dir.path(), "allow-bash-deny-rm");
    assert_eq!(
        verdict(&deny, "ls & timeout 5 rm x").1,
        Decision::Deny("Permission to use Bash was denied by the rule `Bash(rm:*)` (it runs `rm x`).".into())
    );
    assert_eq!(
        verdict(&deny, "eval \"$X\"").1,
        Decision::Deny(
            "Permission to use Bash was denied: it runs code that cannot be read (eval of a non-literal), so it may run anything, and the deny rule `Bash(rm:*)` is in force."
                .into()
        )
    );
    let ls = policy(dir.path(), "allow-ls-git-status");
    let Decision::Ask { reason, suggestion } = verdict(&ls, "ls $(touch X)").1 else { panic!("not a question") };
    assert_eq!(suggestion, None);
    assert_eq!(
        unattended_message("Bash", &reason),
        "Permission to use Bash was not granted: it contains a command substitution, and this run cannot ask anyone. \
Allow it with --allowedTools (e.g. `Bash` or a narrower rule) or a permission mode."
    );
    let secrets = policy(dir.path(), "deny-read-secrets");
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        verdict(&secrets, "cat secrets/key").1,
        Decision::Deny(format!(
            "Permission to use Bash was denied by the rule `Read(./secrets/**)`: it reaches {}.",
            root.join("secrets/key").display()
        ))
    );
}

/// Commands an allow rule covers, and commands nothing allows.
const ALLOWED: &[&str] = &["ls", "ls -la", "git status", "git status --short", "ls src"];
const FORBIDDEN: &[&str] = &["touch X", "rm -rf x", "curl evil.example", "sh", "python3 -c 1", "chmod +x a"];

/// Ways to put two commands, or one inside the other, on one line.
fn compose(a: &str, b: &str, how: usize) -> String {
    match how {
        0 => format!("{a}; {b}"),
        1 => format!("{a} && {b}"),
        2 => format!("{a} || {b}"),
        3 => format!("{a} | {b}"),
        4 => format!("{a} & {b}"),
        5 => format!("{a}\n{b}"),
        6 => format!("{a} $({b})"),
        7 => format!("{a} `{b}`"),
        8 => format!("{a} <({b})"),
        9 => format!("({a}; {b})"),
        10 => format!("{{ {a}; {b}; }}"),
        11 => format!("if {a}; then {b}; fi"),
        12 => format!("{a} \"$({b})\""),
        13 => format!("bash -c '{a}; {b}'"),
        14 => format!("{b} | {a}"),
        15 => format!("for x in 1; do {a}; {b}; done"),
        16 => format!("{a} > /dev/null; timeout 5 {b}"),
        17 => format!("[[ -v 'x[$({b})]' ]]; {a}"),
        18 => format!("(( 'x[$({b})]' )) || {a}"),
        _ => format!("{a} --opt=$({b})"),
    }
}

/// A tool the engine does not ship, as an MCP server could offer one: it only says what it is.
struct Plugin {
    name: &'static str,
    kind: ToolKind,
}

impl Tool for Plugin {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.kind == ToolKind::ReadsFiles
    }
    fn kind(&self) -> ToolKind {
        self.kind
    }
    fn permission_subject(&self, input: &Value) -> Subject {
        match self.kind {
            ToolKind::RunsCommands => Subject::Command(input["script"].as_str().unwrap_or_default().to_owned()),
            _ => Subject::path_field(input, "target", None),
        }
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async { ToolOutput::ok("") })
    }
}

/// A new tool that declares itself a file editor is covered by `Edit(…)` rules, by
/// `acceptEdits` and by plan mode, with no change to the policy.
#[test]
fn a_new_editing_tool_plugs_in_by_its_kind() {
    let dir = project();
    let scribe = Plugin { name: "Scribe", kind: ToolKind::EditsFiles };
    let rules = |mode: Mode, allow: &[&str], deny: &[&str]| {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Policy::new(mode, dir.path().to_path_buf()).with_rules(&s(allow), &s(deny), &[]).unwrap()
    };
    let secret = json!({"target": "secrets/key"});
    let source = json!({"target": "src/main.rs"});

    let accept = rules(Mode::AcceptEdits, &[], &["Edit(./secrets/**)"]);
    assert_eq!(
        accept.decide(&scribe, &secret),
        Decision::Deny("Permission to use Scribe was denied by the rule `Edit(./secrets/**)`.".into())
    );
    assert_eq!(accept.decide(&scribe, &source), Decision::ALLOW);
    let outside = accept.decide(&scribe, &json!({"target": "/etc/hosts"}));
    assert!(matches!(&outside, Decision::Deny(m) if m.contains("outside the working directory")), "{outside:?}");

    let plan = rules(Mode::Plan, &["Scribe", "Edit"], &[]);
    assert_eq!(
        plan.decide(&scribe, &source),
        Decision::Deny("Scribe is not allowed in plan mode: only read-only tools run.".into())
    );

    let default = rules(Mode::Default, &["Edit(src/**)"], &[]);
    assert_eq!(default.decide(&scribe, &source), Decision::ALLOW);
    let asked = default.decide(&scribe, &json!({"target": "README.md"}));
    assert_eq!(
        asked,
        Decision::Ask { reason: "it changes things and no rule allows it".into(), suggestion: Some("Scribe".into()) }
    );

    // A reading tool falls under `Read(…)` deny rules; a command tool under `Bash(…)` rules,
    // its command line analysed like Bash's.
    let reader = Plugin { name: "Peek", kind: ToolKind::ReadsFiles };
    let shell = Plugin { name: "Shell", kind: ToolKind::RunsCommands };
    let policy = rules(Mode::Default, &["Bash(git status:*)"], &["Read(./secrets/**)", "Bash(rm:*)"]);
    assert!(!policy.decide(&reader, &secret).is_allowed());
    assert_eq!(policy.decide(&reader, &source), Decision::ALLOW);
    assert!(policy.decide(&shell, &json!({"script": "git status"})).is_allowed());
    assert_eq!(
        policy.decide(&shell, &json!({"script": "ls && /bin/rm -rf src"})),
        Decision::Deny(
            "Permission to use Shell was denied by the rule `Bash(rm:*)` (it runs `/bin/rm -rf src`).".into()
        )
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// An allowed command composed with a forbidden one is never allowed.
    #[test]
    fn allowed_with_forbidden_is_never_allowed(a in 0..ALLOWED.len(), b in 0..FORBIDDEN.len(), how in 0..20usize) {
        let dir = project();
        let policy = policy(dir.path(), "allow-ls-git-status");
        let line = compose(ALLOWED[a], FORBIDDEN[b], how);
        let (got, decision) = verdict(&policy, &line);
        prop_assert_ne!(got, "allow", "{:?} was allowed: {:?}", line, decision);
    }

    /// A denied program is caught wherever the line puts it, however it is spelled.
    #[test]
    fn denied_program_is_caught_anywhere(a in 0..ALLOWED.len(), spelling in 0..6usize, how in 0..20usize) {
        let dir = project();
        let policy = policy(dir.path(), "allow-bash-deny-rm");
        let rm = ["rm x", "\\rm x", "\"rm\" x", "/bin/rm x", "command rm x", "env FOO=1 rm x"][spelling];
        let line = compose(ALLOWED[a], rm, how);
        let (got, decision) = verdict(&policy, &line);
        prop_assert_eq!(got, "deny", "{:?} was not denied: {:?}", line, decision);
    }
}
