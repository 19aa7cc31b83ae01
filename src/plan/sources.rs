//! Reading the project for the plan: the translation units with the
//! headers beside them, and the digest of every file a wheel is built from.
//!
//! In: a loaded [`Spec`] and its lock file. Out: the kernel
//! [`TranslationUnit`]s and the [`ProjectSources`] (bindings, package files,
//! digests) that [`Plan::new`] takes, and, through [`plan_project`], the
//! plan itself. This is the plan's only reading of files; the rest of the
//! module is pure.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::lock::format::{LOCK_FILE, Lock};
use crate::plan::kernel::slash_path;
use crate::plan::{Plan, ProjectSources, TranslationUnit};
use crate::spec::Spec;
use crate::store::Hash;

/// The project's kernels and the rest of its sources.
pub fn read(spec: &Spec, lock_path: &Path) -> Result<(Vec<TranslationUnit>, ProjectSources)> {
    let root = &spec.root;
    let include_dirs: Vec<PathBuf> = spec
        .config
        .include_dirs
        .iter()
        .map(|d| d.value.clone())
        .collect();
    let kernels = spec
        .kernel_sources
        .iter()
        .map(|tu| TranslationUnit::scan(root, tu, &include_dirs))
        .collect::<Result<Vec<_>>>()?;
    let mut bindings = BTreeMap::new();
    for (flavour, sources) in &spec.config.bindings {
        let units = sources
            .iter()
            .map(|tu| TranslationUnit::scan(root, &tu.value, &include_dirs))
            .collect::<Result<Vec<_>>>()?;
        bindings.insert(*flavour, units);
    }

    let mut files: Vec<PathBuf> = vec![PathBuf::from("pyproject.toml")];
    for tu in kernels.iter().chain(bindings.values().flatten()) {
        files.push(tu.path.clone());
        files.extend(tu.headers.iter().cloned());
    }
    for dir in &include_dirs {
        walk(root, dir, &mut files)?;
    }
    files.extend(spec.package_files.iter().map(|f| f.source.clone()));
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
    let lock =
        fs::read(lock_path).with_context(|| format!("cannot read {}", lock_path.display()))?;
    Ok((
        kernels,
        ProjectSources {
            bindings,
            package_files: spec.package_files.clone(),
            digests,
            lock_sha256: Hash::sha256(lock).to_hex(),
        },
    ))
}

/// The plan of the project in `dir`, as `cuwheel plan` makes it: its spec,
/// its sources and the plan itself.
pub fn plan_project(dir: &Path) -> Result<(Spec, ProjectSources, Plan)> {
    let spec = Spec::load(dir)?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = Lock::read(&lock_path)?;
    let cells = spec
        .cells(&lock.facts)
        .with_context(|| format!("with the facts of {}", lock_path.display()))?;
    let (kernels, project) = read(&spec, &lock_path)?;
    let plan = Plan::new(&spec.config, &kernels, &project, &cells, &lock, &lock_path)
        .with_context(|| format!("cannot plan the build of {}", dir.display()))?;
    Ok((spec, project, plan))
}

/// The nearest directory holding `flake.nix`, from `project` up: the flake
/// that builds the project, whose derivations `cuwheel plan` and
/// `cuwheel reproduce` ask Nix about.
pub fn nearest_flake(project: &Path) -> Result<Option<PathBuf>> {
    let start = project
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", project.display()))?;
    Ok(start
        .ancestors()
        .find(|dir| dir.join("flake.nix").is_file())
        .map(Path::to_path_buf))
}

/// [`nearest_flake`], or an error saying to name the flake.
pub fn find_flake(project: &Path) -> Result<PathBuf> {
    nearest_flake(project)?.with_context(|| {
        format!(
            "no flake.nix in {} or any directory above it: pass --flake REF, the flake that \
             builds this project",
            project.display()
        )
    })
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
fn walk(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
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
            files.push(path);
        }
    }
    Ok(())
}
