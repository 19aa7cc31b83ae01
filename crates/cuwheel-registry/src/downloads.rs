//! Getting a pinned file's bytes, safely: through the registry's client into
//! a temporary directory, checked against the size and sha256 it must have
//! before anyone uses it, and kept in cuwheel's cache
//! (`$XDG_CACHE_HOME/cuwheel`, else `~/.cache/cuwheel`) under its store name
//! so that `lock` and `fetch` download each file once.
//!
//! In: an artifact's source, file name, sha256 and (when known) size. Out:
//! the path of a verified file, or an error naming the artifact, what was
//! expected, what arrived and what to do. The cache may be deleted at any
//! time; it holds the apt state of each suite too (`apt/<suite>`).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::apt::AptSuite;
use super::pip::Pip;
use crate::lock::format::{Source, store_name};
use crate::store::hash::HashingWriter;

/// cuwheel's cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    /// `$XDG_CACHE_HOME/cuwheel`, else `$HOME/.cache/cuwheel`, created.
    pub fn locate() -> Result<Cache> {
        let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache"))
                .context("neither XDG_CACHE_HOME nor HOME is set, so cuwheel has no cache directory: set one of them")?,
        };
        let cache = Cache {
            root: base.join("cuwheel"),
        };
        for dir in [cache.files(), cache.root.join("tmp")] {
            fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        Ok(cache)
    }

    fn files(&self) -> PathBuf {
        self.root.join("files")
    }

    /// A fresh directory for one download, on the cache's file system so
    /// that keeping the file is a rename.
    pub fn temp_dir(&self) -> Result<tempfile::TempDir> {
        tempfile::tempdir_in(self.root.join("tmp")).with_context(|| {
            format!(
                "cannot create a temporary directory in {}",
                self.root.display()
            )
        })
    }

    /// The cached copy of a file, if there is one with the expected bytes.
    /// One that differs is left alone (the lock may be what is wrong) and
    /// replaced when a verified download is kept.
    pub fn cached(&self, expected: &Expected) -> Option<PathBuf> {
        let path = self.files().join(store_name(expected.file));
        (path.is_file() && expected.check(&path).is_ok()).then_some(path)
    }

    /// Moves a verified file into the cache.
    pub fn keep(&self, file: &Path, expected: &Expected) -> Result<PathBuf> {
        let path = self.files().join(store_name(expected.file));
        fs::rename(file, &path)
            .with_context(|| format!("cannot move {} to {}", file.display(), path.display()))?;
        Ok(path)
    }
}

/// What a pinned file must be.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    pub file: &'a str,
    /// Hex.
    pub sha256: &'a str,
    /// `None` where it is not known yet (a wheel while locking).
    pub size: Option<u64>,
}

/// A file whose bytes are not the pinned ones.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file} is not the locked file: expected {expected_size} bytes with sha256 {expected_sha256}, \
     got {got_size} bytes with sha256 {got_sha256}{truncated}. It was not added to the store. \
     Run the command again (a download can be cut short); if it still differs, the registry \
     serves different bytes under this name: check where your pip/apt configuration points, \
     and re-run `cuwheel lock` only if you trust the new file"
)]
pub struct Mismatch {
    pub file: String,
    pub expected_size: String,
    pub expected_sha256: String,
    pub got_size: u64,
    pub got_sha256: String,
    truncated: &'static str,
}

impl Expected<'_> {
    /// Hashes the file (streamed) and compares size and sha256.
    pub fn check(&self, path: &Path) -> Result<()> {
        let (got_sha256, got_size) = sha256_file(path)?;
        let size_ok = self.size.is_none_or(|size| size == got_size);
        if size_ok && got_sha256 == self.sha256 {
            return Ok(());
        }
        Err(Mismatch {
            file: self.file.to_owned(),
            expected_size: self
                .size
                .map_or_else(|| "any number of".to_owned(), |s| s.to_string()),
            expected_sha256: self.sha256.to_owned(),
            got_size,
            got_sha256,
            truncated: match self.size {
                Some(size) if got_size < size => " (truncated)",
                _ => "",
            },
        }
        .into())
    }
}

/// The hex sha256 and size of a file.
pub fn sha256_file(path: &Path) -> Result<(String, u64)> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = HashingWriter::sha256();
    io::copy(&mut file, &mut hasher).with_context(|| format!("cannot read {}", path.display()))?;
    let (hash, size) = hasher.finish();
    Ok((hash.to_hex(), size))
}

/// The registries' clients: pip, and apt for each suite already updated;
/// and, for archives no registry carries, the directories the user supplies
/// them in (and curl for those with a URL).
#[derive(Debug, Clone)]
pub struct Clients {
    pub pip: Pip,
    pub apt: BTreeMap<String, AptSuite>,
    pub archives: Vec<PathBuf>,
}

impl Clients {
    /// Downloads the expected file from `source` into `dir` through its
    /// client (a supplied archive: copies it from the user's directories);
    /// the result is not checked yet.
    pub fn download(&self, source: &Source, expected: &Expected, dir: &Path) -> Result<PathBuf> {
        let file = expected.file;
        match source {
            Source::Pypi { name, version } => self.pip.download(name, version, file, dir),
            Source::Debian {
                suite,
                package,
                version,
                ..
            } => {
                let apt = self.apt.get(suite).with_context(|| {
                    format!("internal: apt for Debian {suite} was not prepared before downloading {file}")
                })?;
                apt.download(package, version, dir)?;
                let path = dir.join(file);
                anyhow::ensure!(
                    path.is_file(),
                    "apt-get download {package}={version} did not write {file} in {}",
                    dir.display()
                );
                Ok(path)
            }
            Source::Archive { url: None } => {
                let found =
                    super::archive::find_supplied(file, Some(expected.sha256), &self.archives)?;
                let path = dir.join(file);
                fs::copy(&found, &path).with_context(|| {
                    format!("cannot copy {} to {}", found.display(), path.display())
                })?;
                Ok(path)
            }
            Source::Archive { url: Some(url) } => {
                let path = dir.join(file);
                let mut curl = std::process::Command::new("curl");
                curl.args(["-fsSL"])
                    .args(super::net::NetLimits::current().curl_args())
                    .arg("-o")
                    .arg(&path)
                    .arg(url);
                let shown = crate::url::redact(url);
                crate::process::checked_output(&mut curl, &format!("curl of {shown}"), || {
                    format!(
                        "cannot run curl to fetch {shown}: install curl, or download the \
                             file yourself and name it with `file =` instead of `url =`"
                    )
                })?;
                Ok(path)
            }
        }
    }

    /// The verified file: from the cache, or downloaded (after calling
    /// `downloading`), checked and kept in the cache.
    pub fn obtain(
        &self,
        cache: &Cache,
        source: &Source,
        expected: &Expected,
        downloading: impl FnOnce(),
    ) -> Result<PathBuf> {
        if let Some(path) = cache.cached(expected) {
            return Ok(path);
        }
        downloading();
        self.download_kept(cache, source, expected, |_| {})
    }

    /// Downloads the file into a fresh directory (`started` is told which,
    /// before the client runs), checks it and keeps it in the cache; returns
    /// its path there. The cache is not looked into first.
    pub fn download_kept(
        &self,
        cache: &Cache,
        source: &Source,
        expected: &Expected,
        started: impl FnOnce(&Path),
    ) -> Result<PathBuf> {
        let dir = cache.temp_dir()?;
        started(dir.path());
        let path = self.download(source, expected, dir.path())?;
        expected.check(&path)?;
        cache.keep(&path, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_file_and_both_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.deb");
        fs::write(&path, b"hello").unwrap();
        let good = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        let expected = |sha256, size| Expected {
            file: "f.deb",
            sha256,
            size,
        };
        expected(good, Some(5)).check(&path).unwrap();
        expected(good, None).check(&path).unwrap();
        let err = expected(good, Some(9))
            .check(&path)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("f.deb is not the locked file: expected 9 bytes"),
            "{err}"
        );
        assert!(
            err.contains("got 5 bytes") && err.contains("(truncated)"),
            "{err}"
        );
        let err = expected("00", Some(5))
            .check(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("with sha256 {good}")), "{err}");
        assert!(err.contains("not added to the store"), "{err}");
    }
}
