//! One MCP server tool as a [`Tool`]: named `mcp__<server>__<tool>`, called over the
//! server's connection with a timeout, cancelled with the call.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::Connection;
use crate::tools::{McpOrigin, Tool, ToolContext, ToolOutput};

/// Answer of a call cancelled by `ctx.cancel` (an interrupt).
pub const CANCELLED: &str = "MCP tool call was cancelled";

/// A tool of an MCP server.
pub struct McpTool {
    name: String,
    description: String,
    schema: Value,
    server: String,
    remote: String,
    read_only: bool,
    timeout: Duration,
    connection: Arc<Connection>,
}

/// `mcp__<server>__<tool>`, with characters the Messages API refuses in a tool name
/// (anything but letters, digits, `_` and `-`) replaced by `_`.
pub fn qualified_name(server: &str, tool: &str) -> String {
    let clean =
        |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect::<String>();
    format!("mcp__{}__{}", clean(server), clean(tool))
}

impl McpTool {
    /// The tool `tool` of the server `server`, called over `connection`.
    pub fn new(server: &str, tool: &rmcp::model::Tool, connection: Arc<Connection>, timeout: Duration) -> Self {
        let name = qualified_name(server, &tool.name);
        let description = tool.description.as_deref().unwrap_or_default().to_owned();
        McpTool {
            name,
            description,
            schema: Value::Object((*tool.input_schema).clone()),
            server: server.to_owned(),
            remote: tool.name.to_string(),
            read_only: tool.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false),
            timeout,
            connection,
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    /// Only tools the server marks `readOnlyHint: true`.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.read_only
    }

    /// Never: an MCP tool runs only with a rule (or in bypassPermissions), whatever the
    /// server says about it, as in Claude Code.
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    fn mcp_origin(&self) -> Option<McpOrigin> {
        Some(McpOrigin { server: self.server.clone(), tool: self.remote.clone() })
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let peer = self.connection.peer().clone();
        let connection = self.connection.clone();
        let (server, remote, timeout) = (self.server.clone(), self.remote.clone(), self.timeout);
        Box::pin(async move {
            let _alive = connection;
            let arguments = match input {
                Value::Object(map) => map,
                Value::Null => serde_json::Map::new(),
                other => return ToolOutput::error(format!("the input of an MCP tool is an object, not {other}")),
            };
            let call = peer.call_tool(CallToolRequestParams::new(remote.clone()).with_arguments(arguments));
            tokio::select! {
                () = ctx.cancel.cancelled() => ToolOutput::error(CANCELLED),
                () = tokio::time::sleep(timeout) => ToolOutput::error(format!(
                    "MCP server `{server}`: tool `{remote}` timed out after {} ms (MCP_TOOL_TIMEOUT)",
                    timeout.as_millis()
                )),
                result = call => match result {
                    Ok(result) => {
                        let content = render(&result);
                        if result.is_error == Some(true) { ToolOutput::error(content) } else { ToolOutput::ok(content) }
                    }
                    Err(e) => ToolOutput::error(format!("MCP server `{server}`: tool `{remote}` failed: {e}")),
                },
            }
        })
    }
}

/// The text the model reads for a result: text content joined by newlines; images, audio and
/// resources described in text; the structured content when there is nothing else.
pub fn render(result: &rmcp::model::CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        let Ok(block) = serde_json::to_value(block) else { continue };
        parts.push(describe(&block));
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// One content block (its JSON form) as text.
pub fn describe(block: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match block.get("type").and_then(Value::as_str) {
        Some("text") => s(block, "text"),
        Some(kind @ ("image" | "audio")) => {
            let bytes = block.get("data").and_then(Value::as_str).map_or(0, |d| d.len() / 4 * 3);
            format!("[{kind}: {}, about {bytes} bytes]", s(block, "mimeType"))
        }
        Some("resource") => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource: {}]\n{text}", s(&resource, "uri")),
                None => format!("[resource: {}, {} binary]", s(&resource, "uri"), s(&resource, "mimeType")),
            }
        }
        Some("resource_link") => format!("[resource link: {} ({})]", s(block, "uri"), s(block, "name")),
        _ => block.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_qualified_and_cleaned() {
        assert_eq!(qualified_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(qualified_name("my-srv", "get.file/x"), "mcp__my-srv__get_file_x");
    }

    #[test]
    fn content_blocks_become_text() {
        assert_eq!(describe(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            describe(&json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
            "[image: image/png, about 3 bytes]"
        );
        assert_eq!(
            describe(&json!({"type": "resource", "resource": {"uri": "test://1", "text": "body"}})),
            "[resource: test://1]\nbody"
        );
        assert_eq!(
            describe(
                &json!({"type": "resource", "resource": {"uri": "test://2", "mimeType": "application/pdf", "blob": "AA"}})
            ),
            "[resource: test://2, application/pdf binary]"
        );
        assert_eq!(
            describe(&json!({"type": "resource_link", "uri": "file:///a", "name": "a"})),
            "[resource link: file:///a (a)]"
        );
    }
}
