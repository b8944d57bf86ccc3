//! Appends transcript lines as the run goes.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::line::{self, HistoryOut, MessageLineOut, MetaLineOut, PromptEndOut};
use super::reader::final_line_fix;
use super::repair::{RepairReport, RepairWrite};
use super::time::format_rfc3339_millis;
use super::{HistoryReason, Result, SessionError, SessionMeta, Uuid, io_error};
use crate::protocol::{Message, Role};

/// Appends one JSON line per event to a session's transcript.
///
/// The file is opened append-only and each line (newline included) is handed to the kernel
/// with one `write_all` of a buffer that holds the whole line, with nothing buffered in user
/// space between calls: a `SIGKILL` loses at most the line being written, and a line cut that
/// way is dropped on load (and cut off by [`TranscriptWriter::resume`]). Lines are not
/// `fsync`ed; [`TranscriptWriter::sync`] does that on request.
#[derive(Debug)]
pub struct TranscriptWriter {
    out: Out,
    session_id: Uuid,
    session_text: String,
    cwd: String,
    last_uuid: Option<String>,
}

/// The file and the buffer each line is serialized into before its one write.
#[derive(Debug)]
struct Out {
    file: File,
    path: PathBuf,
    line: Vec<u8>,
}

impl TranscriptWriter {
    /// Create a new transcript at `path` (its directories are created with mode 0700, the file
    /// with 0600). Fails if the file exists.
    pub fn create(path: &Path, session_id: Uuid, cwd: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io_error(dir))?;
        }
        let file = OpenOptions::new().append(true).create_new(true).mode(0o600).open(path).map_err(io_error(path))?;
        Ok(Self::with_file(file, path, session_id, cwd, None))
    }

    /// Continue an existing transcript: new message lines chain from `last_uuid` (see
    /// [`LoadedSession::last_uuid`](super::LoadedSession::last_uuid)). A final line cut by a
    /// kill is truncated away first, and a final complete line without its newline gets one,
    /// so that what is appended starts on a line of its own (the same rule [`load`](super::load)
    /// applies). [`LoadedSession::writer`](super::LoadedSession::writer) calls this.
    pub fn resume(path: &Path, session_id: Uuid, cwd: &Path, last_uuid: Option<String>) -> Result<Self> {
        let mut file = OpenOptions::new().read(true).append(true).open(path).map_err(io_error(path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error(path))?;
        let mut writer = Self::with_file(file, path, session_id, cwd, last_uuid);
        match final_line_fix(&bytes) {
            TailFix::None => {}
            TailFix::Truncate(len) => writer.out.file.set_len(len as u64).map_err(io_error(path))?,
            TailFix::Newline => writer.out.file.write_all(b"\n").map_err(io_error(path))?,
        }
        Ok(writer)
    }

    fn with_file(file: File, path: &Path, session_id: Uuid, cwd: &Path, last_uuid: Option<String>) -> Self {
        TranscriptWriter {
            out: Out { file, path: path.to_owned(), line: Vec::with_capacity(4096) },
            session_id,
            session_text: session_id.to_string(),
            cwd: cwd.to_string_lossy().into_owned(),
            last_uuid,
        }
    }

    /// The transcript's path.
    pub fn path(&self) -> &Path {
        &self.out.path
    }

    /// The session id.
    pub fn session_id(&self) -> Uuid {
        self.session_id
    }

    /// The uuid of the last message line written (the next one's `parentUuid`).
    pub fn last_uuid(&self) -> Option<&str> {
        self.last_uuid.as_deref()
    }

    /// Write one message line chained to the previous one and return its uuid. A message
    /// without content is not written (the history does not keep it either): `None`.
    pub fn append(&mut self, message: &Message) -> Result<Option<Uuid>> {
        if message.content.is_empty() {
            return Ok(None);
        }
        let uuid = Uuid::new_v4();
        let uuid_text = uuid.to_string();
        let timestamp = now();
        let kind = match message.role {
            Role::User => line::USER,
            Role::Assistant => line::ASSISTANT,
        };
        self.out.write(&MessageLineOut {
            parent_uuid: self.last_uuid.as_deref(),
            is_sidechain: false,
            kind,
            message,
            uuid: &uuid_text,
            timestamp: &timestamp,
            user_type: "external",
            entrypoint: "agentloop",
            cwd: &self.cwd,
            session_id: &self.session_text,
            version: env!("CARGO_PKG_VERSION"),
        })?;
        self.last_uuid = Some(uuid_text);
        Ok(Some(uuid))
    }

    /// Write an `agentloop-meta` line (when a session starts or resumes).
    pub fn meta(&mut self, meta: &SessionMeta) -> Result<()> {
        self.meta_line(meta, None)
    }

    pub(crate) fn meta_line(&mut self, meta: &SessionMeta, forked_from: Option<&str>) -> Result<()> {
        let timestamp = now();
        self.out.write(&MetaLineOut {
            kind: line::META,
            meta,
            forked_from,
            cwd: &self.cwd,
            session_id: &self.session_text,
            timestamp: &timestamp,
            version: env!("CARGO_PKG_VERSION"),
        })
    }

    /// Write an `agentloop-prompt-end` line: how one prompt's turn sequence ended.
    pub fn prompt_end(&mut self, terminal_reason: &str, error: Option<&str>, turns: u32) -> Result<()> {
        let timestamp = now();
        self.out.write(&PromptEndOut {
            kind: line::PROMPT_END,
            terminal_reason,
            error,
            turns,
            session_id: &self.session_text,
            timestamp: &timestamp,
        })
    }

    /// Write an `agentloop-history` snapshot: `messages` replace the whole history (after a
    /// compaction or a collapse changed messages in place). The uuid chain restarts: the
    /// snapshot records the old leaf as `logicalParentUuid` and the next message line has a
    /// null `parentUuid`, as Claude Code's compaction boundary does.
    pub fn history(&mut self, messages: &[Message], reason: HistoryReason) -> Result<()> {
        let timestamp = now();
        self.out.write(&HistoryOut {
            kind: line::HISTORY,
            reason,
            logical_parent_uuid: self.last_uuid.as_deref(),
            messages,
            session_id: &self.session_text,
            timestamp: &timestamp,
        })?;
        self.last_uuid = None;
        Ok(())
    }

    /// Record what [`repair`](super::repair) changed, so the file loads as the repaired
    /// `messages`: the appended messages as message lines, or a snapshot of `messages`.
    pub fn record_repair(&mut self, report: &RepairReport, messages: &[Message]) -> Result<()> {
        match &report.write {
            RepairWrite::Nothing => Ok(()),
            RepairWrite::Append(tail) => tail.iter().try_for_each(|m| self.append(m).map(drop)),
            RepairWrite::Snapshot => self.history(messages, HistoryReason::Repair),
        }
    }

    /// `fsync` the file (for callers that want lines to survive power loss, not only kills).
    pub fn sync(&self) -> Result<()> {
        self.out.file.sync_data().map_err(io_error(&self.out.path))
    }
}

impl Out {
    /// Serialize one line and hand it to the kernel in one call.
    fn write(&mut self, value: &impl Serialize) -> Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value)
            .map_err(|source| SessionError::Encode { path: self.path.clone(), source })?;
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(io_error(&self.path))
    }
}

/// What [`TranscriptWriter::resume`] does to the end of a file before appending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TailFix {
    /// The file ends with a complete line (or is empty).
    None,
    /// The final line is not JSON (cut by a kill): keep only the first `len` bytes.
    Truncate(usize),
    /// The final line is complete JSON but lacks its newline.
    Newline,
}

fn now() -> String {
    format_rfc3339_millis(SystemTime::now())
}
