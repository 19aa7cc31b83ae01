//! Toolkits from Debian: the suites whose non-free `nvidia-cuda-toolkit` is a
//! given CUDA release (`data/debian.toml` `[cuda-suites]`).
//!
//! In: the data. Out: each CUDA version and its suite. (The toolchain itself
//! is the package's dependency closure in that suite, checked to be that
//! release when locking: [`crate::lock`].)

use std::collections::BTreeMap;

use super::ToolkitSource;
use crate::lock::debian::DebianData;
use crate::spec::{CudaVersion, ToolkitOrigin};

/// Debian's non-free `nvidia-cuda-toolkit`, by `data/debian.toml`.
pub struct Debian<'a> {
    pub data: &'a DebianData,
}

impl ToolkitSource for Debian<'_> {
    fn offers(&self) -> BTreeMap<CudaVersion, ToolkitOrigin> {
        self.data
            .cuda_suites
            .iter()
            .filter_map(|(version, suite)| {
                Some((
                    version.parse().ok()?,
                    ToolkitOrigin::Debian {
                        suite: suite.clone(),
                    },
                ))
            })
            .collect()
    }
}
