//! The demo's real wheels published by `nix run .#publish` and installed
//! from the index over loopback: pip and uv pick the wheel of their
//! interpreter, pip's resolver picks the abi3 wheel where no cp-specific one
//! fits — for a glibc 2.28 platform (RHEL 8's), which the wheels' platform
//! tag admits since it is torch's own `manylinux_2_28` — the installed files
//! match RECORD, and a published wheel reproduces by its URL.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::flake::{installable, nix_ok, repo};
use common::{
    Server, TestEnv, assert_installed_as_recorded, cuwheel_bin, fresh_venv, run_ok, site_packages,
    uv_install,
};

/// The one wheel pip downloads from `index` for a CPython `version` on a
/// glibc 2.28 platform.
fn pip_pick(env: &TestEnv, index: &str, version: &str, dest: &Path) -> String {
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
            .args(["--platform", "manylinux_2_28_x86_64", "--index-url", index])
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

#[test]
fn the_published_demo_installs_with_pip_and_uv_and_reproduces_by_url() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let repo_flake = installable("publish");
    let out = nix_ok(&["run", &repo_flake, "--", "--to", index.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let published = text.lines().filter(|l| l.starts_with("published ")).count();
    // 24 per-torch wheels and the stable-ABI one (its `+cu13` label puts it
    // under cu13/).
    assert_eq!(published, 25, "{text}");
    assert!(
        text.contains(
            "25 wheels listed in the combined index and cu126/ cu128/ cu13/ cu130/ cu132/"
        ),
        "{text}"
    );
    // Again: nothing changes.
    let again = nix_ok(&["run", &repo_flake, "--", "--to", index.to_str().unwrap()]);
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
    // one, of the newest torch the cu130 index serves (2.14's label sorts
    // above 2.11's).
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
    assert_installed_as_recorded(&site, &wheel("cp311-cp311", "pt214cu130"));

    // uv, the same.
    let python = fresh_venv(&env, &tmp.path().join("uv"));
    uv_install(&env, &python, &cu130, "demo-ext");
    let site = site_packages(&python);
    assert_installed_as_recorded(&site, &wheel("cp311-cp311", "pt214cu130"));

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
            format!("demo_ext-0.1.0+pt214cu130-{tag}-manylinux_2_28_x86_64.whl"),
            "Python {version}"
        );
    }
    // Each CUDA's index serves the torch builds of that CUDA, whatever nvcc
    // compiled them (Debian's 12.5 for cu126 and cu128).
    for (index, version, wheel) in [
        ("cu126/", "3.13", "demo_ext-0.1.0+pt27cu126-cp313-cp313"),
        ("cu128/", "3.11", "demo_ext-0.1.0+pt29cu128-cp311-cp311"),
        ("cu132/", "3.12", "demo_ext-0.1.0+pt215cu132-cp312-cp312"),
    ] {
        let dest = tmp
            .path()
            .join(format!("pick-{}", index.trim_end_matches('/')));
        let picked = pip_pick(&env, &server.url(index), version, &dest);
        assert_eq!(picked, format!("{wheel}-manylinux_2_28_x86_64.whl"));
    }

    // A published wheel, by its URL, is the one this checkout builds (the
    // rebuild check itself is tests/reproduce_nix.rs's).
    let name = "demo_ext-0.1.0%2Bpt211cu130-cp311-cp311-manylinux_2_28_x86_64.whl";
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["reproduce", "--no-check", "--project"])
            .arg(repo().join("examples/demo-ext"))
            .arg(server.url(name)),
    );
    let verdict = String::from_utf8(out.stdout).unwrap();
    assert!(verdict.contains("identical: "), "{verdict}");
}
