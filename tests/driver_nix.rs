//! The driver built by Nix (`nix/driver.nix`, the flake's `packages.x86_64-linux.cuwheel`),
//! checked with real Nix: its crate inputs are exactly Cargo.lock's registry packages with
//! Cargo.lock's checksums, and the binary it builds is static, refers to no store path, and
//! answers `--help` on the host, through `nix run`, and like the cargo-built driver.
//!
//! The first run builds the Rust toolchain root and the driver in the sandbox (minutes); later
//! runs find them in the store. The pinned .debs and crates must be in the store: a build that
//! lacks one fails with Nix's message naming it and saying to run `cuwheel fetch`.

// The second tier: `cargo test --features integration` (tests/run.sh).
#![cfg(feature = "integration")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use common::flake::{installable, json, nix_ok, repo};
use common::{cuwheel_bin, run_ok};
use cuwheel::fetch::crates::locked_crates;

/// The driver's store path, built once per test run.
fn nix_built_driver() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| {
        let start = Instant::now();
        let out = nix_ok(&["build", "--no-link", "--json", &installable("cuwheel")]);
        eprintln!(
            "nix build .#cuwheel: {:.1} s (the toolchain root and the driver, unless already in the store)",
            start.elapsed().as_secs_f64()
        );
        let path = json(&out)[0]["outputs"]["out"]
            .as_str()
            .expect("nix build --json names the output")
            .to_owned();
        PathBuf::from(path)
    })
}

#[test]
fn nix_built_driver_is_static_self_contained_and_answers_help() {
    let out = nix_built_driver();
    let bin = out.join("bin/cuwheel");

    // Its closure is itself: no loader, no library, no toolchain path kept alive.
    let refs = run_ok(
        Command::new("nix-store")
            .arg("-q")
            .arg("--references")
            .arg(out),
    );
    assert_eq!(
        String::from_utf8_lossy(&refs.stdout).trim(),
        "",
        "{} refers to store paths",
        out.display()
    );
    let headers = run_ok(Command::new("readelf").args(["-lW"]).arg(&bin));
    let headers = String::from_utf8_lossy(&headers.stdout);
    assert!(
        headers.contains("DYN"),
        "not a position-independent executable:\n{headers}"
    );
    assert!(
        !headers.contains("INTERP"),
        "has an ELF interpreter:\n{headers}"
    );

    // Same help as the driver cargo built for this test run, on the host and through the app,
    // less `init`: the driver Nix builds leaves out that feature (it never runs in a build).
    let help = |cmd: &mut Command| String::from_utf8(run_ok(cmd.arg("--help")).stdout).unwrap();
    let full = help(&mut Command::new(cuwheel_bin()));
    assert!(full.contains("Usage: cuwheel <COMMAND>"), "{full}");
    let init_line = |line: &str| line.trim_start().starts_with("init ");
    assert_eq!(full.lines().filter(|l| init_line(l)).count(), 1, "{full}");
    let expected: String = full
        .lines()
        .filter(|line| !init_line(line))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(help(&mut Command::new(&bin)), expected);
    let app = nix_ok(&["run", &installable("cuwheel"), "--", "--help"]);
    assert_eq!(String::from_utf8(app.stdout).unwrap(), expected);
}

#[test]
fn crate_inputs_are_exactly_cargo_locks_registry_packages() {
    let text = std::fs::read_to_string(repo().join("Cargo.lock")).unwrap();
    // What `cuwheel fetch` adds to the store for the driver.
    let expected: BTreeMap<String, String> = locked_crates(&text)
        .unwrap()
        .into_iter()
        .map(|krate| (krate.file(), krate.checksum))
        .collect();
    assert!(
        expected.len() > 50,
        "Cargo.lock lists {} crates",
        expected.len()
    );

    // The vendor directory's derivation and, recursively, every derivation it depends on.
    let shown = json(&nix_ok(&[
        "show-derivation",
        "--recursive",
        &installable("cuwheel.vendor"),
    ]));
    let drvs = shown.as_object().unwrap();
    let vendor = drvs
        .values()
        .find(|d| d["env"]["name"] == "cuwheel-vendor")
        .expect("the vendor derivation is shown");
    let mut inputs = BTreeMap::new();
    for drv_path in vendor["inputDrvs"].as_object().unwrap().keys() {
        let drv = &drvs[drv_path];
        let name = drv["env"]["name"].as_str().unwrap().to_owned();
        if !name.ends_with(".crate") {
            continue; // the busybox and patchelf seeds
        }
        let output = &drv["outputs"]["out"];
        assert_eq!(
            output["hashAlgo"], "sha256",
            "{name} is a flat sha256 fixed-output path"
        );
        inputs.insert(name, output["hash"].as_str().unwrap().to_owned());
    }
    assert_eq!(inputs, expected);
}

#[test]
fn driver_and_vendor_directory_rebuild_bit_for_bit() {
    nix_built_driver();
    for attr in ["cuwheel.vendor", "cuwheel"] {
        let start = Instant::now();
        // Nix fails the build if the second output differs from the one in the store.
        nix_ok(&["build", "--no-link", "--rebuild", &installable(attr)]);
        eprintln!(
            "nix build --rebuild .#{attr}: {:.1} s, no difference",
            start.elapsed().as_secs_f64()
        );
    }
}
