//! `cuwheel lock` (the real binary) on projects whose `cuda-archs` ask for
//! arch-specific (`9.0a`) or family-specific (`10.0f`) targets a toolkit
//! the config names cannot compile: refused while the config is read, so
//! before pip or any registry is asked (the Python given does not exist),
//! naming the key, the first nvcc that compiles the target and the fix. The
//! previous lock stays as it was and no cache is created.

use crate::common;
use std::fs;
use std::process::Command;

const PROJECT: &str = r#"[project]
name = "tiny-ext"
version = "0.1.0"

[tool.cuwheel]
module = "tiny_ext._C"
kernels = ["csrc/*.cu"]
cuda-archs = ["9.0a", "10.0f"]
baseline = "manylinux_2_31"

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]

[tool.cuwheel.matrix]
python = ["3.13"]
torch = ["2.9"]
nvcc = { cu128 = "12.8" }
"#;

/// Runs `cuwheel lock` on `pyproject`; returns (exit code, stderr, whether
/// the lock is unchanged, whether a cache was created).
fn lock(pyproject: &str) -> (Option<i32>, String, bool, bool) {
    let dir = tempfile::tempdir().unwrap();
    common::project::write_project(
        dir.path(),
        pyproject,
        &["csrc/kernel.cu", "csrc/bindings.cpp"],
    );
    let lock = dir.path().join("cuwheel.lock");
    fs::write(&lock, "the previous lock\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(common::cuwheel_bin())
        .args(["lock", "--project"])
        .arg(dir.path())
        .arg("--python")
        .arg(dir.path().join("no-such-python"))
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("cannot run cuwheel");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        fs::read_to_string(&lock).unwrap() == "the previous lock\n",
        cache.path().join("cuwheel").exists(),
    )
}

#[test]
fn a_family_target_with_nvcc_12_8_is_refused_before_any_registry() {
    let (code, err, unchanged, cached) = lock(PROJECT);
    assert_eq!(code, Some(1), "{err}");
    for needle in [
        "tool.cuwheel.matrix.nvcc.cu128",
        "10.0f (family-specific) needs nvcc ≥ 12.9; this matrix compiles cu128 with nvcc 12.8",
        "CUDA 12.9 Features",
        "name another nvcc for cu128 (nvcc 12.9 or newer compiles 10.0f)",
    ] {
        assert!(err.contains(needle), "expected {needle:?} in:\n{err}");
    }
    // 9.0a came with nvcc 12.0: not named.
    assert!(!err.contains("9.0a (arch-specific) needs"), "{err}");
    assert!(!err.contains("no-such-python"), "pip was asked:\n{err}");
    assert!(unchanged && !cached, "lock went past the config:\n{err}");
}

#[test]
fn an_arch_target_for_a_served_cuda_too_old_is_refused_before_any_registry() {
    // cu126 cells compile with a 12.x nvcc no newer than 12.6: no sm_100a.
    let pyproject = PROJECT
        .replace(
            "cuda-archs = [\"9.0a\", \"10.0f\"]",
            "cuda-archs = [\"9.0a\", \"10.0a+PTX\"]",
        )
        .replace("nvcc = { cu128 = \"12.8\" }", "cuda = [\"12.6\"]");
    let (code, err, unchanged, cached) = lock(&pyproject);
    assert_eq!(code, Some(1), "{err}");
    for needle in [
        "tool.cuwheel.matrix.cuda[0]",
        "10.0a+PTX (arch-specific) needs nvcc ≥ 12.8; this matrix serves cu126, whose nvcc is \
         at most 12.6",
        "Blackwell Compatibility Guide",
    ] {
        assert!(err.contains(needle), "expected {needle:?} in:\n{err}");
    }
    assert!(unchanged && !cached, "lock went past the config:\n{err}");
}
