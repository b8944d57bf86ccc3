//! Permissions: which tool calls may run, in Claude Code's modes and rule syntax.
//!
//! Rules look like `Bash`, `Bash(git status:*)` (a command prefix), `Bash(npm test)` (an exact
//! command), `Edit(src/**)`, `Read(./secrets/**)`, `Read(//etc/hosts)` (absolute) or
//! `Read(~/notes/**)`. Deny rules win over allow rules; a compound Bash command is allowed
//! only when every part is. File tools stay inside the working directory unless an allow rule
//! names the outside path. In a non-interactive run an "ask" is a denial the model can read.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::tools::paths::canonicalize_partial;

/// How permissive a run is (Claude Code's `--permission-mode` / `defaultMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Read-only tools run; anything else asks.
    #[default]
    Default,
    /// File edits inside the working directory run too.
    AcceptEdits,
    /// Read-only tools only; everything else is refused.
    Plan,
    /// Everything runs that no deny rule refuses.
    BypassPermissions,
}

impl FromStr for Mode {
    type Err = PermissionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Mode::Default),
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
        reason: String,
    },
}

#[derive(Debug, Clone)]
enum Spec {
    Any,
    CommandPrefix(String),
    Command(String),
    Path(GlobMatcher),
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    spec: Spec,
}

const FILE_TOOLS: [&str; 5] = ["Read", "Write", "Edit", "Glob", "Grep"];

impl Rule {
    /// Parse `Tool` or `Tool(specifier)`; paths resolve against `cwd`.
    ///
    /// # Errors
    /// [`PermissionError::Rule`] naming the rule.
    pub fn parse(text: &str, cwd: &Path) -> Result<Rule, PermissionError> {
        let bad = |reason: &str| PermissionError::Rule { rule: text.to_owned(), reason: reason.to_owned() };
        let text_trim = text.trim();
        let (tool, spec) = match text_trim.split_once('(') {
            None => (text_trim, None),
            Some((tool, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| bad("missing `)`"))?;
                (tool, Some(inner))
            }
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("expected a tool name such as Bash or Edit"));
        }
        let spec = match spec {
            None | Some("") | Some("*") => Spec::Any,
            Some(s) if tool == "Bash" => match s.strip_suffix(":*") {
                Some(prefix) => Spec::CommandPrefix(prefix.trim().to_owned()),
                None => Spec::Command(s.trim().to_owned()),
            },
            Some(s) if FILE_TOOLS.contains(&tool) => Spec::Path(path_glob(s, cwd).map_err(|e| bad(&e))?),
            Some(_) => return Err(bad("only Bash and the file tools take a specifier")),
        };
        Ok(Rule { text: text.to_owned(), tool: tool.to_owned(), spec })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn matches(&self, tool: &str, subject: &Subject) -> bool {
        if self.tool != tool {
            return false;
        }
        match (&self.spec, subject) {
            (Spec::Any, _) => true,
            (Spec::CommandPrefix(prefix), Subject::Command(parts)) => parts
                .iter()
                .all(|p| p == prefix || p.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with(' '))),
            (Spec::Command(exact), Subject::Command(parts)) => parts.len() == 1 && &parts[0] == exact,
            (Spec::Path(glob), Subject::Path(path)) => glob.is_match(path),
            _ => false,
        }
    }

    /// For deny rules: whether any part of a compound command (or the path) matches.
    fn matches_any_part(&self, tool: &str, subject: &Subject) -> bool {
        match subject {
            Subject::Command(parts) => parts.iter().any(|p| self.matches(tool, &Subject::Command(vec![p.clone()]))),
            _ => self.matches(tool, subject),
        }
    }
}

fn path_glob(spec: &str, cwd: &Path) -> Result<GlobMatcher, String> {
    let base = if let Some(abs) = spec.strip_prefix("//") {
        PathBuf::from("/").join(abs)
    } else if let Some(home) = spec.strip_prefix("~/") {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(home)
    } else {
        let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        root.join(spec.trim_start_matches("./").trim_start_matches('/'))
    };
    let pattern = base.to_string_lossy().into_owned();
    let glob: Glob = GlobBuilder::new(&pattern).literal_separator(true).build().map_err(|e| e.to_string())?;
    Ok(glob.compile_matcher())
}

/// What a rule is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    Command(Vec<String>),
    Path(PathBuf),
    Nothing,
}

/// Split a shell command into its simple commands (on `&&`, `||`, `;`, `|`, newlines).
fn command_parts(command: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        let split = match c {
            ';' | '\n' => true,
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                true
            }
            '|' => {
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                true
            }
            _ => false,
        };
        if split {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts.into_iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect()
}

/// The outcome of a permission check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it; `outside` says the call may touch paths outside the working directory.
    Allow {
        /// An allow rule (or the run's own temp directory) covers a path outside cwd.
        outside: bool,
    },
    /// Refuse it; the reason goes to the model as an error result.
    Deny(String),
}

/// The permission policy of a run.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    cwd: PathBuf,
    readable_roots: Vec<PathBuf>,
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
        Policy { mode, allow: Vec::new(), deny: Vec::new(), ask: Vec::new(), cwd, readable_roots: Vec::new() }
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
        Ok(self)
    }

    /// Let read-only tools read below `root` even though it is outside the working directory
    /// (the run's temp directory, where cut tool results are saved).
    pub fn with_readable_root(mut self, root: PathBuf) -> Self {
        self.readable_roots.push(root.canonicalize().unwrap_or(root));
        self
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Decide whether `tool` may run with `input`. `read_only` says whether this call only reads.
    pub fn decide(&self, tool: &str, input: &Value, read_only: bool) -> Decision {
        let subject = self.subject(tool, input);
        if let Some(rule) = self.deny.iter().find(|r| r.matches_any_part(tool, &subject)) {
            return Decision::Deny(format!("Permission to use {tool} was denied by the rule `{}`.", rule.as_str()));
        }
        let allowed_by_rule = self.allow.iter().any(|r| r.matches(tool, &subject))
            || matches!(&subject, Subject::Command(parts) if !parts.is_empty() && parts.iter().all(|p| {
                self.allow.iter().any(|r| r.matches(tool, &Subject::Command(vec![p.clone()])))
            }));
        let outside = match &subject {
            Subject::Path(p) => !p.starts_with(&self.cwd),
            _ => false,
        };
        if outside && !allowed_by_rule {
            let readable = read_only
                && matches!(&subject, Subject::Path(p) if self.readable_roots.iter().any(|root| p.starts_with(root)));
            if !readable {
                let Subject::Path(p) = &subject else { unreachable!("outside implies a path") };
                return Decision::Deny(format!(
                    "{} is outside the working directory {}; a rule such as `{tool}(/{}/**)` would allow it.",
                    p.display(),
                    self.cwd.display(),
                    p.parent().unwrap_or(p).display()
                ));
            }
            return Decision::Allow { outside: true };
        }
        if allowed_by_rule {
            return Decision::Allow { outside };
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches_any_part(tool, &subject)) {
            return self.unanswered(tool, &format!("the rule `{}` asks for it", rule.as_str()));
        }
        let edit = matches!(tool, "Write" | "Edit");
        match self.mode {
            Mode::BypassPermissions => Decision::Allow { outside },
            Mode::Plan if read_only => Decision::Allow { outside },
            Mode::Plan => Decision::Deny(format!("{tool} is not allowed in plan mode: only read-only tools run.")),
            Mode::AcceptEdits if read_only || edit => Decision::Allow { outside },
            Mode::Default if read_only => Decision::Allow { outside },
            Mode::AcceptEdits | Mode::Default => self.unanswered(tool, "it changes things and no rule allows it"),
        }
    }

    fn unanswered(&self, tool: &str, why: &str) -> Decision {
        Decision::Deny(format!(
            "Permission to use {tool} was not granted: {why}, and this run cannot ask anyone. \
Allow it with --allowedTools (e.g. `{tool}` or a narrower rule) or a permission mode."
        ))
    }

    fn subject(&self, tool: &str, input: &Value) -> Subject {
        let field = |name: &str| input.get(name).and_then(Value::as_str);
        match tool {
            "Bash" => Subject::Command(command_parts(field("command").unwrap_or_default())),
            "Read" | "Write" | "Edit" => {
                field("file_path").map_or(Subject::Nothing, |p| Subject::Path(self.absolute(p)))
            }
            "Glob" | "Grep" => Subject::Path(self.absolute(field("path").unwrap_or("."))),
            _ => Subject::Nothing,
        }
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { self.cwd.join(path) };
        canonicalize_partial(&joined).unwrap_or(joined)
    }
}

#[cfg(test)]
mod tests {
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

    fn allowed(d: &Decision) -> bool {
        matches!(d, Decision::Allow { .. })
    }

    #[test]
    fn modes_decide_unruled_calls() {
        let write = json!({"file_path": "src/a.rs", "content": ""});
        let bash = json!({"command": "cargo build"});
        let (_d, p) = policy(Mode::Default, &[], &[]);
        assert!(allowed(&p.decide("Read", &json!({"file_path": "src/a.rs"}), true)));
        assert!(!allowed(&p.decide("Write", &write, false)));
        let (_d, p) = policy(Mode::AcceptEdits, &[], &[]);
        assert!(allowed(&p.decide("Write", &write, false)));
        assert!(!allowed(&p.decide("Bash", &bash, false)));
        let (_d, p) = policy(Mode::Plan, &[], &[]);
        assert_eq!(
            p.decide("Edit", &write, false),
            Decision::Deny("Edit is not allowed in plan mode: only read-only tools run.".into())
        );
        let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
        assert!(allowed(&p.decide("Bash", &bash, false)));
    }

    #[test]
    fn rules_in_claude_code_syntax() {
        let (_d, p) =
            policy(Mode::Default, &["Bash(git status:*)", "Edit(src/**)"], &["Read(./secrets/**)", "Bash(rm:*)"]);
        assert!(allowed(&p.decide("Bash", &json!({"command": "git status --short"}), false)));
        assert!(!allowed(&p.decide("Bash", &json!({"command": "git statusx"}), false)));
        assert!(!allowed(&p.decide("Bash", &json!({"command": "git status && curl evil"}), false)));
        assert!(allowed(&p.decide("Edit", &json!({"file_path": "src/lib.rs"}), false)));
        assert!(!allowed(&p.decide("Edit", &json!({"file_path": "README.md"}), false)));
        let denied = p.decide("Read", &json!({"file_path": "secrets/key.pem"}), true);
        assert_eq!(
            denied,
            Decision::Deny("Permission to use Read was denied by the rule `Read(./secrets/**)`.".into())
        );
        assert!(!allowed(&p.decide("Bash", &json!({"command": "ls; rm -rf x"}), true)));
    }

    #[test]
    fn deny_wins_over_allow_and_outside_needs_a_rule() {
        let (_d, p) = policy(Mode::BypassPermissions, &["Bash"], &["Bash(rm:*)"]);
        assert!(!allowed(&p.decide("Bash", &json!({"command": "rm -rf /"}), false)));
        let (_d, p) = policy(Mode::BypassPermissions, &[], &[]);
        let outside = p.decide("Read", &json!({"file_path": "/etc/hostname"}), true);
        assert!(matches!(outside, Decision::Deny(ref m) if m.contains("outside the working directory")), "{outside:?}");
        let (_d, p) = policy(Mode::Default, &["Read(//etc/**)"], &[]);
        assert_eq!(p.decide("Read", &json!({"file_path": "/etc/hostname"}), true), Decision::Allow { outside: true });
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
        assert_eq!(command_parts("a && b || c; d | e"), vec!["a", "b", "c", "d", "e"]);
    }
}
