//! Servers started in the background as soon as a run knows them, so that their start
//! overlaps the rest of the run's preparation (the session loaded, the trace opened, the
//! SDK's `initialize` answered); the run waits for them only where it first needs the tool
//! list ([`Startup::finish`]).
//!
//! The start is a tokio task running [`super::connect`]: the same concurrency, timeouts and
//! warnings as connecting in place. SDK servers (`"type": "sdk"`) start apart, on a task of
//! their own, once the SDK mode gives the way to them ([`Startup::reach_sdk`]); without one
//! (`-p`, the interactive mode) they are reported as failed ([`super::sdk::SDK_ONLY`]).
//! Dropping a [`Startup`] that was not finished aborts the tasks, and the servers' processes
//! die with their connections.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::sdk::Channel;
use super::{ServerConfig, ServerStatus, Servers};
use crate::sandbox::Sandbox;
use crate::tools::Registry;

/// What a start produced: the servers' tools and how each server came up.
struct Connected {
    tools: Registry,
    statuses: Vec<ServerStatus>,
}

/// Where the start of some of a run's servers is.
enum State {
    /// Not started: no servers, no tokio runtime to start them on yet, or (SDK servers) no
    /// way to them yet.
    Planned,
    /// Starting (or started) on a task of its own.
    Running(JoinHandle<Connected>),
}

/// Some of a run's servers and their start.
struct Part {
    servers: Servers,
    state: State,
    sdk: Option<Arc<dyn Channel>>,
}

/// Connect to `servers` ([`super::connect`]), their tools in a registry of their own.
async fn start(servers: &Servers, cwd: &Path, sandbox: &Sandbox, sdk: Option<&Arc<dyn Channel>>) -> Connected {
    let mut tools = Registry::new();
    let statuses = super::connect(servers, cwd, sandbox, sdk, &mut tools).await;
    Connected { tools, statuses }
}

impl Part {
    fn planned(servers: Servers) -> Part {
        Part { servers, state: State::Planned, sdk: None }
    }

    /// Start the servers on a task of their own, when inside a tokio runtime.
    fn begin(&mut self, cwd: &Path, sandbox: &Arc<Sandbox>) {
        if self.servers.is_empty() || !matches!(self.state, State::Planned) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (servers, cwd, sdk, sandbox) = (self.servers.clone(), cwd.to_path_buf(), self.sdk.clone(), sandbox.clone());
        self.state = State::Running(runtime.spawn(async move { start(&servers, &cwd, &sandbox, sdk.as_ref()).await }));
    }

    fn is_finished(&self) -> bool {
        match &self.state {
            State::Planned => self.servers.is_empty(),
            State::Running(task) => task.is_finished(),
        }
    }

    async fn finish(&mut self, cwd: &Path, sandbox: &Sandbox) -> Connected {
        match std::mem::replace(&mut self.state, State::Planned) {
            State::Planned => start(&self.servers, cwd, sandbox, self.sdk.as_ref()).await,
            State::Running(task) => match task.await {
                Ok(connected) => connected,
                Err(e) => {
                    let message = format!("the start failed: {e}");
                    let statuses = self.servers.keys().map(|name| ServerStatus::warn_failed(name, &message)).collect();
                    Connected { tools: Registry::new(), statuses }
                }
            },
        }
    }
}

impl Drop for Part {
    /// A start nobody waits for any more is abandoned: its servers are stopped.
    fn drop(&mut self) {
        if let State::Running(task) = &self.state {
            task.abort();
        }
    }
}

/// The start of a run's MCP servers, begun by [`Startup::begin`] and awaited by
/// [`Startup::finish`].
pub struct Startup {
    servers: Servers,
    cwd: PathBuf,
    /// How stdio servers are started (sandboxed when the settings' `mcpServers` says so).
    sandbox: Arc<Sandbox>,
    /// Every server but the SDK servers.
    others: Part,
    /// Servers other than SDK servers added after the start began ([`Startup::add`]).
    late: Part,
    /// The SDK servers.
    sdk: Part,
}

impl Default for Startup {
    /// No servers.
    fn default() -> Self {
        Startup {
            servers: Servers::new(),
            cwd: PathBuf::new(),
            sandbox: Sandbox::none(),
            others: Part::planned(Servers::new()),
            late: Part::planned(Servers::new()),
            sdk: Part::planned(Servers::new()),
        }
    }
}

impl std::fmt::Debug for Startup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = |part: &Part| match part.state {
            State::Planned => "planned",
            State::Running(_) => "running",
        };
        f.debug_struct("Startup")
            .field("servers", &self.servers.keys())
            .field("others", &state(&self.others))
            .field("late", &state(&self.late))
            .field("sdk", &state(&self.sdk))
            .finish()
    }
}

impl Startup {
    /// Start `servers` now (stdio children run in `cwd`) on a task of their own, when called
    /// inside a tokio runtime; otherwise they start in [`Startup::finish`]. SDK servers wait
    /// for [`Startup::reach_sdk`].
    pub fn begin(servers: Servers, cwd: PathBuf, sandbox: Arc<Sandbox>) -> Startup {
        let (sdk, others): (Servers, Servers) =
            servers.clone().into_iter().partition(|(_, config)| matches!(config, ServerConfig::Sdk { .. }));
        let mut startup = Startup {
            servers,
            cwd,
            sandbox,
            others: Part::planned(others),
            late: Part::planned(Servers::new()),
            sdk: Part::planned(sdk),
        };
        startup.others.begin(&startup.cwd, &startup.sandbox);
        startup
    }

    /// Start the SDK servers now, reaching them through `channel` (the SDK mode's control
    /// requests). The caller must go on reading the SDK's answers meanwhile.
    pub fn reach_sdk(&mut self, channel: Arc<dyn Channel>) {
        if matches!(self.sdk.state, State::Planned) {
            self.sdk.sdk = Some(channel);
            self.sdk.begin(&self.cwd, &self.sandbox);
        }
    }

    /// Add servers declared after the start began (the TypeScript SDK declares its servers
    /// in `initialize`): SDK servers join the others before [`Startup::reach_sdk`] starts
    /// them, the rest start now. Returns false, adding nothing, when servers were added
    /// before or the SDK servers have started already, or a server of that name is already
    /// configured.
    pub fn add(&mut self, servers: Servers) -> bool {
        let sdk_started = !matches!(self.sdk.state, State::Planned) || self.sdk.sdk.is_some();
        let has_sdk = servers.values().any(|c| matches!(c, ServerConfig::Sdk { .. }));
        let late_taken = !self.late.servers.is_empty();
        let has_others = servers.values().any(|c| !matches!(c, ServerConfig::Sdk { .. }));
        let clash = servers.keys().any(|name| self.servers.contains_key(name));
        if (has_sdk && sdk_started) || (has_others && late_taken) || clash {
            return false;
        }
        for (name, config) in servers {
            self.servers.insert(name.clone(), config.clone());
            match config {
                ServerConfig::Sdk { .. } => self.sdk.servers.insert(name, config),
                _ => self.late.servers.insert(name, config),
            };
        }
        self.late.begin(&self.cwd, &self.sandbox);
        true
    }

    /// The configured servers, by name.
    pub fn servers(&self) -> &Servers {
        &self.servers
    }

    /// Whether [`Startup::finish`] would not wait: every server is up or has failed (or
    /// there are none).
    pub fn is_finished(&self) -> bool {
        // SDK servers nobody can reach fail at once in `finish`.
        let unreachable = self.sdk.sdk.is_none() && matches!(self.sdk.state, State::Planned);
        self.others.is_finished() && self.late.is_finished() && (unreachable || self.sdk.is_finished())
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Wait until every server is up or has failed (each failure is a warning on stderr
    /// naming the server), add their tools to `tools`, and say how each came up, in name
    /// order.
    pub async fn finish(mut self, tools: &mut Registry) -> Vec<ServerStatus> {
        let others = self.others.finish(&self.cwd, &self.sandbox).await;
        let late = self.late.finish(&self.cwd, &self.sandbox).await;
        let sdk = self.sdk.finish(&self.cwd, &self.sandbox).await;
        tools.extend(others.tools);
        tools.extend(late.tools);
        tools.extend(sdk.tools);
        let mut statuses = others.statuses;
        statuses.extend(late.statuses);
        statuses.extend(sdk.statuses);
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a way to the SDK, an SDK server does not hold the start up: it fails at once,
    /// saying why, beside the other servers.
    #[tokio::test]
    async fn sdk_servers_without_the_sdk_fail_at_once() {
        let mut servers = Servers::new();
        servers.insert("calc".into(), ServerConfig::Sdk { name: "calc".into() });
        servers.insert("legacy".into(), ServerConfig::Sse { url: None });
        let startup = Startup::begin(servers, PathBuf::from("."), Sandbox::none());
        let mut tools = Registry::new();
        let statuses = startup.finish(&mut tools).await;
        assert_eq!(
            statuses,
            [
                ServerStatus::failed("calc", crate::mcp::sdk::SDK_ONLY),
                ServerStatus::failed("legacy", crate::mcp::config::SSE_UNSUPPORTED),
            ]
        );
        assert!(tools.tools().is_empty());
        let only_sdk = Servers::from([("calc".to_owned(), ServerConfig::Sdk { name: "calc".into() })]);
        assert!(Startup::begin(only_sdk, PathBuf::from("."), Sandbox::none()).is_finished());
    }

    /// Servers `initialize` declares join the configured ones: SDK servers until the SDK
    /// servers start, the others once.
    #[tokio::test]
    async fn servers_can_be_added_until_they_start() {
        let configured = Servers::from([("legacy".to_owned(), ServerConfig::Sse { url: None })]);
        let mut startup = Startup::begin(configured, PathBuf::from("."), Sandbox::none());
        let calc = Servers::from([("calc".to_owned(), ServerConfig::Sdk { name: "calculator".into() })]);
        let old = Servers::from([("old".to_owned(), ServerConfig::Sse { url: None })]);
        assert!(startup.add(calc.clone()));
        assert!(startup.add(old.clone()));
        assert!(!startup.add(Servers::from([("older".to_owned(), ServerConfig::Sse { url: None })])));
        assert!(!startup.add(Servers::from([("legacy".to_owned(), ServerConfig::Sse { url: None })])));
        assert_eq!(startup.servers().keys().collect::<Vec<_>>(), ["calc", "legacy", "old"]);
        let statuses = startup.finish(&mut Registry::new()).await;
        assert_eq!(
            statuses,
            [
                ServerStatus::failed("calc", crate::mcp::sdk::SDK_ONLY),
                ServerStatus::failed("legacy", crate::mcp::config::SSE_UNSUPPORTED),
                ServerStatus::failed("old", crate::mcp::config::SSE_UNSUPPORTED),
            ]
        );

        use crate::peer::PeerError;
        struct Nobody;
        impl Channel for Nobody {
            fn send(
                &self,
                _server: &str,
                _message: serde_json::Value,
            ) -> Result<futures::future::BoxFuture<'static, Result<serde_json::Value, PeerError>>, PeerError>
            {
                Err(PeerError::Closed)
            }
        }
        let mut started = Startup::begin(Servers::new(), PathBuf::from("."), Sandbox::none());
        started.reach_sdk(Arc::new(Nobody));
        assert!(!started.add(calc));
        assert!(started.servers().is_empty());
    }
}
