//! Stdio servers: a child process in its own process group speaking MCP on its stdin and
//! stdout, with the environment its [`Scope`] allows, started through the session's sandbox
//! helper ([`crate::sandbox::helper`]) so that every process it starts ends with it.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;

use super::config::Scope;
use super::{Client, ConnectError, Connection, ServerProcess};
use crate::sandbox::{Launch, Sandbox};
use crate::tools::shell_env::{CREDENTIALS, ShellEnv};

/// Start `command args` in `cwd` with `env` added to the environment it inherits
/// (`inherited`) and speak the `initialize` handshake as `client`.
///
/// # Errors
/// The program cannot start, or does not answer `initialize`.
pub async fn connect(
    client: Client,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    scope: &Scope,
    cwd: &Path,
    sandbox: &Sandbox,
) -> Result<Connection, ConnectError> {
    let mut vars = inherited(scope, crate::credentials::vars_os());
    vars.retain(|(name, _)| !env.keys().any(|k| name == k.as_str()));
    vars.extend(env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
    // Servers usually need the network and files of their own: sandboxed only on request,
    // and otherwise unconfined. Either way a server starts through the sandbox helper when
    // the session has one, so whatever it starts, even a process that leaves its group
    // (`setsid`), ends with it.
    let confined = sandbox.settings().mcp_servers;
    let policy = sandbox.policy(&sandbox.effective(Launch::McpServer, command), Vec::new()).filter(|_| confined);
    let path = vars.iter().find(|(name, _)| name == "PATH").map(|(_, value)| value.as_os_str());
    // A relative path names a program in the server's working directory.
    let program = if command.contains('/') { cwd.join(command) } else { command.into() };
    if sandbox.has_helper() && crate::sandbox::find_program(&program.to_string_lossy(), path).is_none() {
        // Through the helper a missing program would only show as a closed connection.
        return Err(ConnectError::Start {
            command: command.to_owned(),
            error: std::io::Error::from_raw_os_error(libc::ENOENT),
        });
    }
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut child = sandbox
        .command(policy.as_ref(), &ShellEnv::exactly(vars), command, &args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| ConnectError::Start { command: command.to_owned(), error })?;
    let group = sandbox.group(child.id());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(ConnectError::NoPipes);
    };
    let transport = super::framing::LineTransport::new(stdout, stdin);
    let service = client.serve(transport).await.map_err(|e| ConnectError::Initialize(Box::new(e)))?;
    Ok(Connection::new(service, Some(ServerProcess { child, group })))
}

/// What a server of `scope` inherits of agentloop's environment `vars` (as it was at startup,
/// [`crate::credentials::vars_os`]): a user's server everything but the model credentials
/// (the configuration may still pass them in its `env`); a project's server what Bash gets
/// ([`ShellEnv`] with the settings' keep patterns).
pub fn inherited(scope: &Scope, vars: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    match scope {
        Scope::User => vars.into_iter().filter(|(name, _)| !CREDENTIALS.iter().any(|c| name == c)).collect(),
        Scope::Project { keep } => ShellEnv::from_vars(vars, keep).into_vars(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::shell_env::KeepPattern;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))).collect()
    }

    #[test]
    fn a_user_server_inherits_all_but_the_credentials_and_a_project_server_what_bash_gets() {
        let vars = pairs(&[
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("GITHUB_TOKEN", "gh"),
            ("NPM_TOKEN", "npm"),
            ("ANTHROPIC_AUTH_TOKEN", "bearer"),
        ]);
        assert_eq!(
            inherited(&Scope::User, vars.clone()),
            pairs(&[("PATH", "/bin"), ("GITHUB_TOKEN", "gh"), ("NPM_TOKEN", "npm")])
        );
        let project = Scope::Project { keep: vec![KeepPattern::new("NPM_*").unwrap()] };
        assert_eq!(inherited(&project, vars), pairs(&[("PATH", "/bin"), ("NPM_TOKEN", "npm")]));
    }
}
