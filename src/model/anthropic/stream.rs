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
//!
//! After the last event the reply goes on reading the body to its end, for at most
//! [`TAIL_WAIT`] (what is left after that is read by a task of its own, for at most
//! [`DRAIN_TIMEOUT`]): a connection whose response was read to its end goes back to the
//! client's pool before the next request is sent, so a session uses one connection instead
//! of opening one per request (and, against a TLS endpoint, shaking hands each time).

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

/// How long a reply waits, after its last event, for the end of its body before it ends
/// anyway (a server normally ends the body at once; one that keeps it open costs this much).
pub const TAIL_WAIT: Duration = Duration::from_millis(500);

/// How long the rest of a body is read in the background after [`TAIL_WAIT`].
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Chunks after the last event a reply reads before it leaves the rest to the background.
const TAIL_CHUNKS: usize = 16;

/// Read a response body as a reply. `idle_timeout` bounds the wait for each chunk.
pub fn sse_reply<S, B, E>(body: S, idle_timeout: Duration) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Error + Send + 'static,
{
    sse_reply_with_id(body, idle_timeout, None)
}

/// [`sse_reply`] for the response whose `request-id` header was `request_id`
/// ([`Reply::request_id`]).
pub fn sse_reply_with_id<S, B, E>(body: S, idle_timeout: Duration, request_id: Option<String>) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Error + Send + 'static,
{
    Box::pin(SseReply {
        body: Some(Box::pin(body)),
        parser: Parser::new(),
        idle_timeout,
        timer: None,
        over: false,
        tail: None,
        request_id,
    })
}

/// The reply behind [`sse_reply`].
struct SseReply<S> {
    /// The body; taken by the task that reads its rest after the last event.
    body: Option<Pin<Box<S>>>,
    parser: Parser,
    idle_timeout: Duration,
    /// Created on first poll (a tokio timer needs the runtime), reset on every chunk.
    timer: Option<Pin<Box<Sleep>>>,
    /// The last event, a failure or the end of the body was seen: nothing more comes.
    over: bool,
    /// After the last event: the deadline for the end of the body, and the chunks read since.
    tail: Option<(Pin<Box<Sleep>>, usize)>,
    /// The response's `request-id` header.
    request_id: Option<String>,
}

impl<S, B, E> SseReply<S>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Error + Send + 'static,
{
    /// After the last event ([`Reply::poll_finish`]): read on to the end of the body, so the
    /// connection goes back to the pool. `Ready` once the body ended (or failed), or once [`TAIL_WAIT`] or
    /// [`TAIL_CHUNKS`] ran out, the rest then left to a task of its own.
    fn poll_tail(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(body) = self.body.as_mut() else { return Poll::Ready(()) };
        let (deadline, chunks) = self.tail.get_or_insert_with(|| (Box::pin(tokio::time::sleep(TAIL_WAIT)), 0));
        loop {
            match body.as_mut().poll_next(cx) {
                Poll::Ready(None | Some(Err(_))) => {
                    self.body = None;
                    return Poll::Ready(());
                }
                Poll::Ready(Some(Ok(_))) if *chunks < TAIL_CHUNKS => *chunks += 1,
                Poll::Ready(Some(Ok(_))) => break,
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => break,
                Poll::Pending => return Poll::Pending,
            }
        }
        if let (Some(mut body), Ok(runtime)) = (self.body.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                let rest = async { while let Some(Ok(_)) = futures::StreamExt::next(&mut body).await {} };
                let _ = tokio::time::timeout(DRAIN_TIMEOUT, rest).await;
            });
        }
        Poll::Ready(())
    }
}

impl<S, B, E> Reply for SseReply<S>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Error + Send + 'static,
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
        let Some(body) = this.body.as_mut() else { return Poll::Ready(None) };
        match body.as_mut().poll_next(cx) {
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
                let failure = intake.failure();
                if this.over && failure.is_none() {
                    // The last event: `poll_finish` reads on to the end of the body.
                    this.tail = Some((Box::pin(tokio::time::sleep(TAIL_WAIT)), 0));
                }
                Poll::Ready(Some(failure.map_or(Ok(()), Err)))
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

    /// After a clean last event, the rest of the body; after a failure, nothing (the
    /// connection is dropped).
    fn poll_finish(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.tail.is_none() {
            return Poll::Ready(());
        }
        this.poll_tail(cx)
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

    /// After `message_stop`, `finish` reads the body to its end; a body that stays open is
    /// left to the background once [`TAIL_WAIT`] has passed, so `finish` still returns.
    #[tokio::test]
    async fn finish_reads_the_body_to_its_end_or_gives_up_after_the_tail_wait() {
        let read_to = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = read_to.clone();
        let parts = chunks(&["data: {\"type\":\"message_stop\"}\n\n", "\n", "\n"]);
        let body = futures::stream::iter(parts).inspect(move |_| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let mut reply = sse_reply(body, DEFAULT_IDLE_TIMEOUT);
        let mut asm = Assembler::new();
        while read(&mut reply, &mut asm, &mut |_| {}).await.is_some() {}
        assert_eq!(read_to.load(std::sync::atomic::Ordering::SeqCst), 1, "reading stops at message_stop");
        crate::model::reply::finish(&mut reply).await;
        assert_eq!(read_to.load(std::sync::atomic::Ordering::SeqCst), 3, "finish reads the rest");

        let open =
            futures::stream::iter(chunks(&["data: {\"type\":\"message_stop\"}\n\n"])).chain(futures::stream::pending());
        let mut reply = sse_reply(open, DEFAULT_IDLE_TIMEOUT);
        while read(&mut reply, &mut asm, &mut |_| {}).await.is_some() {}
        crate::model::reply::finish(&mut reply).await;
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
