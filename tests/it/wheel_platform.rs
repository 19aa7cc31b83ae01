//! The platform tag of a wheel cuwheel builds, chosen from its real linked
//! module: shared objects compiled here by the system gcc are assembled by
//! the wheel step (`WheelRecipe::build`, what `cuwheel build-wheel` runs in
//! the wheel derivation), and the tag is what their symbol versions prove,
//! capped by torch's tag — checked against `cuwheel audit` of the result.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::audit_support::{audit_json, gcc};
use crate::common;
use cuwheel::build::{Provenance, WheelRecipe};
use cuwheel::wheel::{
    CoreMetadata, PlatformRule, ProjectName, Version, WheelArchive, ZipTimestamp,
};

fn recipe(least: &str, most: &str) -> WheelRecipe {
    let sources = BTreeMap::new();
    let mut metadata = CoreMetadata::new(
        ProjectName::new("plat-ext").unwrap(),
        Version::parse("0.1.0+pt27cu126").unwrap(),
    );
    metadata.requires_dist = vec!["torch>=2.7,<2.8".into()];
    WheelRecipe {
        metadata,
        tag: "cp311-cp311".into(),
        platform: PlatformRule {
            least_compatible: format!("{least}_x86_64"),
            most_compatible: format!("{most}_x86_64"),
        },
        provenance: Provenance {
            cell: "cu126-py311".into(),
            cuda_archs: vec![],
            config_sha256: "00".repeat(32),
            source_sha256: Provenance::source_sha256(&sources),
            sources,
            toolchains: BTreeMap::new(),
            seeds: BTreeMap::new(),
            nvcc: "12.4".into(),
            cuwheel: "0.1.0".into(),
        },
        sbom: Default::default(),
    }
}

/// A tree holding one extension module compiled from `body`.
fn tree_with_module(dir: &Path, body: &str) -> std::path::PathBuf {
    gcc(
        dir,
        "tree/plat_ext/_C.cpython-311-x86_64-linux-gnu.so",
        &format!("{body}\nvoid *PyInit__C(void) {{ return 0; }}\n"),
        false,
        &["-shared", "-fPIC", "-O1"],
    );
    dir.join("tree")
}

fn built_name(recipe: &WheelRecipe, tree: &Path, out: &Path) -> String {
    let path = recipe
        .build(tree, out, ZipTimestamp::from_unix_seconds(0).unwrap())
        .unwrap_or_else(|e| panic!("{e:#}"));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    WheelArchive::open(&path).unwrap();
    name
}

#[test]
fn the_tag_is_what_the_symbols_prove_capped_by_torch() {
    let dir = tempfile::tempdir().unwrap();
    // memcpy@GLIBC_2.14 only: the module proves manylinux_2_17.
    let tree = tree_with_module(
        dir.path(),
        "#include <string.h>\nvoid copy(char *a, const char *b, unsigned long n) { memcpy(a, b, n); }",
    );
    let capped = built_name(
        &recipe("manylinux_2_36", "manylinux_2_28"),
        &tree,
        &dir.path().join("capped"),
    );
    assert_eq!(
        capped,
        "plat_ext-0.1.0+pt27cu126-cp311-cp311-manylinux_2_28_x86_64.whl"
    );
    let proven = built_name(
        &recipe("manylinux_2_36", "manylinux_2_5"),
        &tree,
        &dir.path().join("proven"),
    );
    // The audit of that wheel agrees: it allows exactly the tag it carries
    // (the audit fails only for the CUDA archs this C module has none of).
    let (_, report) = audit_json([dir.path().join("proven").join(&proven)]);
    let allowed = report["platform"]["allowed"].as_str().unwrap().to_string();
    assert_eq!(
        proven,
        format!("plat_ext-0.1.0+pt27cu126-cp311-cp311-{allowed}.whl")
    );
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert!(!checks.iter().any(|c| c.contains("platform")), "{report}");
    assert!(allowed.starts_with("manylinux_2_1"), "{allowed}");
}

#[test]
fn a_module_needing_more_than_its_baseline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // This machine's glibc is newer than 2.17; a symbol versioned after it
    // (getrandom, GLIBC_2.25) makes the module need at least that.
    let tree = tree_with_module(
        dir.path(),
        "#include <sys/random.h>\nlong r(void *b) { return getrandom(b, 8, 0); }",
    );
    let out = dir.path().join("out");
    let err = recipe("manylinux_2_17", "manylinux_2_28")
        .build(&tree, &out, ZipTimestamp::from_unix_seconds(0).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cell cu126-py311: the linked module allows only manylinux_2_"),
        "{err}"
    );
    assert!(
        err.contains("less compatible than the baseline's manylinux_2_17_x86_64"),
        "{err}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    // readelf agrees that the module asks for GLIBC_2.25.
    let module = tree.join("plat_ext/_C.cpython-311-x86_64-linux-gnu.so");
    let readelf = common::run_ok(Command::new("readelf").arg("-V").arg(&module));
    assert!(String::from_utf8_lossy(&readelf.stdout).contains("GLIBC_2.25"));
}
