//! The work of one `cuwheel fetch` on the paths it must add: each artifact
//! from cuwheel's cache or downloaded through a registry's client (and kept
//! in that cache), each seed cut from its artifact, each crate copied from
//! cargo's cache; every file checked before `nix-store --add-fixed` and the
//! path Nix prints compared with the one the lock gives.
//!
//! In: the lock, the store, the verified cached files, the clients to
//! download with. Out: one note per path on where it came from, or its
//! error; nothing unverified reaches the store.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::crates::{self, LockedCrate};
use super::progress::{Progress, megabytes};
use super::{Wanted, expected, flat_path};
use crate::lock::format::{Lock, Source};
use crate::registry::apt::Gone;
use crate::registry::downloads::{Cache, Clients, Expected};
use crate::registry::nix::Nix;
use crate::registry::tree;
use crate::store::StorePath;
use crate::store::path::FileIngestion;

pub(super) struct Session<'a> {
    pub nix: &'a Nix,
    pub cache: &'a Cache,
    pub lock: &'a Lock,
    /// The missing artifacts cuwheel's cache holds, checked once.
    pub cached: BTreeMap<String, PathBuf>,
    pub progress: Progress,
    /// One `nix-store --add-fixed` at a time: the store's database is the
    /// bottleneck anyway, and it keeps a chroot store free of lock contention.
    pub store: Mutex<()>,
    pub downloaded: AtomicU64,
}

/// `work` on each item on `jobs` threads; one failure does not stop the
/// rest. The results are in the order of `items`.
pub(super) fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let queue: Mutex<VecDeque<(usize, &T)>> = Mutex::new(items.iter().enumerate().collect());
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(items.len()) {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some((id, item)) = next else { break };
                    let result = work(id, item);
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((id, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(id, _)| *id);
    results.into_iter().map(|(_, result)| result).collect()
}

impl Session<'_> {
    /// Runs `work` on each item on `jobs` threads with progress shown, and
    /// a line per item once it is done.
    pub fn run_all<T: Sync>(
        &self,
        items: &[T],
        jobs: usize,
        label: impl Fn(&T) -> String + Sync,
        work: impl Fn(usize, &T) -> Result<String> + Sync,
    ) -> Vec<Result<String>> {
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    self.progress.tick();
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
            let results = parallel(items, jobs, |id, item| {
                let result = work(id, item);
                let note = match &result {
                    Ok(note) => note.clone(),
                    Err(error) => match error.downcast_ref::<Gone>() {
                        Some(gone) => gone.why(),
                        None => "FAILED".to_owned(),
                    },
                };
                self.progress
                    .finish(id, &format!("fetch: {}: {note}", label(item)));
                result
            });
            done.store(true, Ordering::Relaxed);
            results
        })
    }

    pub fn label(item: &Wanted) -> String {
        match &item.what {
            super::Kind::Artifact(name) => name.clone(),
            super::Kind::Seed(name) => format!("seed {name}"),
            super::Kind::Crate(krate) => krate.file(),
        }
    }

    /// Puts one artifact into the store, from cuwheel's cache or downloaded
    /// with `clients` (whose apt for the artifact's suite may read another
    /// suite or archive: `from` says which); returns where it came from.
    pub fn artifact(
        &self,
        id: usize,
        name: &str,
        path: &StorePath,
        clients: &Clients,
        from: &str,
    ) -> Result<String> {
        if let Some(cached) = self.cached.get(name) {
            self.add(cached, FileIngestion::Flat, path)?;
            return Ok("added from cuwheel's cache".to_owned());
        }
        let artifact = &self.lock.artifacts[name];
        let file =
            clients.download_kept(self.cache, &artifact.source, &expected(artifact), |dir| {
                self.progress.start(id, name, artifact.size, dir)
            })?;
        self.downloaded.fetch_add(artifact.size, Ordering::Relaxed);
        self.add(&file, FileIngestion::Flat, path)?;
        Ok(format!(
            "downloaded {} from {from} and added",
            megabytes(artifact.size)
        ))
    }

    /// Where an artifact's own source is: `PyPI`, `Debian trixie`.
    pub fn pinned_source(&self, name: &str) -> String {
        match &self.lock.artifacts[name].source {
            Source::Debian { suite, .. } => format!("Debian {suite}"),
            Source::Pypi { .. } => "PyPI".to_owned(),
            Source::Archive { url: Some(url) } => url.clone(),
            Source::Archive { url: None } => "the archives you supply".to_owned(),
        }
    }

    pub fn seed(&self, name: &str, path: &StorePath) -> Result<String> {
        let seed = &self.lock.seeds[name];
        let artifact = &self.lock.artifacts[&seed.artifact];
        let source = self
            .nix
            .real_path(&flat_path(&artifact.sha256, &seed.artifact)?);
        let dir = self.cache.temp_dir()?;
        let (tree, hash) = tree::seed(&source, &artifact.file, &seed.member, name, dir.path())?;
        if hash.to_hex() != seed.nar_sha256 {
            bail!(
                "{} of {} has NAR sha256 {}, but the lock says {}; nothing was added. The \
                 artifact verified, so the lock's seed entry is wrong: run `cuwheel lock` again",
                seed.member,
                seed.artifact,
                hash.to_hex(),
                seed.nar_sha256
            );
        }
        self.add(&tree, FileIngestion::Recursive, path)?;
        Ok(format!("cut from {} and added", seed.artifact))
    }

    pub fn krate(&self, krate: &LockedCrate, path: &StorePath) -> Result<String> {
        let found =
            crates::in_registry_cache(&crates::cargo_home()?, krate)?.with_context(|| {
                format!(
                    "cargo fetch did not leave {} in cargo's registry cache",
                    krate.file()
                )
            })?;
        // A private copy, so the bytes checked are the bytes added.
        let dir = self.cache.temp_dir()?;
        let copy = dir.path().join(krate.file());
        std::fs::copy(&found, &copy).with_context(|| format!("cannot copy {}", found.display()))?;
        Expected {
            file: &krate.file(),
            sha256: &krate.checksum,
            size: None,
        }
        .check(&copy)?;
        self.add(&copy, FileIngestion::Flat, path)?;
        Ok("added from cargo's registry cache".to_owned())
    }

    /// `cargo fetch` once if some missing crate is not in cargo's cache.
    pub fn ensure_crates_cached(&self, missing: &[&LockedCrate]) -> Result<()> {
        let home = crates::cargo_home()?;
        let mut absent = 0;
        for krate in missing {
            if crates::in_registry_cache(&home, krate)?.is_none() {
                absent += 1;
            }
        }
        if absent > 0 {
            eprintln!("fetch: cargo fetch of {absent} of cuwheel's locked crates");
            let dir = self.cache.temp_dir()?;
            crates::cargo_fetch(&home, dir.path())?;
        }
        Ok(())
    }

    /// Adds a verified file or tree and checks Nix put it where the lock says.
    fn add(&self, file: &Path, ingestion: FileIngestion, expected: &StorePath) -> Result<()> {
        let _store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let added = self.nix.add_fixed(file, ingestion)?;
        if &added != expected {
            bail!(
                "nix-store --add-fixed put {} at {}, not at {} as computed from the lock: this \
                 cuwheel and this Nix disagree on store paths; please report it",
                file.display(),
                added.to_absolute(),
                expected.to_absolute()
            );
        }
        Ok(())
    }
}
