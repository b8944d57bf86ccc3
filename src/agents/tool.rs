//! The `Agent` tool: the model delegates a task to a subagent, whose run is a child machine
//! of the same table ([`crate::agents::host`]). Its input is Claude Code's: `description` and
//! `prompt` (required), `subagent_type`, `model`, `effort`, `run_in_background`, `isolation`.
//!
//! A synchronous call waits for the child and answers with its final report; a background
//! call answers at once that the child started, and the child's end is announced to the
//! parent later, as a notification that starts a parent turn.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agents::{AGENT_TOOL, Agents, GENERAL_PURPOSE};
use crate::tools::{Tool, ToolContext, ToolOutput, typed_call};

/// The `Agent` tool of a session, knowing its agent definitions.
#[derive(Debug)]
pub struct AgentTool {
    agents: Arc<Agents>,
    description: String,
}

/// What an `Agent` call asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3–5 word) description of the task.
    pub description: String,
    /// The task for the subagent: its first user message.
    pub prompt: String,
    /// The definition to run; `general-purpose` when absent.
    #[serde(default)]
    pub subagent_type: Option<String>,
    /// A model alias or id overriding the definition's.
    #[serde(default)]
    pub model: Option<String>,
    /// Claude Code's reasoning effort; accepted, and not used by agentloop.
    #[serde(default)]
    #[allow(dead_code)]
    pub effort: Option<Value>,
    /// Return at once and notify the parent when the child ends.
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// `worktree`: run the child in a fresh git worktree of the repository.
    #[serde(default)]
    pub isolation: Option<String>,
}

impl AgentTool {
    /// The tool for a session with these definitions.
    pub fn new(agents: Arc<Agents>) -> AgentTool {
        let mut description = String::from(
            "Launch a subagent to handle a task on its own: it runs with its own prompt, tools and \
             model, and its final report comes back as this call's result (the user does not see \
             the subagent's work; relay what matters). Give it a complete, self-contained task in \
             `prompt`. Several calls in one reply run at once. With `run_in_background`, the call \
             returns at once and you are told when the subagent ends.\n\nAvailable agents:",
        );
        for agent in agents.iter() {
            let tools = match &agent.tools {
                None => "all tools".to_owned(),
                Some(list) => list.join(", "),
            };
            description.push_str(&format!("\n- {}: {} (Tools: {tools})", agent.name, agent.description));
        }
        AgentTool { agents, description }
    }

    /// The session's definitions.
    pub fn agents(&self) -> &Arc<Agents> {
        &self.agents
    }
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        AGENT_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
                "model": {"type": "string", "description": "Optional model for this agent (sonnet, opus, haiku or a model id); the definition's otherwise"},
                "effort": {"type": "string", "description": "Optional reasoning effort for this agent"},
                "run_in_background": {"type": "boolean", "description": "Return at once; you are notified when the agent ends"},
                "isolation": {"type": "string", "enum": ["worktree"], "description": "Run the agent in a fresh git worktree of the repository"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    /// Calls run side by side: each child is judged call by call, under a mode no wider than
    /// the parent's.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    /// Never before the reply ends: the child may change things, and a reply attempt cut
    /// and sent again may ask for the same child.
    fn may_start_early(&self, _input: &Value) -> bool {
        false
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let agents = self.agents.clone();
        typed_call(AGENT_TOOL, input, move |input: AgentInput| async move {
            let kind = input.subagent_type.clone().unwrap_or_else(|| GENERAL_PURPOSE.to_owned());
            let Some(definition) = agents.get(&kind).cloned() else {
                return Err(ToolOutput::error(format!(
                    "<tool_use_error>Agent type '{kind}' not found. Available agents: {}</tool_use_error>",
                    agents.names().join(", ")
                )));
            };
            if let Some(isolation) = input.isolation.as_deref().filter(|i| *i != "worktree") {
                return Err(ToolOutput::error(format!(
                    "<tool_use_error>InputValidationError: isolation must be \"worktree\", not \"{isolation}\"</tool_use_error>"
                )));
            }
            let Some(children) = ctx.children.clone() else {
                return Err(ToolOutput::error("<tool_use_error>This run cannot start subagents</tool_use_error>"));
            };
            Ok(children.run(definition, input, &ctx).await)
        })
    }
}
