//! The transcript reader and repair of `--resume` / `--continue` (`session::load`,
//! `session::load_cut`, `LoadedSession::repair`, `TranscriptWriter::record_repair`) on any
//! bytes, written to a real transcript file in a scratch directory.
//!
//! Invariants: repair is idempotent (a repaired history needs no repair), and recording the
//! repair in the file makes the file load as the repaired history, as the resume path relies on.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentloop::internals::session::{RepairWrite, repair};
use agentloop::session::{load, load_cut};
use libfuzzer_sys::fuzz_target;

/// A scratch directory for the transcript, one per process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentloop-fuzz-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scratch directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch().join("3f1e2d4c-5b6a-4789-8abc-def012345678.jsonl");
    std::fs::write(&path, data).expect("write the transcript");
    let Ok(mut loaded) = load(&path) else { return };
    if let Some(last) = loaded.last_uuid.clone() {
        let _ = load_cut(&path, &last, None);
        let _ = load_cut(&path, &last, Some(&last));
    }
    let report = loaded.repair();

    let mut again = loaded.messages.clone();
    let second = repair(&mut again, &loaded.journal);
    assert_eq!(second.write, RepairWrite::Nothing, "a repaired history was repaired again: {:?}", second.repairs);
    assert_eq!(again, loaded.messages);

    let Ok(mut writer) = loaded.writer() else { return };
    writer.record_repair(&report, &loaded.messages).expect("record the repair");
    drop(writer);
    let reloaded = load(&path).expect("a transcript with its repair recorded loads");
    assert_eq!(reloaded.messages, loaded.messages, "the recorded repair does not reload as the repaired history");
});
