//! The build specification: what an extension asks cuwheel to build.
//!
//! In: a project directory holding `pyproject.toml` with `[project]` and
//! `[tool.cuwheel]`. Out: a [`Spec`] — the typed [`Config`], the kernel
//! sources its patterns match — whose [`Spec::cells`] are the matrix cells
//! that survive the excludes, each checked against the compatibility table.
//! Every error says which file and key it is about and how to fix it:
//! [`ConfigError`] for what the config says (or names but is missing),
//! [`CompatError`] for cells that cannot be built.
//!
//! [`version`] holds the `major.minor` versions, [`python`] the CPython
//! builds (free-threaded too), [`selector`] the torch ranges, and [`target`]
//! the GPU archs and glibc baseline; [`config`] reads the text (through
//! [`document`], which tracks where each value is; [`archs`] and
//! [`matrix_config`] read `cuda-archs` and the matrix), [`glob`] matches the
//! kernel patterns, [`matrix`] expands and names the cells with the lock's
//! [`facts`], [`compat`] checks them against those facts and
//! `data/compatibility.toml`.

pub mod archs;
pub mod compat;
pub mod config;
pub mod document;
pub mod facts;
pub mod glob;
pub mod matrix;
pub mod matrix_config;
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
pub use config::{BindingFlavour, Config, Define, ExtensionModule};
pub use document::{ConfigError, ConfigProblem, Located, Location};
pub use facts::{MatrixFacts, ToolkitOrigin, TorchRelease, TorchWheel};
pub use matrix::{Cell, CellName, CellNameError};
pub use matrix_config::{Exclude, HeaderArchive, MatrixConfig};
pub use package::PackageFile;
pub use python::PythonAbi;
pub use selector::TorchSelector;
pub use target::{Baseline, CudaArch, TARGET_ARCH};
pub use version::{CudaVersion, InvalidValue, PythonVersion, TorchVersion};

/// A loaded, validated project.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The project directory, as given.
    pub root: PathBuf,
    /// `root/pyproject.toml`, named in messages.
    pub pyproject: PathBuf,
    pub config: Config,
    /// The files the kernel patterns match, relative to `root`, sorted,
    /// each once.
    pub kernel_sources: Vec<PathBuf>,
    /// The pure-Python files the wheels ship, by wheel path.
    pub package_files: Vec<PackageFile>,
}

impl Spec {
    /// Reads `project_dir/pyproject.toml` and checks that every kernel
    /// pattern matches at least one `.cu` file, and that every binding source
    /// and include directory exists. Config problems come back as a
    /// [`ConfigError`] inside the `anyhow::Error`.
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

        // Which pattern matched each kernel first, to refuse a file that is
        // both a kernel and a binding.
        let mut kernels: BTreeMap<PathBuf, &Location> = BTreeMap::new();
        for pattern in &config.kernels {
            let files = pattern.value.files(project_dir).with_context(|| {
                format!(
                    "cannot list the files matching {} in {}",
                    pattern.value,
                    project_dir.display()
                )
            })?;
            if files.is_empty() {
                report(
                    &pattern.at,
                    format!("`{}` matches no file", pattern.value),
                    format!(
                        "patterns are relative to {}; check the directory and extension",
                        project_dir.display()
                    ),
                );
            }
            for file in files {
                if file.extension().is_none_or(|extension| extension != "cu") {
                    report(
                        &pattern.at,
                        format!("`{}` matches {}, which is not a .cu file", pattern.value, file.display()),
                        "narrow the pattern to .cu files; C++ that needs Python belongs in the bindings".into(),
                    );
                }
                kernels.entry(file).or_insert(&pattern.at);
            }
        }
        for sources in config.bindings.values() {
            for source in sources {
                if !project_dir.join(&source.value).is_file() {
                    report(
                        &source.at,
                        format!("binding source {} does not exist", source.value.display()),
                        format!(
                            "create it, or correct the path (relative to {})",
                            project_dir.display()
                        ),
                    );
                } else if kernels.contains_key(&source.value) {
                    report(
                        &source.at,
                        format!("{} is also matched by a kernel pattern", source.value.display()),
                        "list each source once: kernels are compiled without Python, bindings with it".into(),
                    );
                }
            }
        }
        for package in &config.packages {
            if !project_dir.join(&package.value).is_dir() {
                report(
                    &package.at,
                    format!(
                        "package directory {} does not exist",
                        package.value.display()
                    ),
                    format!(
                        "create it, or correct the path (relative to {})",
                        project_dir.display()
                    ),
                );
            }
        }
        for directory in &config.include_dirs {
            if !project_dir.join(&directory.value).is_dir() {
                report(
                    &directory.at,
                    format!(
                        "include directory {} does not exist",
                        directory.value.display()
                    ),
                    format!(
                        "create it, or correct the path (relative to {})",
                        project_dir.display()
                    ),
                );
            }
        }
        if !problems.is_empty() {
            problems.sort_by_key(|problem| (problem.at.line, problem.at.column));
            return Err(ConfigError { problems }.into());
        }
        let package_files = package::package_files(project_dir, &config)?;
        Ok(Spec {
            root: project_dir.to_path_buf(),
            pyproject,
            kernel_sources: kernels.into_keys().collect(),
            package_files,
            config,
        })
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
