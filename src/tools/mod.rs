//! Tools the model can call: the [`Tool`] trait, the [`Registry`] that finds them by name,
//! and the checks every call passes through before it runs.
//!
//! A tool failure is data, not an `Err`: bad input, a missing file or a refused path all
//! become an `is_error` tool_result that the model reads, and the loop goes on.

pub(crate) mod background;
pub(crate) mod bash;
pub(crate) mod edit;
#[cfg(test)]
mod fixture;
pub(crate) mod fresh;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod notebook_edit;
pub(crate) mod orchestrate;
pub(crate) mod paths;
#[cfg(test)]
mod processes;
pub(crate) mod read;
#[cfg(test)]
mod schema_tests;
pub(crate) mod shell_env;
pub mod skill;
pub(crate) mod spill;
pub(crate) mod streaming;
pub(crate) mod structured_output;
pub(crate) mod task_output;
pub(crate) mod task_stop;
pub mod todo;
pub(crate) mod walk;
pub(crate) mod web_fetch;
pub(crate) mod web_search;
pub(crate) mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::ToolDefinition;

pub use background::BackgroundShells;
pub use bash::Bash;
pub use edit::Edit;
pub use glob::Glob;
pub use grep::Grep;
pub use orchestrate::{INTERRUPTED_RESULT, OUTCOME_UNKNOWN_RESULT};
pub use read::Read;
pub use shell_env::{KeepError, KeepPattern, ShellEnv};
pub use write::Write;

/// One call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool_use id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool input.
    pub input: Value,
}

impl From<crate::protocol::ToolUse<'_>> for ToolCall {
    fn from(t: crate::protocol::ToolUse<'_>) -> Self {
        ToolCall { id: t.id.to_owned(), name: t.name.to_owned(), input: t.input.clone() }
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Images the model sees after the text (an MCP server's screenshot); none for the
    /// built-in tools.
    pub images: Vec<ToolImage>,
    /// Set by a call that gives the run's structured answer (`StructuredOutput`): whether its
    /// input matched the `--json-schema`. The engine ends the run on a valid one and counts
    /// the invalid ones (`structured_output`).
    pub(crate) structured: Option<structured_output::Answer>,
    /// What the call gives besides its text (set by `Agent`).
    pub(crate) extra: Option<Box<CallExtra>>,
}

/// What a call gives besides the text the model reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CallExtra {
    /// stream-json's `tool_use_result` beside the call's `tool_result`.
    pub tool_use_result: Value,
    /// The tokens and cost in USD of model calls made on the call's behalf (a subagent's), by
    /// model: their cost joins the run's, so `--max-budget-usd` covers them, and their tokens
    /// the result's `modelUsage`.
    pub usage: Vec<(String, crate::engine::state::UsageTotals, f64)>,
}

/// An image in a tool result, sent to the model as an image block of the `tool_result`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The image, base64-encoded.
    pub data: String,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: false, images: Vec::new(), structured: None, extra: None }
    }

    /// A failed result the model can read and act on.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: true, images: Vec::new(), structured: None, extra: None }
    }

    /// The result with `images` after its text.
    #[must_use]
    pub fn with_images(mut self, images: Vec<ToolImage>) -> Self {
        self.images = images;
        self
    }
}

/// What the run knows about a file a tool read: used to refuse blind or stale writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRecord {
    /// Modification time when it was read.
    pub modified: Option<SystemTime>,
}

/// Everything a tool call may use besides its input.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The run's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Cancelled on abort (and, for sibling Bash calls, on a failing sibling).
    pub cancel: CancellationToken,
    /// Files read or written in this run, by canonical path, with the modification time
    /// seen then: Write and Edit refuse files not read, or changed on disk since.
    pub reads: Arc<Mutex<BTreeMap<PathBuf, ReadRecord>>>,
    /// Whether this call may touch paths outside `cwd` (a permission rule allowed it).
    pub allow_outside: bool,
    /// The environment Bash commands run with (no model credentials, no secrets).
    pub shell_env: Arc<shell_env::ShellEnv>,
    /// What `Read(…)` deny rules hide: Grep and Glob skip it while they walk.
    pub read_deny: Arc<crate::permissions::ReadDeny>,
    /// This call was approved only because it was proven read-only: git in it runs with
    /// program-running configuration neutralised (`crate::permissions::git::neutralise`).
    pub guard_git: bool,
    /// The session's sandbox: how commands are started.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// How this call's commands are confined, from its permission decision.
    pub launch: crate::sandbox::Launch,
    /// The session's background shells (`Bash` with `run_in_background`, `TaskOutput`,
    /// `TaskStop`): one registry per session, shared by every call of its prompts.
    pub background: Arc<background::BackgroundShells>,
    /// The tool_use id of the call (empty outside a tool phase).
    pub call_id: String,
    /// Where `Agent` calls start their subagents: the run's host of child runs, when the run
    /// may start them.
    pub children: Option<crate::agents::Spawner>,
    /// The session's todo list (`TodoWrite`).
    pub todos: Arc<todo::TodoList>,
    /// The small model a tool's side requests go to (WebFetch's answer, WebSearch's search);
    /// `None` outside a run.
    pub side: Option<crate::model::side::SideModel>,
    /// The session's nested memory: what a call that touches a file attaches to its result
    /// ([`Tool::attaches_memory`]). Shared by the session's prompts and its subagents' calls.
    pub nested_memory: Arc<crate::context::memory::nested::NestedMemory>,
    /// Where the run's tool phases journal each call's start and result (the session's
    /// transcript), so a resume after a kill keeps what finished; `None` without a transcript.
    pub journal: Option<crate::session::ToolJournal>,
}

impl ToolContext {
    /// A context for `cwd` with a fresh cancellation token, no reads, the default shell
    /// environment ([`shell_env::ShellEnv::inherited_default`]), git not guarded, a
    /// registry of background shells of its own and no nested memory.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            reads: Arc::default(),
            allow_outside: false,
            shell_env: shell_env::ShellEnv::inherited_default(),
            read_deny: Arc::default(),
            guard_git: false,
            sandbox: crate::sandbox::Sandbox::none(),
            launch: crate::sandbox::Launch::default(),
            background: Arc::default(),
            call_id: String::new(),
            children: None,
            todos: Arc::default(),
            side: None,
            nested_memory: Arc::default(),
            journal: None,
        }
    }
}

/// Which family of permission rules covers a tool, besides the rules that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolKind {
    /// It reads files: `Read(…)` rules cover it, and `acceptEdits` does not change its lot.
    ReadsFiles,
    /// It edits files: `Edit(…)` rules cover it, and `acceptEdits` lets it run inside the
    /// working directory.
    EditsFiles,
    /// It runs command lines: `Bash(…)` rules cover it, and the policy judges the parsed
    /// command line (`crate::permissions::bash`).
    RunsCommands,
    /// It reaches the network from agentloop's own process (WebFetch, WebSearch): only rules
    /// that name the tool cover it, and without one it is asked about in every mode but
    /// `bypassPermissions` (plan mode refuses it).
    Fetches,
    /// None of these: only rules that name the tool cover it.
    #[default]
    Other,
}

/// What one call is about, as permission rules see it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Subject {
    /// A file or directory, as given (relative paths resolve against the working directory).
    Path(String),
    /// A shell command line.
    Command(String),
    /// The host a call reaches on the network (lowercase, without a port).
    Host(String),
    /// Nothing a rule's specifier can match.
    #[default]
    None,
}

/// Where a tool of an MCP server lives: the server's name in the configuration and the
/// tool's own name on that server (the model calls it `mcp__<server>__<tool>`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct McpOrigin {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
}

/// One tool.
///
/// Implementations validate their input by deserialising it into a typed struct; a failure
/// becomes an error result naming the field (see [`parse_input`]).
///
/// Besides running, a tool describes itself to the rest of the engine: the permission
/// policy asks [`Tool::kind`], [`Tool::permission_subject`] and [`Tool::is_read_only`], the
/// executor [`Tool::is_concurrency_safe`] and [`Tool::failure_cancels_siblings`]. Nothing
/// outside the tool matches on its name, so a new tool plugs in by implementing this trait.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (Claude Code's names).
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of the input.
    fn input_schema(&self) -> Value;
    /// Whether this call may run at the same time as other concurrency-safe calls (and start
    /// while the reply still streams).
    fn is_concurrency_safe(&self, input: &Value) -> bool;
    /// Whether this call may start while the reply still streams, before `message_stop`:
    /// only if running it for a reply attempt that is then abandoned and sent again changes
    /// nothing. Defaults to [`Tool::is_concurrency_safe`].
    fn may_start_early(&self, input: &Value) -> bool {
        self.is_concurrency_safe(input)
    }
    /// Which permission rule family covers the tool; [`ToolKind::Other`] unless it says.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    /// What this call is about for permission rules: the path a file tool touches, the
    /// command line a command tool runs. Defaults that depend on the input (a search with no
    /// path searches `.`) are the tool's business. [`Subject::None`] unless it says.
    fn permission_subject(&self, _input: &Value) -> Subject {
        Subject::None
    }
    /// Whether this call only reads (plan mode runs it; `default` mode runs it without a
    /// rule). Defaults to [`Tool::is_concurrency_safe`]. For a [`ToolKind::RunsCommands`]
    /// tool the policy analyses the command line itself instead.
    fn is_read_only(&self, input: &Value) -> bool {
        self.is_concurrency_safe(input)
    }
    /// Whether a failed call of this tool cancels the calls running beside it and those of
    /// the same reply not started yet. `false` unless it says.
    fn failure_cancels_siblings(&self) -> bool {
        false
    }
    /// Whether a successful call attaches the memory that applies to the file its
    /// [`Tool::permission_subject`] names and that the session has not loaded yet (nested
    /// memory, [`crate::context::memory::nested`]): the file tools that read or change one
    /// file say so. `false` unless it says.
    fn attaches_memory(&self) -> bool {
        false
    }
    /// The MCP server and remote tool behind this tool, shown with its calls (events, trace);
    /// `None` for built-in tools.
    fn mcp_origin(&self) -> Option<McpOrigin> {
        None
    }
    /// Run the call. The future owns what it needs, so it can be spawned.
    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

impl Subject {
    /// The string field `field` of `input` as a path; `default` when it is absent or not a
    /// string ([`Subject::None`] without one).
    pub fn path_field(input: &Value, field: &str, default: Option<&str>) -> Subject {
        match input.get(field).and_then(Value::as_str).or(default) {
            Some(path) => Subject::Path(path.to_owned()),
            None => Subject::None,
        }
    }
}

/// Deserialise a tool's input, turning a serde error into a readable message.
///
/// # Errors
/// A [`ToolOutput::error`] saying which tool got which bad input.
pub fn parse_input<T: serde::de::DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input).map_err(|e| {
        ToolOutput::error(format!(
            "<tool_use_error>InputValidationError: {tool} failed due to the following issue: {e}</tool_use_error>"
        ))
    })
}

/// The body of every tool's [`Tool::call`]: parse the input into `T` (a failure becomes the
/// error result [`parse_input`] writes), run `body`, and answer with its `Ok` or `Err` output.
pub fn typed_call<T, Fut>(
    tool: &'static str,
    input: Value,
    body: impl FnOnce(T) -> Fut + Send + 'static,
) -> BoxFuture<'static, ToolOutput>
where
    T: serde::de::DeserializeOwned + Send + 'static,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolOutput>> + Send + 'static,
{
    Box::pin(async move {
        match parse_input::<T>(tool, input) {
            Ok(input) => body(input).await.unwrap_or_else(|e| e),
            Err(e) => e,
        }
    })
}

/// The tools of a run, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tools every run has.
    pub fn standard() -> Self {
        let mut r = Self::new();
        r.register(Arc::new(read::Read));
        r.register(Arc::new(write::Write));
        r.register(Arc::new(edit::Edit));
        r.register(Arc::new(bash::Bash));
        r.register(Arc::new(glob::Glob::default()));
        r.register(Arc::new(grep::Grep::default()));
        r.register(Arc::new(task_output::TaskOutput));
        r.register(Arc::new(task_stop::TaskStop));
        r.register(Arc::new(notebook_edit::NotebookEdit));
        r.register(Arc::new(todo::TodoWrite));
        r.register(Arc::new(web_fetch::WebFetch::default()));
        r.register(Arc::new(web_search::WebSearch));
        r
    }

    /// Add a tool; a tool with the same name is replaced.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// Add every tool of `other` (see [`Registry::register`]).
    pub fn extend(&mut self, other: Registry) {
        for tool in other.tools {
            self.register(tool);
        }
    }

    /// The tools, in registration order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Definitions to send to the model, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema(),
            })
            .collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.iter().map(|t| t.name())).finish()
    }
}
