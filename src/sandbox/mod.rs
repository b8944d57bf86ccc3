//! The kernel boundary around every command agentloop starts: Bash calls, background
//! shells, hook commands and, when the settings ask, stdio MCP servers.
//!
//! The permission analysis ([`crate::permissions`]) decides when to ask a person; the
//! sandbox decides what a command can do. Each command is started through a small helper,
//! `agentloop-sandbox --policy JSON -- bash -c …` installed beside agentloop (or agentloop
//! itself re-executed as `agentloop __sandbox-exec …`) ([`helper`]), which applies a [`Policy`] — Landlock for the file system, TCP and
//! signal/abstract-socket scoping (`landlock`), a seccomp filter (`seccomp`), read-only
//! bind mounts for protected paths (`mounts`), `no_new_privs` — and, as a child
//! subreaper, kills every process the command left behind when it ends.
//!
//! Which policy a command gets ([`Launch`]):
//! - proven read-only (auto-approved): [`Policy::read_only`] — reads the working
//!   directory, the readable roots and the system; writes nothing but `/dev/null`;
//! - allowed by a rule or approved by a person, and hooks: [`Policy::writing`] — writes the
//!   working directory (but `policy::PROTECTED`) and the session's temp directory;
//! - `bypassPermissions`, `sandbox.enabled: false`, an excluded command: unconfined, and
//!   said so in `system/init` and the trace header ([`Sandbox::status`]).

pub(crate) mod caps;
pub(crate) mod grants;
pub mod helper;
pub(crate) mod landlock;
pub(crate) mod mounts;
pub(crate) mod policy;
pub(crate) mod seccomp;
pub(crate) mod settings;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use policy::{Network, Policy, Reads};
pub use settings::{NetworkSettings, SandboxSettings};

/// Whether commands of this run are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// The kernel enforces the policies (its Landlock ABI).
    Enabled {
        /// The kernel's Landlock ABI version.
        abi: i32,
    },
    /// The user turned it off (`sandbox.enabled: false`) or the mode bypasses it.
    Disabled,
    /// The kernel has no Landlock: commands run unconfined, and read-only auto-approval is
    /// off (such calls are asked about).
    Unavailable,
    /// Commands are started directly, without the helper: the library's default
    /// ([`Sandbox::none`]), for embedders and unit tests.
    NotConfigured,
}

/// How one command is started.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Launch {
    /// Approved only because it was proven read-only; these hierarchies are readable besides
    /// the working directory (the run's spill directory, background output).
    ReadOnly {
        /// Readable roots of the permission policy.
        readable: Vec<PathBuf>,
    },
    /// Allowed by a rule, approved by a person, or a hook: writes the working directory.
    #[default]
    Writing,
    /// A hook command: [`Launch::Writing`] with the network the settings give hooks.
    Hook,
    /// A stdio MCP server, when the settings' `mcpServers` asks for it: [`Launch::Writing`]
    /// with the network open.
    McpServer,
    /// Unconfined (still reaped), for this reason.
    Unconfined(&'static str),
}

/// Why a run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `sandbox.failIfUnavailable` and the kernel has no Landlock.
    #[error(
        "the sandbox is unavailable (the kernel has no Landlock) and the settings' sandbox.failIfUnavailable is true"
    )]
    Unavailable,
    /// agentloop cannot find its own executable to start the helper.
    #[error("cannot find agentloop's own executable for the sandbox helper: {0}")]
    NoExecutable(std::io::Error),
    /// The session's temp directory could not be made.
    #[error("cannot create the sandbox's temp directory: {0}")]
    Temp(std::io::Error),
}

/// The sandbox of one session: its state, settings, helper and temp directory.
#[derive(Debug)]
pub struct Sandbox {
    state: State,
    settings: SandboxSettings,
    helper: Option<PathBuf>,
    cwd: PathBuf,
    /// Shared with the sandboxes [`Sandbox::in_directory`] makes of this one.
    temp: Option<Arc<tempfile::TempDir>>,
}

impl Sandbox {
    /// No sandbox and no helper: commands are spawned directly ([`State::NotConfigured`]).
    pub fn none() -> Arc<Sandbox> {
        static NONE: std::sync::OnceLock<Arc<Sandbox>> = std::sync::OnceLock::new();
        NONE.get_or_init(|| {
            Arc::new(Sandbox {
                state: State::NotConfigured,
                settings: SandboxSettings::default(),
                helper: None,
                cwd: PathBuf::from("."),
                temp: None,
            })
        })
        .clone()
    }

    /// The sandbox of a session in `cwd` with `settings`, started through `helper` (the
    /// agentloop executable; `None` finds it with `current_exe`). Probes the kernel once;
    /// when it has no Landlock, warns once on stderr.
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] when the settings require the sandbox and the kernel
    /// has none; [`SandboxError::NoExecutable`] or [`SandboxError::Temp`].
    pub fn for_session(
        settings: SandboxSettings,
        cwd: &Path,
        helper: Option<PathBuf>,
    ) -> Result<Sandbox, SandboxError> {
        let helper = match helper {
            Some(helper) => helper,
            None => Self::find_helper()?,
        };
        let state = if !settings.enabled {
            State::Disabled
        } else {
            match kernel_abi() {
                0 if settings.fail_if_unavailable => return Err(SandboxError::Unavailable),
                0 => {
                    warn_unavailable();
                    State::Unavailable
                }
                abi => State::Enabled { abi },
            }
        };
        let temp = tempfile::Builder::new().prefix("agentloop-sandbox-").tempdir().map_err(SandboxError::Temp)?;
        Ok(Sandbox {
            state,
            settings,
            helper: Some(helper),
            cwd: cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf()),
            temp: Some(Arc::new(temp)),
        })
    }

    /// The helper program: [`helper::PROGRAM`] beside the running executable when it is
    /// installed there (it starts faster), else the running executable itself, which runs
    /// the helper as [`helper::SUBCOMMAND`].
    fn find_helper() -> Result<PathBuf, SandboxError> {
        let exe = std::env::current_exe().map_err(SandboxError::NoExecutable)?;
        let beside = exe.with_file_name(helper::PROGRAM);
        Ok(if beside.is_file() { beside } else { exe })
    }

    /// The state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The settings in force.
    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// `enabled`, `disabled`, `unavailable` or `none`: the `sandbox` field of `system/init`
    /// and of the trace header.
    pub fn status(&self) -> &'static str {
        match self.state {
            State::Enabled { .. } => "enabled",
            State::Disabled => "disabled",
            State::Unavailable => "unavailable",
            State::NotConfigured => "none",
        }
    }

    /// Whether read-only auto-approval may be trusted: the sandbox would contain a command
    /// the analysis wrongly proved read-only, or the user chose to go without it.
    pub fn trusts_read_only_proof(&self) -> bool {
        !matches!(self.state, State::Unavailable)
    }

    /// The same sandbox for commands that work in `cwd` instead (a subagent's worktree): what
    /// they may write is `cwd` (but its `policy::PROTECTED` paths) and the same temp directory.
    pub fn in_directory(&self, cwd: &Path) -> Arc<Sandbox> {
        Arc::new(Sandbox {
            state: self.state.clone(),
            settings: self.settings.clone(),
            helper: self.helper.clone(),
            cwd: cwd.to_path_buf(),
            temp: self.temp.clone(),
        })
    }

    /// The session's temp directory (`TMPDIR` of writing commands), if any.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_deref().map(tempfile::TempDir::path)
    }

    /// How a command line with this launch is actually started, given the settings: an
    /// excluded command runs unconfined.
    pub fn effective(&self, launch: Launch, command: &str) -> Launch {
        if let Launch::Unconfined(_) = launch {
            return launch;
        }
        match self.state {
            State::Enabled { .. } => {}
            State::Disabled => return Launch::Unconfined("the sandbox is disabled"),
            State::Unavailable => return Launch::Unconfined("the sandbox is unavailable"),
            State::NotConfigured => return Launch::Unconfined("no sandbox is configured"),
        }
        if self.settings.excludes(command) {
            return Launch::Unconfined("an excluded command");
        }
        launch
    }

    /// The policy for `launch` with these `Read(…)`-denied paths; `None` when it runs
    /// unconfined.
    pub fn policy(&self, launch: &Launch, deny_read: Vec<PathBuf>) -> Option<Policy> {
        let temp = self.temp_dir().unwrap_or(Path::new("/nonexistent"));
        let network = self.settings.network.for_commands();
        match launch {
            Launch::ReadOnly { readable } => Some(Policy::read_only(&self.cwd, readable, deny_read)),
            Launch::Writing => Some(Policy::writing(&self.cwd, temp, deny_read, network)),
            Launch::Hook => {
                let network = if self.settings.hooks_network { Network::Open } else { network };
                Some(Policy::writing(&self.cwd, temp, deny_read, network))
            }
            Launch::McpServer => Some(Policy::writing(&self.cwd, temp, deny_read, Network::Open)),
            Launch::Unconfined(_) => None,
        }
    }

    /// A command that runs `program` with `args` under `policy` through the helper, or
    /// directly when no helper is configured, with exactly the environment `env`, in a
    /// process group of its own ([`Sandbox::group`] stops it). Writing commands get the
    /// session's temp directory as `TMPDIR`. A direct child is killed when dropped; the
    /// helper is not (a SIGKILL would stop it before it stops what the command started).
    pub fn command(
        &self,
        policy: Option<&Policy>,
        env: &crate::tools::shell_env::ShellEnv,
        program: &str,
        args: &[&OsStr],
    ) -> tokio::process::Command {
        let Some(helper) = &self.helper else {
            let mut direct = tokio::process::Command::new(program);
            env.apply(&mut direct);
            direct.args(args).process_group(0).kill_on_drop(true);
            return direct;
        };
        let mut wrapped = tokio::process::Command::new(helper);
        env.apply(&mut wrapped);
        wrapped.process_group(0).kill_on_drop(false);
        if helper.file_name().is_none_or(|name| name != helper::PROGRAM) {
            wrapped.arg(helper::SUBCOMMAND);
        }
        if let Some(policy) = policy {
            wrapped.arg("--policy").arg(serde_json::to_string(policy).expect("a policy serialises"));
            if let Some(temp) = self.temp_dir().filter(|t| policy.write.iter().any(|w| w == t)) {
                wrapped.env("TMPDIR", temp);
            }
        }
        wrapped.arg("--").arg(program).args(args);
        wrapped
    }

    /// Whether commands go through the helper (so stopping one means SIGTERM to the
    /// helper, which kills what the command started).
    pub fn has_helper(&self) -> bool {
        self.helper.is_some()
    }

    /// The process group of a command started with [`Sandbox::command`] whose leader is
    /// `pid`: through the helper it is stopped with SIGTERM, else with SIGKILL.
    pub(crate) fn group(&self, pid: Option<u32>) -> crate::process_group::ProcessGroup {
        crate::process_group::ProcessGroup::of_command(pid, self.has_helper())
    }
}

impl PartialEq for Sandbox {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
            && self.settings == other.settings
            && self.helper == other.helper
            && self.cwd == other.cwd
            && self.temp_dir() == other.temp_dir()
    }
}

impl Eq for Sandbox {}

/// Where `program` is: itself when it names a path, else the first file of that name in the
/// directories of `path` (a `PATH` value); `None` when there is none. Through the helper a
/// missing program is the helper's exit code 127, not a spawn error, so callers that report
/// one look first.
pub(crate) fn find_program(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program)).filter(|p| p.is_file());
    }
    std::env::split_paths(path?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// The environment variable that makes agentloop behave as on a kernel without Landlock
/// (`AGENTLOOP_SANDBOX=unavailable`), to see and test what a run does there. It can only
/// make agentloop stricter: nothing is auto-approved as read-only then.
pub(crate) const SIMULATE_ENV: &str = "AGENTLOOP_SANDBOX";

/// The kernel's Landlock ABI, or 0 when [`SIMULATE_ENV`] says there is none.
fn kernel_abi() -> i32 {
    if std::env::var_os(SIMULATE_ENV).is_some_and(|v| v == "unavailable") {
        return 0;
    }
    landlock::kernel_abi()
}

fn warn_unavailable() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "agentloop: warning: the sandbox is unavailable (this kernel has no Landlock): commands run unconfined, \
             and no command is auto-approved as read-only"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_by_path_or_on_path() {
        let path = Some(OsStr::new("/nonexistent:/bin:/usr/bin"));
        assert!(find_program("sh", path).is_some_and(|p| p.ends_with("sh")));
        assert_eq!(find_program("no-such-program-here", path), None);
        assert_eq!(find_program("/nonexistent/server", path), None);
        assert_eq!(find_program("sh", None), None);
    }
}
