//! Proof Key for Code Exchange (RFC 7636) with the `S256` method, and the random values of a
//! sign-in (`state`, a JWT's `jti`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng as _;
use sha2::{Digest as _, Sha256};

/// The characters RFC 7636 allows in a code verifier (its "unreserved" set).
const UNRESERVED: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";

/// One sign-in's PKCE pair: the verifier kept until the token request, the challenge sent in
/// the authorization request.
pub struct Pkce {
    /// The secret the token request proves it holds.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with `code_challenge_method=S256`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair, its verifier 64 random characters.
    pub fn new() -> Pkce {
        let verifier = random_string(64);
        let challenge = challenge_of(&verifier);
        Pkce { verifier, challenge }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Pkce::new()
    }
}

/// The `S256` challenge of `verifier`.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `length` random characters of the unreserved set (a `state`, a `jti`).
pub fn random_string(length: usize) -> String {
    let mut rng = rand::rng();
    (0..length).map(|_| char::from(UNRESERVED[rng.random_range(0..UNRESERVED.len())])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_base64url_sha256_of_the_verifier() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let pkce = Pkce::new();
        assert_eq!(pkce.verifier.len(), 64);
        assert!(pkce.verifier.bytes().all(|b| UNRESERVED.contains(&b)));
        assert_eq!(pkce.challenge, challenge_of(&pkce.verifier));
        assert_ne!(Pkce::new().verifier, pkce.verifier);
    }
}
