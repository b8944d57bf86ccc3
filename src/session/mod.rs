//! The on-disk session store: one JSONL transcript per session, written as the run goes,
//! loaded (and repaired) to resume, listed to pick one.
//!
//! Layout: `$AGENTLOOP_HOME/projects/<cwd slug>/<session id>.jsonl`, `AGENTLOOP_HOME`
//! defaulting to `~/.agentloop`; the slug and the message lines follow Claude Code's own
//! transcripts so that its readers can read ours (see `docs/sessions.md`).
//!
//! - [`Uuid`]: session ids and line uuids (version 4).
//! - [`paths`]: the store's root and the cwd slug.
//! - [`time`]: RFC 3339 timestamps.
//! - [`line`](mod@line): the JSON shapes of the lines.
//! - [`TranscriptWriter`]: appends one line per message, one `write` per line.
//! - [`load`] / [`LoadedSession`]: one pass over a transcript, tolerant of a line cut by a kill.
//! - [`repair`]: answers tool calls left without results, as the live abort path does.
//! - [`SessionStore`]: the directory of a working directory's sessions, listing, forking.

use std::io;
use std::path::PathBuf;

mod id;
pub mod line;
pub mod paths;
mod reader;
mod repair;
mod store;
pub mod time;
mod writer;

#[cfg(test)]
mod tests;

pub use id::{Uuid, UuidError};
pub use line::{HistoryReason, SessionMeta};
pub use reader::{LoadedSession, load};
pub use repair::{Repair, RepairReport, RepairWrite, repair};
pub use store::{FIRST_PROMPT_CHARS, SessionStore, SessionSummary};
pub use writer::TranscriptWriter;

/// What can go wrong reading or writing transcripts. Every variant names the file; line
/// errors name the 1-based line too.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading, writing or creating a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// A line that is not the last one is not valid JSON or not a valid line of its type.
    #[error("{}:{line}: {source}", path.display())]
    Json {
        /// The transcript.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A line that is not the last one is not UTF-8.
    #[error("{}:{line}: not UTF-8", path.display())]
    NotUtf8 {
        /// The transcript.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// A message could not be serialized (it holds something JSON cannot express).
    #[error("{}: cannot encode a line: {source}", path.display())]
    Encode {
        /// The transcript.
        path: PathBuf,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// Neither the file name nor any line gives a version 4 session id.
    #[error("{}: no session id (the file name is not a UUID and no line has a sessionId)", path.display())]
    NoSessionId {
        /// The transcript.
        path: PathBuf,
    },
    /// Neither `AGENTLOOP_HOME` nor `HOME` is set.
    #[error("cannot find the session store: set AGENTLOOP_HOME or HOME")]
    NoHome,
}

/// Results of this module.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;

pub(crate) fn io_error(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> SessionError {
    let path = path.into();
    move |source| SessionError::Io { path, source }
}
