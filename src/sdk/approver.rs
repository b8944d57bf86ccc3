//! `--permission-prompt-tool stdio`: a call the policy cannot decide alone is put to the
//! Claude Agent SDK as a `can_use_tool` control request, and its `can_use_tool` callback's
//! answer goes back through the engine's approval seam.
//!
//! - `{"behavior": "allow"}` runs the call; each `addRules` update with behaviour `allow` in
//!   `updatedPermissions` is granted for the rest of the session (the first one: the seam
//!   takes one rule per answer, and the SDK sends one).
//! - `{"behavior": "deny", "message": …}` gives the model `message` as the call's error, and
//!   with `"interrupt": true` also ends the prompt (`aborted_tools`).
//! - An `updatedInput` that differs from the call's input runs the call with it
//!   ([`Approval::AllowChanged`]); the changed call is judged again by the permission rules.
//! - An error answer (no callback, an exception) denies the call, saying why.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::peer::PeerError;
use crate::permissions::approver::{Approval, ApprovalRequest, Approver};
use crate::sdk::control::Controller;

/// Asks the SDK's `can_use_tool` callback.
pub struct SdkApprover {
    controller: Arc<Controller>,
}

impl SdkApprover {
    /// An approver that asks through `controller`.
    pub fn new(controller: Arc<Controller>) -> SdkApprover {
        SdkApprover { controller }
    }
}

/// The `can_use_tool` request for `request`.
pub fn can_use_tool(request: &ApprovalRequest) -> Value {
    let suggestions: Vec<Value> = request
        .suggestion
        .iter()
        .map(|rule| {
            let (tool, content) = split_rule(rule);
            let mut entry = json!({"toolName": tool});
            if let Some(content) = content {
                entry["ruleContent"] = json!(content);
            }
            json!({"type": "addRules", "rules": [entry], "behavior": "allow", "destination": "session"})
        })
        .collect();
    let mut question = json!({
        "subtype": "can_use_tool",
        "tool_name": request.tool,
        "display_name": request.tool,
        "input": request.input,
        "tool_use_id": request.tool_use_id,
        "decision_reason": request.reason,
        "permission_suggestions": suggestions,
    });
    if let Some(agent) = &request.agent {
        // The subagent's id, as Claude Code names the asking agent.
        question["agent_id"] = json!(agent.rsplit(' ').next().unwrap_or(agent));
        question["agent_name"] = json!(agent);
    }
    question
}

/// `Bash(git commit:*)` → (`Bash`, `git commit:*`); `Write` → (`Write`, none).
fn split_rule(rule: &str) -> (&str, Option<&str>) {
    match rule.split_once('(') {
        Some((tool, rest)) if rest.ends_with(')') => (tool, Some(&rest[..rest.len() - 1])),
        _ => (rule, None),
    }
}

/// The approval an SDK answer (`Ok`: the `response` object; `Err`: its error) stands for.
pub fn approval(request: &ApprovalRequest, answer: Result<Value, PeerError>) -> Approval {
    let response = match answer {
        Ok(response) => response,
        Err(e) => {
            return Approval::Deny { message: format!("The Claude Agent SDK could not decide on this call: {e}") };
        }
    };
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            if let Some(input) = response.get("updatedInput").filter(|u| **u != request.input && u.is_object()) {
                return Approval::AllowChanged { input: input.clone() };
            }
            let granted = response
                .get("updatedPermissions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|u| u.get("type").and_then(Value::as_str) == Some("addRules"))
                .filter(|u| u.get("behavior").and_then(Value::as_str) == Some("allow"))
                .flat_map(|u| u.get("rules").and_then(Value::as_array).cloned().unwrap_or_default())
                .find_map(|r| {
                    let tool = r.get("toolName")?.as_str()?;
                    Some(match r.get("ruleContent").and_then(Value::as_str) {
                        Some(content) => format!("{tool}({content})"),
                        None => tool.to_owned(),
                    })
                });
            match granted {
                Some(rule) => Approval::AllowForSession { rule },
                None => Approval::AllowOnce,
            }
        }
        Some("deny") => {
            let message = response
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map_or_else(|| format!("The user denied {}.", request.tool), str::to_owned);
            if response.get("interrupt") == Some(&Value::Bool(true)) {
                Approval::DenyAndInterrupt { message }
            } else {
                Approval::Deny { message }
            }
        }
        _ => Approval::Deny {
            message: format!("The Claude Agent SDK gave no behavior for {}: {response}", request.tool),
        },
    }
}

impl Approver for SdkApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let answer = self.controller.request(can_use_tool(request)).await;
            approval(request, answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool_use_id: "toolu_1".into(),
            tool: "Bash".into(),
            input: json!({"command": "git commit -m x"}),
            reason: "it changes things and no rule allows it".into(),
            suggestion: Some("Bash(git commit:*)".into()),
            agent: None,
        }
    }

    #[test]
    fn the_request_offers_the_suggestion_as_a_session_rule() {
        assert_eq!(
            can_use_tool(&request()),
            json!({
                "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
                "input": {"command": "git commit -m x"}, "tool_use_id": "toolu_1",
                "decision_reason": "it changes things and no rule allows it",
                "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "git commit:*"}],
                    "behavior": "allow", "destination": "session"}]
            })
        );
    }

    #[test]
    fn answers_map_to_approvals() {
        let r = request();
        let allow = json!({"behavior": "allow", "updatedInput": {"command": "git commit -m x"}});
        assert_eq!(approval(&r, Ok(allow)), Approval::AllowOnce);
        let grant = json!({"behavior": "allow", "updatedInput": r.input, "updatedPermissions": [
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "git commit:*"}], "behavior": "allow", "destination": "session"}]});
        assert_eq!(approval(&r, Ok(grant)), Approval::AllowForSession { rule: "Bash(git commit:*)".into() });
        let deny = json!({"behavior": "deny", "message": "not now"});
        assert_eq!(approval(&r, Ok(deny)), Approval::Deny { message: "not now".into() });
        let stop = json!({"behavior": "deny", "message": "stop", "interrupt": true});
        assert_eq!(approval(&r, Ok(stop)), Approval::DenyAndInterrupt { message: "stop".into() });
        assert_eq!(
            approval(&r, Err(PeerError::Answered("canUseTool callback is not provided".into()))),
            Approval::Deny {
                message: "The Claude Agent SDK could not decide on this call: canUseTool callback is not provided"
                    .into()
            }
        );
        let changed = json!({"behavior": "allow", "updatedInput": {"command": "git commit -m y"}});
        assert_eq!(approval(&r, Ok(changed)), Approval::AllowChanged { input: json!({"command": "git commit -m y"}) });
    }
}
