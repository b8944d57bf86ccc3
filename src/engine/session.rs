//! A conversation that outlives one prompt: its id, its history, and the transcript it is
//! written to as the loop goes.
//!
//! [`crate::engine::run::run_prompt`] runs one *turn sequence* on a session — one user prompt
//! until a terminal reason — and appends to it; the next prompt sends the grown history. A
//! terminal reason ends the prompt, not the session. The transcript ([`TranscriptWriter`])
//! gets one line per message as it is appended, so a killed process loses at most the message
//! in flight, and a line for each history rewrite (collapse, compaction) and prompt end.

use std::path::PathBuf;
use std::sync::Arc;

use crate::context::memory::nested::NestedMemory;
use crate::engine::events::EngineEvent;
use crate::protocol::{Message, Transcript};
use crate::session::{HistoryReason, LineInfo, ReplyInfo, SessionMeta, TranscriptWriter, Uuid};
use crate::tools::background::BackgroundShells;

/// One conversation.
pub struct Session {
    /// Its id (UUID v4): the transcript's file name, the hooks' `session_id`, the output's
    /// `session_id`, the trace header's `run_id`.
    pub id: Uuid,
    /// The working directory it belongs to.
    pub cwd: PathBuf,
    /// The conversation so far, exactly as the model saw it last.
    pub messages: Transcript,
    /// Where it is written; `None` for a session kept in memory only.
    pub transcript: Option<TranscriptWriter>,
    /// Prompts run on it in this process.
    pub prompts: u32,
    /// What its prompts in this process cost, in US dollars: `--max-budget-usd` caps the
    /// session's spend, not each prompt's.
    pub cost_usd: f64,
    /// What its last main request left in the prompt cache, which the next prompt's first
    /// request reads ([`crate::engine::budget`] prices it so).
    pub cached_prefix: Option<crate::engine::budget::CachedPrefix>,
    /// Its background shells: they outlive a prompt, and are killed when the session is
    /// dropped.
    pub background: Arc<BackgroundShells>,
    /// Its todo list (`TodoWrite`): it outlives a prompt.
    pub todos: Arc<crate::tools::todo::TodoList>,
    /// The memory its tool calls attach as they touch files ([`NestedMemory`]), and what
    /// they attached: it outlives a prompt, and its subagents share it. A new session attaches
    /// nothing until a front end gives it the session's (`NestedMemory::restarted` for a new
    /// conversation of the same run).
    pub nested_memory: Arc<NestedMemory>,
    /// What resuming it recovered from the tool journal of a run a kill cut off in its tool
    /// phase, for the next run's trace header; `None` otherwise.
    pub recovered: Option<crate::session::RecoveredCalls>,
    /// The tool phase a kill cut off that its next run finishes before sending its prompt
    /// (`prepare.resume_tools`): the calls that never started, and the read-only ones that did
    /// not finish, run then. Taken by that run.
    pub pending_tools: Option<crate::session::PendingTools>,
    /// What its transcript records as spent by earlier processes (a resumed session's replies
    /// and its subagents'), in US dollars: `--max-budget-usd` counts it as already spent.
    pub spent_earlier_usd: f64,
}

impl Session {
    /// A new, empty session kept in memory only.
    pub fn in_memory(id: Uuid, cwd: PathBuf) -> Session {
        Session {
            id,
            cwd,
            messages: Transcript::default(),
            transcript: None,
            prompts: 0,
            cost_usd: 0.0,
            cached_prefix: None,
            background: Arc::default(),
            todos: Arc::default(),
            nested_memory: Arc::default(),
            recovered: None,
            pending_tools: None,
            spent_earlier_usd: 0.0,
        }
    }

    /// A session written to `transcript`, starting from `history` (empty for a new one; the
    /// loaded, repaired history for a resumed one).
    pub fn persisted(transcript: TranscriptWriter, cwd: PathBuf, history: Vec<Message>) -> Session {
        Session {
            id: transcript.session_id(),
            cwd,
            messages: Transcript::from(history),
            transcript: Some(transcript),
            prompts: 0,
            cost_usd: 0.0,
            cached_prefix: None,
            background: Arc::default(),
            todos: Arc::default(),
            nested_memory: Arc::default(),
            recovered: None,
            pending_tools: None,
            spent_earlier_usd: 0.0,
        }
    }

    /// Write the session's meta line (model, table, permission mode).
    ///
    /// # Errors
    /// The transcript's write error.
    pub fn write_meta(&mut self, meta: &SessionMeta) -> Result<(), crate::session::SessionError> {
        match &mut self.transcript {
            Some(t) => t.meta(meta),
            None => Ok(()),
        }
    }
}

/// The transcript while a prompt runs: writes what the engine appends, and turns the first
/// write error into one warning (the run goes on; the transcript stops).
#[derive(Default)]
pub struct TranscriptLog {
    writer: Option<TranscriptWriter>,
    /// The prompt whose turn sequence runs: every line written carries it (`promptId`).
    prompt_id: Option<Uuid>,
}

impl TranscriptLog {
    /// Log to `writer`, if any.
    pub fn new(writer: Option<TranscriptWriter>) -> TranscriptLog {
        TranscriptLog { writer, prompt_id: None }
    }

    /// Write the prompt that starts a turn sequence: its line has uuid `uuid`, its text as a
    /// plain string (as Claude Code stores a prompt), its `origin` if it has one, and a fresh
    /// `promptId` (`prompt_id`) that the lines after it (until the next prompt) carry too.
    pub fn prompt(
        &mut self,
        message: &Message,
        uuid: Uuid,
        prompt_id: Uuid,
        origin: Option<&serde_json::Value>,
    ) -> Option<EngineEvent> {
        self.prompt_id = Some(prompt_id);
        let info = LineInfo { uuid: Some(uuid), prompt_id: Some(prompt_id), text_prompt: true, origin, reply: None };
        let result = self.writer.as_mut()?.append_with(message, &info).map(|_| ());
        self.fail_on(result)
    }

    /// The transcript file, while it is written.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.writer.as_ref().map(TranscriptWriter::path)
    }

    /// Give the writer back (after the prompt).
    pub fn into_writer(self) -> Option<TranscriptWriter> {
        self.writer
    }

    /// Write one appended message as the line `uuid` (with the API's `reply` info for a reply
    /// of the model); a warning event if writing failed.
    pub fn message(&mut self, message: &Message, uuid: Uuid, reply: Option<&ReplyInfo>) -> Option<EngineEvent> {
        let info = LineInfo { uuid: Some(uuid), prompt_id: self.prompt_id, reply, ..LineInfo::default() };
        let result = self.writer.as_mut()?.append_with(message, &info).map(|_| ());
        self.fail_on(result)
    }

    /// Write the whole history after it was rewritten in place.
    pub fn history(&mut self, messages: &[Message], reason: HistoryReason) -> Option<EngineEvent> {
        let result = self.writer.as_mut()?.history(messages, reason);
        self.fail_on(result)
    }

    /// Write how the prompt ended.
    pub fn prompt_end(&mut self, terminal: &str, error: Option<&str>, turns: u32) -> Option<EngineEvent> {
        let result = self.writer.as_mut()?.prompt_end(terminal, error, turns);
        self.fail_on(result)
    }

    fn fail_on(&mut self, result: Result<(), crate::session::SessionError>) -> Option<EngineEvent> {
        let error = result.err()?;
        self.writer = None;
        Some(EngineEvent::Warning(format!("the session transcript is no longer written: {error}")))
    }
}
