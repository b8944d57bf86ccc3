//! Version 4 UUIDs: session ids and the `uuid` of each message line.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A random (version 4, RFC 9562 variant) UUID, written lowercase `8-4-4-4-12`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid([u8; 16]);

/// Why a string is not a version 4 UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a version 4 UUID: {why}")]
pub struct UuidError {
    /// The rejected text.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Uuid {
    /// A fresh random UUID (from `rand`'s thread-local generator).
    pub fn new_v4() -> Self {
        Self::from_random_bytes(rand::random())
    }

    /// The UUID made of `bytes` with the version (4) and variant (`10`) bits set.
    pub fn from_random_bytes(mut bytes: [u8; 16]) -> Self {
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Uuid(bytes)
    }

    /// The 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parse `8-4-4-4-12` hex (either case) and check the version 4 and variant bits.
    pub fn parse(text: &str) -> Result<Self, UuidError> {
        let fail = |why| UuidError { text: text.to_owned(), why };
        let raw = text.as_bytes();
        if raw.len() != 36 {
            return Err(fail("not 36 characters"));
        }
        let mut bytes = [0u8; 16];
        let mut nibbles = 0;
        for (i, &c) in raw.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return Err(fail("hyphens must sit at 8, 13, 18 and 23"));
                }
                continue;
            }
            let v = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(fail("not a hex digit")),
            };
            bytes[nibbles / 2] |= if nibbles % 2 == 0 { v << 4 } else { v };
            nibbles += 1;
        }
        if bytes[6] >> 4 != 4 {
            return Err(fail("version is not 4"));
        }
        if bytes[8] >> 6 != 0b10 {
            return Err(fail("variant is not RFC 9562"));
        }
        Ok(Uuid(bytes))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 36];
        let mut pos = 0;
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out[pos] = b'-';
                pos += 1;
            }
            out[pos] = HEX[usize::from(b >> 4)];
            out[pos + 1] = HEX[usize::from(b & 0x0f)];
            pos += 2;
        }
        f.write_str(std::str::from_utf8(&out).expect("hex is ASCII"))
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

impl FromStr for Uuid {
    type Err = UuidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse(s)
    }
}

impl Serialize for Uuid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Uuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Uuid::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_version_and_variant_bits() {
        let id = Uuid::from_random_bytes([0xff; 16]);
        assert_eq!(id.to_string(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let id = Uuid::from_random_bytes([0; 16]);
        assert_eq!(id.to_string(), "00000000-0000-4000-8000-000000000000");
    }

    #[test]
    fn parses_what_it_prints_and_rejects_the_rest() {
        for _ in 0..100 {
            let id = Uuid::new_v4();
            let text = id.to_string();
            assert_eq!(text.len(), 36);
            assert_eq!(text, text.to_lowercase());
            assert_eq!(Uuid::parse(&text), Ok(id));
        }
        let fixture = "add9fc4b-0602-4806-8b35-58da17ae022c";
        assert_eq!(Uuid::parse(fixture).unwrap().to_string(), fixture);
        assert_eq!(Uuid::parse("ADD9FC4B-0602-4806-8B35-58DA17AE022C").unwrap().to_string(), fixture);
        let why = |s: &str| Uuid::parse(s).unwrap_err().why;
        assert_eq!(why("add9fc4b-0602-1806-8b35-58da17ae022c"), "version is not 4");
        assert_eq!(why("add9fc4b-0602-4806-cb35-58da17ae022c"), "variant is not RFC 9562");
        assert_eq!(why("add9fc4b06024806-8b35-58da17ae022c--"), "hyphens must sit at 8, 13, 18 and 23");
        assert_eq!(why("add9fc4b-0602-4806-8b35-58da17ae022g"), "not a hex digit");
        assert_eq!(why("add9fc4b"), "not 36 characters");
    }

    #[test]
    fn serde_is_the_string_form() {
        let id = Uuid::parse("3d650eb0-ad8a-4c86-9e42-9b8e784f9506").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"3d650eb0-ad8a-4c86-9e42-9b8e784f9506\"");
        assert_eq!(serde_json::from_str::<Uuid>("\"3d650eb0-ad8a-4c86-9e42-9b8e784f9506\"").unwrap(), id);
        assert!(serde_json::from_str::<Uuid>("\"nope\"").is_err());
    }
}
