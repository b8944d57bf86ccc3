//! How agentloop starts every HTTP client it builds (the model clients, MCP over HTTP,
//! WebFetch): rustls with the ring provider, and no CA roots asked for when the client only
//! talks plain `http://` (a machine without CA certificates can still reach a local server).

/// A client builder for `http://` only (`plain_http`) or for `https://` too; the caller adds
/// its headers, redirects and timeouts.
pub(crate) fn builder(plain_http: bool) -> reqwest::ClientBuilder {
    // Several clients may race to install it; any installed provider will do.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder();
    if plain_http { builder.tls_certs_only(std::iter::empty()) } else { builder }
}
