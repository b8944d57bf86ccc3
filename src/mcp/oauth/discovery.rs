//! Finding out who signs a server's users in.
//!
//! 1. The server's protected-resource metadata (RFC 9728): at the `resource_metadata` URL of
//!    its challenge, else at `/.well-known/oauth-protected-resource` inserted before the
//!    URL's path, else at that path alone. It names the resource (which must be the server's
//!    URL or a prefix of it: a server may not send its users to sign in for another one),
//!    its authorization servers and the scopes it knows.
//! 2. The authorization server's metadata (RFC 8414, OpenID Connect Discovery): for an issuer
//!    with a path, `/.well-known/oauth-authorization-server` and
//!    `/.well-known/openid-configuration` inserted before the path, then
//!    `/.well-known/openid-configuration` appended to it; without a path, the first two at
//!    the root.
//! 3. A server without protected-resource metadata follows the 2025-03-26 revision: its own
//!    origin is the authorization server, whose metadata is looked for at the root, and
//!    without one its endpoints are `/authorize`, `/token` and `/register` there.

use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;

use super::OAuthError;
use super::http::get_json;

/// A server's protected-resource metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ResourceMetadata {
    /// The resource the metadata is about.
    pub resource: String,
    /// Its authorization servers' issuers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata: the fields agentloop uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
pub struct ServerMetadata {
    /// Its issuer identifier.
    #[serde(default)]
    pub issuer: String,
    /// Where a person signs in.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are issued.
    pub token_endpoint: String,
    /// Where clients register themselves (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The grants it issues tokens for; RFC 8414's default when absent is
    /// `authorization_code` and `implicit`.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// How clients may authenticate at the token endpoint; RFC 8414's default when absent is
    /// `client_secret_basic`.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The signing algorithms it accepts for `private_key_jwt`.
    #[serde(default)]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// The PKCE methods it supports.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Whether a client may use the URL of its metadata document as its id (CIMD).
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
}

impl ServerMetadata {
    /// The 2025-03-26 endpoints of an authorization server at `origin` that publishes no
    /// metadata: `/authorize`, `/token`, `/register`.
    pub fn fallback(origin: &Url) -> ServerMetadata {
        let at = |path: &str| origin.join(path).map(String::from).unwrap_or_default();
        ServerMetadata {
            issuer: origin.as_str().trim_end_matches('/').to_owned(),
            authorization_endpoint: Some(at("/authorize")),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            // Published by nobody: what such servers are expected to support.
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        }
    }

    /// Whether it issues tokens for `grant`.
    pub fn supports_grant(&self, grant: &str) -> bool {
        match &self.grant_types_supported {
            Some(grants) => grants.iter().any(|g| g == grant),
            None => grant == "authorization_code",
        }
    }

    /// Whether clients may authenticate with `method`.
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// The places of a server's protected-resource metadata, in the order they are tried: the
/// challenge's `resource_metadata`, then the path-based and the root well-known URLs.
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<Url> {
    let mut urls: Vec<Url> = from_challenge.and_then(|u| Url::parse(u).ok()).into_iter().collect();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        urls.extend(well_known(server, &format!("/.well-known/oauth-protected-resource{path}")));
    }
    urls.extend(well_known(server, "/.well-known/oauth-protected-resource"));
    urls.dedup();
    urls
}

/// The places of an issuer's metadata, in the order they are tried.
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
            .iter()
            .filter_map(|p| well_known(issuer, p))
            .collect();
    }
    [
        format!("/.well-known/oauth-authorization-server{path}"),
        format!("/.well-known/openid-configuration{path}"),
        format!("{path}/.well-known/openid-configuration"),
    ]
    .iter()
    .filter_map(|p| well_known(issuer, p))
    .collect()
}

/// `path` on `base`'s origin, without query or fragment.
fn well_known(base: &Url, path: &str) -> Option<Url> {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(path);
    Some(url)
}

/// Whether the metadata's `resource` may be `server`'s: the same origin, and its path the
/// server's or a parent of it.
pub fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    if resource.origin() != server.origin() {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == parent || path.starts_with(&format!("{parent}/"))
}

/// The server's protected-resource metadata, `None` when none is published.
///
/// # Errors
/// It names another resource than `server`.
pub async fn resource_metadata(
    http: &reqwest::Client,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    for url in resource_metadata_urls(server, from_challenge) {
        let Some(json) = get_json(http, &url).await? else { continue };
        let Ok(metadata) = serde_json::from_value::<ResourceMetadata>(json) else { continue };
        if !resource_matches(server, &metadata.resource) {
            return Err(OAuthError::ResourceMismatch { resource: metadata.resource, server: server.to_string() });
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// The metadata of the authorization server `issuer`, `None` when it publishes none.
///
/// # Errors
/// A metadata URL could not be reached at all.
pub async fn server_metadata(http: &reqwest::Client, issuer: &Url) -> Result<Option<ServerMetadata>, OAuthError> {
    for url in server_metadata_urls(issuer) {
        if let Some(metadata) = metadata_at(http, &url).await? {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// The authorization server metadata at `url` exactly (the configured
/// `authServerMetadataUrl`), `None` when there is none there.
///
/// # Errors
/// The URL could not be reached.
pub async fn metadata_at(http: &reqwest::Client, url: &Url) -> Result<Option<ServerMetadata>, OAuthError> {
    let Some(json) = get_json(http, url).await? else { return Ok(None) };
    Ok(serde_json::from_value::<ServerMetadata>(json).ok().filter(|m| !m.token_endpoint.is_empty()))
}

/// An OpenID provider's token endpoint (the IdP of a cross-app sign-in), from its discovery
/// document.
///
/// # Errors
/// The document cannot be fetched or has no `token_endpoint`.
pub async fn token_endpoint_of(http: &reqwest::Client, issuer: &Url) -> Result<String, OAuthError> {
    for url in server_metadata_urls(issuer) {
        if let Some(Value::String(endpoint)) =
            get_json(http, &url).await?.and_then(|j| j.get("token_endpoint").cloned())
        {
            return Ok(endpoint);
        }
    }
    Err(OAuthError::NoMetadata(issuer.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn resource_metadata_is_looked_for_at_the_challenges_url_then_path_based_then_root() {
        let server = url("http://127.0.0.1:9/mcp?x=1");
        assert_eq!(
            strings(resource_metadata_urls(&server, Some("http://127.0.0.1:9/custom/metadata/location.json"))),
            [
                "http://127.0.0.1:9/custom/metadata/location.json",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("http://127.0.0.1:9/"), None)),
            ["http://127.0.0.1:9/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_urls_insert_the_well_known_before_an_issuers_path() {
        assert_eq!(
            strings(server_metadata_urls(&url("http://127.0.0.1:9/tenant1"))),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server/tenant1",
                "http://127.0.0.1:9/.well-known/openid-configuration/tenant1",
                "http://127.0.0.1:9/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(server_metadata_urls(&url("http://127.0.0.1:9"))),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_must_be_the_server_or_a_parent_path_on_its_origin() {
        let server = url("http://127.0.0.1:9/mcp");
        assert!(resource_matches(&server, "http://127.0.0.1:9/mcp"));
        assert!(resource_matches(&server, "http://127.0.0.1:9/mcp/"));
        assert!(resource_matches(&server, "http://127.0.0.1:9"));
        assert!(resource_matches(&url("http://127.0.0.1:9/mcp/v1"), "http://127.0.0.1:9/mcp"));
        assert!(!resource_matches(&server, "https://evil.example.com/mcp"));
        assert!(!resource_matches(&server, "http://127.0.0.1:10/mcp"));
        assert!(!resource_matches(&server, "http://127.0.0.1:9/mcp2"));
        assert!(!resource_matches(&url("http://127.0.0.1:9/mc"), "http://127.0.0.1:9/mcp"));
        assert!(!resource_matches(&server, "not a url"));
    }

    #[test]
    fn without_metadata_the_endpoints_are_at_the_root_and_defaults_follow_rfc_8414() {
        let fallback = ServerMetadata::fallback(&url("http://127.0.0.1:9/"));
        assert_eq!(fallback.issuer, "http://127.0.0.1:9");
        assert_eq!(fallback.authorization_endpoint.as_deref(), Some("http://127.0.0.1:9/authorize"));
        assert_eq!(fallback.token_endpoint, "http://127.0.0.1:9/token");
        assert_eq!(fallback.registration_endpoint.as_deref(), Some("http://127.0.0.1:9/register"));
        assert!(fallback.supports_grant("authorization_code") && !fallback.supports_grant("client_credentials"));
        assert!(fallback.supports_auth_method("client_secret_basic") && !fallback.supports_auth_method("none"));
    }
}
