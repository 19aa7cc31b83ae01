//! An aarch64 cell of the demo built end to end by real Nix in the sandbox
//! (#25): `wheels.cu130-abi3-torch211-aarch64` is cross-built (bullseye's
//! aarch64 gcc for the host code and the link, the x86_64 nvcc with
//! `-ccbin` at it for the kernels, the aarch64 CUDA runtime and torch
//! wheel), and its audit passes: platform `manylinux_2_28_aarch64`, every
//! ELF file aarch64, the configured SASS and PTX, and a load check against
//! the aarch64 torch's tables. Real pip then picks it, and not the x86_64
//! wheel of the same cell, for an aarch64 platform.
//!
//! The import under qemu-user is `scripts/aarch64-import.sh` (4.4 GB of
//! aarch64 torch and CUDA libraries): docs/reports/aarch64.md records it.
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use std::fs;
use std::process::Command;

use crate::common::flake::{build_cells, wheel_of};
use crate::common::{TestEnv, cuwheel_bin, run_ok};
use cuwheel::wheel::WheelArchive;

const CELL: &str = "cu130-abi3-torch211-aarch64";
/// The same binding for x86_64, which tests/it/wheels_nix.rs builds too.
const X86_CELL: &str = "cu130-abi3-torch211";

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn the_aarch64_cell_cross_builds_passes_its_audit_and_pip_picks_it_for_aarch64() {
    let results = build_cells(&[CELL, X86_CELL]);
    let (arm, x86) = (wheel_of(&results[CELL]), wheel_of(&results[X86_CELL]));
    let name = arm.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        name,
        "demo_ext-0.1.0+pt211cu130-cp39-abi3-manylinux_2_28_aarch64.whl"
    );
    let report = fs::read_to_string(results[CELL].join("audit.txt")).unwrap();
    assert!(report.starts_with(&format!("{name}: PASSED")), "{report}");
    assert!(report.contains("torch 2.11.0: loads"), "{report}");
    // The cargo-built CLI's audit agrees.
    run_ok(Command::new(cuwheel_bin()).arg("audit").arg(&arm));

    // The module is an aarch64 ELF file (EM_AARCH64 = 183) with the same
    // device code as x86_64's: SASS 8.0, 9.0, 9.0a and PTX 9.0.
    let archive = WheelArchive::open(&arm).unwrap();
    let module = archive
        .members()
        .iter()
        .find(|m| m.name.ends_with(".so"))
        .expect("a module");
    assert_eq!(module.name, "demo_ext/_C.abi3.so");
    assert_eq!(&module.data[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([module.data[18], module.data[19]]), 183);
    let (sass, ptx) = crate::common::fatbin_archs(&module.name, &module.data);
    assert_eq!(sass, ["80", "90", "90a"]);
    assert_eq!(ptx, ["90"]);
    // No build machine path: the cross root's crt objects leave no FILE
    // symbol behind (the audit's leak check passed above; this says why).
    let text = String::from_utf8_lossy(&module.data);
    assert!(!text.contains("/nix/store/"), "a store path in the module");

    // pip, given both wheels in one directory, picks each platform's.
    let env = TestEnv::get();
    let links = tempfile::tempdir().unwrap();
    for wheel in [&arm, &x86] {
        fs::copy(wheel, links.path().join(wheel.file_name().unwrap())).unwrap();
    }
    for (platform, want) in [("aarch64", &arm), ("x86_64", &x86)] {
        let dest = tempfile::tempdir().unwrap();
        run_ok(
            Command::new(env.python())
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-index",
                    "--quiet",
                ])
                .args(["--only-binary=:all:", "--python-version", "3.11"])
                .args(["--implementation", "cp"])
                .args(["--platform", &format!("manylinux_2_28_{platform}")])
                .arg("--find-links")
                .arg(links.path())
                .arg("--dest")
                .arg(dest.path())
                .arg("demo-ext==0.1.0+pt211cu130"),
        );
        let got: Vec<String> = fs::read_dir(dest.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            got,
            [want.file_name().unwrap().to_string_lossy().into_owned()],
            "{platform}"
        );
    }
}
