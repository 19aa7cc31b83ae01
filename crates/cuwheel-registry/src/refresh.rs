//! `cuwheel lock --refresh`: re-pin only the Debian files that their suite
//! no longer carries (Debian drops superseded versions at every point
//! release and security update).
//!
//! In: a project whose `[tool.cuwheel]` is the one its `cuwheel.lock` was
//! written from, and the mirror. Out: the lock with each toolchain that lost
//! a pin resolved again from its suite's current index (and each seed whose
//! `.deb` is gone cut again from the current one), the index date of each
//! suite that was re-pinned from, and the list of [`Change`]s; every other
//! toolchain, seed and artifact (the PyPI ones included) byte-identical.
//! When nothing is gone, the lock is not written at all.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::debian::{DebianData, Index};
use super::downloads::{Cache, Clients, Expected};
use super::pip::Pip;
use crate::lock::format::{Artifact, Lock, Source, SuiteIndex, Toolchain};
use crate::lock::toolkits::Pins;
use crate::lock::{LOCK_FILE, config_sha256};
use crate::resolve::LockOptions;
use crate::{apt, pins, tree};

/// One pinned package whose version changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub package: String,
    /// `None`: the package is new in the closure.
    pub old: Option<String>,
    /// `None`: the package left the closure.
    pub new: Option<String>,
    pub suite: String,
    /// `toolchain rust-trixie`, `seed busybox`.
    pub holder: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (package, suite, holder) = (&self.package, &self.suite, &self.holder);
        match (&self.old, &self.new) {
            (Some(old), Some(new)) => write!(f, "{package} {old} → {new} ({suite}, {holder})"),
            (None, Some(new)) => write!(f, "{package} {new} is new ({suite}, {holder})"),
            (Some(old), None) => {
                write!(f, "{package} {old} is no longer needed ({suite}, {holder})")
            }
            (None, None) => write!(f, "{package} ({suite}, {holder})"),
        }
    }
}

/// What a refresh did.
#[derive(Debug)]
pub struct Refreshed {
    pub lock: Lock,
    pub path: PathBuf,
    /// The pinned files their suite no longer carries (store names).
    pub vanished: BTreeSet<String>,
    pub changes: Vec<Change>,
}

/// How one Debian toolchain is resolved: its kind's recipe and arguments.
struct Recipe<'a> {
    kind: &'static str,
    suite: &'a str,
    gcc: Option<u32>,
    python: Option<&'a str>,
}

/// The recipe of a toolchain made of one suite's packages; `None` for the
/// PyPI kinds.
fn recipe<'a>(name: &str, toolchain: &'a Toolchain) -> Result<Option<Recipe<'a>>> {
    Ok(Some(match toolchain {
        Toolchain::Gcc {
            suite, gcc, target, ..
        } => Recipe {
            kind: super::debian::gcc_recipe(*target),
            suite,
            gcc: Some(gcc.parse().with_context(|| {
                format!("cuwheel.lock: toolchain {name} has gcc `{gcc}`, which is not a number")
            })?),
            python: None,
        },
        Toolchain::Cuda(cuda) => match cuda.source().debian_suite(&cuda.fields) {
            Some(suite) => Recipe {
                kind: cuda.source().kind(),
                suite,
                gcc: None,
                python: None,
            },
            None => return Ok(None),
        },
        Toolchain::PythonHeaders { suite, version, .. } => Recipe {
            kind: "python-headers",
            suite,
            gcc: None,
            python: Some(version),
        },
        Toolchain::Rust { suite, .. } => Recipe {
            kind: "rust",
            suite,
            gcc: None,
            python: None,
        },
        Toolchain::Torch { .. } | Toolchain::PythonArchive { .. } => return Ok(None),
    }))
}

/// The cells whose roles name `toolchain`.
fn users_of(lock: &Lock, toolchain: &str) -> BTreeSet<String> {
    lock.cells
        .iter()
        .filter(|(_, roles)| {
            [&roles.cuda, &roles.gcc, &roles.torch]
                .into_iter()
                .chain(roles.python.as_ref())
                .any(|role| role == toolchain)
        })
        .map(|(cell, _)| cell.clone())
        .collect()
}

/// Every cell: who uses the seeds.
fn everyone(lock: &Lock) -> BTreeSet<String> {
    lock.cells.keys().cloned().collect()
}

/// Package → version of Debian artifacts.
fn versions<'a>(lock_artifacts: impl Iterator<Item = &'a Artifact>) -> BTreeMap<String, String> {
    lock_artifacts
        .filter_map(|artifact| match &artifact.source {
            Source::Debian {
                package, version, ..
            } => Some((package.clone(), version.clone())),
            Source::Pypi { .. } | Source::Archive { .. } => None,
        })
        .collect()
}

fn diff(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    suite: &str,
    holder: &str,
) -> Vec<Change> {
    let packages: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    packages
        .into_iter()
        .filter(|package| old.get(*package) != new.get(*package))
        .map(|package| Change {
            package: package.clone(),
            old: old.get(package).cloned(),
            new: new.get(package).cloned(),
            suite: suite.to_owned(),
            holder: holder.to_owned(),
        })
        .collect()
}

/// Re-pins what the mirror dropped from the lock of the project in `project`.
pub fn refresh_project(project: &Path, options: &LockOptions) -> Result<Refreshed> {
    let path = project.join(LOCK_FILE);
    let mut lock = Lock::read(&path)?;
    let pyproject = project.join("pyproject.toml");
    if config_sha256(&pyproject)? != lock.config_sha256 {
        bail!(
            "the [tool.cuwheel] table of {} changed since {} was written; `cuwheel lock \
             --refresh` only re-pins what the mirror dropped, so it cannot follow a config \
             change: run `cuwheel lock --project {}` to lock again",
            pyproject.display(),
            path.display(),
            project.display()
        );
    }
    let data = DebianData::embedded();

    // The Debian suites the lock pins from, each read again.
    let mut suites: BTreeSet<String> = BTreeSet::new();
    for (name, toolchain) in &lock.toolchains {
        if let Some(recipe) = recipe(name, toolchain)? {
            suites.insert(recipe.suite.to_owned());
        }
    }
    for seed in lock.seeds.values() {
        if let Some(Source::Debian { suite, .. }) =
            lock.artifacts.get(&seed.artifact).map(|a| &a.source)
        {
            suites.insert(suite.clone());
        }
    }
    let cache = Cache::locate()?;
    let mirror = apt::system_mirror()?;
    let mut read: BTreeMap<String, (apt::AptSuite, Index, String)> = BTreeMap::new();
    for suite in suites {
        eprintln!("lock: reading Debian {suite}'s package index");
        let apt = apt::AptSuite::new(&cache.root, &suite, &apt::suite_mirror(&mirror, &suite))?;
        apt.update()?;
        let index = apt.index()?;
        let date = apt.index_date()?;
        read.insert(suite, (apt, index, date));
    }

    let mut vanished = BTreeSet::new();
    let mut changes = Vec::new();
    let mut artifacts = lock.artifacts.clone();
    let mut touched = BTreeSet::new();
    let mut repinned_suites = BTreeSet::new();
    let mut new_sets = BTreeMap::new();
    for (name, toolchain) in &lock.toolchains {
        let Some(recipe) = recipe(name, toolchain)? else {
            continue;
        };
        let index = &read[recipe.suite].1;
        let gone: Vec<&String> = toolchain
            .artifacts()
            .iter()
            .filter(|a| {
                !lock
                    .artifacts
                    .get(*a)
                    .is_some_and(|a| pins::listed(index, a))
            })
            .collect();
        if gone.is_empty() {
            continue;
        }
        vanished.extend(gone.into_iter().cloned());
        let fresh = pins::debian_closure(
            data,
            index,
            recipe.kind,
            recipe.suite,
            recipe.gcc,
            recipe.python,
            &users_of(&lock, name),
        )?;
        if let Toolchain::Cuda(cuda) = toolchain {
            let pins = cuda.source().pins(&cuda.version, &cuda.fields);
            let carried = match pins {
                Pins::DebianClosure { package, .. } => {
                    super::toolkit_pins::carries(index, package, &cuda.version)
                }
                Pins::PypiComponents { .. } => Ok(()),
            };
            if let Err(carried) = carried {
                bail!(
                    "Debian {} now carries {carried}, not CUDA {}, so toolchain {name} cannot \
                     be re-pinned: the suite moved on to another CUDA release; run `cuwheel \
                     lock` (crates/cuwheel-build/src/lock/data/debian.toml [cuda-suites] names \
                     the suite of each CUDA release)",
                    recipe.suite,
                    cuda.version
                );
            }
        }
        changes.extend(diff(
            &versions(
                toolchain
                    .artifacts()
                    .iter()
                    .filter_map(|a| lock.artifacts.get(a)),
            ),
            &versions(fresh.iter()),
            recipe.suite,
            &format!("toolchain {name}"),
        ));
        touched.extend(toolchain.artifacts().iter().cloned());
        let mut names = BTreeSet::new();
        for artifact in fresh {
            names.insert(pins::add(&mut artifacts, artifact)?);
        }
        touched.extend(names.iter().cloned());
        new_sets.insert(name.clone(), names);
        repinned_suites.insert(recipe.suite.to_owned());
    }
    for (name, names) in new_sets {
        *lock
            .toolchains
            .get_mut(&name)
            .expect("a toolchain of the lock")
            .artifacts_mut() = names;
    }

    // Seeds whose .deb is gone: the same package's current version.
    let everyone = everyone(&lock);
    let seed_names: Vec<String> = lock.seeds.keys().cloned().collect();
    for seed_name in seed_names {
        let old_name = lock.seeds[&seed_name].artifact.clone();
        let Some(old) = lock.artifacts.get(&old_name) else {
            continue;
        };
        let Source::Debian {
            suite,
            package,
            version,
            ..
        } = &old.source
        else {
            continue;
        };
        let (apt, index, _) = &read[suite];
        if pins::listed(index, old) {
            continue;
        }
        vanished.insert(old_name.clone());
        let current = index.get(package).with_context(|| {
            format!(
                "Debian {suite} no longer has {package} at all, which seed {seed_name} is cut \
                 from; run `cuwheel lock` (crates/cuwheel-build/src/lock/data/debian.toml names \
                 its suite)"
            )
        })?;
        let fresh = pins::debian_artifact(current, suite, &everyone);
        changes.push(Change {
            package: package.clone(),
            old: Some(version.clone()),
            new: Some(current.version.clone()),
            suite: suite.clone(),
            holder: format!("seed {seed_name}"),
        });
        let clients = Clients {
            pip: Pip::new(options.python.as_deref()),
            apt: [(suite.clone(), apt.clone())].into(),
            archives: Vec::new(),
        };
        let expected = Expected {
            file: &fresh.file,
            sha256: &fresh.sha256,
            size: Some(fresh.size),
        };
        let file = clients.obtain(&cache, &fresh.source, &expected, || {
            eprintln!("lock: downloading {}", fresh.file)
        })?;
        let dir = cache.temp_dir()?;
        let seed = lock.seeds.get_mut(&seed_name).expect("a seed of the lock");
        let (_, hash) = tree::seed(&file, &fresh.file, &seed.member, &seed_name, dir.path())?;
        seed.nar_sha256 = hash.to_hex();
        seed.artifact = pins::add(&mut artifacts, fresh.clone())?;
        touched.insert(old_name);
        touched.insert(seed.artifact.clone());
        repinned_suites.insert(suite.clone());
    }

    // Who uses each artifact whose holders changed; one nobody holds goes.
    for name in touched {
        let mut users = BTreeSet::new();
        let mut held = false;
        for (toolchain_name, toolchain) in &lock.toolchains {
            if toolchain.artifacts().contains(&name) {
                held = true;
                users.extend(users_of(&lock, toolchain_name));
            }
        }
        if lock.seeds.values().any(|seed| seed.artifact == name) {
            held = true;
            users.extend(everyone.iter().cloned());
        }
        match (held, artifacts.get_mut(&name)) {
            (true, Some(artifact)) => artifact.used_by = users,
            (false, _) => {
                artifacts.remove(&name);
            }
            (true, None) => unreachable!("every held artifact was added"),
        }
    }
    lock.artifacts = artifacts;
    for suite in repinned_suites {
        lock.suites.insert(
            suite.clone(),
            SuiteIndex {
                index_date: read[&suite].2.clone(),
            },
        );
    }
    if !vanished.is_empty() {
        lock.write(&path)?;
    }
    Ok(Refreshed {
        lock,
        path,
        vanished,
        changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_one_line_each() {
        let old: BTreeMap<String, String> = [
            ("libc6".to_owned(), "2.41-12+deb13u4".to_owned()),
            ("libgone".to_owned(), "1.0".to_owned()),
            ("zlib1g".to_owned(), "1:1.3".to_owned()),
        ]
        .into();
        let mut new = old.clone();
        new.insert("libc6".into(), "2.41-12+deb13u5".into());
        new.remove("libgone");
        new.insert("libnew".into(), "2.0".into());
        let lines: Vec<String> = diff(&old, &new, "trixie", "toolchain rust-trixie")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "libc6 2.41-12+deb13u4 → 2.41-12+deb13u5 (trixie, toolchain rust-trixie)",
                "libgone 1.0 is no longer needed (trixie, toolchain rust-trixie)",
                "libnew 2.0 is new (trixie, toolchain rust-trixie)",
            ]
        );
    }
}
