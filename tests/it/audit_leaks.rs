//! The leak check on real wheels: no false alarm on the official numpy
//! 2.1.3 and pillow 11.0.0 wheels (tests/fixtures/real-wheels.txt) or on
//! nvidia-cublas 13.1 and torch 2.11.0 (the demo's pinned wheels, which
//! `cuwheel fetch` put in the Nix store: no extra download), whose `/build/`
//! strings are in docstrings, README URLs, `/pytorch/build/…` and the
//! toolchains' `/builddir/build/BUILD/…`. Real leaks still fail: a kernel
//! built by nvcc with `-lineinfo` from a store path or the sandbox's build
//! directory, and a sandbox path baked into Python code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::audit_support::{audit_json, nvcc, write_wheel};
use crate::common::TestEnv;
use cuwheel::lock::format::Lock;
use serde_json::Value;

/// The checks a report's findings come from.
fn failing_checks(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap().to_string())
        .collect()
}

/// The demo lock's pinned x86_64 wheel whose file name starts with `prefix`,
/// linked under its own name (the store path's name starts with its hash).
/// (The lock also pins aarch64 wheels for the demo's aarch64 cells; torch's
/// has a real finding, a RUNPATH of `/usr/local/lib` in
/// torch/bin/torch_shm_manager, so it is no false alarm to test here.)
fn pinned_wheel(prefix: &str, dir: &Path) -> PathBuf {
    let lock_path = crate::common::demo().join("cuwheel.lock");
    let lock = Lock::read(&lock_path).unwrap();
    let paths = cuwheel::fetch::pinned_paths(&lock).unwrap();
    let path = paths
        .iter()
        .find(|p| p.name().starts_with(prefix) && p.name().ends_with("_x86_64.whl"))
        .unwrap_or_else(|| panic!("the demo lock pins no {prefix}* wheel"));
    let store = PathBuf::from(path.to_absolute());
    assert!(
        store.is_file(),
        "{} is not in the store: run `bash tests/prepare.sh` (it runs `cuwheel fetch`)",
        store.display()
    );
    let link = dir.join(path.name());
    std::os::unix::fs::symlink(&store, &link).unwrap();
    link
}

fn real_wheel(env: &TestEnv, prefix: &str) -> PathBuf {
    std::fs::read_dir(env.wheels_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* wheel: run `bash tests/prepare.sh`"))
}

#[test]
fn official_wheels_raise_no_false_alarm() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let wheels = [
        real_wheel(&env, "numpy-2.1.3-"),
        real_wheel(&env, "pillow-11.0.0-"),
        pinned_wheel("nvidia_cublas-13.", dir.path()),
        pinned_wheel("torch-2.11.0-", dir.path()),
    ];
    for wheel in &wheels {
        let (code, report) = audit_json([wheel.as_os_str()]);
        let failing = failing_checks(&report);
        let name = report["wheel"].as_str().unwrap();
        assert!(
            !failing.contains("leak"),
            "{name}: {:#}",
            report["findings"]
        );
        assert_eq!(code, 0, "{name}: {:#}", report["findings"]);
        if name.starts_with("torch-") {
            // torch loads CUDA's libraries from the nvidia-* wheels its
            // Requires-Dist installs beside it ($ORIGIN/../../nvidia/…
            // RPATHs; libcupti, libcufile, libcusparseLt, libnvshmem_host):
            // notes naming those requirements, not failures.
            let notes: Vec<&str> = report["notes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|n| n.as_str())
                .collect();
            for soname in ["libcupti.so.13", "libcufile.so.0", "libcusparseLt.so.0"] {
                assert!(
                    notes
                        .iter()
                        .any(|n| n.contains("which its Requires-Dist names") && n.contains(soname)),
                    "{name}: no sibling-wheel note for {soname}: {notes:#?}"
                );
            }
        }
    }
}

const KERNEL_AT: &str = r#"
__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" void launch_scale(float *x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"#;

#[test]
fn lineinfo_paths_from_the_store_or_the_sandbox_fail() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (i, source_path) in [
        "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-demo-src/csrc/k.cu",
        "/build/source/csrc/k.cu",
    ]
    .iter()
    .enumerate()
    {
        // nvcc records the path a #line directive names, as it would the
        // path of a source compiled where it lies.
        let source = format!("#line 1 \"{source_path}\"\n{KERNEL_AT}");
        let library = nvcc(
            &env,
            d,
            &format!("libk{i}.so"),
            &source,
            &[
                "-shared",
                "-lineinfo",
                "-gencode",
                "arch=compute_80,code=sm_80",
            ],
        );
        let member = "demo/libk.so";
        let wheel = write_wheel(
            d,
            &format!("demo-0.{i}-py3-none-linux_x86_64.whl"),
            &[(member, std::fs::read(library).unwrap())],
        );
        let (code, report) = audit_json([wheel.as_os_str()]);
        assert_eq!(code, 3, "{report:#}");
        let leaks: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "leak")
            .collect();
        assert_eq!(leaks.len(), 1, "{report:#}");
        assert_eq!(leaks[0]["member"], member);
        let dir_part = source_path.rsplit_once('/').unwrap().0;
        assert!(
            leaks[0]["problem"].as_str().unwrap().contains(dir_part),
            "{:#}",
            leaks[0]
        );
    }
}

#[test]
fn sandbox_paths_in_python_code_fail_and_in_docstrings_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = b"def f():\n    \"\"\"Cross-compile with pkgdir=/build/arm/sysroot.\"\"\"\n    # see /build/x\n".to_vec();
    let wheel = write_wheel(
        d,
        "demo-0.1-py3-none-any.whl",
        &[("demo/f.py", docs.clone())],
    );
    let (code, report) = audit_json([wheel.as_os_str()]);
    assert_eq!(code, 0, "{report:#}");

    let mut baked = docs;
    baked.extend(b"ROOT = \"/build/source/demo\"\n");
    let wheel = write_wheel(d, "demo-0.2-py3-none-any.whl", &[("demo/f.py", baked)]);
    let (code, report) = audit_json([wheel.as_os_str()]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(
        failing_checks(&report),
        BTreeSet::from(["leak".to_string()])
    );
    assert!(
        report["findings"][0]["problem"]
            .as_str()
            .unwrap()
            .contains("ROOT = \"/build/source/demo\""),
        "{report:#}"
    );
}
