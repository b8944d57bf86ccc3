//! The trace reader of `agentloop audit --trace` (`audit::trace::replay`) on any text,
//! against the shipped table.
//!
//! Invariant: the report counts no more records than the text has lines.
#![no_main]

use agentloop::audit::trace::replay;
use agentloop::engine::table::shipped;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let report = replay(shipped(), "fuzz.jsonl", text);
    assert!(report.records <= text.lines().count());
});
