//! Who agentloop is to an authorization server: a configured (pre-registered) client, the URL
//! of a client metadata document (CIMD) when the server accepts one, or a client registered
//! on the spot (RFC 7591 dynamic client registration).
//!
//! A registration asks for the authorization-code and refresh-token grants, the loopback
//! redirect URI, and the lightest token-endpoint authentication the server supports (`none`,
//! else `client_secret_basic`, else `client_secret_post`); the server's answer decides.

use serde_json::{Value, json};

use super::OAuthError;
use super::discovery::ServerMetadata;
use super::http::post_json;
use super::store::ClientRecord;

/// The name agentloop registers under.
pub const CLIENT_NAME: &str = "agentloop";

/// How a client with a secret (`has_secret`) or a private key (`has_key`) authenticates at
/// `metadata`'s token endpoint: a key signs assertions where the server takes them, a secret
/// goes in a Basic header or else the form, and a client with neither sends only its id.
pub fn auth_method(metadata: &ServerMetadata, has_secret: bool, has_key: bool) -> &'static str {
    if has_key && metadata.supports_auth_method("private_key_jwt") {
        return "private_key_jwt";
    }
    if has_secret {
        if !metadata.supports_auth_method("client_secret_basic") && metadata.supports_auth_method("client_secret_post")
        {
            return "client_secret_post";
        }
        return "client_secret_basic";
    }
    "none"
}

/// The method a registration asks for at `metadata`'s server.
fn requested_method(metadata: &ServerMetadata) -> &'static str {
    ["none", "client_secret_basic", "client_secret_post"]
        .into_iter()
        .find(|m| metadata.supports_auth_method(m))
        .unwrap_or("client_secret_basic")
}

/// Register agentloop at `metadata`'s registration endpoint with `redirect_uri`.
///
/// # Errors
/// The server has no registration endpoint, refuses, or answers without a `client_id`.
pub async fn register(
    http: &reqwest::Client,
    metadata: &ServerMetadata,
    redirect_uri: &str,
) -> Result<ClientRecord, OAuthError> {
    let endpoint = metadata.registration_endpoint.as_deref().ok_or(OAuthError::NoRegistration)?;
    let requested = requested_method(metadata);
    let body = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested,
    });
    let answer = post_json(http, endpoint, &body).await?;
    record_of(endpoint, &metadata.issuer, redirect_uri, requested, &answer)
}

/// The client a registration `answer` describes.
fn record_of(
    endpoint: &str,
    issuer: &str,
    redirect_uri: &str,
    requested: &str,
    answer: &Value,
) -> Result<ClientRecord, OAuthError> {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let client_id = text("client_id").ok_or_else(|| OAuthError::Malformed {
        endpoint: endpoint.to_owned(),
        what: "its answer has no client_id".into(),
    })?;
    let client_secret = text("client_secret");
    let auth_method = match (text("token_endpoint_auth_method"), &client_secret) {
        (Some(method), _) => method,
        (None, Some(_)) if requested == "none" => "client_secret_basic".to_owned(),
        (None, Some(_)) => requested.to_owned(),
        (None, None) => "none".to_owned(),
    };
    Ok(ClientRecord {
        issuer: issuer.to_owned(),
        client_id,
        client_secret,
        auth_method,
        redirect_uri: Some(redirect_uri.to_owned()),
        key_file: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<&[&str]>) -> ServerMetadata {
        ServerMetadata {
            token_endpoint_auth_methods_supported: methods.map(|m| m.iter().map(|s| (*s).to_owned()).collect()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn the_lightest_method_the_server_supports_is_asked_for_and_used() {
        assert_eq!(requested_method(&metadata(Some(&["client_secret_post", "none"]))), "none");
        assert_eq!(requested_method(&metadata(Some(&["client_secret_post"]))), "client_secret_post");
        assert_eq!(requested_method(&metadata(None)), "client_secret_basic");
        assert_eq!(auth_method(&metadata(Some(&["client_secret_post"])), true, false), "client_secret_post");
        assert_eq!(auth_method(&metadata(Some(&["client_secret_basic"])), true, false), "client_secret_basic");
        assert_eq!(auth_method(&metadata(Some(&["private_key_jwt"])), false, true), "private_key_jwt");
        assert_eq!(auth_method(&metadata(None), false, false), "none");
    }

    #[test]
    fn the_servers_answer_decides_the_method() {
        let answer =
            json!({"client_id": "c1", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post"});
        let record = record_of("R", "http://as", "http://127.0.0.1:1/callback", "none", &answer).unwrap();
        assert_eq!((record.client_id.as_str(), record.auth_method.as_str()), ("c1", "client_secret_post"));
        let secret_only = json!({"client_id": "c2", "client_secret": "s"});
        assert_eq!(record_of("R", "I", "U", "none", &secret_only).unwrap().auth_method, "client_secret_basic");
        assert_eq!(record_of("R", "I", "U", "none", &json!({"client_id": "c3"})).unwrap().auth_method, "none");
        assert_eq!(
            record_of("R", "I", "U", "none", &json!({})).unwrap_err().to_string(),
            "R: its answer has no client_id"
        );
    }
}
