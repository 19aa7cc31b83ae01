//! Every cuwheel wheel carries a PEP 770 SBOM,
//! `.dist-info/sboms/cuwheel.cdx.json`: built here from the demo's real plan
//! and lock through the wheel node's own recipe, it validates against the
//! CycloneDX 1.5 JSON schema with the CycloneDX project's library
//! (cyclonedx-python-lib, in the test venv), lists every pinned artifact
//! with its sha256 and package URL, is byte-identical when built again, and
//! the audit fails a wheel whose SBOM disagrees with its provenance.
//!
//! Needs the test venv (`bash tests/prepare.sh`) and a C compiler; no Nix.

use crate::common::demo;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestEnv;
use cuwheel::audit::{AuditOptions, audit_wheel};
use cuwheel::build::WheelRecipe;
use cuwheel::lock::format::Lock;
use cuwheel::plan::{Plan, sources};
use cuwheel::spec::Spec;
use cuwheel::wheel::{WheelFile, ZipTimestamp};
use serde_json::Value;

const CELL: &str = "cu130-py313-torch211";
const EPOCH: u64 = 1_700_000_000;

/// The recipe the demo's wheel node hands `cuwheel build-wheel` for CELL.
fn demo_recipe() -> WheelRecipe {
    let spec = Spec::load(&demo()).unwrap();
    let lock = Lock::read(&demo().join("cuwheel.lock")).unwrap();
    let cells = spec.cells(&lock.facts).unwrap();
    let project = sources::read(&spec).unwrap();
    let plan = Plan::new(
        &spec.config,
        &project,
        &cells,
        &lock,
        Path::new("cuwheel.lock"),
    )
    .unwrap();
    let script = &plan.nodes[&plan.cells[CELL].wheel].script;
    let start = script.find("<<'CUWHEEL_RECIPE'\n").unwrap() + "<<'CUWHEEL_RECIPE'\n".len();
    let end = script.find("CUWHEEL_RECIPE\n\"").unwrap();
    serde_json::from_str(&script[start..end]).unwrap()
}

/// Builds `recipe`'s wheel from a tree holding one real (empty) shared
/// object and the license files; returns the wheel's path.
fn build(recipe: &WheelRecipe, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    let package = tree.join("demo_ext");
    fs::create_dir_all(&package).unwrap();
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-x", "c", "/dev/null", "-o"])
        .arg(package.join("_C.so"))
        .status()
        .unwrap();
    assert!(status.success(), "cc failed");
    let version = recipe.metadata.version.to_string();
    let licenses = tree.join(format!("demo_ext-{version}.dist-info/licenses"));
    for file in &recipe.metadata.license_files {
        let path = licenses.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "MIT License\n").unwrap();
    }
    let timestamp = ZipTimestamp::from_unix_seconds(EPOCH).unwrap();
    recipe.build(&tree, &dir.join("out"), timestamp).unwrap()
}

fn sbom_of(wheel: &Path) -> Vec<u8> {
    let file = WheelFile::open(wheel).unwrap();
    let member = format!("{}/sboms/cuwheel.cdx.json", file.dist_info_dir());
    file.read_member(&member, 1 << 24)
        .unwrap()
        .unwrap_or_else(|| panic!("{} has no {member}", wheel.display()))
}

fn sbom_findings(wheel: &Path) -> Vec<String> {
    let report = audit_wheel(wheel, &AuditOptions::default()).unwrap();
    report
        .findings
        .iter()
        .filter(|f| f.check.id == "sbom")
        .map(|f| f.problem.clone())
        .collect()
}

#[test]
fn the_demo_wheel_s_sbom_validates_lists_every_pinned_artifact_and_is_stable() {
    let env = TestEnv::get();
    let recipe = demo_recipe();
    let dir = tempfile::tempdir().unwrap();
    let wheel = build(&recipe, &dir.path().join("a"));
    let bytes = sbom_of(&wheel);
    let path = dir.path().join("cuwheel.cdx.json");
    fs::write(&path, &bytes).unwrap();

    // The CycloneDX project's strict validator for spec 1.5.
    let validate = "import sys\n\
        from cyclonedx.schema import SchemaVersion\n\
        from cyclonedx.validation.json import JsonStrictValidator\n\
        errors = JsonStrictValidator(SchemaVersion.V1_5).validate_str(open(sys.argv[1]).read())\n\
        print(errors if errors else 'valid')\n\
        sys.exit(1 if errors else 0)\n";
    let out = Command::new(env.python())
        .args(["-c", validate])
        .arg(&path)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the SBOM does not validate: {said}");
    assert_eq!(said.trim(), "valid");

    let sbom: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(sbom["specVersion"], "1.5");
    assert_eq!(sbom["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    assert_eq!(sbom["metadata"]["component"]["name"], "demo-ext");
    assert_eq!(
        sbom["metadata"]["component"]["purl"],
        "pkg:pypi/demo-ext@0.1.0+pt211cu130"
    );
    let components = sbom["components"].as_array().unwrap();
    let hashes: BTreeSet<String> = components
        .iter()
        .filter(|c| c["scope"] == "excluded")
        .map(|c| c["hashes"][0]["content"].as_str().unwrap().to_string())
        .collect();
    let pinned: BTreeSet<String> = recipe
        .provenance
        .toolchains
        .values()
        .flat_map(|t| t.artifacts.values().cloned())
        .collect();
    assert!(!pinned.is_empty());
    assert_eq!(
        hashes, pinned,
        "the build components are the provenance's artifacts"
    );
    let purls: Vec<&str> = components
        .iter()
        .map(|c| c["purl"].as_str().unwrap())
        .collect();
    for wanted in [
        "pkg:pypi/nvidia-cuda-nvcc@13.0.88?file_name=",
        "pkg:deb/debian/libc6-dev@",
        "pkg:pypi/torch@2.11.0?file_name=torch-2.11.0-",
        "pkg:pypi/torch@2.11.0",
        "pkg:pypi/nvidia-cuda-runtime",
    ] {
        assert!(
            purls.iter().any(|p| p.starts_with(wanted)),
            "no component's purl starts with {wanted}: {purls:#?}"
        );
    }
    // A Debian epoch is the package's real version, percent-encoded.
    assert!(
        purls
            .iter()
            .any(|p| p.starts_with("pkg:deb/debian/libgmp10@2:6.2.1")),
        "no epoch in any Debian purl: {purls:#?}"
    );
    // Run-time needs are the wheel's dependencies.
    assert_eq!(
        sbom["dependencies"][0]["dependsOn"],
        serde_json::json!(["pkg:pypi/torch@2.11.0", "pkg:pypi/nvidia-cuda-runtime"])
    );

    // Built again elsewhere: the same bytes, serial number included.
    let again = build(&recipe, &dir.path().join("b"));
    assert_eq!(sbom_of(&again), bytes);
    assert_eq!(fs::read(&again).unwrap(), fs::read(&wheel).unwrap());
    assert!(
        sbom["serialNumber"]
            .as_str()
            .unwrap()
            .starts_with("urn:uuid:")
    );
    assert_eq!(sbom_findings(&wheel), Vec::<String>::new());
}

#[test]
fn the_audit_fails_a_wheel_whose_sbom_disagrees_with_its_provenance() {
    let mut recipe = demo_recipe();
    let dir = tempfile::tempdir().unwrap();
    // One build component's digest changed, as a tampered SBOM would say.
    let first = recipe.sbom.built_from[0].sha256.clone().unwrap();
    recipe.sbom.built_from[0].sha256 = Some("ab".repeat(32));
    let wheel = build(&recipe, &dir.path().join("tampered"));
    let findings = sbom_findings(&wheel);
    assert_eq!(findings.len(), 1, "{findings:?}");
    let finding = &findings[0];
    assert!(
        finding.starts_with("the SBOM disagrees with cuwheel-provenance.json: 1 pinned artifact(s) of the provenance are not in it (sha256 "),
        "{finding}"
    );
    assert!(finding.contains(&first[..12]), "{finding}");
    assert!(
        finding.contains(
            "it lists 1 build component(s) the provenance does not pin (sha256 abababababab)"
        ),
        "{finding}"
    );
    let report = audit_wheel(&wheel, &AuditOptions::default()).unwrap();
    assert!(!report.passed);
}
