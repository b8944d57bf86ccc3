//! The JSON a run's result and its stream-json start are printed as, in Claude Code's shapes:
//! the result object of `--output-format json` (and the last line of `stream-json`), the
//! `system/init` line.

use std::time::Instant;

use serde_json::{Value, json};

use crate::engine::reason::TerminalReason;
use crate::engine::run::RunOutcome;
use crate::permissions::Mode;
use crate::sandbox::Sandbox;

/// The Claude Code version whose stream-json protocol agentloop speaks, reported as
/// `claude_code_version` so the SDK's version checks pass (agentloop's own version is
/// reported beside it as `agentloop_version`).
pub const PROTOCOL_VERSION: &str = "2.1.332";

/// Why the last reply stopped, as the API says it (`end_turn` for a completed run), where the
/// terminal reason tells.
#[deny(clippy::wildcard_enum_match_arm)]
fn stop_reason(outcome: &RunOutcome) -> Option<&'static str> {
    match outcome.terminal {
        TerminalReason::Completed => Some("end_turn"),
        TerminalReason::MaxTurns => Some("tool_use"),
        TerminalReason::AbortedStreaming
        | TerminalReason::AbortedTools
        | TerminalReason::ModelError
        | TerminalReason::StopHookPrevented
        | TerminalReason::HookStopped
        | TerminalReason::PromptTooLong
        | TerminalReason::BlockingLimit
        | TerminalReason::BudgetExhausted
        | TerminalReason::StructuredOutputRetryExhausted => None,
    }
}

/// The `system/init` line of stream-json: the session, where it runs, the model, the tools
/// and the permission mode, with the protocol version the Claude Agent SDK checks.
pub fn system_init(
    session_id: &str,
    cwd: &std::path::Path,
    model: &str,
    tools: &[String],
    mode: &str,
    mcp_servers: &[crate::mcp::ServerStatus],
) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "uuid": crate::session::Uuid::new_v4().to_string(),
        "cwd": cwd,
        "model": model,
        "tools": tools,
        "mcp_servers": mcp_servers,
        "slash_commands": [],
        "permissionMode": mode,
        "apiKeySource": api_key_source(),
        "output_style": "default",
        "claude_code_version": PROTOCOL_VERSION,
        "agentloop_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Where the model's credentials come from, as Claude Code's `apiKeySource` names it.
/// It is the credential the model client uses ([`crate::credentials::Credential`]).
fn api_key_source() -> &'static str {
    use crate::credentials::Credential;
    match Credential::from_lookup(crate::credentials::var) {
        Credential::ApiKey => "ANTHROPIC_API_KEY",
        Credential::AuthToken => "ANTHROPIC_AUTH_TOKEN",
        Credential::None => "none",
    }
}

/// Adds the session's sandbox state to a `system/init` line.
pub trait WithSandbox {
    /// `sandbox`: `enabled`, `disabled`, `unavailable` or `none` ([`Sandbox::status`]), or
    /// `bypassed` when the mode runs every command unconfined.
    #[must_use]
    fn with_sandbox(self, sandbox: &Sandbox, mode: Mode) -> Self;
}

impl WithSandbox for Value {
    fn with_sandbox(mut self, sandbox: &Sandbox, mode: Mode) -> Value {
        let status = match (mode, sandbox.status()) {
            (Mode::BypassPermissions, "enabled") => "bypassed",
            (_, status) => status,
        };
        self["sandbox"] = json!(status);
        self
    }
}

/// How an ending looks in a result frame: the `subtype`, `is_error` and `terminal_reason`
/// Claude Code reports for the same ending, so SDKs branch on them as they do for Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    /// `success`, `error_max_turns` or `error_during_execution`. An API failure is a
    /// `success` with `is_error: true`, as Claude Code reports it (the loop itself completed).
    pub subtype: &'static str,
    /// Whether the run failed: the process then exits non-zero.
    pub is_error: bool,
    /// Claude Code's name for the ending; the table's own is `agentloop_terminal_reason`.
    pub terminal_reason: &'static str,
}

impl Ending {
    /// The result frame's view of `terminal`.
    pub fn of(terminal: TerminalReason) -> Ending {
        let (subtype, is_error, terminal_reason) = match terminal {
            TerminalReason::Completed => ("success", false, "completed"),
            TerminalReason::MaxTurns => ("error_max_turns", true, "max_turns"),
            TerminalReason::AbortedStreaming => ("error_during_execution", true, "aborted_streaming"),
            TerminalReason::AbortedTools => ("error_during_execution", true, "aborted_tools"),
            TerminalReason::ModelError => ("success", true, "api_error"),
            // A hook that ends the run is an ending the user asked for, not a failure.
            TerminalReason::StopHookPrevented => ("success", false, "stop_hook_prevented"),
            TerminalReason::HookStopped => ("success", false, "hook_stopped"),
            TerminalReason::PromptTooLong => ("success", true, "prompt_too_long"),
            TerminalReason::BlockingLimit => ("success", true, "blocking_limit"),
            TerminalReason::BudgetExhausted => ("error_max_budget_usd", true, "budget_exhausted"),
            TerminalReason::StructuredOutputRetryExhausted => {
                ("error_max_structured_output_retries", true, "structured_output_retry_exhausted")
            }
        };
        Ending { subtype, is_error, terminal_reason }
    }
}

/// Adds the session's slash commands and output style to a `system/init` line.
pub trait WithCommands {
    /// `slash_commands` ([`crate::commands::Commands::slash_commands`]) and `output_style`
    /// (the name the settings' `outputStyle` gives, `default` without one).
    #[must_use]
    fn with_commands(self, slash_commands: &[String], output_style: &str) -> Self;
}

impl WithCommands for Value {
    fn with_commands(mut self, slash_commands: &[String], output_style: &str) -> Value {
        self["slash_commands"] = json!(slash_commands);
        self["output_style"] = json!(output_style);
        self
    }
}

/// The result object of `--output-format json` and the last line of `stream-json`, in the
/// shape Claude Code prints (see [`Ending`]), with the table's terminal reason beside
/// Claude Code's as `agentloop_terminal_reason`.
///
/// What differs by ending, as Claude Code does it: an error ending whose subtype is not
/// `success` lists what went wrong in `errors` and has no `result` text (`null` after an
/// interrupt); a failed model call puts Claude Code's `API Error: …` prose in `result`, with
/// `api_error_status` and `api_error_type`; `permission_denials` lists every refused call.
pub fn result_object(outcome: &RunOutcome, session_id: &str, started: Instant, api_ms: u64) -> Value {
    let ending = Ending::of(outcome.terminal);
    let failure = outcome.api_failure.as_ref();
    let mut result = json!({
        "type": "result",
        "subtype": ending.subtype,
        "is_error": ending.is_error,
        "duration_ms": started.elapsed().as_millis() as u64,
        "duration_api_ms": api_ms,
        "stop_reason": stop_reason(outcome),
        "uuid": crate::session::Uuid::new_v4().to_string(),
        "permission_denials": outcome.permission_denials,
        // Claude Code counts the turn it refused to start.
        "num_turns": outcome.turns + u32::from(outcome.terminal == TerminalReason::MaxTurns),
        "session_id": session_id,
        // A model nobody priced makes the cost unknown (null), never a guess; the
        // settings' `modelPrices` give it a price.
        "total_cost_usd": if outcome.unpriced_models.is_empty() { json!(outcome.cost_usd) } else { Value::Null },
        "usage": outcome.usage,
        "terminal_reason": ending.terminal_reason,
        "agentloop_terminal_reason": outcome.terminal.as_str(),
        "error": outcome.error,
        "api_error_status": failure.and_then(|f| f.status),
    });
    if !outcome.unpriced_models.is_empty() {
        result["unpriced_models"] = json!(outcome.unpriced_models);
    }
    if let Some(stats) = &outcome.subagents {
        result["subagent_stats"] = json!(stats);
    }
    let error = || outcome.error.clone().unwrap_or_else(|| format!("The run ended with {}", outcome.terminal.as_str()));
    match (ending.subtype, ending.is_error) {
        ("success", false) => result["result"] = json!(outcome.final_text),
        ("success", true) => {
            let prose = match (outcome.terminal, failure) {
                (TerminalReason::ModelError, Some(failure)) => failure.prose(),
                _ => error(),
            };
            result["result"] = json!(prose);
            if let Some(kind) = failure.and_then(|f| f.kind.as_deref()) {
                result["api_error_type"] = json!(kind);
            }
        }
        (_, _) => {
            // The TypeScript SDK maps over `errors` on every result whose subtype is not
            // `success`; Claude Code gives no `result` text then (`null` after an interrupt).
            result["errors"] = json!([error()]);
            if ending.subtype == "error_during_execution" {
                result["result"] = Value::Null;
            }
        }
    }
    result
}

/// Adds a run's structured answer (`--json-schema`) to its result object, as Claude Code
/// reports it: `structured_output`, with the `result` text its JSON (the outcome's final
/// text) and `stop_reason` that of the reply whose tool call gave it.
pub fn with_structured_output(mut result: Value, outcome: &RunOutcome) -> Value {
    if let Some(answer) = &outcome.structured_output {
        result["structured_output"] = answer.clone();
        result["stop_reason"] = json!("tool_use");
    }
    result
}

#[cfg(test)]
mod result_tests {
    use super::*;
    use crate::model::ApiFailure;

    fn outcome(terminal: TerminalReason, error: Option<&str>) -> RunOutcome {
        RunOutcome {
            terminal,
            error: error.map(str::to_owned),
            messages: Vec::new(),
            final_text: "last words".into(),
            usage: crate::engine::state::UsageTotals::default(),
            model_calls: 1,
            cost_usd: 0.0,
            unpriced_models: Vec::new(),
            turns: 2,
            trace: Vec::new(),
            api_failure: None,
            permission_denials: Vec::new(),
            delegated: Vec::new(),
            subagents: None,
            structured_output: None,
        }
    }

    /// The fields that differ by ending, as Claude Code 2.1.332 prints them.
    fn shape(result: &Value) -> Value {
        let mut shape = serde_json::Map::new();
        for key in
            ["subtype", "is_error", "terminal_reason", "agentloop_terminal_reason", "result", "errors", "num_turns"]
        {
            if let Some(value) = result.get(key) {
                shape.insert(key.into(), value.clone());
            }
        }
        Value::Object(shape)
    }

    #[test]
    fn each_ending_has_the_subtype_and_fields_claude_code_reports() {
        let cases = [
            (
                outcome(TerminalReason::Completed, None),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "completed",
                       "agentloop_terminal_reason": "completed", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::MaxTurns, Some("Reached maximum number of turns (2)")),
                json!({"subtype": "error_max_turns", "is_error": true, "terminal_reason": "max_turns",
                       "agentloop_terminal_reason": "max_turns",
                       "errors": ["Reached maximum number of turns (2)"], "num_turns": 3}),
            ),
            (
                outcome(TerminalReason::AbortedStreaming, Some("interrupted")),
                json!({"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_streaming",
                       "agentloop_terminal_reason": "aborted_streaming", "result": null,
                       "errors": ["interrupted"], "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::AbortedTools, Some("interrupted")),
                json!({"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_tools",
                       "agentloop_terminal_reason": "aborted_tools", "result": null,
                       "errors": ["interrupted"], "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::HookStopped, Some("a tool hook ended the run: halt")),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "hook_stopped",
                       "agentloop_terminal_reason": "hook_stopped", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::StopHookPrevented, Some("a Stop hook ended the run: no")),
                json!({"subtype": "success", "is_error": false, "terminal_reason": "stop_hook_prevented",
                       "agentloop_terminal_reason": "stop_hook_prevented", "result": "last words", "num_turns": 2}),
            ),
            (
                outcome(TerminalReason::BlockingLimit, Some("Prompt is too long: about 9 tokens")),
                json!({"subtype": "success", "is_error": true, "terminal_reason": "blocking_limit",
                       "agentloop_terminal_reason": "blocking_limit",
                       "result": "Prompt is too long: about 9 tokens", "num_turns": 2}),
            ),
        ];
        for (outcome, expected) in cases {
            let result = result_object(&outcome, "s", Instant::now(), 0);
            assert_eq!(shape(&result), expected, "{}", outcome.terminal);
        }
    }

    #[test]
    fn a_failed_model_call_reports_its_status_type_and_api_error_prose() {
        let mut failed = outcome(TerminalReason::ModelError, Some("HTTP 400 invalid_request_error: bad"));
        failed.api_failure =
            Some(ApiFailure { status: Some(400), kind: Some("invalid_request_error".into()), message: "bad".into() });
        let result = result_object(&failed, "s", Instant::now(), 0);
        assert_eq!(
            shape(&result),
            json!({"subtype": "success", "is_error": true, "terminal_reason": "api_error",
                   "agentloop_terminal_reason": "model_error", "result": "API Error: 400 bad", "num_turns": 2})
        );
        assert_eq!(result["api_error_status"], json!(400));
        assert_eq!(result["api_error_type"], json!("invalid_request_error"));

        failed.api_failure = Some(ApiFailure { status: None, kind: None, message: "connection error: refused".into() });
        let result = result_object(&failed, "s", Instant::now(), 0);
        assert_eq!(result["result"], json!("API Error: connection error: refused"));
        assert_eq!(result["api_error_status"], Value::Null);
        assert_eq!(result.get("api_error_type"), None);
    }

    #[test]
    fn refused_calls_are_listed_as_permission_denials() {
        let mut denied = outcome(TerminalReason::Completed, None);
        denied.permission_denials = vec![crate::permissions::Denial {
            tool_name: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            tool_input: json!({"command": "touch x"}),
        }];
        let result = result_object(&denied, "s", Instant::now(), 0);
        assert_eq!(
            result["permission_denials"],
            json!([{"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "touch x"}}])
        );
    }
}
