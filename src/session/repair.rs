//! Exact recovery: make a loaded history valid for the next request the way the live abort
//! path does.

use std::collections::HashMap;

use super::journal::{Journaled, PendingCall, PendingTools, Recovered};
use crate::engine::acting::INTERRUPTED_TOOLS;
use crate::protocol::{ContentBlock, Message, Role};
use crate::tools::orchestrate::OUTCOME_UNKNOWN_RESULT;

/// Result text of a call the tool journal shows never started: the run stopped first.
pub const NOT_STARTED_RESULT: &str = "Interrupted: the run stopped before this tool started; it did not run";

/// One thing loading or [`repair`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// The final line was not JSON (a kill cut it mid-write) and was ignored.
    DroppedPartialLine {
        /// Its 1-based line number.
        line: usize,
        /// Its length in bytes.
        bytes: usize,
    },
    /// A `tool_result` block of a user line was dropped: it answered no `tool_use` of the
    /// assistant message before it, or a call already answered. The API refuses a history
    /// with such a block, so keeping it would fail every later request.
    DroppedToolResult {
        /// The 1-based line number of the user line that held it.
        line: usize,
        /// The id it answered.
        tool_use_id: String,
        /// Why it was dropped.
        why: Unpaired,
    },
    /// Tool calls without a result were answered with an error result.
    AnsweredToolUses {
        /// Index of the assistant message holding the calls, in the repaired history.
        message: usize,
        /// The ids of the calls answered, in call order.
        tool_use_ids: Vec<String>,
        /// Whether a new user message was inserted for them (else the following user message,
        /// which had some of the results, got the others).
        new_message: bool,
    },
    /// Tool calls without a result in the history were answered from the tool journal
    /// (`super::journal`): each by its journaled result, or as interrupted or never started.
    RecoveredToolUses {
        /// Index of the assistant message holding the calls, in the repaired history.
        message: usize,
        /// Calls that had finished: their journaled results, as they were.
        replayed: Vec<String>,
        /// Calls that started and did not finish: answered as interrupted, outcome unknown.
        interrupted: Vec<String>,
        /// Calls that never started: answered as not run.
        not_started: Vec<String>,
        /// Calls that started, only read and did not finish: left for the resumed run to run
        /// again ([`repair_resuming`]).
        rerun: Vec<String>,
        /// Calls that never started: left for the resumed run to run ([`repair_resuming`]).
        run: Vec<String>,
        /// Whether a new user message was inserted for them.
        new_message: bool,
    },
}

/// Why a `tool_result` block was dropped ([`Repair::DroppedToolResult`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpaired {
    /// The assistant message before it has no `tool_use` with its id.
    NoCall,
    /// An earlier block of the same user message already answered that call.
    Repeated,
}

impl Unpaired {
    /// What the warning says of the block.
    pub fn describe(self) -> &'static str {
        match self {
            Unpaired::NoCall => "it answers no tool_use of the assistant message before it",
            Unpaired::Repeated => "that call already has a result",
        }
    }
}

/// What [`repair`] did, and how to record it in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct RepairReport {
    /// The changes, in history order (after the load's own, for
    /// [`LoadedSession::repair`](super::LoadedSession::repair)).
    pub repairs: Vec<Repair>,
    /// How to write the repaired history to the file
    /// ([`TranscriptWriter::record_repair`](super::TranscriptWriter::record_repair)).
    pub write: RepairWrite,
}

/// How a repair is recorded so that loading the file again yields the repaired history.
#[derive(Debug, Clone, PartialEq)]
pub enum RepairWrite {
    /// The history was not changed.
    Nothing,
    /// The change is at the end: appending these messages (merged on load into the last
    /// message when it has the same role) gives the repaired history.
    Append(Vec<Message>),
    /// A message before the end changed, or existing blocks were reordered: write a
    /// `agentloop-history` snapshot of the repaired history.
    Snapshot,
}

/// Make `messages` valid for the next API request, as the engine's abort paths leave a
/// history (`Machine::abort_tools`): every assistant `tool_use` without a `tool_result` in the
/// next message gets one. When `journal` names a call of the reply, each call gets what the
/// journal says: its result, if it finished (replayed as it was); an `is_error` result saying
/// [`OUTCOME_UNKNOWN_RESULT`] if it started and did not finish; [`NOT_STARTED_RESULT`] if it
/// never started. Without a journal every call gets [`OUTCOME_UNKNOWN_RESULT`]: the call was
/// written before its tool started, so it may have run (and may still be running). The
/// [`INTERRUPTED_TOOLS`] text below is added only when some result was made up: a kill after
/// the last call finished leaves the history an uninterrupted run would have.
///
/// - When the next message is a user message that answers some of the calls, the results are
///   put in call order (existing results kept as they are, the missing ones synthesized),
///   followed by the message's other blocks and an [`INTERRUPTED_TOOLS`] text.
/// - Otherwise a user message with the results in call order and an [`INTERRUPTED_TOOLS`]
///   text is inserted after the assistant message.
///
/// No two consecutive messages end up with the same role (the history came from
/// [`load`](super::load), which merges them). A history ending with an assistant message
/// without calls, or with a user message, is left as is.
pub fn repair(messages: &mut Vec<Message>, journal: &Journaled) -> RepairReport {
    repair_with(messages, journal, false).0
}

/// [`repair`] for a run that goes on from the history: when the history ends with a reply
/// whose tool phase a kill cut off, the journal names its calls, and some of them can run
/// (one never started, or one that only reads started and did not finish), that reply is
/// left unanswered and returned as [`PendingTools`] for the resumed run to finish
/// (`prepare.resume_tools`), which runs those calls and answers the others as [`repair`]
/// would. Everything else is repaired as [`repair`] does.
pub fn repair_resuming(messages: &mut Vec<Message>, journal: &Journaled) -> (RepairReport, Option<PendingTools>) {
    repair_with(messages, journal, true)
}

fn repair_with(
    messages: &mut Vec<Message>,
    journal: &Journaled,
    resuming: bool,
) -> (RepairReport, Option<PendingTools>) {
    let mut repairs = Vec::new();
    let mut pending = None;
    let mut append = None;
    let mut snapshot = false;
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role != Role::Assistant {
            i += 1;
            continue;
        }
        // One answer per id: a reply that repeats an id gets one result for it, as the loader
        // keeps only the first result for a call.
        let mut calls: Vec<String> = Vec::new();
        for id in messages[i].tool_uses().map(|t| t.id) {
            if !calls.iter().any(|c| c == id) {
                calls.push(id.to_owned());
            }
        }
        if calls.is_empty() {
            i += 1;
            continue;
        }
        let next_is_user = messages.get(i + 1).is_some_and(|m| m.role == Role::User);
        if next_is_user {
            let next = &mut messages[i + 1];
            let missing: Vec<String> = calls.iter().filter(|id| !answers(next, id)).cloned().collect();
            if missing.is_empty() {
                i += 2;
                continue;
            }
            let old = std::mem::take(&mut next.content);
            let mut results: HashMap<&str, ContentBlock> = HashMap::new();
            let mut others = Vec::new();
            for block in &old {
                match block {
                    ContentBlock::ToolResult { tool_use_id, .. }
                        if calls.contains(tool_use_id) && !results.contains_key(tool_use_id.as_str()) =>
                    {
                        results.insert(tool_use_id, block.clone());
                    }
                    _ => others.push(block.clone()),
                }
            }
            let mut answers = Answers::new(journal, &calls);
            let mut content: Vec<ContentBlock> =
                calls.iter().map(|id| results.remove(id.as_str()).unwrap_or_else(|| answers.answer(id))).collect();
            content.extend(others);
            if answers.synthesized() {
                content.push(ContentBlock::text(INTERRUPTED_TOOLS));
            }
            let at_end = i + 2 == messages.len();
            if at_end && content.starts_with(&old) {
                append = Some(Message { role: Role::User, content: content[old.len()..].to_vec() });
            } else {
                snapshot = true;
            }
            messages[i + 1].content = content;
            repairs.push(answers.report(i, missing, false));
        } else if let Some(left) =
            (resuming && i + 1 == messages.len()).then(|| pending_of(&messages[i], i, &calls, journal)).flatten()
        {
            repairs.push(left.1);
            pending = Some(left.0);
        } else {
            let mut answers = Answers::new(journal, &calls);
            let mut content: Vec<ContentBlock> = calls.iter().map(|id| answers.answer(id)).collect();
            if answers.synthesized() {
                content.push(ContentBlock::text(INTERRUPTED_TOOLS));
            }
            let message = Message { role: Role::User, content };
            if i + 1 == messages.len() {
                append = Some(message.clone());
            } else {
                snapshot = true;
            }
            messages.insert(i + 1, message);
            repairs.push(answers.report(i, calls.clone(), true));
        }
        i += 2;
    }
    let write = match (snapshot, append) {
        (true, _) => RepairWrite::Snapshot,
        (false, Some(message)) => RepairWrite::Append(vec![message]),
        (false, None) => RepairWrite::Nothing,
    };
    (RepairReport { repairs, write }, pending)
}

/// The cut tool phase of `reply`, the history's last message (at `message`), with calls
/// `calls`, when the journal names them all and some can run: with its repair for the report.
fn pending_of(
    reply: &Message,
    message: usize,
    calls: &[String],
    journal: &Journaled,
) -> Option<(PendingTools, Repair)> {
    let mut answers = Answers::new(journal, calls);
    let settled: Vec<Option<ContentBlock>> = calls.iter().map(|id| answers.settle(id)).collect();
    if !answers.unknown.is_empty() || (answers.rerun.is_empty() && answers.run.is_empty()) {
        return None;
    }
    let calls = calls
        .iter()
        .zip(settled)
        .map(|(id, result)| Some(PendingCall { call: reply.tool_uses().find(|t| t.id == id)?.into(), result }))
        .collect::<Option<Vec<_>>>()?;
    let pending = PendingTools { calls, interrupted: !answers.interrupted.is_empty() };
    Some((pending, answers.report(message, Vec::new(), false)))
}

/// The results of one reply's calls left without one, and what the journal said of them.
struct Answers<'a> {
    journal: &'a Journaled,
    calls: &'a [String],
    replayed: Vec<String>,
    interrupted: Vec<String>,
    not_started: Vec<String>,
    /// Calls a resumed run runs again: they only read and did not finish ([`Answers::settle`]).
    rerun: Vec<String>,
    /// Calls a resumed run runs: they never started ([`Answers::settle`]).
    run: Vec<String>,
    /// Calls the journal knows nothing of (a transcript written without one).
    unknown: Vec<String>,
}

impl<'a> Answers<'a> {
    fn new(journal: &'a Journaled, calls: &'a [String]) -> Self {
        Answers {
            journal,
            calls,
            replayed: Vec::new(),
            interrupted: Vec::new(),
            not_started: Vec::new(),
            rerun: Vec::new(),
            run: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// The result of call `id`, which has none in the history.
    fn answer(&mut self, id: &str) -> ContentBlock {
        let recovered = self.journal.recover(id, self.calls);
        self.answer_as(id, recovered)
    }

    /// [`Answers::answer`] for a resumed run that finishes the phase: `None` for a call it is
    /// to run (one that never started, or one that only reads and did not finish).
    fn settle(&mut self, id: &str) -> Option<ContentBlock> {
        match self.journal.recover(id, self.calls) {
            Recovered::Interrupted { read_only: true } => {
                self.rerun.push(id.to_owned());
                None
            }
            Recovered::NotStarted => {
                self.run.push(id.to_owned());
                None
            }
            recovered => Some(self.answer_as(id, recovered)),
        }
    }

    /// The result of call `id`, given what the journal says of it.
    fn answer_as(&mut self, id: &str, recovered: Recovered) -> ContentBlock {
        match recovered {
            Recovered::Replayed(result) => {
                self.replayed.push(id.to_owned());
                result
            }
            Recovered::Interrupted { .. } => {
                self.interrupted.push(id.to_owned());
                interrupted(id)
            }
            Recovered::NotStarted => {
                self.not_started.push(id.to_owned());
                ContentBlock::tool_result(id, NOT_STARTED_RESULT, true)
            }
            Recovered::Unknown => {
                self.unknown.push(id.to_owned());
                interrupted(id)
            }
        }
    }

    /// Whether some result was made up (so the reply was interrupted), not replayed.
    fn synthesized(&self) -> bool {
        !(self.interrupted.is_empty() && self.not_started.is_empty() && self.unknown.is_empty())
    }

    /// The repair of the calls `missing` of message `message`.
    fn report(self, message: usize, missing: Vec<String>, new_message: bool) -> Repair {
        if self.unknown.is_empty() {
            Repair::RecoveredToolUses {
                message,
                replayed: self.replayed,
                interrupted: self.interrupted,
                not_started: self.not_started,
                rerun: self.rerun,
                run: self.run,
                new_message,
            }
        } else {
            Repair::AnsweredToolUses { message, tool_use_ids: missing, new_message }
        }
    }
}

fn answers(message: &Message, id: &str) -> bool {
    message.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id))
}

fn interrupted(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, OUTCOME_UNKNOWN_RESULT, true)
}
