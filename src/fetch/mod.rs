//! `cuwheel fetch`: every artifact of `cuwheel.lock` (or those some cells
//! need, `--cell`), and the crates of cuwheel's own `Cargo.lock`, as
//! fixed-output paths in the Nix store.
//!
//! In: a [`Lock`] and a store ([`Nix`]). Out: the store holding every
//! pinned path, and a [`Summary`]; or, when pinned Debian files are gone
//! from everywhere, a [`Vanished`] error naming each (exit 3), apart from
//! every other failure.
//!
//! For each path the expected store path is computed first
//! ([`crate::store::path`]). Then, in order, each missing path is taken from:
//! 1. the store itself (a valid path is skipped without any download);
//! 2. a binary cache, when one is given ([`crate::cache`]; refused unless
//!    signed by its key);
//! 3. cuwheel's download cache (each cached file hashed once);
//! 4. its registry through pip / apt-get (a `.deb` from its pinned suite);
//! 5. for a `.deb` its suite no longer carries: another suite carrying the
//!    same file, then Debian's snapshot archive ([`debian_fallback`]).
//!
//! Every file is checked against the lock's size and sha256 before anything
//! touches the store (a mismatch leaves the store unchanged), kept in
//! cuwheel's cache, added with `nix-store --add-fixed` under its store name,
//! and the path Nix prints compared with the expected one; a line per path
//! says where it came from. Seeds are cut from their artifact, checked
//! against their NAR hash and added recursively. Downloads run on a few
//! worker threads; [`progress`] shows them. Offline, pip, apt-get and cargo
//! are never run: what neither the binary cache nor a local cache holds is
//! an error.

pub mod crates;
pub mod debian_fallback;
pub mod progress;
pub mod select;
mod session;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};

use crate::cache::{Substituter, unsigned};
use crate::lock::format::{Artifact, Lock, Source, store_name};
use crate::registry::apt::{self, AptSuite, Gone, Listing};
use crate::registry::downloads::{Cache, Clients, Expected};
use crate::registry::nix::Nix;
use crate::registry::pip::Pip;
use crate::store::path::{FileIngestion, fixed_output_path};
use crate::store::{Hash, HashAlgo, StorePath};
use crates::LockedCrate;
use debian_fallback::{Lost, VanishedFile};
use progress::{Progress, megabytes};
use session::{Session, parallel};

pub use debian_fallback::Vanished;

#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// Downloads at once.
    pub jobs: usize,
    /// The Python whose pip downloads wheels (default: `python3`).
    pub python: Option<PathBuf>,
    /// A binary cache tried before the registries.
    pub substituter: Option<Substituter>,
    /// Never run pip, apt-get or cargo.
    pub offline: bool,
    /// Only what these cells need; every cell when empty.
    pub cells: Vec<String>,
    /// With `cells`: what their compatibility nodes (`compat.<cell>`) need
    /// too, the other torch releases of their CUDA majors.
    pub compat: bool,
    /// The snapshot archive's base URL ([`crate::registry::snapshot::base`]).
    pub debian_snapshot: Option<String>,
    /// The project directory, named in the re-pin command of [`Vanished`].
    pub project: Option<PathBuf>,
    /// Where the user supplies the archives no registry carries (Python
    /// headers), besides `$CUWHEEL_ARCHIVES`.
    pub archives: Vec<PathBuf>,
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
    /// Of `added`, the files a fallback served for a `.deb` its suite
    /// dropped, by fallback (`Debian trixie-security`, `the snapshot archive`).
    pub from_fallbacks: BTreeMap<String, usize>,
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
    Ok(wanted(lock, None)?.into_iter().map(|w| w.path).collect())
}

/// Every path the lock (and cuwheel's Cargo.lock) pins, with its kind;
/// only the artifacts in `only` where given.
fn wanted(lock: &Lock, only: Option<&BTreeSet<String>>) -> Result<Vec<Wanted>> {
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
        if only.is_some_and(|only| !only.contains(name)) {
            continue;
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

/// Fetches everything `lock` pins (or what `options.cells` need) into the
/// store of `nix`.
pub fn fetch(lock: &Lock, nix: &Nix, options: &FetchOptions) -> Result<Summary> {
    let only = match options.cells.is_empty() {
        true => None,
        false => Some(select::artifacts_for_cells(
            lock,
            &options.cells,
            options.compat,
        )?),
    };
    let wanted = wanted(lock, only.as_ref())?;
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
    let cached = cached_artifacts(lock, &missing, &cache, options.jobs);
    if options.offline {
        check_available_offline(&missing, &cached, options)?;
    }
    let pip = Pip::new(options.python.as_deref());
    let (clients, unreadable) =
        prepare_clients(lock, &missing, &cached, &cache, &pip, &options.archives)?;
    let session = Session {
        nix,
        cache: &cache,
        lock,
        cached,
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
    // A .deb whose suite's index could not be read goes to the fallbacks.
    let mut lost = Vec::new();
    let (files, skipped): (Vec<&Wanted>, Vec<&Wanted>) =
        files.into_iter().partition(|w| match &w.what {
            Kind::Artifact(name) => {
                unreadable_suite(lock, name, &session.cached, &unreadable).is_none()
            }
            _ => true,
        });
    for wanted in skipped {
        let Kind::Artifact(name) = &wanted.what else {
            continue;
        };
        let reason = unreadable_suite(lock, name, &session.cached, &unreadable).map(str::to_owned);
        lost.push(lost_artifact(lock, name, &wanted.path, reason));
    }
    let results = session.run_all(
        &files,
        options.jobs,
        |w| Session::label(w),
        |id, item| one(&session, &clients, id, item),
    );
    for (wanted, result) in files.iter().zip(results) {
        match (result, &wanted.what) {
            (Ok(_), _) => summary.added += 1,
            (Err(error), Kind::Artifact(name)) if error.downcast_ref::<Gone>().is_some() => {
                let gone = error.downcast_ref::<Gone>().expect("a Gone error");
                let why = (gone.listing != Listing::NotListed).then(|| gone.why());
                lost.push(lost_artifact(lock, name, &wanted.path, why));
            }
            (Err(error), _) => failures.push((Session::label(wanted), error)),
        }
    }
    if !lost.is_empty() && !options.offline {
        let base = crate::registry::snapshot::base(options.debian_snapshot.as_deref());
        let (still, served) = debian_fallback::recover(&session, lost, &pip, &base, options.jobs);
        summary.added += served.values().sum::<usize>();
        summary.from_fallbacks = served;
        lost = still;
    }

    // A seed whose artifact is still missing is not cut (its artifact is reported).
    let unserved: BTreeSet<&str> = lost
        .iter()
        .map(|l| l.name)
        .chain(failures.iter().map(|(label, _)| label.as_str()))
        .collect();
    let seeds: Vec<&Wanted> = seeds
        .into_iter()
        .filter(|w| match &w.what {
            Kind::Seed(name) => !unserved.contains(lock.seeds[name].artifact.as_str()),
            _ => true,
        })
        .collect();
    let results = session.run_all(
        &seeds,
        1,
        |w| Session::label(w),
        |id, item| one(&session, &clients, id, item),
    );
    for (wanted, result) in seeds.iter().zip(results) {
        match result {
            Ok(_) => summary.added += 1,
            Err(error) => failures.push((Session::label(wanted), error)),
        }
    }
    summary.downloaded = session.downloaded.load(Ordering::Relaxed);
    verdict(&summary, missing.len(), failures, lost, options)?;
    let fallbacks: Vec<String> = summary
        .from_fallbacks
        .iter()
        .map(|(from, count)| format!("{count} from {from}"))
        .collect();
    eprintln!(
        "fetch: added {} paths ({} downloaded{}), copied {} from the binary cache, {} were \
         already in the store",
        summary.added,
        megabytes(summary.downloaded),
        if fallbacks.is_empty() {
            String::new()
        } else {
            format!("; for .debs their suite dropped: {}", fallbacks.join(", "))
        },
        summary.from_binary_cache,
        summary.present
    );
    Ok(summary)
}

/// Puts one path into the store; returns a note on where it came from.
fn one(session: &Session, clients: &Clients, id: usize, item: &Wanted) -> Result<String> {
    match &item.what {
        Kind::Artifact(name) => {
            session.artifact(id, name, &item.path, clients, &session.pinned_source(name))
        }
        Kind::Seed(name) => session.seed(name, &item.path),
        Kind::Crate(krate) => session.krate(krate, &item.path),
    }
}

fn lost_artifact<'a>(
    lock: &'a Lock,
    name: &str,
    path: &'a StorePath,
    unreadable: Option<String>,
) -> Lost<'a> {
    let (name, artifact) = lock
        .artifacts
        .get_key_value(name)
        .expect("an artifact of the lock");
    Lost {
        name,
        path,
        artifact,
        unreadable,
        tried: Vec::new(),
    }
}

/// The error reading the index of the suite of an uncached `.deb`, if any.
fn unreadable_suite<'a>(
    lock: &Lock,
    name: &str,
    cached: &BTreeMap<String, PathBuf>,
    unreadable: &'a BTreeMap<String, String>,
) -> Option<&'a str> {
    match &lock.artifacts[name].source {
        Source::Debian { suite, .. } if !cached.contains_key(name) => {
            unreadable.get(suite).map(String::as_str)
        }
        _ => None,
    }
}

/// Ok when nothing failed; [`Vanished`] when the only failures are `.deb`s
/// gone from everywhere; else every failure.
fn verdict(
    summary: &Summary,
    missing: usize,
    failures: Vec<(String, anyhow::Error)>,
    lost: Vec<Lost>,
    options: &FetchOptions,
) -> Result<()> {
    if failures.is_empty() && lost.iter().all(|l| l.unreadable.is_none()) {
        if lost.is_empty() {
            return Ok(());
        }
        return Err(Vanished {
            files: lost.iter().map(VanishedFile::of).collect(),
            project: options.project.clone(),
        }
        .into());
    }
    let mut lines: Vec<String> = failures
        .iter()
        .map(|(label, error)| format!("  {label}: {error:#}"))
        .collect();
    for item in &lost {
        let file = VanishedFile::of(item);
        let why = match &item.unreadable {
            Some(why) => why.clone(),
            None => format!("no longer in Debian {}", file.suite),
        };
        let tried = match item.tried.is_empty() {
            true => String::new(),
            false => format!("; also tried: {}", item.tried.join(", ")),
        };
        lines.push(format!(
            "  {}: {} {}: {why}{tried}",
            file.name, file.package, file.version
        ));
    }
    bail!(
        "{} of {} missing paths could not be fetched ({} were added, nothing unverified \
         reached the store):\n{}",
        failures.len() + lost.len(),
        missing,
        summary.added,
        lines.join("\n")
    )
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
    let shown = crate::url::redact(url);
    let paths: Vec<StorePath> = missing.iter().map(|w| w.path.clone()).collect();
    let held: Vec<_> = nix
        .path_infos(url, &paths)
        .with_context(|| format!("cannot read the binary cache {shown}"))?
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
        "fetch: copying {} paths from the binary cache {shown}",
        copied.len()
    );
    nix.copy_from(url, &substituter.nix_options(), &copied)
        .with_context(|| format!("cannot copy from the binary cache {shown}"))?;
    Ok(copied.into_iter().collect())
}

/// The missing artifacts that cuwheel's cache holds with the pinned bytes
/// (each hashed once, on `jobs` threads), by store name.
fn cached_artifacts(
    lock: &Lock,
    missing: &[&Wanted],
    cache: &Cache,
    jobs: usize,
) -> BTreeMap<String, PathBuf> {
    let names: Vec<&String> = missing
        .iter()
        .filter_map(|w| match &w.what {
            Kind::Artifact(name) => Some(name),
            _ => None,
        })
        .collect();
    let found = parallel(&names, jobs, |_, name| {
        cache.cached(&expected(&lock.artifacts[*name]))
    });
    names
        .into_iter()
        .zip(found)
        .filter_map(|(name, path)| Some((name.clone(), path?)))
        .collect()
}

/// Offline, every missing path must come from a local cache: cuwheel's for
/// artifacts, cargo's for crates (a seed is cut from its artifact).
fn check_available_offline(
    missing: &[&Wanted],
    cached: &BTreeMap<String, PathBuf>,
    options: &FetchOptions,
) -> Result<()> {
    let mut unavailable = Vec::new();
    for wanted in missing {
        let available = match &wanted.what {
            Kind::Artifact(name) => cached.contains_key(name),
            Kind::Crate(krate) => {
                crates::in_registry_cache(&crates::cargo_home()?, krate)?.is_some()
            }
            Kind::Seed(_) => true,
        };
        if !available {
            unavailable.push(wanted.path.name().to_owned());
        }
    }
    if !unavailable.is_empty() {
        let cache = match &options.substituter {
            Some(substituter) => {
                format!("the binary cache {}", crate::url::redact(&substituter.url))
            }
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
/// artifact comes from (the seeds' artifacts are among the artifacts); and
/// the suites whose index could not be read, with apt's error.
fn prepare_clients(
    lock: &Lock,
    missing: &[&Wanted],
    cached: &BTreeMap<String, PathBuf>,
    cache: &Cache,
    pip: &Pip,
    archives: &[PathBuf],
) -> Result<(Clients, BTreeMap<String, String>)> {
    let mut suites = BTreeSet::new();
    for wanted in missing {
        if let Kind::Artifact(name) = &wanted.what {
            if let Source::Debian { suite, .. } = &lock.artifacts[name].source {
                if !cached.contains_key(name) {
                    suites.insert(suite.clone());
                }
            }
        }
    }
    let mut clients = Clients {
        pip: pip.clone(),
        apt: BTreeMap::new(),
        archives: crate::registry::archive::archive_dirs(archives),
    };
    let mut unreadable = BTreeMap::new();
    if !suites.is_empty() {
        let mirror = apt::system_mirror()?;
        for suite in suites {
            eprintln!("fetch: reading Debian {suite}'s package index");
            let apt = AptSuite::new(&cache.root, &suite, &apt::suite_mirror(&mirror, &suite))?;
            match apt.update() {
                Ok(()) => {
                    clients.apt.insert(suite, apt);
                }
                Err(error) => {
                    let reason = apt::first_error(&format!("{error:#}"));
                    eprintln!(
                        "fetch: cannot read Debian {suite}'s index; its files go to the \
                         fallbacks: {reason}"
                    );
                    let why = format!("Debian {suite}'s index could not be read: {reason}");
                    unreadable.insert(suite, why);
                }
            }
        }
    }
    Ok((clients, unreadable))
}

fn expected(artifact: &Artifact) -> Expected<'_> {
    Expected {
        file: &artifact.file,
        sha256: &artifact.sha256,
        size: Some(artifact.size),
    }
}
