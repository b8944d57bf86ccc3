//! Non-2xx answers of the Messages API as [`ModelError::Http`].
//!
//! The body is normally `{"type":"error","error":{"type":…,"message":…},"request_id":…}`.
//! Proxies and gateways may answer with anything else; then the kind is `http_error` and the
//! message is the start of the body (or the status's reason when the body is empty).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::Deserialize;

use crate::model::ModelError;
use crate::protocol::ApiErrorBody;

#[derive(Deserialize)]
struct Envelope {
    error: ApiErrorBody,
    #[serde(default)]
    request_id: Option<String>,
}

/// Read a failed response into an [`ModelError::Http`]. A body that does not arrive within
/// `idle_timeout`, or breaks off, counts as empty: the status alone still classifies the error.
pub(crate) async fn from_response(response: reqwest::Response, idle_timeout: Duration) -> ModelError {
    let status = response.status();
    let headers = response.headers().clone();
    let body = read_body(response, idle_timeout).await;
    from_parts(status.as_u16(), status.canonical_reason(), &headers, &body)
}

/// The whole body of a (non-streamed) response, or nothing if it stalls or breaks off.
pub(crate) async fn read_body(response: reqwest::Response, idle_timeout: Duration) -> Vec<u8> {
    match tokio::time::timeout(idle_timeout, response.bytes()).await {
        Ok(Ok(bytes)) => bytes.to_vec(),
        _ => Vec::new(),
    }
}

/// [`from_response`] on its parts.
pub(crate) fn from_parts(status: u16, reason: Option<&str>, headers: &HeaderMap, body: &[u8]) -> ModelError {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let retry_after = header("retry-after").and_then(parse_retry_after);
    let mut request_id = header("request-id").filter(|id| !id.is_empty()).map(str::to_owned);
    let (kind, message) = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => {
            request_id = request_id.or(envelope.request_id);
            (envelope.error.kind, envelope.error.message)
        }
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = snippet(text.trim());
            let message =
                if text.is_empty() { reason.unwrap_or("no reason given").to_owned() } else { text.to_owned() };
            ("http_error".to_owned(), message)
        }
    };
    ModelError::Http { status, kind, message, request_id, retry_after }
}

/// `retry-after` in seconds (whole or fractional). The HTTP-date form is not used by the API.
/// The value is kept as the server gave it (up to about 136 years, so it fits a `Duration`):
/// the engine compares it with `--retry-max-delay-ms` and gives up when it is longer.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(f64::from(u32::MAX))))
}

/// The start of a text, for error messages.
pub(crate) fn snippet(text: &str) -> &str {
    match text.char_indices().nth(500) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn api_error_body_with_headers() {
        let body = br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        let err = from_parts(429, None, &headers(&[("request-id", "req_1"), ("retry-after", "7")]), body);
        assert_eq!(
            err,
            ModelError::Http {
                status: 429,
                kind: "rate_limit_error".into(),
                message: "slow down".into(),
                request_id: Some("req_1".into()),
                retry_after: Some(Duration::from_secs(7)),
            }
        );
    }

    #[test]
    fn request_id_from_the_body_and_fractional_retry_after() {
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_b"}"#;
        let ModelError::Http { request_id, retry_after, .. } =
            from_parts(529, None, &headers(&[("retry-after", "1.5")]), body)
        else {
            panic!()
        };
        assert_eq!(request_id.as_deref(), Some("req_b"));
        assert_eq!(retry_after, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn non_json_bodies_keep_their_text_or_the_reason() {
        let err =
            from_parts(502, Some("Bad Gateway"), &headers(&[("retry-after", "soon")]), b"<html>bad gateway</html>");
        assert_eq!(
            err,
            ModelError::Http {
                status: 502,
                kind: "http_error".into(),
                message: "<html>bad gateway</html>".into(),
                request_id: None,
                retry_after: None,
            }
        );
        let ModelError::Http { message, .. } = from_parts(503, Some("Service Unavailable"), &HeaderMap::new(), b"")
        else {
            panic!()
        };
        assert_eq!(message, "Service Unavailable");
    }
}
