//! `cuwheel cache export`: a signed binary cache of everything a lock's
//! wheels are made from and of the slow parts made from it.
//!
//! In: a [`Lock`], the store holding its pinned paths, the flake that builds
//! it, a directory and a secret key. Out: the directory as a Nix binary
//! cache (`file://DIR`, NARs compressed with zstd) holding, with their
//! closures, every pinned path (artifacts, seeds, the driver's crates:
//! those `cuwheel fetch` adds), every toolchain, the Nix-built driver and
//! every kernel object (built first where missing), each signed with the
//! key; and an [`Exported`] summary.
//!
//! Nothing is written before the key has been read and everything has been
//! built. `nix copy` writes each path's NAR before its `.narinfo` and a
//! path's references before it, so an export that fails or is killed half
//! way leaves a smaller cache that is valid as it is; running it again adds
//! what is missing (and signs what an earlier export with another key left
//! unsigned by this one).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::key::public_key_of_secret;
use super::{file_url, unsigned, url_safe};
use crate::fetch::pinned_paths;
use crate::lock::format::Lock;
use crate::store::StorePath;
use crate::store::nix::Nix;

const SYSTEM: &str = "x86_64-linux";

/// What an export put into the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub url: String,
    /// Paths `cuwheel fetch` adds from the lock.
    pub pinned: usize,
    pub toolchains: usize,
    pub kernels: usize,
    /// Every path in the cache's part for this lock (the closure of the above).
    pub paths: usize,
    /// Of those, the ones this export added.
    pub added: usize,
    pub nar_bytes: u64,
    /// Compressed, as stored.
    pub file_bytes: u64,
}

/// Exports into `dir` what `lock` pins and what `flake` builds from it.
pub fn export(
    lock: &Lock,
    nix: &Nix,
    flake: &str,
    dir: &Path,
    key_file: &Path,
) -> Result<Exported> {
    let public_key = public_key_of_secret(key_file)?;
    let key_file = fs::canonicalize(key_file)
        .with_context(|| format!("cannot resolve {}", key_file.display()))?;

    let pinned = pinned_paths(lock)?;
    let present: BTreeSet<StorePath> = nix.valid_paths(&pinned)?.into_iter().collect();
    let absent: Vec<String> = pinned
        .iter()
        .filter(|p| !present.contains(*p))
        .map(StorePath::to_absolute)
        .collect();
    if !absent.is_empty() {
        bail!(
            "{} of the lock's {} pinned paths are not in the store, so they cannot be exported \
             (first: {}); run `cuwheel fetch` first",
            absent.len(),
            pinned.len(),
            absent[0]
        );
    }

    let attrs = |set: &str| -> Result<Vec<String>> {
        let names: Vec<String> = nix
            .eval_json(
                &format!("{flake}#legacyPackages.{SYSTEM}.{set}"),
                Some("builtins.attrNames"),
            )
            .with_context(|| format!("cannot list the {set} of the flake {flake}"))?;
        Ok(names
            .iter()
            .map(|name| format!("{flake}#legacyPackages.{SYSTEM}.{set}.\"{name}\""))
            .collect())
    };
    let toolchains = attrs("toolchains")?;
    let kernels = attrs("kernels")?;
    let mut installables = toolchains.clone();
    installables.extend(kernels.iter().cloned());
    installables.push(format!("{flake}#packages.{SYSTEM}.cuwheel"));
    eprintln!(
        "export: building what is missing of {} toolchains, {} kernel objects and the driver",
        toolchains.len(),
        kernels.len()
    );
    let built = nix
        .build(&installables)
        .with_context(|| format!("cannot build the toolchains, kernels and driver of {flake}"))?;

    let roots: Vec<StorePath> = pinned
        .iter()
        .cloned()
        .chain(built)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let closure: Vec<StorePath> = nix
        .path_infos(None, &roots, true)?
        .iter()
        .map(|info| info.path.parse())
        .collect::<Result<_, _>>()
        .context("Nix reported something that is not a store path")?;

    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url = file_url(
        &fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?,
    )?;
    let before = nix.path_infos(Some(&url), &closure, false)?;
    let had = before.iter().filter(|info| info.valid).count();
    eprintln!(
        "export: copying {} of {} store paths into {url}",
        closure.len() - had,
        closure.len()
    );
    // The key signs each path as it is written.
    let writer = format!("{url}?compression=zstd&secret-key={}", url_safe(&key_file)?);
    nix.copy_to(&writer, &roots)?;
    // Paths an earlier export wrote are skipped by the copy: sign them too.
    nix.sign(&url, &key_file, &closure)?;

    let after = nix.path_infos(Some(&url), &closure, false)?;
    if let Some(missing) = after.iter().find(|info| !info.valid) {
        bail!(
            "{} is not in {url} after the copy; run the export again",
            missing.path
        );
    }
    let bad = unsigned(nix, &public_key, &after)?;
    if !bad.is_empty() {
        bail!(
            "{} paths in {url} carry no valid signature by {} after signing (first: {}); \
             check that {} is the key you meant",
            bad.len(),
            public_key.name,
            bad[0].to_absolute(),
            key_file.display()
        );
    }
    Ok(Exported {
        url,
        pinned: pinned.len(),
        toolchains: toolchains.len(),
        kernels: kernels.len(),
        paths: after.len(),
        added: after.len() - had,
        nar_bytes: after.iter().map(|info| info.nar_size).sum(),
        file_bytes: after.iter().filter_map(|info| info.download_size).sum(),
    })
}
