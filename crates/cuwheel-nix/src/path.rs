//! Store paths: how Nix names every object in `/nix/store` from a hash, a
//! type and a name — fixed-output (flat and recursive), `source`, `text`
//! (`.drv` files) and derivation-output paths — and how to parse one back.
//!
//! Rule (`src/libstore/store-api.cc`, `makeStorePath`): hash the string
//! `<type>:sha256:<hex digest>:/nix/store:<name>`, fold the sha256 to 20
//! bytes by XOR, and print them in Nix base32.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::base32;
use super::hash::{Hash, HashAlgo};

pub const STORE_DIR: &str = "/nix/store";
const HASH_CHARS: usize = 32;
const MAX_NAME_LEN: usize = 211;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum StorePathError {
    #[error("'{0}' is not in {STORE_DIR}")]
    NotInStore(String),
    #[error("'{0}' does not start with a 32-character Nix base32 hash and a '-'")]
    BadHashPart(String),
    #[error("the store path name is empty")]
    EmptyName,
    #[error("the store path name '{0}' is longer than {MAX_NAME_LEN} characters")]
    NameTooLong(String),
    #[error("the store path name '{0}' starts with a '.'")]
    LeadingDot(String),
    #[error(
        "the store path name '{name}' has the illegal character {bad:?}: names may hold only \
         letters, digits and + - . _ ? = (rename the file before adding it)"
    )]
    IllegalChar { name: String, bad: char },
}

/// A path directly under `/nix/store`: its hash part and its name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorePath {
    // Kept as printed: Nix orders store paths by their text, so do we.
    hash_part: String,
    name: String,
}

impl StorePath {
    pub fn hash_part(&self) -> &str {
        &self.hash_part
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/nix/store/<hash>-<name>`.
    pub fn to_absolute(&self) -> String {
        format!("{STORE_DIR}/{}-{}", self.hash_part, self.name)
    }

    /// Nix's `makeStorePath`: the path of an object of `path_type` whose
    /// identity is `hash`.
    pub fn make(path_type: &str, hash: &Hash, name: &str) -> Result<StorePath, StorePathError> {
        check_name(name)?;
        let fingerprint = format!(
            "{path_type}:{}:{}:{STORE_DIR}:{name}",
            hash.algo(),
            hash.to_hex()
        );
        let full = Hash::sha256(fingerprint);
        let mut folded = [0u8; 20];
        for (i, b) in full.digest().iter().enumerate() {
            folded[i % 20] ^= b;
        }
        Ok(StorePath {
            hash_part: base32::encode(&folded),
            name: name.to_owned(),
        })
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_absolute())
    }
}

impl fmt::Debug for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl FromStr for StorePath {
    type Err = StorePathError;

    /// Parses `/nix/store/<hash>-<name>` (nothing after the name).
    fn from_str(text: &str) -> Result<StorePath, StorePathError> {
        let base = text
            .strip_prefix(STORE_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| StorePathError::NotInStore(text.to_owned()))?;
        let (hash_part, name) = match (base.get(..HASH_CHARS), base.get(HASH_CHARS..)) {
            (Some(h), Some(rest)) if rest.starts_with('-') => (h, &rest[1..]),
            _ => return Err(StorePathError::BadHashPart(base.to_owned())),
        };
        base32::decode(hash_part).map_err(|_| StorePathError::BadHashPart(base.to_owned()))?;
        check_name(name)?;
        Ok(StorePath {
            hash_part: hash_part.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// `text` as a name Nix accepts: each character outside `[A-Za-z0-9+._?=-]`
/// becomes `-`.
pub fn sanitize_name(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "+._?=-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Nix's rule for the name part of a store path (`checkName`).
pub fn check_name(name: &str) -> Result<(), StorePathError> {
    if name.is_empty() {
        return Err(StorePathError::EmptyName);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(StorePathError::NameTooLong(name.to_owned()));
    }
    if name.starts_with('.') {
        return Err(StorePathError::LeadingDot(name.to_owned()));
    }
    match name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "+-._?=".contains(c)))
    {
        Some(bad) => Err(StorePathError::IllegalChar {
            name: name.to_owned(),
            bad,
        }),
        None => Ok(()),
    }
}

/// How a fixed-output object is hashed: its bytes (`flat`, one file) or the
/// NAR of its tree (`recursive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileIngestion {
    Flat,
    Recursive,
}

impl FileIngestion {
    /// The prefix of the algorithm in `.drv` outputs and fixed-output fingerprints.
    pub fn algo_prefix(self) -> &'static str {
        match self {
            FileIngestion::Flat => "",
            FileIngestion::Recursive => "r:",
        }
    }
}

/// `type` followed by `:<path>` for each reference, in sorted order.
fn type_with_references(kind: &str, references: &BTreeSet<StorePath>) -> String {
    references
        .iter()
        .fold(kind.to_owned(), |acc, r| format!("{acc}:{r}"))
}

/// The path `nix-store --add-fixed [--recursive] <algo>` gives, and the path
/// of a fixed-output derivation's output. `hash` is of the file (flat) or of
/// its NAR (recursive).
pub fn fixed_output_path(
    ingestion: FileIngestion,
    hash: &Hash,
    name: &str,
) -> Result<StorePath, StorePathError> {
    if ingestion == FileIngestion::Recursive && hash.algo() == HashAlgo::Sha256 {
        return source_path(hash, name, &BTreeSet::new());
    }
    let inner = Hash::sha256(format!(
        "fixed:out:{}{}:{}:",
        ingestion.algo_prefix(),
        hash.algo(),
        hash.to_hex()
    ));
    StorePath::make("output:out", &inner, name)
}

/// A tree added by `builtins.path`, a path literal or `nix-store --add`: its
/// NAR sha256 and the store paths it refers to.
pub fn source_path(
    nar_hash: &Hash,
    name: &str,
    references: &BTreeSet<StorePath>,
) -> Result<StorePath, StorePathError> {
    StorePath::make(&type_with_references("source", references), nar_hash, name)
}

/// A text object such as a `.drv` file or `builtins.toFile`'s output.
pub fn text_path(
    contents: &[u8],
    name: &str,
    references: &BTreeSet<StorePath>,
) -> Result<StorePath, StorePathError> {
    StorePath::make(
        &type_with_references("text", references),
        &Hash::sha256(contents),
        name,
    )
}

/// The name of a derivation's output path: `name` for `out`, else `name-output`.
pub fn output_path_name(drv_name: &str, output: &str) -> String {
    if output == "out" {
        drv_name.to_owned()
    } else {
        format!("{drv_name}-{output}")
    }
}

/// The output path of an input-addressed derivation, from its hash modulo
/// fixed-output inputs.
pub fn derivation_output_path(
    drv_hash_modulo: &Hash,
    drv_name: &str,
    output: &str,
) -> Result<StorePath, StorePathError> {
    StorePath::make(
        &format!("output:{output}"),
        drv_hash_modulo,
        &output_path_name(drv_name, output),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn manual_example_of_add_fixed() {
        // Nix manual, `nix-store --add-fixed`: hello-2.10.tar.gz with this sha256.
        let hash = Hash::parse(
            "sha256:31e066137a962676e89f69d1b65382de95a7ef7d914b8cb956f41ea72e0f516b",
            None,
        )
        .unwrap();
        let path = fixed_output_path(FileIngestion::Flat, &hash, "hello-2.10.tar.gz").unwrap();
        assert_eq!(path.hash_part(), "3x7dwzq014bblazs7kq20p9hyzz0qh8g");
    }

    #[test]
    fn known_text_and_output_paths() {
        // `nix-instantiate` of derivation { name = "t"; system = "x86_64-linux";
        // builder = "/bin/sh"; args = ["-c" "echo hi"]; a = "x\"y\\z\n\tü"; } with Nix 2.8.
        let drv = "Derive([(\"out\",\"/nix/store/x8hgzpnhkv8x410b9zvfirr9arwvvpwx-t\",\"\",\"\")],[],[],\"x86_64-linux\",\"/bin/sh\",[\"-c\",\"echo hi\"],[(\"a\",\"x\\\"y\\\\z\\n\\tü\"),(\"builder\",\"/bin/sh\"),(\"name\",\"t\"),(\"out\",\"/nix/store/x8hgzpnhkv8x410b9zvfirr9arwvvpwx-t\"),(\"system\",\"x86_64-linux\")])";
        let path = text_path(drv.as_bytes(), "t.drv", &BTreeSet::new()).unwrap();
        assert_eq!(
            path.to_string(),
            "/nix/store/vm4x362lgfqkgnq4dlf5jv991npcqrpb-t.drv"
        );
    }

    #[test]
    fn parse_and_print() {
        let text = "/nix/store/vm4x362lgfqkgnq4dlf5jv991npcqrpb-t.drv";
        let path: StorePath = text.parse().unwrap();
        assert_eq!(path.name(), "t.drv");
        assert_eq!(path.to_string(), text);
        assert!(matches!(
            "/nix/store/short-x".parse::<StorePath>(),
            Err(StorePathError::BadHashPart(_))
        ));
        assert!(matches!(
            "/usr/x".parse::<StorePath>(),
            Err(StorePathError::NotInStore(_))
        ));
        let e = "/nix/store/vm4x362lgfqkgnq4dlf5jv991npcqrpb-zlib%3a1.deb".parse::<StorePath>();
        assert_eq!(
            e,
            Err(StorePathError::IllegalChar {
                name: "zlib%3a1.deb".into(),
                bad: '%'
            })
        );
        assert!(e.unwrap_err().to_string().contains("rename"));
    }

    #[test]
    fn output_names() {
        assert_eq!(output_path_name("hello", "out"), "hello");
        assert_eq!(output_path_name("hello", "dev"), "hello-dev");
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "(/nix/store/)?.{0,80}") {
            let _ = text.parse::<StorePath>();
        }
    }
}
