//! A [`ModelRequest`] as a Chat Completions request body (`POST /v1/chat/completions`).
//!
//! - The system prompt (and what the session adds to it) is one `system` message.
//! - A user message's text is a `user` message; each of its `tool_result` blocks becomes a
//!   `tool` message (`tool_call_id`, the result's text) placed first, right after the
//!   assistant message whose call it answers, as the protocol requires.
//! - An assistant message's text is its `content`, its `tool_use` blocks its `tool_calls`
//!   (`arguments` as a JSON string); thinking is not sent back (the protocol has no place for
//!   it).
//! - Tools are `{"type": "function", "function": {name, description, parameters}}`; server
//!   tools (the Messages API's own) have no Chat Completions form and are left out.
//! - The reply streams, with usage in its last chunk (`stream_options.include_usage`).

use serde_json::{Value, json};

use crate::model::{ModelError, ModelRequest};
use crate::protocol::{ContentBlock, Message, Role};

/// The request body as JSON bytes.
///
/// # Errors
/// [`ModelError::Protocol`] if the body cannot be serialized.
pub fn to_json(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(&body(request)).map_err(|e| ModelError::Protocol(format!("cannot serialize the request: {e}")))
}

/// The request body.
pub fn body(request: &ModelRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let system = request.whole_system();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages.iter() {
        push_message(&mut messages, message);
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.input_schema}})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Append `message` in Chat Completions form.
fn push_message(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::User => {
            let mut text = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                        let body = content.as_str();
                        let content = if *is_error { format!("Error: {body}") } else { body.to_owned() };
                        out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                    }
                    ContentBlock::Text { text: t, .. } if !t.is_empty() => text.push(t.as_str()),
                    ContentBlock::Text { .. }
                    | ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. }
                    | ContentBlock::ToolUse { .. }
                    | ContentBlock::Other(_) => {}
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text.join("\n\n")}));
            }
        }
        Role::Assistant => {
            let mut text = Vec::new();
            let mut calls = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::Text { text: t, .. } if !t.is_empty() => text.push(t.as_str()),
                    ContentBlock::ToolUse { id, name, input } => calls.push(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}})),
                    ContentBlock::Text { .. }
                    | ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. }
                    | ContentBlock::ToolResult { .. }
                    | ContentBlock::Other(_) => {}
                }
            }
            let mut entry = json!({"role": "assistant"});
            entry["content"] = if text.is_empty() { Value::Null } else { json!(text.join("")) };
            if !calls.is_empty() {
                entry["tool_calls"] = Value::Array(calls);
            }
            if !text.is_empty() || entry.get("tool_calls").is_some() {
                out.push(entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Purpose;
    use crate::protocol::ToolDefinition;

    #[test]
    fn a_tool_round_trip_becomes_chat_messages() {
        let messages = vec![
            Message::user_text("Read a.txt"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("Reading."),
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a.txt"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("call_1", "hello", false), ContentBlock::text("and?")],
            },
        ];
        let request = ModelRequest {
            model: "qwen".into(),
            system: "Be brief.".into(),
            system_context: Some("# Environment".into()),
            messages: messages.into(),
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object"}),
            }],
            server_tools: vec![json!({"type": "web_search_20250305", "name": "web_search"})],
            max_tokens: 4096,
            thinking: None,
            purpose: Purpose::Main,
        };
        assert_eq!(
            body(&request),
            json!({
                "model": "qwen",
                "max_tokens": 4096,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "Be brief.\n\n# Environment"},
                    {"role": "user", "content": "Read a.txt"},
                    {"role": "assistant", "content": "Reading.", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a.txt\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
                    {"role": "user", "content": "and?"},
                ],
                "tools": [{"type": "function", "function": {"name": "Read", "description": "Read a file", "parameters": {"type": "object"}}}],
            })
        );
    }
}
