//! The pure-Python part of the wheel: the package files shipped beside the
//! extension modules.
//!
//! In: the project root and the config: `packages` (or, when it lists
//! none, each module's top-level package directory the project has),
//! `package-include` and `package-exclude`. Out: [`PackageFile`]s — each
//! file's path in the project and in the wheel — sorted by wheel path; and
//! every pattern that selects nothing, reported with its key.
//!
//! By default a package directory ships its `*.py`, `*.pyi` and `py.typed`
//! files, as setuptools does without `package_data`; `package-include`
//! adds files under the package directories, `package-exclude` removes
//! any. Python's caches (`__pycache__/`, `.pyc`, `.pyo`) are never shipped:
//! they are build leftovers, and would make the wheel depend on who ran
//! what in the checkout. A built copy of an extension module in a package
//! directory is an error.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::spec::glob::slash_path;
use crate::spec::{Config, ExtensionModule, Location};

/// One file of a package directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackageFile {
    /// Where the wheel holds it: `demo_ext/ops.py`.
    pub member: String,
    /// Where the project holds it, relative to the root.
    pub source: PathBuf,
}

/// What a package directory ships without `package-include`.
pub fn shipped_by_default(file_name: &str) -> bool {
    file_name.ends_with(".py") || file_name.ends_with(".pyi") || file_name == "py.typed"
}

/// The package directories: `packages`, or each module's top-level package
/// directory that exists.
fn package_dirs(root: &Path, config: &Config) -> Vec<PathBuf> {
    if !config.packages.is_empty() {
        return config.packages.iter().map(|p| p.value.clone()).collect();
    }
    let dirs: BTreeSet<PathBuf> = config
        .modules
        .iter()
        .map(|module| &module.name.value)
        .filter(|name| name.components().count() > 1)
        .map(|name| PathBuf::from(name.components().next().unwrap_or_default()))
        .filter(|dir| root.join(dir).is_dir())
        .collect();
    dirs.into_iter().collect()
}

/// The files to ship; a directory that does not exist is the config
/// reader's error, a pattern that selects nothing is reported through
/// `report` (location, problem, fix).
pub fn package_files(
    root: &Path,
    config: &Config,
    report: &mut dyn FnMut(&Location, String, String),
) -> Result<Vec<PackageFile>> {
    let modules: Vec<&ExtensionModule> = config.modules.iter().map(|m| &m.name.value).collect();
    let mut candidates = Vec::new();
    for dir in package_dirs(root, config) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        walk(root, &dir, &name, &modules, &mut candidates)?;
    }
    let mut selected: BTreeSet<PackageFile> = candidates
        .iter()
        .filter(|file| {
            let name = file.member.rsplit('/').next().unwrap_or_default();
            shipped_by_default(name)
        })
        .cloned()
        .collect();
    for pattern in &config.package_include {
        let matched: Vec<&PackageFile> = candidates
            .iter()
            .filter(|file| pattern.value.matches(&slash_path(&file.source)))
            .collect();
        if matched.is_empty() {
            let outside = pattern
                .value
                .files(root)
                .with_context(|| format!("cannot list the files matching {}", pattern.value))?;
            let problem = match outside.first() {
                Some(file) => format!(
                    "`{}` matches {}, which is not under a package directory",
                    pattern.value,
                    file.display()
                ),
                None => format!("`{}` matches no file", pattern.value),
            };
            report(
                &pattern.at,
                problem,
                "patterns are relative to the project root and select files under the package \
                 directories (tool.cuwheel.packages, or each module's top-level package)"
                    .into(),
            );
        }
        selected.extend(matched.into_iter().cloned());
    }
    for pattern in &config.package_exclude {
        let matches = |file: &PackageFile| pattern.value.matches(&slash_path(&file.source));
        if !candidates.iter().any(matches) {
            report(
                &pattern.at,
                format!(
                    "`{}` matches no file of the package directories",
                    pattern.value
                ),
                "check it for typos (patterns are relative to the project root), or remove it"
                    .into(),
            );
        }
        selected.retain(|file| !matches(file));
    }
    Ok(selected.into_iter().collect())
}

fn walk(
    root: &Path,
    dir: &Path,
    member_dir: &str,
    modules: &[&ExtensionModule],
    files: &mut Vec<PackageFile>,
) -> Result<()> {
    let full = root.join(dir);
    let mut entries = Vec::new();
    for entry in fs::read_dir(&full).with_context(|| format!("cannot list {}", full.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", full.display()))?;
        entries.push(entry);
    }
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let source = dir.join(&name);
        let member = format!("{member_dir}/{name}");
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", root.join(&source).display()))?;
        if kind.is_dir() {
            if name != "__pycache__" {
                walk(root, &source, &member, modules, files)?;
            }
        } else if name.ends_with(".pyc") || name.ends_with(".pyo") {
            continue;
        } else if let Some(module) = modules.iter().find(|m| is_built_module(&name, m)) {
            bail!(
                "{} looks like a build of the extension module {module} (from `pip install -e` or \
                 `setup.py build_ext --inplace`); cuwheel builds the module itself, so delete the \
                 file before building",
                root.join(&source).display()
            );
        } else {
            files.push(PackageFile { member, source });
        }
    }
    Ok(())
}

/// `_C.so`, `_C.abi3.so`, `_C.cpython-313-x86_64-linux-gnu.so`.
fn is_built_module(file: &str, module: &ExtensionModule) -> bool {
    file.strip_prefix(module.leaf())
        .is_some_and(|rest| rest.starts_with('.') && rest.ends_with(".so"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_modules_are_recognised_by_the_leaf_name() {
        let module: ExtensionModule = "demo_ext._C".parse().unwrap();
        assert!(is_built_module("_C.so", &module));
        assert!(is_built_module("_C.abi3.so", &module));
        assert!(is_built_module(
            "_C.cpython-313-x86_64-linux-gnu.so",
            &module
        ));
        assert!(!is_built_module("_Cx.so", &module));
        assert!(!is_built_module("_C.py", &module));
        assert!(!is_built_module("libfoo.so", &module));
    }

    #[test]
    fn the_default_ships_python_sources_and_typing_files() {
        for name in ["ops.py", "ops.pyi", "py.typed"] {
            assert!(shipped_by_default(name), "{name}");
        }
        for name in ["data.json", "kernel.cuh", "README.md", "ops.pyc"] {
            assert!(!shipped_by_default(name), "{name}");
        }
    }
}
