//! `cuwheel init` on a setup.py that builds for the GPU at hand
//! (`torch.cuda.get_device_capability()`): the archs torch was built for
//! are read from a real torch wheel, resolved by pip and kept in the shared
//! download cache (`$CUWHEEL_TEST_ENV/cache`, where tests/it/lock_fetch.rs's
//! fetch of the same wheel lands too), and setup.py is answered once per
//! arch.

use std::fs;
use std::process::Command;

use crate::common;
use crate::common::{TestEnv, cuwheel_bin};

const SETUP: &str = r#"
import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, BuildExtension

cc = torch.cuda.get_device_capability()
arch = f"{cc[0]}{cc[1]}"
setup(
    name="atgpu",
    version="0.1.0",
    ext_modules=[
        CUDAExtension(
            "atgpu._C",
            ["csrc/k.cu"],
            extra_compile_args={"nvcc": ["-O3", "-gencode", f"arch=compute_{arch},code=sm_{arch}"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
"#;

#[test]
fn the_archs_of_the_gpu_at_hand_are_read_from_torchs_wheel() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("atgpu");
    fs::create_dir_all(root.join("csrc")).unwrap();
    fs::write(root.join("setup.py"), SETUP).unwrap();
    fs::write(
        root.join("csrc/k.cu"),
        "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
    )
    .unwrap();
    let out = Command::new(cuwheel_bin())
        .args(["init", "--no-lock", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.9", "--cuda", "12.8", "--python", "3.13"])
        .arg("--pip-python")
        .arg(env.python())
        .arg(&root)
        .env("XDG_CACHE_HOME", env.root.join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // torch 2.9.1's cp313 wheel (CUDA 12.8): its libtorch_cuda.so has an
    // image of each of these in every generic kernel.
    assert!(
        stderr.contains(
            "torch 2.9.0+cu128 was built for 7.0, 7.5, 8.0, 8.6, 9.0, 10.0, 12.0 (read from \
             torch/lib/libtorch_cuda.so of torch-2.9.1-cp313-cp313-manylinux_2_28_x86_64.whl)"
        ),
        "{stderr}"
    );
    let text = fs::read_to_string(root.join("pyproject.toml")).unwrap();
    // A cu128 cell is built by nvcc 12.5, which has no sm_100 or sm_120:
    // init leaves them out and says so.
    assert!(
        text.contains("cuda-archs = [\"7.0\", \"7.5\", \"8.0\", \"8.6\", \"9.0\"]"),
        "{text}"
    );
    assert!(
        stderr.contains("setup.py lists [10.0, 12.0] for nvcc 12.5"),
        "{stderr}"
    );
    assert!(!stderr.contains("tool.cuwheel.cuda-archs:"), "{stderr}");
}

/// Without `--torch`, init asks pip for the newest torch minors. On a
/// Debian or Ubuntu python3 there is no pip (and `python3-pip` is not
/// installed): init must use the venv cuwheel makes in its cache, never
/// `python3 -m pip`. Here `python3` on PATH is a venv made without pip.
#[test]
fn init_without_torch_lists_torch_through_its_own_venv_where_python3_has_no_pip() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare");
    common::run_ok(
        Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&bare),
    );
    let path = format!(
        "{}:{}",
        bare.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    // The precondition: this PATH's python3 has no pip.
    let pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(!pip.status.success(), "python3 on PATH has a pip");

    let root = dir.path().join("ext");
    fs::create_dir_all(root.join("csrc")).unwrap();
    fs::write(
        root.join("setup.py"),
        "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\
         setup(name='ext', version='0.1.0', ext_modules=[CUDAExtension('ext._C', ['csrc/b.cpp'])])\n",
    )
    .unwrap();
    fs::write(
        root.join("csrc/b.cpp"),
        "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let out = Command::new(cuwheel_bin())
        .args(["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--python", "3.13", "--cuda", "13.0"])
        .arg(&root)
        .env("PATH", &path)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cuwheel: making a Python venv for pip in ")
            && stderr.contains("(once; cuwheel does not use a system pip)"),
        "{stderr}"
    );
    assert!(cache.join("cuwheel/pip-venv/bin/python").is_file());
    // The matrix names torch minors pip listed (two, newest first).
    let torch = stdout
        .lines()
        .find(|l| l.starts_with("torch = ["))
        .unwrap_or_else(|| panic!("no torch line in:\n{stdout}\n{stderr}"));
    assert!(torch.contains("\"2."), "{torch}");
}
