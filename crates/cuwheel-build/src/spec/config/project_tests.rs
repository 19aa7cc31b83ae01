//! The config reader's tests of the multi-module form and of `[project]`:
//! modules extending the top-level defaults, their problems named by entry,
//! the version read statically, and the METADATA values checked.

use super::*;

/// A two-module config: `extra` goes into `[tool.cuwheel]` before the modules.
fn modules_config(extra: &str, first: &str, second: &str) -> String {
    format!(
        r#"[project]
name = "mods"
version = "1.0"

[tool.cuwheel]
cuda-archs = ["9.0"]
baseline = "manylinux_2_31"
include-dirs = ["csrc/include"]
defines = ["TOP"]
link-flags = ["-Wl,--as-needed"]
{extra}
[[tool.cuwheel.modules]]
name = "mods._cpu"
cuda = false
kernels = ["csrc/cpu/*.cpp"]
bindings = ["csrc/cpu_ops.cpp"]
binding = "torch-library"
{first}
[[tool.cuwheel.modules]]
name = "mods._cuda"
kernels = ["csrc/cuda/*.cu"]
bindings = ["csrc/cuda_ops.cu"]
binding = "pybind11"
{second}
[tool.cuwheel.matrix]
cuda = ["13.0"]
python = ["3.13"]
torch = ["2.11"]
"#
    )
}

#[test]
fn modules_extend_the_top_level_defaults() {
    let text = modules_config(
        "strip = true\nno-python-abi-suffix = true\nnvcc-flags = [\"--use_fast_math\"]\n",
        "defines = [\"CPU\"]\nundefines = [\"NDEBUG\"]\nlibraries = [\"gomp\"]\nlink-flags = [\"-fopenmp\"]\n",
        "strip = false\nno-python-abi-suffix = false\nnvcc-flags = [\"-lineinfo\"]\n",
    );
    let config = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let [cpu, cuda] = &config.modules[..] else {
        panic!("{:?}", config.modules)
    };
    assert!(!cpu.cuda && cuda.cuda);
    let defines: Vec<String> = cpu.compile.defines.iter().map(|d| d.to_string()).collect();
    assert_eq!(defines, ["TOP", "CPU"]);
    assert_eq!(cpu.compile.undefines, ["NDEBUG"]);
    assert_eq!(
        cpu.compile.include_dirs[0].value,
        PathBuf::from("csrc/include")
    );
    assert_eq!(cpu.link.flags, ["-Wl,--as-needed", "-fopenmp"]);
    assert_eq!(cpu.link.libraries, ["gomp"]);
    assert!(cpu.link.strip && !cuda.link.strip);
    assert!(cpu.link.no_python_abi_suffix && !cuda.link.no_python_abi_suffix);
    let nvcc = "13.0".parse().unwrap();
    assert!(cuda.device_line_info(nvcc) && !cpu.device_line_info(nvcc));
    // Top-level nvcc flags are for the CUDA modules.
    assert!(cpu.compile.nvcc_flags.is_empty());
    assert_eq!(
        cuda.compile.nvcc_flags.default,
        ["--use_fast_math", "-lineinfo"]
    );
    assert_eq!(cuda.name.at.key, "tool.cuwheel.modules[1].name");
    // A pybind11 module beside a torch-library one: per-Python wheels only.
    assert_eq!(config.flavours(), [BindingFlavour::Pybind11]);
}

#[test]
fn module_problems_name_the_module_entry() {
    for (first, second, key, says) in [
        (
            "",
            "name = \"mods._cpu\"\n",
            "tool.cuwheel.modules[1].name",
            "mods._cpu is listed twice (first at tool.cuwheel.modules[0].name)",
        ),
        (
            "nvcc-flags = [\"-O3\"]\n",
            "",
            "tool.cuwheel.modules[0].nvcc-flags",
            "cuda = false, so nvcc never",
        ),
        (
            "libraries = [\"foo\"]\n",
            "",
            "tool.cuwheel.modules[0].libraries[0]",
            "libfoo.so",
        ),
        (
            "strip = \"yes\"\n",
            "",
            "tool.cuwheel.modules[0].strip",
            "expected a boolean",
        ),
        (
            "no-python-abi-suffix = 1\n",
            "",
            "tool.cuwheel.modules[0].no-python-abi-suffix",
            "expected a boolean",
        ),
        (
            "colour = 1\n",
            "",
            "tool.cuwheel.modules[0].colour",
            "unknown key",
        ),
    ] {
        // The second module's own name key comes first in its table: replace it.
        let text = modules_config("", first, "").replacen(
            "name = \"mods._cuda\"\n",
            if second.is_empty() {
                "name = \"mods._cuda\"\n"
            } else {
                second
            },
            1,
        );
        let problem = only_problem(&text);
        assert_eq!(problem.at.key, key, "{problem}");
        assert!(problem.problem.contains(says), "{says}: {problem}");
    }
}

#[test]
fn the_shorthand_keys_do_not_mix_with_modules() {
    let text = modules_config("module = \"mods._C\"\n", "", "");
    let problem = only_problem(&text);
    assert_eq!(problem.at.key, "tool.cuwheel.module");
    assert!(
        problem.fix.contains("[[tool.cuwheel.modules]]"),
        "{problem}"
    );
}

#[test]
fn the_version_may_be_dynamic_and_read_without_running_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
    std::fs::write(
        dir.path().join("pkg/__init__.py"),
        "__version__ = \"2.1.0\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("VERSION"), "2.2.0\n").unwrap();
    let file = dir.path().join("pyproject.toml");
    let with = |source: &str| {
        demo_with("version = \"0.1.0\"", "dynamic = [\"version\"]")
            .replace("[tool.cuwheel]\n", &format!("[tool.cuwheel]\n{source}\n"))
    };
    let config = Config::parse(&with("version = { attr = \"pkg.__version__\" }"), &file).unwrap();
    assert_eq!(config.version.to_string(), "2.1.0");
    assert_eq!(config.version_file, Some(PathBuf::from("pkg/__init__.py")));
    let config = Config::parse(&with("version = { file = \"VERSION\" }"), &file).unwrap();
    assert_eq!(config.version.to_string(), "2.2.0");
    // setuptools' own table serves too.
    let setuptools = demo_with("version = \"0.1.0\"", "dynamic = [\"version\"]")
        + "\n[tool.setuptools.dynamic]\nversion = { attr = \"pkg.__version__\" }\n";
    assert_eq!(
        Config::parse(&setuptools, &file)
            .unwrap()
            .version
            .to_string(),
        "2.1.0"
    );
    let error = Config::parse(&with("version = { attr = \"pkg.VERSION\" }"), &file).unwrap_err();
    assert!(
        error.problems[0]
            .problem
            .contains("assigns no string literal to `VERSION`"),
        "{error}"
    );
    let error = Config::parse(&with("version = { file = \"NOPE\" }"), &file).unwrap_err();
    assert_eq!(error.problems[0].at.key, "tool.cuwheel.version.file");
}

#[test]
fn other_dynamic_fields_are_refused() {
    let problem = only_problem(&demo_with(
        "dependencies = [\"torch\"]",
        "dynamic = [\"dependencies\"]",
    ));
    assert_eq!(problem.at.key, "project.dynamic[0]");
    assert!(
        problem.fix.contains("write project.dependencies"),
        "{problem}"
    );
}

#[test]
fn project_metadata_is_read_and_checked() {
    let text = demo_with(
        "dependencies = [\"torch\"]",
        "dependencies = [\"numpy>=1.24\", \"rich; python_version >= '3.10'\"]\n\
         license = \"mit OR apache-2.0\"\n\
         readme = { text = \"# Hi\", content-type = \"text/markdown; charset=UTF-8\" }\n\
         authors = [{ name = \"Ada\", email = \"ada@example.org\" }]\n\
         keywords = [\"cuda\"]\n\
         classifiers = [\"Programming Language :: Python :: 3\"]\n\
         [project.optional-dependencies]\n\
         Full_Set = [\"scipy\"]\n\
         [project.urls]\n\
         Source = \"https://example.org/src\"\n\
         Docs = \"https://example.org/docs\"",
    );
    let config = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let metadata = &config.metadata;
    assert_eq!(
        metadata.license,
        Some(License::Expression("MIT OR Apache-2.0".into()))
    );
    assert_eq!(metadata.dependencies.len(), 2);
    assert_eq!(metadata.optional_dependencies[0].0, "full-set");
    // In the order written, not sorted.
    let labels: Vec<&str> = metadata.urls.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Source", "Docs"]);
    assert!(matches!(
        &metadata.readme.as_ref().unwrap().value,
        Readme::Text { content_type, .. } if content_type.starts_with("text/markdown")
    ));

    for (old, new, key, says) in [
        (
            "dependencies = [\"torch\"]",
            "dependencies = [\"numpy>=\"]",
            "project.dependencies[0]",
            "`numpy>=` is not a valid",
        ),
        (
            "dependencies = [\"torch\"]",
            "license = \"Apache 2.0\"",
            "project.license",
            "`Apache` is not on the SPDX",
        ),
        (
            "dependencies = [\"torch\"]",
            "readme = \"README\"",
            "project.readme",
            "content type",
        ),
        (
            "dependencies = [\"torch\"]",
            "requires-python = \"3.9\"",
            "project.requires-python",
            "does not start with an operator",
        ),
        (
            "dependencies = [\"torch\"]",
            "authors = [{ email = \"not an address\" }]",
            "project.authors[0].email",
            "not a valid email",
        ),
        (
            "dependencies = [\"torch\"]",
            "scripts = { x = \"m:f\" }",
            "project.scripts",
            "entry points",
        ),
        (
            "dependencies = [\"torch\"]",
            "licence = \"MIT\"",
            "project.licence",
            "unknown key",
        ),
        (
            "dependencies = [\"torch\"]",
            "license = \"MIT\"\nclassifiers = [\"License :: OSI Approved :: MIT License\"]",
            "project.classifiers",
            "License ::",
        ),
    ] {
        let problem = only_problem(&demo_with(old, new));
        assert_eq!(problem.at.key, key, "{problem}");
        assert!(problem.problem.contains(says), "{says}: {problem}");
    }
}
