//! `[tool.cuwheel]` in an extension's `pyproject.toml`.
//!
//! In: the text of `pyproject.toml` and its path (for messages). Out: a typed
//! [`Config`] — the wheel's name and version from `[project]`, the sources,
//! binding flavours, CUDA archs, baseline, compiler inputs and the matrix —
//! or a [`ConfigError`] listing every problem found, each with the file, line,
//! key path (`tool.cuwheel.matrix.cuda[1]`) and how to fix it.
//!
//! Only the text is read: whether the named files exist is checked by
//! [`Spec::load`](super::Spec::load), and whether the matrix can be built by
//! [`compat`](super::compat). Unknown keys inside `[tool.cuwheel]` are errors
//! (a misspelt key would otherwise be ignored silently); `[project]` and
//! other tools' tables are left to their owners.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component as PathComponent, Path, PathBuf};
use std::str::FromStr;

use toml::de::{DeTable, DeValue};

use crate::spec::archs::CudaArchs;
use crate::spec::document::{ConfigError, Located, Reader, Table};
use crate::spec::glob::Pattern;
use crate::spec::matrix_config::MatrixConfig;
use crate::spec::target::Baseline;
use crate::spec::version::InvalidValue;
use crate::wheel::{ProjectName, Version};

/// Everything `[project]` and `[tool.cuwheel]` say about what to build.
#[derive(Debug, Clone)]
pub struct Config {
    /// `project.name`: the wheel's distribution name.
    pub name: ProjectName,
    /// `project.version`, without a local label (each cell adds its own).
    pub version: Version,
    /// `project.description`, `project.requires-python` and `project.license`
    /// (a PEP 639 expression), copied into every wheel's METADATA.
    pub summary: Option<String>,
    pub requires_python: Option<String>,
    pub license: Option<String>,
    /// The extension module inside the wheel (`demo_ext._C`).
    pub module: ExtensionModule,
    /// Patterns of the kernel translation units, compiled without Python.
    pub kernels: Vec<Located<Pattern>>,
    /// The binding sources of each flavour the project builds.
    pub bindings: BTreeMap<BindingFlavour, Vec<Located<PathBuf>>>,
    /// The GPU archs of each toolkit.
    pub cuda_archs: CudaArchs,
    pub baseline: Baseline,
    /// What `CUDAExtension` calls `include_dirs`, relative to the project.
    pub include_dirs: Vec<Located<PathBuf>>,
    /// The pure-Python package directories shipped in every wheel, relative
    /// to the project; empty means the extension module's top-level package
    /// directory, where the project has one (see [`Spec`](super::Spec)).
    pub packages: Vec<Located<PathBuf>>,
    pub defines: Vec<Define>,
    /// `extra_compile_args["nvcc"]`.
    pub nvcc_flags: Vec<String>,
    /// `extra_compile_args["cxx"]`.
    pub cxx_flags: Vec<String>,
    pub matrix: MatrixConfig,
}

/// How the extension's Python entry points are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BindingFlavour {
    /// pybind11 module: built once per Python (`cp313-cp313`).
    Pybind11,
    /// `TORCH_LIBRARY` registrations, Python's limited API: one `cp39-abi3`
    /// wheel per CUDA × torch.
    TorchLibrary,
}

impl BindingFlavour {
    pub const ALL: [BindingFlavour; 2] = [BindingFlavour::Pybind11, BindingFlavour::TorchLibrary];

    pub fn as_str(self) -> &'static str {
        match self {
            BindingFlavour::Pybind11 => "pybind11",
            BindingFlavour::TorchLibrary => "torch-library",
        }
    }
}

impl fmt::Display for BindingFlavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BindingFlavour {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<BindingFlavour, InvalidValue> {
        BindingFlavour::ALL
            .into_iter()
            .find(|flavour| flavour.as_str() == text)
            .ok_or_else(|| {
                InvalidValue::new(
                    format!("`{text}` is not a binding flavour"),
                    "write \"pybind11\" or \"torch-library\"",
                )
            })
    }
}

/// A dotted Python module path (`demo_ext._C`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionModule {
    dotted: String,
}

impl ExtensionModule {
    pub fn as_str(&self) -> &str {
        &self.dotted
    }

    /// The packages and the module name: `["demo_ext", "_C"]`.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.dotted.split('.')
    }

    /// The module's own name (`_C`): `TORCH_EXTENSION_NAME` and the stem of
    /// the shared object.
    pub fn leaf(&self) -> &str {
        self.dotted.rsplit('.').next().unwrap_or(&self.dotted)
    }
}

impl FromStr for ExtensionModule {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<ExtensionModule, InvalidValue> {
        let bad = text.split('.').find(|part| !is_identifier(part));
        match bad {
            None => Ok(ExtensionModule {
                dotted: text.to_string(),
            }),
            Some(part) => Err(InvalidValue::new(
                format!(
                    "`{text}` is not a dotted module path: `{part}` is not a Python identifier"
                ),
                "write package names and the module name joined by dots, like \"demo_ext._C\" \
                 (ASCII letters, digits and `_`, not starting with a digit)",
            )),
        }
    }
}

impl fmt::Display for ExtensionModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dotted)
    }
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A preprocessor define passed to both nvcc and g++: `NAME` or `NAME=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Define {
    pub name: String,
    pub value: Option<String>,
}

/// Defines cuwheel derives from each cell, as torch's `BuildExtension` does;
/// a user value would contradict the cell.
const CELL_DEFINES: [&str; 7] = [
    "TORCH_EXTENSION_NAME",
    "TORCH_API_INCLUDE_EXTENSION_H",
    "Py_LIMITED_API",
    "_GLIBCXX_USE_CXX11_ABI",
    "PYBIND11_COMPILER_TYPE",
    "PYBIND11_STDLIB",
    "PYBIND11_BUILD_ABI",
];

impl FromStr for Define {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<Define, InvalidValue> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (text, None),
        };
        if !is_identifier(name) {
            return Err(InvalidValue::new(
                format!("`{text}` is not a define: `{name}` is not a C identifier"),
                "write \"NAME\" or \"NAME=VALUE\", without -D",
            ));
        }
        if CELL_DEFINES.contains(&name) {
            return Err(InvalidValue::new(
                format!("`{name}` is set by cuwheel for each cell"),
                "remove it; cuwheel passes the value that matches the cell's torch and Python",
            ));
        }
        Ok(Define {
            name: name.to_string(),
            value,
        })
    }
}

impl fmt::Display for Define {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(value) = &self.value {
            write!(f, "={value}")?;
        }
        Ok(())
    }
}

const CUWHEEL_KEYS: [&str; 12] = [
    "module",
    "kernels",
    "bindings",
    "binding",
    "cuda-archs",
    "baseline",
    "include-dirs",
    "packages",
    "defines",
    "nvcc-flags",
    "cxx-flags",
    "matrix",
];
const BINDINGS_KEYS: [&str; 2] = ["pybind11", "torch-library"];

/// nvcc options that choose GPU code or the host compiler: cuwheel sets both
/// from `cuda-archs` and the pinned toolchain, and the audit checks the fatbin
/// against `cuda-archs`.
const NVCC_OWNED_FLAGS: [(&str, &str); 8] = [
    ("-gencode", "cuda-archs"),
    ("--generate-code", "cuda-archs"),
    ("-arch", "cuda-archs"),
    ("--gpu-architecture", "cuda-archs"),
    ("-code", "cuda-archs"),
    ("--gpu-code", "cuda-archs"),
    ("-ccbin", "the pinned toolchain"),
    ("--compiler-bindir", "the pinned toolchain"),
];

impl Config {
    /// Reads `[project]` and `[tool.cuwheel]` from the text of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let mut reader = Reader {
            file,
            text,
            problems: Vec::new(),
        };
        let document = match DeTable::parse(text) {
            Ok(document) => document,
            Err(error) => {
                let offset = error.span().map_or(0, |span| span.start);
                reader.report_at(
                    offset,
                    "",
                    error.message(),
                    "fix the TOML syntax at this place",
                );
                return Err(reader.into_error());
            }
        };
        let root = Table {
            key: String::new(),
            span: document.span(),
            entries: document.get_ref(),
        };
        let config = reader.config(&root);
        match config {
            Some(config) if reader.problems.is_empty() => Ok(config),
            _ => Err(reader.into_error()),
        }
    }
}

impl Reader<'_> {
    fn config(&mut self, root: &Table<'_, '_>) -> Option<Config> {
        let project = self
            .required(
                root,
                "project",
                "add a [project] table with the wheel's name and version",
            )
            .and_then(|field| self.table(&field, "write [project] as a table"));
        let (name, version) = match &project {
            Some(project) => (self.project_name(project), self.project_version(project)),
            None => (None, None),
        };
        let mut project_text = |key: &str, example: &str| {
            let field = project.as_ref()?.get(key)?;
            self.string(&field, example).map(str::to_string)
        };
        let summary = project_text("description", "\"A CUDA extension\"");
        let requires_python = project_text("requires-python", "\">=3.9\"");
        let license = project_text("license", "\"MIT\"");
        let cuwheel = self.cuwheel_table(root)?;
        self.known_keys(&cuwheel, &CUWHEEL_KEYS);

        let module = self
            .required(
                &cuwheel,
                "module",
                "name the extension module, like module = \"demo_ext._C\"",
            )
            .and_then(|field| self.parsed(&field, "\"demo_ext._C\""));
        let kernels = self
            .required(
                &cuwheel,
                "kernels",
                "list the kernel sources, like kernels = [\"csrc/kernels/*.cu\"]",
            )
            .and_then(|field| {
                self.list(
                    &field,
                    "[\"csrc/kernels/*.cu\"]",
                    true,
                    Pattern::parse,
                    |a, b| a == b,
                )
            });
        let bindings = self.bindings(&cuwheel);
        let cuda_archs = self.cuda_archs(&cuwheel);
        let baseline = self
            .required(
                &cuwheel,
                "baseline",
                "name the oldest glibc to support, like baseline = \"manylinux_2_31\"",
            )
            .and_then(|field| self.parsed(&field, "\"manylinux_2_31\""));
        let include_dirs = match cuwheel.get("include-dirs") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"csrc/include\"]",
                false,
                relative_path,
                |a, b| a == b,
            ),
        };
        let packages = match cuwheel.get("packages") {
            None => Some(Vec::new()),
            Some(field) => self.list(&field, "[\"demo_ext\"]", false, relative_path, |a, b| {
                a == b
            }),
        };
        let defines = self.plain_list(
            &cuwheel,
            "defines",
            "[\"WITH_CUDA\", \"BLOCK=256\"]",
            str::parse,
            |a: &Define, b| a.name == b.name,
        );
        // Flags may repeat: `-Xcompiler` precedes each host option it passes.
        let nvcc_flags = self.plain_list(
            &cuwheel,
            "nvcc-flags",
            "[\"--use_fast_math\"]",
            nvcc_flag,
            |_, _| false,
        );
        let cxx_flags = self.plain_list(&cuwheel, "cxx-flags", "[\"-O3\"]", flag, |_, _| false);
        let matrix = self
            .required(
                &cuwheel,
                "matrix",
                "add a [tool.cuwheel.matrix] table with torch and python lists",
            )
            .and_then(|field| self.table(&field, "write [tool.cuwheel.matrix] as a table"))
            .and_then(|matrix| self.matrix(&matrix, bindings.as_ref()));

        Some(Config {
            name: name?,
            version: version?,
            summary,
            requires_python,
            license,
            module: module?,
            kernels: kernels?,
            bindings: bindings?,
            cuda_archs: cuda_archs?,
            baseline: baseline?,
            include_dirs: include_dirs?,
            packages: packages?,
            defines: defines?,
            nvcc_flags: nvcc_flags?,
            cxx_flags: cxx_flags?,
            matrix: matrix?,
        })
    }

    fn project_name(&mut self, project: &Table<'_, '_>) -> Option<ProjectName> {
        let field = self.required(
            project,
            "name",
            "write the wheel's name, like name = \"demo-ext\"",
        )?;
        let text = self.string(&field, "\"demo-ext\"")?;
        match ProjectName::new(text) {
            Ok(name) => Some(name),
            Err(error) => {
                self.report(
                    &field,
                    error.to_string(),
                    "use a name PEP 508 allows, like \"demo-ext\"",
                );
                None
            }
        }
    }

    fn project_version(&mut self, project: &Table<'_, '_>) -> Option<Version> {
        let dynamic = project.get("dynamic").is_some_and(|field| {
            matches!(field.value.get_ref(), DeValue::Array(items)
                if items.iter().any(|item| item.get_ref().as_str() == Some("version")))
        });
        if dynamic && project.get("version").is_none() {
            let at = self.location(&project.span, "project.version");
            self.report_location(
                at,
                "the version is dynamic",
                "write a static version = \"0.1.0\" in [project] and remove \"version\" from dynamic; \
                 cuwheel names every wheel before building it",
            );
            return None;
        }
        let field = self.required(
            project,
            "version",
            "write the wheel's version, like version = \"0.1.0\"",
        )?;
        let text = self.string(&field, "\"0.1.0\"")?;
        match Version::parse(text) {
            Ok(version) if version.local().is_empty() => Some(version),
            Ok(version) => {
                let public = version.without_local();
                self.report(
                    &field,
                    format!("version `{text}` has a local label"),
                    format!("write \"{public}\"; cuwheel adds a label like +pt211cu130 to each cell's wheel"),
                );
                None
            }
            Err(error) => {
                self.report(
                    &field,
                    error.to_string(),
                    "write a PEP 440 version, like \"0.1.0\"",
                );
                None
            }
        }
    }

    fn cuwheel_table<'v, 'i>(&mut self, root: &Table<'v, 'i>) -> Option<Table<'v, 'i>> {
        let fix = "add a [tool.cuwheel] table naming the module, kernels, bindings, cuda-archs, \
                   baseline and a [tool.cuwheel.matrix]";
        let tool = self.required(root, "tool", fix)?;
        let tool = self.table(&tool, "write [tool] as a table")?;
        let cuwheel = self.required(&tool, "cuwheel", fix)?;
        self.table(&cuwheel, "write [tool.cuwheel] as a table")
    }

    /// `bindings` as a table of flavours, or as a list with `binding` naming
    /// its one flavour (the short form).
    fn bindings(
        &mut self,
        cuwheel: &Table<'_, '_>,
    ) -> Option<BTreeMap<BindingFlavour, Vec<Located<PathBuf>>>> {
        const EXAMPLE: &str = "[\"csrc/bindings.cpp\"]";
        let short_form_fix = "name the flavour: binding = \"pybind11\" or \"torch-library\", \
                              or use the table form [tool.cuwheel.bindings] with a list per flavour";
        let field = self.required(
            cuwheel,
            "bindings",
            "list the binding sources: [tool.cuwheel.bindings] pybind11 = [\"csrc/bindings.cpp\"] \
             and/or torch-library = [\"csrc/ops.cpp\"]",
        )?;
        let binding = cuwheel.get("binding");
        let mut bindings = BTreeMap::new();
        match field.value.get_ref() {
            DeValue::Array(_) => {
                let flavour = match &binding {
                    Some(binding) => self.parsed(binding, "\"pybind11\""),
                    None => {
                        let at = self.location(&field.value.span(), "tool.cuwheel.binding");
                        self.report_location(
                            at,
                            "`bindings` is a list but `binding` is missing",
                            short_form_fix,
                        );
                        None
                    }
                };
                let sources = self.list(&field, EXAMPLE, true, relative_path, |a, b| a == b);
                bindings.insert(flavour?, sources?);
            }
            DeValue::Table(entries) => {
                if let Some(binding) = &binding {
                    self.report(
                        binding,
                        "`binding` only goes with the list form of `bindings`",
                        "remove it; in [tool.cuwheel.bindings] each key names its flavour",
                    );
                }
                let table = Table {
                    key: field.key.clone(),
                    span: field.value.span(),
                    entries,
                };
                self.known_keys(&table, &BINDINGS_KEYS);
                if table.entries.is_empty() {
                    self.report(
                        &field,
                        "no binding flavour is listed",
                        "add pybind11 = [\"csrc/bindings.cpp\"] and/or torch-library = [\"csrc/ops.cpp\"]",
                    );
                    return None;
                }
                let mut complete = true;
                for flavour in BindingFlavour::ALL {
                    let Some(list) = table.get(flavour.as_str()) else {
                        continue;
                    };
                    match self.list(&list, EXAMPLE, true, relative_path, |a, b| a == b) {
                        Some(sources) => {
                            bindings.insert(flavour, sources);
                        }
                        None => complete = false,
                    }
                }
                if !complete {
                    return None;
                }
            }
            _ => {
                self.wrong_type(
                    &field,
                    "a list or a table",
                    format!("write bindings = {EXAMPLE} with binding = \"pybind11\", or a table per flavour"),
                );
                return None;
            }
        }
        Some(bindings)
    }
}

/// A path inside the project, written relative to its root.
fn relative_path(text: &str) -> Result<PathBuf, InvalidValue> {
    const FIX: &str = "write the path from the project root down, like \"csrc/bindings.cpp\"; \
                       every source must lie inside the project";
    if text.is_empty() {
        return Err(InvalidValue::new("the path is empty", FIX));
    }
    if text.contains(['*', '?', '[', '{']) {
        return Err(InvalidValue::new(
            format!("`{text}` looks like a pattern, but only `kernels` takes patterns"),
            "list the files one by one",
        ));
    }
    let path = PathBuf::from(text);
    if path.is_absolute() {
        return Err(InvalidValue::new(format!("`{text}` is absolute"), FIX));
    }
    if path
        .components()
        .any(|part| !matches!(part, PathComponent::Normal(_)))
    {
        return Err(InvalidValue::new(
            format!("`{text}` contains `.` or `..`"),
            FIX,
        ));
    }
    Ok(path)
}

fn flag(text: &str) -> Result<String, InvalidValue> {
    if text.trim().is_empty() {
        return Err(InvalidValue::new("the flag is empty", "remove it"));
    }
    Ok(text.to_string())
}

fn nvcc_flag(text: &str) -> Result<String, InvalidValue> {
    let owner = NVCC_OWNED_FLAGS.iter().find(|(option, _)| {
        text == *option
            || text
                .strip_prefix(option)
                .is_some_and(|rest| rest.starts_with(['=', ' ']))
    });
    match owner {
        Some((option, "cuda-archs")) => Err(InvalidValue::new(
            format!("`{text}`: cuwheel chooses the GPU code ({option}) from cuda-archs"),
            "list the archs in tool.cuwheel.cuda-archs instead; the audit checks the fatbin against that list",
        )),
        Some((option, owner)) => Err(InvalidValue::new(
            format!("`{text}`: cuwheel sets {option} from {owner}"),
            "remove it",
        )),
        None => flag(text),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::spec::document::ConfigProblem;

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
        assert_eq!(config.module.as_str(), "demo_ext._C");
        assert_eq!(config.module.leaf(), "_C");
        assert_eq!(config.kernels[0].value.to_string(), "csrc/kernels/*.cu");
        assert_eq!(config.kernels[0].at.key, "tool.cuwheel.kernels[0]");
        assert_eq!(config.kernels[0].at.line, 12);
        let flavours: Vec<_> = config.bindings.keys().copied().collect();
        assert_eq!(flavours, BindingFlavour::ALL);
        assert_eq!(
            config.bindings[&BindingFlavour::TorchLibrary][0].value,
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
        assert_eq!(config.include_dirs[0].value, PathBuf::from("csrc/include"));
        let defines: Vec<String> = config.defines.iter().map(|d| d.to_string()).collect();
        assert_eq!(defines, ["WITH_CUDA", "BLOCK=256"]);
        assert_eq!(config.nvcc_flags, ["--use_fast_math"]);
        assert_eq!(config.cxx_flags, ["-O3"]);
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
            config.bindings.keys().copied().collect::<Vec<_>>(),
            [BindingFlavour::TorchLibrary]
        );
        assert!(config.matrix.python.is_empty());
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
            ("9.0a", "write \"9.0\""),
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
            config.nvcc_flags,
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
        let mut keys: Vec<&str> = CUWHEEL_KEYS.to_vec();
        keys.extend(crate::spec::matrix_config::MATRIX_KEYS);
        keys.extend(crate::spec::matrix_config::EXCLUDE_KEYS);
        keys.extend(BINDINGS_KEYS);
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
}
