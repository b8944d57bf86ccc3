//! One permission rule in Claude Code's syntax, parsed, and how it matches a call.
//!
//! `Bash` / `Bash(*)` match every command; `Bash(git status:*)` (or `Bash(git status *)`) is a
//! prefix of words, `Bash(npm test)` an exact command. `Read(./secrets/**)`, `Edit(src/**)`,
//! `Read(//etc/hosts)` (absolute) and `Read(~/notes/**)` are path globs. A rule covers the tool
//! it names; besides, the `Edit`, `Read` and `Bash` rules name a family, and cover every tool
//! of that [`ToolKind`] (an `Edit` rule covers Write, a `Read` rule Grep and Glob).
//! `WebFetch(domain:example.com)` names a host (`domain:*.example.com`: the hosts below it).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::PermissionError;
use crate::shell::{self, SimpleCommand, WordKind};
use crate::tools::ToolKind;

/// Rule names that take a path specifier: the syntax of rules, checked when they are parsed.
/// Which tools a rule covers is [`Rule::applies_to`], on the tool's name and kind.
const FILE_TOOLS: [&str; 6] = ["Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit"];

/// One word of a Bash rule: literal, or a glob matching one whole word (`*.rs`).
#[derive(Debug, Clone)]
enum RuleWord {
    Literal(String),
    Glob(GlobMatcher),
}

impl RuleWord {
    fn matches(&self, text: &str) -> bool {
        match self {
            RuleWord::Literal(l) => l == text,
            RuleWord::Glob(g) => g.is_match(text),
        }
    }
}

/// A Bash rule's command: its words and whether more may follow.
#[derive(Debug, Clone)]
pub(crate) struct CommandPattern {
    words: Vec<RuleWord>,
    prefix: bool,
}

impl CommandPattern {
    /// Allow semantics: the program exactly as written (`/tmp/git` is not `git`), every rule
    /// word equal to a literal word in the same place, nothing more unless a prefix; only
    /// harmless variables assigned in front.
    pub(crate) fn allows(&self, cmd: &SimpleCommand) -> bool {
        if !cmd.assignments.iter().all(|name| shell::is_harmless_variable(name)) {
            return false;
        }
        let length_ok =
            if self.prefix { cmd.words.len() >= self.words.len() } else { cmd.words.len() == self.words.len() };
        length_ok
            && self
                .words
                .iter()
                .zip(&cmd.words)
                .all(|(rule, word)| word.kind == WordKind::Literal && rule.matches(&word.text))
    }

    /// Deny semantics: the program compared by base name (`/bin/rm` is `rm`), the rule's
    /// other words found in order among the arguments (a word that is not literal may be
    /// any of them); an exact rule also needs as many arguments.
    pub(crate) fn denies(&self, cmd: &SimpleCommand) -> bool {
        let (Some(rule_program), Some(program)) = (self.words.first(), cmd.program()) else { return false };
        let program_ok = match rule_program {
            RuleWord::Literal(l) => shell::basename(l) == shell::basename(program),
            RuleWord::Glob(g) => g.is_match(program) || g.is_match(shell::basename(program)),
        };
        if !program_ok {
            return false;
        }
        let args = cmd.args();
        let wanted = &self.words[1..];
        if !self.prefix && args.len() != wanted.len() {
            return false;
        }
        let mut next = wanted.iter().peekable();
        for arg in args {
            let Some(rule) = next.peek() else { break };
            if arg.kind != WordKind::Literal || rule.matches(&arg.text) {
                next.next();
            }
        }
        next.peek().is_none()
    }
}

/// A path rule: a glob over canonical absolute paths, and the directory where its literal
/// part ends (everything the rule can match is below it).
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    glob: GlobMatcher,
    base: PathBuf,
    /// The pattern ends in `/**`: the base directory itself is covered too.
    whole_tree: bool,
    /// The pattern has glob characters: it may match anything below `base`.
    is_glob: bool,
    /// The pattern is a literal directory followed by `/**`: exactly the tree at `base`.
    literal_tree: bool,
}

impl PathPattern {
    /// Whether `path` (canonical, absolute) is covered.
    pub(crate) fn covers(&self, path: &Path) -> bool {
        self.glob.is_match(path) || (self.whole_tree && path == self.base)
    }

    /// The existing paths this pattern covers, as whole trees, for the kernel sandbox: the
    /// base of a literal path or `dir/**`; for other globs the matches found below the base,
    /// or the base itself when there are more than `limit` entries to look through (the
    /// sandbox then hides more, never less).
    pub(crate) fn kernel_paths(&self, limit: usize) -> Vec<PathBuf> {
        if !self.is_glob || self.literal_tree {
            return vec![self.base.clone()];
        }
        let mut found = Vec::new();
        let mut queue = vec![self.base.clone()];
        let mut seen = 0usize;
        while let Some(dir) = queue.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > limit {
                    return vec![self.base.clone()];
                }
                let path = entry.path();
                if self.covers(&path) {
                    found.push(path);
                } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    queue.push(path);
                }
            }
        }
        found
    }

    /// Whether something this rule covers may lie inside the directory `dir` (or is `dir`).
    pub(crate) fn reaches_into(&self, dir: &Path) -> bool {
        self.base.starts_with(dir) || (self.is_glob && dir.starts_with(&self.base)) || self.covers(dir)
    }
}

/// A `WebFetch(domain:…)` rule's host: `example.com` exactly, or `*.example.com` for every
/// host below it (not `example.com` itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainPattern {
    Exact(String),
    Below(String),
}

impl DomainPattern {
    /// `example.com` or `*.example.com`, compared without case; `None` for what is not a
    /// host name.
    pub(crate) fn parse(pattern: &str) -> Option<DomainPattern> {
        let host = pattern.trim().to_ascii_lowercase();
        let (below, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, host),
        };
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        valid.then_some(if below { DomainPattern::Below(name) } else { DomainPattern::Exact(name) })
    }

    /// Whether `host` (lowercase, without a port) is covered.
    pub(crate) fn covers(&self, host: &str) -> bool {
        match self {
            DomainPattern::Exact(domain) => host == domain,
            DomainPattern::Below(domain) => {
                host.strip_suffix(domain.as_str()).is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Spec {
    Any,
    Command(CommandPattern),
    Path(PathPattern),
    Domain(DomainPattern),
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pub(crate) spec: Spec,
}

impl Rule {
    /// Parse `Tool` or `Tool(specifier)`; paths resolve against `cwd`.
    ///
    /// # Errors
    /// [`PermissionError::Rule`] naming the rule and what is wrong.
    pub fn parse(text: &str, cwd: &Path) -> Result<Rule, PermissionError> {
        let bad = |reason: RuleProblem| PermissionError::Rule { rule: text.to_owned(), reason };
        let trimmed = text.trim();
        let (tool, spec) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => (tool, Some(rest.strip_suffix(')').ok_or_else(|| bad(RuleProblem::MissingParen))?)),
        };
        // MCP tool names (`mcp__server__tool`) may also have `-`.
        let mcp = tool.starts_with("mcp__");
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || (mcp && c == '-')) {
            return Err(bad(RuleProblem::ToolName));
        }
        let spec = match spec.map(str::trim) {
            None | Some("" | "*") => Spec::Any,
            Some(s) if tool == "Bash" => Spec::Command(command_pattern(s).map_err(bad)?),
            Some(s) if FILE_TOOLS.contains(&tool) => Spec::Path(path_pattern(s, cwd).map_err(bad)?),
            Some(s) if tool == "WebFetch" => Spec::Domain(domain_pattern(s).map_err(bad)?),
            Some(_) => return Err(bad(RuleProblem::Specifier)),
        };
        Ok(Rule { text: text.to_owned(), tool: tool.to_owned(), spec })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The tool the rule names.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The family of tools the rule covers besides the tool it names: every
    /// [`ToolKind::EditsFiles`] tool for `Edit`, [`ToolKind::ReadsFiles`] for `Read`,
    /// [`ToolKind::RunsCommands`] for `Bash`.
    pub fn family(&self) -> Option<ToolKind> {
        match self.tool.as_str() {
            "Edit" => Some(ToolKind::EditsFiles),
            "Read" => Some(ToolKind::ReadsFiles),
            "Bash" => Some(ToolKind::RunsCommands),
            _ => None,
        }
    }

    /// Whether the rule is about the tool named `tool`, of kind `kind`: it names the tool, or
    /// its family is the tool's kind.
    /// An MCP server rule `mcp__SERVER` is about every tool of that server (`mcp__SERVER__…`).
    pub fn applies_to(&self, tool: &str, kind: ToolKind) -> bool {
        self.tool == tool || (kind != ToolKind::Other && self.family() == Some(kind)) || self.covers_mcp_server_of(tool)
    }

    /// Whether the rule names `tool` whole: the tool's own name (or its MCP server's) without
    /// a specifier. A deny rule like that takes the tool off the list the model is offered.
    pub fn names_whole(&self, tool: &str) -> bool {
        matches!(self.spec, Spec::Any) && (self.tool == tool || self.covers_mcp_server_of(tool))
    }

    /// Whether the rule is `mcp__SERVER` (no tool part) and `tool` is `mcp__SERVER__TOOL`.
    fn covers_mcp_server_of(&self, tool: &str) -> bool {
        self.tool.strip_prefix("mcp__").is_some_and(|server| !server.is_empty() && !server.contains("__"))
            && tool.strip_prefix(self.tool.as_str()).is_some_and(|rest| rest.len() > 2 && rest.starts_with("__"))
    }

    /// The path pattern, for path rules.
    pub(crate) fn path(&self) -> Option<&PathPattern> {
        match &self.spec {
            Spec::Path(p) => Some(p),
            _ => None,
        }
    }
}

/// What is wrong with a rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    /// `Tool(…` without its closing parenthesis.
    #[error("missing `)`")]
    MissingParen,
    /// The tool name is empty or not a name.
    #[error("expected a tool name such as Bash or Edit")]
    ToolName,
    /// A specifier on a tool that takes none.
    #[error("only Bash, WebFetch and the file tools take a specifier")]
    Specifier,
    /// A WebFetch rule that is not `domain:HOST`.
    #[error("a WebFetch rule names a host: `WebFetch(domain:example.com)` or `WebFetch(domain:*.example.com)`")]
    Domain,
    /// A Bash rule with more (or less) than one simple command.
    #[error("a Bash rule names one simple command (use one rule per command)")]
    OneCommand,
    /// A Bash rule with something that is not a plain word.
    #[error("a Bash rule names plain words; here {0}")]
    NotPlain(shell::Hazard),
    /// A Bash rule that starts with `NAME=value`.
    #[error("a Bash rule cannot start with variable assignments")]
    Assignments,
    /// A word of a Bash rule that the shell would expand.
    #[error("`{0}` is not a plain word")]
    NotPlainWord(String),
    /// A Bash rule of no words.
    #[error("the command is empty")]
    EmptyCommand,
    /// A glob that does not compile.
    #[error(transparent)]
    Glob(#[from] globset::Error),
}

/// `git status:*`, `git status *`, `npm test`: shell words (quotes allowed), one command.
fn command_pattern(spec: &str) -> Result<CommandPattern, RuleProblem> {
    let (body, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(body) => (body.trim(), true),
        None => (spec, false),
    };
    let analysis = shell::analyze(body);
    let [cmd] = analysis.commands.as_slice() else {
        return Err(RuleProblem::OneCommand);
    };
    if !analysis.is_clean() && !analysis.hazards.iter().all(|h| matches!(h, shell::Hazard::Assignment(_))) {
        return Err(RuleProblem::NotPlain(analysis.hazards[0].clone()));
    }
    if !cmd.assignments.is_empty() {
        return Err(RuleProblem::Assignments);
    }
    let words = cmd
        .words
        .iter()
        .map(|w| match w.kind {
            WordKind::Literal => Ok(RuleWord::Literal(w.text.clone())),
            WordKind::Pattern => GlobBuilder::new(&w.text)
                .literal_separator(false)
                .build()
                .map(|g| RuleWord::Glob(g.compile_matcher()))
                .map_err(RuleProblem::Glob),
            WordKind::Dynamic => Err(RuleProblem::NotPlainWord(w.text.clone())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if words.is_empty() {
        return Err(RuleProblem::EmptyCommand);
    }
    Ok(CommandPattern { words, prefix })
}

/// `domain:example.com` or `domain:*.example.com`: a host name, compared without case.
fn domain_pattern(spec: &str) -> Result<DomainPattern, RuleProblem> {
    spec.strip_prefix("domain:").and_then(DomainPattern::parse).ok_or(RuleProblem::Domain)
}

/// `./secrets/**`, `src/**`, `//etc/hosts`, `~/notes/**`: a glob over absolute paths.
fn path_pattern(spec: &str, cwd: &Path) -> Result<PathPattern, RuleProblem> {
    let absolute = if let Some(abs) = spec.strip_prefix("//") {
        PathBuf::from("/").join(abs)
    } else if let Some(home) = spec.strip_prefix("~/") {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(home)
    } else if spec.starts_with('/') && !spec.starts_with("//") {
        // Claude Code reads `/x` as relative to the settings' project root, i.e. cwd.
        cwd.join(spec.trim_start_matches('/'))
    } else {
        cwd.join(spec.trim_start_matches("./"))
    };
    let pattern = absolute.to_string_lossy().into_owned();
    let glob = GlobBuilder::new(&pattern).literal_separator(true).build()?;
    let literal_end = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let literal = &pattern[..literal_end];
    let base = if literal_end == pattern.len() {
        PathBuf::from(literal)
    } else {
        // Up to the last separator before the first glob character.
        PathBuf::from(&literal[..literal.rfind('/').unwrap_or(0).max(1)])
    };
    let whole_tree = pattern.ends_with("/**");
    let is_glob = literal_end < pattern.len();
    let literal_tree = whole_tree && literal_end == pattern.len() - 2;
    Ok(PathPattern { glob: glob.compile_matcher(), base, whole_tree, is_glob, literal_tree })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(line: &str) -> SimpleCommand {
        shell::analyze(line).commands.remove(0)
    }

    fn pattern(spec: &str) -> CommandPattern {
        command_pattern(spec).unwrap()
    }

    #[test]
    fn mcp_rules_cover_a_whole_server_or_one_tool() {
        let rule = |text: &str| Rule::parse(text, Path::new("/w")).unwrap();
        let applies = |text: &str, tool: &str| rule(text).applies_to(tool, ToolKind::Other);
        assert!(applies("mcp__everything", "mcp__everything__echo"));
        assert!(applies("mcp__my-srv", "mcp__my-srv__get-x"));
        assert!(applies("mcp__everything__echo", "mcp__everything__echo"));
        assert!(!applies("mcp__everything__echo", "mcp__everything__add"));
        assert!(!applies("mcp__every", "mcp__everything__echo"));
        assert!(!applies("mcp__everything", "mcp__everything__"));
        assert!(!applies("mcp__", "mcp____echo"));
        assert!(Rule::parse("Bash-x", Path::new("/w")).is_err());
    }

    #[test]
    fn allow_matches_words_exactly_as_written() {
        let p = pattern("git status:*");
        assert!(p.allows(&cmd("git status")));
        assert!(p.allows(&cmd("git status --short")));
        assert!(p.allows(&cmd("git 'status' -s")));
        assert!(p.allows(&cmd("LANG=C git status")));
        assert!(!p.allows(&cmd("git statusx")));
        assert!(!p.allows(&cmd("/tmp/git status")));
        assert!(!p.allows(&cmd("git $X")));
        assert!(!p.allows(&cmd("PATH=/tmp git status")));
        let exact = pattern("npm test");
        assert!(exact.allows(&cmd("npm test")));
        assert!(!exact.allows(&cmd("npm test --watch")));
        assert!(pattern("cargo test *").allows(&cmd("cargo test -p x")));
    }

    #[test]
    fn deny_matches_base_names_and_words_in_order() {
        let rm = pattern("rm:*");
        assert!(rm.denies(&cmd("/bin/rm -rf x")));
        assert!(rm.denies(&cmd("rm")));
        let push = pattern("git push:*");
        assert!(push.denies(&cmd("git push origin main")));
        assert!(push.denies(&cmd("git -C . push")));
        assert!(push.denies(&cmd("git $SUB")));
        assert!(!push.denies(&cmd("git pull")));
    }

    #[test]
    fn bad_bash_rules_are_named() {
        let err = |spec: &str| Rule::parse(spec, Path::new("/")).unwrap_err().to_string();
        assert_eq!(
            err("Bash(ls; rm:*)"),
            "bad permission rule `Bash(ls; rm:*)`: a Bash rule names one simple command (use one rule per command)"
        );
        assert_eq!(
            err("Bash($X:*)"),
            "bad permission rule `Bash($X:*)`: a Bash rule names plain words; here the program `$X` is not a literal name"
        );
    }

    #[test]
    fn path_rules_know_their_base() {
        let p = path_pattern("./secrets/**", Path::new("/w")).unwrap();
        assert_eq!(p.base, Path::new("/w/secrets"));
        assert!(p.covers(Path::new("/w/secrets/key")));
        assert!(p.covers(Path::new("/w/secrets")));
        assert!(p.reaches_into(Path::new("/w")));
        assert!(!p.reaches_into(Path::new("/w/src")));
        let env = path_pattern("**/.env", Path::new("/w")).unwrap();
        assert_eq!(env.base, Path::new("/w"));
        assert!(env.covers(Path::new("/w/a/b/.env")));
        assert!(env.reaches_into(Path::new("/w/src")));
    }
}
