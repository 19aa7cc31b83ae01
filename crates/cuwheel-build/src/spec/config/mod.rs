//! `[project]` and `[tool.cuwheel]` in an extension's `pyproject.toml`.
//!
//! In: the text of `pyproject.toml` and its path (for messages, and the
//! directory a dynamic version is read from). Out: a typed [`Config`] —
//! the wheel's name, version and METADATA ([`project`], [`metadata`]), its
//! extension modules with their sources, binding flavours, compile and link
//! options ([`modules`], [`flags`], [`flavour`]), the CUDA archs, baseline,
//! the package files to ship, and the matrix ([`matrix`]) — or a
//! [`ConfigError`] listing every problem found, each with the file, line,
//! key path (`tool.cuwheel.matrix.cuda[1]`) and how to fix it.
//!
//! Only the text is read, and a dynamic version's one file: whether the
//! named sources exist is checked by [`Spec::load`](super::Spec::load), and
//! whether the matrix can be built by [`compat`](super::compat). Unknown
//! keys in `[project]` and `[tool.cuwheel]` are errors (a misspelt key would
//! otherwise be ignored silently); other tools' tables are left to their
//! owners.

mod archs_check;
pub mod compress;
pub mod flags;
pub mod flavour;
pub mod license;
pub mod matrix;
pub mod metadata;
pub mod modules;
pub mod project;
pub mod pypi;
pub mod toolkit_flags;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use toml::de::DeTable;

use crate::spec::archs::CudaArchs;
use crate::spec::document::{ConfigError, Located, Reader, Table};
use crate::spec::glob::Pattern;
use crate::spec::target::Baseline;
use crate::wheel::{ProjectName, Version};

pub use compress::CompressMode;
pub use flags::Define;
pub use flavour::BindingFlavour;
pub use matrix::{ARCHIVE_SUFFIXES, Exclude, HeaderArchive, MatrixConfig};
pub use metadata::{License, Person, ProjectMetadata, Readme};
pub use modules::{Compile, ExtensionModule, Link, Module};
pub use pypi::{PYPI_MAX_FILE_SIZE, PypiConfig};

/// Everything `[project]` and `[tool.cuwheel]` say about what to build.
#[derive(Debug, Clone)]
pub struct Config {
    /// `project.name`: the wheel's distribution name.
    pub name: ProjectName,
    /// `project.version`, static or read from `version_file`, without a
    /// local label (each cell adds its own).
    pub version: Version,
    /// The file a dynamic version was read from, relative to the project.
    pub version_file: Option<PathBuf>,
    /// What `[project]` says for METADATA beyond the name and version.
    pub metadata: ProjectMetadata,
    /// The extension modules, in the order written; at least one.
    pub modules: Vec<Module>,
    /// The GPU archs of each toolkit.
    pub cuda_archs: CudaArchs,
    pub baseline: Baseline,
    /// The package directories shipped in every wheel, relative to the
    /// project; empty means each module's top-level package directory,
    /// where the project has one (see [`Spec`](super::Spec)).
    pub packages: Vec<Located<PathBuf>>,
    /// Files to ship beside the default `*.py`, `*.pyi` and `py.typed`.
    pub package_include: Vec<Located<Pattern>>,
    /// Files not to ship, even if a default or an include takes them.
    pub package_exclude: Vec<Located<Pattern>>,
    pub matrix: MatrixConfig,
    /// `[tool.cuwheel.pypi]`: the variant that also goes to PyPI, if any.
    pub pypi: Option<PypiConfig>,
}

impl Config {
    /// The flavours of the project's wheels (see [`BindingFlavour::of_wheels`]).
    pub fn flavours(&self) -> Vec<BindingFlavour> {
        flavours_of(&self.modules)
    }

    /// Whether any module is compiled with CUDA.
    pub fn uses_cuda(&self) -> bool {
        self.modules.iter().any(|m| m.cuda)
    }
}

fn flavours_of(modules: &[Module]) -> Vec<BindingFlavour> {
    let has: Vec<Vec<BindingFlavour>> = modules.iter().map(Module::flavours).collect();
    BindingFlavour::of_wheels(&has)
}

/// The keys of `[tool.cuwheel]`: the shorthand's, the defaults every
/// module extends, and the project-wide ones.
fn cuwheel_keys() -> Vec<&'static str> {
    let mut keys = modules::SHORTHAND_KEYS.to_vec();
    keys.extend(["modules", "cuda-archs", "baseline"]);
    keys.extend(modules::BUILD_KEYS);
    keys.extend([
        "packages",
        "package-include",
        "package-exclude",
        "version",
        "matrix",
        "pypi",
    ]);
    keys
}

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
        let cuwheel = self.cuwheel_table(root);
        let (name, version, metadata) = match &project {
            Some(project) => (
                self.project_name(project),
                self.project_version(project, root, cuwheel.as_ref()),
                self.project_metadata(project),
            ),
            None => (None, None, None),
        };
        let cuwheel = cuwheel?;
        self.known_keys(&cuwheel, &cuwheel_keys());

        let (modules, module_flavours) = self.modules(&cuwheel);
        let needs_archs = modules
            .as_ref()
            .is_none_or(|modules| modules.iter().any(|m| m.cuda));
        let cuda_archs = match (cuwheel.get("cuda-archs"), needs_archs) {
            (None, false) => Some(CudaArchs::uniform(Vec::new())),
            _ => self.cuda_archs(&cuwheel),
        };
        let baseline = self
            .required(
                &cuwheel,
                "baseline",
                "name the oldest glibc to support, like baseline = \"manylinux_2_31\"",
            )
            .and_then(|field| self.parsed(&field, "\"manylinux_2_31\""));
        let packages = match cuwheel.get("packages") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"demo_ext\"]",
                false,
                flags::relative_path,
                |a, b| a == b,
            ),
        };
        let package_include = match cuwheel.get("package-include") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"demo_ext/data/*.json\"]",
                false,
                Pattern::parse,
                |a, b| a == b,
            ),
        };
        let package_exclude = match cuwheel.get("package-exclude") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"**/third_party/**\"]",
                false,
                Pattern::parse_excluding,
                |a, b| a == b,
            ),
        };
        let flavours = module_flavours.map(|has| BindingFlavour::of_wheels(&has));
        let matrix = self
            .required(
                &cuwheel,
                "matrix",
                "add a [tool.cuwheel.matrix] table with torch and python lists",
            )
            .and_then(|field| self.table(&field, "write [tool.cuwheel.matrix] as a table"))
            .and_then(|matrix| self.matrix(&matrix, flavours.as_deref()));

        let pypi = match cuwheel.get("pypi") {
            None => Some(None),
            Some(field) => self
                .table(&field, "write [tool.cuwheel.pypi] as a table")
                .and_then(|table| self.pypi(&table))
                .map(Some),
        };
        if let (Some(archs), Some(matrix)) = (&cuda_archs, &matrix) {
            self.archs_against_toolkits(cuwheel.get("cuda-archs"), archs, matrix);
        }
        let (version, version_file) = version?;
        Some(Config {
            name: name?,
            version,
            version_file: version_file.map(|file| file.path),
            metadata: metadata?,
            modules: modules?,
            cuda_archs: cuda_archs?,
            baseline: baseline?,
            packages: packages?,
            package_include: package_include?,
            package_exclude: package_exclude?,
            matrix: matrix?,
            pypi: pypi?,
        })
    }

    fn cuwheel_table<'v, 'i>(&mut self, root: &Table<'v, 'i>) -> Option<Table<'v, 'i>> {
        let fix = "add a [tool.cuwheel] table naming the module, kernels, bindings, cuda-archs, \
                   baseline and a [tool.cuwheel.matrix]";
        let tool = self.required(root, "tool", fix)?;
        let tool = self.table(&tool, "write [tool] as a table")?;
        let cuwheel = self.required(&tool, "cuwheel", fix)?;
        self.table(&cuwheel, "write [tool.cuwheel] as a table")
    }
}
