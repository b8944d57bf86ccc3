//! The grants of a sign-in, once the authorization server is known.
//!
//! - A cross-app sign-in when one is configured (SEP-990): the identity provider's ID token
//!   exchanged there (RFC 8693) for an ID-JAG, which the authorization server takes as a
//!   JWT-bearer grant (RFC 7523) from the configured client.
//! - Client credentials when a client with a secret or a key is configured and the server
//!   issues no authorization codes (it lists `client_credentials` and not
//!   `authorization_code`, or has no authorization endpoint).
//! - Otherwise the authorization code with PKCE: the browser opened on the authorization
//!   endpoint, the code taken from the loopback redirect and exchanged at the token endpoint.
//!
//! Refreshing uses the refresh token and the same client.

use std::time::Duration;

use reqwest::Url;
use serde_json::Value;

use super::callback::Callback;
use super::discovery::{self, ServerMetadata};
use super::http::{ClientAuth, post_form};
use super::jwt::SigningKey;
use super::pkce::{Pkce, random_string};
use super::registration;
use super::store::{ClientRecord, Entry, Tokens};
use super::token::{self, client_auth, tokens_of};
use super::{Authorizer, OAuthError, Xaa};

/// How long a browser sign-in may take.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// RFC 8693's grant type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 7523's grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What a grant needs to know besides the authorizer.
pub struct Context<'a> {
    /// The authorization server.
    pub metadata: &'a ServerMetadata,
    /// The resource indicator (RFC 8707), when the server published its metadata.
    pub resource: Option<&'a str>,
    /// The scopes to ask for.
    pub scope: Option<&'a str>,
}

/// Run the grant that fits; returns the client it used and the tokens.
///
/// # Errors
/// Why the grant failed.
pub async fn grant(auth: &Authorizer, entry: &Entry, cx: &Context<'_>) -> Result<(ClientRecord, Tokens), OAuthError> {
    let stored = entry.client.clone().filter(|c| c.issuer == cx.metadata.issuer);
    let configured = configured_client(auth, cx.metadata, stored.as_ref());
    let key = key_of(configured.as_ref().and_then(|c| c.key_file.as_deref()))?;
    if let Some(xaa) = &auth.settings().xaa {
        let client = configured.ok_or_else(|| {
            OAuthError::Client(
                "a cross-app sign-in needs the client id agentloop has at the authorization server".into(),
            )
        })?;
        return cross_app(auth, cx, xaa, client, key.as_ref()).await;
    }
    let no_codes = !cx.metadata.supports_grant("authorization_code") || cx.metadata.authorization_endpoint.is_none();
    // A client that can prove who it is: the configured one, else the one a sign-in kept.
    let credentialed = configured.clone().or(stored).filter(|c| c.auth_method != "none");
    if let Some(client) = credentialed.filter(|_| no_codes) {
        if !cx.metadata.supports_grant("client_credentials") {
            return Err(OAuthError::Client(
                "the authorization server issues neither authorization codes nor client credentials".into(),
            ));
        }
        let key = key_of(client.key_file.as_deref())?;
        return client_credentials(auth, cx, client, key.as_ref()).await;
    }
    authorization_code(auth, entry, cx, configured, key.as_ref()).await
}

/// The PEM key at `path`.
fn key_of(path: Option<&std::path::Path>) -> Result<Option<SigningKey>, OAuthError> {
    let Some(path) = path else { return Ok(None) };
    let pem = std::fs::read_to_string(path)
        .map_err(|e| OAuthError::Client(format!("cannot read the private key {}: {e}", path.display())))?;
    SigningKey::from_pem(&pem).map(Some).map_err(|e| OAuthError::Client(format!("{}: {e}", path.display())))
}

/// The configured client, authenticating as `metadata`'s server allows. A secret or key the
/// configuration lacks comes from the registration a sign-in kept for the same client id
/// (`stored`): a run's configuration names the client, `agentloop mcp` kept its secret.
fn configured_client(
    auth: &Authorizer,
    metadata: &ServerMetadata,
    stored: Option<&ClientRecord>,
) -> Option<ClientRecord> {
    let settings = auth.settings();
    let client_id = settings.client_id.clone()?;
    let kept = stored.filter(|c| c.client_id == client_id);
    let client_secret = settings.client_secret.clone().or_else(|| kept.and_then(|c| c.client_secret.clone()));
    let key_file = settings.client_key_file.clone().or_else(|| kept.and_then(|c| c.key_file.clone()));
    let method = registration::auth_method(metadata, client_secret.is_some(), key_file.is_some());
    Some(ClientRecord {
        issuer: metadata.issuer.clone(),
        client_id,
        client_secret,
        auth_method: method.to_owned(),
        redirect_uri: None,
        key_file,
    })
}

/// The audience of the authorization server's assertions: its issuer, else its token
/// endpoint.
fn audience(metadata: &ServerMetadata) -> &str {
    if metadata.issuer.is_empty() { &metadata.token_endpoint } else { &metadata.issuer }
}

/// The `resource` and `scope` pairs of a request, when given.
fn indicators<'a>(cx: &Context<'a>) -> Vec<(&'static str, &'a str)> {
    let mut pairs = Vec::new();
    if let Some(resource) = cx.resource {
        pairs.push(("resource", resource));
    }
    if let Some(scope) = cx.scope {
        pairs.push(("scope", scope));
    }
    pairs
}

/// The authorization code grant with PKCE, through the browser.
async fn authorization_code(
    auth: &Authorizer,
    entry: &Entry,
    cx: &Context<'_>,
    configured: Option<ClientRecord>,
    key: Option<&SigningKey>,
) -> Result<(ClientRecord, Tokens), OAuthError> {
    if !auth.may_open_browser() {
        return Err(OAuthError::NeedsSignIn(auth.url().to_string()));
    }
    let metadata = cx.metadata;
    if !metadata.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|x| x == "S256")) {
        return Err(OAuthError::NoPkce);
    }
    let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| OAuthError::Malformed {
        endpoint: metadata.issuer.clone(),
        what: "its metadata has no authorization_endpoint".into(),
    })?;
    let mut endpoint = Url::parse(endpoint)
        .map_err(|_| OAuthError::Malformed { endpoint: endpoint.to_owned(), what: "not a URL".into() })?;
    let stored = entry.client.clone().filter(|c| c.issuer == metadata.issuer && configured.is_none());
    let stored_port =
        stored.as_ref().and_then(|c| c.redirect_uri.as_deref()).and_then(|u| Url::parse(u).ok()).and_then(|u| u.port());
    let callback = match (auth.settings().callback_port, stored_port) {
        (Some(port), _) => Callback::bind(Some(port)).await?,
        (None, Some(port)) => match Callback::bind(Some(port)).await {
            Ok(callback) => callback,
            Err(_) => Callback::bind(None).await?,
        },
        (None, None) => Callback::bind(None).await?,
    };
    let redirect_uri = callback.redirect_uri();
    let cimd = auth
        .settings()
        .client_metadata_url
        .clone()
        .filter(|_| metadata.client_id_metadata_document_supported == Some(true));
    let client = match (configured, stored, cimd) {
        (Some(client), _, _) => client,
        (None, Some(client), _) if client.redirect_uri.as_deref().is_none_or(|u| u == redirect_uri) => client,
        (None, _, Some(url)) => ClientRecord {
            issuer: metadata.issuer.clone(),
            client_id: url,
            client_secret: None,
            auth_method: "none".into(),
            redirect_uri: None,
            key_file: None,
        },
        (None, _, None) => registration::register(auth.http(), metadata, &redirect_uri).await?,
    };
    let pkce = Pkce::new();
    let state = random_string(32);
    {
        let mut query = endpoint.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("state", &state)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256");
        for (name, value) in indicators(cx) {
            query.append_pair(name, value);
        }
    }
    crate::stderr::line(&format!(
        "agentloop: MCP server `{}` needs you to sign in; opening your browser at:\n  {endpoint}",
        auth.name()
    ));
    if let Err(e) = crate::mcp::browser::open(endpoint.as_str()) {
        crate::stderr::line(&format!("agentloop: cannot open a browser ({e}): open the URL yourself"));
    }
    let code = tokio::time::timeout(SIGN_IN_WAIT, callback.wait(&state))
        .await
        .map_err(|_| OAuthError::TimedOut(SIGN_IN_WAIT.as_secs()))??;
    let mut form =
        vec![("grant_type", "authorization_code"), ("code", code.as_str()), ("redirect_uri", redirect_uri.as_str())];
    form.push(("code_verifier", pkce.verifier.as_str()));
    if let Some(resource) = cx.resource {
        form.push(("resource", resource));
    }
    let answer =
        post_form(auth.http(), &metadata.token_endpoint, &form, client_auth(&client, key, audience(metadata))?).await?;
    let tokens = tokens_of(&metadata.token_endpoint, &answer, cx.scope, None, token::now())?;
    Ok((client, tokens))
}

/// The client credentials grant.
async fn client_credentials(
    auth: &Authorizer,
    cx: &Context<'_>,
    client: ClientRecord,
    key: Option<&SigningKey>,
) -> Result<(ClientRecord, Tokens), OAuthError> {
    let metadata = cx.metadata;
    let mut form = vec![("grant_type", "client_credentials")];
    form.extend(indicators(cx));
    let answer =
        post_form(auth.http(), &metadata.token_endpoint, &form, client_auth(&client, key, audience(metadata))?).await?;
    let tokens = tokens_of(&metadata.token_endpoint, &answer, cx.scope, None, token::now())?;
    Ok((client, tokens))
}

/// A cross-app sign-in: the ID token exchanged for an ID-JAG at the identity provider, the
/// ID-JAG granted at the authorization server.
async fn cross_app(
    auth: &Authorizer,
    cx: &Context<'_>,
    xaa: &Xaa,
    client: ClientRecord,
    key: Option<&SigningKey>,
) -> Result<(ClientRecord, Tokens), OAuthError> {
    let metadata = cx.metadata;
    let issuer = Url::parse(&xaa.issuer)
        .map_err(|_| OAuthError::Malformed { endpoint: xaa.issuer.clone(), what: "not a URL".into() })?;
    let idp_token_endpoint = discovery::token_endpoint_of(auth.http(), &issuer).await?;
    let mut exchange = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
        ("audience", audience(metadata)),
        ("subject_token", xaa.id_token.as_str()),
        ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
    ];
    exchange.extend(indicators(cx));
    let exchanged = post_form(auth.http(), &idp_token_endpoint, &exchange, ClientAuth::None(&xaa.client_id)).await?;
    let id_jag = exchanged.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty()).ok_or_else(|| {
        OAuthError::Malformed {
            endpoint: idp_token_endpoint.clone(),
            what: "its answer has no ID-JAG (access_token)".into(),
        }
    })?;
    let mut form = vec![("grant_type", JWT_BEARER), ("assertion", id_jag)];
    form.extend(indicators(cx));
    let answer =
        post_form(auth.http(), &metadata.token_endpoint, &form, client_auth(&client, key, audience(metadata))?).await?;
    let tokens = tokens_of(&metadata.token_endpoint, &answer, cx.scope, None, token::now())?;
    Ok((client, tokens))
}

/// Refresh `tokens` at `metadata`'s token endpoint as `client`.
///
/// # Errors
/// No refresh token, or the endpoint refuses.
pub async fn refresh(
    auth: &Authorizer,
    metadata: &ServerMetadata,
    client: &ClientRecord,
    tokens: &Tokens,
    resource: Option<&str>,
) -> Result<Tokens, OAuthError> {
    let refresh_token = tokens.refresh_token.as_deref().ok_or_else(|| OAuthError::Client("no refresh token".into()))?;
    let key = key_of(client.key_file.as_deref())?;
    let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
    if let Some(resource) = resource {
        form.push(("resource", resource));
    }
    let answer =
        post_form(auth.http(), &metadata.token_endpoint, &form, client_auth(client, key.as_ref(), audience(metadata))?)
            .await?;
    tokens_of(&metadata.token_endpoint, &answer, tokens.scope.as_deref(), Some(tokens), token::now())
}
