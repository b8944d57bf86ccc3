//! One MCP server tool as a [`Tool`]: named `mcp__<server>__<tool>`, called over the
//! server's connection with a timeout, cancelled with the call.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::{Connection, names};
use crate::tools::{McpOrigin, Tool, ToolContext, ToolImage, ToolOutput};

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
/// (anything but letters, digits, `_` and `-`) replaced by `_` ([`names::clean`]); a
/// server's tools are bounded and de-collided by [`names::tool_names`].
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", names::clean(server), names::clean(tool))
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

    /// This tool offered to the model as `name` (calls still reach the server's tool by its
    /// own name).
    #[must_use]
    pub fn with_name(mut self, name: String) -> Self {
        self.name = name;
        self
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
                        let Rendered { text, images } = render(&result);
                        let output = if result.is_error == Some(true) { ToolOutput::error(text) } else { ToolOutput::ok(text) };
                        output.with_images(images)
                    }
                    Err(e) => ToolOutput::error(format!(
                        "MCP server `{server}`: tool `{remote}` failed: {}",
                        super::describe(&e)
                    )),
                },
            }
        })
    }
}

/// A result as the model gets it: its text, and the images it sees after the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Text content joined by newlines; audio, resources and images described in text (an
    /// attached image as `[image: TYPE, about N bytes, attached]`); the structured content
    /// when there is nothing else.
    pub text: String,
    /// The images the Messages API takes ([`ATTACHABLE`], at most [`MAX_IMAGE_BYTES`]).
    pub images: Vec<ToolImage>,
}

/// Image types the Messages API accepts in a tool result.
pub const ATTACHABLE: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The largest image attached (decoded bytes), the Messages API's limit; a larger one is only
/// described.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// What the model reads for a result (`Rendered`).
pub fn render(result: &rmcp::model::CallToolResult) -> Rendered {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in &result.content {
        let Ok(block) = serde_json::to_value(block) else { continue };
        match attachable_image(&block) {
            Some(image) => {
                parts.push(format!(
                    "[image: {}, about {} bytes, attached]",
                    image.media_type,
                    decoded_len(&image.data)
                ));
                images.push(image);
            }
            None => parts.push(describe(&block)),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    Rendered { text: parts.join("\n"), images }
}

/// The image of an `image` block the Messages API takes.
fn attachable_image(block: &Value) -> Option<ToolImage> {
    if block.get("type")?.as_str()? != "image" {
        return None;
    }
    let media_type = block.get("mimeType")?.as_str()?;
    let data = block.get("data")?.as_str()?;
    (ATTACHABLE.contains(&media_type) && !data.is_empty() && decoded_len(data) <= MAX_IMAGE_BYTES)
        .then(|| ToolImage { media_type: media_type.to_owned(), data: data.to_owned() })
}

/// About how many bytes base64 `data` decodes to.
fn decoded_len(data: &str) -> usize {
    data.len() / 4 * 3
}

/// One content block (its JSON form) as text.
pub fn describe(block: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match block.get("type").and_then(Value::as_str) {
        Some("text") => s(block, "text"),
        Some(kind @ ("image" | "audio")) => {
            let bytes = block.get("data").and_then(Value::as_str).map_or(0, decoded_len);
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
    fn images_the_api_takes_are_attached_and_others_described() {
        let result: rmcp::model::CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "shot:"},
            {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"},
            {"type": "image", "data": "Qk0=", "mimeType": "image/bmp"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        ]}))
        .unwrap();
        assert_eq!(
            render(&result),
            Rendered {
                text: "shot:\n[image: image/png, about 6 bytes, attached]\n[image: image/bmp, about 3 bytes]\n\
                       [audio: audio/wav, about 3 bytes]"
                    .into(),
                images: vec![ToolImage { media_type: "image/png".into(), data: "iVBORw0K".into() }],
            }
        );
        let too_large = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let result: rmcp::model::CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "image", "data": too_large, "mimeType": "image/jpeg"}
        ]}))
        .unwrap();
        let rendered = render(&result);
        assert_eq!(rendered.images, vec![]);
        assert_eq!(rendered.text, format!("[image: image/jpeg, about {} bytes]", (MAX_IMAGE_BYTES / 3 + 1) * 3));
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
