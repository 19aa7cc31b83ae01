//! `Spec::load` and `Spec::cells` on project trees written to a temporary
//! directory: the files the config names are really looked up, the cells
//! come from the facts of the shipped demo's lock, and the errors are the
//! typed ones a caller can inspect.

use std::fs;
use std::path::{Path, PathBuf};

use cuwheel_build::lock::format::Lock;
use cuwheel_build::spec::{BindingFlavour, CompatError, ConfigError, MatrixFacts, Rule, Spec};
use tempfile::TempDir;

/// The demo's matrix: torch 2.7, 2.9, 2.11, 2.14 and 2.15, four Pythons
/// (3.12 from an archive), both binding flavours.
const DEMO: &str = r#"[project]
name = "demo-ext"
version = "0.1.0"

[tool.cuwheel]
module = "demo_ext._C"
kernels = ["csrc/kernels/*.cu"]
cuda-archs = ["8.0", "9.0+PTX"]
baseline = "manylinux_2_31"
include-dirs = ["csrc/include"]

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]
torch-library = ["csrc/ops.cpp"]

[tool.cuwheel.matrix]
torch = ["2.7", "2.9", "2.11", ">=2.14,<=2.15"]
python = ["3.11", "3.12", "3.13", "3.14"]
exclude = [{ torch = "2.7", python = "3.14" }]

[tool.cuwheel.matrix.python-headers."3.12"]
file = "python3.12-headers.tar"
"#;

const DEMO_FILES: [&str; 6] = [
    "csrc/kernels/fused_add.cu",
    "csrc/kernels/reduce.cu",
    "csrc/kernels/scale.cu",
    "csrc/include/common.h",
    "csrc/bindings.cpp",
    "csrc/ops.cpp",
];

/// What the package index said when the demo was locked.
fn demo_facts() -> MatrixFacts {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-ext/cuwheel.lock");
    Lock::read(&lock).unwrap_or_else(|e| panic!("{e:#}")).facts
}

/// A project with `pyproject` and an empty file at each of `files`.
fn project(pyproject: &str, files: &[&str]) -> TempDir {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("pyproject.toml"), pyproject).unwrap();
    for file in files {
        let path = root.path().join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "").unwrap();
    }
    root
}

fn demo_with(old: &str, new: &str) -> String {
    assert!(DEMO.contains(old), "the demo has no {old:?}");
    DEMO.replacen(old, new, 1)
}

/// The torch-stable entry of the shipped demo.
const STABLE_ENTRY: &str =
    "torch-stable = { sources = [\"csrc/stable/ops.cpp\"], kernels = [\"csrc/stable/*.cu\"] }";

/// The demo with a torch-stable `entry` in its bindings table, and its
/// files with the stable sources.
fn demo_with_stable(entry: &str) -> (String, Vec<&'static str>) {
    let old = "torch-library = [\"csrc/ops.cpp\"]\n";
    let text = demo_with(old, &format!("{old}{entry}\n"));
    let mut files = DEMO_FILES.to_vec();
    files.extend(["csrc/stable/ops.cpp", "csrc/stable/scale.cu"]);
    (text, files)
}

fn config_error(root: &Path) -> ConfigError {
    let error = Spec::load(root).expect_err("the project should be refused");
    error
        .downcast_ref::<ConfigError>()
        .unwrap_or_else(|| panic!("not a ConfigError: {error:#}"))
        .clone()
}

/// Each problem's key path and text.
fn keys_and_problems(error: &ConfigError) -> Vec<(&str, &str)> {
    error
        .problems
        .iter()
        .map(|p| (p.at.key.as_str(), p.problem.as_str()))
        .collect()
}

fn compat_error(pyproject: &str) -> CompatError {
    let root = project(pyproject, &DEMO_FILES);
    let spec = Spec::load(root.path()).unwrap_or_else(|e| panic!("{e:#}"));
    let error = spec
        .cells(&demo_facts())
        .expect_err("the matrix should be refused");
    error
        .downcast_ref::<CompatError>()
        .unwrap_or_else(|| panic!("not a CompatError: {error:#}"))
        .clone()
}

#[test]
fn loads_the_demo_and_names_its_cells_for_the_torch_they_serve() {
    let root = project(DEMO, &DEMO_FILES);
    let spec = Spec::load(root.path()).unwrap_or_else(|e| panic!("{e:#}"));
    let expected: Vec<PathBuf> = DEMO_FILES[..3].iter().map(PathBuf::from).collect();
    assert_eq!(spec.kernel_sources, [expected]);
    assert_eq!(spec.pyproject, root.path().join("pyproject.toml"));

    let cells = spec
        .cells(&demo_facts())
        .unwrap_or_else(|e| panic!("{e:#}"));
    let names: Vec<String> = cells
        .iter()
        .map(|cell| format!("{cell} {}", cell.nvcc))
        .collect();
    assert_eq!(
        names,
        [
            "cu126-abi3 12.5",
            "cu126-py311 12.5",
            "cu126-py312 12.5",
            "cu126-py313 12.5",
            "cu128-abi3 12.5",
            "cu128-py311 12.5",
            "cu128-py312 12.5",
            "cu128-py313 12.5",
            "cu128-py314 12.5",
            "cu130-abi3-torch211 13.0",
            "cu130-py311-torch211 13.0",
            "cu130-py312-torch211 13.0",
            "cu130-py313-torch211 13.0",
            "cu130-py314-torch211 13.0",
            "cu130-abi3-torch214 13.0",
            "cu130-py311-torch214 13.0",
            "cu130-py312-torch214 13.0",
            "cu130-py313-torch214 13.0",
            "cu130-py314-torch214 13.0",
            "cu132-abi3 13.2",
            "cu132-py311 13.2",
            "cu132-py312 13.2",
            "cu132-py313 13.2",
            "cu132-py314 13.2",
        ]
    );
    let cu126_py313 = cells[3];
    let version = cu126_py313.wheel_version(&spec.config.version);
    assert_eq!(
        format!(
            "{}-{version}-{}",
            spec.config.name.wheel_form(),
            cu126_py313.interpreter_abi()
        ),
        "demo_ext-0.1.0+pt27cu126-cp313-cp313"
    );
    let cu132_abi3 = cells[19];
    assert_eq!(
        format!(
            "{}-{}",
            cu132_abi3.wheel_version(&spec.config.version),
            cu132_abi3.interpreter_abi()
        ),
        "0.1.0+pt215cu132-cp39-abi3"
    );
}

#[test]
fn the_shipped_demo_project_loads_with_the_same_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-ext");
    let spec = Spec::load(&root).unwrap_or_else(|e| panic!("{e:#}"));
    let kernels: Vec<PathBuf> = ["bias_gelu.cu", "row_norm.cu", "axpby.cu", "tile_matmul.cu"]
        .iter()
        .map(|name| Path::new("csrc/kernels").join(name))
        .collect();
    let mut expected = kernels;
    expected.sort();
    assert_eq!(spec.kernel_sources, [expected]);
    // torch-stable's own kernels, beside them.
    let stable: Vec<String> = spec.flavour_kernel_sources[0][&BindingFlavour::TorchStable]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        stable,
        [
            "csrc/stable/axpby.cu",
            "csrc/stable/bias_gelu.cu",
            "csrc/stable/row_norm.cu"
        ]
    );
    let facts = demo_facts();
    let shipped: Vec<String> = spec
        .cells(&facts)
        .unwrap()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let (text, files) = demo_with_stable(STABLE_ENTRY);
    // The shipped demo's aarch64 cells: torch 2.11's, but for Python 3.12
    // and torch-stable.
    let aarch64 = "platforms = [\"x86_64\", \"aarch64\"]\nexclude = [{ torch = \"2.7\", python = \"3.14\" }, \
                   { platform = \"aarch64\", torch = \"2.7\" }, { platform = \"aarch64\", torch = \"2.9\" }, \
                   { platform = \"aarch64\", torch = \"2.14\" }, { platform = \"aarch64\", torch = \"2.15\" }, \
                   { platform = \"aarch64\", python = \"3.12\" }, { platform = \"aarch64\", binding = \"torch-stable\" }]";
    let text = text.replacen(
        "exclude = [{ torch = \"2.7\", python = \"3.14\" }]",
        aarch64,
        1,
    );
    let template = project(&text, &files);
    let template: Vec<String> = Spec::load(template.path())
        .unwrap()
        .cells(&facts)
        .unwrap()
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(shipped, template);
}

#[test]
fn a_flavours_kernel_patterns_are_checked_like_the_modules() {
    let (text, files) = demo_with_stable(
        "torch-stable = { sources = [\"csrc/stable/ops.cpp\"], kernels = [\"csrc/stabel/*.cu\"] }",
    );
    let error = config_error(project(&text, &files).path());
    assert_eq!(error.problems.len(), 1, "{error}");
    let problem = &error.problems[0];
    assert_eq!(
        problem.at.key,
        "tool.cuwheel.bindings.torch-stable.kernels[0]"
    );
    assert_eq!(problem.problem, "`csrc/stabel/*.cu` matches no file");

    // A binding source may not also be a kernel of another list.
    let (text, files) = demo_with_stable(
        "torch-stable = { sources = [\"csrc/stable/ops.cpp\"], kernels = [\"csrc/stable/*\"] }",
    );
    let error = config_error(project(&text, &files).path());
    assert!(
        error
            .to_string()
            .contains("csrc/stable/ops.cpp is also matched by a kernel pattern"),
        "{error}"
    );
}

#[test]
fn a_kernel_pattern_matching_nothing_is_named() {
    let root = project(
        &demo_with("csrc/kernels/*.cu", "csrc/kernel/*.cu"),
        &DEMO_FILES,
    );
    let error = config_error(root.path());
    assert_eq!(error.problems.len(), 1, "{error}");
    let problem = &error.problems[0];
    assert_eq!(problem.at.key, "tool.cuwheel.kernels[0]");
    assert_eq!(problem.at.line, 7);
    assert_eq!(problem.problem, "`csrc/kernel/*.cu` matches no file");
    assert!(error.to_string().contains("pyproject.toml:7:"), "{error}");
}

#[test]
fn a_kernel_pattern_must_match_only_cu_files() {
    let root = project(&demo_with("csrc/kernels/*.cu", "csrc/**/*"), &DEMO_FILES);
    let error = config_error(root.path());
    let problems: Vec<&str> = error.problems.iter().map(|p| p.problem.as_str()).collect();
    assert!(
        problems.contains(&"`csrc/**/*` matches csrc/include/common.h, which is not a .cu or C++ (.cpp, .cc, .cxx) file"),
        "{error}"
    );
    // The bindings it also matched are reported as doubly listed.
    assert!(
        problems.contains(&"csrc/bindings.cpp is also matched by a kernel pattern"),
        "{error}"
    );
}

#[test]
fn missing_binding_sources_and_include_dirs_are_named() {
    let files: Vec<&str> = DEMO_FILES
        .iter()
        .copied()
        .filter(|file| !file.ends_with("ops.cpp") && !file.contains("include"))
        .collect();
    let root = project(DEMO, &files);
    let error = config_error(root.path());
    let found = keys_and_problems(&error);
    assert_eq!(
        found,
        [
            (
                "tool.cuwheel.include-dirs[0]",
                "include directory csrc/include does not exist"
            ),
            (
                "tool.cuwheel.bindings.torch-library[0]",
                "binding source csrc/ops.cpp does not exist"
            ),
        ]
    );
}

#[test]
fn a_missing_pyproject_says_where_it_looked() {
    let root = tempfile::tempdir().unwrap();
    let error = Spec::load(root.path()).unwrap_err();
    let shown = format!("{error:#}");
    assert!(shown.contains("pyproject.toml"), "{shown}");
    assert!(error.downcast_ref::<ConfigError>().is_none());
}

#[test]
fn config_errors_come_before_any_file_lookup() {
    let root = project(&demo_with("\"8.0\"", "\"sm_80\""), &[]);
    let error = config_error(root.path());
    assert_eq!(error.problems.len(), 1, "{error}");
    assert_eq!(error.problems[0].at.key, "tool.cuwheel.cuda-archs[0]");
    assert_eq!(error.problems[0].fix, "write \"8.0\"");
}

#[test]
fn impossible_cells_name_their_rules() {
    // torch 2.7 has no cp314 wheel without the exclude, none of the torches
    // has cp39 (3.9 is not even probed: the lock read the matrix's Pythons),
    // and an nvcc of another major is named for cu128.
    let text = demo_with(
        "exclude = [{ torch = \"2.7\", python = \"3.14\" }]",
        "nvcc = { cu128 = \"13.0\" }",
    );
    let error = compat_error(&text);
    let rules: Vec<Rule> = error.violations.iter().map(|v| v.rule).collect();
    assert_eq!(rules, [Rule::TorchPython, Rule::ToolkitMajor]);
    let cells: Vec<String> = error.violations[0]
        .cells
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(cells, ["cu126-py314"]);
    let toolkit_major = &error.violations[1];
    let cells: Vec<String> = toolkit_major.cells.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        cells,
        [
            "cu128-abi3",
            "cu128-py311",
            "cu128-py312",
            "cu128-py313",
            "cu128-py314"
        ]
    );
    let shown = error.to_string();
    assert!(
        shown.contains(
            "rule toolkit-major: nvcc 13.0 cannot build for torch 2.9, whose wheels use CUDA 12.8"
        ),
        "{shown}"
    );
    assert!(shown.contains("pyproject.toml: 6 cells"), "{shown}");
}

#[test]
fn a_gcc_14_baseline_rules_out_cuda_12_5() {
    let error = compat_error(&demo_with("manylinux_2_31", "manylinux_2_41"));
    assert_eq!(error.violations.len(), 1, "{error}");
    let violation = &error.violations[0];
    assert_eq!(violation.rule, Rule::GccRange);
    let cells: Vec<String> = violation.cells.iter().map(|c| c.to_string()).collect();
    assert_eq!(cells.len(), 9, "{cells:?}");
    assert!(
        cells
            .iter()
            .all(|c| c.starts_with("cu126") || c.starts_with("cu128"))
    );
}

/// A two-module project (CPU and CUDA) with package, readme and license
/// files; `extra` goes into `[tool.cuwheel]`, `project_extra` into `[project]`.
fn modules_project(extra: &str, project_extra: &str, files: &[&str]) -> TempDir {
    let text = format!(
        r#"[project]
name = "mods"
version = "1.0"
readme = "README.md"
{project_extra}

[tool.cuwheel]
cuda-archs = ["9.0"]
baseline = "manylinux_2_31"
{extra}

[[tool.cuwheel.modules]]
name = "mods._cpu"
cuda = false
kernels = ["csrc/cpu/*"]
bindings = ["csrc/cpu_ops.cpp"]
binding = "torch-library"

[[tool.cuwheel.modules]]
name = "mods._cuda"
kernels = ["csrc/cuda/*.cu"]
bindings = ["csrc/cuda_ops.cu"]
binding = "pybind11"

[tool.cuwheel.matrix]
cuda = ["13.0"]
python = ["3.13"]
torch = ["2.11"]
"#
    );
    project(&text, files)
}

const MODULE_FILES: [&str; 11] = [
    "README.md",
    "LICENSE.txt",
    "csrc/cpu/a.cpp",
    "csrc/cuda/b.cu",
    "csrc/cpu_ops.cpp",
    "csrc/cuda_ops.cu",
    "mods/__init__.py",
    "mods/ops.pyi",
    "mods/data/x.json",
    "mods/vendor/third_party/h.py",
    "mods/kernels/k.cuh",
];

#[test]
fn modules_load_with_their_files_and_the_package_selection() {
    let root = modules_project(
        "package-include = [\"mods/data/*.json\"]\npackage-exclude = [\"**/third_party/**\"]",
        "",
        &MODULE_FILES,
    );
    let spec = Spec::load(root.path()).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        spec.kernel_sources,
        [
            vec![PathBuf::from("csrc/cpu/a.cpp")],
            vec![PathBuf::from("csrc/cuda/b.cu")]
        ]
    );
    let members: Vec<&str> = spec
        .package_files
        .iter()
        .map(|f| f.member.as_str())
        .collect();
    assert_eq!(
        members,
        ["mods/__init__.py", "mods/data/x.json", "mods/ops.pyi"]
    );
    // The default license files, at the root.
    assert_eq!(spec.license_files, [PathBuf::from("LICENSE.txt")]);
    let description = spec.description.unwrap();
    assert_eq!(description.content_type, "text/markdown");
    assert_eq!(description.file, Some(PathBuf::from("README.md")));
}

#[test]
fn module_files_that_cannot_work_are_named_before_any_build() {
    let mut files = MODULE_FILES.to_vec();
    files.push("csrc/cpu/c.cu");
    files.retain(|f| *f != "README.md");
    let root = modules_project(
        "package-include = [\"mods/data/*.yaml\", \"csrc/*.cpp\"]\npackage-exclude = [\"**/nothing/**\"]",
        "license-files = [\"COPYING\"]",
        &files,
    );
    let error = config_error(root.path());
    let found = keys_and_problems(&error);
    let expect = |key: &str, says: &str| {
        assert!(
            found.iter().any(|(k, p)| *k == key && p.contains(says)),
            "{key}: {says} not in {found:#?}"
        );
    };
    expect("project.readme", "cannot read the readme README.md");
    expect("project.license-files[0]", "`COPYING` matches no file");
    expect(
        "tool.cuwheel.package-include[0]",
        "`mods/data/*.yaml` matches no file",
    );
    expect(
        "tool.cuwheel.package-include[1]",
        "matches csrc/cpu_ops.cpp, which is not under a package directory",
    );
    expect(
        "tool.cuwheel.package-exclude[0]",
        "matches no file of the package directories",
    );
    expect(
        "tool.cuwheel.modules[0].kernels[0]",
        "matches csrc/cpu/c.cu, which is not a C++ (.cpp, .cc, .cxx) file: the module has cuda = false",
    );
    assert_eq!(found.len(), 6, "{found:#?}");
}

#[test]
fn an_arch_newer_than_an_nvcc_is_refused_for_its_cells() {
    let error = compat_error(&demo_with(
        "[\"8.0\", \"9.0+PTX\"]",
        "[\"8.0\", \"12.0+PTX\"]",
    ));
    assert_eq!(error.violations.len(), 1, "{error}");
    let violation = &error.violations[0];
    assert_eq!(violation.rule, Rule::CudaArchs);
    assert!(
        violation
            .problem
            .starts_with("nvcc 12.5 cannot compile for 12.0+PTX"),
        "{violation}"
    );
    // A table gives CUDA 12 its own list.
    let root = project(
        &demo_with(
            "cuda-archs = [\"8.0\", \"9.0+PTX\"]",
            "cuda-archs = { default = [\"8.0\", \"12.0+PTX\"], \"12\" = [\"8.0\", \"9.0+PTX\"] }",
        ),
        &DEMO_FILES,
    );
    let spec = Spec::load(root.path()).unwrap();
    assert_eq!(spec.cells(&demo_facts()).unwrap().len(), 24);
}
