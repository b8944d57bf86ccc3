//! Token endpoint answers and the client's proof of identity there.
//!
//! A token answer (RFC 6749 §5.1) must carry an `access_token` of type `Bearer`; its
//! `expires_in` becomes an absolute expiry, and a missing `scope` means the scopes that were
//! asked for. A client authenticates as its registration says ([`ClientRecord::auth_method`]):
//! nothing but its id, HTTP Basic, the secret in the form, or an assertion signed with its
//! private key (`private_key_jwt`, audience the authorization server's issuer).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::OAuthError;
use super::http::ClientAuth;
use super::jwt::SigningKey;
use super::store::{ClientRecord, Tokens};

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How long before its expiry a token is renewed.
pub const EXPIRY_MARGIN: u64 = 30;

/// Whether `tokens` expired (or will within [`EXPIRY_MARGIN`]) at `now`.
pub fn expired(tokens: &Tokens, now: u64) -> bool {
    tokens.expires_at.is_some_and(|at| at <= now + EXPIRY_MARGIN)
}

/// The tokens of the answer `json` from `endpoint`, given `now` and the `requested` scope;
/// `previous` keeps its refresh token when a refresh answer brings none.
///
/// # Errors
/// No `access_token`, or a token type other than `Bearer`.
pub fn tokens_of(
    endpoint: &str,
    json: &Value,
    requested: Option<&str>,
    previous: Option<&Tokens>,
    now: u64,
) -> Result<Tokens, OAuthError> {
    let malformed = |what: &str| OAuthError::Malformed { endpoint: endpoint.to_owned(), what: what.to_owned() };
    let access_token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| malformed("its answer has no access_token"))?;
    match json.get("token_type").and_then(Value::as_str) {
        Some(kind) if !kind.eq_ignore_ascii_case("bearer") => {
            return Err(malformed(&format!("it issued a `{kind}` token, not a Bearer token")));
        }
        Some(_) | None => {}
    }
    let text = |key: &str| json.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    Ok(Tokens {
        access_token: access_token.to_owned(),
        refresh_token: text("refresh_token").or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        expires_at: json.get("expires_in").and_then(Value::as_u64).map(|seconds| now + seconds),
        scope: text("scope").or_else(|| requested.map(str::to_owned)),
    })
}

/// How `client` authenticates at the token endpoint of the authorization server `issuer`;
/// `key` signs its assertions for `private_key_jwt`.
///
/// # Errors
/// The method needs a secret or a key the client does not have.
pub fn client_auth<'a>(
    client: &'a ClientRecord,
    key: Option<&SigningKey>,
    issuer: &str,
) -> Result<ClientAuth<'a>, OAuthError> {
    let secret = || {
        client.client_secret.as_deref().ok_or_else(|| {
            OAuthError::Client(format!("`{}` authenticates with a secret, and none is known", client.client_id))
        })
    };
    match client.auth_method.as_str() {
        "client_secret_basic" => Ok(ClientAuth::Basic(&client.client_id, secret()?)),
        "client_secret_post" => Ok(ClientAuth::Post(&client.client_id, secret()?)),
        "private_key_jwt" => {
            let key = key.ok_or_else(|| {
                OAuthError::Client(format!(
                    "`{}` authenticates with a private key, and none is given",
                    client.client_id
                ))
            })?;
            Ok(ClientAuth::Assertion(&client.client_id, assertion(key, &client.client_id, issuer)?))
        }
        _ => Ok(ClientAuth::None(&client.client_id)),
    }
}

/// A client assertion (RFC 7523 §3): issued by and about `client_id`, for `audience`, valid
/// for five minutes.
///
/// # Errors
/// It cannot be signed.
pub fn assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String, OAuthError> {
    let issued = now();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + 300,
        "jti": super::pkce::random_string(32),
    });
    key.sign(&claims).map_err(|e| OAuthError::Client(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answer_becomes_tokens_with_an_absolute_expiry() {
        let json = json!({"access_token": "at", "token_type": "bearer", "expires_in": 3600, "refresh_token": "rt"});
        let tokens = tokens_of("T", &json, Some("a b"), None, 1_000).unwrap();
        assert_eq!(
            tokens,
            Tokens {
                access_token: "at".into(),
                refresh_token: Some("rt".into()),
                expires_at: Some(4_600),
                scope: Some("a b".into())
            }
        );
        assert!(!expired(&tokens, 4_500) && expired(&tokens, 4_571));
        // A refresh answer without a new refresh token keeps the old one.
        let refreshed = tokens_of("T", &json!({"access_token": "at2", "scope": "a"}), None, Some(&tokens), 0).unwrap();
        assert_eq!(
            (refreshed.refresh_token.as_deref(), refreshed.scope.as_deref(), refreshed.expires_at),
            (Some("rt"), Some("a"), None)
        );
    }

    #[test]
    fn an_answer_without_a_bearer_token_is_refused() {
        assert_eq!(
            tokens_of("http://as/token", &json!({"token_type": "Bearer"}), None, None, 0).unwrap_err().to_string(),
            "http://as/token: its answer has no access_token"
        );
        assert_eq!(
            tokens_of("http://as/token", &json!({"access_token": "x", "token_type": "mac"}), None, None, 0)
                .unwrap_err()
                .to_string(),
            "http://as/token: it issued a `mac` token, not a Bearer token"
        );
    }

    #[test]
    fn a_client_authenticates_as_registered() {
        let record = |method: &str, secret: Option<&str>| ClientRecord {
            issuer: "http://as".into(),
            client_id: "c".into(),
            client_secret: secret.map(str::to_owned),
            auth_method: method.into(),
            redirect_uri: None,
            key_file: None,
        };
        let basic = record("client_secret_basic", Some("s"));
        assert!(matches!(client_auth(&basic, None, "http://as"), Ok(ClientAuth::Basic("c", "s"))));
        let post = record("client_secret_post", Some("s"));
        assert!(matches!(client_auth(&post, None, "http://as"), Ok(ClientAuth::Post("c", "s"))));
        let none = record("none", None);
        assert!(matches!(client_auth(&none, None, "http://as"), Ok(ClientAuth::None("c"))));
        let missing = record("client_secret_basic", None);
        assert_eq!(
            client_auth(&missing, None, "http://as").err().unwrap().to_string(),
            "the client: `c` authenticates with a secret, and none is known"
        );
    }
}
