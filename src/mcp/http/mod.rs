//! Streamable HTTP servers: rmcp's streamable-HTTP client transport over the same reqwest and
//! rustls (ring) stack as the model client, with the configured headers on every request.
//!
//! The client follows only same-origin 307 and 308 redirects (so a configured
//! `Authorization` header never reaches another host), pools no idle connections (a server's
//! half-read event stream would otherwise stall the next request on the reused connection),
//! and closes the session with an HTTP DELETE when the connection is closed. A server that
//! asks for authorization is signed in to with OAuth ([`crate::mcp::oauth`], through
//! [`client::HttpClient`]) unless the configuration sends an `Authorization` header of its
//! own.

pub mod client;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};

use super::oauth::{Authorizer, OAuthError, Settings, SignIn, store::Store};
use super::{Client, Connection, OpenError};
use crate::error_chain::error_chain;

/// Headers the transport sets itself: a configuration may not override them.
const RESERVED: [&str; 5] = ["accept", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

/// Redirect hops followed at most.
const MAX_REDIRECTS: usize = 10;

/// Connect to the Streamable HTTP endpoint `url`, sending `headers` with every request, and
/// speak the `initialize` handshake as `client`. When the server asks for authorization, it
/// is signed in to as `oauth` configures ([`SignIn`] says whether the browser may open).
///
/// # Errors
/// A URL that is not http(s), a header that cannot be sent, the server cannot be reached, it
/// cannot be signed in to, or it does not answer `initialize`. Header values never appear in
/// a message (they are often credentials), nor do tokens.
pub async fn connect(
    client: Client,
    url: &str,
    headers: &BTreeMap<String, String>,
    oauth: Option<&Settings>,
    sign_in: SignIn,
) -> Result<Connection, OpenError> {
    let parsed = match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => parsed,
        Ok(parsed) => return Err(format!("`{url}` is not an http(s) URL (scheme `{}`)", parsed.scheme()).into()),
        Err(e) => return Err(format!("`{url}` is not a URL: {e}").into()),
    };
    let plain_http = parsed.scheme() == "http";
    let own_authorization = headers.keys().any(|name| name.eq_ignore_ascii_case("authorization"));
    let headers = header_map(headers)?;
    let http = http_client(plain_http)?;
    let auth = if own_authorization {
        None
    } else {
        // The authorization server may be reached over https even for a plain-http server.
        let oauth_http = http_client(false).or_else(|_| http_client(true))?;
        let settings = oauth.cloned().unwrap_or_default();
        Some(Arc::new(Authorizer::new(
            client.server(),
            parsed,
            settings,
            sign_in,
            oauth_http,
            Store::default_location(),
        )))
    };
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(client::HttpClient::new(http, auth), config);
    let service = client.serve(transport).await.map_err(|e| match needs_sign_in(&e) {
        Some(failure) => OpenError::NeedsSignIn(failure.to_string()),
        None => OpenError::Failed(format!("initialize: {}", describe(&e))),
    })?;
    Ok(Connection::new(service, None))
}

/// The sign-in a failed handshake needed and could not have here.
fn needs_sign_in(error: &rmcp::service::ClientInitializeError) -> Option<&OAuthError> {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            client::auth_failure(error.error.as_ref()).filter(|f| matches!(f, OAuthError::NeedsSignIn(_)))
        }
        _ => None,
    }
}

/// A failed handshake in words: for a transport error, what was being done and the causes
/// (`send initialize request: Client error: error sending request for url (…): client error
/// (Connect): tcp connect error: Connection refused (os error 111)`), without the transport's
/// type name.
fn describe(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            let inner = error.error.as_ref();
            if let Some(failure) = client::auth_failure(inner) {
                return format!("authorization: {failure}");
            }
            // The HTTP client's error is not a `source` of rmcp's: reach it by its type.
            match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                Some(StreamableHttpError::Client(e)) => format!("{context}: {}", error_chain(e)),
                _ => format!("{context}: {}", error_chain(inner)),
            }
        }
        other => error_chain(other),
    }
}

/// Why an HTTP server's client cannot be set up; a header is named, never its value.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A name that is not a header name.
    #[error("header `{0}`: not a valid HTTP header name")]
    HeaderName(String),
    /// A header the transport sets itself.
    #[error("header `{0}`: set by the MCP transport, it cannot be configured")]
    Reserved(String),
    /// A value that is not a header value.
    #[error("header `{0}`: the value is not a valid HTTP header value")]
    HeaderValue(String),
    /// reqwest could not build the client.
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
}

impl From<SetupError> for OpenError {
    fn from(error: SetupError) -> Self {
        OpenError::Failed(error.to_string())
    }
}

/// The configured headers as HTTP headers.
///
/// # Errors
/// [`SetupError`]: a name that is not a header name, a value that is not a header value, or a
/// header the transport sets itself.
pub fn header_map(headers: &BTreeMap<String, String>) -> Result<HashMap<HeaderName, HeaderValue>, SetupError> {
    headers
        .iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| SetupError::HeaderName(name.clone()))?;
            if RESERVED.contains(&header.as_str()) {
                return Err(SetupError::Reserved(name.clone()));
            }
            let mut value = HeaderValue::from_str(value).map_err(|_| SetupError::HeaderValue(name.clone()))?;
            value.set_sensitive(true);
            Ok((header, value))
        })
        .collect()
}

/// The reqwest client for one server: rustls with the ring provider, no CA roots needed for
/// plain `http://`.
fn http_client(plain_http: bool) -> Result<reqwest::Client, SetupError> {
    crate::http_client::builder(plain_http)
        .user_agent(concat!("agentloop/", env!("CARGO_PKG_VERSION")))
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
            let keeps_the_body = matches!(attempt.status().as_u16(), 307 | 308);
            if same_origin && keeps_the_body && attempt.previous().len() <= MAX_REDIRECTS {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(SetupError::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn configured_headers_become_sensitive_http_headers() {
        let headers = header_map(&map(&[("Authorization", "Bearer s3cret"), ("X-Team", "core")])).unwrap();
        assert_eq!(headers.len(), 2);
        let auth = &headers[&HeaderName::from_static("authorization")];
        assert_eq!(auth.to_str().unwrap(), "Bearer s3cret");
        assert!(auth.is_sensitive());
        assert_eq!(headers[&HeaderName::from_static("x-team")], "core");
    }

    #[test]
    fn bad_and_reserved_headers_are_refused_without_their_values() {
        assert_eq!(
            header_map(&map(&[("bad name", "v")])).unwrap_err().to_string(),
            "header `bad name`: not a valid HTTP header name"
        );
        assert_eq!(
            header_map(&map(&[("X-Key", "line\nbreak-s3cret")])).unwrap_err().to_string(),
            "header `X-Key`: the value is not a valid HTTP header value"
        );
        assert_eq!(
            header_map(&map(&[("Mcp-Session-Id", "x")])).unwrap_err().to_string(),
            "header `Mcp-Session-Id`: set by the MCP transport, it cannot be configured"
        );
    }

    #[tokio::test]
    async fn a_url_that_is_not_http_is_refused() {
        let none = BTreeMap::new();
        assert_eq!(
            connect(Client::of("h"), "ftp://h/mcp", &none, None, SignIn::Never).await.err().unwrap().to_string(),
            "`ftp://h/mcp` is not an http(s) URL (scheme `ftp`)"
        );
        assert_eq!(
            connect(Client::of("h"), "nope", &none, None, SignIn::Never).await.err().unwrap().to_string(),
            "`nope` is not a URL: relative URL without a base"
        );
    }
}
