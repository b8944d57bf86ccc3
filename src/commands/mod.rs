//! Custom slash commands, as in Claude Code: Markdown files under `commands/` in the user's
//! directory and the project's `.claude/` (each only when its settings source is read), run
//! by a prompt `/NAME ARGUMENTS` from `-p`, stream-json input or the interactive session.
//!
//! A file's path below `commands/` names it: `review.md` is `/review`, `git/commit.md` is
//! `/git:commit`. Its frontmatter ([`crate::settings::frontmatter`]) may give `description`
//! (default: the body's first line), `argument-hint`, `allowed-tools` (rules that allow those
//! tools for that prompt, like `--allowedTools`) and `model` (that prompt's model); its body,
//! with the arguments put in ([`arguments`]), is the prompt. A user command wins over a
//! project command of the same name, as in Claude Code 2.1.332.
//!
//! A command file is a prompt, nothing more: listing or reading one runs nothing. The body's
//! `` !`command` `` spans and `@path` references ([`inline`]) are resolved when the user runs
//! the command, each as a `Bash` or `Read` call through the same permission check, hooks and
//! sandbox as the model's calls, with the command's `allowed-tools`.

pub mod arguments;
pub mod inline;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::settings::frontmatter::{Document, FileError};
use crate::settings::{ConfigDirs, SettingSource, SettingSources};
use arguments::Arguments;

/// agentloop's built-in commands that a stream-json prompt runs, listed after the custom ones
/// in `system/init`'s `slash_commands`. None: every built-in command of agentloop's is the
/// interactive session's.
pub const HEADLESS_BUILT_INS: &[&str] = &[];

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// The name after the `/`, `dir:name` for a file in a subdirectory.
    pub name: String,
    /// One line about it.
    pub description: String,
    /// What its arguments are, for completion menus (`argument-hint`).
    pub argument_hint: String,
    /// Rules that allow tools for the prompt it runs (`allowed-tools`).
    pub allowed_tools: Vec<String>,
    /// The model of the prompt it runs (`model`; `None` or `inherit`: the session's).
    pub model: Option<String>,
    /// The body: the prompt, before the arguments are put in.
    pub body: String,
    /// Whose it is.
    pub source: SettingSource,
    /// Its file.
    pub path: PathBuf,
}

/// The custom commands of a run, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Commands {
    list: Vec<CustomCommand>,
}

impl Commands {
    /// The commands of `sources` in `dirs`. A file that cannot be read, or whose frontmatter
    /// is malformed, is skipped with a warning naming it (and the line).
    pub fn discover(sources: &SettingSources, dirs: &ConfigDirs) -> (Commands, Vec<String>) {
        let mut list: Vec<CustomCommand> = Vec::new();
        let mut warnings = Vec::new();
        for &source in sources.list() {
            let Some(dir) = source.dir(dirs, "commands") else { continue };
            for (name, path) in command_files(&dir) {
                match read_command(&name, &path, source) {
                    Ok((command, warning)) => {
                        warnings.extend(warning);
                        // The user's command wins over the project's.
                        match list.iter_mut().find(|c| c.name == command.name) {
                            Some(slot) if command.source == SettingSource::User => *slot = command,
                            Some(_) => {}
                            None => list.push(command),
                        }
                    }
                    Err(e) => warnings.push(format!("{e}; the command is ignored")),
                }
            }
        }
        list.sort_by(|a, b| a.name.cmp(&b.name));
        (Commands { list }, warnings)
    }

    /// The commands, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &CustomCommand> {
        self.list.iter()
    }

    /// The command called `name`.
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.list.iter().find(|c| c.name == name)
    }

    /// The command a prompt runs, with the text after its name: `/NAME ARGUMENTS` where
    /// `NAME` is a custom command's.
    pub fn find<'a>(&self, prompt: &'a str) -> Option<(&CustomCommand, &'a str)> {
        let rest = prompt.trim_start().strip_prefix('/')?;
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        Some((self.get(&rest[..end])?, &rest[end..]))
    }

    /// `system/init`'s `slash_commands`: the custom commands, then the built-in ones a
    /// stream-json prompt runs ([`HEADLESS_BUILT_INS`]).
    pub fn slash_commands(&self) -> Vec<String> {
        self.list.iter().map(|c| c.name.clone()).chain(HEADLESS_BUILT_INS.iter().map(|&n| n.to_owned())).collect()
    }

    /// The `commands` of the answer to the Claude Agent SDK's `initialize`, in Claude Code's
    /// shape: `{"name", "description": "… (project)", "argumentHint"}`.
    pub fn initialize_entries(&self) -> Vec<Value> {
        self.list
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "description": format!("{} ({})", c.description, c.source.as_str()),
                    "argumentHint": c.argument_hint,
                })
            })
            .collect()
    }
}

impl CustomCommand {
    /// This command run with `arguments` (the text after its name).
    pub fn invoke(&self, arguments: &str) -> inline::Invocation {
        inline::Invocation::new(self, &Arguments::new(arguments))
    }
}

/// The `.md` files under `dir`, at any depth, with the names they give: the path below `dir`
/// without `.md`, its parts joined with `:`. Sorted by name; none when `dir` does not exist.
fn command_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "md") && path.is_file() {
                let Ok(relative) = path.strip_prefix(dir) else { continue };
                let parts: Vec<String> = relative
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                found.push((parts.join(":"), path));
            }
        }
    }
    found.sort();
    found
}

/// Read one command file; a warning for a `model` agentloop cannot use.
fn read_command(name: &str, path: &Path, source: SettingSource) -> Result<(CustomCommand, Option<String>), FileError> {
    let (file, doc) = Document::read(path)?;
    let text_of = |key: &str| doc.text(&file, key).map(|v| v.map(|t| t.trim().to_owned()));
    let description = match text_of("description")?.filter(|d| !d.is_empty()) {
        Some(description) => description,
        None => doc.body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_owned(),
    };
    let mut warning = None;
    let model = match text_of("model")?.filter(|m| !m.is_empty()) {
        None => None,
        Some(m) if m == "inherit" => None,
        Some(m) if m.starts_with("claude") => Some(m),
        Some(m) => {
            let line = doc.field("model").map_or(1, |f| f.line);
            warning = Some(format!(
                "{file}:{line}: model `{m}` is not a claude-… model name; /{name} runs on the session's model"
            ));
            None
        }
    };
    let command = CustomCommand {
        name: name.to_owned(),
        description,
        argument_hint: text_of("argument-hint")?.unwrap_or_default(),
        allowed_tools: doc.items("allowed-tools"),
        model,
        body: doc.body,
        source,
        path: path.to_path_buf(),
    };
    Ok((command, warning))
}

#[cfg(test)]
mod tests;
