//! Publishing: wheel files in, a static PyTorch-style package index directory out.
//!
//! In: wheel files and an index directory (new, or one made by an earlier
//! publish). Out: the directory with every wheel stored once beside its
//! `<wheel>.metadata` (PEP 658), a combined simple index at its root and one
//! per CUDA variant (`cu130/`), as [`index`] renders them and [`tree`] lays
//! them out. `pip install --index-url <served DIR>/cu130/ demo-ext` then
//! installs from it.
//!
//! Every wheel is checked before anything is written: each must read and
//! pass [`audit_file`] with the default options (streamed, in bounded
//! memory), declare a PEP 440 `Requires-Python` if any, and not clash with
//! another given wheel. Then, holding the directory's exclusive lock
//! ([`lock`]), so concurrent publishes take turns and each adds to what the
//! one before it made (a publish that waits says so, once): the directory is
//! judged (missing, empty but for the lock file, or an index: judged under
//! the lock, so concurrent first publishes into a new directory all land),
//! the current index is read and verified ([`verify`]:
//! a generation is trusted only when its pages and the wheels they list are
//! exactly what publish wrote), no published wheel may change its bytes,
//! and no file may be in the index's way; the new wheels are written
//! (temporary file, rename), then the new index tree, and one rename makes
//! it current. Killed at any point, the directory still serves the previous
//! index whole; the next publish removes what the killed one left
//! (temporary files, a staged tree). Publishing is additive (the wheels the
//! current index lists stay listed) and idempotent (the same wheels give
//! the same bytes: sorted, no timestamps). Nothing outside `DIR` is followed
//! or removed, and inside it only what publish made.

pub mod binary_cache;
pub mod index;
pub mod index_lock;
pub mod pypi;
pub mod tree;
pub mod verify;

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::audit::{AuditOptions, audit_file};
use crate::registry::downloads::sha256_file;
use crate::store::hash::Hash;
use crate::wheel::WheelFile;
use index::{PublishedWheel, WheelLinks};

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishSummary {
    /// File names of the wheels written by this publish.
    pub added: Vec<String>,
    /// File names given that the index already listed with the same bytes.
    pub already_published: Vec<String>,
    /// How many wheels the index lists now.
    pub listed: usize,
    /// The variant indexes (`cu130`), sorted.
    pub variants: Vec<String>,
    /// False when the index files were already exactly these.
    pub index_changed: bool,
    /// Entries of `DIR/.generations` that publish did not make: left alone.
    pub left_alone: Vec<PathBuf>,
}

/// A wheel that passed the checks, with where it comes from.
struct NewWheel {
    source: PathBuf,
    wheel: PublishedWheel,
    metadata: Vec<u8>,
}

/// Publishes `wheels` into the index directory `dir` (created if missing).
/// Refuses, writing nothing, when any wheel is unreadable, fails the audit or
/// conflicts with the published ones, or when the index does not verify.
/// A publish that has to wait for another says so on stderr, once.
pub fn publish(dir: &Path, wheels: &[PathBuf], links: &WheelLinks) -> Result<PublishSummary> {
    publish_with(dir, wheels, links, &mut |waiting| {
        let _ = writeln!(io::stderr(), "publish: {waiting}");
    })
}

/// [`publish`], telling `on_wait` when it waits for another publish's lock.
pub fn publish_with(
    dir: &Path,
    wheels: &[PathBuf],
    links: &WheelLinks,
    on_wait: &mut dyn FnMut(&index_lock::Waiting),
) -> Result<PublishSummary> {
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) && !dir.is_dir() {
        bail!(
            "{} exists and is not a directory; publish into a directory",
            dir.display()
        );
    }
    // Read-only checks first: a foreign directory gets no lock file. One
    // that has a lock file may be a first publish's, half written: it is
    // judged again under the lock, once that publish is done.
    if let Err(error) = check_index_dir(dir) {
        if !dir.join(index_lock::LOCK_FILE).exists() {
            return Err(error);
        }
    }
    tree::check_generations_dir(dir)?;
    // The slow part, reading only the wheels: before the lock.
    let given = check_wheels(wheels, &Refusal::publish(dir), &AuditOptions::default())?;
    let held = index_lock::lock(dir, on_wait)?;
    let result = publish_locked(dir, given, links);
    if result.is_err() {
        // Leave no trace of a refused publish into a new directory.
        held.remove_new_dir();
    }
    result
}

/// The part of [`publish`] that reads and writes the index, under its lock.
fn publish_locked(dir: &Path, given: Vec<NewWheel>, links: &WheelLinks) -> Result<PublishSummary> {
    check_index_dir(dir)?;
    let published = tree::read_current(dir)?;

    let mut listed: BTreeMap<String, PublishedWheel> = published
        .into_iter()
        .map(|wheel| (wheel.file.clone(), wheel))
        .collect();
    let mut added = Vec::new();
    let mut already_published = Vec::new();
    for new in given {
        match listed.get(&new.wheel.file) {
            Some(old) if old.sha256 == new.wheel.sha256 => {
                already_published.push(new.wheel.file.clone());
            }
            Some(old) => bail!(
                "{}: a different wheel named {} is already published in {} (sha256 {}, this one {}); \
                 installers cache wheels by name, so a published name must keep its bytes: \
                 publish it under a new version or build tag",
                new.source.display(),
                new.wheel.file,
                dir.display(),
                old.sha256,
                new.wheel.sha256
            ),
            None => {
                listed.insert(new.wheel.file.clone(), new.wheel.clone());
                added.push(new);
            }
        }
    }
    let all: Vec<PublishedWheel> = listed.into_values().collect();
    let variants = check_names(&all)?;
    let files = index::render_indexes(&all, links);
    let entries = tree::top_level_entries(&files);
    tree::check_top_level(dir, &entries)?;
    let name = tree::generation_name(&files);
    tree::generation_exists(dir, &name, &files)?;

    // Checked; from here on, write: wheels first, then the index naming them.
    remove_stale_temp_files(dir)?;
    for new in &added {
        store_wheel(dir, new, true)?;
    }
    tree::sync_dir(dir)?;
    let index_changed = tree::current_generation(dir)?.as_deref() != Some(name.as_str());
    if index_changed {
        tree::write_generation(dir, &name, &files)?;
        tree::swap_to(dir, &name, &entries)?;
    }
    let left_alone = tree::remove_other_generations(dir, &name)?;
    Ok(PublishSummary {
        added: added.into_iter().map(|new| new.wheel.file).collect(),
        already_published,
        listed: all.len(),
        variants,
        index_changed,
        left_alone,
    })
}

/// `dir` must be missing, empty, or an index directory.
fn check_index_dir(dir: &Path) -> Result<()> {
    if tree::current_generation(dir)?.is_some() {
        return Ok(());
    }
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut entries = entries.filter(|e| {
                e.as_ref()
                    .map_or(true, |e| e.file_name() != index_lock::LOCK_FILE)
            });
            if entries.next().is_some() {
                bail!(
                    "{} is not empty and holds no index made by cuwheel publish (no {}); \
                     publish into a new or empty directory",
                    dir.display(),
                    tree::CURRENT
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot list {}", dir.display())),
    }
}

/// Reads and audits every wheel; one error listing every refused wheel.
/// How a refusal of [`check_wheels`] reads: `refusing to {action}: … cannot be {done}`.
struct Refusal {
    /// `publish into DIR`, `upload to PyPI`.
    action: String,
    /// `published, so nothing was written`.
    done: &'static str,
}

impl Refusal {
    fn publish(dir: &Path) -> Refusal {
        Refusal {
            action: format!("publish into {}", dir.display()),
            done: "published, so nothing was written",
        }
    }
}

fn check_wheels(
    wheels: &[PathBuf],
    refusal: &Refusal,
    options: &AuditOptions,
) -> Result<Vec<NewWheel>> {
    let mut refused = Vec::new();
    let mut checked: BTreeMap<String, NewWheel> = BTreeMap::new();
    for path in wheels {
        // Opened first (it refuses a FIFO or device without reading it),
        // then hashed: the copy published is checked against this hash.
        let read = WheelFile::open(path)
            .map_err(anyhow::Error::from)
            .and_then(|wheel| {
                let (sha256, size) = sha256_file(path)?;
                let report = audit_file(&wheel, options)?;
                Ok((wheel, report, sha256, size))
            });
        let (archive, report, sha256, size) = match read {
            Ok(read) => read,
            Err(err) => {
                refused.push(format!("{}: cannot be read: {err:#}", path.display()));
                continue;
            }
        };
        if !report.passed {
            refused.push(format!(
                "{} fails the audit:\n{}",
                path.display(),
                report.render().trim_end()
            ));
            continue;
        }
        if let Some(requires) = &archive.metadata().requires_python {
            if let Err(error) = crate::wheel::parse_specifiers(requires) {
                refused.push(format!(
                    "{}: METADATA's Requires-Python: {error}; installers would ignore or \
                     misread it",
                    path.display()
                ));
                continue;
            }
        }
        let new = describe_wheel(path, sha256, size, &archive);
        match checked.get(&new.wheel.file) {
            Some(other) if other.wheel.sha256 != new.wheel.sha256 => refused.push(format!(
                "{} and {} have the same file name but different bytes; publish one of them",
                other.source.display(),
                path.display()
            )),
            Some(_) => {}
            None => {
                checked.insert(new.wheel.file.clone(), new);
            }
        }
    }
    if !refused.is_empty() {
        bail!(
            "refusing to {}: {} of {} wheels cannot be {}\n\n{}\n\n\
             fix or rebuild these wheels (each finding says how), or leave them out",
            refusal.action,
            refused.len(),
            wheels.len(),
            refusal.done,
            refused.join("\n\n")
        );
    }
    Ok(checked.into_values().collect())
}

/// What the index says about a wheel read from `path`: hashes, size,
/// METADATA.
fn describe_wheel(path: &Path, sha256: String, size: u64, archive: &WheelFile) -> NewWheel {
    let metadata = archive.metadata_bytes().to_vec();
    let file = path
        .file_name()
        .and_then(|name| name.to_str())
        .expect("the reader accepted the file name")
        .to_string();
    NewWheel {
        source: path.to_path_buf(),
        wheel: PublishedWheel {
            filename: archive.filename().clone(),
            file,
            sha256,
            size,
            metadata_sha256: Hash::sha256(&metadata).to_hex(),
            requires_python: archive.metadata().requires_python.clone(),
        },
        metadata,
    }
}

/// Project names are the index's directories: none may be a variant's name.
fn check_names(wheels: &[PublishedWheel]) -> Result<Vec<String>> {
    let mut variants: Vec<String> = wheels.iter().filter_map(PublishedWheel::variant).collect();
    variants.sort();
    variants.dedup();
    if let Some(wheel) = wheels
        .iter()
        .find(|w| variants.binary_search(&w.project()).is_ok())
    {
        bail!(
            "{}: the project name `{}` is also the name of a variant index, and both would be \
             the directory `{}/`; rename the project",
            wheel.file,
            wheel.project(),
            wheel.project()
        );
    }
    Ok(variants)
}

/// Copies a wheel and, `with_metadata`, writes its METADATA beside it, each
/// through a temporary file and a rename; the copy's hash is checked before
/// the rename, so a wheel changed since its audit is never stored.
fn store_wheel(dir: &Path, new: &NewWheel, with_metadata: bool) -> Result<()> {
    let target = dir.join(&new.wheel.file);
    let mut temp = temp_file(dir)?;
    let mut source = fs::File::open(&new.source)
        .with_context(|| format!("cannot open {}", new.source.display()))?;
    io::copy(&mut source, temp.as_file_mut())
        .and_then(|_| temp.as_file().sync_all())
        .with_context(|| {
            format!(
                "cannot copy {} to {}",
                new.source.display(),
                temp.path().display()
            )
        })?;
    let (sha256, _) = sha256_file(temp.path())?;
    if sha256 != new.wheel.sha256 {
        bail!(
            "{} changed while it was being published (sha256 {} when audited, {sha256} now); \
             nothing of it was published: publish it again once it is complete",
            new.source.display(),
            new.wheel.sha256
        );
    }
    temp.persist(&target)
        .with_context(|| format!("cannot move the wheel to {}", target.display()))?;
    if !with_metadata {
        return Ok(());
    }

    let metadata_path = dir.join(format!("{}.metadata", new.wheel.file));
    let mut temp = temp_file(dir)?;
    io::Write::write_all(temp.as_file_mut(), &new.metadata)
        .and_then(|()| temp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", temp.path().display()))?;
    temp.persist(&metadata_path)
        .with_context(|| format!("cannot move the metadata to {}", metadata_path.display()))?;
    Ok(())
}

/// Prefix of the temporary files wheels and metadata are written to.
const TEMP_PREFIX: &str = ".publish-";

/// A temporary file in `dir`, readable by all (it will be served).
fn temp_file(dir: &Path) -> Result<tempfile::NamedTempFile> {
    let temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .with_context(|| format!("cannot set the mode of {}", temp.path().display()))?;
    Ok(temp)
}

/// Removes the temporary files of a publish that was killed while writing.
fn remove_stale_temp_files(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}
