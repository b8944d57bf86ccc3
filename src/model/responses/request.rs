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

use serde_json::{Value, json};

use crate::model::{ModelError, ModelRequest};
use crate::protocol::{ContentBlock, Role};

/// The request body as JSON bytes.
///
/// # Errors
/// [`ModelError::Protocol`] if the body cannot be serialized.
pub fn to_json(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(&body(request)).map_err(|e| ModelError::Protocol(format!("cannot serialize the request: {e}")))
}

/// The request body.
pub fn body(request: &ModelRequest) -> Value {
    let instructions = request.whole_system();
    let mut input = Vec::new();
    for message in request.messages.iter() {
        let (role, text_kind) = match message.role {
            Role::User => ("user", "input_text"),
            Role::Assistant => ("assistant", "output_text"),
        };
        let mut texts = Vec::new();
        let flush = |texts: &mut Vec<Value>, input: &mut Vec<Value>| {
            if !texts.is_empty() {
                input.push(json!({"role": role, "content": std::mem::take(texts)}));
            }
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text, .. } if !text.is_empty() => {
                    texts.push(json!({"type": text_kind, "text": text}))
                }
                ContentBlock::ToolUse { id, name, input: args } => {
                    flush(&mut texts, &mut input);
                    input.push(
                        json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}),
                    );
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
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "max_output_tokens": request.max_tokens,
        "stream": true,
        "store": false,
    });
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema}))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Purpose;
    use crate::protocol::{Message, ToolDefinition};

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
        assert_eq!(
            body(&request),
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
