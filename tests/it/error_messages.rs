//! User-facing error messages, snapshot-tested whole (insta): what the real
//! binary prints on stderr, and its exit status, for bad input of each kind
//! a user meets first — a config value, a flag cuwheel owns, a target a
//! toolkit cannot compile, a lock made for another config, a file that is not a
//! wheel, a project with no config. A change to
//! any word of a message shows up as a snapshot diff (`cargo insta review`,
//! or edit `tests/it/snapshots/`), so the problem, the place and the fix are
//! reviewed as a whole, not by substring.
//!
//! No Nix, no registry: every command fails before it would ask one.

use crate::common;
use std::fs;
use std::path::Path;

/// A small project: one CUDA module, torch 2.11 with CUDA 13.0 and 2.7 with
/// CUDA 12.6, both cells of the demo's lock.
const PROJECT: &str = r#"[project]
name = "tiny-ext"
version = "0.1.0"

[tool.cuwheel]
module = "tiny_ext._C"
kernels = ["csrc/*.cu"]
cuda-archs = ["8.0", "9.0"]
baseline = "manylinux_2_31"
EXTRA

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]

[tool.cuwheel.matrix]
python = ["3.13"]
torch = ["2.7", "2.11"]
"#;

/// The sources `PROJECT` names.
const SOURCES: [&str; 2] = ["csrc/kernel.cu", "csrc/bindings.cpp"];

/// `PROJECT` with `extra` lines in `[tool.cuwheel]`, written to `dir` with
/// its source files.
fn write_config(dir: &Path, extra: &str) {
    common::project::write_project(dir, &PROJECT.replace("EXTRA", extra), &SOURCES);
}

/// Runs cuwheel with `args` in `dir`; its exit status and stderr, with
/// `dir` shown as `[PROJECT]`.
fn shown_run(dir: &Path, args: &[&str]) -> String {
    let cache = tempfile::tempdir().unwrap();
    let out = common::cuwheel(cache.path())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("cannot run cuwheel");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = stderr.replace(&dir.display().to_string(), "[PROJECT]");
    format!("exit status: {:?}\n{shown}", out.status.code())
}

/// `cuwheel lock` of `PROJECT` with `extra`: fails while reading the config,
/// before the (missing) Python is asked anything.
fn lock_error(extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), extra);
    shown_run(
        dir.path(),
        &["lock", "--project", ".", "--python", "./no-such-python"],
    )
}

#[test]
fn a_compress_mode_nvcc_does_not_know() {
    insta::assert_snapshot!(lock_error(r#"cuda-compress-mode = "smallest""#));
}

#[test]
fn an_nvcc_flag_cuwheel_sets_from_a_key() {
    insta::assert_snapshot!(lock_error(
        r#"nvcc-flags = ["--compress-mode=size", "-arch=sm_90"]"#
    ));
}

#[test]
fn an_unknown_key_and_a_bad_arch_together() {
    insta::assert_snapshot!(lock_error(
        "cuda-arch = [\"9.0\"]\nstrip = \"yes\"\nnvcc-flags = [\"-I/usr/include\"]"
    ));
}

#[test]
fn a_family_target_the_pinned_nvcc_cannot_compile() {
    let dir = tempfile::tempdir().unwrap();
    let text = PROJECT
        .replace("EXTRA", "")
        .replace(
            r#"cuda-archs = ["8.0", "9.0"]"#,
            r#"cuda-archs = ["10.0f"]"#,
        )
        .replace(
            r#"torch = ["2.7", "2.11"]"#,
            "torch = [\"2.9\"]\nnvcc = { cu128 = \"12.8\" }",
        );
    common::project::write_project(dir.path(), &text, &SOURCES);
    insta::assert_snapshot!(shown_run(
        dir.path(),
        &["lock", "--project", ".", "--python", "./no-such-python"]
    ));
}

/// The demo's lock beside the project, as made for a config whose digest is
/// all zeros.
fn with_foreign_lock(dir: &Path) {
    let demo = crate::common::demo().join("cuwheel.lock");
    let mut lock = cuwheel::lock::format::Lock::read(&demo).unwrap();
    lock.config_sha256 = "0".repeat(64);
    lock.write(&dir.join("cuwheel.lock")).unwrap();
}

#[test]
fn a_lock_made_for_another_config() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    with_foreign_lock(dir.path());
    insta::assert_snapshot!(shown_run(dir.path(), &["plan", "--project", "."]));
}

#[test]
fn a_project_without_a_cuwheel_table() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"tiny-ext\"\nversion = \"0.1.0\"\n\n[tool.black]\nline-length = 100\n",
    )
    .unwrap();
    insta::assert_snapshot!(shown_run(
        dir.path(),
        &["lock", "--project", ".", "--python", "./no-such-python"]
    ));
}

#[test]
fn a_file_that_is_not_a_wheel() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("demo-0.1-py3-none-any.whl"), "not a zip").unwrap();
    fs::write(dir.path().join("notes.txt"), "").unwrap();
    insta::assert_snapshot!(shown_run(
        dir.path(),
        &["audit", "demo-0.1-py3-none-any.whl", "notes.txt"]
    ));
}
