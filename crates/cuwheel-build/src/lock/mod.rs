//! The lock as a build reads it: the format of `cuwheel.lock`
//! (docs/reference/lock-format.md), the toolkit sources whose entries it
//! holds, the data files both a build and `cuwheel lock` read, and the
//! digest of the config the lock was made for.
//!
//! In: a lock's bytes, a project's `pyproject.toml`. Out: the checked
//! [`format::Lock`], and the config's digest. `cuwheel lock`, which asks
//! the registries and writes the lock, is the `cuwheel-registry` crate's:
//! nothing here reaches a registry, so its clients change no build.
//!
//! [`format`] is the file; [`toolkits`] the toolkit sources, each one
//! module listed once, which say what they offer, what their lock entries
//! hold and what pins them; [`data`] `data/debian.toml` and
//! `data/pypi.toml`.

pub mod data;
pub mod format;
pub mod toolkits;

use std::path::Path;

use anyhow::{Context, Result};

pub use format::LOCK_FILE;

/// The sha256 of the `[tool.cuwheel]` table as compact JSON, written as
/// Nix's `builtins.toJSON` writes it ([`crate::json::nix_sha256`]), so that
/// the flake computes the same digest (`nix/config-digest.nix`) to refuse a
/// stale lock: it changes
/// exactly when the config does — but for `[tool.cuwheel.pypi]`, which only
/// picks the cells that also make a wheel for PyPI and locks nothing, so
/// choosing or changing it needs no new lock.
pub fn config_sha256(pyproject: &Path) -> Result<String> {
    let document = read_pyproject(pyproject)?;
    let mut table = document
        .get("tool")
        .and_then(|tool| tool.get("cuwheel"))
        .with_context(|| format!("{} has no [tool.cuwheel] table", pyproject.display()))?
        .clone();
    if let Some(table) = table.as_table_mut() {
        table.remove(LOCK_FREE_KEY);
    }
    Ok(crate::json::nix_sha256(&serde_json::to_value(&table)?))
}

/// The key of `[tool.cuwheel]` that [`config_sha256`] leaves out (so does
/// `nix/config-digest.nix`).
pub const LOCK_FREE_KEY: &str = "pypi";

/// `pyproject.toml` as a TOML table.
pub fn read_pyproject(pyproject: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(pyproject)
        .with_context(|| format!("cannot read {}", pyproject.display()))?;
    toml::from_str(&text).with_context(|| format!("{} is not valid TOML", pyproject.display()))
}
