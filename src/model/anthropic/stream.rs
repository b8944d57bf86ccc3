//! From response body bytes to a [`Reply`]: SSE framing ([`super::sse`]) and decoding
//! ([`super::decode::Intake`]) of each chunk as it arrives, every event pushed straight into the
//! caller's assembler, each decoded by serde and dispatched on its JSON `type` (the `event:`
//! name may be missing, so it is not trusted). Nothing is queued per event.
//!
//! The reply ends after `message_stop` or an `error` event, after the first failure, or when
//! the body ends. An early end is not an error here: the assembler sees no `message_stop` and
//! reports the reply as incomplete (retryable). Failures map to [`ModelError`]: bad JSON is
//! `Protocol`, a transport error is `Connection`, no bytes for the idle timeout is `Idle`, and a
//! line or event over [`super::sse::MAX_EVENT_BYTES`] is `Oversized` (retryable).

use std::error::Error;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::time::{Instant, Sleep};

use super::decode::Intake;
use super::sse::Parser;
use crate::error_chain::error_chain;
use crate::model::assemble::{Assembler, Step};
use crate::model::{ModelError, Reply, ReplyStream};

/// How long a stream may go without a single byte before it fails with [`ModelError::Idle`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Read a response body as a reply. `idle_timeout` bounds the wait for each chunk.
pub fn sse_reply<S, B, E>(body: S, idle_timeout: Duration) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: Error,
{
    sse_reply_with_id(body, idle_timeout, None)
}

/// [`sse_reply`] for the response whose `request-id` header was `request_id`
/// ([`Reply::request_id`]).
pub fn sse_reply_with_id<S, B, E>(body: S, idle_timeout: Duration, request_id: Option<String>) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: Error,
{
    Box::pin(SseReply {
        body: Box::pin(body),
        parser: Parser::new(),
        idle_timeout,
        timer: None,
        over: false,
        request_id,
    })
}

/// The reply behind [`sse_reply`].
struct SseReply<S> {
    body: Pin<Box<S>>,
    parser: Parser,
    idle_timeout: Duration,
    /// Created on first poll (a tokio timer needs the runtime), reset on every chunk.
    timer: Option<Pin<Box<Sleep>>>,
    /// The last event, a failure or the end of the body was seen: nothing more comes.
    over: bool,
    /// The response's `request-id` header.
    request_id: Option<String>,
}

impl<S, B, E> Reply for SseReply<S>
where
    S: Stream<Item = Result<B, E>> + Send,
    B: AsRef<[u8]>,
    E: Error,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        asm: &mut Assembler,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Poll<Option<Result<(), ModelError>>> {
        // Every field is Unpin (the body and the timer are boxed).
        let this = self.get_mut();
        if this.over {
            return Poll::Ready(None);
        }
        match this.body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let mut intake = Intake::new(asm, on_step);
                // A break means the last event was read, or a failure.
                this.over = this.parser.feed_with(chunk.as_ref(), &mut intake).is_break();
                if let Some(timer) = this.timer.as_mut() {
                    timer.as_mut().reset(Instant::now() + this.idle_timeout);
                }
                if this.parser.overflowed() {
                    return Poll::Ready(Some(Err(ModelError::Oversized(super::sse::MAX_EVENT_BYTES))));
                }
                Poll::Ready(Some(intake.failure().map_or(Ok(()), Err)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.over = true;
                Poll::Ready(Some(Err(ModelError::Connection(error_chain(&e)))))
            }
            Poll::Ready(None) => {
                this.over = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let idle = this.idle_timeout;
                let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                if timer.as_mut().poll(cx).is_ready() {
                    this.over = true;
                    return Poll::Ready(Some(Err(ModelError::Idle(idle))));
                }
                Poll::Pending
            }
        }
    }

    fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::reply::read;
    use crate::model::reply::tests::steps_of;
    use futures::StreamExt;
    use std::io;

    fn chunks(parts: &[&'static str]) -> Vec<Result<&'static [u8], io::Error>> {
        parts.iter().map(|p| Ok(p.as_bytes())).collect()
    }

    #[tokio::test]
    async fn events_are_pushed_and_the_reply_stops_after_message_stop() {
        let body = futures::stream::iter(chunks(&[
            "event: ping\ndata: {\"type\": \"ping\"}\n\ndata: {\"type\":\"message_st",
            "op\"}\n\ndata: {\"type\":\"ping\"}\n\n",
            "data: {\"type\":\"ping\"}\n\n",
        ]));
        let (steps, end, _) = steps_of(sse_reply(body, DEFAULT_IDLE_TIMEOUT)).await;
        assert_eq!(steps, ["Quiet", "Stopped"]);
        assert_eq!(end, Ok(()));
    }

    #[tokio::test]
    async fn bad_json_is_a_protocol_error_and_ends_the_reply() {
        let body = futures::stream::iter(chunks(&["data: {not json\n\ndata: {\"type\":\"ping\"}\n\n"]));
        let (steps, end, _) = steps_of(sse_reply(body, DEFAULT_IDLE_TIMEOUT)).await;
        assert!(steps.is_empty());
        let Err(ModelError::Protocol(message)) = &end else { panic!("{end:?}") };
        assert!(message.ends_with(": {not json"), "{message}");
    }

    #[tokio::test]
    async fn a_line_past_the_cap_is_a_retryable_oversized_error() {
        // Five chunks of 4 MiB without a line end: the fifth passes the 16 MiB cap.
        let items: Vec<Result<Vec<u8>, io::Error>> = (0..5).map(|_| Ok(vec![b'a'; 4 * 1024 * 1024])).collect();
        let (steps, end, _) = steps_of(sse_reply(futures::stream::iter(items), DEFAULT_IDLE_TIMEOUT)).await;
        assert!(steps.is_empty());
        assert_eq!(end, Err(ModelError::Oversized(super::super::sse::MAX_EVENT_BYTES)));
        assert_eq!(end.unwrap_err().class(), crate::model::ErrorClass::Retryable);
    }

    #[tokio::test]
    async fn transport_error_is_a_connection_error() {
        let items: Vec<Result<&'static [u8], io::Error>> = vec![
            Ok(b"data: {\"type\":\"ping\"}\n\n"),
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer")),
        ];
        let (steps, end, _) = steps_of(sse_reply(futures::stream::iter(items), DEFAULT_IDLE_TIMEOUT)).await;
        assert_eq!(steps, ["Quiet"]);
        assert_eq!(end, Err(ModelError::Connection("reset by peer".into())));
    }

    #[tokio::test]
    async fn body_end_without_message_stop_just_ends() {
        let body = futures::stream::iter(chunks(&["data: {\"type\":\"ping\"}\n\ndata: {\"type\":\"message_stop\"}"]));
        let (steps, end, _) = steps_of(sse_reply(body, DEFAULT_IDLE_TIMEOUT)).await;
        assert_eq!(steps, ["Quiet"]);
        assert_eq!(end, Ok(()));
    }

    #[tokio::test]
    async fn silence_longer_than_the_idle_timeout_fails() {
        let idle = Duration::from_millis(100);
        let first = futures::stream::iter(chunks(&["data: {\"type\":\"ping\"}\n\n"]));
        let mut reply = sse_reply(first.chain(futures::stream::pending()), idle);
        let mut asm = Assembler::new();
        assert_eq!(read(&mut reply, &mut asm, &mut |_| {}).await, Some(Ok(())));
        let started = Instant::now();
        assert_eq!(read(&mut reply, &mut asm, &mut |_| {}).await, Some(Err(ModelError::Idle(idle))));
        assert!(started.elapsed() >= idle);
        assert_eq!(read(&mut reply, &mut asm, &mut |_| {}).await, None);
    }
}
