//! Replay of a `--trace=jsonl` recording against a table.
//!
//! Line 1 is the header `{"type":"header","schema":1,"table_sha256":…,"run_id":…,"bounds":{…},
//! "counters":{…}}` (`bounds` and `counters` optional: the table's bounds, and bound minus
//! `spent_at_start`). Every further line is a transition record; each must take a declared
//! edge out of the current state (the previous record's `to`, first the table's initial
//! state), agree with the table on `to`, `event`, `kind` and `reason`, record no guard fact
//! otherwise than the previous record's edge `sets` it, satisfy its guard under its recorded
//! `guards` (completed by those `sets`), and carry counters the edge explains (consumed minus one, reset to the
//! bound, others unchanged; counters the edge changes must be present). Exactly one terminal
//! record ends the trace. After a mismatch the replay resynchronises on the record.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::engine::table::{EdgeDecl, EdgeKind, Table};
use crate::table::finding::{Code, Finding, Location};
use crate::table::guard::{FactValue, Facts};

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceReport {
    /// The trace file, as named in findings.
    pub path: String,
    /// Transition records read.
    pub records: usize,
    /// The edge ids of the main run's records, in order (what coverage counts).
    #[serde(skip)]
    pub edges: Vec<String>,
    /// The terminal reason the trace ends with, if it has a terminal record.
    pub terminal: Option<String>,
    /// Mismatches, each naming the record's `seq` and line.
    pub findings: Vec<Finding>,
    /// The subagents' runs the trace holds, each replayed on its own, in the order their
    /// headers appear.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentTrace>,
}

/// One subagent's run inside a trace: its lines carry `parent_run_id` (the header) or a
/// `run_id` of their own (the records).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubagentTrace {
    /// The child run's id.
    pub run_id: String,
    /// The `Agent` call that started it.
    pub parent_tool_use_id: Option<String>,
    /// Its transition records.
    pub records: usize,
    /// The edge ids of its records, in order.
    #[serde(skip)]
    pub edges: Vec<String>,
    /// Its terminal reason, if it has a terminal record.
    pub terminal: Option<String>,
}

struct Replay<'t> {
    table: &'t Table,
    path: String,
    bounds: BTreeMap<String, u32>,
    counters: BTreeMap<String, u32>,
    state: String,
    /// The previous record's edge and the facts it sets for the current state.
    entered: Option<(String, Facts)>,
    findings: Vec<Finding>,
}

impl Replay<'_> {
    fn report(&mut self, code: Code, message: String, line: usize, seq: Option<u64>, edge: Option<&str>) {
        let mut loc = Location::at(&self.path, Some(line)).seq(seq);
        loc.edge = edge.map(str::to_owned);
        self.findings.push(Finding::new(code, message, loc));
    }

    fn header(&mut self, h: &Map<String, Value>, line: usize) {
        if h.get("schema").and_then(Value::as_u64) != Some(1) {
            self.report(Code::TraceHeader, "the header's `schema` is not 1".into(), line, None, None);
        }
        match h.get("table_sha256").and_then(Value::as_str) {
            None => self.report(Code::TraceHeader, "the header has no `table_sha256`".into(), line, None, None),
            Some(hash) if hash != self.table.sha256 => {
                let m =
                    format!("the trace was recorded against table sha256 {hash}, this table is {}", self.table.sha256);
                self.report(Code::TraceHash, m, line, None, None);
            }
            Some(_) => {}
        }
        if !h.get("run_id").is_some_and(Value::is_string) {
            self.report(Code::TraceHeader, "the header has no `run_id` string".into(), line, None, None);
        }
        for key in ["bounds", "counters"] {
            let Some(map) = h.get(key) else { continue };
            let Some(map) = map.as_object() else {
                self.report(Code::TraceHeader, format!("the header's `{key}` is not an object"), line, None, None);
                continue;
            };
            for (name, value) in map {
                let value = value.as_u64().and_then(|v| u32::try_from(v).ok());
                match (self.table.counter(name), value) {
                    (Some(_), Some(v)) if key == "bounds" => {
                        self.bounds.insert(name.clone(), v);
                    }
                    (Some(_), Some(v)) => {
                        self.counters.insert(name.clone(), v);
                    }
                    _ => {
                        let m =
                            format!("the header's `{key}` has `{name}`, which is not a declared counter with a count");
                        self.report(Code::TraceHeader, m, line, None, None);
                    }
                }
            }
            if key == "bounds" && !h.contains_key("counters") {
                for c in &self.table.counters {
                    let bound = self.bounds.get(&c.name).copied().unwrap_or(c.bound);
                    self.counters.insert(c.name.clone(), bound.saturating_sub(c.spent_at_start));
                }
            }
        }
    }

    /// Check one record; returns whether it is a terminal record.
    fn record(&mut self, r: &Map<String, Value>, line: usize, seq: Option<u64>) -> bool {
        let text = |k: &str| r.get(k).and_then(Value::as_str);
        let missing: Vec<&str> = [
            ("seq", r.get("seq").is_some_and(Value::is_u64)),
            ("t_ms", r.get("t_ms").is_some_and(Value::is_number)),
            ("turn", r.get("turn").is_some_and(Value::is_u64)),
            ("from", text("from").is_some()),
            ("to", text("to").is_some()),
            ("edge", text("edge").is_some()),
            ("kind", text("kind").is_some()),
            ("reason", r.get("reason").is_some_and(|v| v.is_string() || v.is_null())),
            ("event", text("event").is_some()),
            ("guards", r.get("guards").is_some_and(Value::is_object)),
            ("counters", r.get("counters").is_some_and(Value::is_object)),
        ]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(k, _)| k)
        .collect();
        if !missing.is_empty() {
            let m = format!("the record lacks or mistypes {}", missing.join(", "));
            self.report(Code::TraceRecord, m, line, seq, text("edge"));
        }
        let Some(id) = text("edge") else { return text("kind") == Some("terminal") };
        let empty = Map::new();
        let guards = r.get("guards").and_then(Value::as_object).unwrap_or(&empty);
        let counters = r.get("counters").and_then(Value::as_object).unwrap_or(&empty);
        let Some(edge) = self.table.edge(id) else {
            self.report(
                Code::TraceUndeclaredEdge,
                format!("edge `{id}` is not declared in the table"),
                line,
                seq,
                Some(id),
            );
            self.resync(text("to"), counters);
            self.entered = None;
            return text("kind") == Some("terminal");
        };
        let here = self.state.clone();
        if let Some(from) = text("from").filter(|f| *f != here) {
            let m = format!("the record leaves `{from}`, but the run was in `{here}`");
            self.report(Code::TraceWrongState, m, line, seq, Some(id));
        } else if !self.table.ancestry(&here).contains(&edge.from.as_str()) {
            let m = format!("edge `{id}` leaves `{}`, which is not `{here}` or a superstate of it", edge.from);
            self.report(Code::TraceWrongState, m, line, seq, Some(id));
        }
        self.compare(edge, r, line, seq);
        self.check_guard(edge, guards, line, seq);
        self.check_counters(edge, guards, counters, line, seq);
        self.resync(Some(text("to").unwrap_or(&edge.to)), counters);
        self.entered = Some((edge.id.clone(), edge.sets.clone()));
        edge.kind == EdgeKind::Terminal || text("kind") == Some("terminal")
    }

    fn compare(&mut self, edge: &EdgeDecl, r: &Map<String, Value>, line: usize, seq: Option<u64>) {
        let reason = edge.reason.as_deref().map_or(Value::Null, |s| Value::String(s.to_owned()));
        let fields = [
            ("to", Value::String(edge.to.clone())),
            ("event", Value::String(edge.on.clone())),
            ("kind", Value::String(edge.kind.as_str().to_owned())),
            ("reason", reason),
        ];
        let wrong: Vec<String> = fields
            .iter()
            .filter(|(k, want)| r.get(*k).is_some_and(|got| got != want))
            .map(|(k, want)| format!("`{k}` is {}, the table says {want}", r[*k]))
            .collect();
        if !wrong.is_empty() {
            self.report(Code::TraceEdgeMismatch, wrong.join("; "), line, seq, Some(&edge.id));
        }
    }

    fn check_guard(&mut self, edge: &EdgeDecl, guards: &Map<String, Value>, line: usize, seq: Option<u64>) {
        let recorded: Facts = guards
            .iter()
            .filter_map(|(k, v)| match v {
                Value::Bool(b) => Some((k.clone(), FactValue::Bool(*b))),
                Value::String(s) => Some((k.clone(), FactValue::Value(s.clone()))),
                _ => None,
            })
            .collect();
        // What the entering edge set holds unless recorded; recorded otherwise, it is a mismatch.
        let mut problems = Vec::new();
        let mut facts = Facts::new();
        if let Some((by, set)) = &self.entered {
            for (k, v) in set {
                if let Some(r) = recorded.get(k).filter(|r| *r != v) {
                    problems.push(format!(
                        "`{k}` is recorded as {r}, but `{by}`, which entered `{}`, set it to {v}",
                        self.state
                    ));
                }
            }
            facts.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        facts.extend(recorded);
        if let Some(guard) = &edge.guard {
            let text = edge.guard_text.as_deref().unwrap_or_default();
            match guard.eval(&facts) {
                Ok(true) => {}
                Ok(false) => {
                    problems.push(format!("guard `{text}` of `{}` is false under the recorded guards", edge.id))
                }
                Err(e) => problems.push(format!("guard `{text}` of `{}`: {e}", edge.id)),
            }
        }
        if !problems.is_empty() {
            self.report(Code::TraceGuard, problems.join("; "), line, seq, Some(&edge.id));
        }
    }

    fn check_counters(
        &mut self,
        edge: &EdgeDecl,
        guards: &Map<String, Value>,
        counters: &Map<String, Value>,
        line: usize,
        seq: Option<u64>,
    ) {
        let mut problems = Vec::new();
        for (k, v) in guards {
            let Some(c) = k.strip_suffix("_left").filter(|c| self.table.counter(c).is_some()) else { continue };
            let before = self.counters.get(c).copied().unwrap_or(0);
            if self.table.facts.iter().all(|f| f.name != *k) && v.as_bool() != Some(before > 0) {
                problems.push(format!("`{k}` is recorded as {v}, but `{c}` was {before} before the edge"));
            }
        }
        let mut expected = self.counters.clone();
        for c in &edge.consumes {
            match expected.get_mut(c) {
                Some(v) if *v > 0 => *v -= 1,
                _ => problems.push(format!("the edge consumes `{c}`, which was already 0")),
            }
        }
        for c in &edge.resets {
            expected.insert(c.clone(), self.bounds.get(c).copied().unwrap_or(0));
        }
        for c in edge.consumes.iter().chain(&edge.resets) {
            if !counters.contains_key(c) {
                problems.push(format!("the record omits `{c}`, which the edge changes"));
            }
        }
        for (name, value) in counters {
            let want = expected.get(name).copied();
            match (want, value.as_u64()) {
                (None, _) => problems.push(format!("`{name}` is not a declared counter")),
                (Some(w), Some(v)) if u64::from(w) == v => {}
                (Some(w), _) => problems.push(format!(
                    "`{name}` is {value} after the edge, expected {w} (it was {})",
                    self.counters.get(name).copied().unwrap_or(0)
                )),
            }
        }
        if !problems.is_empty() {
            self.report(Code::TraceCounters, problems.join("; "), line, seq, Some(&edge.id));
        }
        self.counters = expected;
    }

    /// Continue from the record's target and counters, whatever was expected.
    fn resync(&mut self, to: Option<&str>, counters: &Map<String, Value>) {
        if let Some(to) = to.filter(|t| self.table.state(t).is_some()) {
            self.state = to.to_owned();
        }
        for (name, value) in counters {
            if let (Some(v), true) =
                (value.as_u64().and_then(|v| u32::try_from(v).ok()), self.counters.contains_key(name))
            {
                self.counters.insert(name.clone(), v);
            }
        }
    }
}

/// Replay the trace `text` (named `path` in findings) against `table`. The lines of
/// subagents' runs (a header with `parent_run_id`, records with a `run_id`) are set apart by
/// run and each run is replayed on its own: every run must be a path of the table that ends
/// in exactly one terminal record.
pub fn replay(table: &Table, path: &str, text: &str) -> TraceReport {
    let mut top: Lines<'_> = Vec::new();
    // Each subagent's run: its id, the call that started it, and its lines.
    let mut children: Vec<(String, Option<String>, Lines<'_>)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let child = serde_json::from_str::<Value>(raw).ok().and_then(|v| {
            let run = v.get("parent_run_id").and(v.get("run_id"));
            let call = v.get("parent_tool_use_id").and_then(Value::as_str).map(str::to_owned);
            run.and_then(Value::as_str).map(|r| (r.to_owned(), call))
        });
        match child {
            None => top.push((i + 1, raw)),
            Some((run, call)) => match children.iter_mut().find(|(id, _, _)| *id == run) {
                Some((_, _, lines)) => lines.push((i + 1, raw)),
                None => children.push((run, call, vec![(i + 1, raw)])),
            },
        }
    }
    let mut report = replay_run(table, path, &top);
    for (run_id, parent_tool_use_id, lines) in children {
        let child = replay_run(table, path, &lines);
        report.findings.extend(child.findings);
        report.subagents.push(SubagentTrace {
            run_id,
            parent_tool_use_id,
            records: child.records,
            edges: child.edges,
            terminal: child.terminal,
        });
    }
    report
}

/// Lines of a trace with their numbers in the file.
type Lines<'a> = Vec<(usize, &'a str)>;

/// Replay the lines of one run (numbered as in the file).
fn replay_run(table: &Table, path: &str, lines: &[(usize, &str)]) -> TraceReport {
    let bounds: BTreeMap<String, u32> = table.counters.iter().map(|c| (c.name.clone(), c.bound)).collect();
    let counters = table.counters.iter().map(|c| (c.name.clone(), c.bound.saturating_sub(c.spent_at_start))).collect();
    let mut replay = Replay {
        table,
        path: path.to_owned(),
        bounds,
        counters,
        state: table.initial.clone(),
        entered: None,
        findings: Vec::new(),
    };
    let mut records = 0;
    let mut edges = Vec::new();
    let mut expected_seq = 1u64;
    let mut terminal: Option<(u64, String)> = None;
    let mut last_line = 0;
    let mut first = true;
    for &(line, raw) in lines {
        if raw.trim().is_empty() {
            continue;
        }
        last_line = line;
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(raw) else {
            replay.report(Code::TraceJson, "the line is not a JSON object".into(), line, None, None);
            first = false;
            continue;
        };
        let kind = obj.get("type").and_then(Value::as_str);
        if std::mem::take(&mut first) {
            if kind == Some("header") {
                replay.header(&obj, line);
                continue;
            }
            replay.report(Code::TraceHeader, "the first line is not a header".into(), line, None, None);
        }
        let seq = obj.get("seq").and_then(Value::as_u64);
        if kind.is_some_and(|k| crate::engine::trace::EVENT_LINE_TYPES.contains(&k)) {
            continue;
        }
        if kind != Some("transition") {
            let m =
                format!("a record of type {} where a transition was expected", obj.get("type").unwrap_or(&Value::Null));
            replay.report(Code::TraceRecord, m, line, seq, None);
            continue;
        }
        records += 1;
        if let Some(edge) = obj.get("edge").and_then(Value::as_str) {
            edges.push(edge.to_owned());
        }
        if let Some((tseq, _)) = &terminal {
            let m = format!("a record follows the terminal record (seq {tseq})");
            replay.report(Code::TraceAfterTerminal, m, line, seq, obj.get("edge").and_then(Value::as_str));
            break;
        }
        if let Some(s) = seq {
            if s != expected_seq {
                replay.report(Code::TraceSeq, format!("seq is {s}, expected {expected_seq}"), line, seq, None);
            }
            expected_seq = s + 1;
        } else {
            expected_seq += 1;
        }
        if replay.record(&obj, line, seq) {
            let reason = obj.get("reason").and_then(Value::as_str).unwrap_or_default().to_owned();
            terminal = Some((seq.unwrap_or(expected_seq - 1), reason));
        }
    }
    if first {
        replay.report(Code::TraceHeader, "the trace is empty".into(), 1, None, None);
    }
    if terminal.is_none() {
        let m = format!("the trace ends after {records} record(s) without a terminal record");
        replay.report(Code::TraceNoTerminal, m, last_line.max(1), None, None);
    }
    TraceReport {
        path: path.to_owned(),
        records,
        edges,
        terminal: terminal.map(|t| t.1),
        findings: replay.findings,
        subagents: Vec::new(),
    }
}
