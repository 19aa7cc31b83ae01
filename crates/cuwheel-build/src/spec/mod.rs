//! The build specification: what an extension asks cuwheel to build.
//!
//! In: a project directory holding `pyproject.toml` with `[project]` and
//! `[tool.cuwheel]`. Out: a [`Spec`] — the typed [`Config`], the kernel
//! sources each module's patterns match, the package files, the readme and
//! the license files — whose [`Spec::cells`] are the matrix cells that
//! survive the excludes, each checked against the compatibility table.
//! Every error says which file and key it is about and how to fix it:
//! [`ConfigError`] for what the config says (or names but is missing),
//! [`CompatError`] for cells that cannot be built.
//!
//! [`version`] holds the `major.minor` versions, [`python`] the CPython
//! builds (free-threaded too), [`selector`] the torch ranges, and [`target`]
//! the GPU archs and glibc baseline; [`config`] reads the text (through
//! [`document`], which tracks where each value is; [`archs`] and
//! [`config::matrix`] read `cuda-archs` and the matrix), [`glob`] matches the
//! file patterns, [`package`] selects the package files, [`matrix`] expands and names the cells with the lock's
//! [`facts`], [`compat`] checks them against those facts and
//! `data/compatibility.toml`.

pub mod archs;
pub mod compat;
pub mod config;
pub mod document;
pub mod facts;
pub mod glob;
pub mod matrix;
pub mod package;
pub mod python;
pub mod selector;
pub mod target;
pub mod version;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

pub use archs::CudaArchs;
pub use compat::{CompatError, CompatTable, Rule, Violation};
pub use config::{
    BindingFlavour, Compile, Config, Define, Exclude, ExtensionModule, HeaderArchive, License,
    Link, MatrixConfig, Module, Person, ProjectMetadata, PypiConfig, Readme,
};
pub use document::{ConfigError, ConfigProblem, Located, Location};
pub use facts::{ArchWheels, ArchWheelsRef, MatrixFacts, ToolkitOrigin, TorchRelease, TorchWheel};
pub use matrix::{Cell, CellName, CellNameError};
pub use package::PackageFile;
pub use python::PythonAbi;
pub use selector::TorchSelector;
pub use target::{ArchSuffix, Baseline, CudaArch, Platform, TARGET_ARCH};
pub use version::{CudaVersion, InvalidValue, PythonVersion, TorchVersion};

use config::metadata::DEFAULT_LICENSE_FILES;
use config::modules::{is_cuda_source, is_cxx_source};
use glob::Pattern;

/// A loaded, validated project.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The project directory, as given.
    pub root: PathBuf,
    /// `root/pyproject.toml`, named in messages.
    pub pyproject: PathBuf,
    pub config: Config,
    /// The files each module's kernel patterns match (in the order of
    /// `config.modules`), relative to `root`, sorted, each once.
    pub kernel_sources: Vec<Vec<PathBuf>>,
    /// The files each flavour's own kernel patterns match, per module (in
    /// the order of `config.modules`); a flavour without its own kernels is
    /// not a key.
    pub flavour_kernel_sources: Vec<BTreeMap<BindingFlavour, Vec<PathBuf>>>,
    /// The package files the wheels ship, by wheel path.
    pub package_files: Vec<PackageFile>,
    /// The long description, from `project.readme`.
    pub description: Option<Description>,
    /// The license files, relative to `root`, sorted: shipped under
    /// `.dist-info/licenses/` at these paths.
    pub license_files: Vec<PathBuf>,
}

/// The readme's text and how to render it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    pub text: String,
    pub content_type: String,
    /// The file it was read from, relative to the root.
    pub file: Option<PathBuf>,
}

impl Spec {
    /// Reads `project_dir/pyproject.toml` and checks every file it names:
    /// each kernel pattern matches C++ or (in a CUDA module) `.cu` files,
    /// each binding source and include directory exists, the package
    /// patterns select files, the readme and license files exist. Config
    /// problems come back as a [`ConfigError`] inside the `anyhow::Error`.
    pub fn load(project_dir: &Path) -> anyhow::Result<Spec> {
        let pyproject = project_dir.join("pyproject.toml");
        let text = fs::read_to_string(&pyproject).with_context(|| {
            format!(
                "cannot read {}; cuwheel reads its config from the project's pyproject.toml",
                pyproject.display()
            )
        })?;
        let config = Config::parse(&text, &pyproject)?;
        let mut problems = Vec::new();
        let mut report = |at: &Location, problem: String, fix: String| {
            problems.push(ConfigProblem {
                file: pyproject.clone(),
                at: at.clone(),
                problem,
                fix,
            });
        };
        let in_project = format!("relative to {}", project_dir.display());

        let mut kernel_sources = Vec::new();
        let mut flavour_kernel_sources = Vec::new();
        for module in &config.modules {
            let (kernels, own) = check_module(project_dir, module, &mut report)?;
            kernel_sources.push(kernels);
            flavour_kernel_sources.push(own);
        }
        for package in &config.packages {
            if !project_dir.join(&package.value).is_dir() {
                report(
                    &package.at,
                    format!(
                        "package directory {} does not exist",
                        package.value.display()
                    ),
                    format!("create it, or correct the path ({in_project})"),
                );
            }
        }
        let package_files = package::package_files(project_dir, &config, &mut report)?;
        let description = match &config.metadata.readme {
            None => None,
            Some(readme) => match &readme.value {
                Readme::Text { text, content_type } => Some(Description {
                    text: text.clone(),
                    content_type: content_type.clone(),
                    file: None,
                }),
                Readme::File { path, content_type } => {
                    match fs::read_to_string(project_dir.join(path)) {
                        Ok(text) => Some(Description {
                            text,
                            content_type: content_type.clone(),
                            file: Some(path.clone()),
                        }),
                        Err(error) => {
                            report(
                                &readme.at,
                                format!("cannot read the readme {}: {error}", path.display()),
                                format!(
                                    "create it as UTF-8 text, or correct the path ({in_project})"
                                ),
                            );
                            None
                        }
                    }
                }
            },
        };
        let license_files = license_files(project_dir, &config, &mut report)?;
        if !problems.is_empty() {
            problems.sort_by_key(|problem| (problem.at.line, problem.at.column));
            return Err(ConfigError { problems }.into());
        }
        Ok(Spec {
            root: project_dir.to_path_buf(),
            pyproject,
            kernel_sources,
            flavour_kernel_sources,
            package_files,
            description,
            license_files,
            config,
        })
    }

    /// A note for `cuwheel lock` when `cuda-compress-mode` is set and some
    /// of `cells` compile with an nvcc that lacks the option
    /// ([`config::compress::unsupported_note`]).
    pub fn compress_mode_note(&self, cells: &[Cell]) -> Option<String> {
        let mode = self
            .config
            .modules
            .iter()
            .find_map(|module| module.compile.compress_mode.as_ref())?;
        let cells: Vec<(String, CudaVersion)> = cells
            .iter()
            .map(|cell| (cell.name().to_string(), cell.nvcc))
            .collect();
        config::compress::unsupported_note(&mode.at.key, mode.value, &cells)
    }

    /// The cells to build with the lock's `facts`, sorted. Errors: a
    /// [`ConfigError`] for what the config names that the facts do not
    /// have (a torch never released, an exclude that matches no cell), else
    /// a [`CompatError`] naming every cell that cannot be built.
    pub fn cells(&self, facts: &MatrixFacts) -> anyhow::Result<Vec<Cell>> {
        let expansion = matrix::expand(&self.config, facts);
        if !expansion.problems.is_empty() {
            let mut problems: Vec<ConfigProblem> = expansion
                .problems
                .into_iter()
                .map(|problem| ConfigProblem {
                    file: self.pyproject.clone(),
                    at: problem.at,
                    problem: problem.problem,
                    fix: problem.fix,
                })
                .collect();
            problems.sort_by_key(|problem| (problem.at.line, problem.at.column));
            return Err(ConfigError { problems }.into());
        }
        let matrix = compat::Matrix {
            facts,
            baseline: &self.config.baseline,
            archs: &self.config.cuda_archs,
        };
        CompatTable::embedded()
            .check(&expansion.cells, &matrix)
            .map_err(|violations| CompatError {
                file: self.pyproject.clone(),
                violations,
            })?;
        Ok(expansion.cells)
    }
}

/// One module's kernel files, after checking its kernels, bindings and
/// include directories against the project.
fn check_module(
    root: &Path,
    module: &Module,
    report: &mut dyn FnMut(&Location, String, String),
) -> anyhow::Result<ModuleKernels> {
    let in_project = format!("relative to {}", root.display());
    let kinds = if module.cuda {
        "a .cu or C++ (.cpp, .cc, .cxx) file"
    } else {
        "a C++ (.cpp, .cc, .cxx) file: the module has cuda = false"
    };
    let compiles = |path: &Path| is_cxx_source(path) || (module.cuda && is_cuda_source(path));
    // Every kernel file of every list (the module's and each flavour's), and
    // which list matched it.
    let mut kernels: BTreeMap<PathBuf, &Location> = BTreeMap::new();
    let mut lists: Vec<(Option<BindingFlavour>, Vec<PathBuf>)> = Vec::new();
    let own = module.flavour_kernels.iter().map(|(f, p)| (Some(*f), p));
    for (flavour, patterns) in std::iter::once((None, &module.kernels)).chain(own) {
        let mut matched = std::collections::BTreeSet::new();
        for pattern in patterns {
            let files = pattern.value.files(root).with_context(|| {
                format!(
                    "cannot list the files matching {} in {}",
                    pattern.value,
                    root.display()
                )
            })?;
            if files.is_empty() {
                report(
                    &pattern.at,
                    format!("`{}` matches no file", pattern.value),
                    format!("patterns are {in_project}; check the directory and extension"),
                );
            }
            for file in files {
                if !compiles(&file) {
                    report(
                        &pattern.at,
                        format!(
                            "`{}` matches {}, which is not {kinds}",
                            pattern.value,
                            file.display()
                        ),
                        "narrow the pattern to the sources to compile; headers are found through \
                     the includes"
                            .into(),
                    );
                }
                matched.insert(file.clone());
                kernels.entry(file).or_insert(&pattern.at);
            }
        }
        lists.push((flavour, matched.into_iter().collect()));
    }
    for sources in module.bindings.values() {
        for source in sources {
            if !root.join(&source.value).is_file() {
                report(
                    &source.at,
                    format!("binding source {} does not exist", source.value.display()),
                    format!("create it, or correct the path ({in_project})"),
                );
            } else if kernels.contains_key(&source.value) {
                report(
                    &source.at,
                    format!(
                        "{} is also matched by a kernel pattern",
                        source.value.display()
                    ),
                    "list each source once: kernels are compiled without Python, bindings with it"
                        .into(),
                );
            } else if !compiles(&source.value) {
                report(
                    &source.at,
                    format!("binding source {} is not {kinds}", source.value.display()),
                    "list the translation units to compile".into(),
                );
            }
        }
    }
    for directory in &module.compile.include_dirs {
        if !root.join(&directory.value).is_dir() {
            report(
                &directory.at,
                format!(
                    "include directory {} does not exist",
                    directory.value.display()
                ),
                format!("create it, or correct the path ({in_project})"),
            );
        }
    }
    let mut own = BTreeMap::new();
    let mut common = Vec::new();
    for (flavour, files) in lists {
        match flavour {
            Some(flavour) => {
                own.insert(flavour, files);
            }
            None => common = files,
        }
    }
    Ok((common, own))
}

/// A module's kernel files, and each flavour's own.
type ModuleKernels = (Vec<PathBuf>, BTreeMap<BindingFlavour, Vec<PathBuf>>);

/// The license files: `license-files` (each pattern must match), the file
/// of `license = { file = ... }`, or the usual names at the root.
fn license_files(
    root: &Path,
    config: &Config,
    report: &mut dyn FnMut(&Location, String, String),
) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = std::collections::BTreeSet::new();
    let listing = |pattern: &Pattern| {
        pattern
            .files(root)
            .with_context(|| format!("cannot list the files matching {pattern}"))
    };
    match &config.metadata.license_files {
        Some(patterns) => {
            for pattern in patterns {
                let found = listing(&pattern.value)?;
                if found.is_empty() {
                    report(
                        &pattern.at,
                        format!("`{}` matches no file", pattern.value),
                        format!(
                            "PEP 639 requires every license-files pattern to match; patterns are \
                             relative to {}",
                            root.display()
                        ),
                    );
                }
                files.extend(found);
            }
        }
        None => {
            for text in DEFAULT_LICENSE_FILES {
                let pattern = Pattern::parse(text).expect("the default patterns are valid");
                files.extend(listing(&pattern)?);
            }
        }
    }
    if let Some(License::File(file)) = &config.metadata.license {
        if root.join(&file.value).is_file() {
            files.insert(file.value.clone());
        } else {
            report(
                &file.at,
                format!("license file {} does not exist", file.value.display()),
                format!(
                    "create it, or correct the path (relative to {})",
                    root.display()
                ),
            );
        }
    }
    Ok(files.into_iter().collect())
}
