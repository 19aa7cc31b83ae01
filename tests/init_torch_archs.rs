//! `cuwheel init` on a setup.py that builds for the GPU at hand
//! (`torch.cuda.get_device_capability()`): the archs torch was built for
//! are read from a real torch wheel, resolved by pip and kept in the shared
//! download cache (`$CUWHEEL_TEST_ENV/cache`, where tests/lock_fetch.rs's
//! fetch of the same wheel lands too), and setup.py is answered once per
//! arch.

#![cfg(feature = "integration")]

mod common;

use std::fs;
use std::process::Command;

use common::{TestEnv, cuwheel_bin};

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
