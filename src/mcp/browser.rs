//! Opening a URL in the user's browser: an OAuth sign-in ([`super::oauth`]) or a URL an
//! elicitation asks the user to visit.
//!
//! `$BROWSER` names the command, as many Unix programs honour it: split at spaces, with the
//! URL as its last argument (or in place of a `%s`). Without it, `xdg-open` (Linux) or
//! `open` (macOS). The command runs in the background, its output discarded; agentloop does
//! not wait for it.

use std::process::{Command, Stdio};

/// The environment variable naming the browser command.
pub const BROWSER_VAR: &str = "BROWSER";

/// The program and arguments that open `url` when `$BROWSER` is `browser`.
pub fn command_line(browser: Option<&str>, url: &str) -> Vec<String> {
    let Some(browser) = browser.map(str::trim).filter(|b| !b.is_empty()) else {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        return vec![opener.to_owned(), url.to_owned()];
    };
    let mut words: Vec<String> = browser.split_whitespace().map(str::to_owned).collect();
    if words.iter().any(|w| w.contains("%s")) {
        for word in &mut words {
            *word = word.replace("%s", url);
        }
    } else {
        words.push(url.to_owned());
    }
    words
}

/// The browser's command did not start.
#[derive(Debug, thiserror::Error)]
#[error("`{program}`: {error}")]
pub struct BrowserError {
    /// The program of the command line.
    pub program: String,
    /// Why it did not start.
    pub error: std::io::Error,
}

/// Start the browser on `url`.
///
/// # Errors
/// [`BrowserError`]: the command cannot be started (its name in the message).
pub fn open(url: &str) -> Result<(), BrowserError> {
    let browser = std::env::var(BROWSER_VAR).ok();
    let words = command_line(browser.as_deref(), url);
    let (program, args) = words.split_first().expect("a command line has its program");
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| BrowserError { program: program.clone(), error })?;
    // Reap it whenever it ends, without waiting here.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_goes_last_or_in_place_of_percent_s() {
        let url = "http://127.0.0.1:9/a?b=c";
        assert_eq!(command_line(Some("firefox --new-tab"), url), ["firefox", "--new-tab", url]);
        assert_eq!(command_line(Some("w3m %s -dump"), url), ["w3m", url, "-dump"]);
        let default = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        assert_eq!(command_line(None, url), [default, url]);
        assert_eq!(command_line(Some("  "), url), [default, url]);
    }
}
