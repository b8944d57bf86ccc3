//! Options of one run, validated once.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::table::Table;

/// Everything that shapes one run besides its dependencies.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// Model name for main requests.
    pub model: String,
    /// Model to switch to after three overloads in a row.
    pub fallback_model: Option<String>,
    /// System prompt.
    pub system: String,
    /// Turns before the run ends as `max_turns` (checked after the tool phase); `None` keeps
    /// the bound of the table's counter whose `option` is `max_turns` (100 in the shipped table).
    pub max_turns: Option<u32>,
    /// Output-token target for `token_budget_continuation`.
    pub token_budget: Option<u64>,
    /// Context window in tokens. Default 200_000.
    pub context_window: u64,
    /// Retries of one request; `None` keeps the table's bound (10 in the shipped table).
    pub max_retries: Option<u32>,
    /// First backoff delay; doubles per attempt. Default 500 ms.
    pub retry_base_delay: Duration,
    /// Longest backoff delay. Default 32 s.
    pub retry_max_delay: Duration,
    /// Session id handed to hooks and written in the trace header.
    pub run_id: String,
    /// Concurrency-safe tool calls that may run at once. Default 10.
    pub max_tool_concurrency: usize,
    /// Characters of one tool result before it is cut (and saved whole). Default 30_000.
    pub tool_result_cap: usize,
    /// Start each tool call as soon as its block is complete, while the reply still streams
    /// (default). When false, calls start after the whole reply has arrived.
    pub stream_tools: bool,
    /// Extended thinking: the most tokens of each reply the model may spend thinking
    /// (`--max-thinking-tokens`, `MAX_THINKING_TOKENS`); kept below the request's
    /// `max_tokens`. `None` sends no `thinking` parameter.
    pub thinking_budget: Option<u32>,
    /// The transition table the loop runs (`run --table`); `None` runs the shipped one.
    /// A loaded table must have passed the audit and [`crate::audit::engine_check`].
    pub table: Option<Arc<Table>>,
    /// The spend cap in US dollars (`--max-budget-usd`): a request is sent only when what it
    /// may cost fits what is left ([`crate::engine::budget`]).
    pub max_budget_usd: Option<f64>,
    /// The answer format (`--json-schema`): the run offers the `StructuredOutput` tool and
    /// ends with the first call that matches ([`crate::tools::structured_output`]).
    pub json_schema: Option<Arc<crate::json_schema::Schema>>,
    /// For a subagent's run: its place in the tree of runs, written on every trace record.
    pub link: Option<crate::engine::trace::RunLink>,
    /// The session's memory ([`crate::context::memory`]): sent after the system prompt, in
    /// every main request, so the cached prefix stays the same from turn to turn.
    pub memory: Option<Arc<str>>,
    /// The environment block taken when the session started
    /// ([`crate::context::environment`]): sent after the system prompt, with a line naming
    /// the model, before the memory.
    pub environment: Option<Arc<str>>,
    /// The git snapshot taken when the session started, sent after the environment block.
    pub git_snapshot: Option<Arc<str>>,
    /// The small, fast model of the tools' side requests (WebFetch, WebSearch).
    pub small_model: String,
    /// The output cap of every main request, when the user set one (`--max-output-tokens`,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`): it is not escalated.
    pub max_output_tokens: Option<u32>,
    /// Keep every transition record in [`crate::engine::RunOutcome::trace`]. The records
    /// still go to the caller's sink (and the trace file) as they happen; a run whose caller
    /// reads only those (the CLI) sets this off, so a long session does not hold a record of
    /// every transition (~2 KB each, counters and guards included) until it ends.
    pub keep_trace: bool,
}

impl EngineOptions {
    /// What the session adds to the system prompt of a main request
    /// ([`crate::model::ModelRequest::system_context`]): the environment (with the model),
    /// the git snapshot, then the memory; `None` when it adds nothing.
    pub fn system_context(&self) -> Option<String> {
        let environment = self.environment.as_ref().map(|e| format!("{e}{}", self.model_line()));
        let parts: Vec<&str> = [environment.as_deref(), self.git_snapshot.as_deref(), self.memory.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Characters of the system prompt and [`EngineOptions::system_context`] together (with
    /// a separator's two before each part of the context), without building them.
    pub fn system_prompt_len(&self) -> usize {
        self.system.len()
            + self.environment.as_ref().map_or(0, |e| e.len() + 2 + self.model_line().len())
            + self.git_snapshot.as_ref().map_or(0, |g| g.len() + 2)
            + self.memory.as_ref().map_or(0, |m| m.len() + 2)
    }

    /// The environment block's last line.
    fn model_line(&self) -> String {
        format!("\nModel: {}", self.model)
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            model: "claude-sonnet-4-5".into(),
            fallback_model: None,
            system: DEFAULT_SYSTEM_PROMPT.into(),
            max_turns: None,
            token_budget: None,
            context_window: 200_000,
            max_retries: None,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(32),
            run_id: String::new(),
            max_tool_concurrency: crate::tools::orchestrate::DEFAULT_MAX_CONCURRENCY,
            tool_result_cap: crate::tools::orchestrate::DEFAULT_RESULT_CAP,
            stream_tools: true,
            thinking_budget: None,
            table: None,
            max_budget_usd: None,
            json_schema: None,
            link: None,
            memory: None,
            environment: None,
            git_snapshot: None,
            small_model: crate::model::side::DEFAULT_SMALL_MODEL.to_owned(),
            max_output_tokens: None,
            keep_trace: true,
        }
    }
}

/// The system prompt used when none is given: agentloop's own, `src/context/system_prompt.md`,
/// reviewed like code.
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("../context/system_prompt.md").trim_ascii_end();

/// The system prompt of a scripted scenario that gives none. The scripted model reads no
/// prose, and a scenario's token figures (estimated from the request's characters) must not
/// move whenever [`DEFAULT_SYSTEM_PROMPT`] is edited.
pub const SCRIPTED_SYSTEM_PROMPT: &str = "You are agentloop, a coding agent. Use the tools to inspect and change files \
in the working directory. Be concise.";

/// Whether `system` is one of agentloop's own prompts (an output style may replace it).
pub fn is_default_system_prompt(system: &str) -> bool {
    system == DEFAULT_SYSTEM_PROMPT || system == SCRIPTED_SYSTEM_PROMPT
}

impl EngineOptions {
    /// The table the run follows: the loaded one, or the shipped one.
    pub fn table(&self) -> &Table {
        self.table.as_deref().unwrap_or_else(|| crate::engine::table::shipped())
    }

    /// Check the combinations that cannot run.
    ///
    /// # Errors
    /// [`OptionsError`] naming the bad option.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.max_turns == Some(0) {
            return Err(OptionsError::MaxTurns);
        }
        if self.context_window < 1_000 {
            return Err(OptionsError::ContextWindow(self.context_window));
        }
        if self.max_tool_concurrency == 0 {
            return Err(OptionsError::MaxToolConcurrency);
        }
        if self.token_budget == Some(0) {
            return Err(OptionsError::TokenBudget);
        }
        if let Some(usd) = self.max_budget_usd
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(OptionsError::MaxBudgetUsd(usd));
        }
        Ok(())
    }
}

/// An engine option out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// `max_turns` is zero.
    #[error("max_turns must be at least 1")]
    MaxTurns,
    /// The context window is too small to hold a request.
    #[error("context_window {0} is too small (at least 1000 tokens)")]
    ContextWindow(u64),
    /// No tool could run.
    #[error("max_tool_concurrency must be at least 1")]
    MaxToolConcurrency,
    /// A token budget of zero.
    #[error("token_budget must be positive")]
    TokenBudget,
    /// A spend cap that is not a positive number.
    #[error("max_budget_usd must be a positive number of US dollars, not {0}")]
    MaxBudgetUsd(f64),
}
