//! The transition table TOML as `--table` and `agentloop audit --table` read it, on any text:
//! `audit::audit_table_unexplored`, which is `audit::audit_table` (the loader, the structural
//! checks, the engine check, the guard, reachability and termination analyses) without the
//! exploration. The exploration is bounded by its own state limits but takes longer than
//! libFuzzer's per-input bound on the shipped table under the sanitizer; its tests cover it.
//! A table that loads is also laid out and drawn (`trace_view::chart::svg`).
#![no_main]

use agentloop::audit::{AuditOptions, audit_table_unexplored, report};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = AuditOptions { max_turns: Some(3), engine: true, ..AuditOptions::default() };
    let Ok(report) = audit_table_unexplored("fuzz.toml", text, &options) else { return };
    let findings: Vec<_> = report.all_findings().collect();
    let _ = report::findings_text(&findings);
    let _ = report.exit_code();
    // A table that loads is drawn as `agentloop trace view --table` draws it.
    if let Some(table) = &report.table {
        assert!(agentloop::trace_view::chart::svg(table).ends_with("</svg>"));
    }
});
