//! A [`ModelRequest`] as an OpenAI Responses request body (`POST /v1/responses`).
//!
//! - The system prompt (and what the session adds) is `instructions`.
//! - Messages become `input` items: a user's text an `input_text` message, an assistant's
//!   text an `output_text` message, each `tool_use` a `function_call` item (`call_id`,
//!   `name`, `arguments` as a JSON string) and each `tool_result` a `function_call_output`
//!   item; thinking is not sent back.
//! - Tools are `{"type": "function", name, description, parameters}`; the Messages API's
//!   server tools are left out.
//! - Nothing is stored on the server (`store: false`): the loop sends the whole history.

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

/// The request body as JSON bytes, assembled from the input items `kept` holds for its
/// messages (keeping those of the ones it did not) and grown in place from the last body: the
/// bytes of [`to_json`], at the cost of the new messages only.
///
/// # Errors
/// As [`to_json`].
pub fn to_json_with(request: &ModelRequest, kept: &mut EncodedMessages) -> Result<Vec<u8>, ModelError> {
    let error = |e: serde_json::Error| ModelError::Protocol(format!("cannot serialize the request: {e}"));
    let instructions = request.whole_system();
    let wire = Body {
        model: &request.model,
        instructions: (!instructions.is_empty()).then_some(instructions.as_str()),
        max_output_tokens: request.max_tokens,
        stream: true,
        store: false,
        tools: request.tools.iter().map(Tool::from).collect(),
        input: NoHistory,
    };
    let head = encoded::head(serde_json::to_vec(&wire).map_err(error)?);
    let encode = |message: &Message| encoded::joined(&input_items(message));
    kept.assemble(&head, false, &request.messages, encode, |_, _| Ok(())).map_err(error)
}

/// The body's fields, in the order they are written.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    max_output_tokens: u32,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    /// Last, so the kept items follow the head ([`encoded::head`]).
    input: NoHistory,
}

/// `{"type": "function", name, description, parameters}`.
#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> From<&'a ToolDefinition> for Tool<'a> {
    fn from(tool: &'a ToolDefinition) -> Self {
        Tool { kind: "function", name: &tool.name, description: &tool.description, parameters: &tool.input_schema }
    }
}

/// The input items `message` becomes: its text runs as messages, each `tool_use` a
/// `function_call` and each `tool_result` a `function_call_output`, in order.
fn input_items(message: &Message) -> Vec<Value> {
    let (role, text_kind) = match message.role {
        Role::User => ("user", "input_text"),
        Role::Assistant => ("assistant", "output_text"),
    };
    let mut input = Vec::new();
    let mut texts = Vec::new();
    let flush = |texts: &mut Vec<Value>, input: &mut Vec<Value>| {
        if !texts.is_empty() {
            input.push(json!({"role": role, "content": std::mem::take(texts)}));
        }
    };
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => texts.push(json!({"type": text_kind, "text": text})),
            ContentBlock::ToolUse { id, name, input: args } => {
                flush(&mut texts, &mut input);
                input
                    .push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}));
            }
            ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                flush(&mut texts, &mut input);
                let body = content.as_str();
                let output = if *is_error { format!("Error: {body}") } else { body.to_owned() };
                input.push(json!({"type": "function_call_output", "call_id": tool_use_id, "output": output}));
            }
            ContentBlock::Text { .. }
            | ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Other(_) => {}
        }
    }
    flush(&mut texts, &mut input);
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Purpose;

    #[test]
    fn a_tool_round_trip_becomes_input_items() {
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
            Message { role: Role::User, content: vec![ContentBlock::tool_result("call_1", "hello", true)] },
        ];
        let request = ModelRequest {
            model: "gpt-5".into(),
            system: "Be brief.".into(),
            system_context: None,
            messages: messages.into(),
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "Read".into(),
                input_schema: json!({"type": "object"}),
            }],
            server_tools: Vec::new(),
            max_tokens: 1000,
            thinking: None,
            purpose: Purpose::Main,
        };
        let body: Value = serde_json::from_slice(&to_json(&request).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "instructions": "Be brief.",
                "max_output_tokens": 1000,
                "stream": true,
                "store": false,
                "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}]},
                    {"role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                    {"type": "function_call", "call_id": "call_1", "name": "Read", "arguments": "{\"file_path\":\"a.txt\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "Error: hello"},
                ],
                "tools": [{"type": "function", "name": "Read", "description": "Read", "parameters": {"type": "object"}}],
            })
        );
    }
}
