//! The built-in scenarios, `examples/scenarios/*.json` compiled in: what `agentloop demo`
//! runs, and what the tests drive every edge of the table with.

use crate::scenario::{Scenario, ScenarioError};

macro_rules! scenarios {
    ($($name:literal),* $(,)?) => {
        /// Every built-in scenario: (name, JSON text), from `examples/scenarios/`.
        pub const SCENARIOS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../examples/scenarios/", $name, ".json"))),)*
        ];
    };
}

scenarios!(
    "read-greeting",
    "bad-tool-calls",
    "max-turns",
    "abort-streaming",
    "abort-tools",
    "abort-stop-hook",
    "model-error",
    "flaky-network",
    "fallback-model",
    "retries-exhausted",
    "stream-cut-exhausted",
    "stream-error",
    "stream-prompt-too-long",
    "collapse-drain",
    "reactive-compact",
    "prompt-too-long",
    "max-output-escalate",
    "max-output-recovery",
    "max-output-exhausted",
    "stop-hook-blocking",
    "stop-hook-prevented",
    "stop-hook-cap",
    "hook-stopped",
    "token-budget",
    "blocking-limit",
    "edit-file",
    "run-command",
    "parallel-bash-failure",
    "plan-mode",
    "search-tree",
    "pause-turn",
    "autocompact",
    "budget-exhausted",
    "structured-output",
    "structured-output-exhausted",
);

/// Why a built-in scenario cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// No built-in scenario has this name.
    #[error("no demo named `{0}`; `agentloop demo --list` shows them")]
    Unknown(String),
    /// The scenario does not parse (a bug of the build).
    #[error(transparent)]
    Broken(#[from] ScenarioError),
}

/// Parse a built-in scenario by name.
///
/// # Errors
/// [`BuiltinError`] naming the unknown scenario, or the parse error of a broken one.
pub fn load(name: &str) -> Result<Scenario, BuiltinError> {
    let (_, text) = SCENARIOS.iter().find(|(n, _)| *n == name).ok_or_else(|| BuiltinError::Unknown(name.to_owned()))?;
    Ok(Scenario::parse(&format!("examples/scenarios/{name}.json"), text)?)
}
