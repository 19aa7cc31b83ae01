//! Toolkits from Debian: the suites whose non-free `nvidia-cuda-toolkit` is a
//! given CUDA release (`data/debian.toml` `[cuda-suites]`).
//!
//! In: the data, and the suite's index when locking. Out: each CUDA version
//! and its suite (facts `{"source": "debian", "suite": ...}`); lock entries
//! of kind `cuda-debian`: the package's dependency closure in that suite
//! (`data/debian.toml` `[kinds.cuda-debian]`), checked to be that release,
//! re-pinned by `cuwheel lock --refresh`, and built by
//! `nix/cuda-debian.nix`.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use super::{CudaRequest, Listing, Registries, ToolkitSource};
use crate::lock::debian::{DebianData, Index};
use crate::lock::format::Fields;
use crate::spec::{CudaVersion, ToolkitOrigin};

/// Debian's non-free `nvidia-cuda-toolkit`.
pub struct Debian;

/// The package whose version is the toolkit's.
const TOOLKIT: &str = "nvidia-cuda-toolkit";

impl ToolkitSource for Debian {
    fn name(&self) -> &'static str {
        "debian"
    }

    fn kind(&self) -> &'static str {
        "cuda-debian"
    }

    fn origin_fields(&self) -> &'static [&'static str] {
        &["suite"]
    }

    fn entry_fields(&self) -> &'static [&'static str] {
        &["suite"]
    }

    /// The data's suites; nothing is listed.
    fn offers(&self, _listing: &dyn Listing) -> Result<BTreeMap<CudaVersion, ToolkitOrigin>> {
        Ok(DebianData::embedded()
            .cuda_suites
            .iter()
            .filter_map(|(version, suite)| {
                Some((
                    version.parse().ok()?,
                    ToolkitOrigin::new(self.name(), [("suite", suite)]),
                ))
            })
            .collect())
    }

    fn entry(&self, origin: &ToolkitOrigin, _gcc: &str) -> Fields {
        origin.fields.clone()
    }

    fn debian_suite<'a>(&self, fields: &'a Fields) -> Option<&'a str> {
        fields.get("suite").map(String::as_str)
    }

    fn resolve(
        &self,
        request: &CudaRequest,
        registries: &mut dyn Registries,
    ) -> Result<BTreeSet<String>> {
        let suite = &request.fields["suite"];
        let version = request.version.to_string();
        if let Err(carried) = self.check_index(&version, registries.debian_index(suite)) {
            bail!(
                "Debian {suite} carries {carried}, not CUDA {version}: \
                 crates/cuwheel-build/src/lock/data/debian.toml [cuda-suites] must name a suite \
                 that has it"
            );
        }
        registries.debian_closure(self.kind(), suite)
    }

    fn check_index(&self, version: &str, index: &Index) -> Result<(), String> {
        let carried = index.get(TOOLKIT).map(|p| p.version.as_str());
        match carried {
            Some(v) if v.starts_with(&format!("{version}.")) => Ok(()),
            Some(v) => Err(format!("{TOOLKIT} {v}")),
            None => Err(format!("{TOOLKIT} (none)")),
        }
    }
}
