//! The config reader's tests: the demo's config, every refusal with its
//! key and fix, the multi-module form, `[project]`'s METADATA values, and
//! the reader never panicking on damaged text.

use proptest::prelude::*;

use std::path::PathBuf;

use super::matrix::{EXCLUDE_KEYS, MATRIX_KEYS};
use super::*;
use crate::spec::document::ConfigProblem;
use crate::wheel::Arch;

const DEMO: &str = r#"
[project]
name = "demo-ext"
version = "0.1.0"
dependencies = ["torch"]

[tool.black]
line-length = 100

[tool.cuwheel]
module = "demo_ext._C"
kernels = ["csrc/kernels/*.cu"]
cuda-archs = ["8.0", "9.0+PTX"]
baseline = "manylinux_2_31"
include-dirs = ["csrc/include"]
defines = ["WITH_CUDA", "BLOCK=256"]
nvcc-flags = ["--use_fast_math"]
cxx-flags = ["-O3"]

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]
torch-library = ["csrc/ops.cpp"]

[tool.cuwheel.matrix]
cuda = ["13.0", "12.4"]
python = ["3.11", "3.13", "3.14"]
torch = ["2.11", "2.9"]
exclude = [
  { cuda = "13.0", torch = "2.9" },
  { cuda = "12.4", torch = "2.11" },
]
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("pyproject.toml"))
}

/// The problems of `text`, each as `key: problem / fix`.
fn problems(text: &str) -> Vec<ConfigProblem> {
    parse(text)
        .expect_err("the config should be refused")
        .problems
}

/// The demo with `old` replaced by `new` (which must occur).
fn demo_with(old: &str, new: &str) -> String {
    assert!(DEMO.contains(old), "the demo has no {old:?}");
    DEMO.replacen(old, new, 1)
}

fn only_problem(text: &str) -> ConfigProblem {
    let mut problems = problems(text);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.remove(0)
}

#[test]
fn reads_the_demo_config() {
    let config = parse(DEMO).unwrap();
    assert_eq!(config.name.as_str(), "demo-ext");
    assert_eq!(config.version.to_string(), "0.1.0");
    assert_eq!(config.modules[0].name.value.as_str(), "demo_ext._C");
    assert_eq!(config.modules[0].name.value.leaf(), "_C");
    assert_eq!(
        config.modules[0].kernels[0].value.to_string(),
        "csrc/kernels/*.cu"
    );
    assert_eq!(
        config.modules[0].kernels[0].at.key,
        "tool.cuwheel.kernels[0]"
    );
    assert_eq!(config.modules[0].kernels[0].at.line, 12);
    let flavours: Vec<_> = config.modules[0].bindings.keys().copied().collect();
    assert_eq!(
        flavours,
        [BindingFlavour::Pybind11, BindingFlavour::TorchLibrary]
    );
    assert!(config.modules[0].flavour_kernels.is_empty());
    assert_eq!(
        config.modules[0].bindings[&BindingFlavour::TorchLibrary][0].value,
        PathBuf::from("csrc/ops.cpp")
    );
    let archs: Vec<String> = config
        .cuda_archs
        .for_toolkit("12.4".parse().unwrap())
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(archs, ["8.0", "9.0+PTX"]);
    assert_eq!(config.baseline.platform_tag(), "manylinux_2_31_x86_64");
    assert_eq!(
        config.modules[0].compile.include_dirs[0].value,
        PathBuf::from("csrc/include")
    );
    let defines: Vec<String> = config.modules[0]
        .compile
        .defines
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(defines, ["WITH_CUDA", "BLOCK=256"]);
    assert_eq!(
        config.modules[0].compile.nvcc_flags.default,
        ["--use_fast_math"]
    );
    assert_eq!(config.modules[0].compile.cxx_flags, ["-O3"]);
    let cuda: Vec<String> = config
        .matrix
        .cuda
        .iter()
        .map(|c| c.value.to_string())
        .collect();
    assert_eq!(cuda, ["13.0", "12.4"]);
    assert_eq!(config.matrix.python.len(), 3);
    assert_eq!(config.matrix.exclude.len(), 2);
    assert_eq!(
        config.matrix.exclude[1].value.to_string(),
        r#"{ cuda = "12.4", torch = "2.11" }"#
    );
    assert_eq!(
        config.matrix.exclude[1].at.key,
        "tool.cuwheel.matrix.exclude[1]"
    );
}

#[test]
fn accepts_the_short_bindings_form() {
    let text = demo_with(
        "[tool.cuwheel.bindings]\npybind11 = [\"csrc/bindings.cpp\"]\ntorch-library = [\"csrc/ops.cpp\"]\n",
        "",
    )
    .replace(
        "cxx-flags = [\"-O3\"]",
        "cxx-flags = [\"-O3\"]\nbindings = [\"csrc/ops.cpp\"]\nbinding = \"torch-library\"",
    )
    .replace("python = [\"3.11\", \"3.13\", \"3.14\"]\n", "");
    let config = parse(&text).unwrap();
    assert_eq!(
        config.modules[0]
            .bindings
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [BindingFlavour::TorchLibrary]
    );
    assert!(config.matrix.python.is_empty());
}

/// The demo with a torch-stable entry `entry` after its torch-library one.
fn demo_with_stable(entry: &str) -> String {
    let old = "torch-library = [\"csrc/ops.cpp\"]\n";
    demo_with(old, &format!("{old}torch-stable = {entry}\n"))
}

#[test]
fn a_flavour_may_name_its_own_kernels_which_replace_the_modules() {
    let config = parse(&demo_with_stable(
        "{ sources = [\"csrc/stable/ops.cpp\"], kernels = [\"csrc/stable/*.cu\"] }",
    ))
    .unwrap();
    let module = &config.modules[0];
    assert_eq!(module.flavours(), BindingFlavour::ALL);
    assert_eq!(
        module.bindings[&BindingFlavour::TorchStable][0].value,
        PathBuf::from("csrc/stable/ops.cpp")
    );
    let own = &module.flavour_kernels[&BindingFlavour::TorchStable];
    assert_eq!(own[0].value.to_string(), "csrc/stable/*.cu");
    assert_eq!(
        own[0].at.key,
        "tool.cuwheel.bindings.torch-stable.kernels[0]"
    );
    // Replace, not extend: the stable builds see only their own kernels.
    let stable: Vec<String> = module
        .kernels_for(BindingFlavour::TorchStable)
        .iter()
        .map(|p| p.value.to_string())
        .collect();
    assert_eq!(stable, ["csrc/stable/*.cu"]);
    let library: Vec<String> = module
        .kernels_for(BindingFlavour::TorchLibrary)
        .iter()
        .map(|p| p.value.to_string())
        .collect();
    assert_eq!(library, ["csrc/kernels/*.cu"]);

    // A table without kernels, and the plain list: the module's kernels.
    for entry in [
        "{ sources = [\"csrc/stable/ops.cpp\"] }",
        "[\"csrc/stable/ops.cpp\"]",
    ] {
        let config = parse(&demo_with_stable(entry)).unwrap();
        assert!(config.modules[0].flavour_kernels.is_empty(), "{entry}");
        assert_eq!(
            config.modules[0].kernels_for(BindingFlavour::TorchStable),
            config.modules[0].kernels
        );
    }
}

#[test]
fn a_flavour_table_needs_its_sources_and_knows_only_its_keys() {
    let problem = only_problem(&demo_with_stable("{ kernels = [\"csrc/stable/*.cu\"] }"));
    assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-stable.sources");
    assert_eq!(problem.problem, "missing key `sources`");
    assert!(
        problem.fix.contains("sources = [\"csrc/ops.cpp\"]"),
        "{problem}"
    );

    let problem = only_problem(&demo_with_stable(
        "{ sources = [\"csrc/stable/ops.cpp\"], kernel = [\"csrc/stable/*.cu\"] }",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-stable.kernel");
    assert!(problem.fix.contains("did you mean `kernels`?"), "{problem}");
    assert!(problem.fix.contains("sources, kernels"), "{problem}");

    let problem = only_problem(&demo_with_stable("\"csrc/stable/ops.cpp\""));
    assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-stable");
    assert!(
        problem
            .fix
            .contains("torch-stable = { sources = [\"csrc/ops.cpp\"], kernels ="),
        "{problem}"
    );

    let problem = only_problem(&demo_with_stable("{ sources = [] }"));
    assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-stable.sources");
    assert_eq!(problem.problem, "the list is empty");

    let problem = only_problem(&demo_with(
        "torch-library = [\"csrc/ops.cpp\"]\n",
        "torch-stabel = [\"csrc/ops.cpp\"]\n",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-stabel");
    assert!(
        problem.fix.contains("did you mean `torch-stable`?"),
        "{problem}"
    );
}

#[test]
fn short_bindings_form_needs_its_flavour() {
    let text = demo_with(
        "[tool.cuwheel.bindings]\npybind11 = [\"csrc/bindings.cpp\"]\ntorch-library = [\"csrc/ops.cpp\"]\n",
        "",
    )
    .replace("cxx-flags = [\"-O3\"]", "cxx-flags = [\"-O3\"]\nbindings = [\"csrc/bindings.cpp\"]");
    let problem = only_problem(&text);
    assert_eq!(problem.at.key, "tool.cuwheel.binding");
    assert!(problem.fix.contains("binding = \"pybind11\""), "{problem}");
}

#[test]
fn unknown_key_message_suggests_the_spelling_and_lists_known_keys() {
    let all = problems(&demo_with("cuda-archs =", "cuda_archs ="));
    let unknown = all
        .iter()
        .find(|p| p.problem == "unknown key `cuda_archs`")
        .unwrap();
    assert_eq!(unknown.at.key, "tool.cuwheel.cuda_archs");
    assert_eq!(unknown.at.line, 13);
    assert!(
        unknown.fix.starts_with("did you mean `cuda-archs`?"),
        "{unknown}"
    );
    assert!(
        unknown.fix.contains("module, kernels, bindings"),
        "{unknown}"
    );
    let missing = all
        .iter()
        .find(|p| p.problem == "missing key `cuda-archs`")
        .unwrap();
    assert_eq!(missing.at.key, "tool.cuwheel.cuda-archs");

    let problem = only_problem(&demo_with(
        "{ cuda = \"13.0\", torch = \"2.9\" }",
        "{ cudaa = \"13.0\" }",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.exclude[0].cudaa");
    assert!(problem.fix.contains("did you mean `cuda`?"), "{problem}");
    assert!(
        problem.fix.contains("cuda, python, torch, binding"),
        "{problem}"
    );
}

#[test]
fn bad_cuda_archs_name_the_element_and_the_right_form() {
    for (arch, fix) in [
        ("8", "write \"8.0\""),
        ("sm_80", "write \"8.0\""),
        ("compute_90", "write \"9.0+PTX\""),
        ("sm_100", "write \"10.0\""),
        ("9.0+ptx", "write \"9.0+PTX\""),
        ("sm_90a", "write \"9.0a\""),
        ("compute_100f", "write \"10.0f+PTX\""),
        ("9.0b", "major.minor"),
        ("eight", "major.minor"),
        ("8.10", "major.minor"),
        ("0.0", "major.minor"),
    ] {
        let problem = only_problem(&demo_with("\"9.0+PTX\"]", &format!("\"{arch}\"]")));
        assert_eq!(problem.at.key, "tool.cuwheel.cuda-archs[1]", "{arch}");
        assert!(
            problem.problem.contains(&format!("`{arch}`")),
            "{arch}: {problem}"
        );
        assert!(problem.fix.contains(fix), "{arch}: {problem}");
    }
}

#[test]
fn refuses_duplicate_archs_even_with_different_ptx() {
    let problem = only_problem(&demo_with(
        "[\"8.0\", \"9.0+PTX\"]",
        "[\"9.0\", \"9.0+PTX\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.cuda-archs[1]");
    assert!(
        problem
            .problem
            .contains("repeats tool.cuwheel.cuda-archs[0]"),
        "{problem}"
    );
}

#[test]
fn numbers_where_strings_belong_are_told_to_quote() {
    let problem = only_problem(&demo_with(
        "cuda = [\"13.0\", \"12.4\"]",
        "cuda = [13.0, \"12.4\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.cuda[0]");
    assert_eq!(problem.problem, "expected a string, found float");
    assert_eq!(problem.fix, "put it in quotes: \"13.0\"");
}

#[test]
fn version_problems_name_the_list_element() {
    let problem = only_problem(&demo_with(
        "cuda = [\"13.0\", \"12.4\"]",
        "cuda = [\"13.0\", \"12\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.cuda[1]");
    assert!(problem.fix.contains("\"12.0\""), "{problem}");
    let shown = problem.to_string();
    assert!(shown.starts_with("pyproject.toml:25:"), "{shown}");
    assert!(
        shown.contains("tool.cuwheel.matrix.cuda[1]: CUDA version `12` has no minor version"),
        "{shown}"
    );
}

#[test]
fn an_exclude_naming_a_value_outside_the_matrix_is_a_typo() {
    let problem = only_problem(&demo_with(
        "{ cuda = \"12.4\", torch = \"2.11\" }",
        "{ cuda = \"12.5\", torch = \"2.11\" }",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.exclude[1].cuda");
    assert!(problem.problem.contains("matches no cell"), "{problem}");
    assert!(problem.fix.contains("\"13.0\", \"12.4\""), "{problem}");
}

#[test]
fn excludes_may_be_written_as_an_array_of_tables() {
    let text = demo_with(
        "exclude = [\n  { cuda = \"13.0\", torch = \"2.9\" },\n  { cuda = \"12.4\", torch = \"2.11\" },\n]\n",
        "\n[[tool.cuwheel.matrix.exclude]]\ncuda = \"13.0\"\ntorch = \"2.9\"\n\n\
         [[tool.cuwheel.matrix.exclude]]\ncuda = \"12.4\"\ntorch = \"2.11\"\n",
    );
    let config = parse(&text).unwrap();
    let excludes: Vec<String> = config
        .matrix
        .exclude
        .iter()
        .map(|exclude| exclude.value.to_string())
        .collect();
    assert_eq!(
        excludes,
        [
            r#"{ cuda = "13.0", torch = "2.9" }"#,
            r#"{ cuda = "12.4", torch = "2.11" }"#
        ]
    );
    assert_eq!(
        config.matrix.exclude[1].at.key,
        "tool.cuwheel.matrix.exclude[1]"
    );
}

#[test]
fn an_empty_exclude_entry_is_refused() {
    let problem = only_problem(&demo_with("{ cuda = \"13.0\", torch = \"2.9\" }", "{}"));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.exclude[0]");
    assert!(problem.problem.contains("every cell"), "{problem}");
}

#[test]
fn python_list_must_match_the_flavours() {
    let problem = only_problem(&demo_with("pybind11 = [\"csrc/bindings.cpp\"]\n", ""));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.python");
    assert!(
        problem.problem.contains("no pybind11 bindings"),
        "{problem}"
    );
    let problem = only_problem(&demo_with("python = [\"3.11\", \"3.13\", \"3.14\"]\n", ""));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.python");
    assert_eq!(problem.problem, "missing key `python`");
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = demo_with("module = \"demo_ext._C\"", "module = \"demo-ext._C\"")
        .replace(
            "baseline = \"manylinux_2_31\"",
            "baseline = \"manylinux2014\"",
        )
        .replace("\"3.14\"]", "\"3.12t\"]");
    let keys: Vec<String> = problems(&text).into_iter().map(|p| p.at.key).collect();
    assert_eq!(
        keys,
        [
            "tool.cuwheel.module",
            "tool.cuwheel.baseline",
            "tool.cuwheel.matrix.python[2]"
        ]
    );
}

#[test]
fn values_cuwheel_owns_are_refused() {
    let problem = only_problem(&demo_with(
        "\"--use_fast_math\"",
        "\"-gencode=arch=compute_80,code=sm_80\"",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.nvcc-flags[0]");
    assert!(problem.fix.contains("cuda-archs"), "{problem}");
    let problem = only_problem(&demo_with("\"BLOCK=256\"", "\"TORCH_EXTENSION_NAME=_C\""));
    assert_eq!(problem.at.key, "tool.cuwheel.defines[1]");
    let problem = only_problem(&demo_with("\"BLOCK=256\"", "\"-DBLOCK=256\""));
    assert!(problem.fix.contains("without -D"), "{problem}");
}

#[test]
fn flags_may_repeat_but_defines_may_not() {
    let text = demo_with(
        "nvcc-flags = [\"--use_fast_math\"]",
        "nvcc-flags = [\"-Xcompiler\", \"-fopenmp\", \"-Xcompiler\", \"-Wall\"]",
    );
    let config = parse(&text).unwrap();
    assert_eq!(
        config.modules[0].compile.nvcc_flags.default,
        ["-Xcompiler", "-fopenmp", "-Xcompiler", "-Wall"]
    );
    let problem = only_problem(&demo_with("\"WITH_CUDA\", ", "\"BLOCK=128\", "));
    assert_eq!(problem.at.key, "tool.cuwheel.defines[1]");
    assert_eq!(
        problem.problem,
        "`BLOCK=256` repeats tool.cuwheel.defines[0]"
    );
}

#[test]
fn paths_must_stay_inside_the_project() {
    for (path, says) in [
        ("../x.cpp", "`..`"),
        ("/abs/x.cpp", "absolute"),
        ("csrc/*.cpp", "pattern"),
    ] {
        let problem = only_problem(&demo_with("\"csrc/ops.cpp\"", &format!("\"{path}\"")));
        assert_eq!(problem.at.key, "tool.cuwheel.bindings.torch-library[0]");
        assert!(problem.problem.contains(says), "{path}: {problem}");
    }
}

#[test]
fn project_version_must_be_static_and_public() {
    let problem = only_problem(&demo_with(
        "version = \"0.1.0\"",
        "version = \"0.1.0+cu130\"",
    ));
    assert_eq!(problem.at.key, "project.version");
    assert!(problem.fix.starts_with("write \"0.1.0\""), "{problem}");
    let problem = only_problem(&demo_with("version = \"0.1.0\"", "dynamic = [\"version\"]"));
    assert!(problem.problem.contains("dynamic"), "{problem}");
}

#[test]
fn missing_tool_table_says_what_to_add() {
    let problem = only_problem("[project]\nname = \"x\"\nversion = \"1\"\n");
    assert_eq!(problem.at.key, "tool");
    assert!(problem.fix.contains("[tool.cuwheel]"), "{problem}");
}

#[test]
fn toml_syntax_errors_have_a_position() {
    let problem = only_problem("[project]\nname = \"x\n");
    assert_eq!(problem.at.line, 2);
    assert_eq!(problem.at.key, "");
}

/// Lines that look like parts of a cuwheel config, to reach deep into the
/// parser; and anything printable, to reach the TOML parser's corners.
fn tomlish_line() -> impl Strategy<Value = String> {
    let headers = prop::sample::select(vec![
        "[project]",
        "[tool]",
        "[tool.cuwheel]",
        "[tool.cuwheel.matrix]",
        "[tool.cuwheel.bindings]",
        "[[tool.cuwheel.matrix.exclude]]",
        "[[tool.cuwheel.kernels]]",
    ])
    .prop_map(str::to_string);
    let mut keys: Vec<&str> = cuwheel_keys();
    keys.extend(MATRIX_KEYS);
    keys.extend(EXCLUDE_KEYS);
    keys.extend(modules::binding_keys());
    keys.extend([
        "name",
        "version",
        "dynamic",
        "tool.cuwheel.module",
        "matrix.cuda",
    ]);
    let values = prop::sample::select(vec![
        "\"13.0\"",
        "\"8\"",
        "13.0",
        "[\"3.11\", \"3.13t\"]",
        "[]",
        "[[]]",
        "{}",
        "{ cuda = \"12.4\" }",
        "[{ python = \"3.9\", torch = 2 }]",
        "[\"csrc/**/*.cu\", \"../x\"]",
        "\"manylinux_2_31\"",
        "true",
        "1979-05-27",
        "\"\"",
    ])
    .prop_map(str::to_string);
    let assignment = (
        prop::sample::select(keys),
        prop_oneof![values, "[ -~]{0,16}"],
    )
        .prop_map(|(key, value)| format!("{key} = {value}"));
    prop_oneof![headers, assignment, "[ -~]{0,40}", "\\PC{0,12}"]
}

fn assert_actionable(result: Result<Config, ConfigError>) {
    if let Err(error) = result {
        assert!(!error.problems.is_empty());
        for problem in &error.problems {
            assert!(problem.at.line >= 1 && problem.at.column >= 1, "{problem}");
            assert!(
                !problem.problem.is_empty() && !problem.fix.is_empty(),
                "{problem:?}"
            );
        }
    }
}

proptest! {
    #[test]
    fn parse_never_panics_on_tomlish_text(lines in prop::collection::vec(tomlish_line(), 0..24)) {
        assert_actionable(parse(&lines.join("\n")));
    }

    #[test]
    fn parse_never_panics_on_a_damaged_demo(
        at in 0..DEMO.len(),
        cut in 0..24usize,
        insert in prop_oneof!["[ -~\n]{0,16}", "\\PC{0,4}"],
    ) {
        // DEMO is ASCII, so every byte offset is a character boundary.
        let end = (at + cut).min(DEMO.len());
        let text = format!("{}{insert}{}", &DEMO[..at], &DEMO[end..]);
        assert_actionable(parse(&text));
    }
}

#[test]
fn arch_and_family_specific_targets_are_read_typed() {
    let config = parse(&demo_with(
        "cuda-archs = [\"8.0\", \"9.0+PTX\"]",
        "cuda-archs = { default = [\"8.0\", \"9.0\", \"9.0a\", \"10.0f+PTX\", \"12.0a\"], \
         \"12\" = [\"8.0\", \"9.0a\"] }",
    ))
    .unwrap();
    let archs = config.cuda_archs.default.unwrap();
    let shown: Vec<String> = archs.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["8.0", "9.0", "9.0a", "10.0f+PTX", "12.0a"]);
    assert_eq!(archs[2].suffix, crate::spec::ArchSuffix::ArchSpecific);
    assert_eq!(archs[3].suffix, crate::spec::ArchSuffix::FamilySpecific);
    // The same target twice is still refused.
    let problem = only_problem(&demo_with(
        "[\"8.0\", \"9.0+PTX\"]",
        "[\"9.0a\", \"9.0a+PTX\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.cuda-archs[1]");
}

#[test]
fn a_family_target_for_a_pinned_old_nvcc_is_refused_before_the_lock() {
    // cu128 cells compile with nvcc 12.8, which has no sm_100f.
    let text = demo_with("cuda = [\"13.0\", \"12.4\"]", "cuda = [\"13.0\", \"12.8\"]")
        .replace(
            "{ cuda = \"12.4\", torch = \"2.11\" }",
            "{ cuda = \"12.8\", torch = \"2.11\" }",
        )
        .replace("[\"8.0\", \"9.0+PTX\"]", "[\"8.0\", \"10.0f\"]")
        .replace("exclude = [", "nvcc = { cu128 = \"12.8\" }\nexclude = [");
    let problem = only_problem(&text);
    assert_eq!(
        problem.at.key, "tool.cuwheel.matrix.nvcc.cu128",
        "{problem}"
    );
    assert!(
        problem.problem.starts_with(
            "10.0f (family-specific) needs nvcc ≥ 12.9; this matrix compiles cu128 with nvcc 12.8, \
             and tool.cuwheel.cuda-archs lists 10.0f (source: NVIDIA's CUDA Features Archive, \
             \"CUDA 12.9 Features\""
        ),
        "{problem}"
    );
    assert!(
        problem.fix.starts_with(
            "name another nvcc for cu128 (nvcc 12.9 or newer compiles 10.0f), or give nvcc 12.8 \
             its own list without 10.0f in [tool.cuwheel.cuda-archs] (\"12.8\" = [...])"
        ),
        "{problem}"
    );
}

#[test]
fn a_served_cuda_older_than_an_arch_is_refused_before_the_lock() {
    // cu124 cells compile with a 12.x nvcc no newer than 12.4: none has sm_100a.
    let problem = only_problem(&demo_with(
        "[\"8.0\", \"9.0+PTX\"]",
        "[\"9.0a\", \"10.0a\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.cuda[1]", "{problem}");
    assert!(
        problem.problem.starts_with(
            "10.0a (arch-specific) needs nvcc ≥ 12.8; this matrix serves cu124, whose nvcc is at \
             most 12.4, and tool.cuwheel.cuda-archs lists 10.0a"
        ),
        "{problem}"
    );
    assert!(problem.fix.contains("(\"12\" = [...])"), "{problem}");
    // A list of its own for the 12.x toolkits lets it through to the lock.
    let text = demo_with(
        "cuda-archs = [\"8.0\", \"9.0+PTX\"]",
        "cuda-archs = { default = [\"9.0a\", \"10.0a\"], \"12\" = [\"9.0a\"] }",
    );
    parse(&text).unwrap();
}

#[test]
fn a_list_keyed_by_a_toolkit_must_fit_that_toolkit() {
    let text = demo_with(
        "cuda-archs = [\"8.0\", \"9.0+PTX\"]",
        "cuda-archs = { default = [\"9.0a\"], \"12.8\" = [\"9.0a\", \"12.0f+PTX\"] }",
    );
    let problem = only_problem(&text);
    assert_eq!(
        problem.at.key, "tool.cuwheel.cuda-archs.\"12.8\"",
        "{problem}"
    );
    assert!(
        problem.problem.starts_with(
            "12.0f+PTX (family-specific) needs nvcc ≥ 12.9, but this list is for nvcc 12.8"
        ),
        "{problem}"
    );
    assert!(problem.fix.contains("remove 12.0f+PTX"), "{problem}");
}

#[test]
fn a_list_for_nvcc_13_names_the_renamed_arch() {
    let text = demo_with(
        "cuda-archs = [\"8.0\", \"9.0+PTX\"]",
        "cuda-archs = { default = [\"9.0a\"], \"13.0\" = [\"10.1f\"] }",
    );
    let problem = only_problem(&text);
    assert_eq!(
        problem.at.key, "tool.cuwheel.cuda-archs.\"13.0\"",
        "{problem}"
    );
    assert!(
        problem.problem.starts_with(
            "nvcc 13.0 names 10.1f (family-specific) 11.0f, but this list is for nvcc 13.0"
        ),
        "{problem}"
    );
}

#[path = "project_tests.rs"]
mod project;

#[test]
fn platforms_name_architectures_and_an_exclude_may_name_one() {
    let config = parse(&demo_with(
        "torch = [\"2.11\", \"2.9\"]",
        "torch = [\"2.11\", \"2.9\"]\nplatforms = [\"x86_64\", \"aarch64\"]",
    ))
    .unwrap();
    let platforms: Vec<Arch> = config.matrix.platforms.iter().map(|p| p.value).collect();
    assert_eq!(platforms, [Arch::X86_64, Arch::Aarch64]);
    // Unnamed, x86_64 alone.
    let plain = parse(DEMO).unwrap();
    assert!(!plain.matrix.builds_for(Arch::Aarch64));
    assert!(plain.matrix.builds_for(Arch::X86_64));

    let problem = only_problem(&demo_with(
        "torch = [\"2.11\", \"2.9\"]",
        "torch = [\"2.11\", \"2.9\"]\nplatforms = [\"arm64\"]",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.platforms[0]");
    assert!(
        problem.problem.contains("`arm64` is not an architecture"),
        "{problem:?}"
    );
    assert!(problem.fix.contains("\"aarch64\""), "{problem:?}");

    // An exclude of a platform the matrix does not build matches nothing.
    let problem = only_problem(&demo_with(
        "{ cuda = \"13.0\", torch = \"2.9\" },",
        "{ cuda = \"13.0\", torch = \"2.9\" },\n  { platform = \"aarch64\" },",
    ));
    assert_eq!(problem.at.key, "tool.cuwheel.matrix.exclude[1].platform");
    assert!(
        problem
            .problem
            .contains("aarch64 is not in tool.cuwheel.matrix.platforms = [\"x86_64\"]"),
        "{problem:?}"
    );
}
