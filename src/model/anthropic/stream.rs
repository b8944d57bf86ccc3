//! From response body bytes to an [`EventStream`]: SSE framing ([`super::sse`]), then one
//! [`StreamEvent`] per `data` payload, dispatched on its JSON `type` (the `event:` name may be
//! missing, so it is not trusted). Each chunk of the body is framed and decoded at once by a
//! [`Reader`] (compact deltas taken whole from the raw bytes, other events lent out of the
//! chunk), and the owned events are queued for the consumer.
//!
//! The stream ends after `message_stop` or an `error` event, after the first failure, or when
//! the body ends. An early end is not an error here: the shared assembler sees no
//! `message_stop` and reports the reply as incomplete (retryable). Failures map to
//! [`ModelError`]: bad JSON is `Protocol`, a transport error is `Connection`, and no bytes for
//! the idle timeout is `Idle`.

use std::collections::VecDeque;
use std::error::Error;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::time::{Instant, Sleep};

use super::decode::{Decoded, Reader, Scratch};
use super::sse::Parser;
use crate::model::{EventStream, ModelError};
use crate::protocol::StreamEvent;

/// How long a stream may go without a single byte before it fails with [`ModelError::Idle`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Turn a response body into events. `idle_timeout` bounds the wait for each chunk.
pub fn event_stream<S, B, E>(body: S, idle_timeout: Duration) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: Error,
{
    Box::pin(SseEvents {
        body: Box::pin(body),
        parser: Parser::new(),
        queue: VecDeque::new(),
        scratch: Scratch::new(),
        idle_timeout,
        timer: None,
        body_done: false,
        finished: false,
    })
}

/// The stream behind [`event_stream`].
struct SseEvents<S> {
    body: Pin<Box<S>>,
    parser: Parser,
    /// Events decoded from the chunks read so far, not yet yielded. A terminal event or a
    /// failure is always last: nothing after it is decoded.
    queue: VecDeque<Result<StreamEvent, ModelError>>,
    /// Unescaped text, reused from one event to the next.
    scratch: Scratch,
    idle_timeout: Duration,
    /// Created on first poll (a tokio timer needs the runtime), reset on every chunk.
    timer: Option<Pin<Box<Sleep>>>,
    /// The body has ended; what the parser holds is all there is.
    body_done: bool,
    /// A terminal event or a failure was yielded: nothing more comes.
    finished: bool,
}

impl<S, B, E> Stream for SseEvents<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Error,
{
    type Item = Result<StreamEvent, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Every field is Unpin (the body and the timer are boxed).
        let this = self.get_mut();
        loop {
            if let Some(event) = this.queue.pop_front() {
                this.finished = is_last(&event);
                return Poll::Ready(Some(event));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            if this.body_done {
                this.finished = true;
                continue;
            }
            match this.body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let queue = &mut this.queue;
                    let mut reader = Reader::new(&mut this.scratch, |decoded: Result<Decoded<'_>, ModelError>| {
                        let event = decoded.map(Decoded::into_owned);
                        let last = is_last(&event);
                        queue.push_back(event);
                        if last { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
                    });
                    let _ = this.parser.feed_with(chunk.as_ref(), &mut reader);
                    if let Some(timer) = this.timer.as_mut() {
                        timer.as_mut().reset(Instant::now() + this.idle_timeout);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(ModelError::Connection(error_chain(&e)))));
                }
                Poll::Ready(None) => this.body_done = true,
                Poll::Pending => {
                    let idle = this.idle_timeout;
                    let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                    if timer.as_mut().poll(cx).is_ready() {
                        this.finished = true;
                        return Poll::Ready(Some(Err(ModelError::Idle(idle))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// Whether nothing may follow `event`: `message_stop`, an `error` event or a failure.
fn is_last(event: &Result<StreamEvent, ModelError>) -> bool {
    matches!(event, Ok(StreamEvent::MessageStop | StreamEvent::Error { .. }) | Err(_))
}

/// An error and its sources, joined with `: ` (reqwest's own message is often just
/// "error decoding response body"; the cause is in the chain).
pub(crate) fn error_chain(error: &dyn Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::io;

    fn chunks(parts: &[&'static str]) -> Vec<Result<&'static [u8], io::Error>> {
        parts.iter().map(|p| Ok(p.as_bytes())).collect()
    }

    #[tokio::test]
    async fn events_come_out_and_stop_after_message_stop() {
        let body = futures::stream::iter(chunks(&[
            "event: ping\ndata: {\"type\": \"ping\"}\n\ndata: {\"type\":\"message_st",
            "op\"}\n\ndata: {\"type\":\"ping\"}\n\n",
        ]));
        let events: Vec<_> = event_stream(body, DEFAULT_IDLE_TIMEOUT).collect().await;
        assert_eq!(events, vec![Ok(StreamEvent::Ping), Ok(StreamEvent::MessageStop)]);
    }

    #[tokio::test]
    async fn bad_json_is_a_protocol_error_and_ends_the_stream() {
        let body = futures::stream::iter(chunks(&["data: {not json\n\ndata: {\"type\":\"ping\"}\n\n"]));
        let events: Vec<_> = event_stream(body, DEFAULT_IDLE_TIMEOUT).collect().await;
        assert_eq!(events.len(), 1);
        let Err(ModelError::Protocol(message)) = &events[0] else { panic!("{events:?}") };
        assert!(message.ends_with(": {not json"), "{message}");
    }

    #[tokio::test]
    async fn transport_error_is_a_connection_error() {
        let items: Vec<Result<&'static [u8], io::Error>> = vec![
            Ok(b"data: {\"type\":\"ping\"}\n\n"),
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer")),
        ];
        let events: Vec<_> = event_stream(futures::stream::iter(items), DEFAULT_IDLE_TIMEOUT).collect().await;
        assert_eq!(events, vec![Ok(StreamEvent::Ping), Err(ModelError::Connection("reset by peer".into()))]);
    }

    #[tokio::test]
    async fn body_end_without_message_stop_just_ends() {
        let body = futures::stream::iter(chunks(&["data: {\"type\":\"ping\"}\n\ndata: {\"type\":\"message_stop\"}"]));
        let events: Vec<_> = event_stream(body, DEFAULT_IDLE_TIMEOUT).collect().await;
        assert_eq!(events, vec![Ok(StreamEvent::Ping)]);
    }

    #[tokio::test]
    async fn silence_longer_than_the_idle_timeout_fails() {
        let idle = Duration::from_millis(100);
        let first = futures::stream::iter(chunks(&["data: {\"type\":\"ping\"}\n\n"]));
        let body = first.chain(futures::stream::pending());
        let mut events = event_stream(body, idle);
        assert_eq!(events.next().await, Some(Ok(StreamEvent::Ping)));
        let started = Instant::now();
        assert_eq!(events.next().await, Some(Err(ModelError::Idle(idle))));
        assert!(started.elapsed() >= idle);
        assert_eq!(events.next().await, None);
    }
}
