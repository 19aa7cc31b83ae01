//! Toolkits from Debian: the suites whose non-free `nvidia-cuda-toolkit` is a
//! given CUDA release (`data/debian.toml` `[cuda-suites]`).
//!
//! In: the data. Out: each CUDA version and its suite (facts `{"source":
//! "debian", "suite": ...}`); lock entries of kind `cuda-debian`: the
//! package's dependency closure in that suite (`data/debian.toml`
//! `[kinds.cuda-debian]`), which the suite's index must carry at that release
//! ([`Pins::DebianClosure`]), re-pinned by `cuwheel lock --refresh`, and
//! built by `nix/cuda-debian.nix`.

use std::collections::BTreeMap;

use anyhow::Result;

use super::{Listing, Pins, ToolkitSource};
use crate::lock::data::DebianData;
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

    /// The closure of the `cuda-debian` recipe in its suite, which must
    /// carry the release.
    fn pins(&self, _version: &str, fields: &Fields) -> Pins {
        Pins::DebianClosure {
            recipe: self.kind(),
            suite: fields.get("suite").cloned().unwrap_or_default(),
            package: TOOLKIT,
        }
    }
}
