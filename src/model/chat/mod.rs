//! The OpenAI providers: `--model chat:NAME` (Chat Completions) and `--model responses:NAME`
//! (Responses, [`crate::model::responses`]) against `OPENAI_BASE_URL`
//! (`https://api.openai.com/v1` by default; llama.cpp's `llama-server`, vLLM, Ollama, LM
//! Studio and LiteLLM serve the same protocol), with `OPENAI_API_KEY` as a bearer token when
//! set (local servers need none).
//!
//! - `request`: a [`ModelRequest`] as a Chat Completions body;
//! - `stream`: the streamed chunks as Messages API events, so the engine reads one protocol.
//!
//! Failures are classified as the Messages API's are ([`ModelError::class`]): an error body
//! `{"error": {"message", "type", "code"}}` gives its code (or type) and message, so a
//! context-length refusal in any server's words takes the prompt-too-long edges, and 429s
//! with `retry-after` the retry edges.

pub mod request;
pub mod stream;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::error_chain::error_chain;
use crate::model::anthropic::Secret;
use crate::model::encoded::EncodedMessages;
use crate::model::{Model, ModelError, ModelRequest, ReplyStream};

/// Where Chat Completions requests go when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How the provider reaches its server.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// The base URL, up to and including the version (`http://127.0.0.1:8080/v1`);
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// The bearer token, when the server needs one.
    pub api_key: Option<Secret>,
    /// The longest wait for the response headers or for the next chunk.
    pub idle_timeout: Duration,
}

impl ChatConfig {
    /// From `OPENAI_BASE_URL` and `OPENAI_API_KEY` when set, else from the settings'
    /// provider entry (`baseUrl`, and the key in the variable `apiKeyEnv` names), else the
    /// default (OpenAI's API, no key).
    pub fn from_env_or(provider: Option<&crate::hooks::settings::ModelProvider>) -> ChatConfig {
        let mut config = ChatConfig::from_env();
        let Some(provider) = provider else { return config };
        let set = |name: &str| std::env::var(name).ok().is_some_and(|v| !v.trim().is_empty());
        if !set("OPENAI_BASE_URL")
            && let Some(url) = provider.base_url.as_deref().filter(|u| !u.trim().is_empty())
        {
            config.base_url = url.trim().to_owned();
        }
        if config.api_key.is_none()
            && let Some(name) = &provider.api_key_env
        {
            config.api_key = crate::credentials::var(name).filter(|k| !k.is_empty()).map(Secret::new);
        }
        config
    }

    /// From `OPENAI_BASE_URL` and `OPENAI_API_KEY` (read through [`crate::credentials`]).
    pub fn from_env() -> ChatConfig {
        ChatConfig {
            base_url: std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            api_key: crate::credentials::var("OPENAI_API_KEY").filter(|k| !k.is_empty()).map(Secret::new),
            idle_timeout: crate::model::anthropic::stream::DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Which of OpenAI's protocols a [`ChatModel`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Chat Completions, `POST {base}/chat/completions` (`--model chat:NAME`).
    Chat,
    /// Responses, `POST {base}/responses` (`--model responses:NAME`, [`crate::model::responses`]).
    Responses,
}

/// A [`Model`] speaking Chat Completions or Responses.
#[derive(Debug, Clone)]
pub struct ChatModel {
    client: reqwest::Client,
    url: String,
    config: ChatConfig,
    wire: Wire,
    /// Each message's items as last sent, so a request is assembled, not re-encoded.
    encoded: Arc<Mutex<EncodedMessages>>,
}

impl ChatModel {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`ModelError::Config`] for a base URL that is not http(s), a key an HTTP header cannot
    /// carry, or a client that cannot be built.
    pub fn new(config: ChatConfig, wire: Wire) -> Result<ChatModel, ModelError> {
        let parsed = reqwest::Url::parse(&config.base_url)
            .map_err(|e| ModelError::Config(format!("OPENAI_BASE_URL is not a URL ({e}): {}", config.base_url)))?;
        let plain_http = match parsed.scheme() {
            "http" => true,
            "https" => false,
            other => return Err(ModelError::Config(format!("OPENAI_BASE_URL must be http(s), not {other}:"))),
        };
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                ModelError::Config("OPENAI_API_KEY holds characters an HTTP header cannot carry".into())
            })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let builder = crate::http_client::builder(plain_http)
            .default_headers(headers)
            .user_agent(concat!("agentloop/", env!("CARGO_PKG_VERSION")))
            // The key goes along with every request: no redirect is followed.
            .redirect(reqwest::redirect::Policy::none());
        let client = builder
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {}", error_chain(&e))))?;
        let path = match wire {
            Wire::Chat => "chat/completions",
            Wire::Responses => "responses",
        };
        let url = format!("{}/{path}", config.base_url.trim_end_matches('/'));
        Ok(ChatModel { client, url, config, wire, encoded: Arc::default() })
    }

    async fn open(&self, request: ModelRequest) -> Result<ReplyStream, ModelError> {
        let body = EncodedMessages::next_body(&self.encoded, |encoded| match self.wire {
            Wire::Chat => request::to_json_with(&request, encoded),
            Wire::Responses => crate::model::responses::request::to_json_with(&request, encoded),
        })?;
        let send = self.client.post(&self.url).body(body).send();
        let response = match tokio::time::timeout(self.config.idle_timeout, send).await {
            Err(_) => return Err(ModelError::Idle(self.config.idle_timeout)),
            Ok(Err(e)) => return Err(ModelError::Connection(error_chain(&e))),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let body = crate::model::anthropic::errors::read_body(response, self.config.idle_timeout).await;
            return Err(http_error(status.as_u16(), status.canonical_reason(), &headers, &body));
        }
        Ok(match self.wire {
            Wire::Chat => stream::chat_reply(response.bytes_stream(), self.config.idle_timeout),
            Wire::Responses => {
                crate::model::responses::stream::responses_reply(response.bytes_stream(), self.config.idle_timeout)
            }
        })
    }
}

impl Model for ChatModel {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        Box::pin(self.open(request))
    }

    fn provider_name(&self) -> &'static str {
        "openai"
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(crate::model::window::probe(&self.client, &self.config.base_url, model))
    }
}

/// A failed response as a [`ModelError::Http`]: the OpenAI error shape (`{"error":
/// {"message", "type", "code"}}`, its code preferred as the kind), else what the Messages API
/// client makes of the body.
fn http_error(status: u16, reason: Option<&str>, headers: &HeaderMap, body: &[u8]) -> ModelError {
    let mut error = crate::model::anthropic::errors::from_parts(status, reason, headers, body);
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if let (ModelError::Http { kind, message, .. }, Some(value)) = (&mut error, parsed) {
        let inner = value.get("error").filter(|e| e.is_object()).unwrap_or(&value);
        if let Some(text) = inner.get("message").and_then(serde_json::Value::as_str) {
            *message = text.to_owned();
            if let Some(named) = error_kind(inner) {
                *kind = named.to_owned();
            }
        }
    }
    error
}

/// The kind an OpenAI-style error object names: its `code` when that is a string, else its
/// `type`.
fn error_kind(error: &serde_json::Value) -> Option<&str> {
    error["code"].as_str().or_else(|| error["type"].as_str())
}

/// An OpenAI-style error object met inside a stream (either protocol's) as an `error`
/// event's body: its kind ([`error_kind`], else `error`) and message.
pub(crate) fn stream_error(error: &serde_json::Value) -> crate::protocol::ApiErrorBody {
    crate::protocol::ApiErrorBody {
        kind: error_kind(error).unwrap_or("error").to_owned(),
        message: error["message"].as_str().unwrap_or("the server reported an error").to_owned(),
    }
}
