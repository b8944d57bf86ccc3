//! SDK servers: MCP servers living in the Claude Agent SDK's process (`create_sdk_mcp_server`
//! in Python, `createSdkMcpServer` in TypeScript). The Python SDK configures them in
//! `--mcp-config` as `{"type": "sdk", "name": "NAME"}` under the key the user gave them; the
//! TypeScript SDK names their keys only in `initialize` (`sdkMcpServers`), with what each
//! answers to `initialize` and `tools/list` (`sdkMcpServerManifests`, [`Manifest`]). Only the
//! SDK mode can reach them: every JSON-RPC message to a server goes to the SDK as an
//! `mcp_message` control request (`{"subtype": "mcp_message", "server_name": KEY, "message":
//! …}`; both SDKs look the server up by its key, not its name), and the answer's
//! `mcp_response` is the server's reply.
//!
//! [`SdkTransport`] is the rmcp transport over such a [`Channel`]: a message is written at
//! once, in the order rmcp sends them, and each answer is awaited on a task of its own, so
//! calls run concurrently. The SDK acknowledges a notification with an empty result, which is
//! dropped; a request the SDK answers with an error becomes a JSON-RPC error for that request.
//! [`ManifestChannel`] answers a server's `initialize` and `tools/list` from its manifest, as
//! Claude Code does: only its calls reach the SDK.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Client, ConnectError, Connection};
use crate::peer::PeerError;

/// Why a server configured with `"type": "sdk"` fails outside the SDK mode.
pub const SDK_ONLY: &str = "an SDK server is reachable only from the Claude Agent SDK";

/// JSON-RPC's "internal error" code, for a request the SDK could not deliver.
const INTERNAL_ERROR: i64 = -32603;

/// The way to the SDK's in-process servers.
pub trait Channel: Send + Sync {
    /// Send the JSON-RPC `message` to the SDK server `server` now, and return the wait for
    /// the SDK's answer (its `{"mcp_response": …}` object).
    ///
    /// # Errors
    /// Nobody can answer any more (the SDK's input is closed); the wait fails with the SDK's
    /// error, or when the input closes before the answer.
    fn send(&self, server: &str, message: Value) -> Result<BoxFuture<'static, Result<Value, PeerError>>, PeerError>;
}

/// What the TypeScript SDK declares of one in-process server in `initialize`: its answers to
/// `initialize` (`initializeResult`) and to `tools/list` (`toolsListResult`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// The `initialize` result.
    pub initialize: Option<Value>,
    /// The `tools/list` result.
    pub tools: Option<Value>,
}

impl Manifest {
    /// The manifest in `initialize`'s `sdkMcpServerManifests` entry `value`.
    pub fn from_value(value: &Value) -> Manifest {
        let result = |key: &str| value.get(key).filter(|v| v.is_object()).cloned();
        Manifest { initialize: result("initializeResult"), tools: result("toolsListResult") }
    }
}

/// A [`Channel`] answering from [`Manifest`]s what they hold — a server's `initialize` (and
/// the `notifications/initialized` after it, which then goes nowhere) and its first
/// `tools/list` page — and passing every other message on.
pub struct ManifestChannel {
    inner: Arc<dyn Channel>,
    manifests: BTreeMap<String, Manifest>,
}

impl ManifestChannel {
    /// `inner` with the manifests of the servers, by key.
    pub fn new(inner: Arc<dyn Channel>, manifests: BTreeMap<String, Manifest>) -> Self {
        ManifestChannel { inner, manifests }
    }

    /// The answer the manifest of `server` holds for `message`, if it holds one.
    fn local_answer(&self, server: &str, message: &Value) -> Option<Value> {
        let manifest = self.manifests.get(server)?;
        let method = message.get("method").and_then(Value::as_str)?;
        let result = match method {
            "initialize" => manifest.initialize.clone()?,
            "notifications/initialized" if manifest.initialize.is_some() => return Some(json!({})),
            "tools/list" if message.pointer("/params/cursor").is_none_or(Value::is_null) => manifest.tools.clone()?,
            _ => return None,
        };
        let id = message.get("id")?;
        Some(json!({"mcp_response": {"jsonrpc": "2.0", "id": id, "result": result}}))
    }
}

impl Channel for ManifestChannel {
    fn send(&self, server: &str, message: Value) -> Result<BoxFuture<'static, Result<Value, PeerError>>, PeerError> {
        match self.local_answer(server, &message) {
            Some(answer) => Ok(Box::pin(std::future::ready(Ok(answer)))),
            None => self.inner.send(server, message),
        }
    }
}

/// What can go wrong sending a message to an SDK server.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// The message could not be written as JSON.
    #[error("cannot encode the message: {0}")]
    Encode(#[from] serde_json::Error),
    /// The SDK can no longer answer.
    #[error(transparent)]
    Closed(PeerError),
}

/// The rmcp client transport to one SDK server over a [`Channel`].
pub struct SdkTransport {
    server: String,
    channel: Arc<dyn Channel>,
    replies: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    incoming: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

impl SdkTransport {
    /// The transport to the SDK server `server` through `channel`.
    pub fn new(server: &str, channel: Arc<dyn Channel>) -> Self {
        let (replies, incoming) = mpsc::unbounded_channel();
        SdkTransport { server: server.to_owned(), channel, replies, incoming }
    }

    /// Write `item` now; a request's answer arrives on `incoming` later.
    fn dispatch(&self, item: &ClientJsonRpcMessage) -> Result<(), SdkError> {
        let message = serde_json::to_value(item)?;
        // Only a request (a method and an id) gets an answer to pass on.
        let request_id = message.get("method").and(message.get("id")).cloned();
        let waiting = self.channel.send(&self.server, message).map_err(SdkError::Closed)?;
        let Some(id) = request_id else {
            // A notification or a response: the SDK acknowledges it, and nothing waits.
            tokio::spawn(async move {
                let _ = waiting.await;
            });
            return Ok(());
        };
        let replies = self.replies.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            let reply = match waiting.await {
                Ok(answer) => reply_of(&server, &id, answer),
                Err(message) => error_reply(&id, &format!("SDK MCP server `{server}`: {message}")),
            };
            let _ = replies.send(reply);
        });
        Ok(())
    }
}

/// The server's reply in the SDK's answer `{"mcp_response": …}` to the request `id`, or a
/// JSON-RPC error for that request when the answer holds none.
fn reply_of(server: &str, id: &Value, mut answer: Value) -> ServerJsonRpcMessage {
    match answer.get_mut("mcp_response").map(Value::take) {
        Some(response) => match serde_json::from_value::<ServerJsonRpcMessage>(response) {
            Ok(reply) => reply,
            Err(e) => error_reply(id, &format!("SDK MCP server `{server}` answered with no JSON-RPC message: {e}")),
        },
        None => error_reply(id, &format!("SDK MCP server `{server}`: the SDK's answer has no `mcp_response`")),
    }
}

/// A JSON-RPC error answering the request `id` with `message`.
fn error_reply(id: &Value, message: &str) -> ServerJsonRpcMessage {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": INTERNAL_ERROR, "message": message}});
    serde_json::from_value(error).expect("a JSON-RPC error with the request's own id is a server message")
}

impl Transport<RoleClient> for SdkTransport {
    type Error = SdkError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), SdkError>> + Send + 'static {
        std::future::ready(self.dispatch(&item))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), SdkError>> + Send {
        self.incoming.close();
        std::future::ready(Ok(()))
    }
}

/// Speak the `initialize` handshake as `client` with the SDK server `server` through `channel`.
///
/// # Errors
/// [`ConnectError::Initialize`]: the SDK cannot be reached, or the server does not answer
/// `initialize`.
pub async fn connect(client: Client, server: &str, channel: Arc<dyn Channel>) -> Result<Connection, ConnectError> {
    let transport = SdkTransport::new(server, channel);
    let service = client.serve(transport).await.map_err(|e| ConnectError::Initialize(Box::new(e)))?;
    Ok(Connection::new(service, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A channel answering each message with `answer(message)`, recording what it was sent.
    struct Fake {
        sent: Mutex<Vec<(String, Value)>>,
        answer: fn(&Value) -> Result<Value, PeerError>,
        open: bool,
    }

    impl Channel for Fake {
        fn send(
            &self,
            server: &str,
            message: Value,
        ) -> Result<BoxFuture<'static, Result<Value, PeerError>>, PeerError> {
            if !self.open {
                return Err(PeerError::Closed);
            }
            let answer = (self.answer)(&message);
            self.sent.lock().unwrap().push((server.to_owned(), message));
            Ok(Box::pin(async move { answer }))
        }
    }

    fn transport(answer: fn(&Value) -> Result<Value, PeerError>, open: bool) -> (SdkTransport, Arc<Fake>) {
        let fake = Arc::new(Fake { sent: Mutex::new(Vec::new()), answer, open });
        (SdkTransport::new("calc", fake.clone()), fake)
    }

    fn message(json: Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json).unwrap()
    }

    fn received(reply: ServerJsonRpcMessage) -> Value {
        serde_json::to_value(reply).unwrap()
    }

    #[tokio::test]
    async fn a_request_gets_the_servers_reply_and_a_notification_nothing() {
        let (mut t, fake) = transport(
            |m| match m.get("id") {
                Some(id) => Ok(json!({"mcp_response": {"jsonrpc": "2.0", "id": id, "result": {"tools": []}}})),
                None => Ok(json!({"mcp_response": {"jsonrpc": "2.0", "result": {}}})),
            },
            true,
        );
        t.send(message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))).await.unwrap();
        t.send(message(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}))).await.unwrap();
        let reply = received(t.receive().await.unwrap());
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}));
        let sent = fake.sent.lock().unwrap().clone();
        assert_eq!(
            sent,
            [
                ("calc".to_owned(), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
                ("calc".to_owned(), json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})),
            ]
        );
        // The notification's acknowledgement never arrives as a message.
        t.close().await.unwrap();
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn an_error_answer_fails_only_its_request() {
        let (mut t, _) = transport(|_| Err(PeerError::Answered("Server 'calc' not found".into())), true);
        t.send(message(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))).await.unwrap();
        assert_eq!(
            received(t.receive().await.unwrap()),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603,
                   "message": "SDK MCP server `calc`: Server 'calc' not found"}})
        );
        let (mut t, _) = transport(|_| Ok(json!({"other": 1})), true);
        t.send(message(json!({"jsonrpc": "2.0", "id": "a", "method": "ping"}))).await.unwrap();
        assert_eq!(
            received(t.receive().await.unwrap()),
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32603,
                   "message": "SDK MCP server `calc`: the SDK's answer has no `mcp_response`"}})
        );
    }

    /// `initialize` and the first `tools/list` page come from the manifest, and nothing
    /// reaches the SDK until a call does.
    #[tokio::test]
    async fn a_manifest_answers_the_handshake() {
        let fake = Arc::new(Fake {
            sent: Mutex::new(Vec::new()),
            answer: |m| Ok(json!({"mcp_response": {"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}}})),
            open: true,
        });
        let manifest = Manifest::from_value(&json!({
            "initializeResult": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                 "serverInfo": {"name": "calculator", "version": "1.0.0"}},
            "toolsListResult": {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}}));
        let channel = Arc::new(ManifestChannel::new(fake.clone(), BTreeMap::from([("calc".to_owned(), manifest)])));
        let connection = connect(Client::of("calc"), "calc", channel).await.unwrap();
        assert_eq!(connection.server_info().unwrap().name, "calculator");
        let tools = connection.peer().list_all_tools().await.unwrap();
        assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["add"]);
        assert!(fake.sent.lock().unwrap().is_empty(), "{:?}", fake.sent.lock().unwrap());
        let call = rmcp::model::CallToolRequestParams::new("add".to_owned());
        connection.peer().call_tool(call).await.unwrap();
        let sent = fake.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!((sent[0].0.as_str(), &sent[0].1["method"]), ("calc", &json!("tools/call")));
    }

    #[tokio::test]
    async fn a_closed_channel_refuses_the_message() {
        let (mut t, fake) = transport(|_| Ok(json!({})), false);
        let err = t.send(message(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))).await.unwrap_err();
        assert_eq!(err.to_string(), "the SDK's input is closed: nobody can answer");
        assert!(fake.sent.lock().unwrap().is_empty());
    }
}
