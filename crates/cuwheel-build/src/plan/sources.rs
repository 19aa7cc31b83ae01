//! Reading the project for the plan: each module's translation units with
//! the project headers they include, and the digest of every file a wheel
//! is built from.
//!
//! In: a loaded [`Spec`] and its lock file. Out: the [`ProjectSources`]
//! (each module's TUs, package and license files, the readme, digests) that
//! [`Plan::new`] takes, and, through [`plan_project`], the plan itself.
//! This is the plan's only reading of files; the rest of the module is
//! pure.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::build::provenance::shaping_config_sha256;
use crate::lock::format::{LOCK_FILE, Lock};
use crate::plan::{Plan, TranslationUnit, slash_path};
use crate::spec::Spec;
use crate::spec::{BindingFlavour, Description, PackageFile};
use crate::store::Hash;

/// The project beyond its config, read by the caller
/// ([`read`]): each module's translation units, the package and
/// license files, the readme, and the digests a wheel's provenance records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectSources {
    /// In the order of `config.modules`.
    pub modules: Vec<ModuleSources>,
    pub package_files: Vec<PackageFile>,
    pub license_files: Vec<PathBuf>,
    pub description: Option<Description>,
    /// sha256 of every project file the wheels are built from, by relative
    /// path (`pyproject.toml`, kernels, bindings, the headers they include,
    /// package, license, readme and version files).
    pub digests: BTreeMap<String, String>,
    /// What `pyproject.toml` gives every cell
    /// ([`crate::build::provenance::shaping_config_sha256`]).
    pub config_sha256: String,
}

impl ProjectSources {
    /// A line per TU whose include directories are whole inputs because it
    /// has an `#include` computed by a macro, for `cuwheel plan` to print.
    pub fn whole_include_dirs(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for module in &self.modules {
            let units = module
                .kernels
                .iter()
                .chain(module.bindings.values().flatten());
            for tu in units {
                if let Some(at) = &tu.computed_include {
                    lines.push(format!(
                        "{}: the #include at {at} is computed by a macro, so its objects depend \
                         on every file of its module's include-dirs (write the header's name to \
                         depend on it alone)",
                        slash_path(&tu.path)
                    ));
                }
            }
        }
        lines.sort();
        lines.dedup();
        lines
    }
}

/// One module's translation units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleSources {
    pub kernels: Vec<TranslationUnit>,
    pub bindings: BTreeMap<BindingFlavour, Vec<TranslationUnit>>,
    /// A flavour's own kernels, which replace `kernels` in its builds.
    pub flavour_kernels: BTreeMap<BindingFlavour, Vec<TranslationUnit>>,
}

impl ModuleSources {
    /// The kernels of the module built with `flavour`'s bindings.
    pub fn kernels_for(&self, flavour: BindingFlavour) -> &[TranslationUnit] {
        self.flavour_kernels
            .get(&flavour)
            .map_or(&self.kernels, |own| own)
    }
}

/// The project's sources, as the plan takes them.
pub fn read(spec: &Spec) -> Result<ProjectSources> {
    let root = &spec.root;
    let mut modules = Vec::new();
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let own_kernels = spec.flavour_kernel_sources.iter();
    for ((module, kernels), own) in spec
        .config
        .modules
        .iter()
        .zip(&spec.kernel_sources)
        .zip(own_kernels)
    {
        let include_dirs = module.compile.include_paths();
        let scan = |tu: &Path| TranslationUnit::scan(root, tu, &include_dirs);
        let kernels = kernels
            .iter()
            .map(|tu| scan(tu))
            .collect::<Result<Vec<_>>>()?;
        let mut bindings = BTreeMap::new();
        for (flavour, sources) in &module.bindings {
            let units = sources
                .iter()
                .map(|tu| scan(&tu.value))
                .collect::<Result<Vec<_>>>()?;
            bindings.insert(*flavour, units);
        }
        let mut flavour_kernels = BTreeMap::new();
        for (flavour, sources) in own {
            let units = sources
                .iter()
                .map(|tu| scan(tu))
                .collect::<Result<Vec<_>>>()?;
            flavour_kernels.insert(*flavour, units);
        }
        let units = kernels
            .iter()
            .chain(bindings.values().flatten())
            .chain(flavour_kernels.values().flatten());
        for tu in units {
            files.insert(tu.path.clone());
            files.extend(tu.headers.iter().cloned());
            if tu.computed_include.is_some() {
                for dir in &include_dirs {
                    walk(root, dir, &mut files)?;
                }
            }
        }
        modules.push(ModuleSources {
            kernels,
            bindings,
            flavour_kernels,
        });
    }
    files.extend(spec.package_files.iter().map(|f| f.source.clone()));
    files.extend(spec.license_files.iter().cloned());
    files.extend(spec.config.version_file.iter().cloned());
    files.extend(spec.description.iter().filter_map(|d| d.file.clone()));
    let real_root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve the project directory {}", root.display()))?;
    let mut digests = BTreeMap::new();
    for file in files {
        let path = root.join(&file);
        check_inside(&real_root, &file, &path)?;
        let data = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        digests.insert(slash_path(&file), Hash::sha256(data).to_hex());
    }
    let document = crate::lock::read_pyproject(&spec.pyproject)?;
    Ok(ProjectSources {
        modules,
        package_files: spec.package_files.clone(),
        license_files: spec.license_files.clone(),
        description: spec.description.clone(),
        digests,
        config_sha256: shaping_config_sha256(&document),
    })
}

/// The plan of the project in `dir`, as `cuwheel plan` makes it: its spec,
/// its sources and the plan itself. A lock made for another `[tool.cuwheel]`
/// is refused, saying to lock again.
pub fn plan_project(dir: &Path) -> Result<(Spec, ProjectSources, Plan)> {
    let spec = Spec::load(dir)?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = Lock::read(&lock_path)?;
    let config_sha256 = crate::lock::config_sha256(&spec.pyproject)?;
    if lock.config_sha256 != config_sha256 {
        bail!(
            "{} was written for another [tool.cuwheel] (config-sha256 {}; {}'s is now {}): the \
             config changed after `cuwheel lock`. Run `cuwheel lock --project {}` to lock it \
             again, then build",
            lock_path.display(),
            lock.config_sha256,
            spec.pyproject.display(),
            config_sha256,
            dir.display()
        );
    }
    let cells = spec
        .cells(&lock.facts)
        .with_context(|| format!("with the facts of {}", lock_path.display()))?;
    let project = read(&spec)?;
    let plan = Plan::new(&spec.config, &project, &cells, &lock, &lock_path)
        .with_context(|| format!("cannot plan the build of {}", dir.display()))?;
    Ok((spec, project, plan))
}

/// A source must resolve inside the project: the Nix build copies only the
/// project's files (a symlink out of it would dangle there), and a
/// reproducer has only the checkout.
fn check_inside(real_root: &Path, file: &Path, path: &Path) -> Result<()> {
    let real = path
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    if !real.starts_with(real_root) {
        anyhow::bail!(
            "{} resolves to {}, outside the project {}; the Nix build sees only the project's \
             files and a reproducer only its checkout, so no wheel could be built from it: copy \
             the file into the project instead of linking to it",
            slash_path(file),
            real.display(),
            real_root.display()
        );
    }
    Ok(())
}

/// Every regular file under `dir` (relative to `root`).
fn walk(root: &Path, dir: &Path, files: &mut BTreeSet<PathBuf>) -> Result<()> {
    let full = root.join(dir);
    for entry in fs::read_dir(&full).with_context(|| format!("cannot list {}", full.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", full.display()))?;
        let path = dir.join(entry.file_name());
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", root.join(&path).display()))?;
        if kind.is_dir() {
            walk(root, &path, files)?;
        } else if kind.is_file() {
            files.insert(path);
        }
    }
    Ok(())
}
