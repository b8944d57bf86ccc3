//! Calls of a tool that runs command lines ([`ToolKind::RunsCommands`], Bash) against the
//! rules, on the parsed command line. `Bash(…)` rules cover every such tool.
//!
//! - A deny (or ask) rule wins if it matches *any* simple command at any depth, wrappers
//!   looked through. A line that hides what it runs (unparsable, `eval` of a variable, a shell
//!   reading stdin, `PATH=…`) matches every deny rule.
//! - A `Read(…)` deny rule refuses any command with a path argument it covers (globs expanded,
//!   symlinks followed), and any line whose paths cannot be known while one is in force.
//! - Otherwise the call runs when every simple command is covered by an allow rule or proven
//!   read-only with its paths inside the working directory, and nothing in the line is
//!   unproven. Plan mode takes only the read-only proof.

use std::cell::OnceCell;

use super::paths::{PathCheck, PathVerdict};
use super::readonly::{self, GIT_READ_ONLY};
use super::rule::Spec;
use super::{Decision, Mode, Policy, Rule, git, plan_message};
use crate::shell::{self, Analysis, SimpleCommand, Wrapper};
use crate::tools::ToolKind;

/// Git subcommands that print only names and states, never file contents.
const GIT_NAMES_ONLY: &[&str] = &["status", "branch", "rev-parse", "ls-files"];

/// What proving commands of one line read-only needs, worked out at most once per line: the
/// line's directories and input redirections, the repository's configuration and its top.
struct ReadOnlyProof<'p> {
    paths: PathCheck<'p>,
    git_risk: OnceCell<Option<git::GitRisk>>,
    git_top: OnceCell<Option<std::path::PathBuf>>,
}

/// How one simple command is approved.
enum Approval {
    /// An allow rule covers it.
    Rule,
    /// It only reads, inside the working directory.
    ReadOnly,
    /// Neither; the reason.
    No(String),
}

impl Policy {
    /// The decision for one command line that the tool named `tool` runs.
    pub(crate) fn decide_command(&self, tool: &str, command: &str) -> Decision {
        let analysis = shell::analyze(command);
        if let Some(denial) = self.command_denial(tool, &analysis) {
            return Decision::Deny(denial);
        }
        if let Some(rule) = self.matching(tool, &self.ask, &analysis) {
            return self.ask(tool, format!("the rule `{}` asks for it", rule.as_str()), None);
        }
        if self.mode() != Mode::Plan && self.allowed_by(|r| covers_commands(r, tool) && matches!(r.spec, Spec::Any)) {
            return Decision::ALLOW;
        }
        let (mut guard_git, mut by_rule) = (false, false);
        let read_only = ReadOnlyProof {
            paths: PathCheck::new(&self.cwd, &self.readable_roots, Vec::new(), &analysis),
            git_risk: OnceCell::new(),
            git_top: OnceCell::new(),
        };
        let mut refusal = analysis.hazards.first().map(ToString::to_string);
        if refusal.is_none() && analysis.commands.is_empty() {
            refusal = Some("it is empty".into());
        }
        for cmd in &analysis.commands {
            if refusal.is_some() {
                break;
            }
            match self.approve(tool, cmd, &analysis, &read_only) {
                Approval::Rule if self.mode() == Mode::Plan => {
                    refusal = Some(format!("`{}` is not proven read-only", display(cmd)));
                }
                Approval::Rule => by_rule = true,
                Approval::ReadOnly => guard_git = true,
                Approval::No(why) => refusal = Some(why),
            }
        }
        match (refusal, self.mode()) {
            (None, _) => Decision::Allow { outside: false, guard_git, read_only: guard_git && !by_rule },
            (Some(_), Mode::BypassPermissions) => Decision::ALLOW,
            (Some(why), Mode::Plan) => Decision::Deny(format!("{} ({why})", plan_message(tool))),
            (Some(why), Mode::Default | Mode::AcceptEdits) => {
                let suggestion = suggestion(tool, &analysis, &self.cwd);
                self.ask(tool, why, suggestion)
            }
        }
    }

    /// Why deny rules refuse the line, if they do.
    fn command_denial(&self, tool: &str, analysis: &Analysis) -> Option<String> {
        if let Some(rule) = self.matching(tool, &self.deny, analysis) {
            let what = analysis
                .all_commands()
                .find(|c| matches!(&rule.spec, Spec::Command(p) if p.denies(c)))
                .map(|c| format!(" (it runs `{}`)", display(c)))
                .unwrap_or_default();
            return Some(format!("Permission to use {tool} was denied by the rule `{}`{what}.", rule.as_str()));
        }
        let read_deny: Vec<&Rule> =
            self.deny.iter().filter(|r| r.family() == Some(ToolKind::ReadsFiles) && r.path().is_some()).collect();
        if analysis.is_opaque() {
            let rule = self.deny.iter().find(|r| covers_commands(r, tool)).or(read_deny.first().copied());
            if let Some(rule) = rule {
                let hazard = analysis.hazards.iter().find(|h| h.is_opaque()).expect("opaque");
                return Some(format!(
                    "Permission to use {tool} was denied: {hazard}, so it may run anything, and the deny rule `{}` is in force.",
                    rule.as_str()
                ));
            }
        }
        if read_deny.is_empty() {
            return None;
        }
        let check = PathCheck::new(&self.cwd, &self.readable_roots, read_deny.clone(), analysis);
        match check.check(analysis.all_commands()) {
            PathVerdict::Denied { rule, path } => Some(format!(
                "Permission to use {tool} was denied by the rule `{rule}`: it reaches {}.",
                path.display()
            )),
            PathVerdict::Unknown(why) => Some(format!(
                "Permission to use {tool} was denied: {why}, so it cannot be shown to stay out of what `{}` protects.",
                read_deny[0].as_str()
            )),
            PathVerdict::Outside(_) | PathVerdict::Inside => None,
        }
    }

    /// The first rule in `rules` covering `tool` that matches any command of the line (deny
    /// semantics).
    fn matching<'r>(&self, tool: &str, rules: &'r [Rule], analysis: &Analysis) -> Option<&'r Rule> {
        rules.iter().filter(|r| covers_commands(r, tool)).find(|rule| match &rule.spec {
            Spec::Any => true,
            Spec::Command(pattern) => analysis.all_commands().any(|c| pattern.denies(c)),
            Spec::Path(_) | Spec::Domain(_) => false,
        })
    }

    /// How one top-level command is approved.
    fn approve(&self, tool: &str, cmd: &SimpleCommand, analysis: &Analysis, proof: &ReadOnlyProof) -> Approval {
        if self.allowed_by_rule(tool, cmd) {
            return Approval::Rule;
        }
        if !readonly::command_is_read_only(cmd) {
            return Approval::No(format!("no allow rule covers `{}`", display(cmd)));
        }
        match proof.paths.check([cmd]) {
            PathVerdict::Inside => {}
            PathVerdict::Outside(path) => {
                return Approval::No(format!(
                    "`{}` reads {}, outside the working directory",
                    display(cmd),
                    path.display()
                ));
            }
            PathVerdict::Unknown(why) => return Approval::No(why),
            PathVerdict::Denied { rule, .. } => return Approval::No(format!("the rule `{rule}` covers it")),
        }
        if let Some(sub) = git_subcommand(cmd) {
            if analysis.changes_directory {
                // The repository checked below is the one around the working directory.
                return Approval::No(format!("`git {sub}` runs after a change of directory"));
            }
            if !self.read_deny.is_empty() && !GIT_NAMES_ONLY.contains(&sub) {
                return Approval::No(format!("`git {sub}` can print files that Read deny rules protect"));
            }
            let top = proof.git_top.get_or_init(|| git::repository_top(&self.cwd));
            if let Some(top) = top.as_ref().filter(|top| **top != self.cwd && !GIT_NAMES_ONLY.contains(&sub)) {
                return Approval::No(format!(
                    "`git {sub}` can print files of the repository at {}, outside the working directory",
                    top.display()
                ));
            }
            if let Some(risk) = proof.git_risk.get_or_init(|| git::repo_config_risk(&self.cwd)) {
                return Approval::No(format!("{risk}, which can run programs"));
            }
        }
        Approval::ReadOnly
    }

    /// Whether an allow rule covers `cmd`, or `cmd` is a transparent wrapper of commands that
    /// allow rules cover.
    fn allowed_by_rule(&self, tool: &str, cmd: &SimpleCommand) -> bool {
        let direct =
            self.allowed_by(|r| covers_commands(r, tool) && matches!(&r.spec, Spec::Command(p) if p.allows(cmd)));
        direct
            || (cmd.wrapper == Wrapper::Transparent
                && !cmd.runs.is_empty()
                && cmd.runs.iter().all(|inner| self.allowed_by_rule(tool, inner)))
    }
}

/// The rule a person could allow for the rest of the session instead of this one line, if a
/// narrow one exists: the line must be one simple command (no hazard, no assignment, no
/// wrapper such as `sudo` or `xargs`, only literal words). Then `Tool(program subcommand:*)`
/// (`Bash(git commit:*)`) when the first argument reads like a subcommand (a plain word
/// starting with a letter, not a path), else the exact command when every word is plain
/// (`Bash(make)`, `Bash(rm -rf build)`). Never the bare tool name: that would allow every
/// command. The rule is checked to parse and to allow this very command.
fn suggestion(tool: &str, analysis: &Analysis, cwd: &std::path::Path) -> Option<String> {
    let [cmd] = analysis.commands.as_slice() else { return None };
    if !analysis.is_clean()
        || analysis.all_commands().count() != 1
        || !cmd.assignments.is_empty()
        || cmd.wrapper != Wrapper::None
        || !cmd.runs.is_empty()
        || !cmd.words.iter().all(|w| w.kind == shell::WordKind::Literal)
    {
        return None;
    }
    let plain = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    let subcommand = |w: &str| plain(w) && w.starts_with(|c: char| c.is_ascii_alphabetic()) && !w.contains(['/', '=']);
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let text = match words.as_slice() {
        [program, sub, ..] if plain(program) && subcommand(sub) => format!("{tool}({program} {sub}:*)"),
        _ if !words.is_empty() && words.iter().all(|w| plain(w)) => format!("{tool}({})", words.join(" ")),
        _ => return None,
    };
    let rule = Rule::parse(&text, cwd).ok()?;
    matches!(&rule.spec, Spec::Command(p) if p.allows(cmd)).then_some(text)
}

/// Whether `rule` is about the command-running tool named `tool`.
fn covers_commands(rule: &Rule, tool: &str) -> bool {
    rule.applies_to(tool, ToolKind::RunsCommands)
}

/// The git subcommand a command (or what it wraps) runs, if it is git.
fn git_subcommand(cmd: &SimpleCommand) -> Option<&'static str> {
    if cmd.program_name() == Some("git") {
        let sub = cmd.args().iter().find(|a| a.text != "--no-pager")?;
        return GIT_READ_ONLY.iter().copied().find(|s| *s == sub.text);
    }
    cmd.runs.iter().find_map(git_subcommand)
}

/// A command as the user would write it, for messages.
fn display(cmd: &SimpleCommand) -> String {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let mut text = words.join(" ");
    if text.len() > 80 {
        let cut = (0..=77).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}
