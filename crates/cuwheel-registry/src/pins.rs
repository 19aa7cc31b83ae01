//! Turning what a suite's index says into the lock's artifacts, shared by
//! `cuwheel lock` and `cuwheel lock --refresh`, so that both pin a toolchain
//! the same way.
//!
//! In: a suite's [`Index`], a toolchain kind's recipe (`data/debian.toml`),
//! the toolchain's users. Out: [`Artifact`]s, and the lock's artifact map
//! with one more file in it. Pure.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use super::debian::{self, DebianData, Index, Package};
use crate::lock::format::{Artifact, Source, store_name};

/// The artifacts of the `kind` toolchain of `suite`: the dependency closure
/// of its recipe's roots in `index`, each used by `users`.
pub fn debian_closure(
    data: &DebianData,
    index: &Index,
    kind: &str,
    suite: &str,
    gcc: Option<u32>,
    python: Option<&str>,
    users: &BTreeSet<String>,
) -> Result<Vec<Artifact>> {
    let recipe = data.kind(kind);
    let roots = recipe.roots(gcc, python);
    let packages =
        debian::closure(index, &roots, &recipe.excludes(), recipe.follow).map_err(|problems| {
            let lines: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
            anyhow::anyhow!(
                "Debian {suite} cannot satisfy the {kind} toolchain ({}):\n{}\n\
                 Check that the mirror carries {suite} with main, contrib and non-free, or \
                 exclude the package in crates/cuwheel-build/src/lock/data/debian.toml with \
                 the reason",
                roots.join(", "),
                lines.join("\n")
            )
        })?;
    Ok(packages
        .into_iter()
        .map(|package| debian_artifact(package, suite, users))
        .collect())
}

/// One package of `suite`'s index as an artifact used by `users`.
pub fn debian_artifact(package: &Package, suite: &str, users: &BTreeSet<String>) -> Artifact {
    Artifact {
        source: Source::Debian {
            suite: suite.to_owned(),
            package: package.name.clone(),
            version: package.version.clone(),
            architecture: package.architecture.clone(),
        },
        file: package.download_name(),
        sha256: package.sha256.clone(),
        size: package.size,
        used_by: users.clone(),
    }
}

/// Whether `index` lists exactly the pinned file: its package at its
/// version with its sha256 (a PyPI file never is).
pub fn listed(index: &Index, artifact: &Artifact) -> bool {
    match &artifact.source {
        Source::Debian {
            package, version, ..
        } => index
            .get(package)
            .is_some_and(|p| &p.version == version && p.sha256 == artifact.sha256),
        Source::Pypi { .. } | Source::Archive { .. } => false,
    }
}

/// Records `artifact` in `artifacts`; returns its store name. The same file
/// from two suites (Debian copies a package between suites unchanged) is one
/// artifact, kept under the first suite by name, used by both's users.
pub fn add(artifacts: &mut BTreeMap<String, Artifact>, artifact: Artifact) -> Result<String> {
    let name = store_name(&artifact.file);
    match artifacts.get_mut(&name) {
        None => {
            artifacts.insert(name.clone(), artifact);
        }
        Some(known) if known.sha256 == artifact.sha256 && known.size == artifact.size => {
            known.used_by.extend(artifact.used_by);
            if let (Source::Debian { suite: a, .. }, Source::Debian { suite: b, .. }) =
                (&mut known.source, &artifact.source)
            {
                if b < a {
                    *a = b.clone();
                }
            }
        }
        Some(known) => bail!(
            "two different files are both called {}: sha256 {} and {}; cuwheel cannot pin \
             both under one store name",
            artifact.file,
            known.sha256,
            artifact.sha256
        ),
    }
    Ok(name)
}
