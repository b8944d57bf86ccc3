//! The transition table TOML as `--table` and `agentloop audit --table` read it
//! (`audit::audit_table`: the loader, the structural checks, the exploration and the
//! engine check), on any text.
#![no_main]

use agentloop::audit::{AuditOptions, audit_table, report};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = AuditOptions { max_turns: Some(3), engine: true };
    let Ok(report) = audit_table("fuzz.toml", text, &options) else { return };
    let findings: Vec<_> = report.all_findings().collect();
    let _ = report::findings_text(&findings);
    let _ = report.exit_code();
});
