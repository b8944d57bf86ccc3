//! The HTTP side of rmcp's Streamable HTTP transport: rmcp's reqwest client, with two rules
//! of agentloop's on top.
//!
//! - **Authorization.** Every request carries the server's bearer token when it has one
//!   ([`Authorizer::token`]). A 401 or a 403 with a `WWW-Authenticate` challenge gets a token
//!   that may pass ([`Authorizer::authorize`]: another request's, a refreshed one, or a new
//!   sign-in) and the request is sent again, at most twice.
//! - **The session's stream first.** After `notifications/initialized` of a session, rmcp
//!   opens the session's standalone event stream (an HTTP GET) on a task of its own. The next
//!   POST waits (at most [`STREAM_WAIT`]) until that GET has its answer, so a server that
//!   sends a request's response on the standalone stream (after closing the request's own
//!   stream, SEP-1699) finds the stream open, and the response of a request is never raced
//!   by the stream that should wait for it.
//!
//! Reconnecting a closed stream after the server's `retry` interval, with `Last-Event-ID`,
//! is rmcp's.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientNotification};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::sync::watch;

use crate::mcp::oauth::{Authorizer, Challenge, OAuthError, Refusal};

/// The longest a POST waits for the session's standalone stream to open.
pub const STREAM_WAIT: Duration = Duration::from_secs(1);

/// The largest SSE event of a stream opened without a limit (rmcp's own default).
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;

/// How many times one request is sent again after a sign-in.
const RETRIES: u32 = 2;

/// The transport's error type.
type Error = StreamableHttpError<reqwest::Error>;

/// rmcp's reqwest client with authorization and the standalone stream's ordering.
#[derive(Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    auth: Option<Arc<Authorizer>>,
    /// `true` from a session's `notifications/initialized` until its stream's GET is answered.
    opening: Arc<watch::Sender<bool>>,
}

impl HttpClient {
    /// Requests over `http`, authorized by `auth` when the server needs it.
    pub fn new(http: reqwest::Client, auth: Option<Arc<Authorizer>>) -> HttpClient {
        HttpClient { http, auth, opening: Arc::new(watch::channel(false).0) }
    }

    /// The token to send now.
    async fn token(&self) -> Option<String> {
        match &self.auth {
            Some(auth) => auth.token().await,
            None => None,
        }
    }

    /// Wait until the session's standalone stream is open (or [`STREAM_WAIT`] passed).
    async fn stream_opened(&self) {
        let mut opening = self.opening.subscribe();
        if tokio::time::timeout(STREAM_WAIT, opening.wait_for(|o| !*o)).await.is_err() {
            // rmcp did not open it: nothing to wait for any more.
            self.opening.send_replace(false);
        }
    }

    /// After a refusal of a request sent with `sent`: the token to send it again with
    /// (`Ok(Some)`), or the result to return.
    async fn retry<T>(
        &self,
        result: Result<T, Error>,
        sent: &mut Option<String>,
        tries: &mut u32,
    ) -> Result<Option<T>, Error> {
        let (header, refusal) = match &result {
            Err(StreamableHttpError::AuthRequired(e)) => (e.www_authenticate_header.as_str(), Refusal::Unauthorized),
            Err(StreamableHttpError::InsufficientScope(e)) => (e.www_authenticate_header.as_str(), Refusal::Forbidden),
            _ => return result.map(Some),
        };
        let Some(auth) = self.auth.as_ref().filter(|_| *tries < RETRIES) else { return result.map(Some) };
        *tries += 1;
        match auth.authorize(&Challenge::parse(header), refusal, sent.as_deref()).await {
            Ok(token) => {
                *sent = Some(token);
                Ok(None)
            }
            Err(e) => Err(auth_error(e)),
        }
    }
}

/// A sign-in's failure as the transport's error ([`auth_failure`] finds it again).
fn auth_error(error: OAuthError) -> Error {
    StreamableHttpError::Io(std::io::Error::other(error))
}

/// The sign-in failure that caused `error` (at any depth of its sources), if that is what
/// it is.
pub fn auth_failure<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a OAuthError> {
    let mut next = Some(error);
    while let Some(error) = next {
        let io = match error.downcast_ref::<Error>() {
            Some(StreamableHttpError::Io(io)) => Some(io),
            _ => error.downcast_ref::<std::io::Error>(),
        };
        if let Some(failure) = io.and_then(std::io::Error::get_ref).and_then(|inner| inner.downcast_ref::<OAuthError>())
        {
            return Some(failure);
        }
        next = error.source();
    }
    None
}

/// Whether `message` is `notifications/initialized`.
fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Notification(n) if matches!(n.notification, ClientNotification::InitializedNotification(_)))
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, None, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.stream_opened().await;
        let opens_stream = session_id.is_some() && is_initialized(&message);
        let mut sent = self.token().await;
        let mut tries = 0;
        loop {
            let result = self
                .http
                .post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    sent.clone(),
                    custom_headers.clone(),
                    limits,
                )
                .await;
            if let Some(response) = self.retry(result, &mut sent, &mut tries).await? {
                if opens_stream {
                    self.opening.send_replace(true);
                }
                return Ok(response);
            }
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let token = self.token().await;
        self.http.delete_session(uri, session_id, token, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(uri, session_id, last_event_id, None, custom_headers, MAX_SSE_EVENT)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let mut sent = self.token().await;
        let mut tries = 0;
        let result = loop {
            let result = self
                .http
                .get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    sent.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
                .await;
            match self.retry(result, &mut sent, &mut tries).await {
                Ok(Some(stream)) => break Ok(stream),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
        };
        if standalone {
            self.opening.send_replace(false);
        }
        result
    }
}
