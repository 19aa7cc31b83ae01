//! Whether a checkout is the one a wheel was built from.
//!
//! In: the wheel's [`Provenance`] and a [`Checkout`] — the digests the
//! plan would write into a wheel built now ([`Checkout::read`] is this
//! module's only reading of files). Out: every [`Mismatch`], sorted: the
//! config, the lock, each source file that differs, is missing or is new,
//! and a cell the checkout's matrix does not have. None means a rebuild
//! here can give the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::build::Provenance;
use crate::lock::format::LOCK_FILE;
use crate::plan::{PlanCell, sources};

/// What a wheel built from this checkout would record, and its plan.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub config_sha256: String,
    pub lock_sha256: String,
    pub sources: BTreeMap<String, String>,
    pub cells: BTreeMap<String, PlanCell>,
}

impl Checkout {
    /// Reads the project at `dir` as `cuwheel plan` does.
    pub fn read(dir: &Path) -> Result<Checkout> {
        let (spec, project, plan) = sources::plan_project(dir)?;
        Ok(Checkout {
            config_sha256: crate::lock::config_sha256(&spec.pyproject)?,
            lock_sha256: project.lock_sha256,
            sources: project.digests,
            cells: plan.cells,
        })
    }
}

/// One way the checkout is not the wheel's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Mismatch {
    /// The `[tool.cuwheel]` table differs.
    Config { wheel: String, checkout: String },
    /// `cuwheel.lock` differs.
    Lock { wheel: String, checkout: String },
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
    /// The provenance's `source_sha256` is not the digest of its own
    /// `sources`: it was edited after the build.
    InconsistentProvenance { recorded: String, computed: String },
    /// The checkout's matrix has no such cell.
    UnknownCell { cell: String, cells: Vec<String> },
}

/// Everything in which `checkout` is not the checkout `provenance` names.
pub fn compare(provenance: &Provenance, checkout: &Checkout) -> Vec<Mismatch> {
    let mut found = Vec::new();
    if provenance.config_sha256 != checkout.config_sha256 {
        found.push(Mismatch::Config {
            wheel: provenance.config_sha256.clone(),
            checkout: checkout.config_sha256.clone(),
        });
    }
    if provenance.lock_sha256 != checkout.lock_sha256 {
        found.push(Mismatch::Lock {
            wheel: provenance.lock_sha256.clone(),
            checkout: checkout.lock_sha256.clone(),
        });
    }
    let computed = Provenance::source_sha256(&provenance.sources);
    if computed != provenance.source_sha256 {
        found.push(Mismatch::InconsistentProvenance {
            recorded: provenance.source_sha256.clone(),
            computed,
        });
    }
    let paths: BTreeSet<&String> = provenance
        .sources
        .keys()
        .chain(checkout.sources.keys())
        .collect();
    for path in paths {
        match (provenance.sources.get(path), checkout.sources.get(path)) {
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
    if !checkout.cells.contains_key(&provenance.cell) {
        found.push(Mismatch::UnknownCell {
            cell: provenance.cell.clone(),
            cells: checkout.cells.keys().cloned().collect(),
        });
    }
    found.sort();
    found
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Config { wheel, checkout } => write!(
                f,
                "[tool.cuwheel] in pyproject.toml: the wheel was built from a config with sha256 \
                 {wheel}, the checkout's has sha256 {checkout}"
            ),
            Mismatch::Lock { wheel, checkout } => write!(
                f,
                "{LOCK_FILE}: the wheel was built from sha256 {wheel}, the checkout has {checkout}"
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
        Provenance {
            cell: "cu130-py313".into(),
            cuda_archs: vec!["9.0".into()],
            config_sha256: sha('c'),
            lock_sha256: sha('l'),
            source_sha256: Provenance::source_sha256(&sources),
            sources,
            toolchains: BTreeMap::new(),
            nvcc: "13.0".into(),
            cuwheel: "0.1.0".into(),
        }
    }

    fn checkout(sources: &[(&str, char)]) -> Checkout {
        let cell = crate::plan::test_plan_cell(
            &[],
            [
                "binding-cuda130-py313",
                "link-cu130-py313",
                "wheel-cu130-py313",
                "audit-cu130-py313",
            ],
        );
        Checkout {
            config_sha256: sha('c'),
            lock_sha256: sha('l'),
            sources: sources
                .iter()
                .map(|(p, c)| (p.to_string(), sha(*c)))
                .collect(),
            cells: BTreeMap::from([("cu130-py313".to_string(), cell)]),
        }
    }

    #[test]
    fn the_same_checkout_matches() {
        let files = [("pyproject.toml", 'a'), ("csrc/k.cu", 'b')];
        assert_eq!(compare(&provenance(&files), &checkout(&files)), []);
    }

    #[test]
    fn every_difference_is_named_with_both_digests() {
        let mut p = provenance(&[
            ("csrc/k.cu", 'b'),
            ("csrc/old.h", 'd'),
            ("pyproject.toml", 'a'),
        ]);
        p.lock_sha256 = sha('0');
        p.cell = "cu999-py313".into();
        let c = checkout(&[
            ("csrc/k.cu", 'e'),
            ("csrc/new.h", 'f'),
            ("pyproject.toml", 'a'),
        ]);
        let lines: Vec<String> = compare(&p, &c).iter().map(|m| m.to_string()).collect();
        assert_eq!(
            lines,
            [
                format!(
                    "cuwheel.lock: the wheel was built from sha256 {}, the checkout has {}",
                    sha('0'),
                    sha('l')
                ),
                format!(
                    "csrc/k.cu: the wheel was built from sha256 {}, the checkout has {}",
                    sha('b'),
                    sha('e')
                ),
                format!(
                    "csrc/old.h: the wheel was built from it (sha256 {}); the checkout's build does not use it",
                    sha('d')
                ),
                format!(
                    "csrc/new.h: the checkout's build uses it (sha256 {}); the wheel was not built from it",
                    sha('f')
                ),
                "cell cu999-py313: the checkout's matrix has no such cell (it has cu130-py313)"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn an_edited_source_list_is_caught_by_its_own_digest() {
        let files = [("csrc/k.cu", 'b')];
        let mut p = provenance(&files);
        p.sources.insert("csrc/k.cu".into(), sha('e'));
        let c = checkout(&[("csrc/k.cu", 'e')]);
        let found = compare(&p, &c);
        assert!(
            matches!(found.as_slice(), [Mismatch::InconsistentProvenance { .. }]),
            "{found:?}"
        );
    }

    #[test]
    fn another_config_is_named() {
        let files = [("pyproject.toml", 'a')];
        let mut c = checkout(&files);
        c.config_sha256 = sha('9');
        let found = compare(&provenance(&files), &c);
        assert!(
            found[0]
                .to_string()
                .starts_with("[tool.cuwheel] in pyproject.toml")
        );
    }
}
