//! The loopback redirect of a browser sign-in (RFC 8252 §7.3): a one-shot HTTP listener on
//! `127.0.0.1` that the authorization server sends the browser back to, at
//! `http://127.0.0.1:PORT/callback?code=…&state=…`. The port is the configured
//! `callbackPort`, else one the system picks.

use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::OAuthError;

/// The longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The page the browser shows after a sign-in.
const DONE_PAGE: &str =
    "<!doctype html><title>agentloop</title><p>Signed in. You can close this tab and go back to agentloop.</p>";

/// A listener waiting for the authorization server's redirect.
pub struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Listen on `127.0.0.1:port` (a free port when `None` or 0).
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn bind(port: Option<u16>) -> Result<Callback, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| OAuthError::Callback(format!("cannot listen on 127.0.0.1:{}: {e}", port.unwrap_or(0))))?;
        let port = listener.local_addr().map_err(|e| OAuthError::Callback(e.to_string()))?.port();
        Ok(Callback { listener, port })
    }

    /// The redirect URI to register and send: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// The authorization code of the first redirect to `/callback` carrying `state`; other
    /// paths get a 404 and are waited past.
    ///
    /// # Errors
    /// The redirect carries an OAuth `error`, or a `state` that is not this sign-in's.
    pub async fn wait(self, state: &str) -> Result<String, OAuthError> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| OAuthError::Callback(format!("cannot accept the browser: {e}")))?;
            let Ok(Some(target)) = tokio::time::timeout(READ_TIMEOUT, request_target(&mut stream)).await else {
                continue;
            };
            let Ok(url) = Url::parse(&format!("http://127.0.0.1{target}")) else {
                let _ = respond(&mut stream, "400 Bad Request", "Bad request.").await;
                continue;
            };
            if url.path() != "/callback" {
                let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            }
            let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
            if let Some(error) = param("error") {
                let _ = respond(&mut stream, "200 OK", "The sign-in was refused. You can close this tab.").await;
                return Err(OAuthError::Denied { error, description: param("error_description") });
            }
            if param("state").as_deref() != Some(state) {
                let _ = respond(&mut stream, "400 Bad Request", "This sign-in is not the one agentloop started.").await;
                return Err(OAuthError::Callback("the redirect's state is not this sign-in's".into()));
            }
            let Some(code) = param("code") else {
                let _ = respond(&mut stream, "400 Bad Request", "The redirect has no code.").await;
                return Err(OAuthError::Callback("the redirect has no authorization code".into()));
            };
            let _ = respond(&mut stream, "200 OK", DONE_PAGE).await;
            return Ok(code);
        }
    }
}

/// The target of a `GET TARGET HTTP/1.x` request read from `stream`.
async fn request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?;
    let mut words = line.split(' ');
    match (words.next(), words.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_owned()),
        _ => None,
    }
}

/// Answer with `status` and the HTML `body`, closing the connection.
async fn respond(stream: &mut tokio::net::TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let page = if body.starts_with('<') {
        body.to_owned()
    } else {
        format!("<!doctype html><title>agentloop</title><p>{body}</p>")
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer.lines().next().unwrap().to_owned()
    }

    #[tokio::test]
    async fn the_code_of_the_redirect_with_our_state_is_taken() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        assert_eq!(callback.redirect_uri(), format!("http://127.0.0.1:{port}/callback"));
        let waiting = tokio::spawn(callback.wait("st8"));
        assert_eq!(get(port, "/favicon.ico").await, "HTTP/1.1 404 Not Found");
        assert_eq!(get(port, "/callback?code=c%2F1&state=st8").await, "HTTP/1.1 200 OK");
        assert_eq!(waiting.await.unwrap().unwrap(), "c/1");
    }

    #[tokio::test]
    async fn a_refusal_or_another_state_fails_the_sign_in() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.wait("st8"));
        get(port, "/callback?error=access_denied&error_description=no").await;
        assert_eq!(waiting.await.unwrap().unwrap_err().to_string(), "the sign-in was refused: access_denied (no)");
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.wait("st8"));
        assert_eq!(get(port, "/callback?code=x&state=other").await, "HTTP/1.1 400 Bad Request");
        assert_eq!(
            waiting.await.unwrap().unwrap_err().to_string(),
            "the sign-in's redirect: the redirect's state is not this sign-in's"
        );
    }
}
