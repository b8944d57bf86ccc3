//! What stops a run from outside: SIGINT (Ctrl+C), SIGTERM, SIGHUP, and a closed stdout
//! (EPIPE, as when the output is piped into `head -1`). Each cancels the run like Ctrl+C
//! always has, so every tool and hook process group is killed, the trace gets its terminal
//! record and the process exits with the shell's code for the signal (128 + its number).

use std::io::{self, Write};

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Why a run was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT: Ctrl+C.
    Interrupt,
    /// SIGTERM: `kill`, `timeout`, systemd, CI runners.
    Terminate,
    /// SIGHUP: the terminal closed.
    Hangup,
    /// Writing to stdout failed with EPIPE: whoever read it is gone.
    ClosedStdout,
}

/// Exit status of a run stopped by SIGINT.
pub const EXIT_SIGINT: u8 = 130;
/// Exit status of a run stopped by SIGTERM.
pub const EXIT_SIGTERM: u8 = 143;
/// Exit status of a run stopped by SIGHUP.
pub const EXIT_SIGHUP: u8 = 129;
/// Exit status of a run whose stdout was closed (the shell's code for SIGPIPE).
pub const EXIT_CLOSED_STDOUT: u8 = 141;

impl Stop {
    /// The process exit status: 128 + the signal's number, as a shell reports it.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => EXIT_SIGINT,
            Stop::Terminate => EXIT_SIGTERM,
            Stop::Hangup => EXIT_SIGHUP,
            Stop::ClosedStdout => EXIT_CLOSED_STDOUT,
        }
    }

    /// What happened, for the message on stderr.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Interrupt => "interrupted",
            Stop::Terminate => "terminated (SIGTERM)",
            Stop::Hangup => "hung up (SIGHUP)",
            Stop::ClosedStdout => "stdout was closed",
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP, caught for the life of the process once installed.
#[derive(Debug)]
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Catch the three signals from now on (their default action, dying at once, is gone).
    ///
    /// # Errors
    /// When a handler cannot be installed.
    pub fn install() -> io::Result<Self> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal to arrive.
    pub async fn next(&mut self) -> Stop {
        tokio::select! {
            _ = self.interrupt.recv() => Stop::Interrupt,
            _ = self.terminate.recv() => Stop::Terminate,
            _ = self.hangup.recv() => Stop::Hangup,
        }
    }
}

/// Exit status of a run whose output could not be written (`EX_IOERR`: a full disk, an I/O
/// error), after one line on stderr saying why.
pub const EXIT_OUTPUT_FAILED: u8 = 74;

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

    /// The exit status of a command whose stdout closed: [`EXIT_OUTPUT_FAILED`] after one line
    /// on stderr when the output could not be written, else [`EXIT_CLOSED_STDOUT`] (quietly:
    /// the reader left).
    pub fn closed_exit_code(&self) -> u8 {
        match self.failure() {
            Some(why) => {
                stderr_line(&format!("agentloop: cannot write the output: {why}"));
                EXIT_OUTPUT_FAILED
            }
            None => EXIT_CLOSED_STDOUT,
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

/// Write `text` and a newline to stderr, ignoring errors: after SIGHUP the terminal may be
/// gone, and `eprintln!` would panic on the failed write.
pub fn stderr_line(text: &str) {
    let _ = writeln!(io::stderr(), "{text}");
}
