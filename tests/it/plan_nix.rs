//! The plan's kernel objects built by real Nix in the sandbox: the demo's
//! objects of two toolkits (PyPI's CUDA 13.0 and Debian's 12.5) through the flake (the plan made by the Nix-built driver,
//! import from derivation) hold exactly the configured SASS and PTX, name no
//! store path and rebuild bit for bit; editing one `.cu` in a copy of the
//! flake changes only that TU's derivations (and the plan's); a kernel — `.cu` or C++ — that
//! reaches `Python.h` fails saying to move the code into the bindings; headers beside a kernel
//! reach its build and only its derivation.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use crate::common::flake::{flake_copy, installable, json, nix, nix_ok, nix_ok_with};
use crate::common::project::{fixture_with_demo_lock, nodes_expr, write_plan};
use cuwheel::audit::elf::nv_fatbin_section;
use cuwheel::audit::fatbin;

const DEMO_KERNELS: [&str; 4] = ["axpby", "bias_gelu", "row_norm", "tile_matmul"];

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn demo_kernel_objects_hold_the_configured_archs_and_rebuild_bit_for_bit() {
    // Two compiler sets: torch 2.11's (PyPI's CUDA 13.0) and torch 2.7's
    // (Debian's CUDA 12.5).
    let attrs: Vec<String> = ["cuda130-torch211", "cuda125-torch27"]
        .iter()
        .flat_map(|cuda| {
            DEMO_KERNELS
                .iter()
                .map(move |k| installable(&format!("kernels.kernel-{cuda}-{k}")))
        })
        .collect();
    let mut args = vec!["build", "--no-link", "--json"];
    args.extend(attrs.iter().map(String::as_str));
    let built = json(&nix_ok(&args));
    let outs: BTreeSet<PathBuf> = built
        .as_array()
        .unwrap()
        .iter()
        .map(|b| PathBuf::from(b["outputs"]["out"].as_str().unwrap()))
        .collect();
    assert_eq!(outs.len(), 8);
    for out in &outs {
        let name = out.file_name().unwrap().to_string_lossy();
        let stem = DEMO_KERNELS
            .iter()
            .find(|k| name.ends_with(&format!("-{k}")))
            .unwrap_or_else(|| panic!("{name} is not a demo kernel"));
        let files: Vec<String> = fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, [format!("{stem}.o")], "{}", out.display());
        let object = fs::read(out.join(format!("{stem}.o"))).unwrap();
        let section = nv_fatbin_section(stem, &object)
            .unwrap()
            .unwrap_or_else(|| panic!("{stem}.o has no .nv_fatbin"));
        let images = fatbin::parse(section).unwrap();
        let sass: Vec<String> = images.sass().iter().map(|a| a.to_string()).collect();
        let ptx: Vec<String> = images.ptx().iter().map(|a| a.to_string()).collect();
        // CUDA 13.0's list adds the arch-specific sm_90a ("9.0a").
        let expected: &[&str] = if name.contains("cuda130") {
            &["80", "90", "90a"]
        } else {
            &["80", "90"]
        };
        assert_eq!(sass, expected, "{stem}.o: {:?}", images.image_names());
        assert_eq!(ptx, ["90"], "{stem}.o: {:?}", images.image_names());
        for leak in [&b"/nix/store"[..], b"/build/"] {
            assert!(
                !object.windows(leak.len()).any(|w| w == leak),
                "{stem}.o contains {}",
                String::from_utf8_lossy(leak)
            );
        }
    }
    // Nix compares the rebuilt output with the one in the store: one TU per
    // toolkit, 13.0's the one with the sm_90a wgmma code (12.5's nvcc has no
    // --frandom-seed; the PID namespace and -objtemp must suffice there).
    let n = DEMO_KERNELS.len();
    nix_ok(&["build", "--no-link", "--rebuild", &attrs[n - 1], &attrs[n]]);
}

/// The `.drv` of the flake's plan and of each of its kernel objects.
fn flake_drvs(flake: &Path) -> (String, BTreeMap<String, String>) {
    let attr = |a: &str| format!("{}#{a}", flake.display());
    let plan = nix_ok(&["eval", "--raw", &attr("plan.drvPath")]);
    let kernels = json(&nix_ok(&[
        "eval",
        "--json",
        &attr("kernels"),
        "--apply",
        "builtins.mapAttrs (name: drv: drv.drvPath)",
    ]));
    (
        String::from_utf8(plan.stdout).unwrap(),
        serde_json::from_value(kernels).unwrap(),
    )
}

/// Appends a comment to the demo's `row_norm.cu` in the flake copy at
/// `flake`: a new source, so new derivations of that kernel.
fn edit_row_norm(flake: &Path, comment: &str) {
    let tu = flake.join("examples/demo-ext/csrc/kernels/row_norm.cu");
    let mut text = fs::read_to_string(&tu).unwrap();
    text.push_str(&format!("\n// {comment}\n"));
    fs::write(&tu, text).unwrap();
}

#[test]
fn editing_one_kernel_changes_only_its_derivations_and_the_plan() {
    let flake = flake_copy();
    let (plan_before, before) = flake_drvs(flake.path());
    // 4 kernels × 6 toolkits (CUDA 13.0's cross one for the aarch64
    // cells among them), and the stable flavour's own 3 (cu13-stable).
    assert_eq!(before.len(), 27, "{before:?}");
    edit_row_norm(flake.path(), "an edit");
    let (plan_after, after) = flake_drvs(flake.path());
    assert_ne!(
        plan_before, plan_after,
        "the plan reads the project's sources"
    );
    let changed: Vec<&str> = before
        .iter()
        .filter(|(name, drv)| after[*name] != **drv)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        changed,
        [
            "kernel-cuda125-torch27-row_norm",
            "kernel-cuda125-torch29-row_norm",
            "kernel-cuda130-aarch64-row_norm",
            "kernel-cuda130-torch211-row_norm",
            "kernel-cuda130-torch214-row_norm",
            "kernel-cuda132-row_norm",
        ]
    );
}

/// Each kernel node's `.drv` path, by name, for a plan made by this run's
/// cuwheel (the other nodes need the Nix-built driver, which these tests
/// leave out).
fn node_drvs(project: &Path) -> BTreeMap<String, String> {
    let plan = write_plan(project);
    let expr = format!(
        "let nodes = {}; in builtins.listToAttrs (map (n: {{ name = n; value = nodes.${{n}}.drvPath; }}) \
         (builtins.filter (n: builtins.substring 0 7 n == \"kernel-\") (builtins.attrNames nodes)))",
        nodes_expr(project, &plan, false)
    );
    serde_json::from_value(json(&nix_ok(&[
        "eval", "--impure", "--json", "--expr", &expr,
    ])))
    .unwrap()
}

#[test]
fn headers_beside_a_kernel_reach_its_build_and_only_its_derivation() {
    let dir = tempfile::tempdir().unwrap();
    let project = fixture_with_demo_lock("sibling-header", dir.path());
    let plan = write_plan(&project);
    let expr = format!(
        "({}).kernel-cuda132-scale",
        nodes_expr(&project, &plan, false)
    );
    let out = crate::common::flake::build_out(&["--impure", "--expr", &expr]);
    let object = fs::read(out.join("scale.o")).unwrap();
    let images = fatbin::parse(nv_fatbin_section("scale.o", &object).unwrap().unwrap()).unwrap();
    let sass: Vec<String> = images.sass().iter().map(|a| a.to_string()).collect();
    assert_eq!(sass, ["90"]);

    let before = node_drvs(&project);
    let header = project.join("csrc/common/factor.cuh");
    fs::write(&header, "#pragma once\n\nconstexpr float kFactor = 3.0f;\n").unwrap();
    let after = node_drvs(&project);
    let changed: Vec<&str> = before
        .iter()
        .filter(|(name, drv)| after[*name] != **drv)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(changed, ["kernel-cuda132-scale"]);
}

#[test]
fn a_kernel_including_python_h_fails_saying_to_move_it_into_the_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let project = fixture_with_demo_lock("python-h-kernel", dir.path());
    let plan = write_plan(&project);
    for (node, source) in [
        ("kernel-cuda132-uses_extension", "csrc/uses_extension.cu"),
        ("kernel-cuda132-extension_cpu", "csrc/cpu/extension_cpu.cpp"),
    ] {
        let expr = format!("({}).{node}", nodes_expr(&project, &plan, false));
        let out = nix(&["build", "--impure", "--no-link", "--expr", &expr])
            .output()
            .expect("nix runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{node} compiled:\n{stderr}");
        for expected in [
            &format!("cuwheel: kernel {source} includes Python.h"),
            "torch/include/torch/extension.h",
            "move the code that needs Python (torch/extension.h, pybind11, Python.h) into the bindings",
        ] {
            assert!(stderr.contains(expected), "{expected:?} not in:\n{stderr}");
        }
    }
}

/// The seconds a line of `plan --estimate` gives: its `(N s)`, or `N s`.
fn seconds_of(report: &str, prefix: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in\n{report}"));
    let figure = match line.rsplit_once(" s)") {
        Some((before, _)) => before.rsplit('(').next().unwrap(),
        None => line
            .rsplit_once(" s")
            .unwrap()
            .0
            .rsplit(' ')
            .next()
            .unwrap(),
    };
    figure
        .parse()
        .unwrap_or_else(|_| panic!("`{line}` has no seconds"))
}

#[test]
fn plan_takes_a_kernels_duration_and_peak_memory_from_its_build_here() {
    let flake = flake_copy();
    // An edit of our own, new to the store: a derivation no other test,
    // nor an earlier run, built (a build after a collection writes the old
    // log again, and is rightly not timed).
    let edit = format!("plan --estimate's own build {}", common::flake::nonce());
    edit_row_norm(flake.path(), &edit);
    let kernel = "kernel-cuda130-torch211-row_norm";
    let attr = format!("{}#kernels.{kernel}", flake.path().display());
    nix_ok(&["build", "--no-link", &attr]);
    let report = plan_demo(
        flake.path(),
        &["--estimate", "--builders", "4", "--cores", "2"],
    );
    // Its duration is measured (no `~`), and the arithmetic holds.
    let line = report
        .lines()
        .find(|l| l.ends_with(&format!("  {kernel}")))
        .unwrap_or_else(|| panic!("no duration for {kernel} in\n{report}"));
    assert!(!line.contains('~'), "{line}");
    let work = seconds_of(&report, "work:");
    let critical = seconds_of(&report, "critical path:");
    let one = seconds_of(&report, "1 slot:");
    let two = seconds_of(&report, "2 slots:");
    let eight = seconds_of(&report, "8 slots (4 builder(s) × 2):");
    assert_eq!(one, work, "{report}");
    assert!(critical <= eight && eight <= two && two <= one, "{report}");
    assert!(
        two * 2 + 1 >= one,
        "two slots at most halve the work: {report}"
    );

    // What is left from here: the kernel just built is not among it.
    let left = plan_demo(flake.path(), &["--estimate", "--remaining"]);
    assert!(left.contains(" derivations left to build ("), "{left}");
    assert!(!left.contains(&format!("  {kernel}\n")), "{left}");
    assert!(seconds_of(&left, "1 slot:") < one, "{left}\n{report}");

    // What `cuwheel reproduce` of one cell's wheel builds again: the cell's
    // nodes, its kernel among them, and not its toolchains or the driver.
    let rebuilt = plan_demo(
        flake.path(),
        &[
            "--estimate",
            "--reproduce",
            "--cell",
            "cu130-py313-torch211",
        ],
    );
    assert!(
        rebuilt.contains(" derivations built again by `cuwheel reproduce` ("),
        "{rebuilt}"
    );
    let rows: Vec<&str> = rebuilt
        .lines()
        .skip_while(|l| !l.starts_with("durations"))
        .skip(1)
        .collect();
    assert!(
        rows.iter().any(|l| l.ends_with(&format!("  {kernel}"))),
        "{rebuilt}"
    );
    assert!(
        rows.iter()
            .all(|l| !l.ends_with("  driver") && !l.contains("  toolchain:")),
        "{rebuilt}"
    );
    assert!(seconds_of(&rebuilt, "1 slot:") < one, "{rebuilt}\n{report}");

    // The compile recorded its peak memory in the build log, and the plan's
    // memory check reads such figures back.
    let drv = common::text(&nix_ok(&["eval", "--raw", &format!("{attr}.drvPath")]).stdout);
    let log = common::text(&nix_ok_with("nix-store", &["--read-log", &drv]).stdout);
    let kib = cuwheel::plan::compile::peak_rss_kib(&log)
        .unwrap_or_else(|| panic!("no peak RSS in the log of {kernel}:\n{log}"));
    assert!(kib > 10_000, "nvcc's compile took only {kib} KiB?\n{log}");
    let summary = plan_demo(flake.path(), &[]);
    assert!(
        summary.contains("memory: the heaviest compile recorded here is "),
        "{summary}"
    );

    // Collected, the kernel is still timed: its log says what its compile
    // took (the log file's times no longer meet a registered output).
    let timed = duration_of(line);
    let marked = cuwheel::plan::compile::wall_seconds(&log)
        .unwrap_or_else(|| panic!("no wall time in the log of {kernel}:\n{log}"));
    assert!(
        marked > 1.0 && marked <= timed as f64 + 1.0,
        "{marked} s by its mark, {timed} s by the log file's times"
    );
    let out_path = common::text(&nix_ok(&["eval", "--raw", &format!("{attr}.outPath")]).stdout);
    nix_ok_with("nix-store", &["--delete", &out_path]);
    let again = plan_demo(flake.path(), &["--estimate"]);
    let line = again
        .lines()
        .find(|l| l.ends_with(&format!("  {kernel}")))
        .unwrap_or_else(|| panic!("no duration for {kernel} in\n{again}"));
    assert!(!line.contains('~'), "{line}");
    assert!(
        (duration_of(line) as f64 - marked).abs() <= 0.5,
        "{line}: its mark says {marked} s"
    );
}

/// The seconds of a `durations` row of `plan --estimate`: `  ~    60  name`.
fn duration_of(row: &str) -> u64 {
    row.trim_start_matches([' ', '~'])
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("`{row}` has no seconds"))
}

/// `cuwheel plan ARGS` of the demo project in `flake`, built by that flake:
/// what it printed.
fn plan_demo(flake: &Path, args: &[&str]) -> String {
    let out = common::run_ok(
        std::process::Command::new(common::cuwheel_bin())
            .arg("plan")
            .args(args)
            .arg("--project")
            .arg(flake.join("examples/demo-ext"))
            .arg("--flake")
            .arg(flake),
    );
    common::text(&out.stdout)
}
