//! The trace readers on any text, against the shipped table: `agentloop audit --trace`'s
//! replay (`audit::trace::replay`) and coverage (`audit::coverage::coverage`), and `agentloop
//! trace view`'s (`trace_view::runs::read`) with the page it writes.
//!
//! Invariants: the report counts no more records than the text has lines; no edge is taken
//! in more runs than the coverage read; a trace the view reads makes a page whose embedded
//! data is JSON again (nothing in it ends its element).
#![no_main]

use agentloop::audit::coverage::coverage;
use agentloop::audit::trace::replay;
use agentloop::engine::table::shipped;
use agentloop::trace_view::runs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let report = replay(shipped(), "fuzz.jsonl", text);
    assert!(report.records <= text.lines().count());
    let covered = coverage(shipped(), "loop.toml", &[("fuzz.jsonl".to_owned(), text.to_owned())], true);
    assert!(covered.edges.iter().map(|e| e.runs).all(|runs| runs <= covered.runs));
    if let Ok(read) = runs::read("fuzz.jsonl", text) {
        let html = agentloop::trace_view::html(shipped(), "loop.toml", &read);
        let open = r#"<script type="application/json" id="data">"#;
        let start = html.find(open).expect("the data element") + open.len();
        let end = start + html[start..].find("</script>").expect("its end");
        serde_json::from_str::<serde_json::Value>(&html[start..end]).expect("the data is JSON");
    }
});
