//! The demo's toolchains built by `nix/` from `examples/demo-ext/cuwheel.lock`, with real Nix in
//! the sandbox: every lock toolchain and bundle builds, each bundle's check derivation compiles
//! an ATen kernel with the pinned nvcc and gcc and links it (checked here again with our own ELF
//! and fat-binary readers), the compilers are the locked releases, and rebuilding every
//! derivation that is not a pinned artifact gives the same bytes. All three tests are the heavy
//! tier (`tests/run.sh --full`): together they build and rebuild every toolchain of the lock.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh` runs `cuwheel fetch`); the
//! first run builds the toolchains (minutes), later runs find them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use crate::common::flake::{installable, json, nix_ok, nix_ok_with, repo};
use crate::common::run_ok;
use cuwheel::audit::elf::{ElfFacts, nv_fatbin_section};
use cuwheel::audit::fatbin;
use cuwheel::lock::format::{Lock, Toolchain};

fn lock() -> &'static Lock {
    static LOCK: OnceLock<Lock> = OnceLock::new();
    LOCK.get_or_init(|| {
        Lock::read(&repo().join("examples/demo-ext/cuwheel.lock"))
            .unwrap_or_else(|e| panic!("{e:#}"))
    })
}

/// Every toolchain and bundle of the lock, and each bundle's check.
fn attrs() -> Vec<String> {
    let lock = lock();
    let toolchains = lock.toolchains.keys().chain(lock.bundles.keys());
    let checks = lock
        .bundles
        .keys()
        .map(|b| format!("checks.x86_64-linux.toolchain-{b}"));
    toolchains
        .map(|t| format!("toolchains.{t}"))
        .chain(checks)
        .collect()
}

/// The output path of each attribute of the flake's `set` (`legacyPackages.x86_64-linux.toolchains`,
/// `checks.x86_64-linux`), as evaluated: `nix build --json` lists outputs in its own order.
fn out_paths(set: &str, prefix: &str) -> BTreeMap<String, PathBuf> {
    let apply = "set: builtins.mapAttrs (name: drv: drv.outPath) set";
    let paths = json(&nix_ok(&[
        "eval",
        "--json",
        &installable(set),
        "--apply",
        apply,
    ]));
    paths
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, path)| {
            (
                format!("{prefix}{name}"),
                PathBuf::from(path.as_str().unwrap()),
            )
        })
        .collect()
}

/// attr → output path, built once per test run.
fn built() -> &'static BTreeMap<String, PathBuf> {
    static BUILT: OnceLock<BTreeMap<String, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let attrs = attrs();
        let installables: Vec<String> = attrs.iter().map(|a| installable(a)).collect();
        let mut args = vec!["build", "--no-link"];
        args.extend(installables.iter().map(String::as_str));
        let start = Instant::now();
        nix_ok(&args);
        eprintln!(
            "nix build of {} toolchains, bundles and checks: {:.1} s",
            attrs.len(),
            start.elapsed().as_secs_f64()
        );
        let mut paths = out_paths("legacyPackages.x86_64-linux.toolchains", "toolchains.");
        paths.extend(out_paths("checks.x86_64-linux", "checks.x86_64-linux."));
        for attr in &attrs {
            let path = paths
                .get(attr)
                .unwrap_or_else(|| panic!("the flake has no {attr}"));
            assert!(path.exists(), "{attr}: {} was not built", path.display());
        }
        paths
    })
}

fn out(attr: &str) -> &'static Path {
    built()
        .get(attr)
        .unwrap_or_else(|| panic!("{attr} was not built"))
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn bundles_link_their_toolchains_and_checks_compile_aten_for_the_configured_archs() {
    for (bundle, members) in &lock().bundles {
        let dir = out(&format!("toolchains.{bundle}"));
        for member in members {
            let target = std::fs::read_link(dir.join(member)).unwrap();
            assert_eq!(
                target,
                out(&format!("toolchains.{member}")),
                "{bundle}/{member}"
            );
        }

        let check = out(&format!("checks.x86_64-linux.toolchain-{bundle}"));
        let report = std::fs::read_to_string(check.join("report.txt")).unwrap();
        let kernel = std::fs::read(check.join("libcuwheel_check.so")).unwrap();
        let facts = ElfFacts::parse("libcuwheel_check.so", &kernel).unwrap();
        for lib in ["libc10.so", "libc10_cuda.so", "libtorch_cpu.so"] {
            assert!(
                facts.needed.iter().any(|n| n == lib),
                "{bundle}: {:?} lacks {lib}",
                facts.needed
            );
        }
        assert!(
            facts.rpath.is_empty() && facts.runpath.is_empty(),
            "{bundle}: {facts:?}"
        );
        let section = nv_fatbin_section("libcuwheel_check.so", &kernel)
            .unwrap()
            .unwrap_or_else(|| panic!("{bundle}: the kernel has no .nv_fatbin"));
        let images = fatbin::parse(section).unwrap();
        let sass: Vec<String> = images.sass().iter().map(|a| a.to_string()).collect();
        assert_eq!(sass, ["80", "90"], "{bundle}: {report}");
        assert!(images.ptx().is_empty(), "{bundle}: {report}");
        assert!(
            report.contains("MODULE EXPORT GLOBAL FUNC PyInit_cuwheel_check"),
            "{report}"
        );
    }
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn compilers_are_the_locked_releases_and_run_outside_the_sandbox_too() {
    let lock = lock();
    for (name, toolchain) in &lock.toolchains {
        let dir = out(&format!("toolchains.{name}"));
        match toolchain {
            Toolchain::Cuda(cuda) => {
                let version = &cuda.version;
                let nvcc = run_ok(Command::new(dir.join("bin/nvcc")).arg("--version"));
                let text = String::from_utf8_lossy(&nvcc.stdout);
                assert!(
                    text.contains(&format!("release {version},")),
                    "{name}: {text}"
                );
            }
            Toolchain::Gcc { gcc, .. } => {
                let gcc_version = run_ok(Command::new(dir.join("bin/gcc")).arg("-dumpversion"));
                assert_eq!(
                    String::from_utf8_lossy(&gcc_version.stdout).trim(),
                    gcc,
                    "{name}"
                );
            }
            _ => {}
        }
    }
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn every_built_derivation_rebuilds_bit_for_bit() {
    let attrs = attrs();
    built();
    let installables: Vec<String> = attrs.iter().map(|a| installable(a)).collect();
    let mut args = vec!["show-derivation", "--recursive"];
    args.extend(installables.iter().map(String::as_str));
    let shown = json(&nix_ok(&args));
    let lock = lock();
    // Pinned artifacts and seeds are added by `cuwheel fetch`, never built: nothing to rebuild.
    let pinned: BTreeSet<&str> = lock
        .artifacts
        .keys()
        .chain(lock.seeds.keys())
        .map(String::as_str)
        .collect();
    let drvs: Vec<&String> = shown
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, drv)| !pinned.contains(drv["env"]["name"].as_str().unwrap_or_default()))
        .map(|(path, _)| path)
        .collect();
    assert!(drvs.len() >= attrs.len(), "{drvs:?}");
    let start = Instant::now();
    // `--check` rebuilds each one and fails if any output differs from the store's.
    let mut args = vec!["--realise", "--check"];
    args.extend(drvs.iter().map(|d| d.as_str()));
    nix_ok_with("nix-store", &args);
    eprintln!(
        "nix-store --realise --check of {} derivations: {:.1} s, no difference",
        drvs.len(),
        start.elapsed().as_secs_f64()
    );
}
