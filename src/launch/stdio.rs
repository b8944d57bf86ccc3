//! The process's stdout as a run writes it: it notices when it is closed, and cancels the
//! run (stderr's lines are [`crate::stderr`]'s).

use std::io::{self, Write};

use tokio_util::sync::CancellationToken;

use crate::launch::exit::ExitStatus;
use crate::launch::signals::Stop;

/// Stdout for a run's output. A write that fails marks it closed (later writes are skipped)
/// and fires [`Stdout::closed`], which cancels the run: with EPIPE whoever read it is gone;
/// with any other error (ENOSPC on a full disk, EIO) the output is being lost, which is kept
/// as [`Stdout::failure`] so that the process says so and exits non-zero.
#[derive(Debug, Clone, Default)]
pub struct Stdout {
    closed: CancellationToken,
    failure: std::sync::Arc<std::sync::OnceLock<String>>,
    /// Cancelled in the same call as the failed write: the run it belongs to, so that no
    /// further tool call starts after the output is lost.
    run: Option<CancellationToken>,
}

impl Stdout {
    /// Stdout, open.
    pub fn new() -> Self {
        Stdout::default()
    }

    /// Stdout whose first failed write also cancels `run` at once, inside the write: the run
    /// takes its abort edges before anything else of it happens (another tool call cannot
    /// start while the cancellation travels).
    pub fn cancelling(run: CancellationToken) -> Self {
        Stdout { run: Some(run), ..Stdout::default() }
    }

    /// Write `bytes` and flush. Returns false when stdout is closed.
    pub fn write(&self, bytes: &[u8]) -> bool {
        if self.closed.is_cancelled() {
            return false;
        }
        let mut out = io::stdout().lock();
        match out.write_all(bytes).and_then(|()| out.flush()) {
            Ok(()) => true,
            Err(e) => {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    let _ = self.failure.set(e.to_string());
                }
                self.closed.cancel();
                if let Some(run) = &self.run {
                    run.cancel();
                }
                false
            }
        }
    }

    /// Why writing failed, when it failed otherwise than with EPIPE.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// The exit status of a command whose stdout closed: [`ExitStatus::OutputFailed`] after
    /// one line on stderr when the output could not be written, else
    /// [`ExitStatus::Stopped`] by [`Stop::ClosedStdout`] (quietly: the reader left).
    pub fn closed_exit_status(&self) -> ExitStatus {
        match self.failure() {
            Some(why) => {
                crate::stderr::line(&format!("agentloop: cannot write the output: {why}"));
                ExitStatus::OutputFailed
            }
            None => ExitStatus::Stopped(Stop::ClosedStdout),
        }
    }

    /// Write `text` and a newline. Returns false when stdout is closed.
    pub fn line(&self, text: &str) -> bool {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
        self.write(&bytes)
    }

    /// Whether a write found stdout closed.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves once a write finds stdout closed.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }
}
