//! [`AnthropicModel`]: the [`Model`] that talks to the Messages API (or any server that speaks
//! it) over reqwest + rustls.
//!
//! One `POST {base_url}/v1/messages` per call, streamed. A non-2xx answer becomes
//! [`ModelError::Http`] with the server's error type and message, the `request-id` and the
//! `retry-after` delay; a 2xx that is not `text/event-stream` is a protocol error. The client
//! itself never retries: the engine's `Request` state does, so each retry is a traced edge.
//! Redirects are followed within the server's origin only ([`redirect`]).
//!
//! Timeouts: `connect_timeout` for the TCP/TLS connect, and `idle_timeout` for the wait for the
//! response headers and then for each body chunk. There is no total deadline: a long reply that
//! keeps streaming is never cut.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::stream::{DEFAULT_IDLE_TIMEOUT, sse_reply_with_id};
use super::{errors, redirect, request};
use crate::error_chain::error_chain;
use crate::model::encoded::EncodedMessages;
use crate::model::{Model, ModelError, ModelRequest, ReplyStream};

/// Where requests go when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const NO_KEY_HELP: &str = "no Anthropic credentials: set ANTHROPIC_API_KEY (an API key, sent as x-api-key) \
     or ANTHROPIC_AUTH_TOKEN (a bearer token); ANTHROPIC_BASE_URL points at another server that speaks \
     the Messages API. To run without a key, use `agentloop demo` or `--model scripted:FILE`";

/// A credential. Its `Debug` never shows the value, and no error message contains it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// An API key, sent as `x-api-key` (`ANTHROPIC_API_KEY`).
    ApiKey(Secret),
    /// A bearer token, sent as `Authorization: Bearer …` (`ANTHROPIC_AUTH_TOKEN`).
    Bearer(Secret),
}

/// Everything [`AnthropicModel`] needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    /// Scheme, host and optional path prefix; `/v1/messages` is appended.
    pub base_url: String,
    /// Credentials.
    pub auth: Auth,
    /// The longest wait for the response headers or for the next body chunk.
    pub idle_timeout: Duration,
    /// The longest wait for a connection.
    pub connect_timeout: Duration,
}

impl AnthropicConfig {
    /// The official endpoint with default timeouts.
    pub fn new(auth: Auth) -> Self {
        AnthropicConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            auth,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// Read `ANTHROPIC_API_KEY` (preferred) or `ANTHROPIC_AUTH_TOKEN`, and `ANTHROPIC_BASE_URL`,
    /// from agentloop's environment as it was at startup (`crate::credentials::var`: the
    /// credentials are no longer in the process environment).
    ///
    /// # Errors
    /// [`ModelError::Config`], saying how to set a key, when neither credential is set.
    pub fn from_env() -> Result<Self, ModelError> {
        Self::from_lookup(crate::credentials::var)
    }

    /// [`AnthropicConfig::from_env`] over any variable lookup (tests pass a map).
    ///
    /// # Errors
    /// As [`AnthropicConfig::from_env`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let auth = match (var("ANTHROPIC_API_KEY"), var("ANTHROPIC_AUTH_TOKEN")) {
            (Some(key), _) => Auth::ApiKey(Secret::new(key)),
            (None, Some(token)) => Auth::Bearer(Secret::new(token)),
            (None, None) => return Err(ModelError::Config(NO_KEY_HELP.to_owned())),
        };
        let mut config = AnthropicConfig::new(auth);
        if let Some(base_url) = var("ANTHROPIC_BASE_URL") {
            config.base_url = base_url;
        }
        Ok(config)
    }

    /// The endpoint every request goes to.
    pub fn messages_url(&self) -> String {
        format!("{}/v1/messages", self.base_url.trim_end_matches('/'))
    }
}

/// The Messages API as a [`Model`].
pub struct AnthropicModel {
    client: reqwest::Client,
    config: AnthropicConfig,
    url: String,
    /// The JSON of the messages recent requests carried, spliced into the next body.
    encoded: std::sync::Mutex<EncodedMessages>,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// Build the HTTP client for `config`.
    ///
    /// For an `http://` base URL no certificate store is loaded at all, so local servers work
    /// on machines without CA certificates. For `https://` the system's store is used.
    ///
    /// # Errors
    /// [`ModelError::Config`] for a bad base URL, a credential that cannot be a header value,
    /// or an HTTPS setup with no CA certificates.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let url = config.messages_url();
        let plain_http = match reqwest::Url::parse(&url) {
            Ok(parsed) if parsed.scheme() == "http" => true,
            Ok(parsed) if parsed.scheme() == "https" => false,
            _ => {
                return Err(ModelError::Config(format!(
                    "ANTHROPIC_BASE_URL is not an http(s) URL: {}",
                    config.base_url
                )));
            }
        };
        let builder = crate::http_client::builder(plain_http)
            .connect_timeout(config.connect_timeout)
            .default_headers(default_headers(&config.auth)?)
            // Within the server's origin only: the credential headers go along on a redirect.
            .redirect(redirect::policy())
            .user_agent(concat!("agentloop/", env!("CARGO_PKG_VERSION")));
        let client = builder.build().map_err(|e| {
            ModelError::Config(format!(
                "cannot build the HTTP client: {}. If no CA certificates were found, install them \
                 (e.g. the ca-certificates package) or point SSL_CERT_FILE at a PEM bundle",
                error_chain(&e)
            ))
        })?;
        Ok(AnthropicModel { client, config, url, encoded: std::sync::Mutex::default() })
    }

    /// The configuration in use.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    async fn open(&self, request: ModelRequest) -> Result<ReplyStream, ModelError> {
        let body = EncodedMessages::next_body(&self.encoded, |encoded| request::to_json_with(&request, encoded))?;
        let send = self.client.post(&self.url).body(body).send();
        let response = match tokio::time::timeout(self.config.idle_timeout, send).await {
            Err(_) => return Err(ModelError::Idle(self.config.idle_timeout)),
            Ok(Err(e)) => {
                return Err(match redirect::refusal(&e) {
                    Some(refused) => ModelError::Redirect(refused),
                    None => ModelError::Connection(error_chain(&e)),
                });
            }
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            return Err(errors::from_response(response, self.config.idle_timeout).await);
        }
        let content_type = response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let content_type = content_type.unwrap_or("").to_owned();
        if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
            let body = errors::read_body(response, self.config.idle_timeout).await;
            return Err(ModelError::Protocol(format!(
                "expected a text/event-stream reply, got {:?}: {}",
                content_type,
                errors::snippet(&String::from_utf8_lossy(&body))
            )));
        }
        let request_id = response
            .headers()
            .get("request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        Ok(sse_reply_with_id(response.bytes_stream(), self.config.idle_timeout, request_id))
    }
}

impl Model for AnthropicModel {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        Box::pin(self.open(request))
    }

    /// Asked only of another server than Anthropic's, for a model that is not Claude (a
    /// local model behind a server speaking the Messages API): Claude's windows are known.
    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        if self.config.base_url.trim_end_matches('/') == DEFAULT_BASE_URL || model.contains("claude") {
            return Box::pin(std::future::ready(None));
        }
        Box::pin(crate::model::window::probe(&self.client, &self.config.base_url, model))
    }
}

fn default_headers(auth: &Auth) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
    headers.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    let (name, value, variable) = match auth {
        Auth::ApiKey(key) => (HeaderName::from_static("x-api-key"), key.expose().to_owned(), "ANTHROPIC_API_KEY"),
        Auth::Bearer(token) => {
            (reqwest::header::AUTHORIZATION, format!("Bearer {}", token.expose()), "ANTHROPIC_AUTH_TOKEN")
        }
    };
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| ModelError::Config(format!("{variable} holds characters an HTTP header cannot carry")))?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn credentials_from_the_environment() {
        let config =
            AnthropicConfig::from_lookup(lookup(&[("ANTHROPIC_API_KEY", "sk-1"), ("ANTHROPIC_AUTH_TOKEN", "t")]));
        assert_eq!(config.unwrap().auth, Auth::ApiKey(Secret::new("sk-1")));
        let config = AnthropicConfig::from_lookup(lookup(&[
            ("ANTHROPIC_API_KEY", " "),
            ("ANTHROPIC_AUTH_TOKEN", "tok"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]))
        .unwrap();
        assert_eq!(config.auth, Auth::Bearer(Secret::new("tok")));
        assert_eq!(config.messages_url(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(config.idle_timeout, Duration::from_secs(60));
    }

    #[test]
    fn missing_credentials_say_how_to_set_them() {
        let err = AnthropicConfig::from_lookup(lookup(&[])).unwrap_err();
        let ModelError::Config(message) = &err else { panic!("{err:?}") };
        assert!(message.contains("set ANTHROPIC_API_KEY"), "{message}");
        assert!(message.contains("ANTHROPIC_AUTH_TOKEN"), "{message}");
    }

    #[test]
    fn secrets_stay_out_of_debug_and_errors() {
        let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new("sk-ant-very-secret")));
        config.base_url = "http://127.0.0.1:9".into();
        assert!(!format!("{config:?}").contains("very-secret"));
        let model = AnthropicModel::new(config).unwrap();
        assert!(!format!("{model:?}").contains("very-secret"));
        let bad = AnthropicConfig::new(Auth::Bearer(Secret::new("sk-ant-very-secret\n")));
        let err = AnthropicModel::new(bad).unwrap_err();
        assert_eq!(err, ModelError::Config("ANTHROPIC_AUTH_TOKEN holds characters an HTTP header cannot carry".into()));
    }

    #[test]
    fn base_url_must_be_http() {
        let mut config = AnthropicConfig::new(Auth::ApiKey(Secret::new("k")));
        config.base_url = "ftp://example.com".into();
        assert!(matches!(AnthropicModel::new(config), Err(ModelError::Config(_))));
    }
}
