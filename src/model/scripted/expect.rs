//! Checking a scripted reply's `expect` against the request it answers, so a scenario fails
//! loudly the moment the engine sends something other than what the script assumed.

use crate::model::{ModelError, ModelRequest};
use crate::protocol::{ContentBlock, Role};
use crate::scenario::Expect;

/// Characters of the actual last user text quoted in a mismatch.
const QUOTE_LIMIT: usize = 200;

/// Check `expect` of the reply `label` (e.g. `responses[2]`) against `request`.
///
/// # Errors
/// [`ModelError::Script`] naming the reply, the field, the expected and the actual value.
pub(super) fn check(label: &str, expect: &Expect, request: &ModelRequest) -> Result<(), ModelError> {
    let mismatch = |field: &str, expected: String, got: String| {
        Err(ModelError::Script(format!("{label}.expect.{field}: expected {expected}, got {got}")))
    };
    if let Some(max_tokens) = expect.max_tokens.filter(|n| *n != request.max_tokens) {
        return mismatch("max_tokens", max_tokens.to_string(), request.max_tokens.to_string());
    }
    if let Some(model) = expect.model.as_ref().filter(|m| **m != request.model) {
        return mismatch("model", format!("{model:?}"), format!("{:?}", request.model));
    }
    if let Some(tools) = &expect.tools {
        let got: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        if got != *tools {
            return mismatch("tools", format!("{tools:?}"), format!("{got:?}"));
        }
    }
    if let Some(system) = expect.system.as_ref().filter(|s| **s != request.system) {
        return mismatch("system", format!("{:?}", quote(system)), format!("{:?}", quote(&request.system)));
    }
    let last_user = request.messages.iter().rev().find(|m| m.role == Role::User);
    if let Some(needle) = &expect.last_user_text_contains {
        let text = last_user.map(|m| m.all_text());
        if !text.as_deref().is_some_and(|t| t.contains(needle.as_str())) {
            let got = text.map_or_else(|| "no user message".to_owned(), |t| format!("{:?}", quote(&t)));
            return mismatch("last_user_text_contains", format!("the last user message to contain {needle:?}"), got);
        }
    }
    if let Some(expected) = &expect.tool_result_is_error {
        let got: Vec<bool> = last_user
            .map(|m| {
                m.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolResult { is_error, .. } => Some(*is_error),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if got != *expected {
            return mismatch("tool_result_is_error", format!("{expected:?}"), format!("{got:?}"));
        }
    }
    Ok(())
}

/// `text`, cut to [`QUOTE_LIMIT`] characters with an ellipsis.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
