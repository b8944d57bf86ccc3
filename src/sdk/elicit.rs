//! An MCP server's elicitation put to the SDK, as Claude Code does when the SDK answers the
//! permission prompts (`--permission-prompt-tool stdio`): an `elicitation` control request
//!
//! ```json
//! {"subtype": "elicitation", "mcp_server_name": "NAME", "message": "…", "mode": "form",
//!  "requested_schema": {…}, "property_order": ["name", …]}
//! ```
//!
//! (`"mode": "url"` with `url` and `elicitation_id` for a URL), answered with
//! `{"action": "accept" | "decline" | "cancel", "content": {…}}`. An SDK without an
//! elicitation handler answers with an error (the Python SDK: "Unsupported control request
//! subtype"), which cancels, as it does with Claude Code.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::control::Controller;
use crate::mcp::elicitation::{Action, Answer, Asker, Kind, Request};

/// Asks the SDK.
pub struct SdkAsker {
    controller: Arc<Controller>,
}

impl SdkAsker {
    /// An asker sending its control requests through `controller`.
    pub fn new(controller: Arc<Controller>) -> SdkAsker {
        SdkAsker { controller }
    }
}

/// The control request of `request`.
pub fn control_request(request: &Request) -> Value {
    match &request.kind {
        Kind::Form { schema, order } => json!({
            "subtype": "elicitation",
            "mcp_server_name": request.server,
            "message": request.message,
            "mode": "form",
            "requested_schema": schema,
            "property_order": order,
        }),
        Kind::Url { url, id } => json!({
            "subtype": "elicitation",
            "mcp_server_name": request.server,
            "message": request.message,
            "mode": "url",
            "url": url,
            "elicitation_id": id,
        }),
    }
}

/// The SDK's answer `response`; anything without a known `action` cancels.
pub fn answer_of(response: &Value) -> Answer {
    let action = response.get("action").and_then(Value::as_str).and_then(Action::parse).unwrap_or(Action::Cancel);
    let content = response.get("content").and_then(Value::as_object).cloned();
    Answer { action, content }
}

impl Asker for SdkAsker {
    fn ask<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            match self.controller.request(control_request(request)).await {
                Ok(response) => answer_of(&response),
                Err(_) => Answer::only(Action::Cancel),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_server_the_mode_and_the_fields_order() {
        let form = Request {
            server: "every".into(),
            message: "Details?".into(),
            kind: Kind::Form { schema: json!({"type": "object"}), order: vec!["b".into(), "a".into()] },
        };
        assert_eq!(
            control_request(&form),
            json!({"subtype": "elicitation", "mcp_server_name": "every", "message": "Details?", "mode": "form",
                   "requested_schema": {"type": "object"}, "property_order": ["b", "a"]})
        );
        let url = Request {
            server: "every".into(),
            message: "Sign in".into(),
            kind: Kind::Url { url: "https://example.com".into(), id: "e1".into() },
        };
        assert_eq!(
            control_request(&url),
            json!({"subtype": "elicitation", "mcp_server_name": "every", "message": "Sign in", "mode": "url",
                   "url": "https://example.com", "elicitation_id": "e1"})
        );
    }

    #[test]
    fn an_answer_without_a_known_action_cancels() {
        assert_eq!(
            answer_of(&json!({"action": "accept", "content": {"a": 1}})),
            Answer { action: Action::Accept, content: Some(json!({"a": 1}).as_object().unwrap().clone()) }
        );
        assert_eq!(answer_of(&json!({"action": "decline"})), Answer::only(Action::Decline));
        assert_eq!(answer_of(&json!({"action": "maybe"})), Answer::only(Action::Cancel));
        assert_eq!(answer_of(&json!({})), Answer::only(Action::Cancel));
    }
}
