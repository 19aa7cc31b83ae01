//! Which CUDA toolkits a cell's nvcc may be: one module per toolkit source
//! ([`pypi`], [`debian`]) behind [`ToolkitSource`], and the rule that makes
//! a toolkit available.
//!
//! A toolkit `X.Y` is **available** when
//! 1. a source carries it:
//!    - [`Pypi`]: NVIDIA's `cuda-toolkit` metapackage has an `X.Y.*` release
//!      (pip lists it when locking) and `X` is a major whose `nvidia-*`
//!      wheels hold a complete nvcc (`data/pypi.toml` `cuda-wheels.majors`:
//!      13 on; the 12.x `nvidia-cuda-nvcc-cu12` wheels hold only ptxas and
//!      libnvvm), or
//!    - [`Debian`]: `data/debian.toml` `[cuda-suites]` names a suite whose
//!      non-free `nvidia-cuda-toolkit` is `X.Y` (checked against the suite's
//!      index when the toolkit is locked); and
//! 2. cuwheel's compatibility table (`src/spec/data/compatibility.toml`)
//!    knows its host-compiler bounds and GPU archs.
//!
//! In: what pip listed, the data files, the table. Out: the lock's
//! `facts.toolkits`, from which the matrix picks each cell's nvcc
//! ([`crate::spec::MatrixFacts::default_nvcc`]). Pure once pip has listed;
//! the unit tests feed it fabricated listings.

use std::collections::BTreeMap;

use anyhow::Result;

use super::debian::DebianData;
use super::pip::{Pip, Target};
use super::plan::PypiData;
use crate::spec::{Baseline, CompatTable, CudaVersion, PythonVersion, ToolkitOrigin};

mod debian;
mod pypi;

pub use debian::Debian;
pub use pypi::Pypi;

/// A place toolkits come from: what it offers, given what the registries said.
pub trait ToolkitSource {
    /// The toolkits it carries and where each comes from.
    fn offers(&self) -> BTreeMap<CudaVersion, ToolkitOrigin>;
}

/// The available toolkits: what the sources offer (earlier sources win a
/// version both carry) and the table knows.
pub fn available(
    sources: &[&dyn ToolkitSource],
    compat: &CompatTable,
) -> BTreeMap<CudaVersion, ToolkitOrigin> {
    let mut available = BTreeMap::new();
    for source in sources {
        for (version, origin) in source.offers() {
            if compat.toolkit(&version).is_some() {
                available.entry(version).or_insert(origin);
            }
        }
    }
    available
}

/// The Python pip lists `cuda-toolkit` for: the metapackage is pure
/// (`py2.py3-none-any`), so any CPython 3 lists the same releases.
const LISTING_PYTHON: PythonVersion = PythonVersion::new(3, 12);

/// Lists `cuda-toolkit` through pip and returns the available toolkits
/// (Debian's first: a version both carry is taken from Debian, whose
/// toolkit is one package closure rather than a resolution).
pub fn probe(
    pip: &Pip,
    baseline: &Baseline,
    pypi: &PypiData,
    debian: &DebianData,
    compat: &CompatTable,
) -> Result<BTreeMap<CudaVersion, ToolkitOrigin>> {
    let target = Target::manylinux(LISTING_PYTHON, baseline);
    let releases = pip.index_versions("cuda-toolkit", &target)?;
    let pypi = Pypi {
        data: pypi,
        releases: &releases,
    };
    Ok(available(&[&Debian { data: debian }, &pypi], compat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(releases: &[&str]) -> Vec<String> {
        releases.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn available_means_a_source_carries_it_and_the_table_knows_it() {
        let releases = listed(&[
            "13.9.0",
            "13.5.0",
            "13.2.2",
            "13.2.1",
            "13.1.2.0",
            "13.0.3.0",
            "13.0.2",
            "12.9.2.0",
            "12.6.3",
            "11.8.0",
            "13.3.0rc1",
        ]);
        let pypi = Pypi {
            data: PypiData::embedded(),
            releases: &releases,
        };
        let debian = Debian {
            data: DebianData::embedded(),
        };
        let found = available(&[&debian, &pypi], CompatTable::embedded());
        let shown: Vec<String> = found
            .iter()
            .map(|(version, origin)| match origin {
                ToolkitOrigin::Pypi { release } => format!("{version} pypi {release}"),
                ToolkitOrigin::Debian { suite } => format!("{version} debian {suite}"),
            })
            .collect();
        // 12.6 and 12.9 from PyPI: no complete nvcc in their wheels; 13.9:
        // not in the table yet; 13.3: only a pre-release listed.
        assert_eq!(
            shown,
            [
                "11.8 debian bookworm",
                "12.4 debian trixie",
                "12.5 debian experimental",
                "13.0 pypi 13.0.3.0",
                "13.1 pypi 13.1.2.0",
                "13.2 pypi 13.2.2",
                "13.5 pypi 13.5.0",
            ]
        );
    }

    #[test]
    fn nothing_listed_leaves_debian() {
        let pypi = Pypi {
            data: PypiData::embedded(),
            releases: &[],
        };
        let found = available(&[&pypi], CompatTable::embedded());
        assert!(found.is_empty());
    }
}
