//! `cuwheel cache export`, a project's stage beside publishing its wheels: a signed binary cache of everything a lock's
//! wheels are made from and of the slow parts made from it, or of what some
//! cells' own derivations take as inputs.
//!
//! In: a [`Lock`], the store holding its pinned paths, the flake that builds
//! it, a directory, a secret key and a [`Scope`]. Out: the directory as a
//! Nix binary cache (`file://DIR`, NARs compressed with zstd; serve it over
//! HTTP for other machines) holding, with their closures and each signed
//! with the key:
//! - [`Scope::Lock`]: every pinned path (artifacts, seeds, cuwheel's own
//!   `nix/driver.lock` and the driver's crates: those `cuwheel fetch` adds),
//!   every toolchain, the Nix-built driver and every kernel object (built
//!   first where missing);
//! - [`Scope::Cells`]: every derivation output that the cells' own nodes
//!   (binding, link, symbol tables, wheel, audit) take as input — their toolchains, kernel
//!   objects, the seeds and the driver — so that a store substituting from
//!   the cache builds only those nodes (and the plan); no pinned artifact,
//!   so such a cache cannot fill `cuwheel fetch --offline`;
//!
//! and an [`Exported`] summary.
//!
//! Nothing is written before the key has been read and everything has been
//! built. `nix copy` writes each path's NAR before its `.narinfo` and a
//! path's references before it, so an export that fails or is killed half
//! way leaves a smaller cache that is valid as it is; running it again adds
//! what is missing (and signs what an earlier export with another key left
//! unsigned by this one).

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::cache::key::public_key_of_secret;
use crate::cache::{file_url, unsigned, url_safe};
use crate::fetch::pinned_paths;
use crate::lock::format::Lock;
use crate::plan::Plan;
use crate::plan::kernel::NAME_PREFIX;
use crate::registry::driver::DriverLock;
use crate::registry::nix::Nix;
use crate::store::StorePath;

const SYSTEM: &str = "x86_64-linux";

/// What an export covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// All the lock's wheels are made from (see the module doc).
    Lock,
    /// What these cells' own nodes take as inputs (see the module doc).
    Cells(Vec<String>),
}

/// What an export was asked for, before closures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    Lock {
        /// Paths `cuwheel fetch` adds from the lock.
        pinned: usize,
        toolchains: usize,
        kernels: usize,
    },
    Cells {
        cells: Vec<String>,
        kernels: usize,
        /// The other inputs: toolchains, seeds and the driver.
        others: usize,
    },
}

impl fmt::Display for Contents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contents::Lock {
                pinned,
                toolchains,
                kernels,
            } => write!(
                f,
                "{pinned} pinned, {toolchains} toolchains, {kernels} kernel objects, the driver"
            ),
            Contents::Cells {
                cells,
                kernels,
                others,
            } => write!(
                f,
                "the inputs of cell {}: {kernels} kernel objects and {others} toolchains, seeds \
                 and the driver",
                cells.join(", ")
            ),
        }
    }
}

/// What an export put into the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub url: String,
    pub contents: Contents,
    /// Every path in the cache's part for this export (the closure of the above).
    pub paths: usize,
    /// Of those, the ones this export added.
    pub added: usize,
    pub nar_bytes: u64,
    /// Compressed, as stored.
    pub file_bytes: u64,
}

/// Exports into `dir` what `scope` covers of `lock` and `flake`.
pub fn export(
    lock: &Lock,
    nix: &Nix,
    flake: &str,
    dir: &Path,
    key_file: &Path,
    scope: &Scope,
) -> Result<Exported> {
    let public_key = public_key_of_secret(key_file)?;
    let key_file = fs::canonicalize(key_file)
        .with_context(|| format!("cannot resolve {}", key_file.display()))?;

    let (roots, contents) = match scope {
        Scope::Lock => lock_roots(lock, nix, flake)?,
        Scope::Cells(cells) => cell_roots(nix, flake, cells)?,
    };
    let roots: Vec<StorePath> = roots
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let closure: Vec<StorePath> = nix.closure(&roots)?;

    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url = file_url(
        &fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?,
    )?;
    let before = nix.path_infos(&url, &closure)?;
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

    let after = nix.path_infos(&url, &closure)?;
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
        contents,
        paths: after.len(),
        added: after.len() - had,
        nar_bytes: after.iter().map(|info| info.nar_size).sum(),
        file_bytes: after.iter().filter_map(|info| info.download_size).sum(),
    })
}

/// Every pinned path (which must be in the store), and every toolchain,
/// kernel object and the driver, built where missing.
fn lock_roots(lock: &Lock, nix: &Nix, flake: &str) -> Result<(Vec<StorePath>, Contents)> {
    let mut pinned = pinned_paths(lock)?;
    pinned.extend(pinned_paths(&DriverLock::embedded()?.pins())?);
    pinned.sort();
    pinned.dedup();
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
    installables.push(format!("{flake}#packages.{SYSTEM}.driver"));
    eprintln!(
        "export: building what is missing of {} toolchains, {} kernel objects and the driver",
        toolchains.len(),
        kernels.len()
    );
    let built = nix
        .build(&installables)
        .with_context(|| format!("cannot build the toolchains, kernels and driver of {flake}"))?;
    let contents = Contents::Lock {
        pinned: pinned.len(),
        toolchains: toolchains.len(),
        kernels: kernels.len(),
    };
    Ok((pinned.into_iter().chain(built).collect(), contents))
}

/// The outputs of every derivation the cells' own nodes take as input,
/// other than those nodes themselves, built where missing.
fn cell_roots(nix: &Nix, flake: &str, cells: &[String]) -> Result<(Vec<StorePath>, Contents)> {
    let plan_attr = format!("{flake}#legacyPackages.{SYSTEM}.plan");
    let plan_file = nix
        .build(std::slice::from_ref(&plan_attr))
        .with_context(|| format!("cannot build the plan of the flake {flake}"))?;
    let plan_file = plan_file
        .first()
        .with_context(|| format!("`nix build {plan_attr}` built nothing"))?;
    let plan_path = nix.real_path(plan_file);
    let plan: Plan = serde_json::from_str(
        &fs::read_to_string(&plan_path)
            .with_context(|| format!("cannot read {}", plan_path.display()))?,
    )
    .with_context(|| format!("{} is not a plan cuwheel can read", plan_path.display()))?;

    let own = own_nodes(&plan, cells)
        .with_context(|| format!("cannot export the cells' inputs of the flake {flake}"))?;
    let list: Vec<String> = own.iter().map(|name| format!("\"{name}\"")).collect();
    let drvs: Vec<String> = nix
        .eval_json(
            &format!("{flake}#legacyPackages.{SYSTEM}.nodes"),
            Some(&format!(
                "nodes: map (name: nodes.${{name}}.drvPath) [ {} ]",
                list.join(" ")
            )),
        )
        .with_context(|| {
            format!(
                "cannot evaluate the nodes of {} in {flake}",
                cells.join(", ")
            )
        })?;
    let drvs: Vec<StorePath> = drvs
        .iter()
        .map(|d| d.parse())
        .collect::<Result<_, _>>()
        .context("Nix reported a derivation path that is not a store path")?;
    let own_drvs: BTreeSet<&StorePath> = drvs.iter().collect();
    let mut inputs = BTreeSet::new();
    for drv in &drvs {
        let parsed = nix.read_derivation(drv)?;
        inputs.extend(
            parsed
                .input_drvs
                .into_keys()
                .filter(|input| !own_drvs.contains(input)),
        );
    }
    let inputs: Vec<StorePath> = inputs.into_iter().collect();
    let kernels = inputs
        .iter()
        .filter(|drv| drv.name().starts_with(NAME_PREFIX))
        .count();
    eprintln!(
        "export: building what is missing of the {} inputs of cell {}",
        inputs.len(),
        cells.join(", ")
    );
    let built = nix.realise(&inputs).with_context(|| {
        format!(
            "cannot build the inputs of cell {} (a missing pinned artifact: run `cuwheel fetch`)",
            cells.join(", ")
        )
    })?;
    let contents = Contents::Cells {
        cells: cells.to_vec(),
        kernels,
        others: inputs.len() - kernels,
    };
    Ok((built, contents))
}

/// The names of the nodes `cells` build themselves (bindings, links, wheel,
/// audit); an unknown cell is an error that lists the plan's cells.
fn own_nodes(plan: &Plan, cells: &[String]) -> Result<BTreeSet<String>> {
    let mut own = BTreeSet::new();
    for cell in cells {
        let Some(nodes) = plan.cells.get(cell) else {
            let known: Vec<&str> = plan.cells.keys().map(String::as_str).collect();
            bail!(
                "the plan has no cell `{cell}`; its cells are: {} (`cuwheel plan` lists them)",
                known.join(", ")
            );
        };
        // The symbol tables its audit reads are its own too: a store
        // substituting from the cache builds them (cheap) from the torch,
        // CUDA and sysroot toolchains the cache holds, as `cuwheel
        // reproduce` does.
        own.extend(
            nodes
                .bindings
                .iter()
                .chain(&nodes.links)
                .chain(&nodes.symbols)
                .chain([&nodes.wheel, &nodes.audit])
                .cloned(),
        );
    }
    // Node names are store names, so they stand in a Nix string as they are.
    if let Some(bad) = own.iter().find(|name| {
        !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-._?=".contains(c))
    }) {
        bail!("the plan names a node `{bad}`, which is not a store name; run `cuwheel plan`");
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn plan(link: &str) -> Plan {
        let cell = crate::plan::test_plan_cell(
            &["kernel-cuda130-axpby"],
            [
                "binding-cuda130-py313",
                link,
                "wheel-cu130-py313",
                "audit-cu130-py313",
            ],
        );
        Plan {
            cells: BTreeMap::from([("cu130-py313".to_string(), cell)]),
            nodes: BTreeMap::new(),
            pypi: None,
        }
    }

    #[test]
    fn a_cells_own_nodes_are_its_binding_link_wheel_and_audit() {
        let own = own_nodes(&plan("link-cu130-py313"), &["cu130-py313".into()]).unwrap();
        assert_eq!(
            own.into_iter().collect::<Vec<_>>(),
            [
                "audit-cu130-py313",
                "binding-cuda130-py313",
                "link-cu130-py313",
                "wheel-cu130-py313"
            ]
        );
    }

    #[test]
    fn an_unknown_cell_is_refused_naming_the_cells() {
        let err = own_nodes(&plan("link-cu130-py313"), &["cu999-py313".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the plan has no cell `cu999-py313`; its cells are: cu130-py313 (`cuwheel plan` \
             lists them)"
        );
        let err = own_nodes(&plan("link\"x"), &["cu130-py313".into()]).unwrap_err();
        assert!(err.to_string().contains("`link\"x`"), "{err}");
    }
}
