//! The transition trace: one record per edge taken, written as readable lines (`pretty`)
//! or as JSON Lines (`jsonl`, the format `agentloop audit --trace` replays).
//!
//! Records carry edge ids, states, facts and counters only: never prompts, tool output or
//! credentials, so a trace is safe to share.

use std::io::{self, Write};

use serde::Serialize;

use crate::engine::table::Counters;
use crate::table::guard::Facts;

/// Schema version of the JSONL trace.
pub const TRACE_SCHEMA: u32 = 1;

/// One transition, as written to the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRecord {
    /// Always `"transition"`.
    #[serde(rename = "type")]
    pub record_type: &'static str,
    /// 1 for the first transition of the run, then +1 each.
    pub seq: u64,
    /// Milliseconds since the run started.
    pub t_ms: f64,
    /// The turn the transition happened in (1-based).
    pub turn: u32,
    /// Leaf state left.
    pub from: &'static str,
    /// Leaf state entered.
    pub to: &'static str,
    /// Edge id from the table.
    pub edge: String,
    /// `internal`, `continue` or `terminal`.
    pub kind: &'static str,
    /// Continue or terminal reason.
    pub reason: Option<&'static str>,
    /// The table event that fired.
    pub event: String,
    /// The facts the guards of this state and event read, with their values.
    pub guards: Facts,
    /// Every counter after the transition.
    pub counters: Counters,
    /// Backoff before the next attempt, on retry edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// A short human note (the error behind a retry, the model switched to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a subagent's run: which run it is and which call of which run started it; `None`
    /// for the top-level run.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub link: Option<RunLink>,
}

/// Where a subagent's run sits in the tree of runs: written on its trace header and on each
/// of its records, so a trace holding nested runs can be split back into runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunLink {
    /// The child run's own id.
    pub run_id: String,
    /// The id of the run whose `Agent` call started it.
    pub parent_run_id: String,
    /// That `Agent` call's tool_use id.
    pub parent_tool_use_id: String,
}

/// The first line of a JSONL trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceHeader {
    /// Always `"header"`.
    #[serde(rename = "type")]
    pub record_type: &'static str,
    /// [`TRACE_SCHEMA`].
    pub schema: u32,
    /// SHA-256 of the table the run was checked against.
    pub table_sha256: String,
    /// The run's id.
    pub run_id: String,
    /// Counter bounds in force for this run.
    pub bounds: Counters,
    /// Counter values at the start.
    pub counters: Counters,
    /// How the run's commands are confined ([`crate::sandbox::Sandbox::status`]), when the
    /// run has a sandbox configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<&'static str>,
    /// For a subagent's run: its parent run and the call that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// For a subagent's run: the `Agent` call that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// The memory files the session loaded at its start (as `system/init` lists them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_files: Vec<crate::context::memory::MemoryFile>,
    /// What loading them warned about (a directory with both `CLAUDE.md` and `AGENTS.md`, an
    /// import not followed, the cap).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_warnings: Vec<String>,
    /// For a run that resumes a session a kill cut off in its tool phase: which calls the
    /// tool journal replayed, which it reported interrupted and which never started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered_calls: Option<crate::session::RecoveredCalls>,
}

/// The `type`s of the JSONL trace's event lines, written between the records for the trace
/// view's timeline: `tool` (`phase` `start` or `end`), `reply` (its first event) and `retry`
/// (a wait before sending again). A replay skips them: they take no edge.
pub const EVENT_LINE_TYPES: [&str; 3] = ["tool", "reply", "retry"];

/// How a trace is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// One readable line per transition.
    Pretty,
    /// One JSON object per line.
    Jsonl,
}

/// Writes a trace to any `Write`.
pub struct TraceWriter {
    out: Box<dyn Write + Send>,
    format: TraceFormat,
    color: bool,
    /// Each run's counters after its last record, by run id ("" for the top-level run): the
    /// pretty format shows what each transition changed.
    previous: std::collections::BTreeMap<String, Counters>,
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter").field("format", &self.format).field("color", &self.color).finish()
    }
}

impl TraceWriter {
    /// A writer in `format`; `color` adds ANSI colours to the pretty format.
    pub fn new(out: Box<dyn Write + Send>, format: TraceFormat, color: bool) -> Self {
        TraceWriter { out, format, color, previous: Default::default() }
    }

    /// Write the header (JSONL) or a one-line banner (pretty).
    ///
    /// # Errors
    /// Any I/O error of the output.
    pub fn header(&mut self, header: &TraceHeader) -> io::Result<()> {
        let run = if header.parent_run_id.is_some() { header.run_id.clone() } else { String::new() };
        self.previous.insert(run, header.counters.clone());
        match self.format {
            TraceFormat::Jsonl => {
                serde_json::to_writer(&mut self.out, header)?;
                self.out.write_all(b"\n")
            }
            TraceFormat::Pretty => {
                let sandbox = header.sandbox.map(|s| format!("  sandbox {s}")).unwrap_or_default();
                let banner = match &header.parent_tool_use_id {
                    // A subagent's run: the same table as its parent's; its turns may differ.
                    Some(call) => {
                        let turns = header.counters.get("turns").map(|t| format!("  turns={t}")).unwrap_or_default();
                        format!("{CHILD_INDENT}subagent run {}  for {call}{turns}", header.run_id)
                    }
                    None => format!(
                        "trace  run {}  table {}  {}{sandbox}",
                        header.run_id,
                        &header.table_sha256[..12.min(header.table_sha256.len())],
                        format_counters(&header.counters)
                    ),
                };
                writeln!(self.out, "{}", self.paint(DIM, &banner))?;
                if !header.memory_files.is_empty() {
                    let files: Vec<String> = header
                        .memory_files
                        .iter()
                        .map(|f| format!("{} ({}, {} B)", f.path.display(), f.scope.as_str(), f.bytes))
                        .collect();
                    writeln!(self.out, "{}", self.paint(DIM, &format!("memory  {}", files.join(", "))))?;
                }
                for warning in &header.memory_warnings {
                    writeln!(self.out, "{}", self.paint(DIM, &format!("memory  warning: {warning}")))?;
                }
                if let Some(recovered) = &header.recovered_calls {
                    writeln!(self.out, "{}", self.paint(DIM, &format!("resumed  {}", recovered.describe())))?;
                }
                Ok(())
            }
        }
    }

    /// Write one record.
    ///
    /// # Errors
    /// Any I/O error of the output.
    pub fn record(&mut self, record: &TraceRecord) -> io::Result<()> {
        match self.format {
            TraceFormat::Jsonl => {
                serde_json::to_writer(&mut self.out, record)?;
                self.out.write_all(b"\n")?;
            }
            TraceFormat::Pretty => {
                let line = self.pretty_line(record);
                writeln!(self.out, "{line}")?;
            }
        }
        self.previous.insert(run_key(record), record.counters.clone());
        self.out.flush()
    }

    /// Whether this writes JSON Lines.
    pub fn is_jsonl(&self) -> bool {
        self.format == TraceFormat::Jsonl
    }

    /// Write one event line between the records (JSONL only: a tool call's start or end, a
    /// reply's first event, a retry's wait; see [`EVENT_LINE_TYPES`]).
    ///
    /// # Errors
    /// Any I/O error of the output.
    pub fn event(&mut self, line: &serde_json::Value) -> io::Result<()> {
        if self.format != TraceFormat::Jsonl {
            return Ok(());
        }
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    /// Write a tool start or finish line (pretty format only; JSONL traces have
    /// [`TraceWriter::event`] lines instead).
    ///
    /// # Errors
    /// Any I/O error of the output.
    pub fn tool_line(&mut self, t_ms: f64, turn: u32, text: &str) -> io::Result<()> {
        self.tool_line_in(t_ms, turn, "", text)
    }

    /// [`TraceWriter::tool_line`] of a call of a subagent's run (`turn` is the child's),
    /// indented under the parent's `Agent` call as the child's transitions are.
    ///
    /// # Errors
    /// Any I/O error of the output.
    pub fn child_tool_line(&mut self, t_ms: f64, turn: u32, text: &str) -> io::Result<()> {
        self.tool_line_in(t_ms, turn, CHILD_INDENT, text)
    }

    fn tool_line_in(&mut self, t_ms: f64, turn: u32, indent: &str, text: &str) -> io::Result<()> {
        if self.format != TraceFormat::Pretty {
            return Ok(());
        }
        let time = self.paint(DIM, &format!("{t_ms:>9.1}ms"));
        let turn = self.paint(DIM, &format!("t{turn:<2}"));
        writeln!(self.out, "{time}  {turn} {indent}{:>12}   {}", "", self.paint(CYAN, text))?;
        self.out.flush()
    }

    fn pretty_line(&self, r: &TraceRecord) -> String {
        let time = self.paint(DIM, &format!("{:>9.1}ms", r.t_ms));
        let turn = self.paint(DIM, &format!("t{:<2}", r.turn));
        let indent = if r.link.is_some() { CHILD_INDENT } else { "" };
        let states = format!("{indent}{:>12} → {:<12}", r.from, r.to);
        let (marker, colour) = match (r.kind, r.reason) {
            ("continue", Some(reason)) => (format!("↻ {reason}"), YELLOW),
            ("terminal", Some("completed")) => ("■ completed".to_owned(), GREEN),
            ("terminal", Some(reason)) => (format!("■ {reason}"), RED),
            _ => (String::new(), ""),
        };
        let mut line = format!("{time}  {turn} {states}  {:<36}", r.edge);
        if !marker.is_empty() {
            line.push_str(&self.paint(colour, &format!("{marker:<28}")));
        }
        let mut notes = Vec::new();
        if let Some(delay) = r.delay_ms {
            notes.push(format!("wait {delay}ms"));
        }
        if let Some(previous) = self.previous.get(&run_key(r)) {
            for (name, after) in &r.counters {
                let before = previous.get(name).copied().unwrap_or(*after);
                if before != *after {
                    notes.push(format!("{name} {before}→{after}"));
                }
            }
        }
        if let Some(detail) = &r.detail {
            notes.push(format!("({detail})"));
        }
        if !notes.is_empty() {
            line.push(' ');
            line.push_str(&self.paint(DIM, &notes.join("  ")));
        }
        line.trim_end().to_owned()
    }

    fn paint(&self, colour: &str, text: &str) -> String {
        if self.color && !colour.is_empty() { format!("{colour}{text}{RESET}") } else { text.to_owned() }
    }
}

/// What a subagent's lines of the pretty trace start with, below the parent's `Agent` call.
const CHILD_INDENT: &str = "    ┆ ";

/// The key of a record's run in [`TraceWriter`]'s counters: its id for a subagent's run, ""
/// for the top-level run.
fn run_key(record: &TraceRecord) -> String {
    record.link.as_ref().map(|l| l.run_id.clone()).unwrap_or_default()
}

const DIM: &str = "\x1b[2m";
const YELLOW: &str = "\x1b[33m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

fn format_counters(counters: &Counters) -> String {
    counters.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::guard::FactValue;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn record() -> TraceRecord {
        TraceRecord {
            record_type: "transition",
            seq: 5,
            t_ms: 12.25,
            turn: 1,
            from: "Checkpoint",
            to: "Prepare",
            edge: "checkpoint.next_turn".into(),
            kind: "continue",
            reason: Some("next_turn"),
            event: "turn_checked".into(),
            guards: [("tools_ran".to_string(), FactValue::Bool(true))].into_iter().collect(),
            counters: [("turns".to_string(), 98)].into_iter().collect(),
            delay_ms: None,
            detail: None,
            link: None,
        }
    }

    #[test]
    fn jsonl_record_has_the_documented_shape() {
        let buf = Shared::default();
        let mut w = TraceWriter::new(Box::new(buf.clone()), TraceFormat::Jsonl, false);
        w.record(&record()).unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "{\"type\":\"transition\",\"seq\":5,\"t_ms\":12.25,\"turn\":1,\"from\":\"Checkpoint\",\"to\":\"Prepare\",\
\"edge\":\"checkpoint.next_turn\",\"kind\":\"continue\",\"reason\":\"next_turn\",\"event\":\"turn_checked\",\
\"guards\":{\"tools_ran\":true},\"counters\":{\"turns\":98}}\n"
        );
    }

    #[test]
    fn pretty_line_shows_reason_and_changed_counters() {
        let buf = Shared::default();
        let mut w = TraceWriter::new(Box::new(buf.clone()), TraceFormat::Pretty, false);
        w.previous.insert(String::new(), [("turns".to_string(), 99)].into_iter().collect());
        w.record(&record()).unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "     12.2ms  t1    Checkpoint → Prepare       checkpoint.next_turn                ↻ next_turn                  turns 99→98\n"
        );
    }
}
