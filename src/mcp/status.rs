//! The servers' status as the Claude Agent SDK's `get_mcp_status()` reads it: the answer to
//! the `mcp_status` control request, in Claude Code's shape:
//!
//! ```json
//! {"mcpServers": [{"name": "files", "status": "connected",
//!                  "serverInfo": {"name": "files-server", "version": "1.0.0"},
//!                  "config": {"type": "stdio", "command": "node", "args": ["server.js"]},
//!                  "tools": [{"name": "read_file", "description": "…", "annotations": {"readOnly": true}}]}]}
//! ```
//!
//! `status` is `pending` while the servers start, then `connected` (with the `serverInfo`
//! the server gave in its `initialize` answer) or `failed` (with its `error`). `config` leaves out a stdio server's `env` and an HTTP server's `headers`: that is
//! where credentials go.

use serde_json::{Value, json};

use super::{ServerConfig, ServerStatus, Servers};
use crate::tools::Registry;

/// The `mcp_status` answer for `servers`: `statuses` says how each came up (`None`: they are
/// still starting), and `tools` holds the tools of the connected ones.
pub fn response(servers: &Servers, statuses: Option<&[ServerStatus]>, tools: &Registry) -> Value {
    let entries: Vec<Value> = servers
        .iter()
        .map(|(name, config)| {
            let status = statuses.and_then(|all| all.iter().find(|s| &s.name == name));
            let mut entry = json!({
                "name": name,
                "status": status.map_or("pending", |s| s.status),
                "config": config_summary(config),
            });
            if let Some(error) = status.and_then(|s| s.error.as_ref()) {
                entry["error"] = json!(error);
            }
            if let Some(info) = status.and_then(|s| s.server_info.as_ref()) {
                entry["serverInfo"] = json!(info);
            }
            if status.is_some_and(|s| s.status == "connected") {
                entry["tools"] = json!(server_tools(name, tools));
            }
            entry
        })
        .collect();
    json!({ "mcpServers": entries })
}

/// How a server is reached, without its environment or headers.
fn config_summary(config: &ServerConfig) -> Value {
    match config {
        ServerConfig::Stdio { command, args, .. } => json!({"type": "stdio", "command": command, "args": args}),
        ServerConfig::Http { url, .. } => json!({"type": "http", "url": url}),
        ServerConfig::Sse { url } => json!({"type": "sse", "url": url}),
        ServerConfig::Sdk { name } => json!({"type": "sdk", "name": name}),
    }
}

/// The tools of server `name` among `tools`, by their own names.
fn server_tools(name: &str, tools: &Registry) -> Vec<Value> {
    tools
        .tools()
        .iter()
        .filter_map(|tool| {
            let origin = tool.mcp_origin().filter(|o| o.server == name)?;
            let mut entry = json!({
                "name": origin.tool,
                "annotations": {"readOnly": tool.is_concurrency_safe(&Value::Null)},
            });
            if !tool.description().is_empty() {
                entry["description"] = json!(tool.description());
            }
            Some(entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn servers() -> Servers {
        let mut servers = Servers::new();
        servers.insert(
            "broken".into(),
            ServerConfig::Stdio {
                command: "/nonexistent".into(),
                args: vec!["-x".into()],
                env: BTreeMap::from([("TOKEN".into(), "secret-123".into())]),
                scope: crate::mcp::config::Scope::User,
            },
        );
        servers.insert(
            "web".into(),
            ServerConfig::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer secret-456".into())]),
                oauth: None,
            },
        );
        servers
    }

    #[test]
    fn servers_still_starting_are_pending_and_credentials_stay_out() {
        let answer = response(&servers(), None, &Registry::new());
        assert_eq!(
            answer,
            json!({"mcpServers": [
                {"name": "broken", "status": "pending",
                 "config": {"type": "stdio", "command": "/nonexistent", "args": ["-x"]}},
                {"name": "web", "status": "pending", "config": {"type": "http", "url": "http://127.0.0.1:9/mcp"}},
            ]})
        );
        assert!(!answer.to_string().contains("secret"));
    }

    #[test]
    fn a_failed_server_says_why() {
        let statuses = [ServerStatus::failed("broken", "cannot start `/nonexistent`: No such file or directory")];
        let answer = response(&servers(), Some(&statuses), &Registry::standard());
        assert_eq!(
            answer["mcpServers"][0],
            json!({"name": "broken", "status": "failed",
                   "error": "cannot start `/nonexistent`: No such file or directory",
                   "config": {"type": "stdio", "command": "/nonexistent", "args": ["-x"]}})
        );
        // A server missing from the statuses has not reported yet.
        assert_eq!(answer["mcpServers"][1]["status"], "pending");
    }

    #[test]
    fn a_connected_server_has_its_server_info_and_sdk_and_sse_servers_show_their_type() {
        let mut servers = Servers::new();
        servers.insert("calc".into(), ServerConfig::Sdk { name: "calc".into() });
        servers.insert("legacy".into(), ServerConfig::Sse { url: Some("https://h/sse".into()) });
        let info = crate::mcp::ServerInfo { name: "calc".into(), version: "1.0.0".into() };
        let statuses = [
            ServerStatus::connected("calc").with_server_info(Some(info)),
            ServerStatus::failed("legacy", crate::mcp::config::SSE_UNSUPPORTED),
        ];
        let answer = response(&servers, Some(&statuses), &Registry::new());
        assert_eq!(
            answer,
            json!({"mcpServers": [
                {"name": "calc", "status": "connected", "serverInfo": {"name": "calc", "version": "1.0.0"},
                 "config": {"type": "sdk", "name": "calc"}, "tools": []},
                {"name": "legacy", "status": "failed", "error": crate::mcp::config::SSE_UNSUPPORTED,
                 "config": {"type": "sse", "url": "https://h/sse"}},
            ]})
        );
    }
}
