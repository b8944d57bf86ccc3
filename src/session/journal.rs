//! The tool journal: a line in the session's transcript the moment a tool call is about to
//! start, and another the moment its result is known, so that a run killed while its tools
//! ran resumes with what it finished.
//!
//! A kill in ExecuteTools used to cost every result of the phase: the results reach the
//! transcript in one user message once all calls are done, so `--resume` answered every call
//! of the cut phase as interrupted, a finished ten-minute test run among them. With the
//! journal the loader knows, for each call of the last reply ([`Journaled`]), whether it
//! finished (its result is replayed as it was), started without finishing (its effects are
//! unknown: the model is told so), or never started (the model is told it did not run).
//!
//! Lines are `{"type":"agentloop-tool","phase":"start"|"end",…}`: Claude Code's transcript
//! readers skip types they do not know. The start line is written by the call's task once
//! nothing stands between the call and its effects (its permission granted, its PreToolUse
//! hooks passed), so a call a kill stopped while it waited for an answer never started; the
//! end line by the task that drives the tool phase, the one that writes the message lines.
//! Each line is one `write(2)` on the transcript's `O_APPEND` descriptor, so lines written
//! from two threads do not interleave.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Mirror, Uuid};
use crate::protocol::ContentBlock;
use crate::tools::ToolCall;

/// `type` of a journal line.
pub const TOOL: &str = "agentloop-tool";

/// Where a run's tool calls are journaled: the session's transcript file, appended to.
#[derive(Clone)]
pub struct ToolJournal {
    file: Arc<File>,
    path: PathBuf,
    session_id: String,
    mirror: Option<Mirror>,
}

impl std::fmt::Debug for ToolJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolJournal").field("path", &self.path).finish()
    }
}

/// One journal line, as written and read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalLine {
    /// `start` or `end`.
    pub phase: Phase,
    /// The call.
    pub tool_use_id: String,
    /// The tool (on `start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether running the call again changes nothing (on `start`): it only reads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The call's `tool_result` block (on `end`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ContentBlock>,
}

/// A journal line's moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The run has the call and it has not started: it may wait for its turn, its hooks or
    /// a permission question's answer.
    Queued,
    /// The call is about to start.
    Start,
    /// The call's result is known.
    End,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LineOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    line: &'a JournalLine,
    session_id: &'a str,
    timestamp: String,
}

impl ToolJournal {
    /// A journal appending to `file`, the transcript at `path` of session `session_id`; lines
    /// are copied to `mirror` as the transcript's are.
    pub(crate) fn new(file: File, path: PathBuf, session_id: Uuid, mirror: Option<Mirror>) -> ToolJournal {
        ToolJournal { file: Arc::new(file), path, session_id: session_id.to_string(), mirror }
    }

    /// The run has the call `tool_use_id` of `name`; it has not started.
    pub fn queued(&self, tool_use_id: &str, name: &str) {
        self.write(&JournalLine {
            phase: Phase::Queued,
            tool_use_id: tool_use_id.to_owned(),
            name: Some(name.to_owned()),
            read_only: false,
            result: None,
        });
    }

    /// The call `tool_use_id` of `name` is about to start; `read_only` when running it again
    /// changes nothing.
    pub fn started(&self, tool_use_id: &str, name: &str, read_only: bool) {
        self.write(&JournalLine {
            phase: Phase::Start,
            tool_use_id: tool_use_id.to_owned(),
            name: Some(name.to_owned()),
            read_only,
            result: None,
        });
    }

    /// The call `tool_use_id` finished with `result` (its `tool_result` block).
    pub fn finished(&self, tool_use_id: &str, result: &ContentBlock) {
        self.write(&JournalLine {
            phase: Phase::End,
            tool_use_id: tool_use_id.to_owned(),
            name: None,
            read_only: false,
            result: Some(result.clone()),
        });
    }

    /// One line, in one write. A failure is not the run's: the journal only makes a later
    /// resume more exact, so it is reported once and the run goes on.
    fn write(&self, line: &JournalLine) {
        let out = LineOut {
            kind: TOOL,
            line,
            session_id: &self.session_id,
            timestamp: super::time::format_rfc3339_millis(std::time::SystemTime::now()),
        };
        let Ok(mut bytes) = serde_json::to_vec(&out) else { return };
        if let Some(mirror) = &self.mirror {
            mirror.send(&self.path, &bytes);
        }
        bytes.push(b'\n');
        if let Err(e) = (&*self.file).write_all(&bytes) {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                crate::stderr::line(&format!(
                    "agentloop: warning: cannot journal a tool call in {}: {e}",
                    self.path.display()
                ));
            });
        }
    }
}

/// What a transcript's journal says of its calls, by `tool_use` id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Journaled {
    calls: HashMap<String, Call>,
    /// Calls the run had that had not started (a `queued` line and no `start`).
    queued: std::collections::HashSet<String>,
}

/// What the journal says of one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// It only reads: running it again changes nothing.
    pub read_only: bool,
    /// Its result, once it finished.
    pub result: Option<ContentBlock>,
}

/// What a resume does with a call of the cut reply that has no result in the history.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovered {
    /// It finished before the kill: its journaled result, as it was.
    Replayed(ContentBlock),
    /// It started and did not finish: its effects are unknown (`read_only`: running it
    /// again would change nothing).
    Interrupted {
        /// The call only reads.
        read_only: bool,
    },
    /// It never started.
    NotStarted,
    /// The transcript has no journal for this reply (written before the journal existed, or
    /// without a transcript): nothing is known of it.
    Unknown,
}

impl Journaled {
    /// Take in one journal line.
    pub fn note(&mut self, line: JournalLine) {
        match line.phase {
            Phase::Queued => {
                self.queued.insert(line.tool_use_id);
            }
            Phase::Start => {
                self.calls.entry(line.tool_use_id).or_insert(Call { read_only: line.read_only, result: None });
            }
            Phase::End => {
                // Only a `tool_result` block, and always as the answer to this line's call,
                // whatever id the block itself names: a replayed result answers its call.
                let result = match line.result {
                    Some(ContentBlock::ToolResult { content, is_error, .. }) => {
                        Some(ContentBlock::ToolResult { tool_use_id: line.tool_use_id.clone(), content, is_error })
                    }
                    _ => None,
                };
                let call = self.calls.entry(line.tool_use_id).or_insert(Call { read_only: false, result: None });
                if call.result.is_none() {
                    call.result = result;
                }
            }
        }
    }

    /// Whether no call was journaled.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.queued.is_empty()
    }

    /// What is known of the call `id`, one of `calls` (the ids of one reply's calls): a call
    /// the journal does not name never started, if the journal names any call of the reply.
    pub fn recover(&self, id: &str, calls: &[String]) -> Recovered {
        match self.calls.get(id) {
            Some(Call { result: Some(result), .. }) => Recovered::Replayed(result.clone()),
            Some(Call { result: None, read_only }) => Recovered::Interrupted { read_only: *read_only },
            None if calls.iter().any(|c| self.calls.contains_key(c) || self.queued.contains(c)) => {
                Recovered::NotStarted
            }
            None => Recovered::Unknown,
        }
    }
}

/// The cut tool phase a resumed run finishes before it sends its prompt: the last reply's
/// calls, in call order, each with its result when the journal settles it, and without one
/// when the resumed run is to run it (it never started, or it started and only reads).
///
/// A call that started, may have changed something and did not finish is never run again: it
/// keeps [`OUTCOME_UNKNOWN_RESULT`](crate::tools::orchestrate::OUTCOME_UNKNOWN_RESULT) and the
/// model decides.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTools {
    /// The calls, in call order.
    pub calls: Vec<PendingCall>,
    /// Some call's result was made up (it started, may have changed something, and did not
    /// finish): the results are then followed by the interruption's text.
    pub interrupted: bool,
}

/// One call of a [`PendingTools`].
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// The call, as the model wrote it.
    pub call: ToolCall,
    /// Its result, when it is not to run: replayed from the journal, or made up for an
    /// interrupted call that may have changed something.
    pub result: Option<ContentBlock>,
}

impl PendingTools {
    /// The calls the resumed run runs, in call order.
    pub fn to_run(&self) -> Vec<ToolCall> {
        self.calls.iter().filter(|c| c.result.is_none()).map(|c| c.call.clone()).collect()
    }

    /// Every call's result in call order: the settled ones as they are, the others from
    /// `ran` (matched by `tool_use_id`); a call `ran` has no result for is answered as
    /// interrupted with its outcome unknown.
    pub fn merge(&self, ran: Vec<ContentBlock>) -> Vec<ContentBlock> {
        let mut ran: HashMap<String, ContentBlock> = ran
            .into_iter()
            .filter_map(|block| match &block {
                ContentBlock::ToolResult { tool_use_id, .. } => Some((tool_use_id.clone(), block)),
                _ => None,
            })
            .collect();
        self.calls
            .iter()
            .map(|c| match &c.result {
                Some(result) => result.clone(),
                None => ran.remove(&c.call.id).unwrap_or_else(|| {
                    ContentBlock::tool_result(&c.call.id, crate::tools::orchestrate::OUTCOME_UNKNOWN_RESULT, true)
                }),
            })
            .collect()
    }
}

/// What a resume recovered of the calls a kill cut off, by `tool_use` id: for the trace's
/// header (`recovered_calls`) and the resume's message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveredCalls {
    /// Calls whose journaled results were replayed.
    pub replayed: Vec<String>,
    /// Calls that started and did not finish: answered as interrupted, outcome unknown.
    pub interrupted: Vec<String>,
    /// Calls that never started, answered as not run (a resume that runs nothing itself).
    pub not_started: Vec<String>,
    /// Calls that started, only read and did not finish: the resumed run runs them again.
    pub rerun: Vec<String>,
    /// Calls that never started: the resumed run runs them now.
    pub run: Vec<String>,
}

impl RecoveredCalls {
    /// What the repairs `repairs` recovered from the journal; `None` when they recovered
    /// nothing from it.
    pub fn of(repairs: &[super::Repair]) -> Option<RecoveredCalls> {
        let mut out = RecoveredCalls::default();
        let mut any = false;
        for repair in repairs {
            if let super::Repair::RecoveredToolUses { replayed, interrupted, not_started, rerun, run, .. } = repair {
                any = true;
                out.replayed.extend(replayed.iter().cloned());
                out.interrupted.extend(interrupted.iter().cloned());
                out.not_started.extend(not_started.iter().cloned());
                out.rerun.extend(rerun.iter().cloned());
                out.run.extend(run.iter().cloned());
            }
        }
        any.then_some(out)
    }

    /// One line for a person: `1 result replayed (t1), 1 call interrupted, its outcome unknown
    /// (t2), 1 call never started (t3)`, each part only when it has calls.
    pub fn describe(&self) -> String {
        let counted = |ids: &[String], one: &str, many: &str| {
            (!ids.is_empty())
                .then(|| format!("{} {} ({})", ids.len(), if ids.len() == 1 { one } else { many }, ids.join(", ")))
        };
        [
            counted(&self.replayed, "result replayed", "results replayed"),
            counted(
                &self.interrupted,
                "call interrupted, its outcome unknown",
                "calls interrupted, their outcome unknown",
            ),
            counted(&self.not_started, "call never started", "calls never started"),
            counted(&self.rerun, "read-only call to run again", "read-only calls to run again"),
            counted(&self.run, "call never started, to run now", "calls never started, to run now"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    }
}
