//! `cuwheel init` on setup.py files that choose archs and flags by the
//! toolkit: `nvcc -V` through subprocess (flash-attn's, causal-conv1d's and
//! mamba's `get_cuda_bare_metal_version`), `torch.version.cuda`,
//! `packaging.version` comparisons, `TORCH_CUDA_ARCH_LIST` set by default,
//! and `torch.__version__`. setup.py is evaluated once per toolkit of the
//! default matrix — torch 2.11 (cu130, built by nvcc 13.0) and torch 2.9
//! (cu128, built by nvcc 12.5, the newest CUDA 12 toolkit cuwheel has) —
//! and each expected value below is what that setup.py computes, by hand,
//! for that toolkit.

use crate::init_support::{assumptions, findings, tree};
use cuwheel::init::model::Inferred;
use cuwheel::init::{InitOptions, infer, init};

const KERNEL: &str = "#include <ATen/ATen.h>\n__global__ void k() {}\n";
const BINDING: &str = "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n";

/// The `[tool.cuwheel]` text init writes for `setup`, checked to be a
/// config cuwheel reads, and what it inferred.
fn written(setup: &str) -> (String, Inferred) {
    let (_dir, root) = tree(&[
        ("setup.py", setup),
        ("csrc/k.cu", KERNEL),
        ("csrc/b.cpp", BINDING),
    ]);
    let options = InitOptions {
        cuwheel: Some("path:/c".into()),
        dry_run: true,
        ..InitOptions::default()
    };
    let outcome = init(&root, &options).unwrap();
    let path = root.join("pyproject.toml");
    if let Err(e) = cuwheel::spec::Config::parse(&outcome.pyproject, &path) {
        panic!("{e}\n{}", outcome.pyproject);
    }
    let inferred = infer(&root, false).unwrap().0;
    (outcome.pyproject, inferred)
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no `{key}` in\n{text}"))
}

const BARE_METAL: &str = r#"
import os
import subprocess
import torch
from packaging.version import parse, Version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, BuildExtension, CUDA_HOME

def get_cuda_bare_metal_version(cuda_dir):
    raw_output = subprocess.check_output([cuda_dir + "/bin/nvcc", "-V"], universal_newlines=True)
    output = raw_output.split()
    release_idx = output.index("release") + 1
    bare_metal_version = parse(output[release_idx].split(",")[0])
    return raw_output, bare_metal_version

cc_flag = []
_, bare_metal_version = get_cuda_bare_metal_version(CUDA_HOME)
if bare_metal_version < Version("11.6"):
    raise RuntimeError("FlashAttention is only supported on CUDA 11.6 and above")
cc_flag.append("-gencode")
cc_flag.append("arch=compute_80,code=sm_80")
if bare_metal_version >= Version("11.8"):
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_90,code=sm_90")
if bare_metal_version >= Version("12.8"):
    cc_flag += ["-gencode", "arch=compute_100,code=sm_100"]
    cc_flag += ["-gencode", "arch=compute_120,code=sm_120"]
if bare_metal_version >= Version("13.0"):
    cc_flag += ["-gencode", "arch=compute_110,code=sm_110"]
if bare_metal_version.major >= 13 and str(bare_metal_version) == "13.0":
    cc_flag.append("-DCUDA13")

TORCH_MAJOR = int(torch.__version__.split(".")[0])
TORCH_MINOR = int(torch.__version__.split(".")[1])
cxx = ["-O3"]
if TORCH_MAJOR > 2 or (TORCH_MAJOR == 2 and TORCH_MINOR >= 10):
    cxx.append("-DTORCH_2_10_API")

setup(
    name="bare-metal",
    version="1.0",
    ext_modules=[CUDAExtension(
        "bare_metal._C",
        ["csrc/k.cu", "csrc/b.cpp"],
        extra_compile_args={"cxx": cxx, "nvcc": ["-O3", "--use_fast_math"] + cc_flag},
    )],
    cmdclass={"build_ext": BuildExtension},
)
"#;

#[test]
fn nvcc_bare_metal_version_gives_archs_per_toolkit() {
    let (text, inferred) = written(BARE_METAL);
    // nvcc 13.0: >= 11.8, >= 12.8 and >= 13.0 all hold; nvcc 12.5: only >= 11.8.
    assert_eq!(
        line(&text, "cuda-archs"),
        r#"cuda-archs = { "12" = ["8.0", "9.0"], "13" = ["8.0", "9.0", "10.0", "11.0", "12.0"] }"#
    );
    // nvcc's flags are written per toolkit: the shared ones as the default,
    // CUDA 13's whole list under its major.
    assert_eq!(
        line(&text, "nvcc-flags"),
        r#"nvcc-flags = { default = ["-O3", "--use_fast_math"], "13" = ["-O3", "--use_fast_math", "-DCUDA13"] }"#
    );
    // C++ objects of a CPU module are shared by every toolkit, so cxx-flags
    // has one list: the shared flags are written, the others reported with
    // each toolkit's list.
    assert_eq!(line(&text, "cxx-flags"), r#"cxx-flags = ["-O3"]"#);
    let said = findings(&inferred);
    assert!(!said.contains("nvcc-flags"), "{said}");
    let notes = assumptions(&inferred);
    assert!(
        notes.iter().any(|n| n.contains(
            "setup.py computes `bare_metal._C`'s nvcc-flags per toolkit: written as a table keyed \
             by toolkit (\"13\")"
        )),
        "{notes:?}"
    );
    assert!(
        said.contains(
            "tool.cuwheel.modules[bare_metal._C].cxx-flags: setup.py computes `bare_metal._C`'s \
             cxx-flags per toolkit: [\"-O3\", \"-DTORCH_2_10_API\"] for nvcc 13.0, torch \
             2.11.0+cu130 (torch.version.cuda 13.0); [\"-O3\"] for nvcc 12.5, torch 2.9.0+cu128"
        ),
        "{said}"
    );
    // No branch was left unevaluated: nothing says "is not modelled".
    assert!(!said.contains("not modelled"), "{said}");
    assert!(!said.contains("cannot evaluate"), "{said}");
    let notes = assumptions(&inferred);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`nvcc -V` says release 12.5 for nvcc 12.5")),
        "{notes:?}"
    );
}

/// Two modules, one with flags per toolkit: its table is written in its
/// own `[[tool.cuwheel.modules]]`, and nothing of nvcc's is lifted to the top.
#[test]
fn a_modules_nvcc_flags_per_toolkit_stay_in_its_table() {
    let setup = BARE_METAL.replace(
        "    )],\n",
        "    ), CUDAExtension(\"bare_metal._D\", [\"csrc/k.cu\", \"csrc/b.cpp\"], \
         extra_compile_args={\"nvcc\": [\"-O3\", \"-DPLAIN\"]})],\n",
    );
    assert_ne!(setup, BARE_METAL);
    let (text, _) = written(&setup);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("nvcc-flags"))
        .collect();
    assert_eq!(
        lines,
        [
            r#"nvcc-flags = { default = ["-O3", "--use_fast_math"], "13" = ["-O3", "--use_fast_math", "-DCUDA13"] }"#,
            r#"nvcc-flags = ["-O3", "-DPLAIN"]"#,
        ],
        "{text}"
    );
}

/// `init`'s dry run of `setup` with matrix flags.
fn written_with(setup: &str, flags: cuwheel::init::matrix::MatrixFlags) -> String {
    let (_dir, root) = tree(&[
        ("setup.py", setup),
        ("csrc/k.cu", KERNEL),
        ("csrc/b.cpp", BINDING),
    ]);
    let options = InitOptions {
        cuwheel: Some("path:/c".into()),
        dry_run: true,
        matrix: flags,
        ..InitOptions::default()
    };
    init(&root, &options).unwrap().pyproject
}

#[test]
fn a_matrix_of_one_toolkit_is_evaluated_for_that_toolkit_alone() {
    let flags = |archs: &[&str]| cuwheel::init::matrix::MatrixFlags {
        torch: vec!["2.11".into()],
        python: vec!["3.13".into()],
        cuda: vec!["13.0".into()],
        cuda_archs: archs.iter().map(|a| a.to_string()).collect(),
    };
    // Only nvcc 13.0 builds the cells: its archs as one list, and its flags
    // (-DCUDA13, which nvcc 12.5 does not get) written, not reported.
    let text = written_with(BARE_METAL, flags(&[]));
    assert_eq!(
        line(&text, "cuda-archs"),
        r#"cuda-archs = ["8.0", "9.0", "10.0", "11.0", "12.0"]"#
    );
    assert_eq!(
        line(&text, "nvcc-flags"),
        r#"nvcc-flags = ["-O3", "--use_fast_math", "-DCUDA13"]"#
    );
    // --cuda-archs replaces what setup.py computes, table or list.
    let text = written_with(BARE_METAL, flags(&["9.0"]));
    assert_eq!(line(&text, "cuda-archs"), r#"cuda-archs = ["9.0"]"#);
    let both = written_with(
        BARE_METAL,
        cuwheel::init::matrix::MatrixFlags {
            torch: vec!["2.11,2.9".into()],
            python: vec!["3.13".into()],
            cuda: vec!["13.0,12.8".into()],
            cuda_archs: vec!["9.0".into()],
        },
    );
    assert_eq!(line(&both, "cuda-archs"), r#"cuda-archs = ["9.0"]"#);
}

#[test]
fn torch_version_cuda_keys_the_archs() {
    let setup = r#"
import os
import torch
from packaging import version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension

cuda = version.parse(torch.version.cuda)
archs = "8.0;9.0"
if cuda >= version.parse("13.0"):
    archs += ";10.0;12.0+PTX"
elif cuda.release >= (12, 8):
    archs += ";10.0+PTX"
os.environ["TORCH_CUDA_ARCH_LIST"] = archs
setup(name="tvc", version="1.0",
      ext_modules=[CUDAExtension("tvc._C", ["csrc/k.cu", "csrc/b.cpp"])])
"#;
    let (text, inferred) = written(setup);
    // torch.version.cuda is the CUDA of torch's wheels: 13.0 (torch 2.11)
    // and 12.8 (torch 2.9, whose cells nvcc 12.5 builds). setup.py adds
    // 10.0+PTX for 12.8, which nvcc 12.5 cannot compile: left out, and said.
    assert_eq!(
        line(&text, "cuda-archs"),
        r#"cuda-archs = { "12" = ["8.0", "9.0"], "13" = ["8.0", "9.0", "10.0", "12.0+PTX"] }"#
    );
    let said = assumptions(&inferred);
    assert!(
        said.iter().any(|t| t
            .starts_with("setup.py lists [10.0+PTX] for nvcc 12.5, which does not compile them")),
        "{said:?}"
    );
    // One note per line for what every toolkit's evaluation gave.
    let per_toolkit: Vec<&str> = inferred
        .assumptions
        .iter()
        .filter(|n| n.text.starts_with("evaluated once per toolkit"))
        .map(|n| n.at.as_str())
        .collect();
    let lines: std::collections::BTreeSet<&str> = per_toolkit.iter().copied().collect();
    assert_eq!(per_toolkit.len(), lines.len(), "{per_toolkit:?}");
    assert!(
        said.iter()
            .any(|t| t.contains("\"13.0\" for nvcc 13.0") && t.contains("; ")),
        "{said:?}"
    );
}

#[test]
fn an_arch_list_set_by_default_follows_the_toolkit() {
    let setup = r#"
import os
import subprocess
from packaging.version import Version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME

if "TORCH_CUDA_ARCH_LIST" not in os.environ:
    out = subprocess.run([os.path.join(CUDA_HOME, "bin", "nvcc"), "--version"],
                         capture_output=True, text=True).stdout
    release = Version(out.split("release ")[1].split(",")[0])
    if release < Version("12.8"):
        os.environ["TORCH_CUDA_ARCH_LIST"] = "7.5;8.0;8.6;9.0+PTX"
    else:
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;8.6;9.0;10.0;12.0+PTX"
setup(name="dflt", version="1.0",
      ext_modules=[CUDAExtension("dflt._C", ["csrc/k.cu", "csrc/b.cpp"])])
"#;
    let (text, inferred) = written(setup);
    assert_eq!(
        line(&text, "cuda-archs"),
        r#"cuda-archs = { "12" = ["7.5", "8.0", "8.6", "9.0+PTX"], "13" = ["8.0", "8.6", "9.0", "10.0", "12.0+PTX"] }"#
    );
    // The unset variable is still an assumption, said once.
    assert!(
        inferred.assumptions.iter().any(|n| n
            .text
            .contains("reads `TORCH_CUDA_ARCH_LIST` from the environment")),
        "{:?}",
        inferred.assumptions
    );
}

#[test]
fn archs_every_toolkit_agrees_on_stay_one_list() {
    let setup = r#"
import subprocess
from packaging.version import Version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME
out = subprocess.check_output(f"{CUDA_HOME}/bin/nvcc -V", shell=True).decode()
v = Version(out.split("release ")[1].split(",")[0])
cc = ["-gencode", "arch=compute_80,code=sm_80"]
if v >= Version("11.8"):
    cc += ["-gencode", "arch=compute_90,code=sm_90"]
setup(name="same", version="1.0",
      ext_modules=[CUDAExtension("same._C", ["csrc/k.cu", "csrc/b.cpp"], extra_compile_args={"nvcc": cc})])
"#;
    let (text, inferred) = written(setup);
    assert_eq!(line(&text, "cuda-archs"), r#"cuda-archs = ["8.0", "9.0"]"#);
    assert!(inferred.toolkit_archs.is_empty());
    assert!(
        !findings(&inferred).contains("tool.cuwheel.cuda-archs"),
        "{}",
        findings(&inferred)
    );
}

#[test]
fn a_toolkit_setup_py_refuses_is_reported_and_the_others_are_written() {
    let setup = r#"
import subprocess
from packaging.version import Version
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
out = subprocess.check_output(["nvcc", "-V"], text=True)
v = Version(out.split("release ")[1].split(",")[0])
if v < Version("12.8"):
    raise RuntimeError("needs CUDA 12.8")
setup(name="new", version="1.0",
      ext_modules=[CUDAExtension("new._C", ["csrc/k.cu", "csrc/b.cpp"],
                                 extra_compile_args={"nvcc": ["-gencode", "arch=compute_100,code=sm_100"]})])
"#;
    let (text, inferred) = written(setup);
    assert_eq!(line(&text, "cuda-archs"), r#"cuda-archs = ["10.0"]"#);
    let said = findings(&inferred);
    assert!(
        said.contains(
            "tool.cuwheel.matrix: evaluated for nvcc 12.5, torch 2.9.0+cu128 (torch.version.cuda \
             12.8), setup.py does not reach setup(): setup.py never calls setup()"
        ),
        "{said}"
    );
    assert!(
        said.contains("setup.py:9: `raise RuntimeError(\"needs CUDA 12.8\")`"),
        "{said}"
    );
}

#[test]
fn torch_version_compares_as_a_version_and_splits_as_a_string() {
    let setup = r#"
import torch
from packaging.version import Version, parse
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension

flags = ["-O3"]
# torch's TorchVersion: "2.11.0+cu130" >= "2.10" although it sorts lower as text.
if torch.__version__ >= "2.10":
    flags.append("-DAT_LEAST_2_10")
if torch.__version__ >= (2, 9):
    flags.append("-DAT_LEAST_2_9")
base = parse(torch.__version__.split("+")[0])
flags.append(f"-DTORCH_MINOR={base.minor}")
flags.append("-DTORCH_BASE=" + base.base_version)
v = Version(torch.version.cuda)
flags.append(f"-DCUDA_RELEASE={v.release[0]}{v.release[1]}")
setup(name="tv", version="1.0",
      ext_modules=[CUDAExtension("tv._C", ["csrc/k.cu", "csrc/b.cpp"], extra_compile_args={"cxx": flags})])
"#;
    let (text, inferred) = written(setup);
    assert_eq!(
        line(&text, "cxx-flags"),
        r#"cxx-flags = ["-O3", "-DAT_LEAST_2_9"]"#
    );
    let said = findings(&inferred);
    assert!(
        said.contains(
            "cxx-flags per toolkit: [\"-O3\", \"-DAT_LEAST_2_10\", \"-DAT_LEAST_2_9\", \
             \"-DTORCH_MINOR=11\", \"-DTORCH_BASE=2.11.0\", \"-DCUDA_RELEASE=130\"] for nvcc 13.0, \
             torch 2.11.0+cu130 (torch.version.cuda 13.0); [\"-O3\", \"-DAT_LEAST_2_9\", \
             \"-DTORCH_MINOR=9\", \"-DTORCH_BASE=2.9.0\", \"-DCUDA_RELEASE=128\"] for nvcc 12.5"
        ),
        "{said}"
    );
}

#[test]
fn arch_specific_targets_are_written_where_each_nvcc_compiles_them() {
    let setup = r#"
import os
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0a;10.0f"
setup(name="fam", version="1.0",
      ext_modules=[CUDAExtension("fam._C", ["csrc/k.cu", "csrc/b.cpp"])])
"#;
    let (text, inferred) = written(setup);
    // nvcc 12.5 (the cu128 cells') has sm_90a but no family targets, which
    // start at 12.9; nvcc 13.0 has both.
    assert_eq!(
        line(&text, "cuda-archs"),
        r#"cuda-archs = { "12" = ["8.0", "9.0a"], "13" = ["8.0", "9.0a", "10.0f"] }"#
    );
    let said = assumptions(&inferred);
    assert!(
        said.iter()
            .any(|t| t.starts_with("setup.py lists [10.0f] for nvcc 12.5")),
        "{said:?}"
    );
}
