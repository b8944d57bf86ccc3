//! Where a remote server's sign-in is kept between runs: one JSON file per server URL under
//! `$AGENTLOOP_HOME/mcp-oauth/` (default `~/.agentloop/mcp-oauth/`), named by a hash of the
//! URL. It holds the client agentloop is to the server's authorization server (its id, and a
//! secret when it has one) and the tokens.
//!
//! The directory is created `0700` and each file `0600` (written to a temporary file of the
//! same directory, then renamed over the old one), so only the user can read the tokens. They
//! are never printed: [`Tokens`] and [`ClientRecord`] show only what is not secret in their
//! `Debug`.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The directory of the store, under agentloop's home.
pub const DIR: &str = "mcp-oauth";

/// What is kept for one server.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The server's URL, as configured.
    pub server_url: String,
    /// The resource indicator its sign-in named (from its protected-resource metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The client agentloop is to the server's authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRecord>,
    /// The tokens of the last sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("server_url", &self.server_url)
            .field("resource", &self.resource)
            .field("client", &self.client)
            .field("tokens", &self.tokens)
            .finish()
    }
}

/// A client registration (dynamic, pre-registered or a metadata-document URL).
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientRecord {
    /// The authorization server's issuer it belongs to.
    pub issuer: String,
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint: `none`, `client_secret_basic`,
    /// `client_secret_post` or `private_key_jwt`.
    pub auth_method: String,
    /// The redirect URI it was registered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The PEM file of its private key, for `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
}

impl std::fmt::Debug for ClientRecord {
    /// Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<secret>"))
            .field("auth_method", &self.auth_method)
            .field("redirect_uri", &self.redirect_uri)
            .field("key_file", &self.key_file)
            .finish()
    }
}

/// The tokens of a sign-in.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub struct Tokens {
    /// The bearer token sent to the server.
    pub access_token: String,
    /// The token that gets a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (or, when the server does not say, requested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl std::fmt::Debug for Tokens {
    /// Without the tokens themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"<secret>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<secret>"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// The store's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The store under agentloop's home (`$AGENTLOOP_HOME`, else `~/.agentloop`); `None`
    /// without either.
    pub fn default_location() -> Option<Store> {
        crate::session::paths::home_from(std::env::var_os("AGENTLOOP_HOME"), std::env::var_os("HOME"))
            .map(|home| Store::new(home.join(DIR)))
    }

    /// The file of the server `url`.
    pub fn path_of(&self, url: &str) -> PathBuf {
        let hash = Sha256::digest(url.as_bytes());
        let name: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// What is kept for `url`; nothing when there is no file or it cannot be read (a file of
    /// another URL, or unreadable, counts as nothing).
    pub fn load(&self, url: &str) -> Option<Entry> {
        let text = std::fs::read_to_string(self.path_of(url)).ok()?;
        serde_json::from_str::<Entry>(&text).ok().filter(|entry| entry.server_url == url)
    }

    /// Keep `entry` for its server, readable by the user only.
    ///
    /// # Errors
    /// The directory or the file cannot be written.
    pub fn save(&self, entry: &Entry) -> std::io::Result<()> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        // A directory made earlier by something else keeps only the user's access.
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
        let path = self.path_of(&entry.server_url);
        let json = serde_json::to_vec_pretty(entry).map_err(std::io::Error::other)?;
        let temporary = temporary_beside(&path);
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary)?;
        let written = file.write_all(&json).and_then(|()| file.sync_all());
        drop(file);
        if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, &path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
        Ok(())
    }
}

/// A fresh temporary name in `path`'s directory.
fn temporary_beside(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", super::pkce::random_string(12)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str) -> Entry {
        Entry {
            server_url: url.into(),
            resource: Some(url.into()),
            client: Some(ClientRecord {
                issuer: "http://127.0.0.1:1".into(),
                client_id: "c1".into(),
                client_secret: Some("s3cret".into()),
                auth_method: "client_secret_basic".into(),
                redirect_uri: Some("http://127.0.0.1:2/callback".into()),
                key_file: None,
            }),
            tokens: Some(Tokens {
                access_token: "at-123".into(),
                refresh_token: Some("rt-456".into()),
                expires_at: Some(1_000),
                scope: Some("a b".into()),
            }),
        }
    }

    #[test]
    fn an_entry_is_kept_for_the_user_only_and_read_back_for_its_url() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path().join(DIR));
        let url = "http://127.0.0.1:3/mcp";
        assert_eq!(store.load(url), None);
        store.save(&entry(url)).unwrap();
        assert_eq!(store.load(url), Some(entry(url)));
        assert_eq!(store.load("http://127.0.0.1:3/other"), None);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home.path().join(DIR)), 0o700);
        assert_eq!(mode(&store.path_of(url)), 0o600);
        // Saved again: still one file, still 0600.
        store.save(&entry(url)).unwrap();
        assert_eq!(std::fs::read_dir(home.path().join(DIR)).unwrap().count(), 1);
        assert_eq!(mode(&store.path_of(url)), 0o600);
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let shown = format!("{:?}", entry("http://127.0.0.1:3/mcp"));
        for secret in ["s3cret", "at-123", "rt-456"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("c1") && shown.contains("<secret>"), "{shown}");
    }
}
