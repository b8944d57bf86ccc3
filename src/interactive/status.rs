//! The status line of a running prompt: the machine's current state, the time since the
//! prompt started, the output tokens so far, and what the last internal edge means.

use std::time::{Duration, Instant};

use crate::engine::edge::Edge;
use crate::engine::events::{EngineEvent, human_duration};
use crate::engine::machine::StateName;
use crate::engine::trace::TraceRecord;

/// What the status line shows, updated from the run's events.
#[derive(Debug, Clone)]
pub struct Status {
    started: Instant,
    state: &'static str,
    output_tokens: u64,
    /// Characters of the reply streaming now, whose usage is not reported yet.
    streamed_chars: usize,
    note: Option<String>,
}

impl Status {
    /// A prompt that starts now.
    pub fn new(started: Instant) -> Status {
        Status { started, state: StateName::INITIAL.as_str(), output_tokens: 0, streamed_chars: 0, note: None }
    }

    /// `/compact` running since `started` (no turn runs: the line names the command).
    pub fn compacting(started: Instant) -> Status {
        Status { state: "/compact", note: Some("compacting history".into()), ..Status::new(started) }
    }

    /// Take in one event; returns whether the line changed.
    pub fn observe(&mut self, event: &EngineEvent) -> bool {
        match event {
            EngineEvent::Transition(record) => {
                self.state = record.to;
                if let Some(note) = edge_meaning(record) {
                    self.note = note;
                }
                true
            }
            EngineEvent::Retrying { attempt, max, delay, error } => {
                self.note =
                    Some(format!("retry {attempt}/{max} in {}: {}", human_duration(*delay), short_error(error)));
                true
            }
            EngineEvent::ThinkingDelta { .. } if self.note.is_none() => {
                self.note = Some("thinking".into());
                true
            }
            EngineEvent::TextDelta { text, .. } => {
                self.streamed_chars += text.chars().count();
                if self.note.as_deref() == Some("thinking") {
                    self.note = None;
                }
                true
            }
            EngineEvent::Usage { usage, .. } => {
                self.streamed_chars = 0;
                self.output_tokens += usage.output_tokens.unwrap_or(0);
                true
            }
            _ => false,
        }
    }

    /// The line at `now`: `Consume · 3.2s · 120 tokens · retry 2/10 in 1.0s: HTTP 529`.
    pub fn line(&self, now: Instant) -> String {
        let elapsed = now.saturating_duration_since(self.started);
        // While a reply streams, its tokens are estimated (4 characters each) until its usage
        // arrives.
        let tokens = match self.streamed_chars {
            0 => format!("{} tokens", self.output_tokens),
            chars => format!("~{} tokens", self.output_tokens + chars.div_ceil(4) as u64),
        };
        let mut line = format!("{} · {} · {tokens}", self.state, seconds(elapsed));
        if let Some(note) = &self.note {
            line.push_str(" · ");
            line.push_str(note);
        }
        line.push_str(" · Ctrl+C to interrupt");
        line
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// The first line of an error, cut short.
fn short_error(error: &str) -> String {
    super::render::shorten(error.lines().next().unwrap_or(""), 60)
}

/// What an edge means to someone waiting: `Some(Some(note))` to show, `Some(None)` to clear
/// the note, `None` to keep the one shown — the edge's `status` in the table.
pub fn edge_meaning(record: &TraceRecord) -> Option<Option<String>> {
    // An edited table's edge that the engine does not know: nothing to say about it.
    match Edge::from_id(&record.edge)?.status()? {
        "" => Some(None),
        note => Some(Some(note.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;

    fn record(edge: &str, to: &'static str, detail: Option<&str>) -> TraceRecord {
        TraceRecord {
            record_type: "transition",
            seq: 1,
            t_ms: 0.0,
            turn: 1,
            from: "Request",
            to,
            edge: edge.into(),
            kind: "internal",
            reason: None,
            event: String::new(),
            guards: Default::default(),
            counters: Default::default(),
            delay_ms: None,
            detail: detail.map(str::to_owned),
            link: None,
        }
    }

    #[test]
    fn the_line_names_the_state_time_tokens_and_the_edge() {
        let t0 = Instant::now();
        let mut status = Status::new(t0);
        status.observe(&EngineEvent::Transition(record("prepare.request", "Request", None)));
        assert_eq!(status.line(t0 + Duration::from_millis(1200)), "Request · 1.2s · 0 tokens · Ctrl+C to interrupt");
        status.observe(&EngineEvent::Retrying {
            attempt: 2,
            max: 10,
            delay: Duration::from_secs(1),
            error: "HTTP 529: overloaded".into(),
        });
        status.observe(&EngineEvent::Transition(record("request.retry", "Request", Some("HTTP 529"))));
        let line = status.line(t0 + Duration::from_secs(2));
        assert_eq!(line, "Request · 2.0s · 0 tokens · retry 2/10 in 1.0s: HTTP 529: overloaded · Ctrl+C to interrupt");
        status.observe(&EngineEvent::Transition(record("request.stream_opened", "Consume", None)));
        status.observe(&EngineEvent::TextDelta { index: 0, text: "Hello, world".into() });
        assert_eq!(status.line(t0 + Duration::from_secs(3)), "Consume · 3.0s · ~3 tokens · Ctrl+C to interrupt");
        let usage = Usage { output_tokens: Some(42), ..Usage::default() };
        status.observe(&EngineEvent::Usage { model: "m".into(), usage, cost_usd: None });
        assert_eq!(status.line(t0 + Duration::from_secs(3)), "Consume · 3.0s · 42 tokens · Ctrl+C to interrupt");
        status.observe(&EngineEvent::Transition(record("recover.max_output_tokens_escalate", "Request", None)));
        assert!(status.line(t0).contains("escalating output cap to 64K"));
        status.observe(&EngineEvent::Transition(record("recover.reactive_compact_retry", "Prepare", None)));
        assert!(status.line(t0).contains("compacting history"));
    }

    #[test]
    fn compact_has_a_line_of_its_own() {
        let t0 = Instant::now();
        let mut status = Status::compacting(t0);
        assert_eq!(
            status.line(t0 + Duration::from_millis(300)),
            "/compact · 0.3s · 0 tokens · compacting history · Ctrl+C to interrupt"
        );
        let usage = Usage { output_tokens: Some(120), ..Usage::default() };
        status.observe(&EngineEvent::Usage { model: "m".into(), usage, cost_usd: None });
        assert_eq!(status.line(t0), "/compact · 0.0s · 120 tokens · compacting history · Ctrl+C to interrupt");
    }
}
