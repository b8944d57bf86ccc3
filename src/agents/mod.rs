//! Subagent definitions, as Claude Code 2.1.332 reads them: what an `Agent` tool call may
//! delegate to, and with which prompt, tools, model, permission mode and turn bound.
//!
//! Five sources, lowest precedence first, a later definition of a name replacing an earlier:
//! - the built-in `general-purpose` agent (every tool but `Agent`, the session's model);
//! - Markdown files under `agents/` of the user's directory (`~/.claude/agents/*.md`), when
//!   `--setting-sources` reads the user source;
//! - the `--agents JSON` flag;
//! - Markdown files under the project's `.claude/agents/`, when it reads the project source;
//! - the Claude Agent SDK's `initialize.agents`.
//!
//! A file's frontmatter ([`crate::settings::frontmatter`]) gives `name` (default: the file's
//! name without `.md`), `description` (required: the model chooses by it), `tools` and
//! `disallowedTools` (comma-separated or a list; no `tools` means every tool but `Agent`),
//! `model` (`inherit`, an alias `haiku`/`sonnet`/`opus`, or a model id), `permissionMode` and
//! `maxTurns`; the body is the agent's system prompt. JSON definitions have the same fields,
//! with `prompt` for the body. A definition that cannot be used is skipped with a warning
//! naming the file and line (or the JSON key); reading one runs nothing.

pub(crate) mod host;
pub(crate) mod tool;
pub(crate) mod worktree;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::permissions::Mode;
use crate::settings::frontmatter::{Document, FileError, markdown_files};
use crate::settings::{ConfigDirs, SettingSource, SettingSources};

pub use host::{Killed, Refused, Requested, Spawner, SubagentStats};
pub use tool::AgentTool;

/// The name of the tool a model delegates with; a child is never offered it.
pub const AGENT_TOOL: &str = "Agent";

/// The built-in agent's name.
pub const GENERAL_PURPOSE: &str = "general-purpose";

/// Where a definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentSource {
    /// Built into agentloop.
    BuiltIn,
    /// `~/.claude/agents/`.
    User,
    /// `--agents JSON`.
    Flag,
    /// The project's `.claude/agents/`.
    Project,
    /// The SDK's `initialize.agents`.
    Sdk,
}

impl AgentSource {
    /// How Claude Code names the source.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentSource::BuiltIn => "built-in",
            AgentSource::User => "user",
            AgentSource::Flag => "flagSettings",
            AgentSource::Project => "project",
            AgentSource::Sdk => "sdk",
        }
    }
}

/// The model a child runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentModel {
    /// The parent's model (`inherit`, or none given).
    Inherit,
    /// This model id (an alias already resolved).
    Id(String),
}

/// One subagent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// The name `subagent_type` gives.
    pub name: String,
    /// When to use it: the model reads it in the `Agent` tool's description.
    pub description: String,
    /// Its system prompt.
    pub prompt: String,
    /// The tools it may use; `None`: every tool of the parent's but `Agent`.
    pub tools: Option<Vec<String>>,
    /// Tools taken away from those.
    pub disallowed_tools: Vec<String>,
    /// Its model.
    pub model: AgentModel,
    /// Its permission mode, never more than its parent's; `None`: the parent's.
    pub permission_mode: Option<Mode>,
    /// Its own `max_turns`; `None`: the table's bound.
    pub max_turns: Option<u32>,
    /// Where it comes from.
    pub source: AgentSource,
    /// Its file, for a Markdown definition.
    pub path: Option<PathBuf>,
}

impl AgentDefinition {
    /// The built-in `general-purpose` agent.
    pub fn general_purpose() -> AgentDefinition {
        AgentDefinition {
            name: GENERAL_PURPOSE.to_owned(),
            description: "General-purpose agent for researching complex questions, searching for code, and \
                          executing multi-step tasks. When you are searching for a keyword or file and are not \
                          confident that you will find the right match in the first few tries use this agent \
                          to perform the search for you."
                .to_owned(),
            prompt: "You are an agent for agentloop. Given the user's message, use the tools available to \
                     complete the task. Do what has been asked; nothing more, nothing less. When you complete \
                     the task, respond with a concise report covering what was done and any key findings: \
                     the caller relays it to the user, who does not see your work."
                .to_owned(),
            tools: None,
            disallowed_tools: Vec::new(),
            model: AgentModel::Inherit,
            permission_mode: None,
            max_turns: None,
            source: AgentSource::BuiltIn,
            path: None,
        }
    }

    /// The names of the tools a child of this definition is offered, from `available` (the
    /// parent's tools, in order): its `tools` (all when none), without `disallowedTools`, and
    /// never `Agent`. A listed tool the parent lacks is not offered.
    pub fn child_tools(&self, available: &[String]) -> Vec<String> {
        available
            .iter()
            .filter(|t| t.as_str() != AGENT_TOOL)
            .filter(|t| self.tools.as_ref().is_none_or(|list| list.contains(t)))
            .filter(|t| !self.disallowed_tools.contains(t))
            .cloned()
            .collect()
    }
}

/// The model id an agent's `model` names: `haiku`, `sonnet` and `opus` are aliases of the
/// current models of those families; anything else is taken as an id.
pub fn resolve_model(name: &str) -> AgentModel {
    match name.trim() {
        "" | "inherit" => AgentModel::Inherit,
        "haiku" => AgentModel::Id("claude-haiku-4-5".to_owned()),
        "sonnet" => AgentModel::Id("claude-sonnet-4-5".to_owned()),
        "opus" => AgentModel::Id("claude-opus-4-5".to_owned()),
        id => AgentModel::Id(id.to_owned()),
    }
}

/// Why a definition cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// The file cannot be read, or its frontmatter does not parse.
    #[error(transparent)]
    File(#[from] FileError),
    /// A field has a value agentloop cannot use.
    #[error("{at}: {message}")]
    Field {
        /// `file:line`, or the JSON key (`--agents.greeter.maxTurns`).
        at: String,
        /// What is wrong.
        message: String,
    },
    /// `--agents` is not a JSON object of objects.
    #[error("{source_name}: {message}")]
    Json {
        /// `--agents` or `initialize.agents`.
        source_name: String,
        /// What is wrong.
        message: String,
    },
}

/// The agents of a session, sorted by name as Claude Code lists them (ignoring case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agents {
    list: Vec<AgentDefinition>,
}

impl Default for Agents {
    fn default() -> Agents {
        Agents { list: vec![AgentDefinition::general_purpose()] }
    }
}

impl Agents {
    /// The built-in agent and the Markdown definitions of `sources` in `dirs` (the user's
    /// below the project's), with those of `flag` (`--agents JSON`) between them. A file that
    /// cannot be used is skipped with a warning naming it.
    ///
    /// # Errors
    /// [`DefinitionError::Json`] when `flag` is not a JSON object of definitions: the flag is
    /// the user's own input, refused rather than skipped.
    pub fn discover(
        sources: &SettingSources,
        dirs: &ConfigDirs,
        flag: Option<&str>,
    ) -> Result<(Agents, Vec<String>), DefinitionError> {
        let mut agents = Agents::default();
        let mut warnings = Vec::new();
        let read = |source: SettingSource, agents: &mut Agents, warnings: &mut Vec<String>| {
            let Some(dir) = source.dir(dirs, "agents") else { return };
            let from = match source {
                SettingSource::User => AgentSource::User,
                SettingSource::Project | SettingSource::Local => AgentSource::Project,
            };
            for path in markdown_files(&dir) {
                match read_file(&path, from) {
                    Ok(definition) => agents.insert(definition),
                    Err(e) => warnings.push(format!("{e}; the agent is ignored")),
                }
            }
        };
        if sources.list().contains(&SettingSource::User) {
            read(SettingSource::User, &mut agents, &mut warnings);
        }
        if let Some(text) = flag {
            let value: Value = serde_json::from_str(text).map_err(|e| DefinitionError::Json {
                source_name: "--agents".into(),
                message: format!("not JSON: {e}"),
            })?;
            warnings.extend(agents.add_json("--agents", &value, AgentSource::Flag)?);
        }
        if sources.list().contains(&SettingSource::Project) {
            read(SettingSource::Project, &mut agents, &mut warnings);
        }
        Ok((agents, warnings))
    }

    /// Add the definitions of a JSON object `{name: {description, prompt, tools, …}}` from
    /// `source_name` (`--agents`, `initialize.agents`), replacing those of the same names; a
    /// definition with a bad field is skipped with a warning.
    ///
    /// # Errors
    /// [`DefinitionError::Json`] when `value` is not an object of objects.
    pub fn add_json(
        &mut self,
        source_name: &str,
        value: &Value,
        source: AgentSource,
    ) -> Result<Vec<String>, DefinitionError> {
        let json_error = |message: String| DefinitionError::Json { source_name: source_name.to_owned(), message };
        let Some(map) = value.as_object() else {
            return Err(json_error("must be an object of agent definitions by name".into()));
        };
        let mut warnings = Vec::new();
        for (name, fields) in map {
            let Some(fields) = fields.as_object() else {
                return Err(json_error(format!("`{name}` must be an object")));
            };
            match from_json(source_name, name, fields, source) {
                Ok(definition) => self.insert(definition),
                Err(e) => warnings.push(format!("{e}; the agent is ignored")),
            }
        }
        Ok(warnings)
    }

    /// Add `definition`, replacing one of the same name.
    pub fn insert(&mut self, definition: AgentDefinition) {
        match self.list.iter_mut().find(|d| d.name == definition.name) {
            Some(slot) => *slot = definition,
            None => self.list.push(definition),
        }
        self.list.sort_by_key(|d| d.name.to_lowercase());
    }

    /// The definitions, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.list.iter()
    }

    /// The definition called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.list.iter().find(|d| d.name == name)
    }

    /// `system/init`'s `agents`: the names.
    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|d| d.name.clone()).collect()
    }
}

/// Read one Markdown definition.
fn read_file(path: &Path, source: AgentSource) -> Result<AgentDefinition, DefinitionError> {
    let (file, doc) = Document::read(path)?;
    let at = |key: &str| format!("{file}:{}", doc.field(key).map_or(1, |f| f.line));
    let text = |key: &str| doc.text(&file, key).map(|v| v.map(|t| t.trim().to_owned())).map_err(FileError::from);
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = text("name")?.filter(|n| !n.is_empty()).unwrap_or(stem);
    check_name(&name).map_err(|message| DefinitionError::Field { at: at("name"), message })?;
    let description = text("description")?.filter(|d| !d.is_empty()).ok_or_else(|| DefinitionError::Field {
        at: at("description"),
        message: "an agent needs a `description`: the model chooses agents by it".into(),
    })?;
    let tools = doc.field("tools").map(|_| doc.items("tools"));
    let disallowed_tools = doc.items("disallowedTools");
    let model = resolve_model(&text("model")?.unwrap_or_default());
    let permission_mode = match text("permissionMode")? {
        None => None,
        Some(m) => {
            Some(parse_mode(&m).map_err(|message| DefinitionError::Field { at: at("permissionMode"), message })?)
        }
    };
    let max_turns = match text("maxTurns")? {
        None => None,
        Some(n) => Some(parse_turns(&n).map_err(|message| DefinitionError::Field { at: at("maxTurns"), message })?),
    };
    Ok(AgentDefinition {
        name,
        description,
        prompt: doc.body.trim_end().to_owned(),
        tools,
        disallowed_tools,
        model,
        permission_mode,
        max_turns,
        source,
        path: Some(path.to_path_buf()),
    })
}

/// Read one JSON definition `name: fields` of `source_name`.
fn from_json(
    source_name: &str,
    name: &str,
    fields: &serde_json::Map<String, Value>,
    source: AgentSource,
) -> Result<AgentDefinition, DefinitionError> {
    let at = |key: &str| format!("{source_name}.{name}.{key}");
    let field = |key: &str, message: String| DefinitionError::Field { at: at(key), message };
    check_name(name).map_err(|m| field("name", m))?;
    let text = |key: &str| -> Result<Option<String>, DefinitionError> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(field(key, "must be a string".into())),
        }
    };
    let list = |key: &str| -> Result<Option<Vec<String>>, DefinitionError> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| field(key, "must be a list of tool names".into())))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(field(key, "must be a list of tool names".into())),
        }
    };
    let description = text("description")?
        .filter(|d| !d.is_empty())
        .ok_or_else(|| field("description", "an agent needs a `description`: the model chooses agents by it".into()))?;
    let prompt = text("prompt")?
        .filter(|p| !p.is_empty())
        .ok_or_else(|| field("prompt", "an agent needs a `prompt`: its system prompt".into()))?;
    let permission_mode = match text("permissionMode")? {
        None => None,
        Some(m) => Some(parse_mode(&m).map_err(|m| field("permissionMode", m))?),
    };
    let max_turns = match fields.get("maxTurns") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(parse_turns(&n.to_string()).map_err(|m| field("maxTurns", m))?),
        Some(_) => return Err(field("maxTurns", "must be a positive whole number".into())),
    };
    Ok(AgentDefinition {
        name: name.to_owned(),
        description,
        prompt,
        tools: list("tools")?,
        disallowed_tools: list("disallowedTools")?.unwrap_or_default(),
        model: resolve_model(&text("model")?.unwrap_or_default()),
        permission_mode,
        max_turns,
        source,
        path: None,
    })
}

/// Names are what `subagent_type` matches: letters, digits, `-`, `_`, `:` and `.`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c));
    if ok { Ok(()) } else { Err(format!("`{name}` is not an agent name (letters, digits, `-`, `_`, `:`, `.`)")) }
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    text.parse::<Mode>()
        .map_err(|_| format!("`{text}` is not a permission mode (default, acceptEdits, plan, bypassPermissions)"))
}

fn parse_turns(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive whole number of turns")),
    }
}

#[cfg(test)]
mod tests;
