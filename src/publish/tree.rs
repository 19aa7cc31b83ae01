//! The index directory on disk and its atomic swap.
//!
//! In: an index directory and the index files of a new state. Out: that
//! state made current in one `rename(2)`, or the current state read back.
//!
//! Layout of the directory `DIR` that a static file server serves:
//!
//! ```text
//! DIR/<wheel>.whl, DIR/<wheel>.whl.metadata   every wheel, stored once, never rewritten
//! DIR/.generations/<hash>/                    one complete index tree, named by its content
//! DIR/.current -> .generations/<hash>         the index being served
//! DIR/index.html -> .current/index.html       one fixed link per top-level index entry:
//! DIR/index.json -> .current/index.json         the combined project list, each variant
//! DIR/cu130      -> .current/cu130              directory and each project directory
//! DIR/demo-ext   -> .current/demo-ext
//! ```
//!
//! A new state is written into `.generations/.staging-*`, renamed to its
//! content name, and made current by renaming a new `.current` symlink over
//! the old one (all under [`super::lock`]'s lock). `.generations` must be a
//! real directory inside `DIR`: a symlink there is refused, never followed.
//! A generation is trusted only once [`super::verify`] has checked it, and
//! only generations that verify, and staging directories, are ever removed;
//! anything else in `.generations` is left alone and reported.
//! Readers: readers resolve `.current` on every request, so they see the
//! old index or the new one, whole. The top-level links never change target;
//! a new one (a new project or variant) dangles until the swap, when nothing
//! yet names it. Normalized project names and `cu…` variants are made of
//! `[a-z0-9-]`, so they cannot collide with the wheels (`.whl`) or with the
//! dot-names above.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::index::PublishedWheel;
use super::verify;
use crate::store::hash::Hash;

/// The symlink naming the current generation.
pub const CURRENT: &str = ".current";
/// The directory holding the generations.
pub const GENERATIONS: &str = ".generations";
/// Prefix of a generation being written.
const STAGING_PREFIX: &str = ".staging-";
/// The new `.current` symlink before it is renamed into place.
const CURRENT_NEXT: &str = ".current.next";

/// The generation `.current` names, if `dir` has an index.
pub fn current_generation(dir: &Path) -> Result<Option<String>> {
    let link = dir.join(CURRENT);
    match fs::read_link(&link) {
        Ok(target) => {
            let name = target
                .strip_prefix(GENERATIONS)
                .ok()
                .and_then(|rest| rest.to_str())
                .filter(|name| !name.is_empty() && !name.contains('/'))
                .with_context(|| {
                    format!(
                        "{} points to {}, not into {GENERATIONS}/; it was not made by cuwheel publish: \
                         restore it or publish into a new directory",
                        link.display(),
                        target.display()
                    )
                })?;
            Ok(Some(name.to_string()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read the symlink {}", link.display())),
    }
}

/// Every wheel the current index of `dir` lists, once the current
/// generation verifies; empty when `dir` has no index yet.
pub fn read_current(dir: &Path) -> Result<Vec<PublishedWheel>> {
    check_generations_dir(dir)?;
    match current_generation(dir)? {
        None => Ok(Vec::new()),
        Some(name) => verify::verified_wheels(dir, &name),
    }
}

/// `DIR/.generations`, if it exists, must be a real directory: a symlink
/// there would make publish write and delete outside `DIR`.
pub fn check_generations_dir(dir: &Path) -> Result<()> {
    let path = dir.join(GENERATIONS);
    match fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(metadata) if metadata.file_type().is_symlink() => bail!(
            "{} is a symlink (to {}); publish keeps its generations in a real directory inside \
             the index and never follows a link out of it. Nothing was written or removed: \
             replace the link with the directory it should be",
            path.display(),
            fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "an unreadable target".to_string())
        ),
        Ok(_) => bail!(
            "{} is not a directory; it was not made by cuwheel publish: move it away or publish \
             into a new directory",
            path.display()
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The content name of an index tree: the sha256 of its paths and bytes.
pub fn generation_name(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut all = Vec::new();
    for (path, bytes) in files {
        all.extend_from_slice(path.as_bytes());
        all.push(0);
        all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        all.extend_from_slice(bytes);
    }
    Hash::sha256(&all).to_hex()[..32].to_string()
}

/// The top-level entries of an index tree (`index.html`, `cu130`, `demo-ext`).
pub fn top_level_entries(files: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut entries: Vec<String> = files
        .keys()
        .map(|path| {
            path.split('/')
                .next()
                .expect("split yields one part")
                .to_string()
        })
        .collect();
    entries.dedup();
    entries
}

/// The link `DIR/<entry>` should be: `.current/<entry>`.
fn entry_target(entry: &str) -> PathBuf {
    Path::new(CURRENT).join(entry)
}

/// Refuses a top-level entry of `dir` that is in the way of an index entry:
/// anything but the link cuwheel makes there.
pub fn check_top_level(dir: &Path, entries: &[String]) -> Result<()> {
    for entry in entries {
        let path = dir.join(entry);
        match fs::read_link(&path) {
            Ok(target) if target == entry_target(entry) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            _ => bail!(
                "{} is in the way: the index needs a symlink there to {}; \
                 move it away or publish into a new directory",
                path.display(),
                entry_target(entry).display()
            ),
        }
    }
    Ok(())
}

/// Writes `files` as the generation named `name`, unless a directory of
/// that name holds exactly these files already; one that holds anything
/// else was not written by publish and is refused, left as it is.
pub fn write_generation(dir: &Path, name: &str, files: &BTreeMap<String, Vec<u8>>) -> Result<()> {
    let generations = dir.join(GENERATIONS);
    let final_path = generations.join(name);
    if generation_exists(dir, name, files)? {
        return Ok(());
    }
    fs::create_dir_all(&generations)
        .with_context(|| format!("cannot create {}", generations.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(&generations)
        .with_context(|| {
            format!(
                "cannot create a staging directory in {}",
                generations.display()
            )
        })?;
    for (relative, bytes) in files {
        let path = staging.path().join(relative);
        let parent = path.parent().expect("a file in the staging directory");
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let mut file =
            fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // Served to anyone: a temporary directory starts private (0700).
    make_readable(staging.path())?;
    fs::rename(staging.path(), &final_path).with_context(|| {
        format!(
            "cannot rename {} to {}",
            staging.path().display(),
            final_path.display()
        )
    })?;
    // Renamed away: nothing is left for the guard to delete.
    let _ = staging.keep();
    sync_dir(&generations)
}

/// True when generation `name` exists holding exactly `files`, false when
/// there is nothing of that name; an error when something else is there:
/// publish did not write it, so it is neither trusted nor removed.
pub fn generation_exists(
    dir: &Path,
    name: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<bool> {
    let path = dir.join(GENERATIONS).join(name);
    match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Ok(metadata)
            if metadata.is_dir() && verify::read_tree(&path).ok().as_ref() == Some(files) =>
        {
            Ok(true)
        }
        Ok(_) => bail!(
            "{} exists but does not hold the index this publish computed under that name (its \
             content hash); it was not written by cuwheel publish, so it is neither trusted nor \
             removed: move it away and publish again",
            path.display()
        ),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Opens every directory of a tree to everyone (0755).
fn make_readable(dir: &Path) -> Result<()> {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot set the mode of {}", dir.display()))?;
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path());
            }
        }
    }
    Ok(())
}

/// Makes the generation `name` current: every top-level link exists, then
/// one rename swaps `.current`.
pub fn swap_to(dir: &Path, name: &str, entries: &[String]) -> Result<()> {
    for entry in entries {
        let path = dir.join(entry);
        if fs::symlink_metadata(&path).is_err() {
            symlink(entry_target(entry), &path)
                .with_context(|| format!("cannot create the symlink {}", path.display()))?;
        }
    }
    let next = dir.join(CURRENT_NEXT);
    // Left by a publish that was stopped before its swap.
    match fs::remove_file(&next) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", next.display())),
    }
    symlink(Path::new(GENERATIONS).join(name), &next)
        .with_context(|| format!("cannot create the symlink {}", next.display()))?;
    let current = dir.join(CURRENT);
    fs::rename(&next, &current)
        .with_context(|| format!("cannot rename {} to {}", next.display(), current.display()))?;
    sync_dir(dir)
}

/// Removes every generation but `keep` that verifies as one publish wrote
/// (its files hash to its name), and what stopped publishes left staged;
/// returns the entries left alone because publish did not make them.
pub fn remove_other_generations(dir: &Path, keep: &str) -> Result<Vec<PathBuf>> {
    let generations = dir.join(GENERATIONS);
    let entries = fs::read_dir(&generations)
        .with_context(|| format!("cannot list {}", generations.display()))?;
    let mut left_alone = Vec::new();
    let mut names: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", generations.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        names.push((name, entry.path()));
    }
    names.sort();
    for (name, path) in names {
        if name == keep {
            continue;
        }
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        let ours = is_dir
            && (name.starts_with(STAGING_PREFIX)
                || (is_generation_name(&name)
                    && verify::read_tree(&path)
                        .is_ok_and(|files| generation_name(&files) == name)));
        if ours {
            fs::remove_dir_all(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        } else {
            left_alone.push(path);
        }
    }
    Ok(left_alone)
}

/// 32 lowercase hex digits, as [`generation_name`] writes.
fn is_generation_name(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Flushes a directory's entries (renames, new links) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_name_depends_on_paths_and_bytes() {
        let a = BTreeMap::from([("index.html".to_string(), b"x".to_vec())]);
        let b = BTreeMap::from([("index.json".to_string(), b"x".to_vec())]);
        let c = BTreeMap::from([("index.html".to_string(), b"y".to_vec())]);
        assert_eq!(generation_name(&a), generation_name(&a.clone()));
        assert_ne!(generation_name(&a), generation_name(&b));
        assert_ne!(generation_name(&a), generation_name(&c));
        assert_eq!(generation_name(&a).len(), 32);
    }

    #[test]
    fn top_level_entries_are_the_first_path_parts() {
        let files: BTreeMap<String, Vec<u8>> = [
            "cu130/demo-ext/index.html",
            "cu130/index.html",
            "demo-ext/index.html",
            "index.html",
            "index.json",
        ]
        .into_iter()
        .map(|p| (p.to_string(), Vec::new()))
        .collect();
        assert_eq!(
            top_level_entries(&files),
            ["cu130", "demo-ext", "index.html", "index.json"]
        );
    }
}
