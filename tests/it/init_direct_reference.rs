//! `cuwheel init` on a setup.py whose extras hold direct references (`pkg @
//! git+https://…`, one with a marker written without the space PEP 508
//! needs) and torch in several lists: the requirements it writes are valid,
//! it says once that torch is left out and once which direct references the
//! PyPI variant leaves out; the METADATA the plan makes of its pyproject.toml
//! passes `cuwheel audit` and real pip installs it; the PyPI variant's has no
//! direct reference and passes `cuwheel audit --pypi`, which refuses the
//! per-CUDA index's wheel for its direct reference.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::audit_support::{EXIT_FAILED, EXIT_PASSED, assert_run, cuwheel_audit};
use crate::common::{TestEnv, fresh_venv, output_text};
use crate::init_support::tiny_project;
use cuwheel::plan::metadata::core_metadata;
use cuwheel::spec::{BindingFlavour, Cell, Config};
use cuwheel::wheel::{Arch, TagSet, WheelBuilder, ZipTimestamp};

const SETUP_PY: &str = r#"from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(
    name="tiny",
    version="1.0.0",
    packages=["tiny"],
    install_requires=["torch>=2.0", "numpy>=1.24"],
    extras_require={
        "testing": ["torch", "pkg @ git+https://host.invalid/repo@abc", "pytest>=8"],
        "docs": ["torch>=2.0", "helper @ https://host.invalid/helper-1.0.tar.gz; os_name == 'posix'"],
    },
    ext_modules=[CUDAExtension("tiny._C", ["csrc/k.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
"#;

fn direct_reference_project() -> (tempfile::TempDir, std::path::PathBuf) {
    tiny_project(
        SETUP_PY,
        &[(
            "csrc/k.cu",
            "#include <torch/extension.h>\n__global__ void k() {}\n\
             PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
        )],
    )
}

fn init(root: &Path) -> String {
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["init", "--no-lock", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.11", "--python", "3.13", "--cuda", "13.0"])
        .args(["--cuda-archs", "9.0"])
        .args(["--pip-python", "/nonexistent/python3"])
        .arg(root)
        .env_remove("CUWHEEL_FLAKE")
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    text
}

#[test]
fn init_writes_direct_references_pip_installs_and_the_pypi_variant_leaves_them_out() {
    let env = TestEnv::get();
    let (dir, root) = direct_reference_project();
    let said = init(&root);
    assert_eq!(
        said.matches("torch is left out of the dependencies")
            .count(),
        1,
        "{said}"
    );
    assert!(
        said.contains("torch is left out of the dependencies (`torch`, `torch>=2.0`)"),
        "{said}"
    );
    assert_eq!(
        said.matches("the PyPI variant's wheels leave them out")
            .count(),
        1,
        "{said}"
    );
    assert!(
        said.contains(
            "direct references `helper @ https://host.invalid/helper-1.0.tar.gz ; os_name == \
             'posix'` (extra docs), `pkg @ git+https://host.invalid/repo@abc` (extra testing): \
             the per-CUDA index's wheels carry them; the PyPI variant's wheels leave them out"
        ),
        "{said}"
    );

    let pyproject = root.join("pyproject.toml");
    let config = Config::parse(&fs::read_to_string(&pyproject).unwrap(), &pyproject)
        .unwrap_or_else(|e| panic!("{e}"));
    let cell = Cell {
        cuda: "13.0".parse().unwrap(),
        nvcc: "13.0".parse().unwrap(),
        torch: "2.11".parse().unwrap(),
        python: None,
        flavour: BindingFlavour::TorchLibrary,
        torch_in_name: false,
        arch: Arch::X86_64,
    };
    let version = config.version.without_local();
    let index = core_metadata(&config, None, &[], &cell, version.clone(), false);
    let pypi = core_metadata(&config, None, &[], &cell, version, true);
    assert!(
        index.requires_dist.contains(
            &"pkg @ git+https://host.invalid/repo@abc ; extra == \"testing\"".to_string()
        ),
        "{:?}",
        index.requires_dist
    );
    assert!(
        index.requires_dist.contains(
            &"helper @ https://host.invalid/helper-1.0.tar.gz ; (os_name == 'posix') and extra \
              == \"docs\""
                .to_string()
        ),
        "{:?}",
        index.requires_dist
    );
    assert!(
        pypi.requires_dist.iter().all(|r| !r.contains('@')),
        "{:?}",
        pypi.requires_dist
    );
    assert_eq!(pypi.provides_extra, ["docs", "testing"]);

    for (label, metadata, pypi_audit) in
        [("index", index, EXIT_FAILED), ("pypi", pypi, EXIT_PASSED)]
    {
        let out = dir.path().join(label);
        fs::create_dir_all(&out).unwrap();
        let mut builder = WheelBuilder::new(metadata, TagSet::parse("py3-none-any").unwrap(), None);
        builder
            .add_member("tiny/__init__.py", b"VERSION = '1.0.0'\n".to_vec(), false)
            .unwrap();
        let wheel = builder.write_into(&out, ZipTimestamp::EARLIEST).unwrap();
        assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);
        let pypi_run = cuwheel_audit([Path::new("--pypi"), &wheel]);
        match pypi_audit {
            EXIT_FAILED => assert_run(
                &pypi_run,
                EXIT_FAILED,
                &[
                    "[PyPI] METADATA Requires-Dist `pkg @ git+https://host.invalid/repo@abc ; \
                     extra == \"testing\"` is a direct reference, and PyPI refuses direct \
                     references",
                    "upload the PyPI variant's wheel, which leaves direct references out",
                ],
            ),
            _ => assert_run(&pypi_run, EXIT_PASSED, &["PASSED"]),
        }
        let venv = tempfile::tempdir().unwrap();
        let python = fresh_venv(&env, &venv.path().join("venv"));
        let pip = Command::new(env.python())
            .args(["-m", "pip", "--disable-pip-version-check", "--python"])
            .arg(&python)
            .args(["install", "--no-deps", "--no-index", "--no-cache-dir"])
            .arg(&wheel)
            .output()
            .unwrap();
        assert!(pip.status.success(), "{label}: {}", output_text(&pip));
        assert!(
            Command::new(&python)
                .args(["-c", "import tiny"])
                .status()
                .unwrap()
                .success(),
            "{label}: tiny is not importable"
        );
    }
}
