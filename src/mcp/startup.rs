//! Servers started in the background as soon as a run knows them, so that their start
//! overlaps the rest of the run's preparation (the session loaded, the trace opened, the
//! SDK's `initialize` answered); the run waits for them only where it first needs the tool
//! list ([`Startup::finish`]).
//!
//! The start is a tokio task running [`super::connect`]: the same concurrency, timeouts and
//! warnings as connecting in place. Dropping a [`Startup`] that was not finished aborts the
//! task, and the servers' processes die with their connections.

use std::path::PathBuf;

use tokio::task::JoinHandle;

use super::{ServerStatus, Servers};
use crate::tools::Registry;

/// What the background start produced: the servers' tools and how each server came up.
struct Connected {
    tools: Registry,
    statuses: Vec<ServerStatus>,
}

/// Where the start of a run's servers is.
enum State {
    /// Not started: no servers, or no tokio runtime to start them on yet.
    Planned,
    /// Starting (or started) on a task of its own.
    Running(JoinHandle<Connected>),
}

/// The start of a run's MCP servers, begun by [`Startup::begin`] and awaited by
/// [`Startup::finish`].
pub struct Startup {
    servers: Servers,
    cwd: PathBuf,
    state: State,
}

impl Default for Startup {
    /// No servers.
    fn default() -> Self {
        Startup { servers: Servers::new(), cwd: PathBuf::new(), state: State::Planned }
    }
}

impl std::fmt::Debug for Startup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Planned => "planned",
            State::Running(_) => "running",
        };
        f.debug_struct("Startup").field("servers", &self.servers.keys()).field("state", &state).finish()
    }
}

impl Startup {
    /// Start `servers` now (stdio children run in `cwd`) on a task of their own, when called
    /// inside a tokio runtime; otherwise they start in [`Startup::finish`].
    pub fn begin(servers: Servers, cwd: PathBuf) -> Startup {
        let mut startup = Startup { servers, cwd, state: State::Planned };
        if !startup.servers.is_empty()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (servers, cwd) = (startup.servers.clone(), startup.cwd.clone());
            startup.state = State::Running(runtime.spawn(async move {
                let mut tools = Registry::new();
                let statuses = super::connect(&servers, &cwd, &mut tools).await;
                Connected { tools, statuses }
            }));
        }
        startup
    }

    /// The configured servers, by name.
    pub fn servers(&self) -> &Servers {
        &self.servers
    }

    /// Whether [`Startup::finish`] would not wait: every server is up or has failed (or
    /// there are none).
    pub fn is_finished(&self) -> bool {
        match &self.state {
            State::Planned => self.servers.is_empty(),
            State::Running(task) => task.is_finished(),
        }
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Wait until every server is up or has failed (each failure is a warning on stderr
    /// naming the server), add their tools to `tools`, and say how each came up.
    pub async fn finish(mut self, tools: &mut Registry) -> Vec<ServerStatus> {
        let connected = match std::mem::replace(&mut self.state, State::Planned) {
            State::Planned => {
                let mut started = Registry::new();
                let statuses = super::connect(&self.servers, &self.cwd, &mut started).await;
                Connected { tools: started, statuses }
            }
            State::Running(task) => match task.await {
                Ok(connected) => connected,
                Err(e) => {
                    let message = format!("the start failed: {e}");
                    let statuses = self
                        .servers
                        .keys()
                        .map(|name| {
                            crate::cli::interrupt::stderr_line(&format!(
                                "agentloop: warning: MCP server `{name}` failed: {message}"
                            ));
                            ServerStatus::failed(name, &message)
                        })
                        .collect();
                    Connected { tools: Registry::new(), statuses }
                }
            },
        };
        tools.extend(connected.tools);
        connected.statuses
    }
}

impl Drop for Startup {
    /// A start nobody waits for any more is abandoned: its servers are stopped.
    fn drop(&mut self) {
        if let State::Running(task) = &self.state {
            task.abort();
        }
    }
}
