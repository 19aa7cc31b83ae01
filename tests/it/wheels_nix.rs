//! The demo's wheels built end to end by real Nix in the sandbox, through the
//! flake (`wheels.<cell>`):
//! - torch 2.11's `cu130-py311`, `cu130-py312` (its headers from the archive
//!   the lock pins), `cu130-py313` and `cu130-abi3` pass `cuwheel audit`, hold
//!   exactly the configured SASS and PTX, are tagged `manylinux_2_28` (what
//!   their symbols prove, capped by torch's own tag), and real pip installs
//!   them for a glibc 2.28 platform;
//! - an edited kernel rebuilds one object per compiler set and the relinks,
//!   and a second Python builds no kernel object at all (from Nix's own
//!   output);
//! - every derivation of two cells rebuilds bit for bit, and a second,
//!   empty store builds a byte-identical wheel;
//! - the abi3 audit fails the build of a copy calling outside the stable ABI.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use crate::common;
use crate::common::stderr;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::flake::{
    build_cells, flake_copy, installable, json, nix, nix_ok, nix_ok_with, nonce, wheel_of,
};
use crate::common::{TestEnv, cuwheel_bin, run_ok};
use cuwheel::wheel::WheelArchive;

/// CI builds these cells of the demo (scripts/demo-matrix.sh builds the rest).
const CELLS: [&str; 4] = [
    "cu130-py311-torch211",
    "cu130-py312-torch211",
    "cu130-py313-torch211",
    "cu130-abi3-torch211",
];

/// Derivation names (`link-cu130-py313`) in Nix's "building '…drv'" lines
/// or in its dry-run list.
fn drv_names(stderr: &str, building_lines: bool) -> BTreeSet<String> {
    stderr
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = if building_lines {
                line.strip_prefix("building '")?.split('\'').next()?
            } else {
                line.strip_prefix("/nix/store/")?
            };
            let base = path.rsplit('/').next()?.strip_suffix(".drv")?;
            Some(base.split_once('-')?.1.to_string())
        })
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn append(file: &Path, text: &str) {
    let mut body = fs::read_to_string(file).unwrap();
    body.push_str(text);
    fs::write(file, body).unwrap();
}

#[test]
fn cu130_wheels_pass_the_audit_hold_the_archs_and_install_with_pip() {
    let results = build_cells(&CELLS);
    let env = TestEnv::get();
    for (cell, result) in &results {
        let wheel = wheel_of(result);
        let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
        let tag = match cell.as_str() {
            "cu130-py311-torch211" => "cp311-cp311",
            "cu130-py312-torch211" => "cp312-cp312",
            "cu130-py313-torch211" => "cp313-cp313",
            _ => "cp39-abi3",
        };
        assert_eq!(
            name,
            format!("demo_ext-0.1.0+pt211cu130-{tag}-manylinux_2_28_x86_64.whl")
        );
        // The audit the build ran, and the cargo-built driver's again.
        let report = fs::read_to_string(result.join("audit.txt")).unwrap();
        assert!(report.starts_with(&format!("{name}: PASSED")), "{report}");
        run_ok(Command::new(cuwheel_bin()).arg("audit").arg(&wheel));

        // Exactly SASS 8.0, 9.0 and the arch-specific 9.0a (CUDA 13.0's list)
        // and PTX 9.0, in the one extension module.
        let archive = WheelArchive::open(&wheel).unwrap();
        let modules: Vec<_> = archive
            .members()
            .iter()
            .filter(|m| m.name.ends_with(".so"))
            .collect();
        assert_eq!(modules.len(), 1, "{name}");
        let module = modules[0];
        let (sass, ptx) = crate::common::fatbin_archs(&module.name, &module.data);
        assert_eq!(sass, ["80", "90", "90a"], "{name}");
        assert_eq!(ptx, ["90"], "{name}");
        let metadata = archive.metadata();
        assert_eq!(metadata.requires_dist, ["torch>=2.11,<2.12"]);

        // pip installs it: into a fresh venv of this machine's Python (3.11)
        // where it fits, else for its own Python, on a glibc 2.28 platform,
        // into a target directory.
        let dir = tempfile::tempdir().unwrap();
        let own = [("cp312-cp312", "3.12"), ("cp313-cp313", "3.13")]
            .into_iter()
            .find(|(t, _)| *t == tag);
        let site = if let Some((tag, version)) = own {
            let target = dir.path().join("target");
            let abi = tag.split('-').next().unwrap();
            run_ok(
                Command::new(env.python())
                    .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
                    .args(["--only-binary=:all:", "--python-version", version])
                    .args(["--implementation", "cp", "--abi", abi])
                    .args(["--platform", "manylinux_2_28_x86_64", "--target"])
                    .arg(&target)
                    .arg(&wheel),
            );
            target
        } else {
            common::pip_install_in_venv(&dir.path().join("venv"), &wheel)
        };
        assert!(
            common::assert_installed_as_recorded(&site, &wheel) >= 4,
            "{name}"
        );
    }
    // `cuwheel plan` asks the flake what is built: these cells' nodes are.
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["plan", "--project"])
            .arg(common::flake::repo().join("examples/demo-ext")),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for node in [
        "kernel-cuda130-torch211-axpby",
        "binding-cuda130-torch211-py312",
        "binding-cuda130-torch211-py313",
        "binding-cuda130-torch211-abi3",
        "link-cu130-py311-torch211",
        "wheel-cu130-abi3-torch211",
        "audit-cu130-py313-torch211",
    ] {
        assert!(
            text.contains(&format!("  built     {node}  ")),
            "{node}:\n{text}"
        );
    }
    assert!(text.contains(" derivations are built; "), "{text}");
}

#[test]
fn an_edited_kernel_rebuilds_once_per_toolkit_and_a_second_python_builds_no_kernel() {
    let flake = flake_copy();
    let attr = |a: &str| format!("{}#{a}", flake.path().display());
    let drvs = |attr: &str| -> BTreeMap<String, String> {
        serde_json::from_value(json(&nix_ok(&[
            "eval",
            "--json",
            attr,
            "--apply",
            "builtins.mapAttrs (name: drv: drv.drvPath)",
        ])))
        .unwrap()
    };
    let before = drvs(&attr("nodes"));
    let demo = flake.path().join("examples/demo-ext");
    let nonce = nonce();
    append(
        &demo.join("csrc/kernels/row_norm.cu"),
        &format!("\n// edit {nonce}\n"),
    );
    let after = drvs(&attr("nodes"));
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let changed: BTreeSet<String> = before
        .iter()
        .filter(|(name, drv)| after[*name] != **drv)
        .map(|(name, _)| name.clone())
        .collect();
    // One object per compiler set (nvcc, gcc, torch: six in the demo, the
    // aarch64 cells' cross set among them);
    // every cell relinks, and so reassembles and re-audits (and its
    // compatibility node, which reads the audited wheel, changes too); no
    // binding changes.
    let mut expected: BTreeSet<String> = before
        .keys()
        .filter(|n| n.starts_with("kernel-") && n.ends_with("-row_norm"))
        // the stable flavour's own row_norm (csrc/stable/) is another file
        .filter(|n| !n.contains("-stable-"))
        .cloned()
        .collect();
    assert_eq!(expected.len(), 6, "{expected:?}");
    assert!(
        expected.contains("kernel-cuda130-aarch64-row_norm"),
        "{expected:?}"
    );
    // The stable-ABI cell links only its own kernels, so its link stays;
    // its wheel records every project file's digest, so it is assembled
    // and audited again.
    for cell in after.keys().filter_map(|n| n.strip_prefix("link-")) {
        let kinds: &[&str] = if cell.ends_with("-stable") {
            &["wheel", "audit", "compat"]
        } else {
            &["link", "wheel", "audit", "compat"]
        };
        for kind in kinds {
            expected.insert(format!("{kind}-{cell}"));
        }
    }
    // The PyPI variant's wheels come from the same links (or, for the
    // stable cell, record every file's digest too): assembled and audited
    // again.
    expected.extend(
        before
            .keys()
            .filter(|n| n.starts_with("wheel-pypi-") || n.starts_with("audit-pypi-"))
            .cloned(),
    );
    assert_eq!(changed, expected);

    // Now the bindings too: building cu130-py313-torch211 compiles that one
    // kernel and that one binding, and links, assembles and audits.
    append(
        &demo.join("csrc/bindings.cpp"),
        &format!("\n// edit {nonce}\n"),
    );
    let out = nix_ok(&["build", "--no-link", &attr("wheels.cu130-py313-torch211")]);
    assert_eq!(
        drv_names(&stderr(&out), true),
        set(&[
            "cuwheel-plan.json",
            "kernel-cuda130-torch211-row_norm",
            "binding-cuda130-torch211-py313",
            "link-cu130-py313-torch211",
            "wheel-cu130-py313-torch211",
            "audit-cu130-py313-torch211",
        ]),
        "{}",
        stderr(&out)
    );
    // After it, another Python of the torch build needs no kernel object.
    let out = nix_ok(&["build", "--dry-run", &attr("wheels.cu130-py311-torch211")]);
    let text = stderr(&out);
    assert!(text.contains("will be built"), "{text}");
    assert_eq!(
        drv_names(&text, false),
        set(&[
            "binding-cuda130-torch211-py311",
            "link-cu130-py311-torch211",
            "wheel-cu130-py311-torch211",
            "audit-cu130-py311-torch211",
        ]),
        "{text}"
    );
}

#[test]
fn a_call_outside_the_stable_abi_fails_the_abi3_build() {
    let flake = flake_copy();
    let ops = flake.path().join("examples/demo-ext/csrc/ops.cpp");
    // Declared by hand: with Py_LIMITED_API, Python.h hides what is outside it.
    append(
        &ops,
        &format!(
            "\n// {}\nextern \"C\" PyObject **_PyObject_GetDictPtr(PyObject *);\n\
             extern \"C\" PyObject **cuwheel_test_dict(PyObject *o) {{ return _PyObject_GetDictPtr(o); }}\n",
            nonce()
        ),
    );
    let out = nix(&[
        "build",
        "--no-link",
        &format!("{}#wheels.cu130-abi3-torch211", flake.path().display()),
    ])
    .output()
    .unwrap();
    let text = stderr(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("_PyObject_GetDictPtr"), "{text}");
    assert!(
        text.contains("the audit of cell cu130-abi3-torch211 failed"),
        "{text}"
    );
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn two_cells_rebuild_bit_for_bit_and_a_second_store_builds_the_same_wheel() {
    let cells = ["cu130-py313-torch211", "cu130-abi3-torch211"];
    let results = build_cells(&cells);
    // Every plan node of the two cells: kernels, bindings, links, wheels, audits.
    let plan: serde_json::Value = serde_json::from_slice(
        &run_ok(
            Command::new(cuwheel_bin())
                .args(["plan", "--json", "--project"])
                .arg(common::flake::repo().join("examples/demo-ext")),
        )
        .stdout,
    )
    .unwrap();
    let mut names = BTreeSet::new();
    for cell in cells {
        let c = &plan["cells"][cell];
        for key in ["wheel", "audit"] {
            names.insert(c[key].as_str().unwrap().to_string());
        }
        for key in ["bindings", "links"] {
            for node in c[key].as_array().unwrap() {
                names.insert(node.as_str().unwrap().to_string());
            }
        }
        for k in c["kernels"].as_array().unwrap() {
            names.insert(k.as_str().unwrap().to_string());
        }
    }
    assert_eq!(names.len(), 4 + 4 * 2, "{names:?}");
    let mut drvs = Vec::new();
    for name in &names {
        let out = nix_ok(&[
            "eval",
            "--raw",
            &installable(&format!("nodes.{name}.drvPath")),
        ]);
        drvs.push(String::from_utf8(out.stdout).unwrap());
    }
    let mut args = vec!["--realise", "--check"];
    args.extend(drvs.iter().map(String::as_str));
    nix_ok_with("nix-store", &args);

    // A second store, rooted in a temporary directory, holding only the
    // pinned artifacts this cell needs: it builds everything else itself.
    let root = tempfile::tempdir().unwrap();
    let store = format!("local?root={}", root.path().display());
    let audit_drv = String::from_utf8(
        nix_ok(&[
            "eval",
            "--raw",
            &installable("wheels.cu130-py313-torch211.drvPath"),
        ])
        .stdout,
    )
    .unwrap();
    let shown = json(&nix_ok(&["show-derivation", "--recursive", &audit_drv]));
    let pinned: Vec<String> = shown
        .as_object()
        .unwrap()
        .values()
        .filter_map(|derivation| {
            let out = &derivation["outputs"]["out"];
            out.get("hash")?;
            Some(out["path"].as_str()?.to_string())
        })
        .collect();
    assert!(pinned.len() > 20, "{pinned:?}");
    let mut args = vec!["copy", "--no-check-sigs", "--to", &store];
    args.extend(pinned.iter().map(String::as_str));
    nix_ok(&args);
    let built = json(&nix_ok(&[
        "build",
        "--no-link",
        "--json",
        "--store",
        &store,
        &installable("wheels.cu130-py313-torch211"),
    ]));
    let out = built[0]["outputs"]["out"].as_str().unwrap();
    assert_eq!(
        Path::new(out),
        results["cu130-py313-torch211"],
        "the same derivation"
    );
    let first = wheel_of(&results["cu130-py313-torch211"]);
    let second = root
        .path()
        .join(out.trim_start_matches('/'))
        .join(first.file_name().unwrap());
    let identical = fs::read(&second).unwrap() == fs::read(&first).unwrap();
    // Store directories are read-only: make them writable to delete them.
    run_ok(Command::new("chmod").arg("-R").arg("u+w").arg(root.path()));
    drop(root);
    assert!(
        identical,
        "the wheel built in the second store differs from the first"
    );
}
