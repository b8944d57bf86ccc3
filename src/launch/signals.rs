//! What stops a run from outside: SIGINT (Ctrl+C), SIGTERM, SIGHUP, and a closed stdout
//! (EPIPE, as when the output is piped into `head -1`). Each cancels the run like Ctrl+C
//! always has, so every tool and hook process group is killed, the trace gets its terminal
//! record and the process exits with the shell's code for the signal (128 + its number).

use std::io;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::launch::exit::ExitStatus;
use crate::launch::stdio::Stdout;
use crate::stderr;

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

impl Stop {
    /// The process exit status: 128 + the signal's number, as a shell reports it
    /// ([`ExitStatus::Stopped`]).
    pub fn exit_status(self) -> ExitStatus {
        ExitStatus::Stopped(self)
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

/// How long a second signal lets the run write its terminal record, once every tool and
/// hook process group is killed, before the process exits without it.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// Drive `run` while watching for signals and a closed stdout. The first one cancels the run
/// (it ends as `aborted_*`, or as it was ending anyway); a second signal kills every tool and
/// hook process group at once, and exits the process if the run still has not ended
/// [`QUIT_GRACE`] later. Returns the run's result and what stopped it, if anything did.
pub async fn supervise<T>(
    run: impl Future<Output = T>,
    cancel: &CancellationToken,
    stdout: &Stdout,
) -> (T, Option<Stop>) {
    let mut signals = match Signals::install() {
        Ok(signals) => Some(signals),
        Err(e) => {
            stderr::line(&format!("agentloop: warning: cannot catch signals: {e}"));
            None
        }
    };
    tokio::pin!(run);
    let mut stop: Option<Stop> = None;
    let quit = tokio::time::sleep(Duration::MAX);
    tokio::pin!(quit);
    let mut quitting = false;
    let result = loop {
        tokio::select! {
            biased;
            result = &mut run => break result,
            signal = next_signal(&mut signals) => match stop {
                None => {
                    stop = Some(signal);
                    let hint = if signal == Stop::Interrupt { " (Ctrl+C again to quit at once)" } else { "" };
                    stderr::line(&format!("\nagentloop: {}{hint}", signal.describe()));
                    cancel.cancel();
                }
                Some(_) => {
                    crate::process_group::kill_all();
                    if !quitting {
                        stderr::line("agentloop: quitting");
                        quitting = true;
                        quit.as_mut().reset(tokio::time::Instant::now() + QUIT_GRACE);
                    }
                }
            },
            () = stdout.closed(), if stop.is_none() => {
                stop = Some(Stop::ClosedStdout);
                cancel.cancel();
            }
            () = &mut quit, if quitting => {
                crate::process_group::kill_all();
                crate::telemetry::shutdown_now();
                std::process::exit(i32::from(stop.unwrap_or(Stop::Interrupt).exit_status().code()));
            }
        }
    };
    if stop.is_some() {
        // Every group is normally gone with the calls that owned it; make sure.
        crate::process_group::kill_all();
    }
    (result, stop)
}

async fn next_signal(signals: &mut Option<Signals>) -> Stop {
    match signals {
        Some(signals) => signals.next().await,
        None => std::future::pending().await,
    }
}
