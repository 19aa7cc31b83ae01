//! Cross-check: `cuwheel audit`'s platform verdict on real manylinux wheels
//! (tests/fixtures/real-wheels.txt, fetched by tests/prepare.sh) against
//! `auditwheel show` (pinned in tests/requirements.txt).
//!
//! Judged like auditwheel (`--no-runtime-provided`), the most compatible
//! tag must be auditwheel's `overall_tag` for every wheel. Judged by
//! default, it must still be equal, except for wheels whose only extra
//! libraries are the torch/CUDA sonames cuwheel declares as provided at run
//! time: for those the test asserts exactly that, and that cuwheel's tag is
//! auditwheel's `sym_tag` (the tag the symbols alone allow).

use crate::audit_support;
use crate::common;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use crate::common::TestEnv;
use serde_json::Value;

/// The `name==version` lines of tests/fixtures/real-wheels.txt.
fn listed_wheels() -> Vec<(String, String)> {
    let list =
        std::fs::read_to_string(crate::common::repo().join("tests/fixtures/real-wheels.txt"))
            .unwrap();
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, version) = l.split_once("==").expect("name==version");
            (name.to_string(), version.to_string())
        })
        .collect()
}

/// The downloaded wheel of `name==version`.
fn wheel_file(env: &TestEnv, name: &str, version: &str) -> PathBuf {
    let prefix = format!("{}-{version}-", name.replace('-', "_"));
    let found: Vec<PathBuf> = std::fs::read_dir(env.wheels_dir())
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run `bash tests/prepare.sh`",
                env.wheels_dir().display()
            )
        })
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let file = p.file_name().unwrap().to_string_lossy().to_lowercase();
            file.starts_with(&prefix) && file.ends_with(".whl")
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one wheel for {name}=={version} in {}: run `bash tests/prepare.sh`",
        env.wheels_dir().display()
    );
    found.into_iter().next().unwrap()
}

fn auditwheel_show(env: &TestEnv, wheel: &PathBuf) -> Value {
    let tool = env.venv_bin("auditwheel");
    assert!(
        tool.is_file(),
        "{} is missing: run `bash tests/prepare.sh`",
        tool.display()
    );
    let out = common::run_ok(Command::new(tool).arg("show").arg("--json").arg(wheel));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn platform_verdict_equals_auditwheel_show() {
    let env = TestEnv::get();
    let runtime_provided = cuwheel::audit::loader::runtime_provided().sonames();
    let wheels = listed_wheels();
    assert!(wheels.len() >= 6, "at least six real wheels are compared");

    let mut equal = 0;
    let mut torch_linked = 0;
    let mut abi3 = 0;
    for (name, version) in &wheels {
        let wheel = wheel_file(&env, name, version);
        let theirs = auditwheel_show(&env, &wheel);
        let overall = theirs["overall_tag"].as_str().expect("overall_tag");
        let symbols = theirs["sym_tag"].as_str().expect("sym_tag");
        let external: BTreeSet<String> = theirs["external_libs"]
            .as_object()
            .expect("external_libs")
            .keys()
            .cloned()
            .collect();

        // Judged as auditwheel judges: the same tag, always.
        let (_, strict) =
            audit_support::audit_json(["--no-runtime-provided".as_ref(), wheel.as_os_str()]);
        assert_eq!(
            strict["platform"]["allowed"], overall,
            "{name}: cuwheel --no-runtime-provided vs auditwheel show"
        );

        // Judged by default, with torch's and CUDA's libraries provided at run time.
        let (_, report) = audit_support::audit_json([wheel.as_os_str()]);
        let allowed = report["platform"]["allowed"].as_str().unwrap();
        if external.is_empty() {
            assert_eq!(allowed, overall, "{name}: cuwheel audit vs auditwheel show");
            equal += 1;
        } else {
            // The only difference allowed: auditwheel counts the torch/CUDA
            // libraries as external (so `linux`), cuwheel as provided.
            assert!(
                external.is_subset(&runtime_provided),
                "{name}: auditwheel's external libraries {external:?} are not all runtime-provided"
            );
            assert_eq!(overall, "linux_x86_64", "{name}");
            assert_eq!(
                allowed, symbols,
                "{name}: cuwheel's tag must be auditwheel's sym_tag"
            );
            let provided_here: BTreeSet<String> = report["elf_files"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|e| e["needed"].as_array().unwrap().iter())
                .filter(|n| n["resolves"] == "runtime-provided")
                .map(|n| n["soname"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                provided_here, external,
                "{name}: the runtime-provided sonames"
            );
            torch_linked += 1;
        }
        // Published abi3 wheels keep to their stable ABI.
        if wheel.to_string_lossy().contains("-abi3-") {
            assert!(report["abi3_baseline"].is_string(), "{name}");
            let abi3_findings: Vec<&Value> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["check"] == "abi3")
                .collect();
            assert!(abi3_findings.is_empty(), "{name}: {abi3_findings:?}");
            abi3 += 1;
        }
    }
    assert_eq!(equal + torch_linked, wheels.len());
    assert!(torch_linked >= 1, "a wheel linking libtorch is compared");
    assert!(equal >= 6, "at least six wheels agree exactly");
    assert!(abi3 >= 2, "two abi3 wheels are checked");
    eprintln!(
        "compared {} wheels with auditwheel: {equal} equal, {torch_linked} differing only by \
         runtime-provided torch/CUDA libraries; {abi3} abi3 wheels clean",
        wheels.len()
    );
}
