//! Issue 12: resuming a long session. Target: loading (and repairing) a 1000-message
//! transcript in under 50 ms.
//!
//! `cargo bench --bench session_resume` writes a real transcript with the engine's own writer
//! (`TranscriptWriter`): 500 rounds of an assistant message with text and a Read `tool_use`
//! (about 200 bytes of input) and the user message with its `tool_result` (about 1 KB of file
//! content), then a last assistant `tool_use` whose result was never written, as a run killed
//! mid-tool leaves it. Criterion times what `--resume` does before the first request:
//! `session::load` (one pass over the file) and `LoadedSession::repair` (the unanswered call
//! gets its interrupted result).

use std::hint::black_box;

use agentloop::protocol::{ContentBlock, Message, Role};
use agentloop::session::{TranscriptWriter, Uuid, load};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const ROUNDS: usize = 500;

fn write_transcript(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("session.jsonl");
    let mut w = TranscriptWriter::create(&path, Uuid::new_v4(), dir).unwrap();
    w.append(&Message::user_text("Read every note and summarise them.")).unwrap();
    let line = "note: a line of text of the kind a coding agent reads all day long, with some code `x = 1;`\n";
    for i in 0..ROUNDS {
        let id = format!("toolu_{i:05}");
        let call = ContentBlock::ToolUse {
            id: id.clone(),
            name: "Read".into(),
            input: json!({"file_path": format!("notes/{}.txt", i % 10), "offset": 1, "limit": 200}),
        };
        w.append(&Message {
            role: Role::Assistant,
            content: vec![ContentBlock::text(format!("Reading note {i}.")), call],
        })
        .unwrap();
        if i + 1 < ROUNDS {
            w.append(&Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(&id, line.repeat(11), false)],
            })
            .unwrap();
        }
    }
    path
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_transcript(dir.path());
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut loaded = load(&path).unwrap();
    let report = loaded.repair();
    assert_eq!(loaded.messages.len(), 2 * ROUNDS + 1, "prompt, 500 calls, 500 results (one repaired)");
    assert_eq!(report.repairs.len(), 1);
    println!("transcript: {} messages, {:.2} MB", loaded.messages.len(), bytes as f64 / 1e6);
    c.bench_function("resume_1000_messages", |b| {
        b.iter(|| {
            let mut session = load(black_box(&path)).unwrap();
            black_box(session.repair());
            session
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
