//! The permission boundary: which tool calls may run, in Claude Code's modes and rule syntax.
//!
//! Rules look like `Bash`, `Bash(git status:*)` (a command prefix), `Bash(npm test)` (an exact
//! command), `Edit(src/**)`, `Read(./secrets/**)`, `Read(//etc/hosts)` (absolute) or
//! `Read(~/notes/**)` (`rule`). Deny rules win over everything; plan mode refuses every call
//! that changes anything, whatever the allow rules say. Bash commands are judged on a real
//! parse (`crate::shell`): an allow rule must cover every simple command and nothing may be
//! unproven; a deny rule catches its command at any depth (`bash`). File tools stay inside
//! the working directory unless a rule names the outside path.
//!
//! A call no rule or mode settles is [`Decision::Ask`]: the tool pipeline puts the question to
//! the run's [`Approver`] (`approver`). The default approver, [`Unattended`], answers with a
//! denial the model can read, so a non-interactive run behaves as if it could not ask. An
//! answer "allow for this session" adds a rule to the policy's [`Grants`], which later calls
//! are judged by like allow rules (deny rules still win; plan mode never asks).
//!
//! The policy never matches on a tool's name: what it needs to know about a tool — its
//! [`ToolKind`] (which rule family covers it), the [`Subject`] of a call and whether the call
//! only reads — comes from the [`Tool`] itself, so a new tool plugs in without a change here.

pub(crate) mod approver;
pub(crate) mod bash;
pub(crate) mod git;
mod paths;
pub(crate) mod readonly;
pub(crate) mod rule;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

pub use approver::{Approval, ApprovalRequest, Approver, Unattended};
use rule::Spec;
pub use rule::{Rule, RuleProblem};

use crate::tools::paths::canonicalize_partial;
use crate::tools::{Subject, Tool, ToolKind};

/// How permissive a run is (Claude Code's `--permission-mode` / `defaultMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Read-only tools run; anything else asks.
    #[default]
    Default,
    /// File edits inside the working directory run too.
    AcceptEdits,
    /// Read-only tools only; everything else is refused, whatever the allow rules say.
    Plan,
    /// Everything runs that no deny rule refuses.
    BypassPermissions,
}

impl Mode {
    /// The narrower of two modes, the one that lets less run without a question: `plan`,
    /// then `default`, `acceptEdits`, `bypassPermissions`. A subagent runs in the narrower of
    /// its definition's mode and its parent's.
    pub fn narrower(self, other: Mode) -> Mode {
        let rank = |m: Mode| match m {
            Mode::Plan => 0,
            Mode::Default => 1,
            Mode::AcceptEdits => 2,
            Mode::BypassPermissions => 3,
        };
        if rank(other) < rank(self) { other } else { self }
    }

    /// The mode as Claude Code spells it on the command line and in its stream-json
    /// `system/init` line: `default`, `acceptEdits`, `plan`, `bypassPermissions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl FromStr for Mode {
    type Err = PermissionError;

    /// Claude Code's spellings. Its `auto` mode (a model classifier approving calls it judges
    /// safe; the Claude ACP adapter starts sessions in it) has no counterpart here: it reads as
    /// `default`, where the rules decide and anything else asks.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" | "auto" => Ok(Mode::Default),
            "acceptEdits" => Ok(Mode::AcceptEdits),
            "plan" => Ok(Mode::Plan),
            "bypassPermissions" => Ok(Mode::BypassPermissions),
            other => Err(PermissionError::Mode(other.to_owned())),
        }
    }
}

/// A bad mode or rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    /// Unknown permission mode.
    #[error("unknown permission mode `{0}` (expected default, acceptEdits, plan or bypassPermissions)")]
    Mode(String),
    /// A rule that does not parse.
    #[error("bad permission rule `{rule}`: {reason}")]
    Rule {
        /// The rule text.
        rule: String,
        /// What is wrong.
        reason: rule::RuleProblem,
    },
}

/// The outcome of a permission check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow {
        /// An allow rule (or the run's own temp directory) covers a path outside cwd.
        outside: bool,
        /// The call runs only because it was proven read-only: git in it must run with the
        /// configuration that executes programs neutralised.
        guard_git: bool,
        /// No rule and no mode allowed the call: every command of it was proven read-only,
        /// so the sandbox runs it read-only ([`crate::sandbox::Launch::ReadOnly`]).
        read_only: bool,
    },
    /// Refuse it; the reason goes to the model as an error result.
    Deny(String),
    /// Nothing settles it: a person (the run's [`Approver`]) must be asked. Never returned in
    /// plan mode.
    Ask {
        /// Why the call is not allowed on its own, e.g. ``no allow rule covers `git push` ``.
        reason: String,
        /// A rule that would allow this call (and others like it) for the rest of the
        /// session, when a safe one is known: the tool's name for file tools, `Bash(git
        /// commit:*)` for a Bash line that is one plain command. `None` when an ask rule
        /// matched (it wants to be asked every time) or no narrow rule would do.
        suggestion: Option<String>,
    },
}

impl Decision {
    /// An allowed call inside the working directory, on a rule or the mode.
    pub const ALLOW: Decision = Decision::Allow { outside: false, guard_git: false, read_only: false };

    /// Whether the call may run without asking.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }
}

/// A call that was refused: by a PreToolUse hook, a deny rule or the mode, or the person (or
/// the SDK's `can_use_tool`, or nobody) asked about it. Listed in the result's
/// `permission_denials`, in the shape Claude Code reports them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Denial {
    /// The tool's name.
    pub tool_name: String,
    /// The call's `tool_use` id.
    pub tool_use_id: String,
    /// The call's input, as the model wrote it.
    pub tool_input: Value,
}

/// What the model reads when a call of `tool` needed a person's approval (for `reason`) and
/// nobody could be asked: the answer of the default approver, [`Unattended`].
pub fn unattended_message(tool: &str, reason: &str) -> String {
    format!(
        "Permission to use {tool} was not granted: {reason}, and this run cannot ask anyone. \
Allow it with --allowedTools (e.g. `{tool}` or a narrower rule) or a permission mode."
    )
}

/// Rules a person allowed for the rest of the session ([`Approval::AllowForSession`]). Clones
/// share the same list, so every clone of a [`Policy`] sees what any of them was granted.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    rules: Arc<RwLock<Vec<Rule>>>,
}

impl Grants {
    /// Add a parsed rule.
    pub fn add(&self, rule: Rule) {
        self.rules.write().unwrap_or_else(PoisonError::into_inner).push(rule);
    }

    /// The granted rules as written, in the order they were granted.
    pub fn rules(&self) -> Vec<String> {
        self.rules.read().unwrap_or_else(PoisonError::into_inner).iter().map(|r| r.as_str().to_owned()).collect()
    }

    /// Whether any granted rule satisfies `pred`.
    fn any(&self, pred: impl Fn(&Rule) -> bool) -> bool {
        self.rules.read().unwrap_or_else(PoisonError::into_inner).iter().any(pred)
    }
}

/// How many entries [`ReadDeny::kernel_paths`] looks through for one glob rule.
pub(crate) const KERNEL_WALK_LIMIT: usize = 20_000;

/// The paths that `Read(…)` deny rules hide from the tools that walk directories (Grep,
/// Glob): entries they cover are skipped as if absent.
#[derive(Debug, Clone, Default)]
pub struct ReadDeny {
    rules: Vec<Rule>,
}

impl ReadDeny {
    /// Whether `path` (canonical, absolute) is hidden.
    pub fn hides(&self, path: &Path) -> bool {
        self.rules.iter().filter_map(Rule::path).any(|p| p.covers(path))
    }

    /// Whether no rule hides anything.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The existing paths the rules cover, for the kernel sandbox to make unreadable
    /// ([`crate::sandbox::Policy::deny_read`]): literal paths and `dir/**` trees as they
    /// are, other globs by their matches now (a glob over a tree of more than
    /// `KERNEL_WALK_LIMIT` entries hides the whole tree it starts in).
    pub fn kernel_paths(&self) -> Vec<PathBuf> {
        self.rules.iter().filter_map(Rule::path).flat_map(|p| p.kernel_paths(KERNEL_WALK_LIMIT)).collect()
    }
}

/// The permission mode in force, shared by every clone of a [`Policy`]: a change (the Claude
/// Agent SDK's `set_permission_mode`) applies at once, to the calls of a run already going.
#[derive(Debug, Clone, Default)]
struct SharedMode(Arc<std::sync::atomic::AtomicU8>);

impl SharedMode {
    const MODES: [Mode; 4] = [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::BypassPermissions];

    fn new(mode: Mode) -> SharedMode {
        let shared = SharedMode::default();
        shared.set(mode);
        shared
    }

    fn get(&self) -> Mode {
        Self::MODES[usize::from(self.0.load(std::sync::atomic::Ordering::Relaxed))]
    }

    fn set(&self, mode: Mode) {
        let index = Self::MODES.iter().position(|m| *m == mode).expect("every mode is listed");
        self.0.store(index as u8, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A policy's rules as written, for showing them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleLists {
    /// Allow rules.
    pub allow: Vec<String>,
    /// Deny rules.
    pub deny: Vec<String>,
    /// Ask rules.
    pub ask: Vec<String>,
}

/// The permission policy of a run.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: SharedMode,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    cwd: PathBuf,
    readable_roots: Vec<PathBuf>,
    read_deny: Arc<ReadDeny>,
    grants: Grants,
    /// A file tool's path outside the working directory that no rule covers is a question
    /// (someone can be asked: the Claude Agent SDK's `can_use_tool`), not a refusal.
    ask_outside: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(Mode::Default, PathBuf::from("."))
    }
}

impl Policy {
    /// A policy with no rules.
    pub fn new(mode: Mode, cwd: PathBuf) -> Self {
        let cwd = cwd.canonicalize().unwrap_or(cwd);
        Policy {
            mode: SharedMode::new(mode),
            allow: Vec::new(),
            deny: Vec::new(),
            ask: Vec::new(),
            cwd,
            readable_roots: Vec::new(),
            read_deny: Arc::default(),
            grants: Grants::default(),
            ask_outside: false,
        }
    }

    /// The same policy, asking (outside plan mode) about a file tool's path outside the
    /// working directory that no rule covers instead of refusing it: for a run whose approver
    /// reaches someone who can answer (`--permission-prompt-tool stdio`), as Claude Code asks
    /// `can_use_tool` there.
    pub fn asking_outside(mut self) -> Self {
        self.ask_outside = true;
        self
    }

    /// Whether a call of `tool` with `input` is about a path outside the working directory
    /// (a file tool's subject; never a command line, which is judged on its own).
    pub fn is_outside(&self, tool: &dyn Tool, input: &Value) -> bool {
        match tool.permission_subject(input) {
            Subject::Path(path) if tool.kind() != ToolKind::RunsCommands => {
                !self.absolute(&path).starts_with(&self.cwd)
            }
            Subject::Path(_) | Subject::Command(_) | Subject::Host(_) | Subject::None => false,
        }
    }

    /// A policy with rules.
    ///
    /// # Errors
    /// The first rule that does not parse.
    pub fn with_rules(mut self, allow: &[String], deny: &[String], ask: &[String]) -> Result<Self, PermissionError> {
        let parse =
            |rules: &[String], cwd: &Path| rules.iter().map(|r| Rule::parse(r, cwd)).collect::<Result<Vec<_>, _>>();
        self.allow.extend(parse(allow, &self.cwd)?);
        self.deny.extend(parse(deny, &self.cwd)?);
        self.ask.extend(parse(ask, &self.cwd)?);
        let rules = self
            .deny
            .iter()
            .filter(|r| r.family() == Some(ToolKind::ReadsFiles) && r.path().is_some())
            .cloned()
            .collect();
        self.read_deny = Arc::new(ReadDeny { rules });
        Ok(self)
    }

    /// The policy of a subagent whose definition asks for `wanted`: the same rules and
    /// session grants, in the narrower of `wanted` and this policy's mode. With no mode of its
    /// own the child shares this policy's mode, so a change of the parent's mode reaches it.
    pub fn for_child(&self, wanted: Option<Mode>) -> Policy {
        let mut child = self.clone();
        if let Some(wanted) = wanted {
            child.mode = SharedMode::new(self.mode().narrower(wanted));
        }
        child
    }

    /// The same policy for calls that work in `cwd` instead (a subagent's worktree): paths
    /// are inside or outside `cwd`. Rules keep the paths they were written against.
    pub fn in_directory(&self, cwd: &Path) -> Policy {
        let mut moved = self.clone();
        moved.cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        moved
    }

    /// Change the mode of this policy and of every clone of it, at once.
    pub fn set_mode(&self, mode: Mode) {
        self.mode.set(mode);
    }

    /// The same policy with `root` readable by read-only tools (the spill directory).
    pub fn with_readable_root(mut self, root: PathBuf) -> Self {
        self.readable_roots.push(root.canonicalize().unwrap_or(root));
        self
    }

    /// Allow `rule` (Claude Code syntax, paths against the working directory) for the rest of
    /// the session: every clone of this policy judges later calls by it like an allow rule.
    ///
    /// # Errors
    /// [`PermissionError::Rule`] when the rule does not parse; nothing is granted.
    pub fn grant(&self, rule: &str) -> Result<(), PermissionError> {
        self.grants.add(Rule::parse(rule, &self.cwd)?);
        Ok(())
    }

    /// The allow, deny and ask rules as written (the session's grants are [`Policy::grants`]).
    pub fn rule_lists(&self) -> RuleLists {
        let names = |rules: &[Rule]| rules.iter().map(|r| r.as_str().to_owned()).collect();
        RuleLists { allow: names(&self.allow), deny: names(&self.deny), ask: names(&self.ask) }
    }

    /// The rules granted so far (shared by every clone of this policy).
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Whether an allow rule or a granted rule satisfies `pred`.
    fn allowed_by(&self, pred: impl Fn(&Rule) -> bool) -> bool {
        self.allow.iter().any(&pred) || self.grants.any(&pred)
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode.get()
    }

    /// The hierarchies read-only tools may read outside the working directory (the run's
    /// spill directory): a read-only command's sandbox reads them too.
    pub fn readable_roots(&self) -> &[PathBuf] {
        &self.readable_roots
    }

    /// What `Read(…)` deny rules hide from Grep and Glob.
    pub fn read_deny(&self) -> Arc<ReadDeny> {
        self.read_deny.clone()
    }

    /// Whether a deny rule refuses every call of `tool` (`--disallowedTools Bash`,
    /// `mcp__server`): the model is not offered it at all, as Claude Code does.
    pub fn withholds(&self, tool: &str) -> bool {
        self.deny.iter().any(|rule| rule.names_whole(tool))
    }

    /// Decide whether `tool` may run with `input`, on what the tool says about itself: its
    /// [`Tool::kind`], the call's [`Tool::permission_subject`] and [`Tool::is_read_only`]. A
    /// [`ToolKind::RunsCommands`] tool's command line is analysed instead of trusting the tool.
    pub fn decide(&self, tool: &dyn Tool, input: &Value) -> Decision {
        let (name, kind) = (tool.name(), tool.kind());
        let subject = tool.permission_subject(input);
        if kind == ToolKind::RunsCommands {
            let command = match &subject {
                Subject::Command(command) => command.as_str(),
                Subject::Path(_) | Subject::Host(_) | Subject::None => "",
            };
            return self.decide_command(name, command);
        }
        if kind == ToolKind::Fetches {
            let host = match &subject {
                Subject::Host(host) => Some(host.as_str()),
                Subject::Path(_) | Subject::Command(_) | Subject::None => None,
            };
            return self.decide_fetch(name, host);
        }
        let path = match subject {
            Subject::Path(path) => Some(self.absolute(&path)),
            Subject::Command(_) | Subject::Host(_) | Subject::None => None,
        };
        self.decide_other(name, kind, path, tool.is_read_only(input))
    }

    /// The decision for a tool that reaches the network ([`ToolKind::Fetches`]), about `host`
    /// if it names one: a deny rule refuses it, an allow rule (`WebFetch`,
    /// `WebFetch(domain:HOST)`) lets it run, and otherwise someone is asked (in every mode but
    /// `bypassPermissions`: fetching changes nothing here, but what it sends and what it
    /// reads are the user's call).
    fn decide_fetch(&self, tool: &str, host: Option<&str>) -> Decision {
        let covers = |rule: &Rule| match (&rule.spec, host) {
            (Spec::Any, _) => true,
            (Spec::Domain(domain), Some(host)) => domain.covers(host),
            _ => false,
        };
        let applies = |rule: &&Rule| rule.applies_to(tool, ToolKind::Fetches) && covers(rule);
        if let Some(rule) = self.deny.iter().find(applies) {
            return Decision::Deny(format!("Permission to use {tool} was denied by the rule `{}`.", rule.as_str()));
        }
        let allow = Decision::Allow { outside: false, guard_git: false, read_only: false };
        if self.allowed_by(|r| applies(&r)) {
            return allow;
        }
        if let Some(rule) = self.ask.iter().find(applies) {
            return self.ask(tool, format!("the rule `{}` asks for it", rule.as_str()), None);
        }
        if self.mode.get() == Mode::BypassPermissions {
            return allow;
        }
        match host {
            Some(host) => self.ask(
                tool,
                format!("it reaches {host} on the network and no rule allows that domain"),
                Some(format!("{tool}(domain:{host})")),
            ),
            None => self.ask(tool, "it reaches the network and no rule allows it".into(), Some(tool.to_owned())),
        }
    }

    /// The decision for a tool that runs no command line, about `path` (canonical) if any.
    fn decide_other(&self, tool: &str, kind: ToolKind, path: Option<PathBuf>, read_only: bool) -> Decision {
        let covers = |rule: &Rule| match (&rule.spec, &path) {
            (Spec::Any, _) => true,
            (Spec::Path(p), Some(path)) => p.covers(path),
            _ => false,
        };
        if let Some(rule) = self.deny.iter().find(|r| r.applies_to(tool, kind) && covers(r)) {
            return Decision::Deny(format!("Permission to use {tool} was denied by the rule `{}`.", rule.as_str()));
        }
        if self.mode.get() == Mode::Plan && !read_only {
            return plan_refusal(tool);
        }
        let allowed_by_rule = self.allowed_by(|r| r.applies_to(tool, kind) && covers(r));
        let outside = path.as_ref().is_some_and(|p| !p.starts_with(&self.cwd));
        if outside && !allowed_by_rule {
            let readable =
                read_only && path.as_ref().is_some_and(|p| self.readable_roots.iter().any(|root| p.starts_with(root)));
            if !readable {
                let p = path.as_ref().expect("outside implies a path");
                let why = format!("{} is outside the working directory {}", p.display(), self.cwd.display());
                let rule = outside_rule(tool, p);
                if self.ask_outside && self.mode.get() != Mode::Plan {
                    return Decision::Ask { reason: why, suggestion: Some(rule) };
                }
                return Decision::Deny(format!("{why}; a rule such as `{rule}` would allow it."));
            }
            return Decision::Allow { outside: true, guard_git: false, read_only: false };
        }
        if allowed_by_rule {
            return Decision::Allow { outside, guard_git: false, read_only: false };
        }
        if let Some(rule) = self.ask.iter().find(|r| r.applies_to(tool, kind) && covers(r)) {
            return self.ask(tool, format!("the rule `{}` asks for it", rule.as_str()), None);
        }
        let edit = kind == ToolKind::EditsFiles;
        let allow = Decision::Allow { outside, guard_git: false, read_only: false };
        let protected = edit && path.as_deref().is_some_and(|p| self.is_protected(p));
        match self.mode.get() {
            Mode::BypassPermissions => allow,
            Mode::Plan | Mode::Default if read_only => allow,
            Mode::AcceptEdits if protected && !read_only => self.ask(
                tool,
                "it edits a protected path (git's hooks and config, .claude, .agentloop, .mcp.json), which acceptEdits does not cover".into(),
                None,
            ),
            Mode::AcceptEdits if read_only || edit => allow,
            Mode::Plan => plan_refusal(tool),
            Mode::AcceptEdits | Mode::Default => {
                self.ask(tool, "it changes things and no rule allows it".into(), Some(tool.to_owned()))
            }
        }
    }

    /// The decision for a command the analysis proved read-only when no sandbox would contain
    /// it if the proof were wrong: a question (a denial in plan mode).
    pub fn unconfined_question(&self, tool: &str, why: &str) -> Decision {
        self.ask(tool, format!("{why}, so a command is not run unconfined without asking"), None)
    }

    /// Whether `path` (canonical) is one of the working directory's protected paths
    /// ([`crate::sandbox::policy::PROTECTED`]): what no sandboxed command may change, and
    /// what acceptEdits does not let a file tool change without asking either.
    fn is_protected(&self, path: &Path) -> bool {
        crate::sandbox::policy::PROTECTED.iter().any(|p| path.starts_with(self.cwd.join(p)))
    }

    /// A question for a person; in plan mode, which never asks, today's unattended denial.
    fn ask(&self, tool: &str, reason: String, suggestion: Option<String>) -> Decision {
        if self.mode.get() == Mode::Plan {
            return Decision::Deny(unattended_message(tool, &reason));
        }
        Decision::Ask { reason, suggestion }
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { self.cwd.join(path) };
        canonicalize_partial(&joined).unwrap_or(joined)
    }
}

/// The narrowest rule that would allow `tool` on `path` (absolute) outside the working
/// directory: a directory's own tree (`Grep(//tmp/**)` for `/tmp`), a file's directory, or the
/// file alone when that directory is `/` (never `///**`, the whole file system).
fn outside_rule(tool: &str, path: &Path) -> String {
    let tree = if path.is_dir() { Some(path) } else { path.parent() };
    match tree.filter(|dir| dir.parent().is_some()) {
        Some(dir) => format!("{tool}(/{}/**)", dir.display()),
        None => format!("{tool}(/{})", path.display()),
    }
}

fn plan_refusal(tool: &str) -> Decision {
    Decision::Deny(plan_message(tool))
}

/// Why plan mode refuses a call of `tool`.
fn plan_message(tool: &str) -> String {
    format!("{tool} is not allowed in plan mode: only read-only tools run.")
}

#[cfg(test)]
mod tests;
