//! Replies in protocols other than the Messages API (Chat Completions, Responses), turned
//! into its events as they stream, so the assembler, the table's facts and the retries are the
//! same code for every provider. A provider supplies a [`Translate`]; [`reply`] does the SSE
//! framing, the idle timeout and the end of the stream.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::error_chain::error_chain;
use crate::model::anthropic::sse::Parser;
use crate::model::{ModelError, ReplyStream};
use crate::protocol::StreamEvent;

/// Turns one protocol's streamed events into the Messages API's.
pub trait Translate {
    /// The events of one SSE `data` payload.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] for a payload the protocol does not allow.
    fn data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ModelError>;

    /// The events the end of the body adds (the stop, for a protocol whose stream may end
    /// without a terminator); none leaves the reply incomplete.
    fn body_ended(&mut self) -> Vec<StreamEvent>;
}

/// A response body in another protocol as a reply: SSE framing, each event's data translated
/// by `translator`, the idle timeout on every chunk. The reply ends after the translated
/// `message_stop` or `error`, after a failure, or at the end of the body (with what
/// [`Translate::body_ended`] adds).
pub fn reply<S, B, E, T>(body: S, idle_timeout: Duration, translator: T) -> ReplyStream
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
    T: Translate + Send + 'static,
{
    struct State<S, T> {
        body: S,
        parser: Parser,
        translator: T,
        queue: VecDeque<Result<StreamEvent, ModelError>>,
        done: bool,
        /// The last event was read cleanly: what follows reads the body to its end.
        clean_end: bool,
    }
    let state =
        State { body, parser: Parser::new(), translator, queue: VecDeque::new(), done: false, clean_end: false };
    let events = futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(event) = state.queue.pop_front() {
                return Some((event, state));
            }
            if state.done {
                if state.clean_end {
                    // Read the rest of the body (bounded), so the connection is reused.
                    let rest = async { while let Some(Ok(_)) = state.body.next().await {} };
                    let _ = tokio::time::timeout(crate::model::anthropic::stream::TAIL_WAIT, rest).await;
                }
                return None;
            }
            match tokio::time::timeout(idle_timeout, state.body.next()).await {
                Err(_) => {
                    state.done = true;
                    state.queue.push_back(Err(ModelError::Idle(idle_timeout)));
                }
                Ok(Some(Err(e))) => {
                    state.done = true;
                    state.queue.push_back(Err(ModelError::Connection(error_chain(&e))));
                }
                Ok(None) => {
                    state.done = true;
                    state.queue.extend(state.translator.body_ended().into_iter().map(Ok));
                }
                Ok(Some(Ok(bytes))) => {
                    let State { parser, translator, queue, .. } = &mut state;
                    let flow = parser.feed(bytes.as_ref(), |event| match translator.data(event.data) {
                        Ok(events) => {
                            let last = events
                                .iter()
                                .any(|e| matches!(e, StreamEvent::MessageStop | StreamEvent::Error { .. }));
                            queue.extend(events.into_iter().map(Ok));
                            if last { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
                        }
                        Err(error) => {
                            queue.push_back(Err(error));
                            ControlFlow::Break(())
                        }
                    });
                    if parser.overflowed() {
                        queue.push_back(Err(ModelError::Oversized(crate::model::anthropic::sse::MAX_EVENT_BYTES)));
                    }
                    let clean_end = !parser.overflowed()
                        && matches!(queue.back(), Some(Ok(StreamEvent::MessageStop | StreamEvent::Error { .. })));
                    if flow.is_break() {
                        state.done = true;
                        state.clean_end = clean_end;
                    }
                }
            }
        }
    });
    crate::model::reply::from_events(Box::pin(events))
}
