//! The crates that build cuwheel itself inside Nix: every registry package
//! of cuwheel's own `Cargo.lock` (compiled in), each a flat fixed-output
//! path named `<name>-<version>.crate` whose sha256 is the lock's
//! `checksum`.
//!
//! In: the embedded `Cargo.lock` (and `Cargo.toml`, to let cargo fetch
//! exactly that graph). Out: [`LockedCrate`]s (pure) and the `.crate` files
//! cargo keeps in its registry cache under `CARGO_HOME`, obtained through
//! `cargo fetch --locked` when some are missing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::registry::process::checked_output;

/// cuwheel's own lock and manifest, as they were when it was built.
pub const CARGO_LOCK: &str = include_str!("../../Cargo.lock");
const CARGO_TOML: &str = include_str!("../../Cargo.toml");
/// The manifests of the workspace's other members (`[workspace] members`),
/// without which cargo cannot read `CARGO_TOML`.
const MEMBERS: &[(&str, &str)] = &[
    (
        "crates/cuwheel-build",
        include_str!("../../crates/cuwheel-build/Cargo.toml"),
    ),
    (
        "crates/cuwheel-images",
        include_str!("../../crates/cuwheel-images/Cargo.toml"),
    ),
    (
        "crates/cuwheel-nix",
        include_str!("../../crates/cuwheel-nix/Cargo.toml"),
    ),
    (
        "crates/cuwheel-pyeval",
        include_str!("../../crates/cuwheel-pyeval/Cargo.toml"),
    ),
    (
        "crates/cuwheel-registry",
        include_str!("../../crates/cuwheel-registry/Cargo.toml"),
    ),
    (
        "crates/cuwheel-wheel",
        include_str!("../../crates/cuwheel-wheel/Cargo.toml"),
    ),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedCrate {
    pub name: String,
    pub version: String,
    /// Hex sha256 of the `.crate` file.
    pub checksum: String,
}

impl LockedCrate {
    /// The store name, which is also cargo's file name for it.
    pub fn file(&self) -> String {
        format!("{}-{}.crate", self.name, self.version)
    }
}

#[derive(Deserialize)]
struct CargoLock {
    #[serde(default)]
    package: Vec<CargoPackage>,
}

#[derive(Deserialize)]
struct CargoPackage {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
}

/// The registry crates of a `Cargo.lock`: those with a `registry+` source
/// and a checksum (path and git packages have no `.crate` to pin).
pub fn locked_crates(text: &str) -> Result<Vec<LockedCrate>> {
    let lock: CargoLock = toml::from_str(text).context("Cargo.lock is not valid TOML")?;
    let mut crates: Vec<LockedCrate> = lock
        .package
        .into_iter()
        .filter(|p| {
            p.source
                .as_deref()
                .is_some_and(|s| s.starts_with("registry+"))
        })
        .map(|p| {
            let checksum = p.checksum.with_context(|| {
                format!("Cargo.lock gives no checksum for {} {}", p.name, p.version)
            })?;
            Ok(LockedCrate {
                name: p.name,
                version: p.version,
                checksum,
            })
        })
        .collect::<Result<_>>()?;
    crates.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    Ok(crates)
}

/// Cargo's home, where its registry cache is: `$CARGO_HOME`, else
/// `~/.cargo`. Read once by the caller and passed on, so a test can name
/// another without changing the process's environment.
pub fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cargo"))
        .context("neither CARGO_HOME nor HOME is set, so cargo's registry cache cannot be found")
}

/// Where cargo keeps the `.crate` file, if it has it: the registry cache has
/// one directory per registry, named by cargo, so every one is searched.
pub fn in_registry_cache(home: &Path, krate: &LockedCrate) -> Result<Option<PathBuf>> {
    let cache = home.join("registry").join("cache");
    let Ok(entries) = fs::read_dir(&cache) else {
        return Ok(None);
    };
    let mut registries: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    registries.sort();
    Ok(registries
        .into_iter()
        .map(|registry| registry.join(krate.file()))
        .find(|path| path.is_file()))
}

/// `cargo fetch --locked` of cuwheel's own workspace (its manifests, with
/// empty sources) and lock, in a scratch project under `dir`: cargo
/// downloads exactly the locked crates (through the user's cargo
/// configuration) into the registry cache of cargo's `home`.
pub fn cargo_fetch(home: &Path, dir: &Path) -> Result<()> {
    let project = dir.join("cuwheel-crates");
    let mut files = vec![
        ("Cargo.toml".to_owned(), CARGO_TOML),
        ("Cargo.lock".to_owned(), CARGO_LOCK),
        ("src/lib.rs".to_owned(), ""),
        ("src/main.rs".to_owned(), "fn main() {}\n"),
    ];
    for (member, manifest) in MEMBERS {
        files.push((format!("{member}/Cargo.toml"), manifest));
        files.push((format!("{member}/src/lib.rs"), ""));
        files.push((format!("{member}/src/main.rs"), "fn main() {}\n"));
    }
    for (path, text) in files {
        let path = project.join(path);
        let parent = path.parent().expect("a file under the project");
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    checked_output(
        Command::new(&cargo)
            .env("CARGO_HOME", home)
            .envs(crate::registry::net::NetLimits::current().cargo_env())
            .args(["fetch", "--locked", "--manifest-path"])
            .arg(project.join("Cargo.toml")),
        "cargo fetch of cuwheel's locked crates",
        || "cannot run cargo, which fetches cuwheel's own crates: install Rust's cargo".into(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_crates_with_checksums_are_locked() {
        let text = r#"
version = 4

[[package]]
name = "cuwheel"
version = "0.1.0"

[[package]]
name = "zip"
version = "2.4.2"
source = "registry+https://registry.example/index"
checksum = "aa"

[[package]]
name = "anyhow"
version = "1.0.0"
source = "registry+https://registry.example/index"
checksum = "bb"

[[package]]
name = "forked"
version = "0.1.0"
source = "git+https://git.example/forked#abc"
"#;
        let crates = locked_crates(text).unwrap();
        assert_eq!(
            crates.iter().map(LockedCrate::file).collect::<Vec<_>>(),
            ["anyhow-1.0.0.crate", "zip-2.4.2.crate"]
        );
        assert_eq!(crates[1].checksum, "aa");
        let broken = text.replace("checksum = \"aa\"\n", "");
        assert!(
            locked_crates(&broken)
                .unwrap_err()
                .to_string()
                .contains("no checksum for zip")
        );
    }

    #[test]
    fn every_workspace_member_has_its_manifest_embedded() {
        let manifest: toml::Table = toml::from_str(CARGO_TOML).unwrap();
        let members: Vec<&str> = manifest["workspace"]["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        let embedded: Vec<&str> = MEMBERS.iter().map(|(member, _)| *member).collect();
        assert_eq!(
            embedded, members,
            "MEMBERS must list Cargo.toml's workspace members"
        );
    }

    #[test]
    fn cuwheels_own_lock_pins_its_dependencies() {
        let crates = locked_crates(CARGO_LOCK).unwrap();
        for name in ["anyhow", "serde", "zip"] {
            assert!(crates.iter().any(|c| c.name == name), "{name}");
        }
        assert!(crates.iter().all(|c| c.checksum.len() == 64));
    }
}
