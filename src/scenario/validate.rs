//! The rules of the scenario format that serde cannot express: block shapes, error and cut
//! positions, file paths and the abort target. Each failure carries the JSON path it is about.

use super::{AbortPhase, Scenario, ScriptedResponse, check_relative};

/// A broken rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invalid {
    /// JSON path, e.g. `responses[0].content[1]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid { path: path.into(), message: message.into() }
}

/// Check every rule, stopping at the first broken one.
pub(super) fn check(scenario: &Scenario) -> Result<(), Invalid> {
    for relative in scenario.files.keys() {
        check_relative(relative).map_err(|why| invalid(format!("files[{relative:?}]"), why))?;
    }
    for (list, responses) in [("responses", &scenario.responses), ("aux", &scenario.aux)] {
        for (index, response) in responses.iter().enumerate() {
            check_response(&format!("{list}[{index}]"), response)?;
        }
    }
    if !scenario.agents.is_null() {
        let mut agents = crate::agents::Agents::default();
        match agents.add_json("agents", &scenario.agents, crate::agents::AgentSource::Flag) {
            Ok(warnings) if warnings.is_empty() => {}
            Ok(warnings) => return Err(invalid("agents", warnings.join("; "))),
            Err(e) => return Err(invalid("agents", e.to_string())),
        }
    }
    for (script, subagent) in scenario.subagents.iter().enumerate() {
        if subagent.prompt == scenario.prompt {
            return Err(invalid(format!("subagents[{script}].prompt"), "must differ from the scenario's `prompt`"));
        }
        if let Some(earlier) = scenario.subagents[..script].iter().position(|s| s.prompt == subagent.prompt) {
            return Err(invalid(
                format!("subagents[{script}].prompt"),
                format!("is the prompt of subagents[{earlier}]: each child's script needs its own"),
            ));
        }
        for (index, response) in subagent.responses.iter().enumerate() {
            check_response(&format!("subagents[{script}].responses[{index}]"), response)?;
        }
    }
    if let Some(schema) = &scenario.options.json_schema {
        crate::json_schema::Schema::compile(schema).map_err(|e| invalid("options.json_schema", e.to_string()))?;
    }
    if let Some(usd) = scenario.options.max_budget_usd
        && !(usd.is_finite() && usd > 0.0)
    {
        return Err(invalid("options.max_budget_usd", "must be a positive number of US dollars"));
    }
    if let Some(abort) = scenario.abort {
        let Some(response) = scenario.responses.get(abort.response) else {
            return Err(invalid(
                "abort.response",
                format!(
                    "response {} is past the end of `responses` ({} responses)",
                    abort.response,
                    scenario.responses.len()
                ),
            ));
        };
        match abort.phase {
            AbortPhase::Stream if streamed_blocks(response) == 0 => {
                return Err(invalid(
                    "abort",
                    format!("phase `stream` needs responses[{}] to stream at least one block", abort.response),
                ));
            }
            AbortPhase::Tools if !calls_a_tool(response) => {
                return Err(invalid(
                    "abort",
                    format!("phase `tools` needs responses[{}] to call a tool", abort.response),
                ));
            }
            AbortPhase::StopHooks if calls_a_tool(response) => {
                return Err(invalid(
                    "abort",
                    format!("phase `stop_hooks` needs responses[{}] to end its turn without tools", abort.response),
                ));
            }
            AbortPhase::Stream | AbortPhase::Tools | AbortPhase::StopHooks => {}
        }
    }
    Ok(())
}

fn check_response(path: &str, response: &ScriptedResponse) -> Result<(), Invalid> {
    let blocks =
        response.blocks().map_err(|(index, why)| invalid(format!("{path}.content[{index}]"), why.to_string()))?;
    let too_many = |field: &str, n: usize| {
        invalid(format!("{path}.{field}"), format!("is {n}, but the response has {} content blocks", blocks.len()))
    };
    if let Some(error) = &response.error {
        match error.after_blocks {
            Some(n) if n > blocks.len() => return Err(too_many("error.after_blocks", n)),
            Some(_) => {}
            None if error.status.is_none() => {
                return Err(invalid(
                    format!("{path}.error"),
                    "needs `status` (an HTTP error) or `after_blocks` (an SSE error event)",
                ));
            }
            None => {}
        }
    }
    if let Some(n) = response.cut_after_blocks {
        if response.error.is_some() {
            return Err(invalid(path, "`cut_after_blocks` and `error` cannot both be given"));
        }
        if n > blocks.len() {
            return Err(too_many("cut_after_blocks", n));
        }
    }
    Ok(())
}

/// Whether `response` holds a `tool_use` block.
fn calls_a_tool(response: &ScriptedResponse) -> bool {
    response.blocks().is_ok_and(|blocks| blocks.iter().any(|b| b.is_tool_use()))
}

/// How many blocks of `response` reach the stream at all (an HTTP error streams none).
fn streamed_blocks(response: &ScriptedResponse) -> usize {
    let limit = match &response.error {
        Some(error) => error.after_blocks.unwrap_or(0),
        None => response.cut_after_blocks.unwrap_or(usize::MAX),
    };
    response.content.len().min(limit)
}
