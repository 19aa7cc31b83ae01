//! Toolkits from PyPI: NVIDIA's split `nvidia-*` wheels, one minor per
//! `cuda-toolkit` metapackage release series pip lists, for the CUDA majors
//! whose wheels hold a complete nvcc (`data/pypi.toml`).
//!
//! In: the data and pip's listing of `cuda-toolkit`. Out: each minor and its
//! newest release. (The toolchain itself is resolved in [`crate::lock`] from
//! `cuda-toolkit[...]==X.Y.*`.)

use std::collections::BTreeMap;

use super::ToolkitSource;
use crate::lock::plan::PypiData;
use crate::spec::{CudaVersion, ToolkitOrigin};

/// PyPI's `nvidia-*` wheels, by the `cuda-toolkit` releases pip listed.
pub struct Pypi<'a> {
    pub data: &'a PypiData,
    /// `cuda-toolkit` releases, as pip lists them (`13.2.2`, `13.0.3.0`).
    pub releases: &'a [String],
}

impl ToolkitSource for Pypi<'_> {
    fn offers(&self) -> BTreeMap<CudaVersion, ToolkitOrigin> {
        let mut offers: BTreeMap<CudaVersion, (Vec<u64>, String)> = BTreeMap::new();
        for release in self.releases {
            let parts: Vec<u64> = match release.split('.').map(str::parse).collect() {
                Ok(parts) => parts,
                Err(_) => continue, // pre-releases and local labels are not pinned
            };
            let (Some(&major), Some(&minor)) = (parts.first(), parts.get(1)) else {
                continue;
            };
            let Ok(version) = format!("{major}.{minor}").parse::<CudaVersion>() else {
                continue;
            };
            if !self.data.cuda_wheels.majors.contains(&version.major) {
                continue;
            }
            let newest = offers.entry(version).or_insert((Vec::new(), String::new()));
            if parts > newest.0 {
                *newest = (parts, release.clone());
            }
        }
        offers
            .into_iter()
            .map(|(version, (_, release))| (version, ToolkitOrigin::Pypi { release }))
            .collect()
    }
}
