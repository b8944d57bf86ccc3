//! Stdio servers: a child process in its own process group speaking MCP on its stdin and
//! stdout, without the model credentials in its environment.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;

use super::{Connection, ServerProcess, client_info};
use crate::process_group::ProcessGroup;

/// Start `command args` in `cwd` with `env` added to agentloop's environment as it was at
/// startup ([`crate::credentials::vars_os`], less
/// `ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN`) and speak the `initialize` handshake.
///
/// # Errors
/// The program cannot start, or does not answer `initialize`.
pub async fn connect(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Connection, String> {
    let mut child = tokio::process::Command::new(command)
        .args(args)
        // agentloop's environment as it was at startup: the secrets are no longer in the
        // process environment itself (crate::credentials).
        .env_clear()
        .envs(crate::credentials::vars_os())
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
    let service = client_info().serve((stdout, stdin)).await.map_err(|e| format!("initialize: {e}"))?;
    Ok(Connection::new(service, Some(ServerProcess { child, group })))
}
