//! The auditor: proofs and checks over the transition table, trace replay, and exports.
//!
//! [`audit_table`] runs, in order: the raw structure pass ([`structure::raw_findings`], every
//! declaration problem with a code), the engine's own loader, the checks on the loaded table
//! (reasons, targets, dead ends), guard exclusivity and coverage and facts only some entering
//! edges set ([`guards`]), reachability
//! ([`graph`]), the static termination proof ([`termination`]) and the bounded exhaustive
//! exploration ([`explore`]) that computes worst-case model calls and witnesses, backed by the
//! flow bound ([`flow`], a linear program solved by [`simplex`]) when the product does not fit
//! its memory cap.
//! [`trace::replay`] checks a recorded `--trace=jsonl` run against a table; [`export`] draws
//! the table; [`report`] renders the result; [`cli`] holds the `audit` and `table` commands.

pub mod cli;
pub mod coverage;
pub mod engine_check;
pub mod explore;
pub mod export;
pub mod flow;
pub mod graph;
pub mod guards;
pub mod report;
pub mod simplex;
pub mod structure;
pub mod termination;
pub mod trace;

use crate::audit::explore::Exploration;
use crate::audit::structure::InputError;
use crate::audit::trace::TraceReport;
use crate::engine::table::{Table, TableError};
use crate::table::finding::{Code, Finding, Location, Severity};

/// Options of an audit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditOptions {
    /// Override the bound of the counter whose option is `max_turns`.
    pub max_turns: Option<u32>,
    /// Also check that this engine can run the table ([`engine_check`]): what `run --table`
    /// requires.
    pub engine: bool,
    /// The exploration's memory cap in bytes (default [`explore::DEFAULT_MEMORY_CAP`]).
    pub memory_cap: Option<u64>,
}

/// Everything an audit found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The table file, as named in findings.
    pub table_path: String,
    /// The loaded table, when it loaded.
    pub table: Option<Table>,
    /// Findings about the table, in check order.
    pub findings: Vec<Finding>,
    /// The exploration, when the table loaded.
    pub exploration: Option<Exploration>,
    /// The trace replay, when a trace was given.
    pub trace: Option<TraceReport>,
    /// Whether [`engine_check`] ran.
    pub engine_checked: bool,
}

impl Report {
    /// Table findings, then trace findings.
    pub fn all_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().chain(self.trace.iter().flat_map(|t| &t.findings))
    }

    /// Whether no finding is an error.
    pub fn passed(&self) -> bool {
        self.all_findings().all(|f| f.severity != Severity::Error)
    }

    /// The process exit status: 0 when passed, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.passed() { 0 } else { 1 }
    }
}

/// Audit the table `text` (named `path` in findings).
///
/// # Errors
/// [`InputError::Toml`] when the text is not a table at all (the message names the line).
pub fn audit_table(path: &str, text: &str, options: &AuditOptions) -> Result<Report, InputError> {
    let mut report = audit_table_unexplored(path, text, options)?;
    let Some(table) = &report.table else { return Ok(report) };
    // The exploration keeps all its findings; the report drops an unreachable edge the state
    // graph already showed unreachable.
    let cap = options.memory_cap.unwrap_or(explore::DEFAULT_MEMORY_CAP);
    let exploration = explore::explore_within(table, path, options.max_turns, cap);
    let shown = |f: &Finding| {
        f.code != Code::UnreachableEdge
            || !report.findings.iter().any(|g| g.code == Code::UnreachableEdge && g.location.edge == f.location.edge)
    };
    let fresh: Vec<Finding> = exploration.findings.iter().filter(|f| shown(f)).cloned().collect();
    report.findings.extend(fresh);
    report.exploration = Some(exploration);
    Ok(report)
}

/// [`audit_table`] without the exploration: the structural, engine, guard, reachability and
/// termination checks, whose cost follows the table's size. The exploration, bounded by its
/// own state limits, can take seconds on a large table; the `table` fuzz target (fuzz/) runs
/// this instead, so that every input is judged within libFuzzer's time bound.
///
/// # Errors
/// Those of [`audit_table`].
#[doc(hidden)]
pub fn audit_table_unexplored(path: &str, text: &str, options: &AuditOptions) -> Result<Report, InputError> {
    let mut report = Report {
        table_path: path.to_owned(),
        table: None,
        findings: Vec::new(),
        exploration: None,
        trace: None,
        engine_checked: false,
    };
    report.findings = structure::raw_findings(path, text)?;
    if !report.findings.is_empty() {
        return Ok(report);
    }
    let table = match Table::load(path, text) {
        Ok(table) => table,
        Err(TableError::Toml { path, message }) => return Err(InputError::Toml { path, message }),
        Err(TableError::Invalid { path: p, problems }) => {
            for (line, message) in problems {
                let m = format!("the engine rejects the table: {message}");
                report.findings.push(Finding::new(Code::TableRejected, m, Location::at(&p, Some(line))));
            }
            return Ok(report);
        }
    };
    let ranking_line = text.lines().position(|l| l.trim() == "[termination]").map(|i| i + 1);
    report.findings.extend(structure::table_findings(&table, path));
    if options.engine {
        report.findings.extend(engine_check::engine_findings(&table, path));
        report.engine_checked = true;
    }
    report.findings.extend(guards::guard_findings(&table, path));
    report.findings.extend(guards::partly_set_findings(&table, path));
    report.findings.extend(graph::reachability_findings(&table, path));
    report.findings.extend(termination::termination_findings(&table, path, ranking_line));
    report.table = Some(table);
    Ok(report)
}
