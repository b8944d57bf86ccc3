//! The reply to one request, as the engine reads it: a [`Reply`] pushes what arrives straight
//! into the caller's [`Assembler`] and reports each [`Step`], instead of handing over one owned
//! event at a time. The Anthropic reader decodes a delta's text straight onto the end of the
//! block it extends, so reading a reply allocates nothing per event; providers that produce
//! owned events (the scripted model) are adapted with [`from_events`].

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use serde_json::{Value, json};

use crate::model::ModelError;
use crate::model::assemble::{Assembler, Step};
use crate::protocol::{ContentBlock, Delta, Message, MessageDeltaBody, MessageStart, StopReason, StreamEvent};

/// One streamed reply, read a piece at a time into the caller's assembler.
pub trait Reply: Send {
    /// Wait for the next piece of the reply (a chunk of the body, one scripted event), push
    /// every event it completes into `asm` and call `on_step` with what each changed.
    ///
    /// `Ready(Some(Ok(())))` after a piece was read; `Ready(None)` once the reply is over:
    /// after `message_stop` or an `error` event was pushed, or when the body ended (the
    /// assembler then reports the reply incomplete). `Ready(Some(Err(_)))` is a failure
    /// (transport, idle timeout, bad event), after which the reply is over; the events of the
    /// piece before the failure were pushed, and reported, first. `on_step` is only called
    /// in a poll that returns `Ready`.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        asm: &mut Assembler,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Poll<Option<Result<(), ModelError>>>;

    /// The server's id for the request this reply answers (the Messages API's `request-id`
    /// response header), when it gave one.
    fn request_id(&self) -> Option<&str> {
        None
    }

    /// After the last event: finish reading the transport (the rest of an HTTP body, so its
    /// connection can be reused). `Ready` when there is nothing more to wait for; a reply with
    /// no transport is finished at once.
    fn poll_finish(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

/// A boxed reply, as [`crate::model::Model::stream`] returns it.
pub type ReplyStream = Pin<Box<dyn Reply>>;

/// A stream of owned events, which [`from_events`] turns into a [`Reply`].
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// Read the next piece of `reply` into `asm` ([`Reply::poll_read`]).
pub async fn read(
    reply: &mut ReplyStream,
    asm: &mut Assembler,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Option<Result<(), ModelError>> {
    std::future::poll_fn(|cx| reply.as_mut().poll_read(cx, asm, on_step)).await
}

/// Finish `reply` after its last event ([`Reply::poll_finish`]).
pub async fn finish(reply: &mut ReplyStream) {
    std::future::poll_fn(|cx| reply.as_mut().poll_finish(cx)).await;
}

/// Read `reply` to its end into `asm`, calling `on_step` with every step. Generic over the
/// callback, so the future is `Send` when the callback is (a tool's side request).
///
/// # Errors
/// The failure that ended the reply. (An `error` event is a [`Step::Failed`], not an error
/// here.)
pub async fn read_to_end<F: FnMut(Step<'_>) + ?Sized>(
    reply: &mut ReplyStream,
    asm: &mut Assembler,
    on_step: &mut F,
) -> Result<(), ModelError> {
    loop {
        let piece = std::future::poll_fn(|cx| reply.as_mut().poll_read(cx, asm, &mut |step| on_step(step))).await;
        match piece {
            Some(piece) => piece?,
            None => return Ok(()),
        }
    }
}

/// A reply made of owned events, each pushed as it comes; the stream is not polled again after
/// `message_stop`, an `error` event or a failure.
pub fn from_events(events: EventStream) -> ReplyStream {
    Box::pin(Events { events, over: false, exhausted: false })
}

/// A reply that is one whole message, streamed as the Messages API would stream it: each block
/// started empty and filled by one delta (a tool call's input as one JSON fragment), then
/// `stop_reason` and `message_stop`. For a [`crate::model::Model`] whose answers come whole: a
/// local model, a fixed script, a test.
pub fn whole(message: &Message, stop_reason: StopReason) -> ReplyStream {
    let mut events = vec![StreamEvent::MessageStart { message: MessageStart::default() }];
    for (index, block) in message.content.iter().enumerate() {
        let delta = |delta| StreamEvent::ContentBlockDelta { index, delta };
        let (start, deltas) = match block {
            ContentBlock::Text { text, citations } => {
                let mut start = json!({"type": "text", "text": ""});
                if let Some(citations) = citations {
                    start["citations"] = json!(citations);
                }
                (start, vec![delta(Delta::TextDelta { text: text.clone() })])
            }
            ContentBlock::Thinking { thinking, signature } => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    delta(Delta::ThinkingDelta { thinking: thinking.clone() }),
                    delta(Delta::SignatureDelta { signature: signature.clone() }),
                ],
            ),
            ContentBlock::ToolUse { id, name, input } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                vec![delta(Delta::InputJsonDelta { partial_json: input.to_string() })],
            ),
            // Blocks that arrive whole in their start.
            ContentBlock::RedactedThinking { .. } | ContentBlock::ToolResult { .. } | ContentBlock::Other(_) => {
                (serde_json::to_value(block).unwrap_or(Value::Null), Vec::new())
            }
        };
        events.push(StreamEvent::ContentBlockStart { index, content_block: start });
        events.extend(deltas);
        events.push(StreamEvent::ContentBlockStop { index });
    }
    events.push(StreamEvent::MessageDelta {
        delta: MessageDeltaBody { stop_reason: Some(stop_reason), stop_sequence: None },
        usage: None,
    });
    events.push(StreamEvent::MessageStop);
    from_events(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
}

/// The reply behind [`from_events`].
struct Events {
    events: EventStream,
    over: bool,
    /// The stream returned `None`: it is not polled again.
    exhausted: bool,
}

impl Reply for Events {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        asm: &mut Assembler,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Poll<Option<Result<(), ModelError>>> {
        let this = self.get_mut();
        if this.over {
            return Poll::Ready(None);
        }
        let pushed = match std::task::ready!(this.events.as_mut().poll_next(cx)) {
            None => {
                this.over = true;
                this.exhausted = true;
                return Poll::Ready(None);
            }
            Some(event) => event.and_then(|event| asm.push(event)),
        };
        match pushed {
            Ok(step) => {
                this.over = matches!(step, Step::Stopped | Step::Failed(_));
                on_step(step);
                Poll::Ready(Some(Ok(())))
            }
            Err(error) => {
                this.over = true;
                Poll::Ready(Some(Err(error)))
            }
        }
    }

    /// The rest of the event stream, dropped: a stream over an HTTP body reads the body to its
    /// end there ([`crate::model::translate::reply`]), so the connection can be reused.
    fn poll_finish(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        while !this.exhausted {
            this.exhausted = std::task::ready!(this.events.as_mut().poll_next(cx)).is_none();
        }
        Poll::Ready(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::protocol::{ApiErrorBody, Delta};

    fn events(items: Vec<Result<StreamEvent, ModelError>>) -> ReplyStream {
        from_events(Box::pin(futures::stream::iter(items)))
    }

    /// Every step of a reply read to its end (as text), how it ended, and what it assembled;
    /// reading once more must give nothing. Shared with the Anthropic reader's tests.
    pub(crate) async fn steps_of(mut reply: ReplyStream) -> (Vec<String>, Result<(), ModelError>, Assembler) {
        let mut asm = Assembler::new();
        let mut steps = Vec::new();
        let end = read_to_end(&mut reply, &mut asm, &mut |step| steps.push(format!("{step:?}"))).await;
        assert!(read(&mut reply, &mut asm, &mut |_| panic!("read after the end")).await.is_none());
        (steps, end, asm)
    }

    #[tokio::test]
    async fn owned_events_are_pushed_until_message_stop() {
        let start = serde_json::from_value(serde_json::json!(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        ))
        .unwrap();
        let reply = events(vec![
            Ok(start),
            Ok(StreamEvent::ContentBlockDelta { index: 0, delta: Delta::TextDelta { text: "hi".into() } }),
            Ok(StreamEvent::ContentBlockStop { index: 0 }),
            Ok(StreamEvent::MessageStop),
            Ok(StreamEvent::Ping),
        ]);
        let (steps, end, asm) = steps_of(reply).await;
        let started = r#"BlockStarted { index: 0, block: Object {"text": String(""), "type": String("text")} }"#;
        assert_eq!(steps, [started, r#"Text { index: 0, text: "hi" }"#, "BlockDone(0)", "Stopped"]);
        assert_eq!(end, Ok(()));
        assert!(asm.is_complete());
    }

    #[tokio::test]
    async fn a_whole_message_assembles_to_itself() {
        let message = Message {
            role: crate::protocol::Role::Assistant,
            content: vec![
                ContentBlock::Thinking { thinking: "hmm".into(), signature: "sig".into() },
                ContentBlock::text("Let me look."),
                ContentBlock::ToolUse { id: "toolu_1".into(), name: "Read".into(), input: json!({"file_path": "a"}) },
            ],
        };
        let (_, end, asm) = steps_of(whole(&message, StopReason::ToolUse)).await;
        assert_eq!(end, Ok(()));
        assert!(asm.is_complete());
        let blocks: Vec<ContentBlock> = (0..3).filter_map(|i| asm.finished_block(i)).collect();
        assert_eq!(blocks, message.content);
        assert_eq!(asm.finish().stop_reason, Some(StopReason::ToolUse));
    }

    #[tokio::test]
    async fn an_error_event_or_a_failure_ends_the_reply() {
        let error = ApiErrorBody { kind: "overloaded_error".into(), message: "busy".into() };
        let (steps, end, _) = steps_of(events(vec![Ok(StreamEvent::Error { error }), Ok(StreamEvent::Ping)])).await;
        assert_eq!(steps, [r#"Failed(ApiErrorBody { kind: "overloaded_error", message: "busy" })"#]);
        assert_eq!(end, Ok(()));
        let (steps, end, _) = steps_of(events(vec![Err(ModelError::Incomplete), Ok(StreamEvent::Ping)])).await;
        assert!(steps.is_empty());
        assert_eq!(end, Err(ModelError::Incomplete));
        let refused = Ok(StreamEvent::ContentBlockStop { index: 3 });
        let (_, end, _) = steps_of(events(vec![refused])).await;
        assert_eq!(end, Err(ModelError::Protocol("event names block 3, which never started".into())));
    }
}
