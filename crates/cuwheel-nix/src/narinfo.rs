//! The `.narinfo` files of a binary cache, read and written without Nix.
//! In: the text of `<hash>.narinfo` (`Key: value` lines, a format no Nix
//! release has changed). Out: a [`NarInfo`] (what the cache knows about
//! one store path: its NAR's hash and size, references, deriver,
//! signatures, content address, and where the compressed NAR is), or a
//! [`NarInfoError`] naming the line at fault; and back to text.

use thiserror::Error;

use super::path::StorePath;

/// One `.narinfo`. References and the deriver are full store paths here,
/// whereas the file holds their base names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NarInfo {
    pub store_path: StorePath,
    /// Where the (compressed) NAR is, relative to the cache.
    pub url: String,
    pub compression: String,
    pub file_hash: Option<String>,
    pub file_size: Option<u64>,
    /// As written: `sha256:<base32>` (what Nix writes) or SRI.
    pub nar_hash: String,
    pub nar_size: u64,
    pub references: Vec<StorePath>,
    pub deriver: Option<StorePath>,
    pub signatures: Vec<String>,
    pub ca: Option<String>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum NarInfoError {
    #[error("line {line} of the .narinfo ('{text}'): {problem}")]
    Line {
        line: usize,
        text: String,
        problem: String,
    },
    #[error("the .narinfo has no '{0}:' line")]
    Missing(&'static str),
}

impl NarInfo {
    /// Parses a `.narinfo` whose store directory is `/nix/store`.
    pub fn parse(text: &str) -> Result<NarInfo, NarInfoError> {
        let mut store_path = None;
        let mut url = None;
        let mut compression = None;
        let (mut file_hash, mut file_size) = (None, None);
        let (mut nar_hash, mut nar_size) = (None, None);
        let mut references = Vec::new();
        let mut deriver = None;
        let mut signatures = Vec::new();
        let mut ca = None;
        for (index, raw) in text.lines().enumerate() {
            if raw.is_empty() {
                continue;
            }
            let bad = |problem: String| NarInfoError::Line {
                line: index + 1,
                text: raw.chars().take(200).collect(),
                problem,
            };
            let (key, value) = raw
                .split_once(": ")
                .ok_or_else(|| bad("expected 'Key: value'".into()))?;
            let path = |text: &str| -> Result<StorePath, NarInfoError> {
                let full = if text.starts_with('/') {
                    text.to_owned()
                } else {
                    format!("/nix/store/{text}")
                };
                full.parse()
                    .map_err(|e| bad(format!("'{text}' is not a store path: {e}")))
            };
            let number = |text: &str| -> Result<u64, NarInfoError> {
                text.parse()
                    .map_err(|_| bad(format!("'{text}' is not a size")))
            };
            match key {
                "StorePath" => store_path = Some(path(value)?),
                "URL" => url = Some(value.to_owned()),
                "Compression" => compression = Some(value.to_owned()),
                "FileHash" => file_hash = Some(value.to_owned()),
                "FileSize" => file_size = Some(number(value)?),
                "NarHash" => nar_hash = Some(value.to_owned()),
                "NarSize" => nar_size = Some(number(value)?),
                "References" => {
                    references = value
                        .split(' ')
                        .filter(|r| !r.is_empty())
                        .map(path)
                        .collect::<Result<_, _>>()?;
                }
                "Deriver" if value != "unknown-deriver" => deriver = Some(path(value)?),
                "Sig" => signatures.push(value.to_owned()),
                "CA" => ca = Some(value.to_owned()),
                // Fields a later Nix may add (and `System`) carry nothing cuwheel reads.
                _ => {}
            }
        }
        Ok(NarInfo {
            store_path: store_path.ok_or(NarInfoError::Missing("StorePath"))?,
            url: url.ok_or(NarInfoError::Missing("URL"))?,
            // Nix reads a missing Compression as bzip2.
            compression: compression.unwrap_or_else(|| "bzip2".into()),
            file_hash,
            file_size,
            nar_hash: nar_hash.ok_or(NarInfoError::Missing("NarHash"))?,
            nar_size: nar_size.ok_or(NarInfoError::Missing("NarSize"))?,
            references,
            deriver,
            signatures,
            ca,
        })
    }

    /// The text Nix writes for this entry (fields in Nix's order).
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "StorePath: {}\nURL: {}\nCompression: {}\n",
            self.store_path.to_absolute(),
            self.url,
            self.compression
        );
        if let Some(hash) = &self.file_hash {
            text += &format!("FileHash: {hash}\n");
        }
        if let Some(size) = self.file_size {
            text += &format!("FileSize: {size}\n");
        }
        let references: Vec<String> = self.references.iter().map(base_name).collect();
        text += &format!(
            "NarHash: {}\nNarSize: {}\nReferences: {}\n",
            self.nar_hash,
            self.nar_size,
            references.join(" ")
        );
        if let Some(deriver) = &self.deriver {
            text += &format!("Deriver: {}\n", base_name(deriver));
        }
        for sig in &self.signatures {
            text += &format!("Sig: {sig}\n");
        }
        if let Some(ca) = &self.ca {
            text += &format!("CA: {ca}\n");
        }
        text
    }
}

/// `<hash>-<name>`, as a `.narinfo` names a path.
fn base_name(path: &StorePath) -> String {
    format!("{}-{}", path.hash_part(), path.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITTEN_BY_NIX: &str = include_str!("../tests/fixtures/nix-2.8/cache.narinfo");

    #[test]
    fn a_narinfo_nix_wrote_reads_and_writes_back_byte_for_byte() {
        let info = NarInfo::parse(WRITTEN_BY_NIX).unwrap();
        assert!(info.nar_hash.starts_with("sha256:"), "{}", info.nar_hash);
        assert!(info.nar_size > 0);
        assert_eq!(info.compression, "zstd");
        assert!(!info.signatures.is_empty());
        assert_eq!(info.to_text(), WRITTEN_BY_NIX);
    }

    #[test]
    fn references_become_store_paths_and_bad_lines_are_named() {
        let text = "StorePath: /nix/store/gjb2860bxnnqh6i0jpqn9hv5s96cdvl0-f.txt\nURL: nar/x.nar\n\
                    NarHash: sha256-N+5d3l9pfZXFYD1HNs1/0gt56XWcqknGQ5twsRkSves=\nNarSize: 128\n\
                    References: 71fc7s32zl20dc955bhghy5dvalm7ndz-busybox\n\
                    Deriver: unknown-deriver\n";
        let info = NarInfo::parse(text).unwrap();
        assert_eq!(
            info.references[0].to_absolute(),
            "/nix/store/71fc7s32zl20dc955bhghy5dvalm7ndz-busybox"
        );
        assert_eq!(info.deriver, None);
        assert_eq!(info.compression, "bzip2");

        let err = NarInfo::parse(&text.replace("NarSize: 128", "NarSize: many")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 4 of the .narinfo ('NarSize: many'): 'many' is not a size"
        );
        let err = NarInfo::parse("URL: nar/x.nar\n").unwrap_err();
        assert_eq!(err, NarInfoError::Missing("StorePath"));
    }
}
