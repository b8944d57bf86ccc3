//! The body of a `POST /v1/messages` request, serialized straight from a [`ModelRequest`].
//!
//! The body always streams (`"stream": true`) and carries three or four prompt-cache breakpoints
//! (`cache_control: {"type": "ephemeral"}`, the 5-minute cache):
//! - on the system prompt, sent as a list of one block, or two when the session adds its
//!   context ([`ModelRequest::system_context`]: the environment, the git snapshot, the memory),
//!   each block marked: the prompt's cache survives a new day or a new commit, and within a
//!   session both blocks stay the same from turn to turn (an empty block is left out, since
//!   the API refuses empty text blocks);
//! - on the last tool definition, which caches every tool;
//! - on the last block of the last message that can carry one, which caches the whole history
//!   for the next turn. Thinking blocks and empty text blocks cannot, so they are skipped.
//!
//! Nothing is copied: the borrowed wrappers below serialize the request's own fields, only
//! the marked block goes through a wrapper that adds the `cache_control` key, and the
//! messages before the last come from their kept JSON ([`EncodedMessages`]).

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::Value;

use crate::model::encoded::{self, EncodedMessages, NoHistory};
use crate::model::{ModelError, ModelRequest};
use crate::protocol::{ContentBlock, Role, ToolDefinition};

/// The request body as a serializable view of a [`ModelRequest`], with no messages: the
/// head [`EncodedMessages::assemble`] writes them after.
#[derive(Debug, Clone, Copy)]
struct RequestBody<'a> {
    request: &'a ModelRequest,
}

/// Serialize the body of `request` to JSON bytes.
///
/// # Errors
/// [`ModelError::Protocol`] if a content block cannot be serialized (an [`ContentBlock::Other`]
/// that is not a JSON object).
pub fn to_json(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    to_json_with(request, &mut EncodedMessages::default())
}

/// Serialize the body of `request` to JSON bytes, assembled from the JSON `kept` has of its
/// messages (keeping that of those it had not) and, when the last body's buffer is back,
/// grown from it in place: the same bytes as [`to_json`], at the cost of the new messages.
///
/// # Errors
/// As [`to_json`].
pub fn to_json_with(request: &ModelRequest, kept: &mut EncodedMessages) -> Result<Vec<u8>, ModelError> {
    let error = |e: serde_json::Error| ModelError::Protocol(format!("cannot serialize the request: {e}"));
    let (last, earlier) = match request.messages.split_last() {
        Some((last, earlier)) => (Some(last), earlier),
        None => (None, &[][..]),
    };
    let head = encoded::head(serde_json::to_vec(&RequestBody { request }).map_err(error)?);
    let marked_last = |body: &mut Vec<u8>, comma: bool| {
        let Some(message) = last else { return Ok(()) };
        if comma {
            body.push(b',');
        }
        serde_json::to_writer(body, &MarkedMessage { role: message.role, content: MarkedContent(&message.content) })
    };
    kept.assemble(&head, false, earlier, serde_json::to_string, marked_last).map_err(error)
}

/// `{"type": "ephemeral"}`.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Vec<SystemBlock<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    /// Last, so the kept messages follow the head ([`encoded::head`]).
    messages: NoHistory,
}

/// `{"type": "enabled", "budget_tokens": N}`.
#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let blocks: Vec<SystemBlock<'_>> = [Some(request.system.as_str()), request.system_context.as_deref()]
            .into_iter()
            .flatten()
            .filter(|text| !text.is_empty())
            .map(|text| SystemBlock { kind: "text", text, cache_control: EPHEMERAL })
            .collect();
        let system = (!blocks.is_empty()).then_some(blocks);
        let tools = (!request.tools.is_empty() || !request.server_tools.is_empty())
            .then_some(Tools(&request.tools, &request.server_tools));
        Body {
            model: &request.model,
            max_tokens: request.max_tokens,
            stream: true,
            system,
            tools,
            thinking: request
                .thinking
                .and_then(|budget| crate::model::thinking_budget(budget, request.max_tokens))
                .map(|budget_tokens| Thinking { kind: "enabled", budget_tokens }),
            messages: NoHistory,
        }
        .serialize(serializer)
    }
}

/// The tool list, the last of our tools marked, then the server tools as given.
struct Tools<'a>(&'a [ToolDefinition], &'a [Value]);

#[derive(Serialize)]
struct MarkedTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    cache_control: CacheControl,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let last = self.0.len().checked_sub(1);
        let mut seq = serializer.serialize_seq(Some(self.0.len() + self.1.len()))?;
        for (i, tool) in self.0.iter().enumerate() {
            if Some(i) == last {
                seq.serialize_element(&MarkedTool {
                    name: &tool.name,
                    description: &tool.description,
                    input_schema: &tool.input_schema,
                    cache_control: EPHEMERAL,
                })?;
            } else {
                seq.serialize_element(tool)?;
            }
        }
        for tool in self.1 {
            seq.serialize_element(tool)?;
        }
        seq.end()
    }
}

/// `items` as a sequence, the one at `marked` (if any) written as `mark` makes it instead.
fn marked_seq<'a, S, T, M>(
    serializer: S,
    items: &'a [T],
    marked: Option<usize>,
    mark: impl Fn(&'a T) -> M,
) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    T: Serialize,
    M: Serialize,
{
    let mut seq = serializer.serialize_seq(Some(items.len()))?;
    for (i, item) in items.iter().enumerate() {
        if Some(i) == marked {
            seq.serialize_element(&mark(item))?;
        } else {
            seq.serialize_element(item)?;
        }
    }
    seq.end()
}

#[derive(Serialize)]
struct MarkedMessage<'a> {
    role: Role,
    content: MarkedContent<'a>,
}

/// The blocks of the last message, the last cacheable one marked.
struct MarkedContent<'a>(&'a [ContentBlock]);

#[derive(Serialize)]
struct MarkedBlock<'a> {
    #[serde(flatten)]
    block: &'a ContentBlock,
    cache_control: CacheControl,
}

impl Serialize for MarkedContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let marked = self.0.iter().rposition(can_cache);
        marked_seq(serializer, self.0, marked, |block| MarkedBlock { block, cache_control: EPHEMERAL })
    }
}

/// Whether the API accepts `cache_control` on this block.
fn can_cache(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => false,
        ContentBlock::Text { text, .. } => !text.is_empty(),
        ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. } => true,
        ContentBlock::Other(value) => value.is_object(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Purpose;
    use crate::protocol::Message;
    use serde_json::json;

    fn request(messages: Vec<Message>, tools: Vec<ToolDefinition>, system: &str) -> ModelRequest {
        ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: system.into(),
            system_context: None,
            server_tools: Vec::new(),
            messages: messages.into(),
            tools,
            max_tokens: 16_000,
            thinking: None,
            purpose: Purpose::Main,
        }
    }

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: format!("{name} things"),
            input_schema: json!({"type": "object"}),
        }
    }

    fn body(request: &ModelRequest) -> Value {
        serde_json::from_slice(&to_json(request).unwrap()).unwrap()
    }

    /// A body assembled from kept JSON (grown in place from the last one whenever its buffer
    /// is back) is byte for byte the one encoded whole, through appends, a merge into the
    /// last message (whose breakpoint moves), a changed tool list and a rewrite.
    #[test]
    fn spliced_bodies_are_the_bodies_encoded_whole() {
        let mut req = request(vec![Message::user_text("Read a.txt")], vec![tool("Read")], "Be brief.");
        let mut kept = EncodedMessages::default();
        let mut client = crate::model::encoded::TestClient::default();
        let mut check = |req: &ModelRequest| {
            let body = to_json_with(req, &mut kept).unwrap();
            assert_eq!(String::from_utf8(body.clone()).unwrap(), String::from_utf8(to_json(req).unwrap()).unwrap());
            client.send(&kept, body);
        };
        check(&req);
        for turn in 0..5 {
            let id = format!("t{turn}");
            req.messages.push_merging(Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("Reading \"a.txt\"\t."),
                    ContentBlock::ToolUse { id: id.clone(), name: "Read".into(), input: json!({"file_path": "a.txt"}) },
                ],
            });
            check(&req);
            req.messages.push_merging(Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(&id, "1\thello\n", false)],
            });
            check(&req);
            req.messages.push_merging(Message::user_text("and then?"));
            check(&req);
            if turn == 2 {
                req.tools.push(tool("Grep"));
                check(&req);
            }
        }
        req.messages.edit(|messages| messages.truncate(3));
        check(&req);
        req.messages = Vec::new().into();
        check(&req);
    }

    #[test]
    fn thinking_is_sent_below_the_output_cap_or_not_at_all() {
        let mut req = request(vec![Message::user_text("hi")], Vec::new(), "");
        assert_eq!(body(&req).get("thinking"), None);
        req.thinking = Some(8000);
        assert_eq!(body(&req)["thinking"], json!({"type": "enabled", "budget_tokens": 8000}));
        req.thinking = Some(u32::MAX);
        assert_eq!(body(&req)["thinking"], json!({"type": "enabled", "budget_tokens": 15_999}));
        req.max_tokens = 1024;
        assert_eq!(body(&req).get("thinking"), None, "1023 tokens is under the API's minimum budget");
    }

    #[test]
    fn marks_system_last_tool_and_last_block() {
        let messages = vec![
            Message::user_text("Read a.txt"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("Reading."),
                    ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a.txt"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("t1", "hello", false), ContentBlock::text("thanks")],
            },
        ];
        let req = request(messages, vec![tool("Read"), tool("Bash")], "Be brief.");
        let cc = json!({"type": "ephemeral"});
        assert_eq!(
            body(&req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 16000,
                "stream": true,
                "system": [{"type": "text", "text": "Be brief.", "cache_control": cc}],
                "tools": [
                    {"name": "Read", "description": "Read things", "input_schema": {"type": "object"}},
                    {"name": "Bash", "description": "Bash things", "input_schema": {"type": "object"}, "cache_control": cc},
                ],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.txt"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "hello"},
                        {"type": "text", "text": "thanks", "cache_control": cc},
                    ]},
                ],
            })
        );
    }

    #[test]
    fn empty_system_and_tools_are_left_out() {
        let req = request(vec![Message::user_text("hi")], vec![], "");
        assert_eq!(
            body(&req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 16000,
                "stream": true,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
                ]}],
            })
        );
    }

    #[test]
    fn thinking_and_empty_text_are_never_marked() {
        let last = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text("first"),
                ContentBlock::Thinking { thinking: "hm".into(), signature: "sig".into() },
                ContentBlock::text(""),
            ],
        };
        let b = body(&request(vec![Message::user_text("q"), last], vec![], "s"));
        let content = &b["messages"][1]["content"];
        assert_eq!(content[0]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(content[1].get("cache_control"), None);
        assert_eq!(content[2].get("cache_control"), None);
        // Only the last message is marked.
        assert_eq!(b["messages"][0]["content"][0].get("cache_control"), None);
    }

    #[test]
    fn unknown_blocks_keep_their_keys_and_get_marked() {
        let raw = json!({"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}});
        let last = Message { role: Role::Assistant, content: vec![ContentBlock::Other(raw)] };
        let b = body(&request(vec![last], vec![], ""));
        assert_eq!(
            b["messages"][0]["content"][0],
            json!({"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"},
                   "cache_control": {"type": "ephemeral"}})
        );
    }

    /// The session's context is a second system block, marked too: a new day or commit
    /// leaves the prompt's cache whole. Server tools follow our tools, unmarked.
    #[test]
    fn the_session_context_and_server_tools_have_blocks_of_their_own() {
        let mut req = request(vec![Message::user_text("hi")], vec![tool("Read")], "Be brief.");
        req.system_context = Some("# Environment\n\nToday: 2026-12-03".into());
        req.server_tools = vec![json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 8})];
        let cc = json!({"type": "ephemeral"});
        let b = body(&req);
        assert_eq!(
            b["system"],
            json!([
                {"type": "text", "text": "Be brief.", "cache_control": cc},
                {"type": "text", "text": "# Environment\n\nToday: 2026-12-03", "cache_control": cc},
            ])
        );
        assert_eq!(
            b["tools"],
            json!([
                {"name": "Read", "description": "Read things", "input_schema": {"type": "object"}, "cache_control": cc},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 8},
            ])
        );
        let only_server = ModelRequest { tools: Vec::new(), system: String::new(), ..req };
        let b = body(&only_server);
        assert_eq!(b["tools"], json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]));
        assert_eq!(
            b["system"],
            json!([{"type": "text", "text": "# Environment\n\nToday: 2026-12-03", "cache_control": cc}])
        );
    }
}
