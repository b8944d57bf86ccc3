//! Signed JWTs (RFC 7519, compact JWS) for `private_key_jwt` client authentication (RFC 7523
//! §2.2, the client assertion). The key is a PKCS#8 PEM file — an EC P-256 key signs with
//! `ES256`, P-384 with `ES384`, RSA with `RS256` — signed with ring, the crypto library the
//! TLS stack already uses.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::{Value, json};

/// Why a key cannot sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No PKCS#8 block in the PEM text.
    #[error("no `BEGIN PRIVATE KEY` block (a PKCS#8 PEM key is needed)")]
    NoBlock,
    /// The block does not end.
    #[error("the `PRIVATE KEY` block has no end")]
    NoEnd,
    /// The block is not base64.
    #[error("the `PRIVATE KEY` block is not base64")]
    NotBase64,
    /// A key of another kind.
    #[error("the private key is neither an EC P-256 or P-384 key nor an RSA key")]
    Unsupported,
    /// ring could not sign.
    #[error("cannot sign the assertion")]
    Sign,
}

/// A private key that signs assertions.
pub struct SigningKey {
    key: Key,
}

enum Key {
    Ec { pair: EcdsaKeyPair, alg: &'static str },
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    /// The algorithm only: never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("alg", &self.alg()).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The key of a PEM `PRIVATE KEY` block (PKCS#8).
    ///
    /// # Errors
    /// No such block, or a key that is neither EC P-256/P-384 nor RSA.
    pub fn from_pem(pem: &str) -> Result<SigningKey, KeyError> {
        let der = pkcs8_der(pem)?;
        let rng = SystemRandom::new();
        for (alg, algorithm) in [
            ("ES256", &signature::ECDSA_P256_SHA256_FIXED_SIGNING),
            ("ES384", &signature::ECDSA_P384_SHA384_FIXED_SIGNING),
        ] {
            if let Ok(pair) = EcdsaKeyPair::from_pkcs8(algorithm, &der, &rng) {
                return Ok(SigningKey { key: Key::Ec { pair, alg } });
            }
        }
        match RsaKeyPair::from_pkcs8(&der) {
            Ok(pair) => Ok(SigningKey { key: Key::Rsa(pair) }),
            Err(_) => Err(KeyError::Unsupported),
        }
    }

    /// The JWS algorithm the key signs with.
    pub fn alg(&self) -> &'static str {
        match &self.key {
            Key::Ec { alg, .. } => alg,
            Key::Rsa(_) => "RS256",
        }
    }

    /// `claims` as a compact JWS: `header.payload.signature`.
    ///
    /// # Errors
    /// The signature could not be made.
    pub fn sign(&self, claims: &Value) -> Result<String, KeyError> {
        let header = json!({"alg": self.alg(), "typ": "JWT"});
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = SystemRandom::new();
        let signature = match &self.key {
            Key::Ec { pair, .. } => pair.sign(&rng, input.as_bytes()).map_err(|_| KeyError::Sign)?.as_ref().to_vec(),
            Key::Rsa(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut out)
                    .map_err(|_| KeyError::Sign)?;
                out
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// The DER bytes of the `PRIVATE KEY` block of `pem`.
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, KeyError> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let start = pem.find(BEGIN).ok_or(KeyError::NoBlock)? + BEGIN.len();
    let end = start + pem[start..].find(END).ok_or(KeyError::NoEnd)?;
    let body: String = pem[start..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(body).map_err(|_| KeyError::NotBase64)
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair as _, UnparsedPublicKey};

    use super::*;

    /// A fresh P-256 key as a PKCS#8 PEM block, and its public key.
    fn p256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
        let body = STANDARD.encode(der.as_ref());
        let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        (
            format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", lines.join("\n")),
            pair.public_key().as_ref().to_vec(),
        )
    }

    #[test]
    fn an_ec_key_signs_es256_that_its_public_key_verifies() {
        let (pem, public) = p256_pem();
        let key = SigningKey::from_pem(&pem).unwrap();
        assert_eq!(key.alg(), "ES256");
        assert_eq!(format!("{key:?}"), "SigningKey { alg: \"ES256\", .. }");
        let jwt = key.sign(&json!({"iss": "client", "aud": "http://127.0.0.1:9"})).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT"}));
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims, json!({"iss": "client", "aud": "http://127.0.0.1:9"}));
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public).verify(signed.as_bytes(), &signature).unwrap();
    }

    #[test]
    fn what_is_not_a_pkcs8_key_is_refused() {
        assert_eq!(
            SigningKey::from_pem("nothing").unwrap_err().to_string(),
            "no `BEGIN PRIVATE KEY` block (a PKCS#8 PEM key is needed)"
        );
        assert_eq!(
            SigningKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
                .unwrap_err()
                .to_string(),
            "the private key is neither an EC P-256 or P-384 key nor an RSA key"
        );
    }
}
