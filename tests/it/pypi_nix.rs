//! The demo's PyPI variant built by real Nix (`[tool.cuwheel.pypi]`: CUDA
//! 13.0, torch 2.11): `pypi.cu130-py313-torch211` is a wheel with no local
//! label whose extension module is byte for byte the one of the cell's
//! labelled wheel (the same link node: no second compile), whose METADATA
//! pins the same torch and whose SBOM names the PyPI version; its audit ran
//! PyPI's rules, and real `twine check` accepts it. The labelled wheel fails
//! `cuwheel audit --pypi`, naming the local label. In the heavy tier,
//! `nix run .#publish -- --pypi DIR` writes exactly the PyPI wheel into DIR.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::flake::{installable, json, nix_ok};
use crate::common::{TestEnv, cuwheel_bin, run_ok};
use cuwheel::wheel::WheelArchive;

const CELL: &str = "cu130-py313-torch211";

/// The `.whl` in a result directory.
fn wheel_in(result: &Path) -> PathBuf {
    let wheels: Vec<PathBuf> = fs::read_dir(result)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{}: {wheels:?}", result.display());
    wheels[0].clone()
}

fn member(wheel: &Path, suffix: &str) -> (String, Vec<u8>) {
    let bytes = fs::read(wheel).unwrap();
    let archive = WheelArchive::from_bytes(wheel, &bytes).unwrap();
    let found = archive
        .members()
        .iter()
        .find(|m| m.name.ends_with(suffix))
        .unwrap_or_else(|| panic!("{}: no member ending in {suffix}", wheel.display()));
    (found.name.clone(), found.data.clone())
}

#[test]
fn the_pypi_wheel_shares_the_link_and_passes_pypis_rules() {
    let env = TestEnv::get();
    let built = json(&nix_ok(&[
        "build",
        "--no-link",
        "--json",
        &installable(&format!("pypi.{CELL}")),
        &installable(&format!("wheels.{CELL}")),
    ]));
    // `nix build --json` lists the results in its own order: tell them by name.
    let (pypi_out, labelled_out): (Vec<PathBuf>, Vec<PathBuf>) = built
        .as_array()
        .unwrap()
        .iter()
        .map(|b| PathBuf::from(b["outputs"]["out"].as_str().unwrap()))
        .partition(|out| out.to_string_lossy().contains("-audit-pypi-"));
    assert_eq!((pypi_out.len(), labelled_out.len()), (1, 1), "{built}");
    let (pypi, labelled) = (wheel_in(&pypi_out[0]), wheel_in(&labelled_out[0]));
    let name = pypi.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("demo_ext-0.1.0-cp313-cp313-manylinux_"),
        "{name}"
    );
    assert!(
        labelled
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("demo_ext-0.1.0+pt211cu130-cp313-cp313-"),
        "{}",
        labelled.display()
    );

    // The same extension module: one link, no second compile.
    let (module, pypi_so) = member(&pypi, ".so");
    let (_, labelled_so) = member(&labelled, ".so");
    assert_eq!(module, "demo_ext/_C.cpython-313-x86_64-linux-gnu.so");
    assert!(pypi_so == labelled_so, "the PyPI wheel's module differs");

    let (_, metadata) = member(&pypi, ".dist-info/METADATA");
    let metadata = String::from_utf8(metadata).unwrap();
    assert!(metadata.contains("\nVersion: 0.1.0\n"), "{metadata}");
    assert!(
        metadata.contains("\nRequires-Dist: torch<2.12,>=2.11\n")
            || metadata.contains("\nRequires-Dist: torch>=2.11,<2.12\n"),
        "{metadata}"
    );
    let (sbom_name, sbom) = member(&pypi, ".dist-info/sboms/cuwheel.cdx.json");
    assert_eq!(sbom_name, "demo_ext-0.1.0.dist-info/sboms/cuwheel.cdx.json");
    let sbom: serde_json::Value = serde_json::from_slice(&sbom).unwrap();
    assert_eq!(sbom["metadata"]["component"]["version"], "0.1.0", "{sbom}");

    // The audit node ran PyPI's rules.
    let report = fs::read_to_string(pypi_out[0].join("audit.txt")).unwrap();
    assert!(report.contains("PyPI's rules checked"), "{report}");

    // twine accepts it; the demo has no readme, which twine warns of and
    // the audit notes (--strict would refuse it).
    let out = run_ok(Command::new(env.venv_bin("twine")).arg("check").arg(&pypi));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("PASSED with warnings"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(report.contains("no long description"), "{report}");

    let out = Command::new(cuwheel_bin())
        .args(["audit", "--pypi"])
        .arg(&labelled)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("0.1.0+pt211cu130 has a local label"),
        "{said}"
    );
}

/// The publish app builds the PyPI wheels of the cells named and writes
/// exactly them. Heavy: the app runs the CLI that Nix builds, a second
/// compilation of cuwheel (minutes on 2 cores) that no other test of CI's
/// tier needs.
#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn the_publish_app_writes_exactly_the_pypi_wheels_of_the_cells_named() {
    let built = json(&nix_ok(&[
        "build",
        "--no-link",
        "--json",
        &installable(&format!("pypi.{CELL}")),
    ]));
    let pypi = wheel_in(Path::new(built[0]["outputs"]["out"].as_str().unwrap()));
    let name = pypi.file_name().unwrap().to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("dist");
    let dir_arg = dir.to_str().unwrap();
    let out = nix_ok(&[
        "run",
        &installable("publish"),
        "--",
        "--pypi",
        dir_arg,
        "--cell",
        CELL,
    ]);
    let listed: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(
        listed,
        [name.to_string()],
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(fs::read(dir.join(name)).unwrap(), fs::read(&pypi).unwrap());
}
