//! The driver's own workspace (nix/driver-workspace/): what Nix compiles into
//! the program every derivation runs. Its lock must be the root lock less
//! what the driver does not use, its members every workspace crate the driver
//! depends on and nothing else, and its `[profile.nix]` the root's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    crate::common::repo().to_path_buf()
}

fn manifest(path: &Path) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn driver_manifest() -> toml::Table {
    manifest(&repo().join("nix/driver-workspace/Cargo.toml"))
}

#[test]
fn the_driver_lock_is_the_root_lock_less_what_the_driver_does_not_use() {
    let out = Command::new("bash")
        .arg(repo().join("scripts/driver-lock.sh"))
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A subset with the root's versions: every driver package, as pinned at the root.
    let packages = |path: &Path| -> BTreeSet<(String, String)> {
        manifest(path)["package"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_owned(),
                    p["version"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let root = packages(&repo().join("Cargo.lock"));
    let driver = packages(&repo().join("nix/driver-workspace/Cargo.lock"));
    assert!(driver.is_subset(&root), "{:?}", driver.difference(&root));
    for cli_only in ["cuwheel", "toml_edit", "insta"] {
        assert!(
            driver.iter().all(|(name, _)| name != cli_only),
            "the driver's lock pins {cli_only}, which only the CLI uses"
        );
    }
}

/// The workspace crates the driver package reaches through path
/// dependencies, its own included (cargo's view of the root workspace).
fn path_closure_of_the_driver() -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--no-deps",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let dir_of = |name: &str| -> Option<String> {
        let p = packages.iter().find(|p| p["name"] == name)?;
        let manifest = Path::new(p["manifest_path"].as_str().unwrap());
        let dir = manifest.parent().unwrap().strip_prefix(repo()).unwrap();
        Some(dir.to_str().unwrap().to_owned())
    };
    let mut seen = BTreeSet::new();
    let mut todo = vec!["cuwheel-build".to_owned()];
    while let Some(name) = todo.pop() {
        let Some(dir) = dir_of(&name) else { continue };
        if !seen.insert(dir) {
            continue;
        }
        let package = packages
            .iter()
            .find(|p| p["name"] == name.as_str())
            .unwrap();
        for dep in package["dependencies"].as_array().unwrap() {
            if dep.get("path").is_some() && dep["kind"].is_null() {
                todo.push(dep["name"].as_str().unwrap().to_owned());
            }
        }
    }
    seen
}

#[test]
fn the_driver_workspace_names_exactly_the_crates_the_driver_is_made_of() {
    let members: BTreeSet<String> = driver_manifest()["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(members, path_closure_of_the_driver());
}

#[test]
fn the_driver_and_the_cli_are_compiled_with_the_same_nix_profile() {
    let root = manifest(&repo().join("Cargo.toml"));
    assert_eq!(
        driver_manifest()["profile"]["nix"],
        root["profile"]["nix"],
        "[profile.nix] differs between Cargo.toml and nix/driver-workspace/Cargo.toml"
    );
}
