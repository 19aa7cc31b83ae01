//! Hashes as Nix names and prints them: an algorithm plus digest bytes, read
//! from any form Nix accepts (`sha256:<base32|hex|base64>`, SRI
//! `sha256-<base64>`, or a bare digest when the algorithm is known) and
//! written in each of them.

use std::fmt;
use std::io::{self, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256, Sha512};
use thiserror::Error;

use super::base32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HashAlgo {
    Md5,
    Sha1,
    Sha256,
    Sha512,
}

impl HashAlgo {
    pub const fn size(self) -> usize {
        match self {
            HashAlgo::Md5 => 16,
            HashAlgo::Sha1 => 20,
            HashAlgo::Sha256 => 32,
            HashAlgo::Sha512 => 64,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            HashAlgo::Md5 => "md5",
            HashAlgo::Sha1 => "sha1",
            HashAlgo::Sha256 => "sha256",
            HashAlgo::Sha512 => "sha512",
        }
    }

    pub fn from_name(name: &str) -> Result<HashAlgo, HashError> {
        [
            HashAlgo::Md5,
            HashAlgo::Sha1,
            HashAlgo::Sha256,
            HashAlgo::Sha512,
        ]
        .into_iter()
        .find(|a| a.name() == name)
        .ok_or_else(|| HashError::UnknownAlgo(name.to_owned()))
    }
}

impl fmt::Display for HashAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum HashError {
    #[error("unknown hash algorithm '{0}' (Nix knows md5, sha1, sha256 and sha512)")]
    UnknownAlgo(String),
    #[error(
        "'{0}' names no hash algorithm: write it as 'sha256:<digest>' or in SRI form 'sha256-<base64>'"
    )]
    MissingAlgo(String),
    #[error(
        "'{text}' is not a {algo} digest: expected {hex} hex, {b32} Nix base32 or {b64} base64 characters, got {got}",
        hex = algo.size() * 2, b32 = base32::encoded_len(algo.size()), b64 = base64_len(algo.size()), got = text.len()
    )]
    BadLength { algo: HashAlgo, text: String },
    #[error("'{text}' is not a valid {algo} digest in {form}")]
    BadDigest {
        algo: HashAlgo,
        form: &'static str,
        text: String,
    },
    #[error("the hash says {found} but {expected} was expected")]
    AlgoMismatch { expected: HashAlgo, found: HashAlgo },
}

const fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// A digest with its algorithm.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hash {
    algo: HashAlgo,
    digest: Vec<u8>,
}

impl Hash {
    /// Wraps digest bytes; `None` when their length does not fit the algorithm.
    pub fn new(algo: HashAlgo, digest: &[u8]) -> Option<Hash> {
        (digest.len() == algo.size()).then(|| Hash {
            algo,
            digest: digest.to_vec(),
        })
    }

    pub fn sha256(data: impl AsRef<[u8]>) -> Hash {
        Hash {
            algo: HashAlgo::Sha256,
            digest: Sha256::digest(data.as_ref()).to_vec(),
        }
    }

    pub fn algo(&self) -> HashAlgo {
        self.algo
    }

    pub fn digest(&self) -> &[u8] {
        &self.digest
    }

    /// Parses `algo:digest`, SRI `algo-base64`, or — when `algo` is given — a
    /// bare digest in hex, Nix base32 or base64 (what `outputHash` accepts).
    pub fn parse(text: &str, algo: Option<HashAlgo>) -> Result<Hash, HashError> {
        let (found, digest, sri) = if let Some((name, rest)) = text.split_once(':') {
            (Some(HashAlgo::from_name(name)?), rest, false)
        } else if let Some((name, rest)) = text.split_once('-') {
            (Some(HashAlgo::from_name(name)?), rest, true)
        } else {
            (None, text, false)
        };
        let algo = match (found, algo) {
            (Some(found), Some(expected)) if found != expected => {
                return Err(HashError::AlgoMismatch { expected, found });
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => return Err(HashError::MissingAlgo(text.to_owned())),
        };
        let bad = |form| HashError::BadDigest {
            algo,
            form,
            text: digest.to_owned(),
        };
        let bytes = if sri {
            BASE64.decode(digest).map_err(|_| bad("base64"))?
        } else if digest.len() == algo.size() * 2 {
            decode_hex(digest).ok_or_else(|| bad("hex"))?
        } else if digest.len() == base32::encoded_len(algo.size()) {
            base32::decode(digest).map_err(|_| bad("Nix base32"))?
        } else if digest.len() == base64_len(algo.size()) {
            BASE64.decode(digest).map_err(|_| bad("base64"))?
        } else {
            return Err(HashError::BadLength {
                algo,
                text: digest.to_owned(),
            });
        };
        Hash::new(algo, &bytes).ok_or_else(|| bad("base64"))
    }

    pub fn to_hex(&self) -> String {
        self.digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn to_base32(&self) -> String {
        base32::encode(&self.digest)
    }

    pub fn to_base64(&self) -> String {
        BASE64.encode(&self.digest)
    }

    /// `sha256-<base64>`, as `nix hash` and flakes print it.
    pub fn to_sri(&self) -> String {
        format!("{}-{}", self.algo, self.to_base64())
    }

    /// `sha256:<base32>`, as `nix-store --query --hash` prints it.
    pub fn to_typed_base32(&self) -> String {
        format!("{}:{}", self.algo, self.to_base32())
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algo, self.to_hex())
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_typed_base32())
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.is_ascii() || text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// A writer that hashes what passes through it and counts the bytes, so a
/// NAR or a file can be hashed as it streams.
pub struct HashingWriter {
    state: HashState,
    written: u64,
}

enum HashState {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl HashingWriter {
    /// Only the SHA-2 algorithms are computed; md5 and sha1 exist here only
    /// to be read from `outputHash`.
    pub fn new(algo: HashAlgo) -> Option<HashingWriter> {
        let state = match algo {
            HashAlgo::Sha256 => HashState::Sha256(Sha256::new()),
            HashAlgo::Sha512 => HashState::Sha512(Sha512::new()),
            HashAlgo::Md5 | HashAlgo::Sha1 => return None,
        };
        Some(HashingWriter { state, written: 0 })
    }

    pub fn sha256() -> HashingWriter {
        HashingWriter {
            state: HashState::Sha256(Sha256::new()),
            written: 0,
        }
    }

    /// The hash and the number of bytes hashed.
    pub fn finish(self) -> (Hash, u64) {
        let (algo, digest) = match self.state {
            HashState::Sha256(h) => (HashAlgo::Sha256, h.finalize().to_vec()),
            HashState::Sha512(h) => (HashAlgo::Sha512, h.finalize().to_vec()),
        };
        (Hash { algo, digest }, self.written)
    }
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.state {
            HashState::Sha256(h) => h.update(buf),
            HashState::Sha512(h) => h.update(buf),
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EMPTY_HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const EMPTY_B32: &str = "0mdqa9w1p6cmli6976v4wi0sw9r4p5prkj7lzfd1877wk11c9c73";
    const EMPTY_B64: &str = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

    #[test]
    fn every_form_of_one_hash() {
        let h = Hash::sha256(b"");
        assert_eq!(h.to_hex(), EMPTY_HEX);
        assert_eq!(h.to_base32(), EMPTY_B32);
        assert_eq!(h.to_sri(), format!("sha256-{EMPTY_B64}"));
        assert_eq!(h.to_string(), format!("sha256:{EMPTY_B32}"));
        for text in [
            format!("sha256:{EMPTY_HEX}"),
            format!("sha256:{EMPTY_B32}"),
            format!("sha256:{EMPTY_B64}"),
            format!("sha256-{EMPTY_B64}"),
        ] {
            assert_eq!(Hash::parse(&text, None).unwrap(), h, "{text}");
        }
        for bare in [EMPTY_HEX, EMPTY_B32, EMPTY_B64] {
            assert_eq!(
                Hash::parse(bare, Some(HashAlgo::Sha256)).unwrap(),
                h,
                "{bare}"
            );
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            Hash::parse(EMPTY_HEX, None),
            Err(HashError::MissingAlgo(EMPTY_HEX.into()))
        );
        assert!(
            matches!(Hash::parse("sha3:00", None), Err(HashError::UnknownAlgo(a)) if a == "sha3")
        );
        let err = Hash::parse("sha256:abc", None).unwrap_err().to_string();
        assert!(
            err.contains("expected 64 hex, 52 Nix base32 or 44 base64"),
            "{err}"
        );
        assert_eq!(
            Hash::parse(&format!("sha512:{EMPTY_HEX}"), Some(HashAlgo::Sha256)),
            Err(HashError::AlgoMismatch {
                expected: HashAlgo::Sha256,
                found: HashAlgo::Sha512
            })
        );
    }

    #[test]
    fn streaming_equals_one_shot() {
        let mut w = HashingWriter::sha256();
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        assert_eq!(w.finish(), (Hash::sha256(b"hello world"), 11));
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in ".{0,100}") {
            let _ = Hash::parse(&text, None);
            let _ = Hash::parse(&text, Some(HashAlgo::Sha256));
        }

        #[test]
        fn forms_round_trip(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let h = Hash::sha256(&data);
            for text in [h.to_string(), h.to_sri(), format!("sha256:{}", h.to_hex())] {
                prop_assert_eq!(Hash::parse(&text, None).unwrap(), h.clone());
            }
        }
    }
}
