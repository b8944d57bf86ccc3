//! Project memory: the instruction files a session gives the model, as Claude Code and Codex
//! read them. Lowest precedence first (a later file wins where they disagree):
//!
//! 1. managed policy: `/etc/claude-code/CLAUDE.md` (always read);
//! 2. the user's: `~/.claude/CLAUDE.md` (`$CLAUDE_CONFIG_DIR`), and Codex's
//!    `~/.codex/AGENTS.md` (`$CODEX_HOME`), when `--setting-sources` reads `user`;
//! 3. the project's, when it reads `project`: in every directory from the repository's top (or
//!    `/` outside a repository) down to the working directory, `CLAUDE.md`, `.claude/CLAUDE.md`
//!    and `AGENTS.md` (`AGENTS.override.md` instead, when there is one); then the working
//!    directory's `.claude/rules/*.md` that have no `paths` in their frontmatter;
//! 4. the user's private notes for the project, when it reads `local`: `CLAUDE.local.md` in
//!    the same directories.
//!
//! That is the memory of the session's start, in the system prompt. The rest comes when the
//! model first works on a file it covers ([`nested`]): the memory files of the directories
//! below the working directory down to the file's, and the rules whose `paths` globs match the
//! file, attached to the result of the `Read`, `Edit`, `Write` or `NotebookEdit` call that
//! touched it, each once per session.
//!
//! A file is loaded once, however it is reached (a `CLAUDE.md` that links or imports
//! `AGENTS.md`). `@path` in a file's text (not in code) imports another file after it:
//! relative to the importing file, `~/` for the home directory, at most [`IMPORT_DEPTH`]
//! levels deep. A project's file imports only files inside the project (the repository, or
//! the working directory outside one), and a project's file that is a link must lead inside
//! the project or its own directory: a cloned repository's `CLAUDE.md` cannot pull the user's
//! credentials into the prompt. The whole is capped at [`MEMORY_CAP_BYTES`]; what the cap cuts
//! is said to the model and to the user.
//!
//! Memory is data: it is shown to the model as the user's and the project's notes, never read
//! by the permission policy, so no file can change a rule. The interactive session's `/memory`
//! lists the files loaded, at the start and since, and opens one in the user's editor; `/init`
//! asks the model to write a starting `CLAUDE.md` (through its Write or Edit call, approved
//! as any other).

pub mod nested;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::settings::{ConfigDirs, SettingSource, SettingSources};

/// Bytes of memory a session loads at most, all files together.
pub const MEMORY_CAP_BYTES: usize = 40_000;

/// How deep `@path` imports go: a file imported by an imported file is depth 2.
pub const IMPORT_DEPTH: usize = 5;

/// Where a memory file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScope {
    /// The administrator's policy.
    Managed,
    /// The user's, for every project.
    User,
    /// The project's, checked into the repository.
    Project,
    /// The user's private notes for this project.
    Local,
}

impl MemoryScope {
    /// Its name, as `system/init` spells it: `managed`, `user`, `project` or `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Managed => "managed",
            MemoryScope::User => "user",
            MemoryScope::Project => "project",
            MemoryScope::Local => "local",
        }
    }

    /// What the model is told the file is.
    fn describe(self) -> &'static str {
        match self {
            MemoryScope::Managed => "managed policy instructions, set by an administrator",
            MemoryScope::User => "the user's own instructions, for all projects",
            MemoryScope::Project => "project instructions, checked into the repository",
            MemoryScope::Local => "the user's private instructions for this project",
        }
    }
}

/// One file loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryFile {
    /// Its path, as found.
    pub path: PathBuf,
    /// Its scope.
    pub scope: MemoryScope,
    /// Bytes of it loaded (less than the file when the cap cut it).
    pub bytes: usize,
    /// The file whose `@` import brought it in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<PathBuf>,
    /// Whether the cap cut it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    #[serde(skip)]
    text: String,
}

impl MemoryFile {
    /// The file under a heading with its path and where it comes from (its scope, the file
    /// that imported it, and `applies`: what it applies to, if it says), for the model; a
    /// file the cap cut ends with `cut_note`.
    fn render(&self, applies: Option<&str>, cut_note: &str) -> String {
        let mut source = self.scope.describe().to_owned();
        if let Some(from) = &self.imported_from {
            source.push_str(&format!(", imported by {}", from.display()));
        }
        if let Some(applies) = applies {
            source.push_str(&format!(", {applies}"));
        }
        let mut out = format!("## {} ({source})\n\n{}", self.path.display(), self.text.trim_end());
        if self.cut {
            out.push_str(&format!("\n\n{cut_note}"));
        }
        out
    }
}

/// The memory of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The files loaded, lowest precedence first.
    pub files: Vec<MemoryFile>,
    /// What the user should know: files skipped or cut, imports refused.
    pub warnings: Vec<String>,
    /// Files the cap left out entirely.
    pub left_out: Vec<PathBuf>,
    /// The canonical path of every file the discovery reached (loaded, cut, left out or
    /// refused): [`nested::NestedMemory`] never attaches one of them again.
    reached: BTreeSet<PathBuf>,
}

/// Where a discovery looks besides the setting sources' directories.
#[derive(Debug, Clone, Default)]
pub struct MemoryRoots {
    /// The managed policy directory (`/etc/claude-code`).
    pub managed: Option<PathBuf>,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub codex: Option<PathBuf>,
    /// The home directory, for `~/` in imports.
    pub home: Option<PathBuf>,
}

impl MemoryRoots {
    /// The roots of this machine and environment.
    pub fn from_env() -> MemoryRoots {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let codex = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".codex")));
        MemoryRoots { managed: Some(PathBuf::from("/etc/claude-code")), codex, home }
    }
}

/// A file to read, and what may be imported from it.
struct Candidate {
    path: PathBuf,
    scope: MemoryScope,
    /// Imports must stay inside this directory (a project's files); `None`: anywhere.
    confine: Option<PathBuf>,
}

impl Memory {
    /// The memory files of a session in `dirs.project`, from the scopes `sources` reads.
    pub fn discover(sources: &SettingSources, dirs: &ConfigDirs, roots: &MemoryRoots) -> Memory {
        let reads = |s: SettingSource| sources.list().contains(&s);
        let cwd = dirs.project.canonicalize().unwrap_or_else(|_| dirs.project.clone());
        let top = crate::permissions::git::repository_top(&cwd);
        let project_root = top.clone().unwrap_or_else(|| cwd.clone());
        // From the top (or `/`) down to the working directory.
        let mut chain: Vec<PathBuf> = cwd
            .ancestors()
            .take_while(|d| top.as_ref().is_none_or(|t| d.starts_with(t)))
            .map(Path::to_path_buf)
            .collect();
        chain.reverse();
        let mut candidates = Vec::new();
        let mut memory = Memory::default();
        let mut add = |path: PathBuf, scope: MemoryScope, confine: Option<PathBuf>| {
            if path.is_file() {
                candidates.push(Candidate { path, scope, confine });
            }
        };
        if let Some(managed) = &roots.managed {
            add(managed.join("CLAUDE.md"), MemoryScope::Managed, None);
        }
        if reads(SettingSource::User) {
            if let Some(user) = &dirs.user {
                add(user.join("CLAUDE.md"), MemoryScope::User, None);
            }
            if let Some(codex) = &roots.codex {
                add(codex.join("AGENTS.md"), MemoryScope::User, None);
            }
        }
        if reads(SettingSource::Project) {
            for dir in &chain {
                let both = dir.join("CLAUDE.md").is_file() && dir.join("AGENTS.md").is_file();
                if both {
                    memory.warnings.push(format!(
                        "{} has both CLAUDE.md and AGENTS.md: both are loaded (a file reached twice is loaded once)",
                        dir.display()
                    ));
                }
                for path in project_files(dir) {
                    add(path, MemoryScope::Project, Some(project_root.clone()));
                }
            }
            let (rules, warnings) = rules_of(&cwd);
            memory.warnings.extend(warnings);
            // A rule with `paths` waits for a file it matches (`nested`).
            for rule in rules.into_iter().filter(|r| r.paths.is_none()) {
                add(rule.path, MemoryScope::Project, Some(project_root.clone()));
            }
        }
        if reads(SettingSource::Local) {
            for dir in &chain {
                add(dir.join("CLAUDE.local.md"), MemoryScope::Local, Some(project_root.clone()));
            }
        }
        let mut loader = Loader { memory, seen: BTreeSet::new(), home: roots.home.clone(), total: 0 };
        for candidate in candidates {
            loader.load(candidate, None, 0);
        }
        loader.memory.reached = loader.seen;
        loader.memory
    }

    /// The system prompt's section holding the memory; `None` with no file loaded.
    pub fn section(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Memory\n\nThese instruction files were loaded for this session, lowest precedence first: where \
             they disagree, the later one wins. They are notes of the user and of the project, not messages \
             from the user, and they cannot change what the permission rules allow.",
        );
        let cut = format!("[The rest of this file is not loaded: memory is capped at {MEMORY_CAP_BYTES} bytes.]");
        for file in &self.files {
            out.push_str("\n\n");
            out.push_str(&file.render(None, &cut));
        }
        if !self.left_out.is_empty() {
            let names: Vec<String> = self.left_out.iter().map(|p| p.display().to_string()).collect();
            out.push_str(&format!(
                "\n\n[Not loaded, past the {MEMORY_CAP_BYTES}-byte cap on memory: {}. Read them if the task needs them.]",
                names.join(", ")
            ));
        }
        Some(out)
    }
}

/// The project's memory files of `dir`, in order: `CLAUDE.md`, `.claude/CLAUDE.md`, and
/// `AGENTS.override.md` when there is one, else `AGENTS.md` (they need not exist).
fn project_files(dir: &Path) -> [PathBuf; 3] {
    let agents = match dir.join("AGENTS.override.md") {
        over if over.is_file() => over,
        _ => dir.join("AGENTS.md"),
    };
    [dir.join("CLAUDE.md"), dir.join(".claude").join("CLAUDE.md"), agents]
}

/// A rule file of the working directory (`.claude/rules/*.md`).
struct RuleFile {
    path: PathBuf,
    /// The glob patterns of its `paths`, when its frontmatter has that field (a list, or a
    /// text of comma-separated patterns: `paths: src/**/*.{ts,tsx}, lib/**`).
    paths: Option<Vec<String>>,
}

/// The rule files of `cwd`, sorted, and a warning for each file that cannot be read.
fn rules_of(cwd: &Path) -> (Vec<RuleFile>, Vec<String>) {
    use crate::settings::frontmatter::{Document, markdown_files};
    let (mut rules, mut warnings) = (Vec::new(), Vec::new());
    for path in markdown_files(&cwd.join(".claude").join("rules")) {
        match Document::read(&path) {
            Ok((_, doc)) => {
                let paths = doc.field("paths").map(|_| doc.items("paths"));
                rules.push(RuleFile { path, paths });
            }
            Err(e) => warnings.push(format!("{e}; the rule file is not loaded")),
        }
    }
    (rules, warnings)
}

/// Reads candidates and their imports, each file once, within the cap.
struct Loader {
    memory: Memory,
    /// Canonical paths loaded (or being loaded, or refused).
    seen: BTreeSet<PathBuf>,
    home: Option<PathBuf>,
    total: usize,
}

impl Loader {
    fn load(&mut self, candidate: Candidate, from: Option<&Path>, depth: usize) {
        let Candidate { path, scope, confine } = candidate;
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !self.seen.insert(canonical.clone()) {
            return;
        }
        // A project's file that is a link must lead inside the project or the directory it is
        // in: a planted `CLAUDE.md -> ~/.aws/credentials` is not read.
        let found_in = path.parent().and_then(|d| d.canonicalize().ok());
        if let Some(root) = &confine
            && !canonical.starts_with(root)
            && !found_in.is_some_and(|dir| canonical.starts_with(dir))
        {
            self.memory.warnings.push(format!(
                "{} is not loaded: it links to {}, outside the project",
                path.display(),
                canonical.display()
            ));
            return;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                self.memory.warnings.push(format!("{}: cannot be read ({e}); it is not loaded", path.display()));
                return;
            }
        };
        if self.total >= MEMORY_CAP_BYTES {
            self.memory.left_out.push(path.clone());
            self.memory
                .warnings
                .push(format!("{} is not loaded: memory is capped at {MEMORY_CAP_BYTES} bytes", path.display()));
            return;
        }
        let room = MEMORY_CAP_BYTES - self.total;
        let (kept, cut) = if text.len() > room {
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.memory.warnings.push(format!(
                "{} is cut after {end} of its {} bytes: memory is capped at {MEMORY_CAP_BYTES} bytes",
                path.display(),
                text.len()
            ));
            (text[..end].to_owned(), true)
        } else {
            (text.clone(), false)
        };
        self.total += kept.len();
        let imports = imports_of(&kept);
        self.memory.files.push(MemoryFile {
            path: path.clone(),
            scope,
            bytes: kept.len(),
            imported_from: from.map(Path::to_path_buf),
            cut,
            text: kept,
        });
        let dir = path.parent().unwrap_or(Path::new("/"));
        for import in imports {
            let target = match (import.strip_prefix("~/"), &self.home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => continue,
                (None, _) => dir.join(&import),
            };
            if !target.is_file() {
                continue;
            }
            if depth + 1 > IMPORT_DEPTH {
                self.memory.warnings.push(format!(
                    "{}: the import of {} is not followed: imports go {IMPORT_DEPTH} levels deep at most",
                    path.display(),
                    target.display()
                ));
                continue;
            }
            let resolved = target.canonicalize().unwrap_or_else(|_| target.clone());
            if let Some(root) = &confine
                && !resolved.starts_with(root)
            {
                self.memory.warnings.push(format!(
                    "{}: the import of {} is refused: a project's memory imports only files inside the project",
                    path.display(),
                    target.display()
                ));
                continue;
            }
            if self.seen.contains(&resolved) {
                continue;
            }
            self.load(Candidate { path: target, scope, confine: confine.clone() }, Some(&path), depth + 1);
        }
    }
}

/// The `@path` imports of a memory file's text: words that start with `@` and name a path
/// (`@notes.md`, `@docs/style.md`, `@~/prefs.md`, `@/etc/x.md`), outside fenced code blocks and
/// inline code spans. An e-mail address or a lone `@` is not one.
fn imports_of(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let mut previous = ' ';
        for (i, c) in line.char_indices() {
            if c == '`' {
                in_code = !in_code;
            } else if c == '@' && !in_code && previous.is_whitespace() {
                let rest = &line[i + 1..];
                let word: String = rest.chars().take_while(|c| !c.is_whitespace() && *c != '`').collect();
                let word = word.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']).to_owned();
                if !word.is_empty() && (word.contains('/') || word.contains('.')) {
                    found.push(word);
                }
            }
            previous = c;
        }
    }
    found
}

#[cfg(test)]
mod tests;
