//! OAuth for remote (Streamable HTTP) MCP servers, following the MCP authorization
//! specification (2025-11-25, with the 2025-03-26 revision's fallbacks) as Claude Code
//! supports it.
//!
//! A server that answers 401 is signed in to, once, and the request is sent again with the
//! new bearer token ([`Authorizer::authorize`]):
//! 1. [`discovery`]: its protected-resource metadata (RFC 9728) and its authorization
//!    server's metadata (RFC 8414 / OpenID Connect Discovery);
//! 2. [`registration`]: who agentloop is there — a configured client, a client metadata
//!    document URL, or a dynamic registration (RFC 7591);
//! 3. a grant ([`flow`]): the authorization code with PKCE `S256` ([`pkce`]) through the
//!    browser and a loopback redirect ([`callback`]); client credentials (with a secret or a
//!    `private_key_jwt` assertion, [`jwt`]); or a cross-app sign-in (SEP-990: an identity
//!    provider's ID token exchanged for an ID-JAG, then a JWT-bearer grant). Every request
//!    names the resource (RFC 8707) when the server published its metadata.
//!
//! Scopes are those of the challenge, else the configured ones, else those the resource
//! metadata lists, else none are asked for; `offline_access` is added when the authorization
//! server lists it, so that a refresh token comes. A 403 `insufficient_scope` asks again for
//! the scopes already held plus the challenge's — unless that asks for nothing new, and at
//! most [`MAX_SIGN_INS`] times per server and run. An expired token is refreshed first.
//!
//! What a sign-in produces is kept in the [`store`] (`0600` files under agentloop's home)
//! and reused by later runs of the same server URL. Tokens never reach a trace, a transcript
//! or stdout: they live here and in the `Authorization` header (marked sensitive) only.

pub mod callback;
pub mod challenge;
pub mod discovery;
pub mod flow;
pub mod http;
pub mod jwt;
pub mod pkce;
pub mod registration;
pub mod store;
pub mod token;

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use reqwest::Url;

pub use challenge::Challenge;
use discovery::{ResourceMetadata, ServerMetadata};
use store::{Entry, Store, Tokens};

/// How many sign-ins one server may ask for in one run (scope step-ups included).
pub const MAX_SIGN_INS: u32 = 3;

/// What went wrong signing in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// A URL could not be reached.
    #[error("cannot reach {url}: {error}")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        error: String,
    },
    /// An endpoint refused a request.
    #[error("{endpoint} refused ({status}{}{})", error.as_deref().map(|e| format!(", {e}")).unwrap_or_default(), description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Refused {
        /// The endpoint.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code.
        error: Option<String>,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// An endpoint answered with something unusable.
    #[error("{endpoint}: {what}")]
    Malformed {
        /// The endpoint.
        endpoint: String,
        /// What is wrong.
        what: String,
    },
    /// The protected-resource metadata is about another resource.
    #[error("the server's protected-resource metadata is for `{resource}`, not `{server}`: not signing in")]
    ResourceMismatch {
        /// The metadata's resource.
        resource: String,
        /// The server's URL.
        server: String,
    },
    /// No metadata where it must be.
    #[error("no OpenID or OAuth metadata for `{0}`")]
    NoMetadata(String),
    /// The authorization server does not support PKCE with S256.
    #[error("the authorization server does not support PKCE with S256: not signing in")]
    NoPkce,
    /// Neither a configured client nor a way to register one.
    #[error(
        "the authorization server has no dynamic client registration: configure a client id (`oauth.clientId`, or `agentloop mcp --client-id`)"
    )]
    NoRegistration,
    /// A client's credentials are missing or unusable.
    #[error("the client: {0}")]
    Client(String),
    /// A sign-in in the browser is needed and cannot start here.
    #[error("needs a sign-in in the browser: run `agentloop mcp {0}` once to sign in")]
    NeedsSignIn(String),
    /// The loopback redirect failed.
    #[error("the sign-in's redirect: {0}")]
    Callback(String),
    /// The authorization server redirected with an error.
    #[error("the sign-in was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth `error` code.
        error: String,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// Nobody came back from the browser in time.
    #[error("no sign-in within {0} seconds")]
    TimedOut(u64),
    /// A 403 that names no scope to ask for.
    #[error("the server refused the token (403) and names no scope to ask for")]
    Forbidden,
    /// More scope asked for than a new sign-in can give.
    #[error("the server wants scope `{0}`, which was already asked for: signing in again would not help")]
    ScopeNotGranted(String),
    /// The per-run limit of sign-ins was reached.
    #[error("signed in {MAX_SIGN_INS} times already in this run: giving up")]
    TooManySignIns,
}

/// How a server's sign-in is configured: Claude Code's `oauth` object of an HTTP server
/// (`clientId`, `callbackPort`, `authServerMetadataUrl`, `scopes`), the secret from
/// `MCP_CLIENT_SECRET` (as `claude mcp add --client-secret` takes it), and agentloop's
/// additions on `agentloop mcp`'s command line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// A PKCS#8 PEM private key for `private_key_jwt`.
    pub client_key_file: Option<PathBuf>,
    /// The URL of agentloop's client metadata document, used as the client id where the
    /// authorization server accepts one (CIMD).
    pub client_metadata_url: Option<String>,
    /// The loopback port of the browser's redirect.
    pub callback_port: Option<u16>,
    /// The authorization server's metadata URL, instead of discovering it.
    pub auth_server_metadata_url: Option<String>,
    /// The scopes to ask for, space-separated.
    pub scopes: Option<String>,
    /// A cross-app sign-in through an identity provider (SEP-990).
    pub xaa: Option<Xaa>,
}

impl std::fmt::Debug for Settings {
    /// Without the secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<secret>"))
            .field("client_key_file", &self.client_key_file)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("callback_port", &self.callback_port)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .field("scopes", &self.scopes)
            .field("xaa", &self.xaa)
            .finish()
    }
}

/// An identity provider's part in a cross-app sign-in.
#[derive(Clone, PartialEq, Eq)]
pub struct Xaa {
    /// The provider's issuer (its token endpoint is discovered from it).
    pub issuer: String,
    /// agentloop's client id there.
    pub client_id: String,
    /// The user's ID token from the provider.
    pub id_token: String,
}

impl std::fmt::Debug for Xaa {
    /// Without the ID token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xaa").field("issuer", &self.issuer).field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

/// Whether a sign-in may open the browser: `agentloop mcp` may; a run may not (it reuses
/// and refreshes what a sign-in kept, and runs the grants that need no person).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// Open the browser and wait for its redirect.
    Browser,
    /// Fail with [`OAuthError::NeedsSignIn`] instead.
    Never,
}

/// The status that made a request ask for authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no token, or one the server does not take.
    Unauthorized,
    /// 403: a token without the scope the request needs.
    Forbidden,
}

/// One server's authorization: the token its requests carry, and the sign-in when it
/// refuses them.
pub struct Authorizer {
    name: String,
    url: Url,
    settings: Settings,
    sign_in: SignIn,
    http: reqwest::Client,
    store: Option<Store>,
    current: Mutex<Option<Tokens>>,
    state: tokio::sync::Mutex<State>,
}

/// What the sign-ins of a run know.
struct State {
    entry: Entry,
    sign_ins: u32,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("name", &self.name).field("url", &self.url.as_str()).finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The authorizer of the server `name` at `url`, its requests made with `http`, what
    /// earlier sign-ins kept read from (and new ones written to) `store`.
    pub fn new(
        name: &str,
        url: Url,
        settings: Settings,
        sign_in: SignIn,
        http: reqwest::Client,
        store: Option<Store>,
    ) -> Authorizer {
        let entry = store
            .as_ref()
            .and_then(|s| s.load(url.as_str()))
            .unwrap_or_else(|| Entry { server_url: url.to_string(), ..Entry::default() });
        Authorizer {
            name: name.to_owned(),
            current: Mutex::new(entry.tokens.clone()),
            state: tokio::sync::Mutex::new(State { entry, sign_ins: 0 }),
            url,
            settings,
            sign_in,
            http,
            store,
        }
    }

    /// The access token to send now: the current one, refreshed first when it expired and a
    /// refresh token is kept; `None` before any sign-in.
    pub async fn token(&self) -> Option<String> {
        let current = self.current_tokens();
        match current {
            Some(tokens) if token::expired(&tokens, token::now()) && tokens.refresh_token.is_some() => {
                let mut state = self.state.lock().await;
                // Another request may have refreshed meanwhile.
                if let Some(fresh) = self.current_tokens().filter(|t| !token::expired(t, token::now())) {
                    return Some(fresh.access_token);
                }
                match self.refresh(&mut state).await {
                    Ok(tokens) => Some(tokens.access_token),
                    Err(_) => Some(tokens.access_token),
                }
            }
            Some(tokens) => Some(tokens.access_token),
            None => None,
        }
    }

    fn current_tokens(&self) -> Option<Tokens> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The server refused a request sent with `sent` (no token when `None`) for `refusal`
    /// with `challenge`: get a token that may pass — the one another request got meanwhile,
    /// a refreshed one, or a new sign-in.
    ///
    /// # Errors
    /// Why no token could be had.
    pub async fn authorize(
        &self,
        challenge: &Challenge,
        refusal: Refusal,
        sent: Option<&str>,
    ) -> Result<String, OAuthError> {
        let mut state = self.state.lock().await;
        let current = self.current_tokens();
        if let (Some(tokens), Refusal::Unauthorized) = (&current, refusal)
            && Some(tokens.access_token.as_str()) != sent
        {
            return Ok(tokens.access_token.clone());
        }
        let held: Vec<String> =
            current.as_ref().and_then(|t| t.scope.as_deref()).map(challenge::split_scopes).unwrap_or_default();
        if refusal == Refusal::Forbidden {
            let wanted = challenge.scopes();
            if wanted.is_empty() {
                return Err(OAuthError::Forbidden);
            }
            if wanted.iter().all(|s| held.contains(s)) {
                return Err(OAuthError::ScopeNotGranted(challenge.scope.clone().unwrap_or_default()));
            }
        }
        if refusal == Refusal::Unauthorized
            && current.as_ref().is_some_and(|t| t.refresh_token.is_some())
            && let Ok(tokens) = self.refresh(&mut state).await
        {
            return Ok(tokens.access_token);
        }
        if state.sign_ins >= MAX_SIGN_INS {
            return Err(OAuthError::TooManySignIns);
        }
        state.sign_ins += 1;
        let tokens = self.sign_in(&mut state, challenge, refusal, &held).await?;
        Ok(tokens.access_token)
    }

    /// Refresh the kept tokens.
    async fn refresh(&self, state: &mut State) -> Result<Tokens, OAuthError> {
        let (Some(tokens), Some(client)) = (state.entry.tokens.clone(), state.entry.client.clone()) else {
            return Err(OAuthError::Client("nothing to refresh".into()));
        };
        let issuer = Url::parse(&client.issuer).map_err(|_| OAuthError::NoMetadata(client.issuer.clone()))?;
        let metadata = match &self.settings.auth_server_metadata_url {
            Some(url) => discovery::metadata_at(&self.http, &parse_url(url)?).await?,
            None => discovery::server_metadata(&self.http, &issuer).await?,
        }
        .unwrap_or_else(|| ServerMetadata::fallback(&issuer));
        let resource = state.entry.resource.clone();
        let refreshed = flow::refresh(self, &metadata, &client, &tokens, resource.as_deref()).await?;
        self.keep(state, Some(client), refreshed.clone());
        Ok(refreshed)
    }

    /// Discover, identify, and run the grant that fits.
    async fn sign_in(
        &self,
        state: &mut State,
        challenge: &Challenge,
        refusal: Refusal,
        held: &[String],
    ) -> Result<Tokens, OAuthError> {
        let resource =
            discovery::resource_metadata(&self.http, &self.url, challenge.resource_metadata.as_deref()).await?;
        let issuer = match resource.as_ref().and_then(|r| r.authorization_servers.first()) {
            Some(issuer) => parse_url(issuer)?,
            // 2025-03-26: the server's origin is its authorization server.
            None => {
                let mut origin = self.url.clone();
                origin.set_path("");
                origin.set_query(None);
                origin.set_fragment(None);
                origin
            }
        };
        let metadata = match &self.settings.auth_server_metadata_url {
            Some(url) => discovery::metadata_at(&self.http, &parse_url(url)?).await?,
            None => discovery::server_metadata(&self.http, &issuer).await?,
        };
        let metadata = match (metadata, &resource) {
            (Some(metadata), _) => metadata,
            (None, None) => ServerMetadata::fallback(&issuer),
            (None, Some(_)) => return Err(OAuthError::NoMetadata(issuer.to_string())),
        };
        let scope =
            select_scopes(challenge, self.settings.scopes.as_deref(), resource.as_ref(), &metadata, refusal, held);
        let context = flow::Context {
            metadata: &metadata,
            resource: resource.as_ref().map(|r| r.resource.as_str()),
            scope: scope.as_deref(),
        };
        let (client, tokens) = flow::grant(self, &state.entry, &context).await?;
        state.entry.resource = resource.map(|r| r.resource);
        self.keep(state, Some(client), tokens.clone());
        Ok(tokens)
    }

    /// Make `tokens` current and keep them with `client` in the store.
    fn keep(&self, state: &mut State, client: Option<store::ClientRecord>, tokens: Tokens) {
        state.entry.client = client;
        state.entry.tokens = Some(tokens.clone());
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokens);
        if let Some(store) = &self.store
            && let Err(e) = store.save(&state.entry)
        {
            crate::stderr::line(&format!(
                "agentloop: warning: MCP server `{}`: cannot keep its sign-in in {}: {e}",
                self.name,
                store.path_of(self.url.as_str()).display()
            ));
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The sign-in's configuration.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether the browser may be opened.
    pub fn may_open_browser(&self) -> bool {
        self.sign_in == SignIn::Browser
    }

    /// The HTTP client of the sign-in's requests.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

/// `text` as a URL.
fn parse_url(text: &str) -> Result<Url, OAuthError> {
    Url::parse(text).map_err(|_| OAuthError::Malformed { endpoint: text.to_owned(), what: "not a URL".into() })
}

/// The scopes to ask for: the challenge's, else the configured ones, else those the resource
/// metadata lists; after a 403, those already `held` first; `offline_access` added when the
/// authorization server lists it. `None` asks for none.
pub fn select_scopes(
    challenge: &Challenge,
    configured: Option<&str>,
    resource: Option<&ResourceMetadata>,
    metadata: &ServerMetadata,
    refusal: Refusal,
    held: &[String],
) -> Option<String> {
    let wanted = challenge.scopes();
    let base = if !wanted.is_empty() {
        wanted
    } else if let Some(configured) = configured.map(challenge::split_scopes).filter(|s| !s.is_empty()) {
        configured
    } else {
        resource.and_then(|r| r.scopes_supported.clone()).unwrap_or_default()
    };
    let mut scopes: Vec<String> = match refusal {
        Refusal::Forbidden => held.to_vec(),
        Refusal::Unauthorized => Vec::new(),
    };
    for scope in base {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let offline = "offline_access".to_owned();
    let listed = metadata.scopes_supported.as_ref().is_some_and(|s| s.contains(&offline));
    if !scopes.is_empty() && listed && !scopes.contains(&offline) {
        scopes.push(offline);
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(scope: Option<&str>) -> Challenge {
        Challenge { scope: scope.map(str::to_owned), ..Challenge::default() }
    }

    fn resource(scopes: Option<&[&str]>) -> ResourceMetadata {
        ResourceMetadata {
            resource: "http://127.0.0.1:9/mcp".into(),
            authorization_servers: vec![],
            scopes_supported: scopes.map(|s| s.iter().map(|x| (*x).to_owned()).collect()),
        }
    }

    #[test]
    fn scopes_come_from_the_challenge_then_the_configuration_then_the_resource() {
        let none = ServerMetadata::default();
        let prm = resource(Some(&["mcp:basic", "mcp:read"]));
        let unauthorized = |c: Option<&str>, configured: Option<&str>, r: Option<&ResourceMetadata>| {
            select_scopes(&challenge(c), configured, r, &none, Refusal::Unauthorized, &[])
        };
        assert_eq!(unauthorized(Some("mcp:basic"), Some("x"), Some(&prm)).as_deref(), Some("mcp:basic"));
        assert_eq!(unauthorized(None, Some("x y"), Some(&prm)).as_deref(), Some("x y"));
        assert_eq!(unauthorized(None, None, Some(&prm)).as_deref(), Some("mcp:basic mcp:read"));
        assert_eq!(unauthorized(None, None, Some(&resource(None))), None);
        assert_eq!(unauthorized(None, None, None), None);
    }

    #[test]
    fn a_step_up_keeps_what_is_held_and_offline_access_comes_when_listed() {
        let none = ServerMetadata::default();
        let held = ["mcp:basic".to_owned()];
        assert_eq!(
            select_scopes(&challenge(Some("mcp:write mcp:basic")), None, None, &none, Refusal::Forbidden, &held)
                .as_deref(),
            Some("mcp:basic mcp:write")
        );
        let offline =
            ServerMetadata { scopes_supported: Some(vec!["mcp:basic".into(), "offline_access".into()]), ..none };
        let prm = resource(Some(&["mcp:basic"]));
        assert_eq!(
            select_scopes(&challenge(None), None, Some(&prm), &offline, Refusal::Unauthorized, &[]).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(select_scopes(&challenge(None), None, None, &offline, Refusal::Unauthorized, &[]), None);
    }
}
