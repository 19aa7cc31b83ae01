//! The binary cache: the archive of every store path a lock pins (and of
//! what is built from them), from which a store can be filled again after
//! the registries have dropped the pinned versions (Debian removes
//! superseded packages from its mirror, so a lock alone cannot rebuild an
//! old wheel).
//!
//! In: a signing key ([`key`]), or a
//! [`Substituter`] (a cache URL and the public key it must be signed with).
//! Out: a signed Nix binary cache (`file://DIR`), the options that let Nix
//! substitute from it, and [`unsigned`]: which paths of a cache lack a valid
//! signature by the key.

pub mod key;

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::registry::nix::{Nix, PathInfo};
use crate::store::StorePath;
use crate::store::narinfo::NarInfo;
use key::PublicKey;

/// A binary cache Nix may substitute from, and the only key it trusts there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substituter {
    pub url: String,
    pub public_key: PublicKey,
}

impl Substituter {
    /// `location` is a store URL (`file://…`, `https://…`) or a directory;
    /// `key` a public key or a file holding one.
    pub fn new(location: &str, key: &str) -> Result<Substituter> {
        Ok(Substituter {
            url: cache_url(location)?,
            public_key: key::public_key_from_text_or_file(key)?,
        })
    }

    /// Nix's `--option` arguments that make this cache the one substituter,
    /// trusted through this key only, with signatures required. They go
    /// after cuwheel's pinned options (which set no substituter), since the
    /// last value of an option wins.
    pub fn nix_options(&self) -> Vec<String> {
        [
            ("substituters", self.url.clone()),
            ("trusted-public-keys", self.public_key.to_string()),
            ("require-sigs", "true".to_owned()),
        ]
        .into_iter()
        .flat_map(|(name, value)| ["--option".to_owned(), name.to_owned(), value])
        .collect()
    }
}

/// A URL as given, or `file://` and the absolute path of a directory.
pub fn cache_url(location: &str) -> Result<String> {
    if location.contains("://") {
        return Ok(location.to_owned());
    }
    let dir = Path::new(location);
    let absolute = fs::canonicalize(dir).with_context(|| {
        format!(
            "the binary cache {location} is not a directory here (nor a URL such as file:///path)"
        )
    })?;
    file_url(&absolute)
}

/// `file://` and an absolute path.
pub fn file_url(absolute: &Path) -> Result<String> {
    Ok(format!("file://{}", url_safe(absolute)?))
}

/// A path as text that can stand in a store URL (its path or a parameter),
/// refused where a character would be read as part of the URL's syntax.
pub(crate) fn url_safe(path: &Path) -> Result<&str> {
    let text = path.to_str().with_context(|| {
        format!(
            "{} is not UTF-8, so it cannot be in a store URL",
            path.display()
        )
    })?;
    if let Some(bad) = text
        .chars()
        .find(|c| matches!(c, '?' | '&' | '#' | '%' | '='))
    {
        bail!(
            "{text} holds {bad:?}, which Nix would read as part of the store URL: use a path \
             without ? & # % ="
        );
    }
    Ok(text)
}

/// The paths of `infos` (path infos read from a cache) that carry no valid
/// signature by `key`.
///
/// Nix itself does not check the signatures of a content-addressed path
/// (it checks the content against the address instead), and every pinned
/// artifact is one. cuwheel checks them anyway, so that a cache signed by
/// another key is refused however it would be used: it writes the path
/// infos without their content addresses into a scratch binary cache (a
/// signature covers the path, NAR hash, NAR size and references, not the
/// address) and asks `nix store verify` there.
pub fn unsigned(nix: &Nix, key: &PublicKey, infos: &[PathInfo]) -> Result<Vec<StorePath>> {
    let scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
    fs::write(
        scratch.path().join("nix-cache-info"),
        "StoreDir: /nix/store\n",
    )
    .context("cannot write a scratch binary cache")?;
    let mut paths = Vec::new();
    for info in infos {
        let path: StorePath = info
            .path
            .parse()
            .with_context(|| format!("Nix reported '{}' as a store path", info.path))?;
        let file = scratch.path().join(format!("{}.narinfo", path.hash_part()));
        fs::write(&file, narinfo_without_ca(info, path.clone())?)
            .with_context(|| format!("cannot write {}", file.display()))?;
        paths.push(path);
    }
    let url = file_url(scratch.path())?;
    Ok(nix.untrusted_paths(&url, &key.to_string(), &paths)?)
}

/// A `.narinfo` with what a signature covers and the signatures, and no
/// content address (`URL` is required but unused: nothing is downloaded).
fn narinfo_without_ca(info: &PathInfo, path: StorePath) -> Result<String> {
    let references = info
        .references
        .iter()
        .map(|r| {
            r.parse()
                .with_context(|| format!("Nix reported '{r}' as a reference of {}", info.path))
        })
        .collect::<Result<Vec<StorePath>>>()?;
    let narinfo = NarInfo {
        store_path: path,
        url: "nar/unused.nar".into(),
        compression: "none".into(),
        file_hash: None,
        file_size: None,
        nar_hash: info.nar_hash.clone(),
        nar_size: info.nar_size,
        references,
        deriver: None,
        signatures: info.signatures.clone(),
        ca: None,
    };
    Ok(narinfo.to_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PublicKey {
        PublicKey::parse("demo-1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=").unwrap()
    }

    #[test]
    fn the_nix_options_make_the_cache_the_only_trusted_substituter() {
        let substituter = Substituter {
            url: "file:///srv/cache".into(),
            public_key: key(),
        };
        assert_eq!(
            substituter.nix_options().join(" "),
            "--option substituters file:///srv/cache --option trusted-public-keys \
             demo-1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc= --option require-sigs true"
        );
    }

    #[test]
    fn a_directory_becomes_a_file_url() {
        let dir = tempfile::tempdir().unwrap();
        let url = cache_url(dir.path().to_str().unwrap()).unwrap();
        assert_eq!(
            url,
            format!("file://{}", fs::canonicalize(dir.path()).unwrap().display())
        );
        assert_eq!(cache_url("s3://bucket").unwrap(), "s3://bucket");
        let err = format!("{:#}", cache_url("no/such/cache").unwrap_err());
        assert!(err.contains("not a directory"), "{err}");
        let err = format!("{:#}", file_url(Path::new("/srv/a?b")).unwrap_err());
        assert!(err.contains("'?'"), "{err}");
    }

    #[test]
    fn a_narinfo_keeps_what_the_signature_covers_and_drops_the_address() {
        let info = PathInfo {
            path: "/nix/store/gjb2860bxnnqh6i0jpqn9hv5s96cdvl0-f.txt".into(),
            valid: true,
            nar_hash: "sha256-N+5d3l9pfZXFYD1HNs1/0gt56XWcqknGQ5twsRkSves=".into(),
            nar_size: 128,
            references: vec!["/nix/store/71fc7s32zl20dc955bhghy5dvalm7ndz-busybox".into()],
            signatures: vec!["demo-1:c2ln".into()],
            ca: Some("fixed:sha256:0x5l".into()),
            download_size: Some(97),
            registration_time: None,
        };
        let path = info.path.parse().unwrap();
        assert_eq!(
            narinfo_without_ca(&info, path).unwrap(),
            "StorePath: /nix/store/gjb2860bxnnqh6i0jpqn9hv5s96cdvl0-f.txt\nURL: nar/unused.nar\n\
             Compression: none\nNarHash: sha256-N+5d3l9pfZXFYD1HNs1/0gt56XWcqknGQ5twsRkSves=\n\
             NarSize: 128\nReferences: 71fc7s32zl20dc955bhghy5dvalm7ndz-busybox\n\
             Sig: demo-1:c2ln\n"
        );
    }
}
