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

use serde::Serialize;
use serde_json::{Value, json};

use crate::model::encoded::{self, EncodedMessages, NoHistory};
use crate::model::{ModelError, ModelRequest};
use crate::protocol::{ContentBlock, Message, Role, ToolDefinition};

/// The request body as JSON bytes, every message encoded anew.
///
/// # Errors
/// [`ModelError::Protocol`] if the body cannot be serialized.
pub fn to_json(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    to_json_with(request, &mut EncodedMessages::default())
}

/// The request body as JSON bytes, assembled from the items `kept` holds for its messages
/// (keeping those of the ones it did not) and grown in place from the last body: the bytes
/// of [`to_json`], at the cost of the new messages only.
///
/// # Errors
/// As [`to_json`].
pub fn to_json_with(request: &ModelRequest, kept: &mut EncodedMessages) -> Result<Vec<u8>, ModelError> {
    let error = |e: serde_json::Error| ModelError::Protocol(format!("cannot serialize the request: {e}"));
    let system = request.whole_system();
    let wire = Body {
        model: &request.model,
        max_tokens: request.max_tokens,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        tools: request.tools.iter().map(Tool::from).collect(),
        messages: NoHistory,
    };
    let mut head = encoded::head(serde_json::to_vec(&wire).map_err(error)?);
    // The system prompt is the array's first element, so it is part of the head.
    if !system.is_empty() {
        serde_json::to_writer(&mut head, &json!({"role": "system", "content": system})).map_err(error)?;
    }
    let encode = |message: &Message| {
        let mut items = Vec::new();
        push_message(&mut items, message);
        encoded::joined(&items)
    };
    kept.assemble(&head, !system.is_empty(), &request.messages, encode, |_, _| Ok(())).map_err(error)
}

/// The body's fields, in the order they are written.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    /// Last, so the kept messages follow the head ([`encoded::head`]).
    messages: NoHistory,
}

/// `{"include_usage": true}`: usage in the stream's last chunk.
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `{"type": "function", "function": {name, description, parameters}}`.
#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> From<&'a ToolDefinition> for Tool<'a> {
    fn from(tool: &'a ToolDefinition) -> Self {
        Tool {
            kind: "function",
            function: Function { name: &tool.name, description: &tool.description, parameters: &tool.input_schema },
        }
    }
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
        let body: Value = serde_json::from_slice(&to_json(&request).unwrap()).unwrap();
        assert_eq!(
            body,
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

    /// A body assembled from kept items (grown in place whenever the last body's buffer is
    /// back) is byte for byte the one encoded whole, for Chat Completions and for Responses,
    /// through appends, merges into the last message and a rewrite.
    #[test]
    fn spliced_bodies_are_the_bodies_encoded_whole_on_both_openai_wires() {
        type Encode = fn(&ModelRequest, &mut EncodedMessages) -> Result<Vec<u8>, ModelError>;
        let wires: [(Encode, Encode); 2] = [
            (to_json_with, |r, _| to_json(r)),
            (crate::model::responses::request::to_json_with, |r, _| crate::model::responses::request::to_json(r)),
        ];
        for (spliced, whole) in wires {
            let mut request = ModelRequest {
                model: "qwen".into(),
                system: "Be brief.".into(),
                system_context: None,
                messages: vec![Message::user_text("Read a.txt")].into(),
                tools: Vec::new(),
                server_tools: Vec::new(),
                max_tokens: 4096,
                thinking: None,
                purpose: Purpose::Main,
            };
            let mut kept = EncodedMessages::default();
            let mut client = crate::model::encoded::TestClient::default();
            let mut check = |request: &ModelRequest| {
                let fresh = String::from_utf8(whole(request, &mut EncodedMessages::default()).unwrap()).unwrap();
                let body = spliced(request, &mut kept).unwrap();
                assert_eq!(String::from_utf8(body.clone()).unwrap(), fresh);
                client.send(&kept, body);
                fresh
            };
            let first = check(&request);
            for turn in 0..4 {
                let id = format!("call_{turn}");
                request.messages.push_merging(Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::text("Reading \"a.txt\"."),
                        ContentBlock::ToolUse {
                            id: id.clone(),
                            name: "Read".into(),
                            input: json!({"file_path": "a.txt"}),
                        },
                    ],
                });
                check(&request);
                request.messages.push_merging(Message {
                    role: Role::User,
                    content: vec![ContentBlock::tool_result(&id, "1\thello\n", turn == 2)],
                });
                check(&request);
                // Merged into the tool results' message: its items change, so they are made again.
                request.messages.push_merging(Message::user_text("and then?"));
                let merged = check(&request);
                assert_eq!(merged.matches("and then?").count(), turn + 1, "{merged}");
            }
            request.messages.edit(|messages| messages.truncate(1));
            assert_eq!(check(&request), first);
        }
    }
}
