//! Redirects of model requests: followed within the configured server's origin (scheme,
//! host and port), refused to any other, so the credential headers never leave it.
//!
//! reqwest's own policy follows a redirect anywhere and strips only `authorization` (and
//! cookies) when the origin changes: the `x-api-key` header, a custom one, would go along to
//! whatever server a redirect names. With [`policy`] a redirect to another origin ends the
//! request with [`RedirectRefused::CrossOrigin`] before it is sent, and the run ends as
//! `model_error` ([`crate::model::ModelError::Redirect`], never retried).

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

/// Redirect hops followed at most, as reqwest's default policy.
pub const MAX_REDIRECTS: usize = 10;

/// Why a redirect of a model request was not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectRefused {
    /// The redirect leads to another origin.
    #[error(
        "the model server at {from} redirected to {to}; agentloop does not follow redirects to another origin, \
so the credentials stay with the configured server"
    )]
    CrossOrigin {
        /// The configured server's origin, e.g. `http://127.0.0.1:8080`.
        from: String,
        /// The origin the redirect named.
        to: String,
    },
    /// More than `MAX_REDIRECTS` redirects in a row, all within the origin.
    #[error("the model server at {origin} redirected more than {MAX_REDIRECTS} times")]
    TooMany {
        /// The configured server's origin.
        origin: String,
    },
}

/// The redirect policy of the model client: [`judge`] on every redirect.
pub fn policy() -> Policy {
    Policy::custom(|attempt: Attempt<'_>| match judge(attempt.previous(), attempt.url()) {
        Ok(()) => attempt.follow(),
        Err(refused) => attempt.error(refused),
    })
}

/// Whether a redirect to `next` may be followed, after the requests to `previous` (the first
/// is the request's own URL): only within the first one's origin, at most
/// [`MAX_REDIRECTS`] times.
///
/// # Errors
/// Why not.
pub fn judge(previous: &[Url], next: &Url) -> Result<(), RedirectRefused> {
    let Some(first) = previous.first() else { return Ok(()) };
    let from = first.origin().ascii_serialization();
    if next.origin() != first.origin() {
        return Err(RedirectRefused::CrossOrigin { from, to: next.origin().ascii_serialization() });
    }
    if previous.len() > MAX_REDIRECTS {
        return Err(RedirectRefused::TooMany { origin: from });
    }
    Ok(())
}

/// The refusal among the causes of a failed request, if it failed for one.
pub fn refusal(error: &reqwest::Error) -> Option<RedirectRefused> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return Some(refused.clone());
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_the_first_urls_origin_is_followed() {
        let first = [url("http://127.0.0.1:8080/v1/messages")];
        assert_eq!(judge(&first, &url("http://127.0.0.1:8080/elsewhere/v1/messages")), Ok(()));
        for (to, origin) in [
            ("http://127.0.0.2:8080/v1/messages", "http://127.0.0.2:8080"),
            ("http://127.0.0.1:8081/v1/messages", "http://127.0.0.1:8081"),
            ("https://127.0.0.1:8080/v1/messages", "https://127.0.0.1:8080"),
            ("http://localhost:8080/v1/messages", "http://localhost:8080"),
        ] {
            assert_eq!(
                judge(&first, &url(to)),
                Err(RedirectRefused::CrossOrigin { from: "http://127.0.0.1:8080".into(), to: origin.into() })
            );
        }
        // The default port is the same origin written either way.
        assert_eq!(
            judge(&[url("https://api.anthropic.com/v1/messages")], &url("https://api.anthropic.com:443/x")),
            Ok(())
        );
        // Every hop is compared with the first URL.
        let chain = [url("http://127.0.0.1:8080/a"), url("http://127.0.0.1:8080/b")];
        assert!(judge(&chain, &url("http://127.0.0.3:8080/c")).is_err());
    }

    #[test]
    fn too_many_redirects_within_the_origin_are_refused() {
        let hops: Vec<Url> = (0..=MAX_REDIRECTS).map(|i| url(&format!("http://127.0.0.1:8080/{i}"))).collect();
        assert_eq!(judge(&hops[..MAX_REDIRECTS], &url("http://127.0.0.1:8080/next")), Ok(()));
        let refused = judge(&hops, &url("http://127.0.0.1:8080/next")).unwrap_err();
        assert_eq!(refused, RedirectRefused::TooMany { origin: "http://127.0.0.1:8080".into() });
        assert_eq!(refused.to_string(), "the model server at http://127.0.0.1:8080 redirected more than 10 times");
    }

    #[test]
    fn the_refusal_says_where_the_credentials_stay() {
        let refused =
            RedirectRefused::CrossOrigin { from: "http://127.0.0.1:1".into(), to: "http://127.0.0.2:2".into() };
        assert_eq!(
            refused.to_string(),
            "the model server at http://127.0.0.1:1 redirected to http://127.0.0.2:2; agentloop does not follow \
redirects to another origin, so the credentials stay with the configured server"
        );
    }
}
