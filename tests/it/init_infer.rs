//! `cuwheel init`'s inference over the setup.py patterns of real extensions
//! and over the demo, on fixtures of our own (tests/fixtures/init/): a
//! PyG-style package with one CPU and one CUDA library per op
//! (`per-op`), a single CUDA module whose bindings are `.cu` files and
//! whose archs come from the build machine (`one-module`), and the demo,
//! which has no setup.py. setup.py is only ever read, never run: these
//! fixtures import torch, which the test machine need not have.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cuwheel::init::classify::Flavour;
use cuwheel::init::model::{Inferred, Module, VersionSource};
use cuwheel::init::torch_archs::{Origin, TorchArchs};
use cuwheel::init::{InitOptions, infer, init};
use cuwheel::spec::Spec;

fn fixture(name: &str) -> PathBuf {
    crate::common::repo()
        .join("tests/fixtures/init")
        .join(name)
        .canonicalize()
        .unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of a fixture in a temporary directory (init writes into it).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_tree(&fixture(name), &root);
    (dir, root)
}

fn module<'a>(inferred: &'a Inferred, name: &str) -> &'a Module {
    inferred
        .modules
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no module {name}: {:?}",
                inferred.modules.iter().map(|m| &m.name).collect::<Vec<_>>()
            )
        })
}

/// The matrix named by flags, so that no package index is asked.
fn options() -> InitOptions {
    InitOptions {
        cuwheel: Some("path:/opt/cuwheel".into()),
        matrix: cuwheel::init::matrix::MatrixFlags {
            torch: vec!["2.11,2.9".into()],
            python: vec!["3.11,3.13,3.14".into()],
            ..Default::default()
        },
        torch_archs: Origin::Given(torch_archs()),
        ..InitOptions::default()
    }
}

/// The archs torch 2.11 (cu130) and 2.9 (cu128) were built for, as
/// `torch_archs::read_wheel` reads them from their cp311 wheels'
/// libtorch_cuda.so (tests/it/init_torch_archs.rs reads a real one).
fn torch_archs() -> BTreeMap<String, TorchArchs> {
    let archs = |sass: &[u32]| TorchArchs {
        sass: sass.to_vec(),
        ptx: Vec::new(),
    };
    BTreeMap::from([
        ("2.11".to_string(), archs(&[75, 80, 86, 90, 100, 120])),
        ("2.9".to_string(), archs(&[70, 75, 80, 86, 90, 100, 120])),
    ])
}

#[test]
fn per_op_modules_are_read_from_a_loop_over_globs_and_variants() {
    let (inferred, origin) = infer(&fixture("per-op"), false).unwrap();
    assert!(origin.starts_with("setup.py"));
    let names: Vec<&str> = inferred.modules.iter().map(|m| m.name.as_str()).collect();
    // glob order (sorted) × the variants a CUDA build host gets.
    assert_eq!(
        names,
        [
            "tinyops._info_cpu",
            "tinyops._info_cuda",
            "tinyops._scale_cpu",
            "tinyops._scale_cuda",
            "tinyops._shift_cpu",
            "tinyops._shift_cuda"
        ]
    );
    let cpu = module(&inferred, "tinyops._scale_cpu");
    assert!(!cpu.cuda);
    // A .cpp that reaches only torch/ATen through the project's headers is
    // a kernel; the entry point includes Python.h (under an #ifdef) and
    // registers ops: a torch-library binding.
    assert_eq!(cpu.kernels, ["csrc/cpu/scale_cpu.cpp"]);
    assert_eq!(
        cpu.bindings.get(&Flavour::TorchLibrary).unwrap(),
        &["csrc/scale.cpp"]
    );
    assert_eq!(cpu.reasons, ["csrc/scale.cpp includes <Python.h>"]);
    assert_eq!(cpu.defines, ["TINYOPS_PYTHON"]);
    assert_eq!(
        cpu.cxx_flags,
        ["-O2", "-Wno-unused", "-DAT_PARALLEL_OPENMP", "-fopenmp"]
    );
    assert!(cpu.nvcc_flags.is_empty());
    assert!(cpu.strip, "extra_link_args=['-s'] is strip = true");
    assert!(cpu.link_flags.is_empty());
    assert_eq!(cpu.include_dirs, ["csrc"]);
    let cuda = module(&inferred, "tinyops._scale_cuda");
    assert!(cuda.cuda);
    assert_eq!(
        cuda.kernels,
        ["csrc/cpu/scale_cpu.cpp", "csrc/cuda/scale_cuda.cu"]
    );
    assert_eq!(cuda.defines, ["TINYOPS_PYTHON", "TINYOPS_CUDA"]);
    // The list stored in the dict is extended afterwards: Python aliasing.
    assert_eq!(cuda.nvcc_flags, ["-O2", "--use_fast_math"]);
    // No CUDA source for shift: only the CPU kernel, still a CUDA module.
    assert_eq!(
        module(&inferred, "tinyops._shift_cuda").kernels,
        ["csrc/cpu/shift_cpu.cpp"]
    );
    assert!(module(&inferred, "tinyops._info_cuda").kernels.is_empty());

    let meta = &inferred.meta;
    assert_eq!(meta.name.as_deref(), Some("tinyops"));
    assert_eq!(meta.version, Some(VersionSource::Static("0.4.1".into())));
    assert_eq!(
        meta.description.as_deref(),
        Some("Tiny ops, one library each")
    );
    assert_eq!(meta.dependencies, ["numpy>=1.24"]);
    assert_eq!(meta.optional_dependencies["test"], ["pytest"]);
    assert_eq!(meta.requires_python.as_deref(), Some(">=3.9"));
    assert_eq!(
        meta.urls["Download"],
        "https://example.org/tinyops/archive/0.4.1.tar.gz"
    );
    // setup.cfg gives what setup() leaves out. Its License classifier names
    // the license expression and is dropped (PEP 639 allows no License
    // classifier beside an expression, and the config refuses one), saying so.
    assert_eq!(meta.license.as_deref(), Some("MIT"));
    assert!(
        !meta.classifiers.iter().any(|c| c.starts_with("License ::")),
        "{:?}",
        meta.classifiers
    );
    assert!(
        inferred.assumptions.iter().any(|n| n
            .text
            .contains("dropped the classifier `License :: OSI Approved :: MIT License`")),
        "{:?}",
        inferred.assumptions
    );
    assert_eq!(meta.license_files, ["LICENSE"]);
    assert!(
        matches!(&meta.readme, Some(cuwheel::init::model::Readme::File { path, content_type }) if path == "README.md" && content_type == "text/markdown")
    );
    assert_eq!(inferred.packages, ["tinyops"]);

    let said: Vec<String> = inferred
        .assumptions
        .iter()
        .map(|n| format!("{} {}", n.at, n.text))
        .collect();
    let said = said.join("\n");
    for expected in [
        "setup.py:19: `if torch.cuda.is_available():` assumed a CUDA build host: torch.cuda.is_available() is True",
        "setup.py:23: `if os.getenv('TINYOPS_FORCE_GPU', '0') == '1':` reads `TINYOPS_FORCE_GPU` from the environment: taken as unset, so skipped this branch",
        "setup.py:48: `backend = parallel_info()` assumed a CUDA build host: torch's parallel backend is OpenMP",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in\n{said}");
    }
    let keys: Vec<&str> = inferred.findings.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(
        keys,
        ["tool.cuwheel.package-include", "tool.cuwheel.cuda-archs"],
        "{:#?}",
        inferred.findings
    );
    assert!(
        inferred.findings[0]
            .problem
            .contains("tinyops/defaults.json")
    );
}

#[test]
fn one_module_with_cu_bindings_and_archs_from_the_build_machine() {
    let (inferred, _) = infer(&fixture("one-module"), false).unwrap();
    assert_eq!(inferred.modules.len(), 1);
    let m = &inferred.modules[0];
    assert_eq!(m.name, "gemmlib_backend");
    assert!(m.kernels.is_empty());
    // Both .cu files reach torch/extension.h, one through a project header.
    assert_eq!(
        m.bindings.get(&Flavour::Pybind11).unwrap(),
        &["csrc/ops.cu", "csrc/gemm.cu"]
    );
    assert_eq!(
        m.reasons[1],
        "csrc/gemm.cu includes \"gemm.h\" (csrc/gemm.h), which includes <torch/extension.h>"
    );
    // f"{here}/..." with here = dirname(abspath(__file__)): project paths.
    assert_eq!(m.include_dirs, ["third_party/halfmath/include", "csrc"]);
    assert_eq!(m.nvcc_flags, ["-std=c++17"]);
    assert_eq!(m.cxx_flags, ["-fopenmp", "-fPIC"]);
    assert!(inferred.archs.is_empty());
    // extras["all"] is a set built by a generator expression.
    assert_eq!(inferred.meta.optional_dependencies["all"], ["absl-py"]);
    assert!(
        matches!(&inferred.meta.readme, Some(cuwheel::init::model::Readme::File { path, .. }) if path == "README.md")
    );
    assert_eq!(inferred.packages, ["gemmlib"]);
    let findings: Vec<String> = inferred
        .findings
        .iter()
        .map(|f| format!("{}: {}", f.key, f.problem))
        .collect();
    // The LICENSE file's text is BSD-3-Clause, which the BSD classifier
    // allows: that is the expression, and the classifier is dropped.
    assert_eq!(
        inferred.meta.license.as_deref(),
        Some("BSD-3-Clause"),
        "{findings:#?}"
    );
    assert!(
        !inferred
            .meta
            .classifiers
            .iter()
            .any(|c| c.starts_with("License ::"))
    );
    assert!(
        !findings.iter().any(|f| f.starts_with("project.license")),
        "{findings:#?}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f.contains("tool.cuwheel.cuda-archs")
                && f.contains("setup.py:26: `if capability:`")),
        "{findings:#?}"
    );
    let taken: Vec<&str> = inferred
        .assumptions
        .iter()
        .map(|n| n.text.as_str())
        .collect();
    assert!(
        taken.iter().any(|t| t.contains(
            "`torch.cuda.get_device_capability()` is the GPU of the machine that runs \
             setup.py, and the archs torch was built for were not read from its wheel"
        )),
        "{taken:?}"
    );
}

/// setup.py builds for `torch.cuda.get_device_capability()`: init answers
/// it once per GPU arch each torch of the matrix was built for, so the
/// wheel serves every GPU that torch serves, each toolkit's list cut to
/// what its nvcc compiles.
#[test]
fn the_gpu_at_hand_is_every_gpu_torch_was_built_for() {
    let (_dir, root) = copy_of("one-module");
    let outcome = init(&root, &options()).unwrap();
    let doc: toml::Table = outcome.pyproject.parse().unwrap();
    let archs = doc["tool"]["cuwheel"]["cuda-archs"].as_table().unwrap();
    let list = |key: &str| -> Vec<&str> {
        archs[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect()
    };
    // torch 2.11 (cu130, nvcc 13.0): all six.
    assert_eq!(list("13"), ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]);
    // torch 2.9 (cu128) is built by nvcc 12.5, which has no sm_100 or sm_120.
    assert_eq!(list("12"), ["7.0", "7.5", "8.0", "8.6", "9.0"]);
    let inferred = &outcome.inferred;
    assert!(
        !inferred
            .findings
            .iter()
            .any(|f| f.key == "tool.cuwheel.cuda-archs"),
        "{:#?}",
        inferred.findings
    );
    // The flags every GPU shares stay; the -gencode of each became archs.
    assert_eq!(inferred.modules[0].nvcc_flags, ["-std=c++17"]);
    let said: Vec<&str> = inferred
        .assumptions
        .iter()
        .map(|n| n.text.as_str())
        .collect();
    assert!(
        said.iter().any(|t| t.contains(
            "for torch 2.11.0+cu130 it was answered once per GPU arch that torch was built for \
             (7.5, 8.0, 8.6, 9.0, 10.0, 12.0)"
        )),
        "{said:#?}"
    );
    assert!(
        outcome.matrix.notes.iter().any(|n| n
            == "torch 2.9.0+cu128 was built for 7.0, 7.5, 8.0, 8.6, 9.0, 10.0, 12.0 (as given)"),
        "{:?}",
        outcome.matrix.notes
    );
}

/// A setup.py that asks the GPU's capability, and one flag only the newer
/// GPUs get: the archs are united, the flag is reported, naming the GPUs.
#[test]
fn a_flag_only_some_gpus_get_is_reported_with_each_gpu() {
    let setup = r#"
import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, BuildExtension

major, minor = torch.cuda.get_device_capability()
flags = ["-O3", f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"]
if major >= 9:
    flags.append("-DHOPPER")
setup(
    name="gpuflag",
    version="1.0",
    ext_modules=[CUDAExtension("gpuflag._C", ["k.cu"], extra_compile_args={"nvcc": flags})],
    cmdclass={"build_ext": BuildExtension},
)
"#;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("gpuflag");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("setup.py"), setup).unwrap();
    fs::write(
        root.join("k.cu"),
        "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
    )
    .unwrap();
    let mut options = options();
    options.matrix.torch = vec!["2.11".into()];
    options.matrix.cuda = vec!["13.0".into()];
    options.dry_run = true;
    let outcome = init(&root, &options).unwrap();
    let doc: toml::Table = outcome.pyproject.parse().unwrap();
    let written: Vec<&str> = doc["tool"]["cuwheel"]["cuda-archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(written, ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]);
    let m = &outcome.inferred.modules[0];
    assert_eq!(m.nvcc_flags, ["-O3"]);
    let finding = outcome
        .inferred
        .findings
        .iter()
        .find(|f| f.key.ends_with(".nvcc-flags"))
        .unwrap_or_else(|| panic!("{:#?}", outcome.inferred.findings));
    assert!(
        finding.problem.contains("[\"-O3\", \"-DHOPPER\"] for nvcc 13.0, torch 2.11.0+cu130 (torch.version.cuda 13.0), a GPU of compute capability 12.0"),
        "{}",
        finding.problem
    );
}

#[test]
fn init_writes_pyproject_and_flake_keeping_what_the_file_had() {
    let (_dir, root) = copy_of("one-module");
    let outcome = init(&root, &options()).unwrap();
    let text = fs::read_to_string(root.join("pyproject.toml")).unwrap();
    assert_eq!(text, outcome.pyproject);
    assert!(text.starts_with(
        "# The build needs torch at build time; everything else is in setup.py.\n[build-system]\n\
         requires = [\"setuptools\", \"torch>=2.7.0,<2.8\"]  # the torch it is built against\n"
    ));
    let doc: toml::Table = text.parse().unwrap();
    let project = doc["project"].as_table().unwrap();
    assert_eq!(project["name"].as_str(), Some("gemmlib"));
    assert_eq!(project["version"].as_str(), Some("0.2.0"));
    assert_eq!(
        project["authors"][0]["email"].as_str(),
        Some("fixtures@example.org")
    );
    let tool = doc["tool"]["cuwheel"].as_table().unwrap();
    assert_eq!(tool["module"].as_str(), Some("gemmlib_backend"));
    assert_eq!(tool["binding"].as_str(), Some("pybind11"));
    assert!(
        !tool.contains_key("kernels"),
        "a module without kernels writes none"
    );
    assert_eq!(tool["include-dirs"].as_array().unwrap().len(), 2);
    assert_eq!(tool["matrix"]["python"].as_array().unwrap().len(), 3);
    // The build-system's torch pin is a finding about the matrix.
    assert!(
        outcome.inferred.findings.iter().any(
            |f| f.key == "tool.cuwheel.matrix.torch" && f.problem.contains("torch>=2.7.0,<2.8")
        )
    );
    let flake = fs::read_to_string(root.join("flake.nix")).unwrap();
    assert!(
        flake.contains("inputs.cuwheel.url = \"path:/opt/cuwheel\";"),
        "{flake}"
    );
    assert!(
        flake.contains("cuwheel.lib.mkProject { src = ./.; }"),
        "{flake}"
    );
    // Run again: the table exists now, so without --force nothing changes.
    let err = init(&root, &options()).unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(
        fs::read_to_string(root.join("pyproject.toml")).unwrap(),
        text
    );
    // With --force the table is replaced, the flake left alone if it is the same.
    fs::write(root.join("flake.nix"), "{ outputs = _: { }; }\n").unwrap();
    let again = init(
        &root,
        &InitOptions {
            force: false,
            ..options()
        },
    )
    .err();
    assert!(again.is_some());
    let forced = init(
        &root,
        &InitOptions {
            force: true,
            ..options()
        },
    )
    .unwrap();
    assert_eq!(forced.pyproject.matches("[tool.cuwheel]").count(), 1);
    assert!(
        forced.flake_written,
        "--force replaces a different flake.nix"
    );
}

#[test]
fn per_op_config_has_one_table_per_module_and_shared_flags_on_top() {
    let (_dir, root) = copy_of("per-op");
    init(&root, &options()).unwrap();
    let doc: toml::Table = fs::read_to_string(root.join("pyproject.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let tool = doc["tool"]["cuwheel"].as_table().unwrap();
    assert_eq!(
        tool["include-dirs"].as_array().unwrap()[0].as_str(),
        Some("csrc")
    );
    assert_eq!(tool["nvcc-flags"].as_array().unwrap().len(), 2);
    assert_eq!(
        tool["defines"].as_array().unwrap()[0].as_str(),
        Some("TINYOPS_PYTHON")
    );
    assert_eq!(
        tool["packages"].as_array().unwrap()[0].as_str(),
        Some("tinyops")
    );
    assert!(!tool.contains_key("module"));
    let modules = tool["modules"].as_array().unwrap();
    assert_eq!(modules.len(), 6);
    let scale_cuda = modules
        .iter()
        .find(|m| m["name"].as_str() == Some("tinyops._scale_cuda"))
        .unwrap();
    assert!(
        scale_cuda.get("cuda").is_none(),
        "cuda = true is the default"
    );
    assert_eq!(scale_cuda["binding"].as_str(), Some("torch-library"));
    assert_eq!(
        scale_cuda["defines"].as_array().unwrap()[0].as_str(),
        Some("TINYOPS_CUDA")
    );
    assert_eq!(scale_cuda["strip"].as_bool(), Some(true));
    let scale_cpu = modules
        .iter()
        .find(|m| m["name"].as_str() == Some("tinyops._scale_cpu"))
        .unwrap();
    assert_eq!(scale_cpu["cuda"].as_bool(), Some(false));
    assert!(scale_cpu.get("nvcc-flags").is_none());
    // Every module's keys are the v2 schema's.
    const MODULE_KEYS: [&str; 13] = [
        "name",
        "cuda",
        "kernels",
        "bindings",
        "binding",
        "include-dirs",
        "defines",
        "undefines",
        "nvcc-flags",
        "cxx-flags",
        "link-flags",
        "libraries",
        "strip",
    ];
    for m in modules {
        for key in m.as_table().unwrap().keys() {
            assert!(
                MODULE_KEYS.contains(&key.as_str()),
                "unknown module key {key}"
            );
        }
    }
    // No pybind11 binding: no python list in the matrix.
    assert!(tool["matrix"].get("python").is_none());
    assert_eq!(doc["project"]["license"].as_str(), Some("MIT"));
}

/// The demo without its [tool.cuwheel]: inferred from the tree alone, the
/// config names the same module, kernels, bindings, include dirs, default
/// archs, baseline and packages. Its compile flags are the one thing the
/// sources do not state (the plan adds -O2 and --expt-relaxed-constexpr
/// itself), so they are compared as absent; its matrix is init's default,
/// which the demo's (showing the reach of cuwheel's matrix) extends; and
/// the demo's CUDA 13.0 entry adding sm_90a is its own choice, which a tree
/// without a setup.py does not state (init reads `9.0a` from a setup.py's
/// gencode flags or arch list, not from a kernel's feature guards).
#[test]
fn the_demo_is_inferred_from_its_tree() {
    let demo = crate::common::demo();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-ext");
    copy_tree(&demo.join("csrc"), &root.join("csrc"));
    copy_tree(&demo.join("demo_ext"), &root.join("demo_ext"));
    let original = fs::read_to_string(demo.join("pyproject.toml")).unwrap();
    let project_only = &original[..original.find("[tool.cuwheel]").unwrap()];
    fs::write(root.join("pyproject.toml"), project_only).unwrap();
    let outcome = init(&root, &options()).unwrap();
    assert_eq!(outcome.origin, "the source tree");
    assert!(outcome.kept.is_empty(), "{:?}", outcome.kept);
    assert!(outcome.pyproject.starts_with(project_only.trim_end()));
    // Both configs through cuwheel's own reader.
    let inferred = Spec::load(&root).unwrap().config;
    let demo_dir = tempfile::tempdir().unwrap();
    copy_tree(&demo.join("csrc"), &demo_dir.path().join("csrc"));
    copy_tree(&demo.join("demo_ext"), &demo_dir.path().join("demo_ext"));
    fs::write(demo_dir.path().join("pyproject.toml"), &original).unwrap();
    let expected = Spec::load(demo_dir.path()).unwrap().config;
    let shown = |c: &cuwheel::spec::Config| {
        format!(
            "{} {:?} {:?} {:?} {:?} {:?} {} {:?} {:?} {:?}",
            c.modules[0].name.value,
            c.modules[0]
                .flavour_kernels
                .iter()
                .map(|(f, k)| (
                    f.to_string(),
                    k.iter().map(|k| k.value.to_string()).collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>(),
            c.modules[0]
                .kernels
                .iter()
                .map(|k| k.value.to_string())
                .collect::<Vec<_>>(),
            c.modules[0]
                .bindings
                .iter()
                .map(|(f, files)| (
                    f.to_string(),
                    files.iter().map(|p| p.value.clone()).collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>(),
            c.modules[0]
                .compile
                .include_dirs
                .iter()
                .map(|d| d.value.clone())
                .collect::<Vec<_>>(),
            c.cuda_archs.default,
            c.baseline,
            c.matrix.cuda.is_empty(),
            c.packages
                .iter()
                .map(|p| p.value.clone())
                .collect::<Vec<_>>(),
            (
                c.name.to_string(),
                c.version.to_string(),
                &c.metadata.license
            ),
        )
    };
    assert_eq!(shown(&inferred), shown(&expected));
    assert!(inferred.cuda_archs.by_toolkit.is_empty());
    let extra: Vec<String> = expected
        .cuda_archs
        .by_toolkit
        .iter()
        .map(|(toolkit, archs)| {
            let archs: Vec<String> = archs.iter().map(ToString::to_string).collect();
            format!("{toolkit:?} = {archs:?}")
        })
        .collect();
    assert_eq!(
        extra,
        [r#"Version(CUDA 13.0) = ["8.0", "9.0a", "9.0+PTX"]"#]
    );
    let torch: Vec<String> = inferred
        .matrix
        .torch
        .iter()
        .map(|t| t.value.to_string())
        .collect();
    assert_eq!(torch, ["2.11", "2.9"]);
    assert!(inferred.matrix.exclude.is_empty());
    let (inferred, expected) = (&inferred.modules[0].compile, &expected.modules[0].compile);
    assert!(inferred.nvcc_flags.is_empty() && inferred.cxx_flags.is_empty());
    assert_eq!(expected.nvcc_flags.default, ["--expt-relaxed-constexpr"]);
    assert_eq!(expected.cxx_flags, ["-O3"]);
}

#[test]
fn the_command_reports_and_writes_without_locking() {
    let (_dir, root) = copy_of("one-module");
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["init", "--no-lock", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.11,2.9", "--python", "3.11,3.13,3.14"])
        // Archs given: no torch wheel is read for its archs.
        .args(["--cuda-archs", "8.0,9.0"])
        .arg(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("init: not inferred — review these in pyproject.toml:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tool.cuwheel.matrix.torch: pyproject.toml's [build-system] requires"),
        "{stderr}"
    );
    assert!(!stderr.contains("libtorch_cuda.so"), "{stderr}");
    let text = fs::read_to_string(root.join("pyproject.toml")).unwrap();
    assert!(text.contains("cuda-archs = [\"8.0\", \"9.0\"]"), "{text}");
    assert!(
        stderr.contains("binding: csrc/gemm.cu includes \"gemm.h\""),
        "{stderr}"
    );
    assert!(root.join("flake.nix").is_file());
    assert!(!root.join("cuwheel.lock").exists());
    // A dry run prints the file and writes nothing.
    let (_dir2, root2) = copy_of("per-op");
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.11,2.9", "--python", "3.11,3.13,3.14"])
        .arg(&root2)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("[[tool.cuwheel.modules]]"));
    assert!(!root2.join("pyproject.toml").exists() && !root2.join("flake.nix").exists());
}

/// The per-op fixture unpacked as an sdist: PKG-INFO and an egg-info whose
/// SOURCES.txt (the manifest) lists `listed`.
fn as_sdist(listed: &[&str], extra_files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tinyops-0.4.1");
    copy_tree(&fixture("per-op"), &root);
    fs::write(
        root.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: tinyops\n",
    )
    .unwrap();
    fs::create_dir(root.join("tinyops.egg-info")).unwrap();
    fs::write(
        root.join("tinyops.egg-info/SOURCES.txt"),
        listed.join("\n") + "\n",
    )
    .unwrap();
    for file in extra_files {
        fs::write(root.join(file), "x\n").unwrap();
    }
    (dir, root)
}

#[test]
fn include_package_data_in_an_sdist_ships_what_its_manifest_lists() {
    let listed = [
        "setup.py",
        "tinyops/__init__.py",
        "tinyops/defaults.json",
        "csrc/ops.h",
        "tinyops.egg-info/SOURCES.txt",
        // A hostile record: paths that climb out are never shipped.
        "tinyops/../setup.cfg",
        "tinyops/./defaults.json",
    ];
    // Every data file of tinyops/ is in the manifest: the directory's glob.
    let (_dir, root) = as_sdist(&listed, &[]);
    let (inferred, _) = infer(&root, false).unwrap();
    assert_eq!(inferred.package_include, ["tinyops/*"]);
    // A hidden file the manifest lists is named: `*` does not match it. A
    // `.git` is not: git, and so the flake, never carries one.
    let with_hidden: Vec<&str> = listed
        .iter()
        .copied()
        .chain(["tinyops/.keep", "tinyops/.git"])
        .collect();
    let (_dir_h, root_h) = as_sdist(&with_hidden, &["tinyops/.keep", "tinyops/.git"]);
    let (inferred, _) = infer(&root_h, false).unwrap();
    assert_eq!(inferred.package_include, ["tinyops/*", "tinyops/.keep"]);
    assert!(
        !inferred
            .findings
            .iter()
            .any(|f| f.key == "tool.cuwheel.package-include"),
        "{:#?}",
        inferred.findings
    );
    // A file the manifest leaves out (a build leftover) stays out: the
    // listed ones are named one by one.
    let (_dir, root) = as_sdist(&listed, &["tinyops/scratch.txt"]);
    let (inferred, _) = infer(&root, false).unwrap();
    assert_eq!(inferred.package_include, ["tinyops/defaults.json"]);
    // Without PKG-INFO (a checkout), what MANIFEST.in selects is unknown:
    // the finding stays, naming the file.
    fs::remove_file(root.join("PKG-INFO")).unwrap();
    let (inferred, _) = infer(&root, false).unwrap();
    assert!(inferred.package_include.is_empty());
    let finding = inferred
        .findings
        .iter()
        .find(|f| f.key == "tool.cuwheel.package-include")
        .expect("a finding");
    assert!(
        finding.problem.contains("tinyops/defaults.json"),
        "{finding}"
    );
}

#[test]
fn include_package_data_defaults_to_true_under_a_project_table_as_setuptools_does() {
    let listed = [
        "setup.py",
        "pyproject.toml",
        "tinyops/__init__.py",
        "tinyops/defaults.json",
        "tinyops.egg-info/SOURCES.txt",
    ];
    let (_dir, root) = as_sdist(&listed, &[]);
    let setup = root.join("setup.py");
    let text = fs::read_to_string(&setup).unwrap();
    assert!(text.contains("    include_package_data=True,\n"));
    fs::write(&setup, text.replace("    include_package_data=True,\n", "")).unwrap();
    // Neither setup() nor pyproject.toml says it: setuptools ships no data.
    let (inferred, _) = infer(&root, false).unwrap();
    assert!(inferred.package_include.is_empty(), "{inferred:#?}");
    // A [project] table: setuptools' default becomes true.
    let pyproject = root.join("pyproject.toml");
    fs::write(
        &pyproject,
        "[project]\nname = \"tinyops\"\ndynamic = [\"version\"]\n",
    )
    .unwrap();
    let (inferred, _) = infer(&root, false).unwrap();
    assert_eq!(inferred.package_include, ["tinyops/*"]);
    // Unless pyproject.toml turns it off.
    fs::write(
        &pyproject,
        "[project]\nname = \"tinyops\"\ndynamic = [\"version\"]\n\n\
         [tool.setuptools]\ninclude-package-data = false\n",
    )
    .unwrap();
    let (inferred, _) = infer(&root, false).unwrap();
    assert!(inferred.package_include.is_empty(), "{inferred:#?}");
}
