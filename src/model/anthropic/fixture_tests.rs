//! The recorded Anthropic streams of `shared/fixtures/anthropic-sse/` through the real SSE
//! parser and the shared `Assembler`, compared with `expected.json`; then the same streams cut
//! into chunks every which way, which must assemble identically. Every run goes two ways, which
//! must agree: what the client runs, each chunk fed to the parser with a `decode::Intake`
//! (`Parser::feed_with`), every event lent out of the chunk where it can be; and the reference,
//! every event queued by the parser and read by serde into an owned event (`Parser::push`,
//! `decode`, `Assembler::push`).
//!
//! The fixtures live beside the repository (`../shared/…` from the crate root in CI); the
//! nearest ancestor directory holding `shared/fixtures/anthropic-sse` is used, so worktrees
//! nested one level deeper find them too. They are never copied into the repository.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::decode::{Intake, decode};
use super::sse::Parser;
use super::stream::sse_reply;
use crate::model::ModelError;
use crate::model::assemble::{Assembled, Assembler, Step};
use crate::model::reply;
use crate::protocol::StreamEvent;
use proptest::prelude::*;
use serde_json::{Value, json};

/// What a stream amounts to: the assembled reply and, if it failed, `(type, message)`.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    assembled: Assembled,
    error: Option<(String, String)>,
}

struct Fixture {
    name: String,
    bytes: Vec<u8>,
    expected: Value,
}

fn fixtures_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.ancestors()
        .skip(1)
        .map(|dir| dir.join("shared/fixtures/anthropic-sse"))
        .find(|dir| dir.join("expected.json").is_file())
        .unwrap_or_else(|| {
            panic!(
                "no shared/fixtures/anthropic-sse in any directory above {}: these tests read the recorded \
                 Anthropic streams of the project's shared directory, which is not part of this repository; \
                 check it out beside the repository as ../shared (CI does). shared/fixtures/anthropic-sse/SOURCES.md \
                 lists the public source of every stream (the Anthropic SDKs' and other clients' recorded \
                 responses, the streaming documentation) and expected.json what each assembles to",
                root.display()
            )
        })
}

fn fixtures() -> &'static [Fixture] {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = fixtures_dir();
        let expected: Value = serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".sse"))
            .collect();
        names.sort();
        assert_eq!(names.len(), expected.as_object().unwrap().len(), "every fixture has an expected entry");
        names
            .into_iter()
            .map(|name| Fixture {
                bytes: std::fs::read(dir.join(&name)).unwrap(),
                expected: expected.get(&name).unwrap_or_else(|| panic!("{name} not in expected.json")).clone(),
                name,
            })
            .collect()
    })
}

/// Feed one event to the assembler; `true` when the stream is over.
fn apply(
    assembler: &mut Assembler,
    event: Result<StreamEvent, ModelError>,
    error: &mut Option<(String, String)>,
) -> bool {
    let step = event.and_then(|event| {
        let last = matches!(event, StreamEvent::MessageStop | StreamEvent::Error { .. });
        assembler.push(event).map(|_| last)
    });
    match step {
        Ok(last) => last,
        Err(ModelError::Protocol(message)) => {
            *error = Some(("client_protocol_error".into(), message));
            true
        }
        Err(other) => panic!("unexpected {other}"),
    }
}

fn finish(assembler: Assembler, mut error: Option<(String, String)>) -> Outcome {
    let assembled = assembler.finish();
    if error.is_none() {
        error = match &assembled.error {
            Some(api) => Some((api.kind.clone(), api.message.clone())),
            None if !assembled.complete => Some(("stream_incomplete".into(), ModelError::Incomplete.to_string())),
            None => None,
        };
    }
    Outcome { assembled, error }
}

/// The synchronous paths, which must agree.
fn run<'a>(chunks: impl IntoIterator<Item = &'a [u8]> + Clone) -> Outcome {
    let intake = run_intake(chunks.clone());
    let queued = run_queued(chunks);
    assert!(intake == queued, "intake:\n{intake:?}\nqueued:\n{queued:?}");
    intake
}

/// A protocol error, as the outcome records it.
fn protocol_error(error: ModelError) -> (String, String) {
    match error {
        ModelError::Protocol(message) => ("client_protocol_error".into(), message),
        other => panic!("unexpected {other}"),
    }
}

/// What the client runs: each chunk fed to the parser with a `decode::Intake`, which decodes
/// each event it frames and pushes it.
fn run_intake<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    let mut error = None;
    for chunk in chunks {
        let mut intake = Intake::new(&mut assembler, |_: Step<'_>| {});
        let flow = parser.feed_with(chunk, &mut intake);
        error = intake.failure().map(protocol_error);
        if flow.is_break() {
            break;
        }
    }
    finish(assembler, error)
}

/// The reference: events queued by the parser, each read by serde into an owned event.
fn run_queued<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut parser = Parser::new();
    let mut assembler = Assembler::new();
    let mut error = None;
    'chunks: for chunk in chunks {
        parser.push(chunk);
        while let Some(sse) = parser.next_event() {
            if apply(&mut assembler, decode(sse.data), &mut error) {
                break 'chunks;
            }
        }
    }
    finish(assembler, error)
}

/// The asynchronous path the client uses: `sse_reply` over a body of chunks.
async fn run_reply(chunks: Vec<Vec<u8>>) -> Outcome {
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    let mut reply = sse_reply(body, std::time::Duration::from_secs(60));
    let mut assembler = Assembler::new();
    let mut error = None;
    while let Some(read) = reply::read(&mut reply, &mut assembler, &mut |_| {}).await {
        if let Err(e) = read {
            error = Some(protocol_error(e));
        }
    }
    finish(assembler, error)
}

/// The outcome in the shape of `expected.json`.
fn to_expected_shape(outcome: &Outcome) -> Value {
    let a = &outcome.assembled;
    match &outcome.error {
        Some((kind, message)) => json!({
            "error": {"type": kind, "message": message},
            "partial_content": a.content,
        }),
        None => json!({
            "content": a.content,
            "stop_reason": a.stop_reason,
            "stop_sequence": a.stop_sequence,
            "usage": {"input_tokens": a.usage.input_tokens, "output_tokens": a.usage.output_tokens},
        }),
    }
}

/// How `outcome` differs from the fixture's `expected.json`, if it does.
fn difference_from_expected(fixture: &Fixture, outcome: &Outcome) -> Option<String> {
    let got = to_expected_shape(outcome);
    let keys = ["content", "stop_reason", "stop_sequence", "usage", "error", "partial_content"];
    let mut problems = Vec::new();
    for key in keys {
        if let Some(want) = fixture.expected.get(key)
            && got.get(key) != Some(want)
        {
            problems
                .push(format!("  {key}: expected {want}\n  {key}: got      {}", got.get(key).unwrap_or(&Value::Null)));
        }
    }
    if fixture.expected.get("error").is_none() && outcome.error.is_some() {
        problems.push(format!("  unexpected error {:?}", outcome.error));
    }
    (!problems.is_empty()).then(|| format!("{}:\n{}", fixture.name, problems.join("\n")))
}

#[test]
fn every_fixture_assembles_as_expected() {
    let failures: Vec<String> =
        fixtures().iter().filter_map(|f| difference_from_expected(f, &run([f.bytes.as_slice()]))).collect();
    assert!(failures.is_empty(), "{} fixtures differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn truncated_tool_calls_are_never_runnable() {
    for fixture in fixtures() {
        let outcome = run([fixture.bytes.as_slice()]);
        for (index, block) in outcome.assembled.content.iter().enumerate() {
            if block.get("input_complete") == Some(&Value::Bool(false)) {
                assert_eq!(block["input"], Value::Null, "{} block {index}", fixture.name);
            }
        }
        let (message, dropped) = outcome.assembled.clone().into_message();
        let runnable: Vec<&str> = message.tool_uses().map(|t| t.id).collect();
        for id in &dropped {
            assert!(!runnable.contains(&id.as_str()), "{}: {id} is both dropped and runnable", fixture.name);
        }
    }
    let truncated = fixtures().iter().find(|f| f.name == "py-max-tokens-truncated-tool-json.sse").unwrap();
    let (_, dropped) = run([truncated.bytes.as_slice()]).assembled.into_message();
    assert_eq!(dropped, vec!["toolu_01EKqbqmZrGRXy18eN7m9kvY".to_string()]);
}

#[tokio::test]
async fn the_reply_over_a_body_agrees_with_the_parser() {
    for fixture in fixtures() {
        let whole = run([fixture.bytes.as_slice()]);
        let chunks: Vec<Vec<u8>> = fixture.bytes.chunks(61).map(<[u8]>::to_vec).collect();
        assert_eq!(run_reply(chunks).await, whole, "{}", fixture.name);
        assert_eq!(run_reply(vec![fixture.bytes.clone()]).await, whole, "{}", fixture.name);
    }
}

#[test]
fn every_two_piece_split_of_small_fixtures() {
    for fixture in fixtures().iter().filter(|f| f.bytes.len() < 8 * 1024) {
        let whole = run([fixture.bytes.as_slice()]);
        for cut in 0..=fixture.bytes.len() {
            let (head, tail) = fixture.bytes.split_at(cut);
            let split = run([head, tail]);
            assert!(split == whole, "{} split at byte {cut}:\n{split:?}\nvs\n{whole:?}", fixture.name);
        }
    }
}

/// Cut `bytes` into chunks whose sizes cycle through `sizes`.
fn cut<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut rest = bytes;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at((*size).min(rest.len()));
        chunks.push(head);
        rest = tail;
    }
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_chunking_assembles_identically(
        sizes in (1usize..=4096).prop_flat_map(|max| prop::collection::vec(1..=max, 1..48)),
    ) {
        for fixture in fixtures() {
            let whole = run([fixture.bytes.as_slice()]);
            let chunked = run(cut(&fixture.bytes, &sizes));
            prop_assert!(chunked == whole, "{} with chunk sizes {:?}", fixture.name, sizes);
        }
    }
}

#[test]
fn bytes_that_are_not_utf8_read_the_same_on_every_path() {
    // A byte that can never appear in UTF-8, put at 64 places spread over each fixture in
    // turn: inside text and tool-input strings, framing and JSON keys. The parser replaces it
    // with U+FFFD; every path must end with the same reply or the same error.
    for fixture in fixtures() {
        let step = (fixture.bytes.len() / 64).max(1) | 1;
        for at in (0..fixture.bytes.len()).step_by(step) {
            let mut bytes = fixture.bytes.clone();
            bytes[at] = 0xFF;
            let outcome = run([bytes.as_slice()]);
            let split = run([&bytes[..at], &bytes[at..]]);
            assert!(split == outcome, "{} with 0xFF at {at}", fixture.name);
        }
    }
}
