//! The requests of a sign-in: metadata fetched as JSON, forms posted to a token endpoint,
//! a registration posted as JSON. An endpoint's refusal becomes an [`OAuthError::Refused`]
//! naming the endpoint, its status and the OAuth `error` it gave; what was sent (a secret, a
//! code) never appears in an error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Url;
use serde_json::Value;

use super::OAuthError;

/// The JSON at `url`: `None` for an answer that is not a success or not JSON (the next place
/// is tried).
///
/// # Errors
/// The URL cannot be reached.
pub async fn get_json(http: &reqwest::Client, url: &Url) -> Result<Option<Value>, OAuthError> {
    let response = http
        .get(url.clone())
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .map_err(|e| OAuthError::Unreachable { url: url.to_string(), error: crate::error_chain::error_chain(&e) })?;
    if !response.status().is_success() {
        return Ok(None);
    }
    Ok(response.json::<Value>().await.ok())
}

/// How a client proves who it is at a token endpoint.
pub enum ClientAuth<'a> {
    /// `client_id` in the form (a public client).
    None(&'a str),
    /// `Authorization: Basic` of the id and secret, each form-encoded first (RFC 6749 §2.3.1).
    Basic(&'a str, &'a str),
    /// `client_id` and `client_secret` in the form.
    Post(&'a str, &'a str),
    /// A signed assertion (RFC 7523): `client_assertion_type` and `client_assertion`, with
    /// `client_id`.
    Assertion(&'a str, String),
}

/// Post `form` to the token endpoint `url`, authenticated as `auth`, and read the JSON
/// answer.
///
/// # Errors
/// The endpoint cannot be reached, refuses (its `error` and `error_description` named), or
/// answers with something that is not JSON.
pub async fn post_form(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
    auth: ClientAuth<'_>,
) -> Result<Value, OAuthError> {
    let mut pairs: Vec<(&str, &str)> = form.to_vec();
    let mut request = http.post(url).header("accept", "application/json");
    match &auth {
        ClientAuth::None(id) => pairs.push(("client_id", id)),
        ClientAuth::Basic(id, secret) => {
            let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let credentials = STANDARD.encode(format!("{}:{}", encode(id), encode(secret)));
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Basic {credentials}"))
                .map_err(|_| OAuthError::Client("the client id or secret cannot be sent in a header".into()))?;
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        ClientAuth::Post(id, secret) => {
            pairs.push(("client_id", id));
            pairs.push(("client_secret", secret));
        }
        ClientAuth::Assertion(id, assertion) => {
            pairs.push(("client_id", id));
            pairs.push(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"));
            pairs.push(("client_assertion", assertion));
        }
    }
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
    let request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
    answer(url, request.send().await).await
}

/// Post `body` as JSON to `url` (a registration) and read the JSON answer.
///
/// # Errors
/// As [`post_form`].
pub async fn post_json(http: &reqwest::Client, url: &str, body: &Value) -> Result<Value, OAuthError> {
    let request = http.post(url).header("accept", "application/json").json(body);
    answer(url, request.send().await).await
}

/// The JSON of a successful answer, or the endpoint's refusal.
async fn answer(url: &str, sent: reqwest::Result<reqwest::Response>) -> Result<Value, OAuthError> {
    let response =
        sent.map_err(|e| OAuthError::Unreachable { url: url.to_owned(), error: crate::error_chain::error_chain(&e) })?;
    let status = response.status();
    let json = response.json::<Value>().await.ok();
    if !status.is_success() {
        let text = |key: &str| json.as_ref().and_then(|j| j.get(key)).and_then(Value::as_str).map(str::to_owned);
        return Err(OAuthError::Refused {
            endpoint: url.to_owned(),
            status: status.as_u16(),
            error: text("error"),
            description: text("error_description"),
        });
    }
    json.ok_or_else(|| OAuthError::Malformed { endpoint: url.to_owned(), what: "its answer is not JSON".into() })
}
