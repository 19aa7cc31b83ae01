//! `cuwheel fetch`: every artifact of `cuwheel.lock`, and the crates of
//! cuwheel's own `Cargo.lock`, as fixed-output paths in the Nix store.
//!
//! In: a [`Lock`] and a store ([`Nix`]). Out: the store holding every
//! pinned path, and a [`Summary`]. For each path the expected store path is
//! computed first ([`crate::store::path`]); a valid one is skipped without
//! any download. Missing ones are first copied from a binary cache, when
//! one is given ([`crate::cache`]; refused unless signed by its key). The
//! rest are taken from cuwheel's cache or downloaded
//! through pip / apt-get into a temporary directory, its size and sha256
//! checked before anything touches the store (a mismatch leaves the store
//! unchanged), added with `nix-store --add-fixed` under its store name, and
//! the path Nix prints compared with the expected one. Seeds are cut from
//! their artifact, checked against their NAR hash and added recursively.
//! Downloads run on a few worker threads; [`progress`] shows them. Offline,
//! pip, apt-get and cargo are never run: what neither the binary cache nor
//! a local cache holds is an error.

pub mod crates;
pub mod progress;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cache::{Substituter, unsigned};
use crate::lock::apt::{self, AptSuite};
use crate::lock::cache::{Cache, Clients, Expected};
use crate::lock::format::{Artifact, Lock, Source, store_name};
use crate::lock::pip::Pip;
use crate::lock::tree;
use crate::store::nix::Nix;
use crate::store::path::{FileIngestion, fixed_output_path};
use crate::store::{Hash, HashAlgo, StorePath};
use crates::LockedCrate;
use progress::{Progress, megabytes};

#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Downloads at once.
    pub jobs: usize,
    /// The Python whose pip downloads wheels (default: `python3`).
    pub python: Option<std::path::PathBuf>,
    /// A binary cache tried before the registries.
    pub substituter: Option<Substituter>,
    /// Never run pip, apt-get or cargo.
    pub offline: bool,
    /// Where the user supplies the archives no registry carries (Python
    /// headers), besides `$CUWHEEL_ARCHIVES`.
    pub archives: Vec<std::path::PathBuf>,
}

/// What a fetch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Paths that were already valid.
    pub present: usize,
    /// Paths added by this run from a registry or a local cache.
    pub added: usize,
    /// Paths copied by this run from the binary cache.
    pub from_binary_cache: usize,
    /// Bytes downloaded by this run (cached files not counted).
    pub downloaded: u64,
}

/// One path the store must hold.
#[derive(Debug, Clone)]
struct Wanted {
    path: StorePath,
    what: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Artifact(String),
    Seed(String),
    Crate(LockedCrate),
}

/// Expected path of a flat file with this hex sha256.
fn flat_path(sha256: &str, name: &str) -> Result<StorePath> {
    let hash = Hash::parse(sha256, Some(HashAlgo::Sha256))
        .with_context(|| format!("the sha256 of {name} is not a sha256"))?;
    Ok(fixed_output_path(FileIngestion::Flat, &hash, name)?)
}

/// Every path the lock (and cuwheel's Cargo.lock) pins: what `cuwheel
/// fetch` puts into the store.
pub fn pinned_paths(lock: &Lock) -> Result<Vec<StorePath>> {
    Ok(wanted(lock)?.into_iter().map(|w| w.path).collect())
}

/// Every path the lock (and cuwheel's Cargo.lock) pins, with its kind.
fn wanted(lock: &Lock) -> Result<Vec<Wanted>> {
    let mut all = Vec::new();
    for (name, artifact) in &lock.artifacts {
        if store_name(&artifact.file) != *name {
            bail!(
                "cuwheel.lock is inconsistent: artifact {name} has file {}, whose store name is {}; \
                 run `cuwheel lock` to write it again",
                artifact.file,
                store_name(&artifact.file)
            );
        }
        all.push(Wanted {
            path: flat_path(&artifact.sha256, name)?,
            what: Kind::Artifact(name.clone()),
        });
    }
    for (name, seed) in &lock.seeds {
        if !lock.artifacts.contains_key(&seed.artifact) {
            bail!(
                "cuwheel.lock is inconsistent: seed {name} comes from {}, which is not among its \
                 artifacts; run `cuwheel lock` to write it again",
                seed.artifact
            );
        }
        let hash = Hash::parse(&seed.nar_sha256, Some(HashAlgo::Sha256))
            .with_context(|| format!("the nar-sha256 of seed {name} is not a sha256"))?;
        all.push(Wanted {
            path: fixed_output_path(FileIngestion::Recursive, &hash, name)?,
            what: Kind::Seed(name.clone()),
        });
    }
    for krate in crates::locked_crates(crates::CARGO_LOCK)? {
        all.push(Wanted {
            path: flat_path(&krate.checksum, &krate.file())?,
            what: Kind::Crate(krate),
        });
    }
    Ok(all)
}

/// Fetches everything `lock` pins into the store of `nix`.
pub fn fetch(lock: &Lock, nix: &Nix, options: &FetchOptions) -> Result<Summary> {
    let wanted = wanted(lock)?;
    let paths: Vec<StorePath> = wanted.iter().map(|w| w.path.clone()).collect();
    let valid: BTreeSet<StorePath> = nix.valid_paths(&paths)?.into_iter().collect();
    let mut missing: Vec<&Wanted> = wanted.iter().filter(|w| !valid.contains(&w.path)).collect();
    let mut summary = Summary {
        present: valid.len(),
        ..Summary::default()
    };
    if let (Some(substituter), false) = (&options.substituter, missing.is_empty()) {
        let copied = from_binary_cache(nix, substituter, &missing)?;
        missing.retain(|w| !copied.contains(&w.path));
        summary.from_binary_cache = copied.len();
    }
    if missing.is_empty() {
        eprintln!(
            "fetch: nothing to download: all {} paths are in the store ({} copied from the \
             binary cache)",
            wanted.len(),
            summary.from_binary_cache
        );
        return Ok(summary);
    }
    let cache = Cache::locate()?;
    if options.offline {
        check_available_offline(lock, &missing, &cache, options)?;
    }
    let clients = prepare_clients(lock, &missing, &cache, options)?;
    let session = Session {
        nix,
        cache: &cache,
        clients: &clients,
        lock,
        progress: Progress::default(),
        store: Mutex::new(()),
        downloaded: AtomicU64::new(0),
    };

    // Artifacts and crates first (seeds are cut from artifacts).
    let (seeds, files): (Vec<&Wanted>, Vec<&Wanted>) = missing
        .iter()
        .partition(|w| matches!(w.what, Kind::Seed(_)));
    let crates_missing: Vec<&LockedCrate> = files
        .iter()
        .filter_map(|w| match &w.what {
            Kind::Crate(krate) => Some(krate),
            _ => None,
        })
        .collect();
    let mut failures = Vec::new();
    if let Err(error) = session.ensure_crates_cached(&crates_missing) {
        failures.push(("crates".to_owned(), error));
    }
    let mut results = session.run_all(&files, options.jobs.max(1));
    results.extend(session.run_all(&seeds, 1));
    for (label, result) in results {
        match result {
            Ok(()) => summary.added += 1,
            Err(error) => failures.push((label, error)),
        }
    }
    summary.downloaded = session.downloaded.load(Ordering::Relaxed);
    if !failures.is_empty() {
        let lines: Vec<String> = failures
            .iter()
            .map(|(label, error)| format!("  {label}: {error:#}"))
            .collect();
        bail!(
            "{} of {} missing paths could not be fetched ({} were added, nothing unverified \
             reached the store):\n{}",
            failures.len(),
            missing.len(),
            summary.added,
            lines.join("\n")
        );
    }
    eprintln!(
        "fetch: added {} paths ({} downloaded), copied {} from the binary cache, {} were \
         already in the store",
        summary.added,
        megabytes(summary.downloaded),
        summary.from_binary_cache,
        summary.present
    );
    Ok(summary)
}

/// Copies what the binary cache holds of `missing` into the store, after
/// checking every such path is signed by the substituter's key (nothing is
/// copied otherwise); returns the paths copied.
fn from_binary_cache(
    nix: &Nix,
    substituter: &Substituter,
    missing: &[&Wanted],
) -> Result<BTreeSet<StorePath>> {
    let url = &substituter.url;
    let paths: Vec<StorePath> = missing.iter().map(|w| w.path.clone()).collect();
    let held: Vec<_> = nix
        .path_infos(Some(url), &paths, false)
        .with_context(|| format!("cannot read the binary cache {url}"))?
        .into_iter()
        .filter(|info| info.valid)
        .collect();
    if held.is_empty() {
        eprintln!(
            "fetch: the binary cache {url} holds none of the {} missing paths",
            paths.len()
        );
        return Ok(BTreeSet::new());
    }
    let key = &substituter.public_key;
    let bad = unsigned(nix, key, &held)?;
    if !bad.is_empty() {
        let signers: BTreeSet<&str> = held
            .iter()
            .flat_map(|info| &info.signatures)
            .filter_map(|sig| sig.split_once(':').map(|(name, _)| name))
            .collect();
        bail!(
            "the binary cache {url} is not signed by the trusted key {}: {} of its {} paths for \
             this lock carry no valid signature by it (first: {}; the cache is signed by: {}). \
             Nothing was copied. Pass the public key of the key the cache was exported with \
             (`cuwheel cache key` wrote it as NAME.pub beside NAME.sec), or export the cache \
             again with this key",
            key.name,
            bad.len(),
            held.len(),
            bad[0].to_absolute(),
            if signers.is_empty() {
                "no key".to_owned()
            } else {
                signers.into_iter().collect::<Vec<_>>().join(", ")
            }
        );
    }
    let copied: Vec<StorePath> = held
        .iter()
        .map(|info| info.path.parse())
        .collect::<Result<_, _>>()
        .context("Nix reported something that is not a store path")?;
    eprintln!(
        "fetch: copying {} paths from the binary cache {url}",
        copied.len()
    );
    nix.copy_from(url, &substituter.nix_options(), &copied)
        .with_context(|| format!("cannot copy from the binary cache {url}"))?;
    Ok(copied.into_iter().collect())
}

/// Offline, every missing path must come from a local cache: cuwheel's for
/// artifacts (or the user's archive directories for a supplied file),
/// cargo's for crates (a seed is cut from its artifact).
fn check_available_offline(
    lock: &Lock,
    missing: &[&Wanted],
    cache: &Cache,
    options: &FetchOptions,
) -> Result<()> {
    let mut unavailable = Vec::new();
    for wanted in missing {
        let available = match &wanted.what {
            Kind::Artifact(name) => {
                let artifact = &lock.artifacts[name];
                // A file the user supplies needs no network either.
                let supplied = matches!(artifact.source, Source::Archive { url: None })
                    && crate::lock::archive::find_supplied(
                        &artifact.file,
                        None,
                        &crate::lock::archive::archive_dirs(&options.archives),
                    )
                    .is_ok();
                supplied || cache.cached(&expected(artifact)).is_some()
            }
            Kind::Crate(krate) => crates::in_registry_cache(krate)?.is_some(),
            Kind::Seed(_) => true,
        };
        if !available {
            unavailable.push(wanted.path.name().to_owned());
        }
    }
    if !unavailable.is_empty() {
        let cache = match &options.substituter {
            Some(substituter) => format!("the binary cache {}", substituter.url),
            None => "a binary cache (none was given: --substituter)".to_owned(),
        };
        const SHOWN: usize = 8;
        let mut names = unavailable[..unavailable.len().min(SHOWN)].join(", ");
        if unavailable.len() > SHOWN {
            names += &format!(" and {} more", unavailable.len() - SHOWN);
        }
        bail!(
            "offline, {} of the {} missing pinned paths are neither in {cache} nor in a local \
             cache (cuwheel's downloads, cargo's registry), and pip, apt-get and cargo may not \
             run: {names}. Export them into a binary cache (`cuwheel cache export`) on a machine \
             that has them, or fetch without --offline",
            unavailable.len(),
            missing.len()
        );
    }
    Ok(())
}

/// pip, and apt updated for each suite that some missing, uncached
/// artifact comes from (the seeds' artifacts are among the artifacts).
fn prepare_clients(
    lock: &Lock,
    missing: &[&Wanted],
    cache: &Cache,
    options: &FetchOptions,
) -> Result<Clients> {
    let mut suites = BTreeSet::new();
    for wanted in missing {
        if let Kind::Artifact(name) = &wanted.what {
            let artifact = &lock.artifacts[name];
            if let Source::Debian { suite, .. } = &artifact.source {
                if cache.cached(&expected(artifact)).is_none() {
                    suites.insert(suite.clone());
                }
            }
        }
    }
    let mut clients = Clients {
        pip: Pip::new(options.python.as_deref()),
        apt: BTreeMap::new(),
        archives: crate::lock::archive::archive_dirs(&options.archives),
    };
    if !suites.is_empty() {
        let mirror = apt::system_mirror()?;
        for suite in suites {
            eprintln!("fetch: reading Debian {suite}'s package index");
            let apt = AptSuite::new(&cache.root, &suite, &apt::suite_mirror(&mirror, &suite))?;
            apt.update()?;
            clients.apt.insert(suite, apt);
        }
    }
    Ok(clients)
}

fn expected(artifact: &Artifact) -> Expected<'_> {
    Expected {
        file: &artifact.file,
        sha256: &artifact.sha256,
        size: Some(artifact.size),
    }
}

struct Session<'a> {
    nix: &'a Nix,
    cache: &'a Cache,
    clients: &'a Clients,
    lock: &'a Lock,
    progress: Progress,
    /// One `nix-store --add-fixed` at a time: the store's database is the
    /// bottleneck anyway, and it keeps a chroot store free of lock contention.
    store: Mutex<()>,
    downloaded: AtomicU64,
}

type Outcome = (String, Result<()>);

impl Session<'_> {
    /// Runs each item on `jobs` threads; one failure does not stop the rest.
    fn run_all(&self, items: &[&Wanted], jobs: usize) -> Vec<Outcome> {
        let queue: Mutex<VecDeque<(usize, &Wanted)>> =
            Mutex::new(items.iter().copied().enumerate().collect());
        let results: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..jobs.min(items.len()))
                .map(|_| {
                    scope.spawn(|| {
                        loop {
                            let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                            let Some((id, item)) = next else { break };
                            let label = self.label(item);
                            let result = self.one(id, item);
                            let line = match &result {
                                Ok(note) => format!("fetch: {label}: {note}"),
                                Err(_) => format!("fetch: {label}: FAILED"),
                            };
                            self.progress.finish(id, &line);
                            results
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((label, result.map(drop)));
                        }
                    })
                })
                .collect();
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    self.progress.tick();
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
            for worker in workers {
                let _ = worker.join();
            }
            done.store(true, Ordering::Relaxed);
        });
        let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        results.sort_by(|a, b| a.0.cmp(&b.0));
        results
    }

    fn label(&self, item: &Wanted) -> String {
        match &item.what {
            Kind::Artifact(name) => name.clone(),
            Kind::Seed(name) => format!("seed {name}"),
            Kind::Crate(krate) => krate.file(),
        }
    }

    /// Puts one path into the store; returns a note on where it came from.
    fn one(&self, id: usize, item: &Wanted) -> Result<String> {
        match &item.what {
            Kind::Artifact(name) => self.artifact(id, name, &item.path),
            Kind::Seed(name) => self.seed(name, &item.path),
            Kind::Crate(krate) => self.krate(krate, &item.path),
        }
    }

    fn artifact(&self, id: usize, name: &str, path: &StorePath) -> Result<String> {
        let artifact = &self.lock.artifacts[name];
        let expected = expected(artifact);
        if let Some(cached) = self.cache.cached(&expected) {
            self.add(&cached, FileIngestion::Flat, path)?;
            return Ok("added from cuwheel's cache".to_owned());
        }
        let dir = self.cache.temp_dir()?;
        self.progress.start(id, name, artifact.size, dir.path());
        let file = self
            .clients
            .download(&artifact.source, &expected, dir.path())?;
        expected.check(&file)?;
        self.downloaded.fetch_add(artifact.size, Ordering::Relaxed);
        let named = dir.path().join(name);
        if file != named {
            std::fs::rename(&file, &named)
                .with_context(|| format!("cannot rename {} to its store name", file.display()))?;
        }
        self.add(&named, FileIngestion::Flat, path)?;
        Ok(format!("downloaded {} and added", megabytes(artifact.size)))
    }

    fn seed(&self, name: &str, path: &StorePath) -> Result<String> {
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

    fn krate(&self, krate: &LockedCrate, path: &StorePath) -> Result<String> {
        let found = crates::in_registry_cache(krate)?.with_context(|| {
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
    fn ensure_crates_cached(&self, missing: &[&LockedCrate]) -> Result<()> {
        let mut absent = 0;
        for krate in missing {
            if crates::in_registry_cache(krate)?.is_none() {
                absent += 1;
            }
        }
        if absent > 0 {
            eprintln!("fetch: cargo fetch of {absent} of cuwheel's locked crates");
            let dir = self.cache.temp_dir()?;
            crates::cargo_fetch(dir.path())?;
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
