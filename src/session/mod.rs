//! The on-disk session store: one JSONL transcript per session, written as the run goes,
//! loaded (and repaired) to resume, listed to pick one.
//!
//! Layout: `<root>/projects/<cwd slug>/<session id>.jsonl`, the root being `$AGENTLOOP_HOME`
//! when set, else Claude Code's own directory (`$CLAUDE_CONFIG_DIR`, default `~/.claude`);
//! the slug and the message lines follow Claude Code's own transcripts so that its readers
//! (usage reporters, transcript viewers, the Agent SDK's session functions) read ours (see
//! `docs/sessions.md`).
//!
//! - [`Uuid`]: session ids and line uuids (version 4).
//! - `paths`: the store's root and the cwd slug.
//! - `time`: RFC 3339 timestamps.
//! - `line`: the JSON shapes of the lines.
//! - [`TranscriptWriter`]: appends one line per message, one `write` per line.
//! - [`SessionLock`]: one writer per transcript (an advisory lock the kernel releases on exit).
//! - [`load`] / [`LoadedSession`]: one pass over a transcript, tolerant of a line cut by a kill;
//!   drops `tool_result` blocks that answer no call.
//! - `journal`: a line when a tool call starts and when its result is known, so a resume
//!   keeps the results a kill would otherwise lose.
//! - `repair`: answers tool calls left without results: from the journal when it knows them,
//!   else as the live abort path does.
//! - [`SessionStore`]: the directory of a working directory's sessions, listing, forking.

use std::io;
use std::path::PathBuf;

mod id;
pub(crate) mod journal;
pub(crate) mod line;
mod lock;
pub(crate) mod paths;
mod reader;
pub(crate) mod repair;
mod store;
pub(crate) mod time;
mod writer;

#[cfg(test)]
mod tests;

pub use id::{Uuid, UuidError};
pub use journal::{JournalLine, Journaled, PendingCall, PendingTools, Recovered, RecoveredCalls, ToolJournal};
pub use line::{HistoryReason, LineInfo, ReplyInfo, SessionMeta};
pub use lock::SessionLock;
pub use reader::{LoadedSession, load, load_cut, load_sidechain};
pub use repair::{Repair, RepairReport, Unpaired, repair_resuming};
pub use store::{SessionStore, SessionSummary};
pub(crate) use writer::Mirror;
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
    /// Another process (or another writer of this one) appends to the session: its lock
    /// file is locked ([`SessionLock`]).
    #[error("session {session} is in use by {}", match pid { Some(pid) => format!("pid {pid}"), None => "another process".to_owned() })]
    InUse {
        /// The session id (the transcript's file name without `.jsonl`).
        session: String,
        /// The pid written in the lock file, when the holder has written it.
        pid: Option<u32>,
    },
    /// Neither `AGENTLOOP_HOME`, `CLAUDE_CONFIG_DIR` nor `HOME` is set.
    #[error("cannot find the session store: set CLAUDE_CONFIG_DIR, AGENTLOOP_HOME or HOME")]
    NoHome,
    /// A resume at a message (`--resume-session-at`) names no line of the transcript.
    #[error("No message found with message.uuid of: {uuid}")]
    NoMessage {
        /// The uuid given.
        uuid: String,
    },
    /// A resume at a message would drop more than the turn `--resume-drops-turn` declares.
    #[error(
        "Resume rejected by --resume-drops-turn: resuming at {at} would discard entries not attributable to turn {turn}: {reason}"
    )]
    ResumeRefused {
        /// The uuid of the last line kept.
        at: String,
        /// The prompt uuid of the turn declared to be dropped.
        turn: String,
        /// What in the dropped range is not that turn's.
        reason: String,
    },
}

/// Results of this module.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;

pub(crate) fn io_error(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> SessionError {
    let path = path.into();
    move |source| SessionError::Io { path, source }
}
