//! Whether a checkout is the one a wheel was built from.
//!
//! In: the wheel's [`Provenance`] and a [`Checkout`] — the plan of the
//! checkout, whose cells carry the provenance a wheel built now would
//! record ([`Checkout::read`] is this module's only reading of files).
//! Out: every [`Mismatch`], sorted: the config, the archs, each source file
//! that differs, is missing or is new, each toolchain whose artifacts
//! differ, the seeds, the driver's version, and a cell the checkout's
//! matrix does not have. None means a rebuild here can give the same bytes.
//! What the provenance does not record (the lock's bytes, toolchains of
//! other cells, the driver's own Rust toolchain) is not compared: it does
//! not shape the wheel.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::build::{Provenance, ToolchainIdentity};
use crate::plan::pypi::PypiCell;
use crate::plan::{PlanCell, sources};

/// The plan of a checkout: each cell with the provenance its wheel would
/// record.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub cells: BTreeMap<String, PlanCell>,
    /// The cells that also make a wheel for PyPI, with its nodes.
    pub pypi: BTreeMap<String, PypiCell>,
}

impl Checkout {
    /// Reads the project at `dir` as `cuwheel plan` does (a stale lock is
    /// refused there).
    pub fn read(dir: &Path) -> Result<Checkout> {
        let (_, _, plan) = sources::plan_project(dir)?;
        Ok(Checkout {
            cells: plan.cells,
            pypi: plan.pypi.map(|pypi| pypi.cells).unwrap_or_default(),
        })
    }
}

/// One way the checkout is not the wheel's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Mismatch {
    /// What `pyproject.toml` gives every cell differs.
    Config { wheel: String, checkout: String },
    /// The configured CUDA archs differ.
    Archs {
        wheel: Vec<String>,
        checkout: Vec<String>,
    },
    /// A source file's bytes differ.
    Source {
        path: String,
        wheel: String,
        checkout: String,
    },
    /// The wheel was built from a file the checkout's build does not use.
    MissingSource { path: String, wheel: String },
    /// The checkout's build uses a file the wheel was not built from.
    ExtraSource { path: String, checkout: String },
    /// A toolchain of the cell is made of other files: those only the
    /// wheel's has, and those only the checkout's has (`name sha256`).
    Toolchain {
        role: String,
        wheel: Vec<String>,
        checkout: Vec<String>,
    },
    /// A seed differs (or exists on one side only).
    Seed {
        name: String,
        wheel: Option<String>,
        checkout: Option<String>,
    },
    /// Another cuwheel built the wheel.
    Driver { wheel: String, checkout: String },
    /// The provenance's `source_sha256` is not the digest of its own
    /// `sources`: it was edited after the build.
    InconsistentProvenance { recorded: String, computed: String },
    /// The checkout's matrix has no such cell.
    UnknownCell { cell: String, cells: Vec<String> },
}

/// Everything in which `checkout` is not the checkout `provenance` names.
pub fn compare(provenance: &Provenance, checkout: &Checkout) -> Vec<Mismatch> {
    let mut found = Vec::new();
    let computed = Provenance::source_sha256(&provenance.sources);
    if computed != provenance.source_sha256 {
        found.push(Mismatch::InconsistentProvenance {
            recorded: provenance.source_sha256.clone(),
            computed,
        });
    }
    let Some(cell) = checkout.cells.get(&provenance.cell) else {
        found.push(Mismatch::UnknownCell {
            cell: provenance.cell.clone(),
            cells: checkout.cells.keys().cloned().collect(),
        });
        return found;
    };
    let ours = &cell.provenance;
    if provenance.config_sha256 != ours.config_sha256 {
        found.push(Mismatch::Config {
            wheel: provenance.config_sha256.clone(),
            checkout: ours.config_sha256.clone(),
        });
    }
    if provenance.cuda_archs != ours.cuda_archs {
        found.push(Mismatch::Archs {
            wheel: provenance.cuda_archs.clone(),
            checkout: ours.cuda_archs.clone(),
        });
    }
    for (path, (wheel, checkout)) in pairs(&provenance.sources, &ours.sources) {
        match (wheel, checkout) {
            (Some(wheel), Some(checkout)) if wheel != checkout => found.push(Mismatch::Source {
                path: path.clone(),
                wheel: wheel.clone(),
                checkout: checkout.clone(),
            }),
            (Some(wheel), None) => found.push(Mismatch::MissingSource {
                path: path.clone(),
                wheel: wheel.clone(),
            }),
            (None, Some(checkout)) => found.push(Mismatch::ExtraSource {
                path: path.clone(),
                checkout: checkout.clone(),
            }),
            _ => {}
        }
    }
    for (role, (wheel, checkout)) in pairs(&provenance.toolchains, &ours.toolchains) {
        let (wheel, checkout) = (parts(wheel), parts(checkout));
        if wheel != checkout {
            found.push(Mismatch::Toolchain {
                role: role.clone(),
                wheel: wheel.difference(&checkout).cloned().collect(),
                checkout: checkout.difference(&wheel).cloned().collect(),
            });
        }
    }
    for (name, (wheel, checkout)) in pairs(&provenance.seeds, &ours.seeds) {
        if wheel != checkout {
            found.push(Mismatch::Seed {
                name: name.clone(),
                wheel: wheel.cloned(),
                checkout: checkout.cloned(),
            });
        }
    }
    if provenance.cuwheel != ours.cuwheel {
        found.push(Mismatch::Driver {
            wheel: provenance.cuwheel.clone(),
            checkout: ours.cuwheel.clone(),
        });
    }
    found.sort();
    found
}

/// Every key of either map, with its value on each side.
fn pairs<'a, V>(
    wheel: &'a BTreeMap<String, V>,
    checkout: &'a BTreeMap<String, V>,
) -> BTreeMap<&'a String, (Option<&'a V>, Option<&'a V>)> {
    let keys: BTreeSet<&String> = wheel.keys().chain(checkout.keys()).collect();
    keys.into_iter()
        .map(|k| (k, (wheel.get(k), checkout.get(k))))
        .collect()
}

/// A toolchain's parts as `name sha256` lines (none for an absent one).
fn parts(identity: Option<&ToolchainIdentity>) -> BTreeSet<String> {
    let Some(identity) = identity else {
        return BTreeSet::new();
    };
    let mut parts: BTreeSet<String> = identity
        .artifacts
        .iter()
        .map(|(name, sha256)| format!("{name} (sha256 {sha256})"))
        .collect();
    if let Some(headers) = &identity.headers_nar_sha256 {
        parts.insert(format!("the headers tree (NAR sha256 {headers})"));
    }
    parts
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let or_none = |list: &[String]| {
            if list.is_empty() {
                "nothing else".to_string()
            } else {
                list.join(", ")
            }
        };
        match self {
            Mismatch::Config { wheel, checkout } => write!(
                f,
                "pyproject.toml ([project] and [tool.cuwheel] without its matrix): the wheel was \
                 built from sha256 {wheel}, the checkout's is {checkout}"
            ),
            Mismatch::Archs { wheel, checkout } => write!(
                f,
                "cuda-archs: the wheel was built for {}, the checkout builds {}",
                wheel.join(", "),
                checkout.join(", ")
            ),
            Mismatch::Source {
                path,
                wheel,
                checkout,
            } => write!(
                f,
                "{path}: the wheel was built from sha256 {wheel}, the checkout has {checkout}"
            ),
            Mismatch::MissingSource { path, wheel } => write!(
                f,
                "{path}: the wheel was built from it (sha256 {wheel}); the checkout's build does \
                 not use it"
            ),
            Mismatch::ExtraSource { path, checkout } => write!(
                f,
                "{path}: the checkout's build uses it (sha256 {checkout}); the wheel was not \
                 built from it"
            ),
            Mismatch::Toolchain {
                role,
                wheel,
                checkout,
            } => write!(
                f,
                "the {role} toolchain: the wheel was built with {}, where the checkout's lock \
                 has {}",
                or_none(wheel),
                or_none(checkout)
            ),
            Mismatch::Seed {
                name,
                wheel,
                checkout,
            } => write!(
                f,
                "the {name} seed: the wheel was built with NAR sha256 {}, the checkout's lock \
                 has {}",
                wheel.as_deref().unwrap_or("(none)"),
                checkout.as_deref().unwrap_or("(none)")
            ),
            Mismatch::Driver { wheel, checkout } => write!(
                f,
                "cuwheel {wheel} built the wheel; this is cuwheel {checkout}: reproduce it with \
                 cuwheel {wheel}"
            ),
            Mismatch::InconsistentProvenance { recorded, computed } => write!(
                f,
                "the provenance records source_sha256 {recorded}, but its own source list hashes \
                 to {computed}: the provenance was edited after the build"
            ),
            Mismatch::UnknownCell { cell, cells } => write!(
                f,
                "cell {cell}: the checkout's matrix has no such cell (it has {})",
                cells.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn provenance(sources: &[(&str, char)]) -> Provenance {
        let sources: BTreeMap<String, String> = sources
            .iter()
            .map(|(p, c)| (p.to_string(), sha(*c)))
            .collect();
        let cuda = ToolchainIdentity {
            artifacts: BTreeMap::from([
                ("libc.deb".to_string(), sha('1')),
                ("nvcc.whl".to_string(), sha('2')),
            ]),
            headers_nar_sha256: None,
        };
        Provenance {
            cell: "cu130-py313".into(),
            cuda_archs: vec!["9.0".into()],
            config_sha256: sha('c'),
            source_sha256: Provenance::source_sha256(&sources),
            sources,
            toolchains: BTreeMap::from([("cuda".to_string(), cuda)]),
            seeds: BTreeMap::from([("busybox".to_string(), sha('b'))]),
            nvcc: "13.0".into(),
            cuwheel: "0.1.0".into(),
        }
    }

    fn checkout(provenance: Provenance) -> Checkout {
        let mut cell = crate::plan::test_plan_cell(
            &[],
            [
                "binding-cuda130-py313",
                "link-cu130-py313",
                "wheel-cu130-py313",
                "audit-cu130-py313",
            ],
        );
        cell.provenance = provenance;
        Checkout {
            cells: BTreeMap::from([("cu130-py313".to_string(), cell)]),
            pypi: BTreeMap::new(),
        }
    }

    #[test]
    fn the_same_checkout_matches() {
        let files = [("csrc/k.cu", 'b')];
        assert_eq!(
            compare(&provenance(&files), &checkout(provenance(&files))),
            []
        );
    }

    #[test]
    fn every_difference_is_named_with_both_digests() {
        let p = provenance(&[("csrc/k.cu", 'b'), ("csrc/old.h", 'd')]);
        let mut ours = provenance(&[("csrc/k.cu", 'e'), ("csrc/new.h", 'f')]);
        ours.config_sha256 = sha('9');
        ours.cuda_archs = vec!["9.0+PTX".into()];
        let cuda = ours.toolchains.get_mut("cuda").unwrap();
        cuda.artifacts.insert("libc.deb".into(), sha('3'));
        ours.seeds.insert("busybox".into(), sha('5'));
        ours.cuwheel = "0.2.0".into();
        let lines: Vec<String> = compare(&p, &checkout(ours))
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert_eq!(
            lines,
            [
                format!(
                    "pyproject.toml ([project] and [tool.cuwheel] without its matrix): the wheel \
                     was built from sha256 {}, the checkout's is {}",
                    sha('c'),
                    sha('9')
                ),
                "cuda-archs: the wheel was built for 9.0, the checkout builds 9.0+PTX".to_string(),
                format!(
                    "csrc/k.cu: the wheel was built from sha256 {}, the checkout has {}",
                    sha('b'),
                    sha('e')
                ),
                format!(
                    "csrc/old.h: the wheel was built from it (sha256 {}); the checkout's build \
                     does not use it",
                    sha('d')
                ),
                format!(
                    "csrc/new.h: the checkout's build uses it (sha256 {}); the wheel was not \
                     built from it",
                    sha('f')
                ),
                format!(
                    "the cuda toolchain: the wheel was built with libc.deb (sha256 {}), where \
                     the checkout's lock has libc.deb (sha256 {})",
                    sha('1'),
                    sha('3')
                ),
                format!(
                    "the busybox seed: the wheel was built with NAR sha256 {}, the checkout's \
                     lock has {}",
                    sha('b'),
                    sha('5')
                ),
                "cuwheel 0.1.0 built the wheel; this is cuwheel 0.2.0: reproduce it with \
                 cuwheel 0.1.0"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn a_cell_the_checkout_lacks_is_named_with_those_it_has() {
        let files = [("csrc/k.cu", 'b')];
        let mut p = provenance(&files);
        p.cell = "cu999-py313".into();
        let lines: Vec<String> = compare(&p, &checkout(provenance(&files)))
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert_eq!(
            lines,
            ["cell cu999-py313: the checkout's matrix has no such cell (it has cu130-py313)"]
        );
    }

    #[test]
    fn an_edited_source_list_is_caught_by_its_own_digest() {
        let files = [("csrc/k.cu", 'b')];
        let mut p = provenance(&files);
        p.sources.insert("csrc/k.cu".into(), sha('e'));
        let ours = provenance(&[("csrc/k.cu", 'e')]);
        let found = compare(&p, &checkout(ours));
        assert!(
            matches!(found.as_slice(), [Mismatch::InconsistentProvenance { .. }]),
            "{found:?}"
        );
    }
}
