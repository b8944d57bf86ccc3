//! Why the command line's flags cannot make a run: each message is one line for the user,
//! printed as `agentloop: MESSAGE` before exit 2 (see [`crate::launch::ExitStatus::Usage`]).

use std::path::PathBuf;

use crate::cli::table_file::TableFileError;
use crate::harness::HarnessError;
use crate::json_schema::SchemaError;
use crate::launch::session::OpenError;
use crate::mcp::config::ConfigError;
use crate::model::ModelError;
use crate::permissions::PermissionError;
use crate::sandbox::SandboxError;
use crate::scenario::ScenarioError;
use crate::settings::{LoadError, SourcesError};

/// Why `run` (or the top-level command line) cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The current directory cannot be read (no `--cwd`).
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    /// `--cwd` names no directory.
    #[error("--cwd {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// `--cwd` cannot be made absolute.
    #[error("--cwd {}: {error}", .cwd.display())]
    Canonicalize {
        /// The directory given.
        cwd: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `--table` cannot be used.
    #[error(transparent)]
    Table(#[from] TableFileError),
    /// `--model scripted:FILE` names no usable scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The scenario's files cannot be written into the working directory.
    #[error("cannot write the scenario's files: {0}")]
    ScenarioFiles(std::io::Error),
    /// The scenario's settings are malformed.
    #[error(transparent)]
    ScenarioSettings(#[from] HarnessError),
    /// A `--model` that names no model.
    #[error("--model: {0}")]
    BadModel(String),
    /// The Messages API client cannot be set up (no credential, a bad base URL, …).
    #[error("{}", model_setup(.0))]
    ModelSetup(ModelError),
    /// A text prompt that is empty.
    #[error("no prompt: pass -p PROMPT")]
    NoPrompt,
    /// `--setting-sources` names an unknown source.
    #[error(transparent)]
    SettingSources(#[from] SourcesError),
    /// `--settings` cannot be used.
    #[error(transparent)]
    Settings(#[from] LoadError),
    /// `--system-prompt-file` cannot be read.
    #[error("--system-prompt-file {}: {error}", .path.display())]
    SystemPromptFile {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `MAX_THINKING_TOKENS` is not a number.
    #[error("MAX_THINKING_TOKENS={0}: not a number of tokens")]
    ThinkingTokens(String),
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS` is not a positive number.
    #[error("CLAUDE_CODE_MAX_OUTPUT_TOKENS={0}: not a positive number of tokens")]
    OutputTokens(String),
    /// `--json-schema` is not JSON.
    #[error("--json-schema: not JSON: {0}")]
    JsonSchemaSyntax(serde_json::Error),
    /// `--json-schema` is no usable schema.
    #[error("--json-schema: {0}")]
    JsonSchema(SchemaError),
    /// `--agents` is not a JSON object of agent definitions.
    #[error(transparent)]
    Agents(crate::agents::DefinitionError),
    /// `--tools` names a tool there is not.
    #[error("--tools: unknown tool `{name}` (tools: {})", .known.join(", "))]
    UnknownTool {
        /// The name given.
        name: String,
        /// The standard tools' names.
        known: Vec<String>,
    },
    /// The engine's options, once every flag applied, are out of range.
    #[error(transparent)]
    Options(crate::engine::options::OptionsError),
    /// The settings' `sandbox` block cannot be used.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// An `--mcp-config` cannot be used.
    #[error(transparent)]
    McpConfig(#[from] ConfigError),
    /// The permission mode or a rule is bad.
    #[error(transparent)]
    Policy(#[from] PermissionError),
    /// The session the flags ask for cannot be opened.
    #[error(transparent)]
    Session(#[from] OpenError),
}

/// What a model client's setup failure says: a configuration problem's own help, as it is.
fn model_setup(error: &ModelError) -> String {
    match error {
        ModelError::Config(help) => help.clone(),
        other => other.to_string(),
    }
}
