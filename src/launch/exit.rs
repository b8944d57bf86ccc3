//! The exit status of an agentloop process: one type for every code the README's table
//! documents, so that a front end says what ended it and never spells a number.

use crate::engine::reason::TerminalReason;
use crate::launch::signals::Stop;

/// How an agentloop process ends, and the exit code that says it.
///
/// | status | code |
/// | --- | --- |
/// | [`Ended`](ExitStatus::Ended) | the table's code for the terminal reason: 0 `completed`, `stop_hook_prevented`, `hook_stopped`; 1 `model_error`, `prompt_too_long`, `blocking_limit`, `budget_exhausted`, `structured_output_retry_exhausted`; 3 `max_turns`; 130 `aborted_*` |
/// | [`Success`](ExitStatus::Success) | 0 |
/// | [`Failure`](ExitStatus::Failure) | 1 |
/// | [`Usage`](ExitStatus::Usage) | 2 |
/// | [`Internal`](ExitStatus::Internal) | 70 (`EX_SOFTWARE`) |
/// | [`OutputFailed`](ExitStatus::OutputFailed) | 74 (`EX_IOERR`) |
/// | [`Stopped`](ExitStatus::Stopped) | 128 + the signal's number: 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 (SIGPIPE's) a closed stdout |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// A run ended with this terminal reason; its code is the table's (`exit_code` of its
    /// `[[reason]]`).
    Ended(TerminalReason),
    /// Whatever ran went as asked (a listing printed, an SDK session whose last result was no
    /// error).
    Success,
    /// A command failed: an MCP tool answered with an error, `auth status` found no
    /// credential, a demo could not run, the SDK session's last result was an error.
    Failure,
    /// Bad usage or unusable input: nothing ran.
    Usage,
    /// The engine itself failed (an undeclared transition: a bug).
    Internal,
    /// The output could not be written (a full disk, an I/O error); one line on stderr says
    /// why.
    OutputFailed,
    /// Stopped from outside: a signal, or a closed stdout.
    Stopped(Stop),
}

impl ExitStatus {
    /// The status of a run that ended with `terminal`.
    pub fn of(terminal: TerminalReason) -> ExitStatus {
        ExitStatus::Ended(terminal)
    }

    /// [`ExitStatus::Failure`] when `failed`, else [`ExitStatus::Success`].
    pub fn failure_if(failed: bool) -> ExitStatus {
        if failed { ExitStatus::Failure } else { ExitStatus::Success }
    }

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ended(terminal) => terminal.exit_code(),
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Internal => 70,
            ExitStatus::OutputFailed => 74,
            ExitStatus::Stopped(Stop::Interrupt) => 128 + 2,
            ExitStatus::Stopped(Stop::Terminate) => 128 + 15,
            ExitStatus::Stopped(Stop::Hangup) => 128 + 1,
            ExitStatus::Stopped(Stop::ClosedStdout) => 128 + 13,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        std::process::ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_has_its_documented_code() {
        let codes: Vec<u8> = [
            ExitStatus::Ended(TerminalReason::Completed),
            ExitStatus::Ended(TerminalReason::ModelError),
            ExitStatus::Ended(TerminalReason::MaxTurns),
            ExitStatus::Ended(TerminalReason::AbortedTools),
            ExitStatus::Success,
            ExitStatus::Failure,
            ExitStatus::Usage,
            ExitStatus::Internal,
            ExitStatus::OutputFailed,
            ExitStatus::Stopped(Stop::Interrupt),
            ExitStatus::Stopped(Stop::Terminate),
            ExitStatus::Stopped(Stop::Hangup),
            ExitStatus::Stopped(Stop::ClosedStdout),
        ]
        .into_iter()
        .map(ExitStatus::code)
        .collect();
        assert_eq!(codes, [0, 1, 3, 130, 0, 1, 2, 70, 74, 130, 143, 129, 141]);
    }
}
