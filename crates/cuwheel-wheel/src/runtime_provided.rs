//! The libraries a PyTorch CUDA extension may need without bundling them:
//! torch's own, the CUDA runtime of the `nvidia-*` packages torch depends
//! on, and the driver's `libcuda.so.1`. Policy data, beside the manylinux
//! policies: the config's `libraries` and the audit's load check read it.
//!
//! In: `data/runtime-provided.json` (its `"source"` key and
//! `data/README.md` say where each entry comes from). Out:
//! [`runtime_provided`].

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::Deserialize;

/// A library that exists at run time without being in the wheel.
#[derive(Debug, Deserialize)]
pub struct ProvidedLibrary {
    pub soname: String,
    /// Who installs it: `torch`, a `nvidia-*` package, the driver.
    pub provider: String,
    pub reason: String,
}

/// The sonames torch and CUDA provide at run time (`data/runtime-provided.json`).
#[derive(Debug, Deserialize)]
pub struct RuntimeProvided {
    pub source: String,
    pub libraries: Vec<ProvidedLibrary>,
}

static RUNTIME_PROVIDED: LazyLock<RuntimeProvided> = LazyLock::new(|| {
    serde_json::from_str(include_str!("data/runtime-provided.json")).expect(
        "crates/cuwheel-wheel/src/data/runtime-provided.json is valid (checked by a unit test)",
    )
});

/// The runtime-provided libraries shipped with cuwheel.
pub fn runtime_provided() -> &'static RuntimeProvided {
    &RUNTIME_PROVIDED
}

impl RuntimeProvided {
    pub fn sonames(&self) -> BTreeSet<String> {
        self.libraries.iter().map(|l| l.soname.clone()).collect()
    }

    pub fn provider_of(&self, soname: &str) -> Option<&str> {
        self.libraries
            .iter()
            .find(|l| l.soname == soname)
            .map(|l| l.provider.as_str())
    }
}
