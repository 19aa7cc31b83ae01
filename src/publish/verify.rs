//! Trusting a generation only after verifying it.
//!
//! In: an index directory and the name of one of its generations. Out: the
//! wheels that generation lists, once it is shown to be what `publish`
//! wrote: its files hash to its name ([`super::tree::generation_name`]),
//! they are exactly the pages `publish` renders for the wheels they list
//! (so every page agrees with every other), and each listed wheel and its
//! `.metadata` are regular files in the directory with the size and sha256
//! the pages record. Anything else — a file changed, added or removed, a
//! symlink inside, a planted tree — is an error naming what differs.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::index::{
    JSON_PAGE, ProjectList, ProjectPage, PublishedWheel, WheelLinks, render_indexes,
};
use super::tree::generation_name;
use crate::registry::downloads::sha256_file;

/// Every regular file under `root`, by `/`-separated relative path; a
/// symlink or any other kind of entry inside is an error.
pub fn read_tree(root: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            let name = entry.file_name();
            let name = name.to_str().with_context(|| {
                format!("{} has a name that is not UTF-8", entry.path().display())
            })?;
            let relative = format!("{prefix}{name}");
            let kind = entry
                .file_type()
                .with_context(|| format!("cannot stat {}", entry.path().display()))?;
            if kind.is_dir() {
                dirs.push((entry.path(), format!("{relative}/")));
            } else if kind.is_file() {
                let bytes = fs::read(entry.path())
                    .with_context(|| format!("cannot read {}", entry.path().display()))?;
                files.insert(relative, bytes);
            } else {
                bail!(
                    "{} is not a regular file or directory (publish writes only those)",
                    entry.path().display()
                );
            }
        }
    }
    Ok(files)
}

/// The wheels generation `name` of `dir` lists, verified as the module says.
pub fn verified_wheels(dir: &Path, name: &str) -> Result<Vec<PublishedWheel>> {
    let root = dir.join(super::tree::GENERATIONS).join(name);
    check(dir, name, &root).with_context(|| {
        format!(
            "the current index of {} ({}) does not verify, so publish will not build on it: it \
             was changed or planted by something other than cuwheel publish. Restore the \
             directory from a copy, or publish every wheel into a new directory",
            dir.display(),
            root.display()
        )
    })
}

fn check(dir: &Path, name: &str, root: &Path) -> Result<Vec<PublishedWheel>> {
    let metadata =
        fs::symlink_metadata(root).with_context(|| format!("cannot read {}", root.display()))?;
    if !metadata.is_dir() {
        bail!("{} is not a directory", root.display());
    }
    let files = read_tree(root)?;
    let hashed = generation_name(&files);
    if hashed != name {
        bail!(
            "its files hash to {hashed}, not to its name {name}: a page was changed, added or \
             removed"
        );
    }
    let list: ProjectList = page(&files, JSON_PAGE)?;
    let mut wheels = Vec::new();
    let mut links = None;
    for project in &list.projects {
        let path = format!("{}/{JSON_PAGE}", project.name);
        let page: ProjectPage = page(&files, &path)?;
        if links.is_none() {
            links = page
                .files
                .first()
                .and_then(|f| WheelLinks::infer(&f.filename, &f.url, 1));
        }
        wheels.extend(
            page.wheels()
                .map_err(|reason| anyhow::anyhow!("{path}: {reason}"))?,
        );
    }
    let links = links.unwrap_or(WheelLinks::Relative);
    if render_indexes(&wheels, &links) != files {
        bail!(
            "its pages are not the ones publish writes for the {} wheels they list: they \
             disagree with each other",
            wheels.len()
        );
    }
    for wheel in &wheels {
        check_file(dir, &wheel.file, Some(wheel.size), &wheel.sha256)?;
        check_file(
            dir,
            &format!("{}.metadata", wheel.file),
            None,
            &wheel.metadata_sha256,
        )?;
    }
    Ok(wheels)
}

fn page<T: serde::de::DeserializeOwned>(
    files: &BTreeMap<String, Vec<u8>>,
    path: &str,
) -> Result<T> {
    let bytes = files
        .get(path)
        .with_context(|| format!("it has no {path}"))?;
    serde_json::from_slice(bytes).with_context(|| format!("its {path} is not a PEP 691 page"))
}

/// `dir/file` must be a regular file with this size and sha256.
fn check_file(dir: &Path, file: &str, size: Option<u64>, sha256: &str) -> Result<()> {
    let path = dir.join(file);
    let metadata = fs::symlink_metadata(&path)
        .with_context(|| format!("it lists {file}, but {} cannot be read", path.display()))?;
    if !metadata.is_file() {
        bail!(
            "it lists {file}, but {} is not a regular file",
            path.display()
        );
    }
    if size.is_some_and(|size| size != metadata.len()) {
        bail!(
            "it lists {file} with {} bytes, but {} has {}",
            size.unwrap_or_default(),
            path.display(),
            metadata.len()
        );
    }
    let (actual, _) = sha256_file(&path)?;
    if actual != sha256 {
        bail!(
            "it lists {file} with sha256 {sha256}, but {} has {actual}",
            path.display()
        );
    }
    Ok(())
}
