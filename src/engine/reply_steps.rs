//! What one read of a reply changed, gathered while the reply pushes into the assembler and
//! acted on once the read is done (the assembler is lent to the reply meanwhile).
//!
//! Consecutive pieces of text (or of thinking) are joined, so a chunk of a real stream, a few
//! hundred deltas, makes one `TextDelta` event, not hundreds: the output sees the same text in
//! fewer, larger writes, and nothing is allocated per delta.

use crate::model::assemble::Step;
use crate::protocol::ApiErrorBody;

/// One thing a read changed that the engine acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// Text appended to block `index` (consecutive pieces of one block joined).
    Text {
        /// Block index.
        index: usize,
        /// The text.
        text: String,
    },
    /// Thinking appended to block `index` (consecutive pieces of one block joined).
    Thinking {
        /// Block index.
        index: usize,
        /// The thinking.
        text: String,
    },
    /// `message_start` arrived.
    Started,
    /// Block `index` started, as `block`.
    BlockStarted {
        /// Block index.
        index: usize,
        /// The block as it started.
        block: serde_json::Value,
    },
    /// Input JSON appended to tool call block `index` (consecutive pieces joined).
    InputJson {
        /// Block index.
        index: usize,
        /// The JSON text.
        text: String,
    },
    /// Block `index` is complete.
    BlockDone(usize),
    /// `message_delta` arrived.
    Delta,
    /// `message_stop` arrived.
    Stopped,
    /// An `error` event ended the stream.
    Failed(ApiErrorBody),
}

/// The [`Seen`]s of one read, in order.
#[derive(Debug, Default)]
pub struct ReplySteps {
    seen: Vec<Seen>,
}

impl ReplySteps {
    /// Note one step.
    pub fn note(&mut self, step: Step<'_>) {
        match step {
            Step::Quiet => {}
            Step::Text { index, text } => match self.seen.last_mut() {
                Some(Seen::Text { index: last, text: joined }) if *last == index => join(joined, &text),
                _ => self.seen.push(Seen::Text { index, text: text.into_owned() }),
            },
            Step::Thinking { index, text } => match self.seen.last_mut() {
                Some(Seen::Thinking { index: last, text: joined }) if *last == index => join(joined, &text),
                _ => self.seen.push(Seen::Thinking { index, text: text.into_owned() }),
            },
            Step::InputJson { index, text } => match self.seen.last_mut() {
                Some(Seen::InputJson { index: last, text: joined }) if *last == index => join(joined, &text),
                _ => self.seen.push(Seen::InputJson { index, text: text.into_owned() }),
            },
            Step::Started => self.seen.push(Seen::Started),
            Step::BlockStarted { index, block } => self.seen.push(Seen::BlockStarted { index, block }),
            Step::Delta => self.seen.push(Seen::Delta),
            Step::BlockDone(index) => self.seen.push(Seen::BlockDone(index)),
            Step::Stopped => self.seen.push(Seen::Stopped),
            Step::Failed(error) => self.seen.push(Seen::Failed(error)),
        }
    }

    /// Everything noted since the last call, oldest first.
    pub fn take(&mut self) -> std::vec::Drain<'_, Seen> {
        self.seen.drain(..)
    }
}

/// Append a piece to a run of text, making room for the pieces that usually follow it in one
/// read (a chunk of a real stream carries a few hundred) when it grows, so joining them rarely
/// reallocates. A run of one piece (the scripted model's) stays its own size.
fn join(joined: &mut String, piece: &str) {
    if joined.capacity() - joined.len() < piece.len() {
        joined.reserve(piece.len().max(1024));
    }
    joined.push_str(piece);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn consecutive_pieces_join_and_everything_else_keeps_its_place() {
        let mut steps = ReplySteps::default();
        for step in [
            Step::Thinking { index: 0, text: Cow::Borrowed("hm") },
            Step::Thinking { index: 0, text: Cow::Owned("m".into()) },
            Step::Quiet,
            Step::Text { index: 1, text: Cow::Borrowed("a") },
            Step::Text { index: 1, text: Cow::Borrowed("b") },
            Step::BlockDone(1),
            Step::Text { index: 2, text: Cow::Borrowed("c") },
            Step::Stopped,
        ] {
            steps.note(step);
        }
        let seen: Vec<Seen> = steps.take().collect();
        assert_eq!(
            seen,
            [
                Seen::Thinking { index: 0, text: "hmm".into() },
                Seen::Text { index: 1, text: "ab".into() },
                Seen::BlockDone(1),
                Seen::Text { index: 2, text: "c".into() },
                Seen::Stopped
            ]
        );
        assert_eq!(steps.take().count(), 0);
    }
}
