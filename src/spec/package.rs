//! The pure-Python part of the wheel: the package directories shipped
//! beside the extension module.
//!
//! In: the project root, the config's `packages` (or, when it lists none,
//! the extension module's top-level package directory if the project has
//! one) and the module. Out: [`PackageFile`]s — each file's path in the
//! project and in the wheel — sorted by wheel path. Python's caches
//! (`__pycache__/`, `.pyc`, `.pyo`) are left out: they are build leftovers,
//! and would make the wheel depend on who ran what in the checkout.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::spec::{Config, ExtensionModule};

/// One file of a package directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackageFile {
    /// Where the wheel holds it: `demo_ext/ops.py`.
    pub member: String,
    /// Where the project holds it, relative to the root.
    pub source: PathBuf,
}

/// The package directories' files; an explicit directory that does not
/// exist is the config reader's error, not this one's.
pub fn package_files(root: &Path, config: &Config) -> Result<Vec<PackageFile>> {
    let dirs: Vec<PathBuf> = if config.packages.is_empty() {
        let top = config.module.components().next().unwrap_or_default();
        let default = PathBuf::from(top);
        if config.module.components().count() > 1 && root.join(&default).is_dir() {
            vec![default]
        } else {
            Vec::new()
        }
    } else {
        config.packages.iter().map(|p| p.value.clone()).collect()
    };
    let mut files = Vec::new();
    for dir in &dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        walk(root, dir, &name, &config.module, &mut files)?;
    }
    files.sort();
    Ok(files)
}

fn walk(
    root: &Path,
    dir: &Path,
    member_dir: &str,
    module: &ExtensionModule,
    files: &mut Vec<PackageFile>,
) -> Result<()> {
    let full = root.join(dir);
    let entries = fs::read_dir(&full).with_context(|| format!("cannot list {}", full.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", full.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let source = dir.join(&name);
        let member = format!("{member_dir}/{name}");
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", root.join(&source).display()))?;
        if kind.is_dir() {
            if name != "__pycache__" {
                walk(root, &source, &member, module, files)?;
            }
        } else if name.ends_with(".pyc") || name.ends_with(".pyo") {
            continue;
        } else if is_built_module(&name, module) {
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
}
