//! MCP client: tools from Model Context Protocol servers, offered to the model beside the
//! built-in ones, on the official Rust SDK ([`rmcp`]).
//!
//! - [`config`]: the servers, configured in Claude Code's format (`--mcp-config`).
//! - [`tool`]: each server tool as a [`Tool`] named `mcp__<server>__<tool>`.
//! - [`startup`]: the servers started in the background while the run prepares.
//! - [`status`]: the servers' status for the SDK's `mcp_status` control request.
//!
//! [`connect`] starts every configured server at once; a run calls it through
//! [`startup::Startup`], as soon as it knows its servers. A stdio server is a
//! child process in its own process group ([`crate::process_group`]): it is killed when the
//! run's tools are dropped, and by [`crate::process_group::kill_all`] on a second signal. The
//! client speaks the `initialize` handshake and takes the protocol version the server answers
//! with. A server that fails to start or to list its tools is reported (a warning on stderr,
//! `failed` in stream-json's `system/init`), never a failed run. Streamable HTTP servers are
//! parsed but not connected to yet: they are reported as failed.

pub mod config;
pub mod startup;
pub mod status;
pub mod tool;

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use serde::Serialize;

use crate::process_group::ProcessGroup;
use crate::tools::{Registry, Tool};
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
}

impl ServerStatus {
    /// The server `name` is connected.
    pub fn connected(name: &str) -> Self {
        ServerStatus { name: name.to_owned(), status: "connected", error: None }
    }

    /// The server `name` failed to start or to list its tools, for `message`.
    pub fn failed(name: &str, message: &str) -> Self {
        ServerStatus { name: name.to_owned(), status: "failed", error: Some(message.to_owned()) }
    }
}

/// A live connection: the client's service and, for stdio, the server's process group
/// (killed when the last tool of the server is dropped).
pub struct Connection {
    service: RunningService<RoleClient, ()>,
    _child: Option<tokio::process::Child>,
    _group: ProcessGroup,
}

impl Connection {
    /// A connection over `service` to the stdio server `child` (spawned in a process group of
    /// its own), whose group is killed when the connection is dropped.
    pub fn stdio(service: RunningService<RoleClient, ()>, child: tokio::process::Child) -> Connection {
        let group = ProcessGroup::of(child.id());
        Connection { service, _child: Some(child), _group: group }
    }

    /// The peer requests go to.
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
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

/// Start every server in `servers` at once (stdio children run in `cwd`), register their
/// tools in `tools`, and say how each one came up. A failure is a warning on stderr naming
/// the server.
pub async fn connect(servers: &Servers, cwd: &Path, tools: &mut Registry) -> Vec<ServerStatus> {
    let timeout = startup_timeout();
    let attempts = servers.iter().map(|(name, config)| async move {
        let result = match tokio::time::timeout(timeout, connect_one(name, config, cwd)).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} ms (MCP_TIMEOUT)", timeout.as_millis())),
        };
        (name, result)
    });
    let mut statuses = Vec::new();
    for (name, result) in futures::future::join_all(attempts).await {
        let status = match result {
            Ok(server_tools) => {
                for t in server_tools {
                    tools.register(t);
                }
                ServerStatus::connected(name)
            }
            Err(message) => {
                crate::cli::interrupt::stderr_line(&format!(
                    "agentloop: warning: MCP server `{name}` failed: {message}"
                ));
                ServerStatus::failed(name, &message)
            }
        };
        statuses.push(status);
    }
    statuses
}

async fn connect_one(name: &str, config: &ServerConfig, cwd: &Path) -> Result<Vec<Arc<dyn Tool>>, String> {
    let (command, args, env) = match config {
        ServerConfig::Stdio { command, args, env } => (command, args, env),
        ServerConfig::Http { .. } => return Err("http servers are not supported yet".into()),
    };
    let mut child = tokio::process::Command::new(command)
        .args(args)
        // The model credentials stay with agentloop unless the configuration passes them.
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let group = ProcessGroup::of(child.id());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("no pipes to the server".into());
    };
    let service = ().serve((stdout, stdin)).await.map_err(|e| format!("initialize: {e}"))?;
    let listed = service.peer().list_all_tools().await.map_err(|e| format!("tools/list: {e}"))?;
    let connection = Arc::new(Connection { service, _child: Some(child), _group: group });
    let timeout = tool_timeout();
    Ok(listed
        .into_iter()
        .map(|t| Arc::new(tool::McpTool::new(name, &t, connection.clone(), timeout)) as Arc<dyn Tool>)
        .collect())
}
