//! Toolkits from PyPI: NVIDIA's split `nvidia-*` wheels, one minor per
//! `cuda-toolkit` metapackage release series pip lists, for the CUDA majors
//! whose wheels hold a complete nvcc (`data/pypi.toml`).
//!
//! In: the data and pip's listing of `cuda-toolkit`. Out: each minor and
//! its newest release (facts `{"source": "pypi", "release": ...}`); lock
//! entries of kind `cuda-wheels` (`runtime`: the gcc toolchain whose glibc
//! the CUDA programs run on), resolved from `cuda-toolkit[...]==X.Y.*` to
//! the components `data/pypi.toml` names, and built by
//! `nix/cuda-wheels.nix`.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::{Listing, Pins, ToolkitSource};
use crate::lock::data::PypiData;
use crate::lock::format::{Artifact, CudaToolchain, Fields, Source};
use crate::spec::{CudaVersion, ToolkitOrigin};
use crate::wheel::Arch;

/// PyPI's `nvidia-*` wheels.
pub struct Pypi;

/// The metapackage whose releases say which minors PyPI carries.
const METAPACKAGE: &str = "cuda-toolkit";

impl ToolkitSource for Pypi {
    fn name(&self) -> &'static str {
        "pypi"
    }

    fn kind(&self) -> &'static str {
        "cuda-wheels"
    }

    fn origin_fields(&self) -> &'static [&'static str] {
        &["release"]
    }

    fn entry_fields(&self) -> &'static [&'static str] {
        &["runtime"]
    }

    fn offers(&self, listing: &dyn Listing) -> Result<BTreeMap<CudaVersion, ToolkitOrigin>> {
        Ok(offers(
            PypiData::embedded(),
            &listing.releases(METAPACKAGE)?,
        ))
    }

    /// `served` itself, where its major's wheels hold an nvcc.
    fn assumed(&self, served: CudaVersion) -> BTreeMap<CudaVersion, ToolkitOrigin> {
        let majors = &PypiData::embedded().cuda_wheels.majors;
        if !majors.contains(&served.major) {
            return BTreeMap::new();
        }
        let origin = ToolkitOrigin::new(self.name(), [("release", &served.to_string())]);
        BTreeMap::from([(served, origin)])
    }

    fn entry(&self, _origin: &ToolkitOrigin, gcc: &str) -> Fields {
        Fields::from([("runtime".to_owned(), gcc.to_owned())])
    }

    fn pins(&self, version: &str, _fields: &Fields) -> Pins {
        let requirement = PypiData::embedded().cuda_wheels.requirement_for(version);
        Pins::PypiComponents { requirement }
    }

    /// aarch64 too: nvcc and its headers are the x86_64 wheels (they run
    /// here), the runtime library the aarch64 one.
    fn builds_for(&self, arch: Arch) -> bool {
        matches!(arch, Arch::X86_64 | Arch::Aarch64)
    }

    /// Only while it holds a wheel of every component `data/pypi.toml`
    /// names: an entry locked before one was added (`nvidia-curand`) is
    /// resolved again.
    fn current(&self, _entry: &CudaToolchain, artifacts: &[Artifact]) -> bool {
        let pinned: BTreeSet<&str> = artifacts
            .iter()
            .filter_map(|artifact| match &artifact.source {
                Source::Pypi { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let packages = &PypiData::embedded().cuda_wheels.packages;
        packages
            .iter()
            .all(|package| pinned.contains(package.as_str()))
    }

    fn reads(&self, fields: &Fields) -> Vec<String> {
        fields.get("runtime").cloned().into_iter().collect()
    }
}

/// Each minor among `releases` (as pip lists the metapackage: `13.2.2`,
/// `13.0.3.0`) of a major whose wheels hold an nvcc, with its newest
/// release; pre-releases and local labels are not pinned.
pub fn offers(data: &PypiData, releases: &[String]) -> BTreeMap<CudaVersion, ToolkitOrigin> {
    let mut offers: BTreeMap<CudaVersion, (Vec<u64>, String)> = BTreeMap::new();
    for release in releases {
        let parts: Vec<u64> = match release.split('.').map(str::parse).collect() {
            Ok(parts) => parts,
            Err(_) => continue,
        };
        let (Some(&major), Some(&minor)) = (parts.first(), parts.get(1)) else {
            continue;
        };
        let Ok(version) = format!("{major}.{minor}").parse::<CudaVersion>() else {
            continue;
        };
        if !data.cuda_wheels.majors.contains(&version.major) {
            continue;
        }
        let newest = offers.entry(version).or_insert((Vec::new(), String::new()));
        if parts > newest.0 {
            *newest = (parts, release.clone());
        }
    }
    offers
        .into_iter()
        .map(|(version, (_, release))| {
            (
                version,
                ToolkitOrigin::new(Pypi.name(), [("release", &release)]),
            )
        })
        .collect()
}
