//! `--table FILE` for `run` and `demo`: the loop follows an edited transition table.
//!
//! The table is audited before anything runs, with the same checks as `agentloop audit`, plus
//! [`crate::audit::engine_check`]: every edge must be one this engine has an effect for. A
//! table with any error finding is refused, and the audit's report says why.

use std::path::Path;
use std::sync::Arc;

use crate::audit::{AuditOptions, audit_table, report};
use crate::engine::table::Table;
use crate::table::check::InputError;

/// Why the table of `--table` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TableFileError {
    /// The file cannot be read.
    #[error("--table {shown}: {error}")]
    Read {
        /// The file, as given.
        shown: String,
        /// Why.
        error: std::io::Error,
    },
    /// It is not a table.
    #[error("--table {0}")]
    NotATable(InputError),
    /// A finding of the audit is an error; nothing runs.
    #[error(
        "the table {shown} fails the audit ({count} finding(s)); nothing was run. \
`agentloop audit --engine --table {shown}` shows the whole report.\n{listed}"
    )]
    Fails {
        /// The file, as given.
        shown: String,
        /// How many findings the audit has.
        count: usize,
        /// The findings, one per line.
        listed: String,
    },
}

/// The exhaustive exploration's memory cap when a run loads a table: an eighth of `audit`'s.
/// A run needs the verdict, not the exact worst case; past the cap the flow bound and the
/// search edge by edge still decide it, in seconds instead of filling 2 GiB.
pub const LOAD_MEMORY_CAP: u64 = 256 << 20;

/// Load and audit the table at `path`; `max_turns` is the run's `--max-turns`, so the audit's
/// worst case is the one the run has.
///
/// # Errors
/// [`TableFileError`]: the table is unreadable, not a table, or fails the audit (its report
/// says why).
pub fn load(path: &Path, max_turns: Option<u32>) -> Result<Arc<Table>, TableFileError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => return Err(TableFileError::Read { shown, error }),
    };
    let options = AuditOptions { max_turns, engine: true, memory_cap: Some(LOAD_MEMORY_CAP) };
    let report = audit_table(&shown, &text, &options).map_err(TableFileError::NotATable)?;
    match report.table.clone() {
        Some(table) if report.passed() => {
            for f in report.all_findings() {
                eprintln!("agentloop: warning: --table {shown}: {} {}", f.code, f.message);
            }
            Ok(Arc::new(table))
        }
        _ => {
            let findings: Vec<_> = report.all_findings().collect();
            let listed = report::findings_text(&findings).trim_end().to_owned();
            Err(TableFileError::Fails { shown, count: findings.len(), listed })
        }
    }
}
