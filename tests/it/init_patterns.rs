//! `cuwheel init` on small trees, one setup.py pattern each: archs from
//! `TORCH_CUDA_ARCH_LIST` and `-gencode`, versions and requirements read
//! from files, package data, a plain setuptools Extension, and what cannot
//! be inferred (each reported with its line, never guessed silently).

use std::fs;
use std::path::Path;

use crate::init_support::{assumptions, findings, tree};
use cuwheel::init::classify::Flavour;
use cuwheel::init::model::{Inferred, VersionSource};
use cuwheel::init::{InitOptions, infer, init};

fn inferred(files: &[(&str, &str)]) -> Inferred {
    let (_dir, root) = tree(files);
    infer(&root, false).unwrap().0
}

/// What `init` says when it refuses the tree at `root`.
fn init_error(root: &Path) -> String {
    let options = InitOptions {
        cuwheel: Some("path:/c".into()),
        ..InitOptions::default()
    };
    init(root, &options).unwrap_err().to_string()
}

const KERNEL: &str = "#include <ATen/ATen.h>\n__global__ void k() {}\n";
const BINDING: &str = "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n";

#[test]
fn archs_come_from_the_arch_list_setup_py_sets_and_from_gencode_flags() {
    let setup = r#"
import os
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "7.5;8.0 Hopper")
cc_flags = []
for arch in ["80", "90a"]:
    cc_flags += ["-gencode", f"arch=compute_{arch},code=sm_{arch}"]
setup(
    name="archy", version="1.0",
    ext_modules=[CUDAExtension("archy._C", ["csrc/k.cu", "csrc/b.cpp"],
                               extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-ccbin", "/usr/bin/gcc-12"] + cc_flags})],
)
"#;
    let inferred = inferred(&[
        ("setup.py", setup),
        ("csrc/k.cu", KERNEL),
        ("csrc/b.cpp", BINDING),
    ]);
    let archs: Vec<String> = inferred.archs.iter().map(ToString::to_string).collect();
    // sm_90a is cuda-archs' 9.0a, beside the 9.0+PTX that Hopper names.
    assert_eq!(archs, ["7.5", "8.0", "9.0+PTX", "9.0a"]);
    let m = &inferred.modules[0];
    assert_eq!(
        m.nvcc_flags,
        ["-O3"],
        "arch and host-compiler flags are cuwheel's"
    );
    assert_eq!(m.kernels, ["csrc/k.cu"]);
    assert_eq!(m.bindings[&Flavour::Pybind11], ["csrc/b.cpp"]);
    let said = findings(&inferred);
    assert!(!said.contains("sm_90a"), "{said}");
    assert!(
        said.contains("`-ccbin /usr/bin/gcc-12` was dropped"),
        "{said}"
    );
}

#[test]
fn one_flag_list_for_both_compilers_keeps_nvcc_s_arch_options_from_g_plus_plus() {
    // pytorch-fast-transformers 0.4.0: `extra_compile_args=["-arch=compute_50"]`
    // on a CUDAExtension; torch hands one list to g++ and to nvcc alike.
    let setup = r#"
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
setup(
    name="listy", version="1.0",
    ext_modules=[CUDAExtension("listy._C", ["csrc/k.cu", "csrc/b.cpp"],
                               extra_compile_args=["-O2", "-arch=compute_50"])],
)
"#;
    let inferred = inferred(&[
        ("setup.py", setup),
        ("csrc/k.cu", KERNEL),
        ("csrc/b.cpp", BINDING),
    ]);
    let m = &inferred.modules[0];
    assert_eq!(m.cxx_flags, ["-O2"]);
    assert_eq!(m.nvcc_flags, ["-O2"]);
    let archs: Vec<String> = inferred.archs.iter().map(ToString::to_string).collect();
    assert_eq!(archs, ["5.0+PTX"]);
}

#[test]
fn archs_chosen_by_the_toolkit_version_are_evaluated_per_toolkit() {
    let setup = r#"
import subprocess
from packaging.version import Version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME
out = subprocess.check_output([CUDA_HOME + "/bin/nvcc", "-V"], text=True)
nvcc_version = Version(out.split("release ")[1].split(",")[0])
cc = ["-gencode", "arch=compute_80,code=sm_80"]
if nvcc_version >= Version("12.8"):
    cc += ["-gencode", "arch=compute_100,code=sm_100"]
setup(name="tk", version="1.0", ext_modules=[CUDAExtension("tk._C", ["b.cpp"], extra_compile_args={"nvcc": cc})])
"#;
    let inferred = inferred(&[("setup.py", setup), ("b.cpp", BINDING)]);
    // Evaluated per toolkit of the default matrix: nvcc 13.0 takes the
    // branch, nvcc 12.5 does not.
    let table: Vec<String> = inferred
        .toolkit_archs
        .iter()
        .map(|(key, archs)| {
            let archs: Vec<String> = archs.iter().map(ToString::to_string).collect();
            format!("{key} = {archs:?}")
        })
        .collect();
    assert_eq!(table, ["12 = [\"8.0\"]", "13 = [\"8.0\", \"10.0\"]"]);
    let said = findings(&inferred);
    assert!(!said.contains("tool.cuwheel.cuda-archs"), "{said}");
}

#[test]
fn versions_and_requirements_point_at_the_files_they_are_read_from() {
    let setup = r#"
import re
from setuptools import setup, find_packages
from torch.utils.cpp_extension import CUDAExtension

def read_version():
    with open("vpkg/__init__.py") as f:
        return re.search(r"__version__ = \"(.*)\"", f.read()).group(1)

setup(
    name="vpkg",
    version=read_version(),
    install_requires=open("requirements.txt").read().splitlines(),
    packages=find_packages(exclude=["tests*"]),
    package_data={"vpkg": ["data/*.json"]},
    ext_modules=[CUDAExtension("vpkg._C", ["csrc/b.cpp"])],
)
"#;
    let inferred = inferred(&[
        ("setup.py", setup),
        ("vpkg/__init__.py", "__version__ = \"0.9.0\"\n"),
        ("vpkg/data/table.json", "{}\n"),
        ("vpkg/sub/__init__.py", ""),
        ("tests/__init__.py", ""),
        (
            "requirements.txt",
            "# runtime\nnumpy>=1.24\ntorch>=2.4  # pinned by cuwheel\n-e .\n-r requirements/more.txt\n",
        ),
        ("requirements/more.txt", "rich\n"),
        ("csrc/b.cpp", BINDING),
    ]);
    assert_eq!(
        inferred.meta.version,
        Some(VersionSource::Attr("vpkg.__version__".into()))
    );
    assert_eq!(inferred.meta.dependencies, ["numpy>=1.24", "rich"]);
    assert_eq!(inferred.packages, ["vpkg"]);
    assert_eq!(inferred.package_include, ["vpkg/data/*.json"]);
    let said = findings(&inferred);
    assert!(said.contains("`-e .` is a pip option"), "{said}");
    let assumed = assumptions(&inferred);
    assert!(
        assumed
            .iter()
            .any(|t| t.contains("read from requirements.txt")),
        "{assumed:?}"
    );
    assert!(
        assumed
            .iter()
            .any(|t| t.contains("torch is left out of the dependencies (`torch>=2.4`)")),
        "{assumed:?}"
    );
    // Only bindings, no kernels: a module may have none.
    assert!(inferred.modules[0].kernels.is_empty());

    let plain = self::inferred(&[
        (
            "setup.py",
            "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\
                      setup(name='f', version=open('VERSION').read().strip(), ext_modules=[CUDAExtension('f._C', ['b.cpp'])])\n",
        ),
        ("VERSION", "2.0.0\n"),
        ("b.cpp", BINDING),
    ]);
    assert_eq!(
        plain.meta.version,
        Some(VersionSource::File("VERSION".into()))
    );
}

#[test]
fn an_sdist_s_recorded_requirements_win_over_a_choice_on_what_is_installed() {
    // mmcv 2.2.0's shape: setup.py adds OpenCV only when `import cv2`
    // fails; the sdist's egg-info records what it gave where it was made.
    let setup = r#"
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
install_requires = ["numpy"]
try:
    import cv2
except ImportError:
    install_requires.append("opencv-python>=3")
setup(
    name="cvy", version="1.0", install_requires=install_requires,
    ext_modules=[CUDAExtension("cvy._C", ["csrc/k.cu", "csrc/b.cpp"])],
)
"#;
    let files = [
        ("setup.py", setup),
        ("csrc/k.cu", KERNEL),
        ("csrc/b.cpp", BINDING),
        (
            "cvy.egg-info/requires.txt",
            "numpy\nopencv-python>=3\n\n[tests]\npytest\n",
        ),
    ];
    // A checkout (no PKG-INFO): the evaluation, which assumes cv2 imports.
    assert_eq!(inferred(&files).meta.dependencies, ["numpy"]);
    let mut sdist = files.to_vec();
    sdist.push(("PKG-INFO", "Metadata-Version: 2.1\nName: cvy\n"));
    let inferred = inferred(&sdist);
    assert_eq!(inferred.meta.dependencies, ["numpy", "opencv-python>=3"]);
    assert_eq!(inferred.meta.optional_dependencies["tests"], ["pytest"]);
    let said = assumptions(&inferred);
    assert!(
        said.iter()
            .any(|t| t.contains("dependencies are cvy.egg-info/requires.txt's")),
        "{said:?}"
    );
}

#[test]
fn what_cannot_be_inferred_is_reported_with_its_line() {
    let setup = r#"
import os, subprocess
from setuptools import setup, Extension
from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME
extra = subprocess.check_output(["pkg-config", "--cflags", "foo"]).decode().split()
setup(
    name="rep",
    version="not a version",
    license="BSD License",
    ext_modules=[
        CUDAExtension(
            "rep._C",
            ["csrc/b.cpp", "csrc/missing.cu"],
            include_dirs=[os.path.join(CUDA_HOME, "include"), "/usr/include/foo", "csrc"],
            extra_compile_args=["-O2", "-I" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor/inc/")] + extra,
            extra_link_args=["-L/opt/foo/lib", "-lfoo", "-fopenmp"],
            library_dirs=["/opt/foo/lib"],
            dlink=True,
        ),
        Extension("rep._plain", ["csrc/plain.cpp"]),
    ],
)
"#;
    let inferred = inferred(&[
        ("setup.py", setup),
        ("csrc/b.cpp", BINDING),
        ("vendor/inc/v.h", ""),
        (
            "csrc/plain.cpp",
            "#include <Python.h>\nPyMODINIT_FUNC PyInit__plain(void) { return 0; }\n",
        ),
    ]);
    let said = findings(&inferred);
    for expected in [
        "project.version: setup.py:6: `setup(`: `not a version` is not a PEP 440 version",
        "project.license: setup()'s license `BSD License` is not an SPDX expression; it was not written",
        "`csrc/missing.cu` does not exist in the project; it was left out",
        "`/usr/include/foo` is outside the project (a build-host path); it was left out",
        "CUDA_HOME, which is only known on the build host",
        "setup.py:5: `extra = subprocess.check_output([\"pkg-config\", \"--cflags\", \"foo\"]).decode().split()`: a value cannot be read (`subprocess.check_output` is not modelled by cuwheel)",
        "the link flag `-L/opt/foo/lib` names a build-host directory",
        "`library_dirs` = [\"/opt/foo/lib\"] is not carried over",
        "`dlink=True` has no place in cuwheel's config",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in\n{said}");
    }
    let m = &inferred.modules[0];
    // `-I<the project's absolute path>/vendor/inc/` became an include dir.
    assert_eq!(m.include_dirs, ["csrc", "vendor/inc"]);
    assert_eq!(m.cxx_flags, ["-O2"]);
    assert_eq!(
        m.nvcc_flags,
        ["-O2"],
        "a list of compile args is for both compilers"
    );
    assert_eq!(m.libraries, ["foo"]);
    assert_eq!(m.link_flags, ["-fopenmp"]);
    let plain = &inferred.modules[1];
    assert!(!plain.cuda);
    assert_eq!(plain.bindings[&Flavour::Pybind11], ["csrc/plain.cpp"]);
    assert!(
        inferred
            .assumptions
            .iter()
            .any(|n| n.text.contains("plain setuptools Extension"))
    );
}

#[test]
fn a_registering_tu_is_the_binding_when_none_includes_python() {
    let setup = "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\
                 setup(name='s', version='1', ext_modules=[CUDAExtension('s._ops', ['csrc/reg.cpp', 'csrc/k.cu'])])\n";
    let inferred = inferred(&[
        ("setup.py", setup),
        (
            "csrc/reg.cpp",
            "#include <torch/library.h>\nTORCH_LIBRARY(s, m) { m.def(\"f(Tensor x) -> Tensor\"); }\n",
        ),
        ("csrc/k.cu", KERNEL),
    ]);
    let m = &inferred.modules[0];
    assert_eq!(m.kernels, ["csrc/k.cu"]);
    assert_eq!(m.bindings[&Flavour::TorchLibrary], ["csrc/reg.cpp"]);
    assert!(inferred.assumptions.iter().any(|n| {
        n.text
            .contains("csrc/reg.cpp registers its ops, so it is the torch-library binding")
    }));
}

#[test]
fn setup_py_that_never_calls_setup_or_cannot_be_read_is_an_error() {
    let (_dir, root) = tree(&[(
        "setup.py",
        "import sys\nif sys.platform == 'linux':\n    raise RuntimeError('use conda')\nfrom setuptools import setup\nsetup(name='x')\n",
    )]);
    let err = infer(&root, false).unwrap_err().to_string();
    assert!(err.contains("never calls setup()"), "{err}");
    assert!(
        err.contains("setup.py:3: `raise RuntimeError('use conda')`"),
        "{err}"
    );
    assert!(err.contains("--ignore-setup-py"), "{err}");
    // Nothing was written, and the same tree infers from its sources.
    assert!(!root.join("pyproject.toml").exists());
    fs::create_dir_all(root.join("csrc")).unwrap();
    fs::write(root.join("csrc/k.cu"), KERNEL).unwrap();
    fs::write(root.join("csrc/b.cpp"), BINDING).unwrap();
    let (from_tree, origin) = infer(&root, true).unwrap();
    assert_eq!(origin, "the source tree");
    assert_eq!(from_tree.modules[0].kernels, ["csrc/k.cu"]);

    let (_dir, root) = tree(&[("setup.py", "setup(name='x'\n")]);
    let err = init_error(&root);
    assert!(err.starts_with("setup.py:2:1: "), "{err}");
    assert!(!root.join("pyproject.toml").exists() && !root.join("flake.nix").exists());
}

#[test]
fn an_invalid_pyproject_is_left_alone() {
    let (_dir, root) = tree(&[
        ("pyproject.toml", "[project\nname = 'x'\n"),
        ("csrc/b.cpp", BINDING),
        ("x/__init__.py", "from x import _C\n"),
    ]);
    let err = init_error(&root);
    assert!(err.contains("pyproject.toml is not valid TOML"), "{err}");
    assert_eq!(
        fs::read_to_string(root.join("pyproject.toml")).unwrap(),
        "[project\nname = 'x'\n"
    );
    assert!(!Path::new(&root.join("flake.nix")).exists());
}
