//! MCP client: tools from Model Context Protocol servers, offered to the model beside the
//! built-in ones, on the official Rust SDK ([`rmcp`]).
//!
//! - [`config`]: the servers, configured in Claude Code's format (`--mcp-config`).
//! - [`stdio`], [`http`] and [`sdk`]: the transports, each giving a [`Connection`] (an SDK
//!   server lives in the Claude Agent SDK's process and is reached only in the SDK mode).
//! - [`tool`]: each server tool as a [`Tool`] named `mcp__<server>__<tool>`, [`names`]
//!   keeping those names valid for the Messages API and distinct.
//! - [`startup`]: the servers started in the background while the run prepares.
//! - [`status`]: the servers' status for the SDK's `mcp_status` control request.
//! - [`client`]: agentloop's side of a connection (the handshake, the server's requests),
//!   with [`elicitation`] answering a server's questions to the user and [`browser`] opening
//!   the URLs it asks the user to visit.
//!
//! [`connect`] starts every configured server at once; a run calls it through
//! [`startup::Startup`], as soon as it knows its servers. A stdio server is a
//! child process in its own process group ([`crate::process_group`]), started through the
//! sandbox helper, which stops whatever the server started (even a `setsid`'d process) when
//! the server stops: it is stopped when the run's tools are dropped (and waited for in
//! [`finish`]), and by [`crate::process_group::kill_all`] on a second signal. The
//! client speaks the `initialize` handshake offering 2025-11-25 ([`client::client_info`]) and takes
//! the protocol version the server answers with. A server that fails to start or to list its tools is reported (a warning on stderr,
//! `failed` in stream-json's `system/init`), never a failed run. A Streamable HTTP server
//! ([`http`]) is reached over the same reqwest client stack as the model, with the configured
//! headers on every request; its session is closed (HTTP DELETE) when the run ends.

pub mod browser;
pub mod client;
pub mod config;
pub mod elicitation;
pub mod framing;
pub mod http;
pub mod names;
pub mod oauth;
pub mod sdk;
pub mod startup;
pub mod status;
pub mod stdio;
pub mod tool;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{RoleClient, RunningService};
use serde::Serialize;

use crate::process_group::ProcessGroup;
use crate::sandbox::Sandbox;
use crate::tools::{Registry, Tool};
pub use client::Client;
pub use config::{ServerConfig, Servers};

/// How one configured server came up, as stream-json's `system/init` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    /// The server's name in the configuration.
    pub name: String,
    /// `connected` or `failed`.
    pub status: &'static str,
    /// Why it failed (not in `system/init`, which Claude Code keeps to name and status).
    #[serde(skip)]
    pub error: Option<String>,
    /// Who the server says it is in its `initialize` answer (not in `system/init` either).
    #[serde(skip)]
    pub server_info: Option<ServerInfo>,
}

/// A connected server's `serverInfo`: its name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// The server's own name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl ServerStatus {
    /// The server `name` is connected.
    pub fn connected(name: &str) -> Self {
        ServerStatus { name: name.to_owned(), status: "connected", error: None, server_info: None }
    }

    /// This status with the server's `serverInfo`.
    #[must_use]
    pub fn with_server_info(mut self, info: Option<ServerInfo>) -> Self {
        self.server_info = info;
        self
    }

    /// The server `name` failed to start or to list its tools, for `message`.
    pub fn failed(name: &str, message: &str) -> Self {
        ServerStatus { name: name.to_owned(), status: "failed", error: Some(message.to_owned()), server_info: None }
    }

    /// [`ServerStatus::failed`], said as a warning on stderr naming the server: how every
    /// failure of a server's start is reported.
    pub fn warn_failed(name: &str, message: &str) -> Self {
        crate::stderr::line(&format!("agentloop: warning: MCP server `{name}` failed: {message}"));
        ServerStatus::failed(name, message)
    }

    /// The remote server `name` needs a sign-in the run cannot do (`needs-auth`, as Claude
    /// Code reports it), said as a warning on stderr with how to sign in.
    pub fn warn_needs_auth(name: &str, message: &str) -> Self {
        crate::stderr::line(&format!("agentloop: warning: MCP server `{name}` {message}"));
        ServerStatus { name: name.to_owned(), status: "needs-auth", error: Some(message.to_owned()), server_info: None }
    }
}

/// Why a server could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// It cannot be started or reached, or does not answer.
    #[error("{0}")]
    Failed(String),
    /// It needs a sign-in in the browser, which this run cannot do.
    #[error("{0}")]
    NeedsSignIn(String),
}

impl From<String> for OpenError {
    fn from(message: String) -> Self {
        OpenError::Failed(message)
    }
}

/// Why a server could not be started, or did not answer the handshake.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// A stdio server's program did not start.
    #[error("cannot start `{command}`: {error}")]
    Start {
        /// The command as configured.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// A stdio server started without the pipes it speaks on.
    #[error("no pipes to the server")]
    NoPipes,
    /// The `initialize` handshake failed.
    #[error("initialize: {0}")]
    Initialize(Box<rmcp::service::ClientInitializeError>),
}

impl From<ConnectError> for OpenError {
    fn from(error: ConnectError) -> Self {
        OpenError::Failed(error.to_string())
    }
}

/// The client service of one connection.
pub type Service = RunningService<RoleClient, Client>;

/// A stdio server's process: killed (its whole group) when the connection is dropped.
pub struct ServerProcess {
    /// The child, killed on drop.
    pub child: tokio::process::Child,
    /// Its process group.
    pub group: ProcessGroup,
}

/// A live connection to one server: the client's service and, for a stdio server, its
/// process (killed when the last tool of the server is dropped). Dropping an HTTP connection
/// closes its session in the background; [`finish`] waits for that.
pub struct Connection {
    peer: rmcp::Peer<RoleClient>,
    service: Option<Service>,
    process: Option<ServerProcess>,
}

impl Connection {
    /// A connection over `service`, with the server's `process` when it has one.
    pub fn new(service: Service, process: Option<ServerProcess>) -> Self {
        Connection { peer: service.peer().clone(), service: Some(service), process }
    }

    /// The peer requests go to.
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        &self.peer
    }

    /// The server's name and version from its `initialize` answer.
    pub fn server_info(&self) -> Option<ServerInfo> {
        let answer = self.peer.peer_info()?;
        let info = answer.server_info.as_ref()?;
        Some(ServerInfo { name: info.name.clone(), version: info.version.clone() })
    }

    /// The protocol version the server answered `initialize` with.
    pub fn protocol_version(&self) -> Option<String> {
        self.peer.peer_info().map(|info| info.protocol_version.to_string())
    }

    /// Close the session and wait for it (up to [`CLOSE_TIMEOUT`]): an HTTP transport sends
    /// its DELETE; a stdio server's process is killed afterwards.
    pub async fn close(mut self) {
        if let Some(mut service) = self.service.take() {
            let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
        }
    }
}

/// How long closing a session may take before it is given up.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Sessions being closed in the background (dropped HTTP connections), for [`finish`].
static CLOSING: Mutex<Vec<tokio::task::JoinHandle<()>>> = Mutex::new(Vec::new());

impl Drop for Connection {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let closing = match (self.process.take(), self.service.take()) {
            // A stdio server is stopped with its process group (through the helper, with
            // everything it started); [`finish`] waits until it has gone.
            (Some(ServerProcess { mut child, group }), _) => {
                drop(group);
                runtime.spawn(async move {
                    let _ = child.wait().await;
                })
            }
            (None, Some(mut service)) => runtime.spawn(async move {
                let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
            }),
            (None, None) => return,
        };
        CLOSING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(closing);
    }
}

/// Wait (at most [`CLOSE_TIMEOUT`]) for the sessions of dropped connections to close, so an
/// HTTP server sees its session ended before the process exits, and for the stopped stdio
/// servers to be gone.
pub async fn finish() {
    let closing = std::mem::take(&mut *CLOSING.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    if closing.is_empty() {
        return;
    }
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, futures::future::join_all(closing)).await;
}

/// A failed request in words: `authorization: WHY` when signing in to the server failed,
/// else rmcp's message.
pub fn describe(error: &rmcp::ServiceError) -> String {
    match http::client::auth_failure(error) {
        Some(failure) => format!("authorization: {failure}"),
        None => error.to_string(),
    }
}

/// Milliseconds from the environment variable `name`, or `default`.
fn env_duration(name: &str, default: Duration) -> Duration {
    std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()).map_or(default, Duration::from_millis)
}

/// How long a server has to start and list its tools: `MCP_TIMEOUT` ms, default 30 s.
fn startup_timeout() -> Duration {
    env_duration("MCP_TIMEOUT", Duration::from_secs(30))
}

/// How long one tool call may take: `MCP_TOOL_TIMEOUT` ms, default 60 s.
pub fn tool_timeout() -> Duration {
    env_duration("MCP_TOOL_TIMEOUT", Duration::from_secs(60))
}

/// Start every server in `servers` at once (stdio children run in `cwd`, SDK servers are
/// reached through `sdk` when there is one), register their tools in `tools`, and say how
/// each one came up. A failure is a warning on stderr naming the server.
pub async fn connect(
    servers: &Servers,
    cwd: &Path,
    sandbox: &Sandbox,
    sdk: Option<&Arc<dyn sdk::Channel>>,
    tools: &mut Registry,
) -> Vec<ServerStatus> {
    let timeout = startup_timeout();
    let keys: Vec<&str> = servers.keys().map(String::as_str).collect();
    let parts = names::server_parts(&keys);
    for warning in parts.iter().filter_map(|part| part.warning.as_deref()) {
        crate::stderr::line(warning);
    }
    let attempts = servers.iter().zip(parts).map(|((name, config), part)| async move {
        let connecting = connect_one(name, &part.name, config, cwd, sandbox, sdk);
        let result = match tokio::time::timeout(timeout, connecting).await {
            Ok(result) => result,
            Err(_) => Err(OpenError::Failed(format!("no answer within {} ms (MCP_TIMEOUT)", timeout.as_millis()))),
        };
        (name, result)
    });
    let mut statuses = Vec::new();
    for (name, result) in futures::future::join_all(attempts).await {
        let status = match result {
            Ok((server_tools, info)) => {
                for t in server_tools {
                    tools.register(t);
                }
                ServerStatus::connected(name).with_server_info(info)
            }
            Err(OpenError::Failed(message)) => ServerStatus::warn_failed(name, &message),
            Err(OpenError::NeedsSignIn(message)) => ServerStatus::warn_needs_auth(name, &message),
        };
        statuses.push(status);
    }
    statuses
}

/// Connect to the server `config` describes, calling it `name` (a stdio child runs in
/// `cwd`), as `agentloop mcp` does: a remote server that asks for a sign-in gets one in the
/// browser. An SDK server is not reachable from here (`sdk::SDK_ONLY`; `connect` reaches
/// it in the SDK mode).
///
/// # Errors
/// Why the server could not be started or reached, or did not answer `initialize`.
pub async fn open(name: &str, config: &ServerConfig, cwd: &Path) -> Result<Connection, OpenError> {
    open_with(name, config, cwd, &Sandbox::none(), None, oauth::SignIn::Browser).await
}

/// [`open`] of the server configured as `key`, a stdio child started through `sandbox`,
/// reaching an SDK server through `sdk`: by its key, which is how the SDKs address their
/// in-process servers (the Python SDK's `mcp_servers={"calculator": create_sdk_mcp_server(
/// name="calc")}` answers `mcp_message`s for `calculator`), not by its `name`. A remote
/// server's sign-in opens the browser only when `sign_in` allows it.
async fn open_with(
    key: &str,
    config: &ServerConfig,
    cwd: &Path,
    sandbox: &Sandbox,
    sdk: Option<&Arc<dyn sdk::Channel>>,
    sign_in: oauth::SignIn,
) -> Result<Connection, OpenError> {
    let client = Client::of(key);
    match config {
        ServerConfig::Stdio { command, args, env, scope } => {
            Ok(stdio::connect(client, command, args, env, scope, cwd, sandbox).await?)
        }
        ServerConfig::Http { url, headers, oauth } => {
            http::connect(client, url, headers, oauth.as_ref(), sign_in).await
        }
        ServerConfig::Sse { .. } => Err(OpenError::Failed(config::SSE_UNSUPPORTED.to_owned())),
        ServerConfig::Sdk { .. } => match sdk {
            Some(channel) => Ok(sdk::connect(client, key, channel.clone()).await?),
            None => Err(OpenError::Failed(sdk::SDK_ONLY.to_owned())),
        },
    }
}

/// A server's tools and its `serverInfo`.
type Connected = (Vec<Arc<dyn Tool>>, Option<ServerInfo>);

/// Connect to the server `name` and name its tools `mcp__<part>__…` ([`names::tool_names`],
/// each change a warning on stderr).
async fn connect_one(
    name: &str,
    part: &str,
    config: &ServerConfig,
    cwd: &Path,
    sandbox: &Sandbox,
    sdk: Option<&Arc<dyn sdk::Channel>>,
) -> Result<Connected, OpenError> {
    // A run reuses and refreshes what `agentloop mcp` signed in with; it opens no browser.
    let connection = open_with(name, config, cwd, sandbox, sdk, oauth::SignIn::Never).await?;
    let info = connection.server_info();
    let listed = connection.peer().list_all_tools().await.map_err(|e| format!("tools/list: {}", describe(&e)))?;
    let connection = Arc::new(connection);
    let timeout = tool_timeout();
    let originals: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    let named = names::tool_names(name, part, &originals);
    let tools = listed
        .iter()
        .zip(named)
        .map(|(t, named)| {
            if let Some(warning) = &named.warning {
                crate::stderr::line(warning);
            }
            Arc::new(tool::McpTool::new(name, t, connection.clone(), timeout).with_name(named.name)) as Arc<dyn Tool>
        })
        .collect();
    Ok((tools, info))
}
