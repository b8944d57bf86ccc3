//! The scenario format: a JSON file that scripts a whole run for the scripted model (prompt,
//! starting files, options, hook settings, an optional interrupt and every model reply).
//!
//! This module owns parsing and checking only. Streaming the replies belongs to
//! [`crate::model::scripted`], applying `options` and `settings` to the engine and hooks.
//! Every error names the file, the JSON path and what was expected, because a scenario is
//! written by hand and a vague error costs more than the scenario.

mod block;
pub mod builtin;
mod validate;

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::json_path;
use crate::protocol::StopReason;

pub use block::{BlockError, ScriptBlock};

/// A scripted run. Only `responses` is required.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name (used by `agentloop demo NAME`).
    #[serde(default)]
    pub name: String,
    /// One line saying what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// The user's prompt.
    #[serde(default)]
    pub prompt: String,
    /// Files written into the working directory before the run: relative path -> content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Engine options.
    #[serde(default)]
    pub options: ScenarioOptions,
    /// Claude Code settings JSON (hooks); `Null` when absent. Parsed by the hooks module.
    #[serde(default)]
    pub settings: Value,
    /// A simulated Ctrl+C.
    #[serde(default)]
    pub abort: Option<AbortSpec>,
    /// Replies to main-loop requests, in order.
    pub responses: Vec<ScriptedResponse>,
    /// Replies to side requests (compaction summaries), in order.
    #[serde(default)]
    pub aux: Vec<ScriptedResponse>,
    /// Replies to the requests of subagents' runs: a request whose first message is a
    /// script's `prompt` (the `Agent` call's) is answered from that script's `responses`,
    /// so each child run is scripted apart, whatever order parallel children ask in.
    #[serde(default)]
    pub subagents: Vec<SubagentScript>,
    /// Subagent definitions besides the built-in `general-purpose`, as `--agents` takes
    /// them: `{name: {description, prompt, tools, model, permissionMode, maxTurns}}`.
    #[serde(default)]
    pub agents: Value,
    /// What a run of the scenario comes to. The run ignores it; the tests check every
    /// built-in scenario against its own (`tests/it/transitions.rs`).
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// A session to resume instead of a new one: an earlier prompt whose reply a kill cut off
    /// in its tool phase, and the tool journal that run left. The run repairs it as
    /// `--resume` does, and `prompt` is the resumed run's prompt.
    #[serde(default)]
    pub resume: Option<ResumeSpec>,
}

/// The conversation a scenario resumes ([`Scenario::resume`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeSpec {
    /// The earlier prompt.
    pub prompt: String,
    /// The cut reply's content blocks, as the API sent them (`tool_use` blocks with their ids).
    pub reply: Vec<crate::protocol::ContentBlock>,
    /// The tool journal's lines the killed run wrote, in order
    /// (`{"phase":"start","toolUseId":…,"name":…,"readOnly":…}`, `{"phase":"end","toolUseId":…,"result":…}`).
    #[serde(default)]
    pub journal: Vec<crate::session::JournalLine>,
}

/// The replies of one subagent's run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentScript {
    /// The `prompt` of the `Agent` call that starts it: its run's first user message.
    pub prompt: String,
    /// Its replies, in order.
    pub responses: Vec<ScriptedResponse>,
}

/// The edges a scenario's run takes and the reason it ends with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The terminal reason.
    pub reason: String,
    /// Every edge id the run takes, in order.
    pub edges: Vec<String>,
}

/// Engine options a scenario may set; each `None` keeps the engine's default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioOptions {
    /// Turn limit.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Output-token target of the token budget.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// Context window, in tokens (small values reach compaction with small scenarios).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Model to switch to after repeated overloads.
    #[serde(default)]
    pub fallback_model: Option<String>,
    /// Retries of one request.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// First retry backoff, in milliseconds.
    #[serde(default)]
    pub retry_base_delay_ms: Option<u64>,
    /// Model name sent in requests.
    #[serde(default)]
    pub model: Option<String>,
    /// Concurrency-safe tool calls that may run at once.
    #[serde(default)]
    pub max_tool_concurrency: Option<usize>,
    /// Characters of one tool result before it is cut.
    #[serde(default)]
    pub tool_result_cap: Option<usize>,
    /// Spend cap in US dollars (`--max-budget-usd`).
    #[serde(default)]
    pub max_budget_usd: Option<f64>,
    /// Answer format (`--json-schema`): the run offers `StructuredOutput` with this schema.
    #[serde(default)]
    pub json_schema: Option<Value>,
}

/// When the simulated Ctrl+C happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbortSpec {
    /// Index into `responses` (from 0) of the reply during which the user interrupts.
    pub response: usize,
    /// Whether the interrupt comes while that reply streams, while its tools run, or while
    /// the Stop hooks after it run.
    pub phase: AbortPhase,
}

/// The phase of a reply in which [`AbortSpec`] interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortPhase {
    /// Right after the reply's first block has streamed.
    Stream,
    /// When the reply's tools start running.
    Tools,
    /// When the Stop hooks of the reply's end of turn start running.
    StopHooks,
}

/// One scripted model reply.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    /// Content blocks (`text`, `tool_use` with optional `id`, `thinking`) as JSON.
    #[serde(default)]
    pub content: Vec<Value>,
    /// Stop reason; see [`ScriptedResponse::stop_reason`] for the default.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Usage to report; estimated from character counts when absent.
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    /// Delay before every event after `message_start`, in milliseconds.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Checks on the request this reply answers.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Fail the request (HTTP) or the stream (SSE `error` event) instead of answering.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// The connection drops after this many complete blocks: no `message_stop`.
    #[serde(default)]
    pub cut_after_blocks: Option<usize>,
}

impl ScriptedResponse {
    /// The checked content blocks.
    ///
    /// # Errors
    /// The index of the first malformed block and what is wrong with it.
    pub fn blocks(&self) -> Result<Vec<ScriptBlock>, (usize, BlockError)> {
        self.content.iter().enumerate().map(|(i, b)| ScriptBlock::from_value(b).map_err(|m| (i, m))).collect()
    }

    /// The stop reason to stream: the given one, else `tool_use` if any block is a tool call,
    /// else `end_turn`.
    pub fn stop_reason(&self) -> StopReason {
        match &self.stop_reason {
            Some(reason) => serde_json::from_value(Value::String(reason.clone()))
                .unwrap_or_else(|_| StopReason::Other(reason.clone())),
            None if self.content.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")) => {
                StopReason::ToolUse
            }
            None => StopReason::EndTurn,
        }
    }
}

/// Usage counts a scripted reply reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Prompt tokens, reported in `message_start`.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Generated tokens, reported in `message_delta`.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Prompt tokens written to the cache, reported in `message_start` (absent: not reported).
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache, reported in `message_start` (absent: not reported).
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

/// What the scripted model checks about the request a reply answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The request's output cap.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The request's model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Text that must occur in the last user message (tool result text included).
    #[serde(default)]
    pub last_user_text_contains: Option<String>,
    /// `is_error` of each tool_result of the last user message, in order.
    #[serde(default)]
    pub tool_result_is_error: Option<Vec<bool>>,
    /// The names of the tools the request offers, in order.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The exact system prompt of the request.
    #[serde(default)]
    pub system: Option<String>,
}

/// A scripted failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// HTTP status; required unless `after_blocks` is given.
    #[serde(default)]
    pub status: Option<u16>,
    /// The API error type, e.g. `overloaded_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The error message.
    pub message: String,
    /// Send the error as an SSE `error` event after this many complete blocks.
    #[serde(default)]
    pub after_blocks: Option<usize>,
    /// The `retry-after` header of an HTTP error, in seconds.
    #[serde(default)]
    pub retry_after_s: Option<u64>,
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The text is not JSON, or not JSON of the scenario format.
    #[error("{file}: {}{message} (line {line}, column {column})", json_path::at(path))]
    Parse {
        /// The file (or other source) name.
        file: String,
        /// JSON path of the offending value, e.g. `responses[1].error.status`; empty at the top.
        path: String,
        /// What was found and what was expected.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The scenario parsed but breaks a rule of the format.
    #[error("{file}: {}{message}", json_path::at(path))]
    Invalid {
        /// The file (or other source) name.
        file: String,
        /// JSON path of the offending value; empty at the top.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Scenario {
    /// Parse and check a scenario; `source` names it in errors (normally the file name).
    ///
    /// # Errors
    /// [`ScenarioError::Parse`] for bad JSON or a value of the wrong shape,
    /// [`ScenarioError::Invalid`] when a rule of the format is broken.
    pub fn parse(source: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let scenario: Scenario = serde_path_to_error::deserialize(&mut de)
            .map_err(|err| parse_error(source, json_path::of(&err), err.inner()))?;
        de.end().map_err(|err| parse_error(source, String::new(), &err))?;
        validate::check(&scenario).map_err(|invalid| ScenarioError::Invalid {
            file: source.to_owned(),
            path: invalid.path,
            message: invalid.message,
        })?;
        Ok(scenario)
    }

    /// Read and parse a scenario file.
    ///
    /// # Errors
    /// [`ScenarioError::Read`] when the file cannot be read, else as [`Scenario::parse`].
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = fs::read_to_string(path).map_err(|source| ScenarioError::Read { path: path.to_owned(), source })?;
        Scenario::parse(&path.display().to_string(), &text)
    }

    /// Write each of `files` under `dir` (creating parent directories) unless it already
    /// exists, and return the paths written. No file is written unless every path is valid.
    ///
    /// # Errors
    /// `InvalidInput` for a path that is empty, absolute or contains `..`; otherwise the
    /// first I/O error, naming the file.
    pub fn write_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        for relative in self.files.keys() {
            check_relative(relative).map_err(|why| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("scenario file `{relative}`: {why}"))
            })?;
        }
        let mut written = Vec::new();
        for (relative, content) in &self.files {
            let path = dir.join(relative);
            let named = |err: io::Error| io::Error::new(err.kind(), format!("{}: {err}", path.display()));
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(named)?;
            }
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => file.write_all(content.as_bytes()).map_err(named)?,
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(named(err)),
            }
            written.push(path);
        }
        Ok(written)
    }
}

fn parse_error(source: &str, path: String, err: &serde_json::Error) -> ScenarioError {
    // serde_json appends " at line L column C" to its message; we print the position ourselves.
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    ScenarioError::Parse { file: source.to_owned(), path, message, line: err.line(), column: err.column() }
}

/// Why `relative` may not name a file inside the working directory, if it may not.
fn check_relative(relative: &str) -> Result<(), &'static str> {
    if relative.is_empty() {
        return Err("the path is empty");
    }
    for component in Path::new(relative).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Err("the path is absolute"),
            Component::ParentDir => return Err("the path contains `..`"),
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
