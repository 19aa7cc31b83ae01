//! cuwheel's own lock, `nix/driver.lock`: what builds the driver inside Nix
//! — the Rust toolchain (one Debian suite's rustc, cargo and linker) and the
//! two seeds — apart from every project's lock, which pins only what the
//! project's wheels are built with. The driver's crates come from
//! cuwheel's `Cargo.lock`.
//!
//! In: the file (`cuwheel lock --driver` writes it; the binary embeds the
//! copy it was built with, so `cuwheel fetch` of any project also fetches
//! what the flake needs to build this very driver). Out: a [`DriverLock`],
//! and its pinned files as a [`Lock`] view for fetch and cache export.
//! Same canonical JSON rules as the project lock (docs/reference/lock-format.md).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::lock::format::{Artifact, LOCK_VERSION, Lock, Seed, SuiteIndex, Toolchain};

/// Where the driver lock lives in cuwheel's repository.
pub const DRIVER_LOCK_FILE: &str = "nix/driver.lock";

/// The driver lock this binary was built with.
const EMBEDDED: &str = include_str!("../../../nix/driver.lock");

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DriverLock {
    pub version: u32,
    pub driver: DriverToolchains,
    pub toolchains: BTreeMap<String, Toolchain>,
    pub seeds: BTreeMap<String, Seed>,
    pub artifacts: BTreeMap<String, Artifact>,
    /// Each Debian suite the lock read (where the snapshot archive still
    /// serves its files after the mirror dropped them).
    pub suites: BTreeMap<String, SuiteIndex>,
}

/// The toolchain of each role of the driver's build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverToolchains {
    /// A `rust` toolchain of [`DriverLock::toolchains`].
    pub rust: String,
}

impl DriverLock {
    /// The driver lock compiled into this binary.
    pub fn embedded() -> Result<DriverLock> {
        DriverLock::parse(EMBEDDED.as_bytes(), Path::new(DRIVER_LOCK_FILE))
            .context("the driver lock compiled into this cuwheel is unreadable")
    }

    pub fn parse(bytes: &[u8], path: &Path) -> Result<DriverLock> {
        let lock: DriverLock = serde_json::from_slice(bytes).with_context(|| {
            format!(
                "{} is not a driver lock this cuwheel can read; write it again with \
                 `cuwheel lock --driver {}`",
                path.display(),
                path.display()
            )
        })?;
        if lock.version != LOCK_VERSION {
            bail!(
                "{} has format version {}, but this cuwheel reads version {LOCK_VERSION}; write it \
                 again with `cuwheel lock --driver {}`",
                path.display(),
                lock.version,
                path.display()
            );
        }
        match lock.toolchains.get(&lock.driver.rust) {
            Some(Toolchain::Rust { .. }) => Ok(lock),
            _ => bail!(
                "{}: driver.rust names `{}`, which is not a rust toolchain of the lock; write it \
                 again with `cuwheel lock --driver {}`",
                path.display(),
                lock.driver.rust,
                path.display()
            ),
        }
    }

    pub fn read(path: &Path) -> Result<DriverLock> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        DriverLock::parse(&bytes, path)
    }

    /// The canonical bytes, as [`Lock::to_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::json::canonical(self).into_bytes()
    }

    /// What this lock pins, as a project lock without cells: the form
    /// `cuwheel fetch` and `cuwheel cache export` take.
    pub fn pins(&self) -> Lock {
        Lock {
            version: self.version,
            project: "cuwheel".into(),
            config_sha256: String::new(),
            facts: Default::default(),
            cells: BTreeMap::new(),
            bundles: BTreeMap::new(),
            toolchains: self.toolchains.clone(),
            seeds: self.seeds.clone(),
            artifacts: self.artifacts.clone(),
            suites: self.suites.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::format::DRIVER;

    #[test]
    fn the_embedded_lock_pins_a_rust_toolchain_used_by_the_driver_only() {
        let lock = DriverLock::embedded().unwrap();
        assert_eq!(lock.to_bytes(), EMBEDDED.as_bytes(), "not canonical");
        let rust = &lock.toolchains[&lock.driver.rust];
        assert!(matches!(rust, Toolchain::Rust { .. }), "{rust:?}");
        assert_eq!(lock.toolchains.len(), 1);
        for name in rust.artifacts() {
            let artifact = &lock.artifacts[name];
            assert_eq!(
                artifact.used_by.iter().collect::<Vec<_>>(),
                [DRIVER],
                "{name}"
            );
        }
        for (name, seed) in &lock.seeds {
            assert!(lock.artifacts.contains_key(&seed.artifact), "{name}");
        }
        assert_eq!(
            lock.seeds.keys().collect::<Vec<_>>(),
            ["busybox", "patchelf"]
        );
        let pins = lock.pins();
        assert!(pins.cells.is_empty() && pins.bundles.is_empty());
        assert_eq!(pins.artifacts, lock.artifacts);
    }

    #[test]
    fn a_driver_lock_naming_no_rust_toolchain_is_refused_with_the_command() {
        let text = EMBEDDED.replace("\"rust\": \"rust-", "\"rust\": \"nothing-");
        let err = DriverLock::parse(text.as_bytes(), Path::new("nix/driver.lock")).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("driver.rust names `nothing-"), "{message}");
        assert!(
            message.contains("cuwheel lock --driver nix/driver.lock"),
            "{message}"
        );
    }
}
