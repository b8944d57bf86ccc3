//! Loads a transcript in one pass: the history the model saw last, and what a listing shows.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::de::IgnoredAny;
use serde_json::error::Category;

use super::journal::{self, JournalLine, Journaled, PendingTools};
use super::line::{self, Head, HistoryIn, MessageLineIn, MetaLineIn, PromptEndIn, WireMessage};
use super::repair::{self, Repair, RepairReport, RepairWrite, Unpaired};
use super::time::parse_rfc3339;
use super::writer::TailFix;
use super::{Result, SessionError, SessionLock, SessionMeta, TranscriptWriter, Uuid, io_error};
use crate::protocol::{ContentBlock, Message, Role};

/// A transcript as loaded by [`load`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    /// The transcript's path.
    pub path: PathBuf,
    /// The session id: the file name's, else the first `sessionId` of a line.
    pub session_id: Uuid,
    /// The working directory of the first message or meta line that names one.
    pub cwd: Option<PathBuf>,
    /// The history as the model saw it last: the last `agentloop-history` snapshot (if any)
    /// followed by the message lines after it, consecutive same-role messages merged and
    /// empty ones dropped, as [`Transcript::push_merging`](crate::protocol::Transcript::push_merging)
    /// does. Not yet repaired: see [`LoadedSession::repair`].
    pub messages: Vec<Message>,
    /// The uuid of the last line of the main chain (the next message's `parentUuid`); `None`
    /// for an empty transcript or right after a snapshot.
    pub last_uuid: Option<String>,
    /// The last `agentloop-meta` line.
    pub meta: Option<SessionMeta>,
    /// The model: of the last meta line, or the `model` of the last assistant message
    /// (Claude Code's transcripts), whichever came later.
    pub model: Option<String>,
    /// `terminalReason` of the last `agentloop-prompt-end` line.
    pub last_terminal_reason: Option<String>,
    /// `error` of the last `agentloop-prompt-end` line.
    pub last_error: Option<String>,
    /// Assistant messages in [`LoadedSession::messages`].
    pub turns: usize,
    /// `agentloop-prompt-end` lines: prompts whose turn sequence ended (0 for Claude Code's
    /// transcripts, which have no such line).
    pub prompts: usize,
    /// The text of the first user message that has text (tool-result-only messages skipped).
    pub first_prompt: Option<String>,
    /// The last `timestamp` of any line.
    pub last_activity: Option<SystemTime>,
    /// What loading skipped: a final line cut by a kill, and `tool_result` blocks that answer
    /// no call of the assistant message before them (or a call already answered).
    pub repairs: Vec<Repair>,
    /// The uuid of the line the history was cut after ([`load_cut`]), if it was.
    pub cut: Option<String>,
    /// What the tool journal says of the calls (`agentloop-tool` lines): which started and
    /// which finished, with their results, for [`LoadedSession::repair`].
    pub journal: Journaled,
    /// What the replies recorded in it cost, in US dollars, at the price table's (and the
    /// settings' `modelPrices`) prices: what `--max-budget-usd` counts as already spent when
    /// the session is resumed. Replies of models nobody prices count nothing.
    pub spent_usd: f64,
    /// The models of recorded replies whose price nobody knows.
    pub unpriced_models: Vec<String>,
}

/// Load the transcript at `path` in one pass (`serde_json` per line).
///
/// Lines of types this module does not know (Claude Code's `queue-operation`, `attachment`,
/// `summary`...) are skipped, as are sidechain lines; Claude Code's `compact_boundary`
/// system line empties the history read so far, as an `agentloop-history` snapshot would. A final line that is not JSON (cut by a
/// kill) is ignored and reported in [`LoadedSession::repairs`]; any other bad line is an
/// error naming the file, the line and serde's message. A `tool_result` block of a user line
/// that answers no `tool_use` of the assistant message before it, or a call an earlier block
/// of the same message answered, is dropped (the API would refuse every later request with
/// it) and reported in [`LoadedSession::repairs`] with its line.
pub fn load(path: &Path) -> Result<LoadedSession> {
    scan(path, true)
}

/// [`load`] of a subagent's sidechain transcript (`…/subagents/agent-<id>.jsonl`): its lines
/// are the ones with `isSidechain: true`, and lines of the main chain are the ones skipped.
///
/// # Errors
/// Those of [`load`].
pub fn load_sidechain(path: &Path) -> Result<LoadedSession> {
    scan_as(path, true, None, true)
}

/// [`load`] with the history cut after the line whose `uuid` is `at` (`--resume-session-at`):
/// the lines after it are not read into the history. With `drops_turn` (`--resume-drops-turn`,
/// the uuid of the prompt whose turn the caller means to drop), the cut is refused unless
/// everything it drops belongs to that turn ([`SessionError::ResumeRefused`]): the range must
/// start with that prompt (lines that are no message, such as the previous prompt's
/// `agentloop-prompt-end`, aside) and hold nothing but its turn — the model's replies, the
/// tool results, and what agentloop added during the turn (`promptId`, or its own lines
/// before the turn's `agentloop-prompt-end`); a history snapshot, another prompt, or
/// Claude Code's absorbed queued messages refuse it.
///
/// # Errors
/// Those of [`load`]; [`SessionError::NoMessage`] when no line has uuid `at`;
/// [`SessionError::ResumeRefused`].
pub fn load_cut(path: &Path, at: &str, drops_turn: Option<&str>) -> Result<LoadedSession> {
    let cut = Cut { at, found: false, drops: drops_turn.map(DropCheck::new) };
    let loaded = scan_with(path, true, Some(cut))?;
    Ok(loaded)
}

impl LoadedSession {
    /// Make the history valid for the next request (see `repair`): the
    /// returned report starts with [`LoadedSession::repairs`]. Record it with
    /// [`TranscriptWriter::record_repair`] so the file loads as the repaired history.
    pub fn repair(&mut self) -> RepairReport {
        let report = repair::repair(&mut self.messages, &self.journal);
        self.with_load_repairs(report)
    }

    /// [`LoadedSession::repair`] for a run that goes on from this history
    /// (`repair::repair_resuming`): a tool phase a kill cut off, with calls that can run
    /// still, is left unanswered and returned for the resumed run to finish.
    pub fn repair_resuming(&mut self) -> (RepairReport, Option<PendingTools>) {
        let (report, pending) = repair::repair_resuming(&mut self.messages, &self.journal);
        (self.with_load_repairs(report), pending)
    }

    /// `report`, after the load's own repairs.
    fn with_load_repairs(&self, mut report: RepairReport) -> RepairReport {
        report.repairs.splice(0..0, self.repairs.iter().cloned());
        // The file still holds the dropped blocks: a snapshot makes it load without them.
        if self.repairs.iter().any(|r| matches!(r, Repair::DroppedToolResult { .. })) {
            report.write = RepairWrite::Snapshot;
        }
        report
    }

    /// A writer that continues this transcript's chain ([`TranscriptWriter::resume`]).
    pub fn writer(&self) -> Result<TranscriptWriter> {
        self.writer_locked(SessionLock::acquire(&self.path)?)
    }

    /// [`LoadedSession::writer`] with the transcript's lock taken before it was loaded.
    pub fn writer_locked(&self, lock: SessionLock) -> Result<TranscriptWriter> {
        let cwd = self.cwd.clone().unwrap_or_default();
        TranscriptWriter::resume_locked(lock, &self.path, self.session_id, &cwd, self.last_uuid.clone())
    }
}

/// The pass behind [`load`] and the store's listing. With `full` false, message lines are
/// read for their type only (the first user prompt and snapshots excepted): `messages` stays
/// empty and `turns` counts the assistant runs.
pub(crate) fn scan(path: &Path, full: bool) -> Result<LoadedSession> {
    scan_with(path, full, None)
}

fn scan_with(path: &Path, full: bool, cut: Option<Cut<'_>>) -> Result<LoadedSession> {
    scan_as(path, full, cut, false)
}

fn scan_as(path: &Path, full: bool, cut: Option<Cut<'_>>, sidechain: bool) -> Result<LoadedSession> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    let mut s = Scan {
        sidechain,
        cut,
        path,
        number: 0,
        full,
        messages: Vec::new(),
        last_role: None,
        turns: 0,
        cwd: None,
        last_uuid: None,
        meta: None,
        model: None,
        last_terminal_reason: None,
        last_error: None,
        prompts: 0,
        first_prompt: None,
        last_activity: None,
        session_id: None,
        repairs: Vec::new(),
        journal: Journaled::default(),
        spend: Spend::default(),
    };
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let mut lines = body.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let number = index + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        s.number = number;
        if let Err(e) = s.line(raw) {
            if lines.peek().is_none() && e.is_cut() {
                s.repairs.push(Repair::DroppedPartialLine { line: number, bytes: raw.len() });
                continue;
            }
            let path = path.to_owned();
            return Err(match e {
                LineError::NotUtf8 => SessionError::NotUtf8 { path, line: number },
                LineError::Json(source) => SessionError::Json { path, line: number, source },
            });
        }
    }
    s.finish()
}

enum LineError {
    NotUtf8,
    Json(serde_json::Error),
}

impl LineError {
    /// Whether the line is what a kill mid-write leaves: not UTF-8, or not (complete) JSON.
    fn is_cut(&self) -> bool {
        match self {
            LineError::NotUtf8 => true,
            LineError::Json(e) => matches!(e.classify(), Category::Syntax | Category::Eof),
        }
    }
}

impl From<serde_json::Error> for LineError {
    fn from(e: serde_json::Error) -> Self {
        LineError::Json(e)
    }
}

struct Scan<'p> {
    /// Reading a sidechain transcript: its `isSidechain` lines are the ones kept.
    sidechain: bool,
    cut: Option<Cut<'p>>,
    path: &'p Path,
    /// The 1-based number of the line being read.
    number: usize,
    full: bool,
    messages: Vec<Message>,
    last_role: Option<Role>,
    turns: usize,
    cwd: Option<String>,
    last_uuid: Option<String>,
    meta: Option<SessionMeta>,
    model: Option<String>,
    last_terminal_reason: Option<String>,
    last_error: Option<String>,
    prompts: usize,
    first_prompt: Option<String>,
    last_activity: Option<SystemTime>,
    session_id: Option<Uuid>,
    repairs: Vec<Repair>,
    journal: Journaled,
    spend: Spend,
}

/// What the replies recorded in a transcript cost, counted as it is read.
#[derive(Default)]
struct Spend {
    usd: f64,
    /// Replies already counted, by message id (Claude Code writes a reply as several lines).
    counted: std::collections::HashSet<String>,
    unpriced: std::collections::BTreeSet<String>,
}

impl Spend {
    /// Count the reply `wire` (a main-chain assistant line), priced as its model, else as
    /// `model` (the session's).
    fn note(&mut self, wire: &WireMessage, model: Option<&str>) {
        let Some(usage) = &wire.usage else { return };
        if let Some(id) = &wire.id
            && !self.counted.insert(id.clone())
        {
            return;
        }
        let Some(model) = wire.model.as_deref().filter(|m| *m != line::SYNTHETIC_MODEL).or(model) else { return };
        match crate::model::anthropic::cost_usd(model, usage) {
            Some(cost) => self.usd += cost,
            None => {
                self.unpriced.insert(model.to_owned());
            }
        }
    }
}

impl Scan<'_> {
    fn line(&mut self, raw: &[u8]) -> Result<(), LineError> {
        let text = simdutf8::basic::from_utf8(raw).map_err(|_| LineError::NotUtf8)?;
        let head: Head<'_> = serde_json::from_str(text)?;
        let mut cut_here = false;
        if let Some(cut) = &mut self.cut {
            if cut.found {
                if let Some(check) = &mut cut.drops {
                    check.line(text, &head);
                }
                return Ok(());
            }
            cut_here = head.uuid.as_deref() == Some(cut.at) && head.is_sidechain != Some(true);
            cut.found = cut_here;
        }
        if let Some(t) = head.timestamp.as_deref().and_then(parse_rfc3339) {
            self.last_activity = Some(t);
        }
        if self.session_id.is_none() {
            self.session_id = head.session_id.as_deref().and_then(|s| Uuid::parse(s).ok());
        }
        if (head.is_sidechain == Some(true)) != self.sidechain {
            return Ok(());
        }
        match head.kind.as_deref() {
            Some(kind @ (line::USER | line::ASSISTANT)) => {
                let role = if kind == line::USER { Role::User } else { Role::Assistant };
                let needs_prompt = role == Role::User && self.first_prompt.is_none();
                if self.full || needs_prompt {
                    let parsed: MessageLineIn = serde_json::from_str(text)?;
                    self.note_cwd(parsed.cwd);
                    if role == Role::Assistant {
                        self.spend.note(&parsed.message, self.model.as_deref());
                    }
                    let mut message = self.take_wire(parsed.message);
                    if self.full {
                        self.drop_unpaired_results(&mut message);
                        push_merging(&mut self.messages, message);
                    } else if !message.content.is_empty() {
                        self.count_role(message.role);
                    }
                } else {
                    self.count_role(role);
                }
                self.last_uuid = head.uuid;
            }
            Some(line::META) => {
                let parsed: MetaLineIn = serde_json::from_str(text)?;
                self.note_cwd(parsed.cwd);
                self.model = Some(parsed.meta.model.clone());
                self.meta = Some(parsed.meta);
            }
            Some(line::PROMPT_END) => {
                let parsed: PromptEndIn = serde_json::from_str(text)?;
                self.last_terminal_reason = Some(parsed.terminal_reason);
                self.last_error = parsed.error;
                self.prompts += 1;
            }
            Some(line::HISTORY) => {
                let parsed: HistoryIn = serde_json::from_str(text)?;
                let leaf = parsed.leaf_uuid;
                let mut messages = Vec::with_capacity(parsed.messages.len());
                for wire in parsed.messages {
                    let message = self.take_wire(wire);
                    push_merging(&mut messages, message);
                }
                // The blocks dropped so far belong to messages the snapshot replaces.
                self.forget_dropped_results();
                self.turns = messages.iter().filter(|m| m.role == Role::Assistant).count();
                self.last_role = messages.last().map(|m| m.role);
                if self.full {
                    self.messages = messages;
                }
                self.last_uuid = leaf;
            }
            Some(journal::TOOL) => {
                if self.full {
                    self.journal.note(serde_json::from_str::<JournalLine>(text)?);
                }
            }
            Some(line::SYSTEM) if head.subtype.as_deref() == Some(line::COMPACT_BOUNDARY) => {
                // Claude Code's compaction: the history starts again after this line (its
                // summary follows as a user message).
                self.messages.clear();
                self.forget_dropped_results();
                self.turns = 0;
                self.last_role = None;
                self.last_uuid = head.uuid;
            }
            _ => {
                // Claude Code's own lines: those in the uuid chain (attachments, system
                // lines) are the parent of the next message line.
                if head.uuid.is_some() {
                    self.last_uuid = head.uuid;
                }
            }
        }
        if cut_here {
            // A line of Claude Code's that is no message (an attachment) may be the cut too.
            self.last_uuid = self.cut.as_ref().map(|c| c.at.to_owned());
        }
        Ok(())
    }

    fn note_cwd(&mut self, cwd: Option<String>) {
        if self.cwd.is_none() {
            self.cwd = cwd;
        }
    }

    /// The message of a wire message, noting its model and (for the first user text) prompt.
    fn take_wire(&mut self, wire: WireMessage) -> Message {
        // A message agentloop made itself names no model.
        if wire.role == Role::Assistant && wire.model.as_deref().is_some_and(|m| m != line::SYNTHETIC_MODEL) {
            self.model = wire.model.clone();
        }
        let message = wire.into_message();
        if message.role == Role::User && self.first_prompt.is_none() {
            self.first_prompt = message.content.iter().find_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.clone()),
                _ => None,
            });
        }
        message
    }

    /// Drop the `tool_result` blocks of a user message about to be merged into the history
    /// that answer no call of the assistant message before it, or a call already answered in
    /// the user message it joins, noting each with the line number.
    fn drop_unpaired_results(&mut self, message: &mut Message) {
        if message.role != Role::User || !message.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. })) {
            return;
        }
        let joins = self.messages.last().filter(|m| m.role == Role::User);
        let before = match joins {
            Some(_) => self.messages.len().checked_sub(2).map(|i| &self.messages[i]),
            None => self.messages.last(),
        };
        let calls: Vec<String> = before.into_iter().flat_map(|m| m.tool_uses().map(|t| t.id.to_owned())).collect();
        let mut answered: Vec<String> = joins
            .into_iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                _ => None,
            })
            .collect();
        let line = self.number;
        let repairs = &mut self.repairs;
        message.content.retain(|block| {
            let ContentBlock::ToolResult { tool_use_id, .. } = block else { return true };
            let why = if !calls.contains(tool_use_id) {
                Unpaired::NoCall
            } else if answered.contains(tool_use_id) {
                Unpaired::Repeated
            } else {
                answered.push(tool_use_id.clone());
                return true;
            };
            repairs.push(Repair::DroppedToolResult { line, tool_use_id: tool_use_id.clone(), why });
            false
        });
    }

    /// Forget the `tool_result` blocks dropped so far: the history they were dropped from is
    /// replaced.
    fn forget_dropped_results(&mut self) {
        self.repairs.retain(|r| !matches!(r, Repair::DroppedToolResult { .. }));
    }

    /// Count an assistant message the way merging would (summary pass).
    fn count_role(&mut self, role: Role) {
        if self.last_role != Some(role) && role == Role::Assistant {
            self.turns += 1;
        }
        self.last_role = Some(role);
    }

    fn finish(self) -> Result<LoadedSession> {
        let path = self.path.to_owned();
        let cut = match self.cut {
            None => None,
            Some(Cut { at, found: false, .. }) => return Err(SessionError::NoMessage { uuid: at.to_owned() }),
            Some(Cut { at, drops: Some(check), .. }) => match check.refusal {
                Some(reason) => {
                    return Err(SessionError::ResumeRefused { at: at.to_owned(), turn: check.turn, reason });
                }
                None => Some(at.to_owned()),
            },
            Some(Cut { at, drops: None, .. }) => Some(at.to_owned()),
        };
        let from_name = path.file_stem().and_then(|s| s.to_str()).and_then(|s| Uuid::parse(s).ok());
        let session_id = from_name.or(self.session_id).ok_or(SessionError::NoSessionId { path: path.clone() })?;
        let turns =
            if self.full { self.messages.iter().filter(|m| m.role == Role::Assistant).count() } else { self.turns };
        Ok(LoadedSession {
            path,
            session_id,
            cwd: self.cwd.map(PathBuf::from),
            messages: self.messages,
            last_uuid: self.last_uuid,
            meta: self.meta,
            model: self.model,
            last_terminal_reason: self.last_terminal_reason,
            last_error: self.last_error,
            turns,
            prompts: self.prompts,
            first_prompt: self.first_prompt,
            last_activity: self.last_activity,
            repairs: self.repairs,
            cut,
            journal: self.journal,
            spent_usd: self.spend.usd,
            unpriced_models: self.spend.unpriced.into_iter().collect(),
        })
    }
}

/// A cut of the history ([`load_cut`]).
struct Cut<'a> {
    /// The uuid of the last line kept.
    at: &'a str,
    /// Whether that line was read: the lines after it are dropped.
    found: bool,
    /// The check of what is dropped, with `--resume-drops-turn`.
    drops: Option<DropCheck>,
}

/// Checks that the lines a cut drops are one turn's ([`load_cut`]).
struct DropCheck {
    /// The uuid of the prompt whose turn may be dropped.
    turn: String,
    /// Lines of the uuid chain seen so far in the dropped range.
    entries: usize,
    /// Where the range is.
    at: TurnPosition,
    /// The first reason to refuse.
    refusal: Option<String>,
}

/// How far into the dropped range a [`DropCheck`] is.
enum TurnPosition {
    /// Before the declared prompt.
    Before,
    /// In its turn: the prompt's `promptId`, whether agentloop wrote it, and whether the
    /// turn's `agentloop-prompt-end` line came.
    In { prompt_id: Option<String>, ours: bool, ended: bool },
}

impl DropCheck {
    fn new(turn: &str) -> DropCheck {
        let refusal = Uuid::parse(turn).is_err().then(|| format!("declared turn id is not a UUID: {turn}"));
        DropCheck { turn: turn.to_owned(), entries: 0, at: TurnPosition::Before, refusal }
    }

    /// Look at one dropped line (its head already read).
    fn line(&mut self, text: &str, head: &Head<'_>) {
        if self.refusal.is_some() || head.is_sidechain == Some(true) {
            return;
        }
        let kind = head.kind.as_deref().unwrap_or_default();
        let index = self.entries;
        if head.uuid.is_some() {
            self.entries += 1;
        }
        let entry = || format!("entry {index} [type={kind}, uuid={}]", head.uuid.as_deref().unwrap_or_default());
        let refuse = match (kind, &mut self.at) {
            (line::HISTORY, _) => {
                Some(format!("range contains a history snapshot; {}", entry_without_uuid(index, kind)))
            }
            (line::PROMPT_END, TurnPosition::In { ended, .. }) => {
                *ended = true;
                None
            }
            (line::USER | line::ASSISTANT, at) => {
                let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
                Self::message(kind, &value, head.uuid.as_deref(), &self.turn, at).map(|why| match why {
                    Why::NotTheTurn => {
                        format!("range does not start with the declared turn prompt; first discarded {}", entry())
                    }
                    other => format!("{}; {}", other.text(), entry()),
                })
            }
            ("attachment", TurnPosition::In { .. }) if attachment_type(text).as_deref() == Some("queued_command") => {
                Some(format!("range contains absorbed queued content; {}", entry()))
            }
            // Claude Code's attachments, system and progress lines, agentloop's meta lines and
            // bookkeeping lines of any program are no part of a turn's conversation.
            _ => None,
        };
        self.refusal = refuse;
    }

    /// Why a dropped user or assistant line refuses the cut, if it does; moves `at` into the
    /// turn at its prompt.
    fn message(
        kind: &str,
        value: &serde_json::Value,
        uuid: Option<&str>,
        turn: &str,
        at: &mut TurnPosition,
    ) -> Option<Why> {
        let content = &value["message"]["content"];
        let results_only = content
            .as_array()
            .is_some_and(|blocks| !blocks.is_empty() && blocks.iter().all(|b| b["type"] == "tool_result"));
        let is_meta = value["isMeta"] == true;
        let prompt_id = value["promptId"].as_str();
        let ours = value["entrypoint"] == "agentloop";
        match at {
            TurnPosition::Before if kind == line::USER && uuid == Some(turn) => {
                if results_only || is_meta {
                    return Some(Why::NotAPrompt);
                }
                *at = TurnPosition::In { prompt_id: prompt_id.map(str::to_owned), ours, ended: false };
                None
            }
            TurnPosition::Before => Some(Why::NotTheTurn),
            TurnPosition::In { ended: true, .. } => Some(Why::LaterTurn),
            TurnPosition::In { .. } if kind == line::ASSISTANT => None,
            TurnPosition::In { prompt_id: turn_prompt, ours: turn_ours, .. } => {
                let same_prompt = prompt_id.is_some() && prompt_id == turn_prompt.as_deref();
                if results_only || is_meta || same_prompt || (*turn_ours && ours) {
                    None
                } else {
                    Some(Why::Unattributable)
                }
            }
        }
    }
}

/// Why a dropped message line refuses a cut.
enum Why {
    /// The range does not start with the declared prompt.
    NotTheTurn,
    /// The declared uuid is a user line that is no prompt.
    NotAPrompt,
    /// A line after the declared turn's end.
    LaterTurn,
    /// A user line in the turn that is none of its own.
    Unattributable,
}

impl Why {
    fn text(&self) -> &'static str {
        match self {
            Why::NotTheTurn => "range does not start with the declared turn prompt",
            Why::NotAPrompt => "declared turn id names a non-prompt user entry",
            Why::LaterTurn => "range contains an entry of a later turn",
            Why::Unattributable => "range contains a user entry not attributable to the declared turn",
        }
    }
}

/// How a dropped line without a uuid is named in a refusal.
fn entry_without_uuid(index: usize, kind: &str) -> String {
    format!("after entry {index} [type={kind}]")
}

/// The `attachment.type` of an attachment line.
fn attachment_type(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value["attachment"]["type"].as_str().map(str::to_owned)
}

/// Append `message`, merging it into the last one when both have the same role; empty
/// messages are dropped ([`Transcript::push_merging`](crate::protocol::Transcript::push_merging)).
pub(crate) fn push_merging(messages: &mut Vec<Message>, message: Message) {
    if message.content.is_empty() {
        return;
    }
    match messages.last_mut() {
        Some(last) if last.role == message.role => last.content.extend(message.content),
        _ => messages.push(message),
    }
}

/// What must happen to the end of `bytes` before a line is appended: the rule [`scan`] uses
/// to drop a final line (not UTF-8 or not JSON) applied to the file.
pub(crate) fn final_line_fix(bytes: &[u8]) -> TailFix {
    let terminated = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
    let last = &body[start..];
    if last.iter().all(u8::is_ascii_whitespace) {
        return TailFix::None;
    }
    let is_json = simdutf8::basic::from_utf8(last).is_ok_and(|t| serde_json::from_str::<IgnoredAny>(t).is_ok());
    match (is_json, terminated) {
        (false, _) => TailFix::Truncate(start),
        (true, false) => TailFix::Newline,
        (true, true) => TailFix::None,
    }
}
