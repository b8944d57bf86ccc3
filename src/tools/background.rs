//! The session's background shells: `Bash` calls with `run_in_background: true`.
//!
//! [`BackgroundShells`] is the registry of one session (it lives in
//! [`crate::engine::session::Session`] and every [`super::ToolContext`] of the session's
//! prompts shares it). [`BackgroundShells::start`] spawns a shell built by
//! [`super::bash::shell_command`] with its stdout and stderr both on one file of the registry's
//! private directory (interleaved as written), and a task of its own waits for it: the call
//! that started it has returned long before.
//!
//! Each shell runs in a process group of its own, killed whole when [`BackgroundShell::stop`]
//! stops it (`TaskStop`), when the shell exits (what it left running in its group goes with
//! it), and when the registry is dropped at the end of the session. While the shell runs its
//! group is listed by [`crate::process_group`], so a hard exit
//! ([`crate::process_group::kill_all`]) kills it too. The directory (0700) and the output
//! files (0600) are removed with the registry.

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::bash::capture::{Capture, incomplete_suffix};
use super::spill::{SpillDir, private_dir};
use crate::process_group::ProcessGroup;

/// The `task_type` of a background shell, as Claude Code names it.
pub const TASK_TYPE: &str = "local_bash";

/// Where a background shell is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The shell has not ended.
    Running,
    /// The shell exited with this code (whatever the code: the command ran to its end).
    Completed {
        /// The shell's exit code.
        exit_code: i32,
    },
    /// Stopped by `TaskStop` or by the end of the session.
    Killed,
    /// It died of a signal nobody here sent, or could not be waited for.
    Failed {
        /// What happened, e.g. `killed by signal 9`.
        reason: String,
    },
}

impl Status {
    /// Its name in tool results: `running`, `completed`, `killed` or `failed`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed { .. } => "completed",
            Status::Killed => "killed",
            Status::Failed { .. } => "failed",
        }
    }

    /// Whether the shell has not ended.
    pub fn is_running(&self) -> bool {
        match self {
            Status::Running => true,
            Status::Completed { .. } | Status::Killed | Status::Failed { .. } => false,
        }
    }
}

/// How [`BackgroundShell::wait`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// The shell ended (or had ended) with this status.
    Ended(Status),
    /// The time allowed passed first.
    TimedOut,
    /// The call was cancelled first.
    Cancelled,
}

/// The background shells of one session, in the order they started.
pub struct BackgroundShells {
    dir: SpillDir,
    shells: Mutex<Vec<Arc<BackgroundShell>>>,
}

impl Default for BackgroundShells {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for BackgroundShells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundShells").field("dir", &self.dir.path()).field("ids", &self.ids()).finish()
    }
}

impl BackgroundShells {
    /// A registry whose output files go to a directory of its own,
    /// `agentloop-background-<random>/` in the (canonical) temp directory, created at the first
    /// [`BackgroundShells::start`].
    pub fn new() -> Self {
        let temp = std::env::temp_dir();
        let temp = temp.canonicalize().unwrap_or(temp);
        Self::in_dir(temp.join(format!("agentloop-background-{:016x}", rand::random::<u64>())))
    }

    /// A registry whose output files go to `dir` (created at the first start, removed with
    /// the registry).
    pub fn in_dir(dir: PathBuf) -> Self {
        BackgroundShells { dir: SpillDir::new(dir), shells: Mutex::default() }
    }

    /// The directory of the output files: read-only tools may read it
    /// ([`crate::permissions::Policy::with_readable_root`]).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Start `shell` (built by `super::bash::shell_command` for `command`) in the background:
    /// its stdout and stderr go to a new file `<id>.output` (mode 0600) in [`Self::dir`], its
    /// process group is `group(pid)` (as the foreground Bash makes its own), and a tokio task
    /// records how it ends. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// The I/O error when the directory or the file cannot be created or the shell cannot
    /// start (the file is then removed).
    pub fn start(
        &self,
        mut shell: tokio::process::Command,
        group: impl FnOnce(Option<u32>) -> ProcessGroup,
        command: &str,
        description: Option<String>,
    ) -> std::io::Result<Arc<BackgroundShell>> {
        private_dir(self.dir.path())?;
        let mut shells = lock(&self.shells);
        let (id, output, file) = self.create_output(&shells)?;
        let spawned = file.try_clone().and_then(|stderr| {
            shell.stdout(file).stderr(stderr);
            shell.spawn()
        });
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_file(&output);
                return Err(e);
            }
        };
        let (status, _) = watch::channel(Status::Running);
        let started = Arc::new(BackgroundShell {
            id,
            command: command.to_owned(),
            description,
            started: SystemTime::now(),
            output,
            status,
            group: Mutex::new(Some(group(child.id()))),
        });
        shells.push(started.clone());
        tokio::spawn(supervise(child, started.clone()));
        Ok(started)
    }

    /// The shell with this id.
    pub fn get(&self, id: &str) -> Option<Arc<BackgroundShell>> {
        lock(&self.shells).iter().find(|s| s.id == id).cloned()
    }

    /// Every shell started in the session, in the order they started.
    pub fn list(&self) -> Vec<Arc<BackgroundShell>> {
        lock(&self.shells).clone()
    }

    /// The ids of [`Self::list`].
    pub fn ids(&self) -> Vec<String> {
        lock(&self.shells).iter().map(|s| s.id.clone()).collect()
    }

    /// The answer to a task id that names no shell of the session: the id and the known ones.
    pub fn unknown_id(&self, id: &str) -> String {
        let ids = self.ids();
        if ids.is_empty() {
            format!("No task found with ID: {id} (no background task has been started in this session)")
        } else {
            format!("No task found with ID: {id} (known task IDs: {})", ids.join(", "))
        }
    }

    /// A fresh id and its new, empty output file.
    fn create_output(&self, taken: &[Arc<BackgroundShell>]) -> std::io::Result<(String, PathBuf, File)> {
        for _ in 0..16 {
            let id = fresh_id();
            if taken.iter().any(|s| s.id == id) {
                continue;
            }
            let path = self.dir.path().join(format!("{id}.output"));
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path);
            match created {
                Ok(file) => return Ok((id, path, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free background task id"))
    }
}

impl Drop for BackgroundShells {
    /// The session ends: every shell still running is killed with its group; then the
    /// directory goes, with the output files.
    fn drop(&mut self) {
        for shell in lock(&self.shells).iter() {
            let _ = shell.settle(Status::Killed);
        }
    }
}

/// One background shell.
#[derive(Debug)]
pub struct BackgroundShell {
    id: String,
    command: String,
    description: Option<String>,
    started: SystemTime,
    output: PathBuf,
    status: watch::Sender<Status>,
    /// The shell's group while it runs; taken (killed and unlisted) when it ends.
    group: Mutex<Option<ProcessGroup>>,
}

impl BackgroundShell {
    /// Its id: `b` and 8 base-36 digits, like Claude Code's.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The command line it runs.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The Bash call's `description`, if it gave one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// When it started.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// The file its stdout and stderr go to.
    pub fn output_path(&self) -> &Path {
        &self.output
    }

    /// Where it is now.
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Kill the shell and every process of its group; it becomes [`Status::Killed`].
    ///
    /// # Errors
    /// The status it had when it is not running any more (nothing is killed).
    pub fn stop(&self) -> Result<(), Status> {
        self.settle(Status::Killed)
    }

    /// Wait until the shell ends, at most `timeout`, or until `cancel` is cancelled.
    pub async fn wait(&self, timeout: Duration, cancel: &CancellationToken) -> Waited {
        let mut status = self.status.subscribe();
        tokio::select! {
            biased;
            ended = status.wait_for(|s| !s.is_running()) => match ended {
                Ok(status) => Waited::Ended(status.clone()),
                // The sender lives in `self`: it cannot be gone.
                Err(_) => Waited::Ended(self.status()),
            },
            () = cancel.cancelled() => Waited::Cancelled,
            () = tokio::time::sleep(timeout) => Waited::TimedOut,
        }
    }

    /// Everything written to the output file so far, at most `cap` bytes of it kept (the start
    /// and the end, as Bash keeps them: [`Capture`]). While the shell runs, a character still
    /// being written at the end is left for the next read.
    ///
    /// # Errors
    /// The I/O error reading the file.
    pub fn output(&self, cap: usize) -> std::io::Result<Capture> {
        let running = self.status().is_running();
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&self.output)?;
        // What the shell writes meanwhile waits for the next read.
        let len = file.metadata()?.len();
        let mut file = file.take(len);
        let mut capture = Capture::new(cap);
        let mut buf = vec![0u8; 64 * 1024];
        let mut carry = Vec::new();
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            carry.extend_from_slice(&buf[..n]);
            let complete = carry.len() - incomplete_suffix(&carry);
            capture.push(&carry[..complete]);
            carry.drain(..complete);
        }
        if !running {
            // Nothing more will come: an unfinished character is shown as it is.
            capture.push(&carry);
        }
        Ok(capture)
    }

    /// End the shell's life with `status`, unless it has ended already: its group is killed
    /// (leftovers of an exited shell included) and unlisted.
    fn settle(&self, status: Status) -> Result<(), Status> {
        let mut group = lock(&self.group);
        let current = self.status();
        if !current.is_running() {
            return Err(current);
        }
        if let Some(group) = group.take() {
            group.kill();
            group.disarm();
        }
        self.status.send_replace(status);
        Ok(())
    }
}

/// Wait for the shell to exit and record how it ended (a stopped shell stays
/// [`Status::Killed`]).
async fn supervise(mut child: tokio::process::Child, shell: Arc<BackgroundShell>) {
    let status = match child.wait().await {
        Ok(exit) => match (exit.code(), exit.signal()) {
            (Some(exit_code), _) => Status::Completed { exit_code },
            (None, Some(signal)) => Status::Failed { reason: format!("killed by signal {signal}") },
            (None, None) => Status::Failed { reason: format!("ended abnormally: {exit}") },
        },
        Err(e) => Status::Failed { reason: format!("lost track of the command: {e}") },
    };
    let _ = shell.settle(status);
}

/// `b` and 8 random base-36 digits.
fn fresh_id() -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let digits: String = (0..8).map(|_| char::from(DIGITS[rand::random_range(0..DIGITS.len())])).collect();
    format!("b{digits}")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the data whole: a panic elsewhere does not spoil it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
