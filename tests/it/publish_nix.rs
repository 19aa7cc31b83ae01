//! The demo's real wheels published by `nix run .#publish -- --cell …` and
//! installed from the index over loopback (the CUDA 13 cells of torch 2.11
//! and 2.15, the stable-ABI cell and torch 2.11's aarch64 abi3 cell: 12 of
//! the demo's 29; the heavy tier's, `tests/run.sh --full`, as CI's cold run
//! cannot also hold these builds;
//! `scripts/demo-matrix.sh` builds and publishes any cells, all of them
//! included): pip and uv pick the wheel of their interpreter, pip's resolver
//! picks the abi3 wheel where no cp-specific one fits — for a glibc 2.28
//! platform (RHEL 8's), which the wheels' platform tag admits since it is
//! torch's own `manylinux_2_28` — and the aarch64 wheel for an aarch64
//! platform from the same index; the installed files match RECORD, and a
//! published wheel, of either platform, reproduces by its URL.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common;
use crate::common::flake::{installable, nix_ok, repo};
use crate::common::{
    Server, TestEnv, assert_installed_as_recorded, cuwheel_bin, fresh_venv, run_ok, site_packages,
    uv_install,
};

/// The one wheel pip downloads from `index` for a CPython `version` on a
/// glibc 2.28 x86_64 platform.
fn pip_pick(env: &TestEnv, index: &str, version: &str, dest: &Path) -> String {
    pip_pick_on(env, index, version, "x86_64", dest)
}

/// [`pip_pick`] on a glibc 2.28 platform of `arch`.
fn pip_pick_on(env: &TestEnv, index: &str, version: &str, arch: &str, dest: &Path) -> String {
    let platform = format!("manylinux_2_28_{arch}");
    run_ok(
        Command::new(env.python())
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-cache-dir",
            ])
            .args(["--disable-pip-version-check", "--only-binary=:all:"])
            .args(["--python-version", version, "--implementation", "cp"])
            .args(["--platform", &platform, "--index-url", index])
            .arg("--dest")
            .arg(dest)
            .arg("demo-ext"),
    );
    let names: Vec<String> = fs::read_dir(dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

/// The cells published here: every Python of torch 2.11 (cu130) and 2.15
/// (cu132), the stable-ABI cell, and torch 2.11's aarch64 abi3 cell
/// (tests/it/aarch64_nix.rs builds it).
fn cells() -> Vec<String> {
    let mut cells = vec![
        "cu13-stable".to_string(),
        "cu130-abi3-torch211-aarch64".to_string(),
    ];
    for python in ["abi3", "py311", "py312", "py313", "py314"] {
        cells.push(format!("cu130-{python}-torch211"));
        cells.push(format!("cu132-{python}"));
    }
    cells
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn an_unknown_cell_is_refused_before_anything_is_built_or_written() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let out = common::flake::nix(&["run", &installable("publish"), "--", "--to"])
        .arg(&index)
        .args(["--cell", "cu130-py311-torch211", "--cell", "cu999-py311"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("this project has no cell 'cu999-py311'; its cells are: cu126-abi3 "),
        "{stderr}"
    );
    assert!(!stderr.contains("nix-store --realise"), "{stderr}");
    assert!(!index.exists());
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn the_published_demo_installs_with_pip_and_uv_and_reproduces_by_url() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let repo_flake = installable("publish");
    let mut args = vec!["run", &repo_flake, "--", "--to", index.to_str().unwrap()];
    let cells = cells();
    for cell in &cells {
        args.extend(["--cell", cell]);
    }
    let out = nix_ok(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "building the cells named: cu13-stable cu130-abi3-torch211-aarch64 \
             cu130-abi3-torch211 "
        ),
        "{stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let published = text.lines().filter(|l| l.starts_with("published ")).count();
    // 10 per-torch wheels, the aarch64 one (under cu130/ beside the
    // x86_64 ones) and the stable-ABI one (its `+cu13` label puts it under
    // cu13/).
    assert_eq!(published, 12, "{text}");
    assert!(
        text.contains("12 wheels listed in the combined index and cu13/ cu130/ cu132/"),
        "{text}"
    );
    // Again: nothing changes.
    let again = nix_ok(&args);
    assert!(
        String::from_utf8(again.stdout)
            .unwrap()
            .contains("(unchanged)")
    );

    let server = Server::start(&index, &tmp.path().join("server.log"));
    let cu130 = server.url("cu130/");
    let wheel = |tag: &str, label: &str| {
        index.join(format!(
            "demo_ext-0.1.0+{label}-{tag}-manylinux_2_28_x86_64.whl"
        ))
    };

    // pip, for this machine's Python 3.11: the cp311 wheel, not the abi3
    // one.
    let python = fresh_venv(&env, &tmp.path().join("pip"));
    run_ok(
        Command::new(env.python())
            .args(["-m", "pip", "--disable-pip-version-check", "--python"])
            .arg(&python)
            .args([
                "install",
                "--quiet",
                "--no-deps",
                "--no-cache-dir",
                "--index-url",
                &cu130,
            ])
            .arg("demo-ext"),
    );
    let site = site_packages(&python);
    assert!(
        site.join("demo_ext/_C.cpython-311-x86_64-linux-gnu.so")
            .is_file(),
        "{}",
        site.display()
    );
    assert_installed_as_recorded(&site, &wheel("cp311-cp311", "pt211cu130"));

    // uv, the same.
    let python = fresh_venv(&env, &tmp.path().join("uv"));
    uv_install(&env, &python, &cu130, "demo-ext");
    let site = site_packages(&python);
    assert_installed_as_recorded(&site, &wheel("cp311-cp311", "pt211cu130"));

    // The interpreters this machine lacks, through pip's resolver: each
    // Python of the matrix gets its own wheel, any other the abi3 one.
    for (version, tag) in [
        ("3.12", "cp312-cp312"),
        ("3.13", "cp313-cp313"),
        ("3.14", "cp314-cp314"),
        ("3.10", "cp39-abi3"),
        ("3.9", "cp39-abi3"),
    ] {
        let dest = tmp.path().join(format!("pick-{version}"));
        let picked = pip_pick(&env, &cu130, version, &dest);
        assert_eq!(
            picked,
            format!("demo_ext-0.1.0+pt211cu130-{tag}-manylinux_2_28_x86_64.whl"),
            "Python {version}"
        );
    }
    // The same index, for an aarch64 platform: the aarch64 abi3 wheel, for
    // every Python (there is no aarch64 cp-specific one here).
    for version in ["3.11", "3.13"] {
        let dest = tmp.path().join(format!("pick-aarch64-{version}"));
        let picked = pip_pick_on(&env, &cu130, version, "aarch64", &dest);
        assert_eq!(
            picked, "demo_ext-0.1.0+pt211cu130-cp39-abi3-manylinux_2_28_aarch64.whl",
            "Python {version} on aarch64"
        );
    }
    // cu132/ serves torch 2.15's builds. (The stable-ABI
    // wheel under cu13/ is tagged manylinux_2_31: its module needs
    // libstdc++'s GLIBCXX_3.4.26, which a glibc 2.28 platform lacks.)
    let dest = tmp.path().join("pick-cu132");
    let picked = pip_pick(&env, &server.url("cu132/"), "3.12", &dest);
    assert_eq!(
        picked,
        "demo_ext-0.1.0+pt215cu132-cp312-cp312-manylinux_2_28_x86_64.whl"
    );

    // A published wheel, by its URL, is the one this checkout builds (the
    // rebuild check itself is tests/it/reproduce_nix.rs's).
    let name = "demo_ext-0.1.0%2Bpt211cu130-cp311-cp311-manylinux_2_28_x86_64.whl";
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["reproduce", "--no-check", "--project"])
            .arg(repo().join("examples/demo-ext"))
            .arg(server.url(name)),
    );
    let verdict = String::from_utf8(out.stdout).unwrap();
    assert!(verdict.contains("identical: "), "{verdict}");
    let name = "demo_ext-0.1.0%2Bpt211cu130-cp39-abi3-manylinux_2_28_aarch64.whl";
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["reproduce", "--no-check", "--project"])
            .arg(repo().join("examples/demo-ext"))
            .arg(server.url(name)),
    );
    let verdict = String::from_utf8(out.stdout).unwrap();
    assert!(verdict.contains("identical: "), "{verdict}");
}
