//! Binary-cache signing keys in Nix's text form, `NAME:BASE64`: a public key
//! is 32 bytes (Ed25519), a secret key 64 (the seed, then the public key, as
//! libsodium lays it out, which is how Nix stores it).
//!
//! In: a key's text. Out: a [`PublicKey`] (of a public key, or the public
//! half of a secret one), or a [`KeyError`] quoting the text. Pure: reading
//! key files and generating a pair with Nix are the CLI's
//! (`cuwheel::cache::key`).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use thiserror::Error;

const PUBLIC_LEN: usize = 32;
const SECRET_LEN: usize = 64;

/// A public key Nix checks signatures with (`trusted-public-keys`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub name: String,
    key: [u8; PUBLIC_LEN],
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, STANDARD.encode(self.key))
    }
}

/// A name Nix could not write before a key's colon.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "'{0}' cannot name a key: use a non-empty name without ':', '/' or spaces, such as \
     'my-cache-1'"
)]
pub struct BadKeyName(pub String);

/// Text that is not a key of the kind asked for (`what`: public, secret).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("'{text}' is not a Nix {what} key: expected NAME:BASE64")]
    NoName { text: String, what: &'static str },
    #[error("'{text}' is not a Nix {what} key (NAME:BASE64)")]
    BadName {
        text: String,
        what: &'static str,
        #[source]
        source: BadKeyName,
    },
    #[error("'{text}' is not a Nix {what} key: after NAME: expected {len} bytes in base64")]
    BadKey {
        text: String,
        what: &'static str,
        len: usize,
    },
}

/// Checks a key name as Nix writes it before the colon.
pub fn check_name(name: &str) -> Result<(), BadKeyName> {
    if name.is_empty() || name.contains(|c: char| c == ':' || c.is_whitespace() || c == '/') {
        return Err(BadKeyName(name.to_owned()));
    }
    Ok(())
}

/// `NAME:BASE64` (surrounding whitespace ignored) with `len` bytes behind
/// the colon.
fn parse_key(text: &str, len: usize, what: &'static str) -> Result<(String, Vec<u8>), KeyError> {
    let text = text.trim();
    let Some((name, data)) = text.split_once(':') else {
        return Err(KeyError::NoName {
            text: text.to_owned(),
            what,
        });
    };
    check_name(name).map_err(|source| KeyError::BadName {
        text: text.to_owned(),
        what,
        source,
    })?;
    let bytes = STANDARD
        .decode(data)
        .ok()
        .filter(|b| b.len() == len)
        .ok_or_else(|| KeyError::BadKey {
            text: text.to_owned(),
            what,
            len,
        })?;
    Ok((name.to_owned(), bytes))
}

impl PublicKey {
    /// A public key's text.
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let (name, bytes) = parse_key(text, PUBLIC_LEN, "public")?;
        Ok(PublicKey::from_bytes(name, &bytes))
    }

    /// The public half of a secret key's text (what
    /// `nix-store --generate-binary-cache-key` writes first).
    pub fn of_secret(text: &str) -> Result<PublicKey, KeyError> {
        let (name, bytes) = parse_key(text, SECRET_LEN, "secret")?;
        Ok(PublicKey::from_bytes(name, &bytes[PUBLIC_LEN..]))
    }

    fn from_bytes(name: String, bytes: &[u8]) -> PublicKey {
        let mut key = [0; PUBLIC_LEN];
        key.copy_from_slice(bytes);
        PublicKey { name, key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_and_derives_the_public_half() {
        let public = format!("demo-1:{}", STANDARD.encode([7u8; 32]));
        let key = PublicKey::parse(&format!("  {public}\n")).unwrap();
        assert_eq!(key.name, "demo-1");
        assert_eq!(key.to_string(), public);

        let mut secret = vec![1u8; 32];
        secret.extend([7u8; 32]);
        let secret = format!("demo-1:{}", STANDARD.encode(&secret));
        assert_eq!(PublicKey::of_secret(&secret).unwrap(), key);
        // A public key is not a secret one, nor the other way round.
        assert!(matches!(
            PublicKey::of_secret(&public),
            Err(KeyError::BadKey { len: 64, .. })
        ));
        assert!(matches!(
            PublicKey::parse(&secret),
            Err(KeyError::BadKey { len: 32, .. })
        ));
    }

    #[test]
    fn bad_keys_quote_the_text_and_say_what_a_key_looks_like() {
        for bad in [
            "",
            "demo",
            ":AAAA",
            "demo:not-base64!",
            "demo:AAAA",
            "a b:AAAA",
        ] {
            let err = PublicKey::parse(bad).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("NAME"), "{bad}: {text}");
            assert!(text.contains(&format!("'{}'", bad.trim())), "{bad}: {text}");
        }
        assert_eq!(
            PublicKey::parse(":AAAA"),
            Err(KeyError::BadName {
                text: ":AAAA".into(),
                what: "public",
                source: BadKeyName(String::new()),
            })
        );
        for bad in ["", "a:b", "a/b", "a b", "a\tb"] {
            assert_eq!(check_name(bad), Err(BadKeyName(bad.into())));
        }
        assert_eq!(check_name("my-cache-1"), Ok(()));
    }
}
