//! Appends transcript lines as the run goes.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::line::{
    self, AssistantOut, ContentOut, HistoryOut, LineInfo, MessageLineOut, MessageOut, MetaLineOut, PromptEndOut,
    UsageOut,
};
use super::reader::final_line_fix;
use super::repair::{RepairReport, RepairWrite};
use super::time::format_rfc3339_millis;
use super::{HistoryReason, Result, SessionError, SessionLock, SessionMeta, ToolJournal, Uuid, io_error};
use crate::protocol::{ContentBlock, Message, Role, Usage};

/// Appends one JSON line per event to a session's transcript.
///
/// The file is opened append-only and each line (newline included) is handed to the kernel
/// with one `write_all` of a buffer that holds the whole line, with nothing buffered in user
/// space between calls: a `SIGKILL` loses at most the line being written, and a line cut that
/// way is dropped on load (and cut off by [`TranscriptWriter::resume`]). Lines are not
/// `fsync`ed; [`TranscriptWriter::sync`] does that on request. A writer holds the
/// transcript's [`SessionLock`]: one writer per transcript at a time.
#[derive(Debug)]
pub struct TranscriptWriter {
    out: Out,
    /// Held while the writer lives: no other writer appends meanwhile.
    _lock: SessionLock,
    session_id: Uuid,
    session_text: String,
    cwd: String,
    git_branch: String,
    last_uuid: Option<String>,
    /// The uuid of the last assistant line: the call a tool-result line answers.
    last_assistant: Option<String>,
    /// For a subagent's sidechain transcript: the subagent's id (`agentId` on its lines,
    /// which are `isSidechain: true` and carry the parent's `sessionId`).
    agent_id: Option<String>,
}

/// The file and the buffer each line is serialized into before its one write.
#[derive(Debug)]
struct Out {
    file: File,
    path: PathBuf,
    line: Vec<u8>,
    mirror: Option<Mirror>,
}

/// Where a transcript's lines are copied as they are written: the Claude Agent SDK's session
/// store (`--session-mirror`) gets each one, with the transcript's path, as a
/// `transcript_mirror` frame. It is called with the line's JSON, without its newline.
#[derive(Clone)]
pub struct Mirror(std::sync::Arc<CopyLine>);

/// What a [`Mirror`] calls with a line: the transcript's path and the line's JSON.
type CopyLine = dyn Fn(&Path, &[u8]) + Send + Sync;

impl Mirror {
    /// A mirror that hands each line to `copy`.
    pub fn new(copy: impl Fn(&Path, &[u8]) + Send + Sync + 'static) -> Self {
        Mirror(std::sync::Arc::new(copy))
    }

    /// Hand the entry `line` (JSON, no newline) of the transcript at `path` to the mirror:
    /// for entries that live beside a transcript rather than in it (a subagent's metadata).
    pub fn send(&self, path: &Path, line: &[u8]) {
        (self.0)(path, line);
    }
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mirror")
    }
}

impl TranscriptWriter {
    /// Create a new transcript at `path` (its directories are created with mode 0700, the file
    /// with 0600), holding its [`SessionLock`] for as long as the writer lives. Fails if the
    /// file exists.
    pub fn create(path: &Path, session_id: Uuid, cwd: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io_error(dir))?;
        }
        let lock = SessionLock::acquire(path)?;
        let file = OpenOptions::new().append(true).create_new(true).mode(0o600).open(path).map_err(io_error(path))?;
        Ok(Self::with_file(file, lock, path, session_id, cwd, None))
    }

    /// Continue an existing transcript: new message lines chain from `last_uuid` (see
    /// [`LoadedSession::last_uuid`](super::LoadedSession::last_uuid)). A final line cut by a
    /// kill is truncated away first, and a final complete line without its newline gets one,
    /// so that what is appended starts on a line of its own (the same rule [`load`](super::load)
    /// applies). [`LoadedSession::writer`](super::LoadedSession::writer) calls this.
    ///
    /// The transcript's [`SessionLock`] is taken first and held for as long as the writer
    /// lives: [`SessionError::InUse`] when another writer holds it.
    pub fn resume(path: &Path, session_id: Uuid, cwd: &Path, last_uuid: Option<String>) -> Result<Self> {
        Self::resume_locked(SessionLock::acquire(path)?, path, session_id, cwd, last_uuid)
    }

    /// [`TranscriptWriter::resume`] with the lock already taken (before the transcript was
    /// loaded, so that no one appended between the load and the resume).
    pub fn resume_locked(
        lock: SessionLock,
        path: &Path,
        session_id: Uuid,
        cwd: &Path,
        last_uuid: Option<String>,
    ) -> Result<Self> {
        let mut file = OpenOptions::new().read(true).append(true).open(path).map_err(io_error(path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error(path))?;
        let mut writer = Self::with_file(file, lock, path, session_id, cwd, last_uuid);
        match final_line_fix(&bytes) {
            TailFix::None => {}
            TailFix::Truncate(len) => writer.out.file.set_len(len as u64).map_err(io_error(path))?,
            TailFix::Newline => writer.out.file.write_all(b"\n").map_err(io_error(path))?,
        }
        Ok(writer)
    }

    fn with_file(
        file: File,
        lock: SessionLock,
        path: &Path,
        session_id: Uuid,
        cwd: &Path,
        last_uuid: Option<String>,
    ) -> Self {
        TranscriptWriter {
            out: Out { file, path: path.to_owned(), line: Vec::with_capacity(4096), mirror: None },
            _lock: lock,
            session_id,
            session_text: session_id.to_string(),
            cwd: cwd.to_string_lossy().into_owned(),
            git_branch: super::paths::git_branch(cwd),
            last_uuid,
            last_assistant: None,
            agent_id: None,
        }
    }

    /// The same writer, writing the sidechain lines of the subagent `agent_id` (for a
    /// sidechain transcript resumed to be repaired).
    #[must_use]
    pub fn into_sidechain(mut self, agent_id: &str) -> Self {
        self.agent_id = Some(agent_id.to_owned());
        self
    }

    /// The mirror this writer copies its lines to, if any.
    pub fn mirror(&self) -> Option<Mirror> {
        self.out.mirror.clone()
    }

    /// Create the sidechain transcript of the subagent `agent_id` of session `session_id` at
    /// `path` (`…/<session>/subagents/agent-<id>.jsonl`): as [`TranscriptWriter::create`],
    /// with every message line marked `isSidechain: true` and carrying the `agentId`.
    pub fn create_sidechain(path: &Path, session_id: Uuid, cwd: &Path, agent_id: &str) -> Result<Self> {
        let mut writer = Self::create(path, session_id, cwd)?;
        writer.agent_id = Some(agent_id.to_owned());
        Ok(writer)
    }

    /// Copy every line written from now on to `mirror`; with `existing`, the complete lines
    /// already in the file first (a new session's opening lines; a resumed one's are already
    /// wherever the mirror keeps them).
    ///
    /// # Errors
    /// The file cannot be read back.
    pub fn mirror_to(&mut self, mirror: Mirror, existing: bool) -> Result<()> {
        if existing {
            let text = std::fs::read(&self.out.path).map_err(io_error(&self.out.path))?;
            let complete = text.iter().rposition(|&b| b == b'\n').map_or(&text[..0], |end| &text[..end]);
            for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                (mirror.0)(&self.out.path, line);
            }
        }
        self.out.mirror = Some(mirror);
        Ok(())
    }

    /// A journal of tool calls appending to this transcript ([`ToolJournal`]); `None` for a
    /// subagent's sidechain (its calls are not resumed on their own) or when the file cannot
    /// be opened a second time.
    pub fn journal(&self) -> Option<ToolJournal> {
        if self.agent_id.is_some() {
            return None;
        }
        let file = self.out.file.try_clone().ok()?;
        Some(ToolJournal::new(file, self.out.path.clone(), self.session_id, self.out.mirror.clone()))
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
        self.append_with(message, &LineInfo::default())
    }

    /// [`TranscriptWriter::append`] with what the line carries beside the message: its uuid
    /// (the one the message was shown with on stdout), the API's reply info for an assistant
    /// message (`message.id`, `model`, `stop_reason`, `usage`, and `requestId`), the prompt it
    /// belongs to, and for the prompt itself its text as a plain string and its `origin`.
    pub fn append_with(&mut self, message: &Message, info: &LineInfo<'_>) -> Result<Option<Uuid>> {
        if message.content.is_empty() {
            return Ok(None);
        }
        let uuid = info.uuid.unwrap_or_else(Uuid::new_v4);
        let uuid_text = uuid.to_string();
        // As in Claude Code, user lines name their prompt.
        let prompt_id = info.prompt_id.filter(|_| message.role == Role::User).map(|p| p.to_string());
        let timestamp = now();
        let no_usage = Usage::default();
        let (kind, body, request_id, source) = match message.role {
            Role::User => {
                let content = match message.content.as_slice() {
                    [ContentBlock::Text { text, .. }] if info.text_prompt => ContentOut::Text(text),
                    blocks => ContentOut::Blocks(blocks),
                };
                let answers = message.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }));
                let source = if answers { self.last_assistant.as_deref() } else { None };
                (line::USER, MessageOut::User { role: Role::User, content }, None, source)
            }
            Role::Assistant => {
                let reply = info.reply;
                let body = AssistantOut {
                    id: reply.and_then(|r| r.id.as_deref()),
                    kind: "message",
                    role: Role::Assistant,
                    model: reply.and_then(|r| r.model.as_deref()).unwrap_or(line::SYNTHETIC_MODEL),
                    content: &message.content,
                    stop_reason: reply.and_then(|r| r.stop_reason.as_ref()),
                    stop_sequence: reply.and_then(|r| r.stop_sequence.as_deref()),
                    usage: UsageOut::from(reply.map_or(&no_usage, |r| &r.usage)),
                };
                (line::ASSISTANT, MessageOut::Assistant(body), reply.and_then(|r| r.request_id.as_deref()), None)
            }
        };
        self.out.write(&MessageLineOut {
            parent_uuid: self.last_uuid.as_deref(),
            is_sidechain: self.agent_id.is_some(),
            agent_id: self.agent_id.as_deref(),
            prompt_id: prompt_id.as_deref(),
            kind,
            message: body,
            request_id,
            uuid: &uuid_text,
            timestamp: &timestamp,
            source_tool_assistant_uuid: source,
            origin: info.origin,
            user_type: "external",
            entrypoint: "agentloop",
            cwd: &self.cwd,
            session_id: &self.session_text,
            version: env!("CARGO_PKG_VERSION"),
            git_branch: &self.git_branch,
        })?;
        if message.role == Role::Assistant {
            self.last_assistant = Some(uuid_text.clone());
        }
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
        self.snapshot(messages, reason, None)
    }

    /// Write an `agentloop-history` snapshot of `messages` (the history cut back to the line
    /// `leaf`, for `--resume-session-at`) after which the next message line chains from
    /// `leaf`: in the uuid chain, a branch off the earlier line, as Claude Code writes one.
    pub fn rewind(&mut self, messages: &[Message], leaf: &str) -> Result<()> {
        self.snapshot(messages, HistoryReason::Rewind, Some(leaf))
    }

    fn snapshot(&mut self, messages: &[Message], reason: HistoryReason, leaf: Option<&str>) -> Result<()> {
        let timestamp = now();
        self.out.write(&HistoryOut {
            kind: line::HISTORY,
            reason,
            logical_parent_uuid: self.last_uuid.as_deref(),
            leaf_uuid: leaf,
            messages,
            session_id: &self.session_text,
            timestamp: &timestamp,
        })?;
        self.last_uuid = leaf.map(str::to_owned);
        self.last_assistant = None;
        Ok(())
    }

    /// Write a line as it is (a line copied from another transcript by a fork): a JSON object
    /// whose `uuid`, when it has one, becomes the next message line's parent.
    pub(crate) fn copy_line(&mut self, line: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
        self.out.write(line)?;
        if let Some(uuid) = line.get("uuid").and_then(serde_json::Value::as_str) {
            if line.get("type").and_then(serde_json::Value::as_str) == Some(line::ASSISTANT) {
                self.last_assistant = Some(uuid.to_owned());
            }
            self.last_uuid = Some(uuid.to_owned());
        } else if line.get("type").and_then(serde_json::Value::as_str) == Some(line::HISTORY) {
            self.last_uuid = line.get("leafUuid").and_then(serde_json::Value::as_str).map(str::to_owned);
        }
        Ok(())
    }

    /// Record what `repair` changed, so the file loads as the repaired
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
        self.file.write_all(&self.line).map_err(io_error(&self.path))?;
        if let Some(mirror) = &self.mirror {
            (mirror.0)(&self.path, &self.line[..self.line.len() - 1]);
        }
        Ok(())
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
