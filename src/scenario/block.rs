//! The content blocks a scenario may script, checked once so the scripted model never has to
//! guess at a block's shape. The scenario keeps blocks as raw JSON (so a parse error can point
//! into them); [`ScriptBlock::from_value`] is the one place that decides what a block means.

use serde_json::{Map, Value};

/// One content block of a scripted reply, after checking.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Citations of a server tool's results (`web_search_result_location` objects),
        /// streamed as `citations_delta` events.
        citations: Vec<Value>,
    },
    /// A tool call.
    ToolUse {
        /// The call id; the scripted model makes one up when absent.
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The tool's input.
        input: Map<String, Value>,
    },
    /// Extended thinking.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// The signature; the scripted model makes one up when absent.
        signature: Option<String>,
    },
    /// A block of a server tool the API runs itself (`server_tool_use`, and its result such
    /// as `web_search_tool_result`), streamed whole in its `content_block_start`, as the API
    /// streams a result (a `server_tool_use` gets its input as one delta, as the API sends it).
    Server(Map<String, Value>),
}

/// What a scripted block lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// The block is not a JSON object (what it is instead).
    #[error("expected a content block object, found {0}")]
    NotAnObject(&'static str),
    /// `type` is missing or not one the scripted model streams.
    #[error(
        "expected `type` to be \"text\", \"tool_use\", \"thinking\", \"server_tool_use\" or a server tool's result \
         (\"web_search_tool_result\")"
    )]
    Type,
    /// A text block's `citations` that is not a list of objects.
    #[error("a text block's `citations` must be a list of citation objects")]
    Citations,
    /// A required field is missing or not a string.
    #[error("a {block} block needs `{key}`, a string")]
    Required {
        /// The block's type.
        block: &'static str,
        /// The field.
        key: &'static str,
    },
    /// A `tool_use` (or `server_tool_use`) block without an object `input`.
    #[error("a tool_use block needs `input`, an object")]
    Input,
    /// An optional field that is not a string.
    #[error("a {block} block's `{key}` must be a string")]
    NotAString {
        /// The block's type.
        block: &'static str,
        /// The field.
        key: &'static str,
    },
}

impl ScriptBlock {
    /// Check one scripted block.
    ///
    /// # Errors
    /// [`BlockError`] saying what the block lacks, e.g. ``a tool_use block needs `name`, a
    /// string``.
    pub fn from_value(block: &Value) -> Result<ScriptBlock, BlockError> {
        let Value::Object(map) = block else {
            return Err(BlockError::NotAnObject(kind_of(block)));
        };
        match map.get("type").and_then(Value::as_str) {
            Some("text") => Ok(ScriptBlock::Text {
                text: required_str(map, "text", "text")?,
                citations: match map.get("citations") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(list)) if list.iter().all(Value::is_object) => list.clone(),
                    Some(_) => return Err(BlockError::Citations),
                },
            }),
            Some("server_tool_use") => {
                required_str(map, "id", "server_tool_use")?;
                required_str(map, "name", "server_tool_use")?;
                if !matches!(map.get("input"), Some(Value::Object(_))) {
                    return Err(BlockError::Input);
                }
                Ok(ScriptBlock::Server(map.clone()))
            }
            Some(kind) if kind.ends_with("_tool_result") && kind != "tool_result" => {
                required_str(map, "tool_use_id", "server tool result")?;
                Ok(ScriptBlock::Server(map.clone()))
            }
            Some("tool_use") => {
                let id = optional_str(map, "id", "tool_use")?;
                let name = required_str(map, "name", "tool_use")?;
                let Some(Value::Object(input)) = map.get("input") else {
                    return Err(BlockError::Input);
                };
                Ok(ScriptBlock::ToolUse { id, name, input: input.clone() })
            }
            Some("thinking") => Ok(ScriptBlock::Thinking {
                thinking: required_str(map, "thinking", "thinking")?,
                signature: optional_str(map, "signature", "thinking")?,
            }),
            _ => Err(BlockError::Type),
        }
    }

    /// Whether this is a tool call.
    pub fn is_tool_use(&self) -> bool {
        matches!(self, ScriptBlock::ToolUse { .. })
    }

    /// Bytes of payload, for output-token estimates (the same measure as
    /// [`ContentBlock::char_len`](crate::protocol::ContentBlock::char_len)).
    pub fn char_len(&self) -> usize {
        match self {
            ScriptBlock::Text { text, .. } => text.len(),
            ScriptBlock::Server(map) => Value::Object(map.clone()).to_string().len(),
            ScriptBlock::ToolUse { name, input, .. } => name.len() + Value::Object(input.clone()).to_string().len(),
            ScriptBlock::Thinking { thinking, .. } => thinking.len(),
        }
    }
}

fn required_str(map: &Map<String, Value>, key: &'static str, block: &'static str) -> Result<String, BlockError> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(BlockError::Required { block, key }),
    }
}

fn optional_str(
    map: &Map<String, Value>,
    key: &'static str,
    block: &'static str,
) -> Result<Option<String>, BlockError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(BlockError::NotAString { block, key }),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_the_three_block_types() {
        assert_eq!(
            ScriptBlock::from_value(&json!({"type": "text", "text": "hi"})),
            Ok(ScriptBlock::Text { text: "hi".into(), citations: Vec::new() })
        );
        let input = json!({"file_path": "a.txt"}).as_object().cloned().unwrap_or_default();
        assert_eq!(
            ScriptBlock::from_value(&json!({"type": "tool_use", "name": "Read", "input": {"file_path": "a.txt"}})),
            Ok(ScriptBlock::ToolUse { id: None, name: "Read".into(), input })
        );
        assert_eq!(
            ScriptBlock::from_value(&json!({"type": "thinking", "thinking": "hmm", "signature": "s"})),
            Ok(ScriptBlock::Thinking { thinking: "hmm".into(), signature: Some("s".into()) })
        );
    }

    #[test]
    fn says_what_a_block_lacks() {
        let cases = [
            (json!("text"), "expected a content block object, found a string"),
            (
                json!({"type": "image"}),
                "expected `type` to be \"text\", \"tool_use\", \"thinking\", \"server_tool_use\" or a server tool's \
                 result (\"web_search_tool_result\")",
            ),
            (
                json!({"type": "text", "text": "t", "citations": "x"}),
                "a text block's `citations` must be a list of citation objects",
            ),
            (
                json!({"type": "server_tool_use", "id": "s", "name": "web_search"}),
                "a tool_use block needs `input`, an object",
            ),
            (
                json!({"type": "web_search_tool_result", "content": []}),
                "a server tool result block needs `tool_use_id`, a string",
            ),
            (json!({"type": "text"}), "a text block needs `text`, a string"),
            (json!({"type": "tool_use", "input": {}}), "a tool_use block needs `name`, a string"),
            (json!({"type": "tool_use", "name": "Read", "input": []}), "a tool_use block needs `input`, an object"),
            (
                json!({"type": "tool_use", "id": 3, "name": "Read", "input": {}}),
                "a tool_use block's `id` must be a string",
            ),
            (json!({"type": "thinking"}), "a thinking block needs `thinking`, a string"),
        ];
        for (block, message) in cases {
            assert_eq!(ScriptBlock::from_value(&block).map_err(|e| e.to_string()), Err(message.to_owned()), "{block}");
        }
    }
}
