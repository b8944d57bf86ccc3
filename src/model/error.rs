//! Model errors and the one classification the engine's edges are chosen from.

use std::time::Duration;

/// How the engine treats a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Try again after a backoff (429, 5xx, 529, dropped or idle stream).
    Retryable,
    /// The prompt is over the context window: withheld and sent to `Recover`.
    PromptTooLong,
    /// Nothing to retry: the run ends as `model_error`.
    Fatal,
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an HTTP error status.
    #[error("HTTP {status} {kind}: {message}{}", request_id.as_deref().map(|r| format!(" (request id {r})")).unwrap_or_default())]
    Http {
        /// HTTP status code.
        status: u16,
        /// The API's error type, e.g. `overloaded_error`.
        kind: String,
        /// The server's message.
        message: String,
        /// The `request-id` header, when present.
        request_id: Option<String>,
        /// The `retry-after` delay, when present.
        retry_after: Option<Duration>,
    },
    /// The stream carried an `error` event after it started.
    #[error("stream error {kind}: {message}")]
    Stream {
        /// The API's error type.
        kind: String,
        /// The server's message.
        message: String,
    },
    /// The connection failed or dropped.
    #[error("connection error: {0}")]
    Connection(String),
    /// No event arrived for longer than the idle timeout.
    #[error("stream idle for {0:?}")]
    Idle(Duration),
    /// The stream ended before `message_stop`.
    #[error("stream ended before message_stop")]
    Incomplete,
    /// The stream broke the protocol (bad JSON, out-of-order block index).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A line or an event of the stream was longer than the framer holds
    /// (`crate::model::anthropic::sse::MAX_EVENT_BYTES`). Retried: a garbled or runaway
    /// stream from a proxy is more likely than a real event that size.
    #[error("protocol error: an SSE line or event is longer than the {0} bytes allowed")]
    Oversized(usize),
    /// The scripted model's script is wrong or exhausted, or an `expect` did not hold.
    #[error("scripted model: {0}")]
    Script(String),
    /// No credentials or another local configuration problem.
    #[error("configuration: {0}")]
    Config(String),
    /// The server redirected the request somewhere agentloop does not follow (another
    /// origin, where the credentials would go along).
    #[error(transparent)]
    Redirect(crate::model::anthropic::redirect::RedirectRefused),
}

impl ModelError {
    /// The one decision the engine's guards read. Every variant is sorted here, so a new
    /// variant does not compile until someone decides how the loop treats it.
    pub fn class(&self) -> ErrorClass {
        match self {
            ModelError::Http { status, kind, message, retry_after, .. } => {
                classify_http(*status, kind, message, retry_after.is_some())
            }
            ModelError::Stream { kind, message } => {
                if is_context_overflow(kind, message) {
                    ErrorClass::PromptTooLong
                } else if matches!(kind.as_str(), "overloaded_error" | "api_error" | "rate_limit_error") {
                    ErrorClass::Retryable
                } else {
                    ErrorClass::Fatal
                }
            }
            ModelError::Connection(_) | ModelError::Idle(_) | ModelError::Incomplete | ModelError::Oversized(_) => {
                ErrorClass::Retryable
            }
            ModelError::Protocol(_) | ModelError::Script(_) | ModelError::Config(_) | ModelError::Redirect(_) => {
                ErrorClass::Fatal
            }
        }
    }

    /// Whether this is an overload (HTTP 529 or `overloaded_error`), counted towards fallback.
    pub fn is_overloaded(&self) -> bool {
        match self {
            ModelError::Http { status, kind, .. } => *status == 529 || kind == "overloaded_error",
            ModelError::Stream { kind, .. } => kind == "overloaded_error",
            _ => false,
        }
    }

    /// What a result frame reports of the failure that ended a run: the HTTP status and the
    /// API's error type when the server gave them, and the message a person reads.
    pub fn api_failure(&self) -> ApiFailure {
        match self {
            ModelError::Http { status, kind, message, .. } => {
                ApiFailure { status: Some(*status), kind: Some(kind.clone()), message: message.clone() }
            }
            ModelError::Stream { kind, message } => {
                ApiFailure { status: None, kind: Some(kind.clone()), message: message.clone() }
            }
            other => ApiFailure { status: None, kind: None, message: other.to_string() },
        }
    }

    /// A short, low-cardinality name of the failure, for telemetry's `error.type`: the API's
    /// error type when it gave one (`overloaded_error`), else `http_STATUS` or the kind of
    /// failure (`connection`, `idle_timeout`, …).
    pub fn type_name(&self) -> String {
        match self {
            ModelError::Http { kind, .. } | ModelError::Stream { kind, .. } if !kind.is_empty() => kind.clone(),
            ModelError::Http { status, .. } => format!("http_{status}"),
            ModelError::Stream { .. } => "stream_error".to_owned(),
            ModelError::Connection(_) => "connection".to_owned(),
            ModelError::Idle(_) => "idle_timeout".to_owned(),
            ModelError::Incomplete => "incomplete_stream".to_owned(),
            ModelError::Protocol(_) | ModelError::Oversized(_) => "protocol".to_owned(),
            ModelError::Script(_) => "script".to_owned(),
            ModelError::Config(_) => "config".to_owned(),
            ModelError::Redirect(_) => "redirect".to_owned(),
        }
    }

    /// The server-requested delay before a retry, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The model call that ended a run as `model_error` or `prompt_too_long`, as a result frame
/// reports it (Claude Code's `api_error_status`, `api_error_type` and `API Error: …` text).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApiFailure {
    /// The HTTP status, for an error the server answered with one.
    pub status: Option<u16>,
    /// The API's error type (`invalid_request_error`, `overloaded_error`), when given.
    pub kind: Option<String>,
    /// The server's message, or what went wrong on the way to it.
    pub message: String,
}

impl ApiFailure {
    /// The text Claude Code puts in the result of a run a failed call ended:
    /// `API Error: 400 the message`, or `API Error: the message` without a status.
    pub fn prose(&self) -> String {
        match self.status {
            Some(status) => format!("API Error: {status} {}", self.message),
            None => format!("API Error: {}", self.message),
        }
    }
}

/// Error types and codes by which servers say the prompt is over their context window:
/// llama.cpp's `exceed_context_size_error`, OpenAI's `context_length_exceeded`.
const OVERFLOW_KINDS: [&str; 2] = ["exceed_context_size_error", "context_length_exceeded"];

/// Phrases of the same refusal in servers' messages: the Messages API's "prompt is too
/// long", llama.cpp's "exceeds the available context size", OpenAI's and vLLM's "maximum
/// context length", and vLLM's "longer than the model's maximum context length" (lowercase).
const OVERFLOW_PHRASES: [&str; 5] = [
    "prompt is too long",
    "exceeds the available context size",
    "maximum context length",
    "context length exceeded",
    "context window exceeded",
];

/// Whether an error of type `kind` with `message` says the prompt is over the context window,
/// in any server's words.
pub fn is_context_overflow(kind: &str, message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    OVERFLOW_KINDS.contains(&kind) || OVERFLOW_PHRASES.iter().any(|phrase| lower.contains(phrase))
}

fn classify_http(status: u16, kind: &str, message: &str, has_retry_after: bool) -> ErrorClass {
    match status {
        400 | 413 | 500 if is_context_overflow(kind, message) => ErrorClass::PromptTooLong,
        429 => {
            // A 429 that names a spend limit and gives no retry-after will not clear by waiting.
            let lower = message.to_ascii_lowercase();
            let spend_limit =
                lower.contains("spend limit") || lower.contains("usage limit") || lower.contains("credit");
            if spend_limit && !has_retry_after { ErrorClass::Fatal } else { ErrorClass::Retryable }
        }
        408 | 409 | 500 | 502 | 503 | 504 | 529 => ErrorClass::Retryable,
        _ if kind == "overloaded_error" => ErrorClass::Retryable,
        _ => ErrorClass::Fatal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, kind: &str, message: &str) -> ModelError {
        ModelError::Http { status, kind: kind.into(), message: message.into(), request_id: None, retry_after: None }
    }

    #[test]
    fn classification_follows_the_api_contract() {
        let cases = [
            (
                http(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
                ErrorClass::PromptTooLong,
            ),
            (http(400, "invalid_request_error", "messages: field required"), ErrorClass::Fatal),
            (http(401, "authentication_error", "invalid x-api-key"), ErrorClass::Fatal),
            (http(403, "permission_error", "nope"), ErrorClass::Fatal),
            (http(404, "not_found_error", "model"), ErrorClass::Fatal),
            (http(429, "rate_limit_error", "slow down"), ErrorClass::Retryable),
            (http(429, "rate_limit_error", "You have reached your spend limit"), ErrorClass::Fatal),
            (http(500, "api_error", "boom"), ErrorClass::Retryable),
            (http(503, "api_error", "boom"), ErrorClass::Retryable),
            (http(529, "overloaded_error", "Overloaded"), ErrorClass::Retryable),
            (ModelError::Incomplete, ErrorClass::Retryable),
            // Other servers' words for a prompt over the window.
            (
                http(
                    400,
                    "exceed_context_size_error",
                    "request (1260 tokens) exceeds the available context size (512 tokens), try increasing it",
                ),
                ErrorClass::PromptTooLong,
            ),
            (
                http(
                    400,
                    "invalid_request_error",
                    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                ),
                ErrorClass::PromptTooLong,
            ),
            (http(400, "context_length_exceeded", "Input too long"), ErrorClass::PromptTooLong),
            (
                http(
                    400,
                    "BadRequestError",
                    "The prompt (5000 tokens) is longer than the model's maximum context length",
                ),
                ErrorClass::PromptTooLong,
            ),
            (
                ModelError::Stream {
                    kind: "exceed_context_size_error".into(),
                    message: "the request exceeds the available context size".into(),
                },
                ErrorClass::PromptTooLong,
            ),
            // A server's own error event mid-stream ends the run with its message: no retry loop.
            (ModelError::Stream { kind: "server_error".into(), message: "boom".into() }, ErrorClass::Fatal),
            (ModelError::Script("past the end".into()), ErrorClass::Fatal),
        ];
        for (err, class) in cases {
            assert_eq!(err.class(), class, "{err}");
        }
        assert!(http(529, "overloaded_error", "x").is_overloaded());
        assert!(!http(500, "api_error", "x").is_overloaded());
    }

    #[test]
    fn display_names_the_request_id() {
        let err = ModelError::Http {
            status: 401,
            kind: "authentication_error".into(),
            message: "invalid x-api-key".into(),
            request_id: Some("req_1".into()),
            retry_after: None,
        };
        assert_eq!(err.to_string(), "HTTP 401 authentication_error: invalid x-api-key (request id req_1)");
    }
}
