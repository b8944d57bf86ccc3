//! `--table FILE` for `run` and `demo`: the loop follows an edited transition table.
//!
//! The table is audited before anything runs, with the same checks as `agentloop audit`, plus
//! [`crate::audit::engine_check`]: every edge must be one this engine has an effect for. A
//! table with any error finding is refused, and the audit's report says why.

use std::path::Path;
use std::sync::Arc;

use crate::audit::{AuditOptions, audit_table, report};
use crate::engine::table::Table;

/// Load and audit the table at `path`; `max_turns` is the run's `--max-turns`, so the audit's
/// worst case is the one the run has.
///
/// # Errors
/// The reason the table cannot be used: unreadable, not a table, or the audit's report when a
/// finding is an error.
pub fn load(path: &Path, max_turns: Option<u32>) -> Result<Arc<Table>, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--table {shown}: {e}"))?;
    let options = AuditOptions { max_turns, engine: true };
    let report = audit_table(&shown, &text, &options).map_err(|e| format!("--table {e}"))?;
    match report.table.clone() {
        Some(table) if report.passed() => {
            for f in report.all_findings() {
                eprintln!("agentloop: warning: --table {shown}: {} {}", f.code, f.message);
            }
            Ok(Arc::new(table))
        }
        _ => {
            let findings: Vec<_> = report.all_findings().collect();
            let listed = report::findings_text(&findings);
            Err(format!(
                "the table {shown} fails the audit ({} finding(s)); nothing was run. \
`agentloop audit --engine --table {shown}` shows the whole report.\n{}",
                findings.len(),
                listed.trim_end()
            ))
        }
    }
}
