//! Bit for bit under the flags real setup.py files pass, not just the
//! demo's (design decision 13): a kernel object and a binding of the demo,
//! built by real Nix in the sandbox with each flag set below, then built
//! again by `nix-store --realise --check`, which fails on any difference.
//!
//! - `-lineinfo`: nvcc's device line table records the path, modification
//!   time and size of every file a device function comes from;
//! - `-g -G` for nvcc and `-g` for g++: host and device debug information
//!   (paths, the build directory);
//! - `--ptxas-options=-v`: ptxas' resource report.
//!
//! `-lineinfo` is also built for an aarch64 cell, whose cross gcc keeps its
//! programs elsewhere (`usr/lib/gcc-cross/`) for the mapped compile to find.
//!
//! The second build runs seconds after the first, so a source staged with
//! the build's clock, an unfixed time zone or path shows up as a difference.
//! And where a build does differ — the same kernel with its staged source
//! given the build's clock again — `cuwheel reproduce`'s localisation names
//! the fat-binary member, its ELF section and a timestamp as the cause.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use std::fs;
use std::path::Path;

use std::process::Command;

use crate::common::flake::{json, nix_ok, nix_ok_with, repo};
use crate::common::project::{copy_demo_lock, copy_dir, nodes_expr, write_plan};
use cuwheel::plan::Plan;
use cuwheel::reproduce::localize::{Cause, localize, render};
use cuwheel::reproduce::rebuild::not_deterministic;

const CELL: &str = "cu130-py313-torch211";
/// A cross-built cell of the demo.
const AARCH64_CELL: &str = "cu130-py313-torch211-aarch64";

/// The demo, copied into `dir` with SASS and PTX for one arch and these
/// flags (its matrix unchanged: the tests build one cell's nodes).
fn demo_with_flags(dir: &Path, nvcc: &[&str], cxx: &[&str]) -> std::path::PathBuf {
    let project = dir.join("demo-ext");
    copy_dir(&repo().join("examples/demo-ext"), &project);
    let path = project.join("pyproject.toml");
    let mut doc: toml_edit::DocumentMut = fs::read_to_string(&path).unwrap().parse().unwrap();
    let tool = &mut doc["tool"]["cuwheel"];
    tool["cuda-archs"] = toml_edit::value(toml_edit::Array::from_iter(["9.0+PTX"]));
    tool["nvcc-flags"] = toml_edit::value(toml_edit::Array::from_iter(nvcc.iter().copied()));
    tool["cxx-flags"] = toml_edit::value(toml_edit::Array::from_iter(cxx.iter().copied()));
    fs::write(&path, doc.to_string()).unwrap();
    copy_demo_lock(&project);
    project
}

/// Builds `nodes` of `project`'s plan, then has Nix build them again and
/// compare (`--check`); panics with Nix's message on any difference.
/// Returns the nodes' outputs.
fn build_twice(project: &Path, nodes: &[String]) -> Vec<std::path::PathBuf> {
    let plan = write_plan(project);
    let parsed: Plan = serde_json::from_slice(&fs::read(&plan).unwrap()).unwrap();
    for node in nodes {
        let script = &parsed.nodes[node].script;
        assert!(script.contains("touch -d @1"), "{node}: {script}");
        assert!(script.contains("SOURCE_DATE_EPOCH=1"), "{node}: {script}");
    }
    let drvs = drvs_of(project, &plan, nodes);
    let mut args = vec!["--realise"];
    args.extend(drvs.iter().map(String::as_str));
    let built = nix_ok_with("nix-store", &args);
    let mut args = vec!["--realise", "--check"];
    args.extend(drvs.iter().map(String::as_str));
    nix_ok_with("nix-store", &args);
    String::from_utf8(built.stdout)
        .unwrap()
        .lines()
        .map(std::path::PathBuf::from)
        .collect()
}

/// The `.drv` of each of `nodes` of the plan at `plan`.
fn drvs_of(project: &Path, plan: &Path, nodes: &[String]) -> Vec<String> {
    let expr = format!(
        "let nodes = {}; in map (n: nodes.${{n}}.drvPath) (builtins.fromJSON ''{}'')",
        nodes_expr(project, plan, false),
        serde_json::to_string(nodes).unwrap()
    );
    serde_json::from_value(json(&nix_ok(&[
        "eval", "--impure", "--json", "--expr", &expr,
    ])))
    .unwrap()
}

/// The cell's first kernel and, with `binding`, its binding.
fn nodes_of(project: &Path, binding: bool) -> Vec<String> {
    nodes_in(project, CELL, binding)
}

/// [`nodes_of`] of `cell`.
fn nodes_in(project: &Path, cell: &str, binding: bool) -> Vec<String> {
    let plan: Plan = serde_json::from_slice(&fs::read(write_plan(project)).unwrap()).unwrap();
    let cell = &plan.cells[cell];
    let mut nodes = vec![cell.kernels.first().unwrap().clone()];
    if binding {
        nodes.push(cell.bindings.first().unwrap().clone());
    }
    nodes
}

#[test]
fn a_kernel_with_device_line_info_rebuilds_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let project = demo_with_flags(dir.path(), &["-lineinfo"], &["-O3"]);
    build_twice(&project, &nodes_of(&project, false));
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn an_aarch64_kernel_and_binding_with_device_line_info_rebuild_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let project = demo_with_flags(dir.path(), &["-lineinfo"], &["-O3"]);
    let nodes = nodes_in(&project, AARCH64_CELL, true);
    assert!(nodes[0].starts_with("kernel-cuda130-aarch64-"), "{nodes:?}");
    let outputs = build_twice(&project, &nodes);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    // The line table names the mapped paths (the cross gcc's C++ headers
    // found under the mapped sysroot), no store path.
    let mut mapped = false;
    for output in &outputs {
        for entry in fs::read_dir(output).unwrap() {
            let bytes = fs::read(entry.unwrap().path()).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("/nix/store/"), "{}", output.display());
            mapped |= text.contains("/cuwheel/src/");
        }
    }
    assert!(mapped, "no mapped path in {outputs:?}");
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn a_kernel_and_a_binding_with_debug_information_rebuild_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let project = demo_with_flags(dir.path(), &["-g", "-G"], &["-g"]);
    build_twice(&project, &nodes_of(&project, true));
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn a_kernel_with_ptxas_verbose_rebuilds_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let project = demo_with_flags(dir.path(), &["--ptxas-options=-v"], &["-O3"]);
    build_twice(&project, &nodes_of(&project, false));
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn a_clock_in_a_kernels_line_table_is_localized_to_its_member_and_section() {
    let dir = tempfile::tempdir().unwrap();
    let project = demo_with_flags(dir.path(), &["-lineinfo"], &["-O3"]);
    let node = nodes_of(&project, false).remove(0);
    // The plan as every build wrote it before the staged sources got the
    // store's modification time: the source carries the build's clock.
    let plan = write_plan(&project);
    let mut parsed: serde_json::Value = serde_json::from_slice(&fs::read(&plan).unwrap()).unwrap();
    let script = parsed["nodes"][&node]["script"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(script.contains("touch -d @1 {} +"), "{script}");
    parsed["nodes"][&node]["script"] = script.replace("touch -d @1 {} +", "touch {} +").into();
    fs::write(&plan, serde_json::to_vec(&parsed).unwrap()).unwrap();
    let drv = drvs_of(&project, &plan, std::slice::from_ref(&node)).remove(0);
    nix_ok_with("nix-store", &["--realise", &drv]);
    let check = Command::new("nix-store")
        .args([
            "--option",
            "sandbox",
            "true",
            "--option",
            "substituters",
            "",
        ])
        .args(["--realise", "--check", "--keep-failed", &drv])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(
        !check.status.success(),
        "the rebuild did not differ:\n{stderr}"
    );
    let found = not_deterministic(&stderr);
    assert_eq!(found.len(), 1, "{stderr}");
    let kept = found[0]
        .kept
        .as_deref()
        .expect("--keep-failed keeps the rebuild");
    let differences = localize(Path::new(&found[0].output), Path::new(kept)).unwrap();
    let report = render(&differences, "");
    let _ = fs::remove_dir_all(kept);
    assert_eq!(differences.len(), 1, "{report}");
    let object = &differences[0];
    assert!(object.path.ends_with(".o"), "{report}");
    assert_eq!(object.cause, Cause::Timestamp, "{report}");
    let sections: Vec<&str> = object
        .elf
        .as_ref()
        .unwrap()
        .sections
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(sections, [".nv_fatbin"], "{report}");
    let cubin = object
        .members
        .iter()
        .find(|m| m.image == "sm_90")
        .unwrap_or_else(|| panic!("no sm_90 member differs:\n{report}"));
    assert_eq!(cubin.cause, Cause::Timestamp, "{report}");
    let cubin_sections: Vec<&str> = cubin
        .elf
        .as_ref()
        .unwrap()
        .sections
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(cubin_sections.contains(&".debug_line"), "{report}");
    assert!(
        report.contains("fat-binary member sm_90 (cubin) differs; likely cause: a timestamp"),
        "{report}"
    );
}
