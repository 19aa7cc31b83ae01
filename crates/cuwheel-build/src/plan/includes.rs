//! The project files a translation unit reaches through its `#include`s.
//!
//! In: the project root, a TU (relative to it) and its module's include
//! directories. Out: [`TranslationUnit`] — the TU and the project headers it
//! includes, transitively, relative and sorted — so that each header is an
//! input of the TU's derivations on its own, and editing a header rebuilds
//! only the objects that include it.
//!
//! The scan is textual, as a build system's dependency scanner is:
//! `#include "name"` is looked up beside the including file, then in the
//! include directories; `#include <name>` (and `#include_next`) in the
//! include directories; the first file found is the one the compiler
//! reads. A name found nowhere in the project (a torch or CUDA header, or
//! one that does not exist) is not an input. Conditional includes all count
//! (`#if` is not evaluated). An include computed by a macro
//! (`#include HEADER`) cannot be resolved: the TU then depends on every
//! file of its include directories, and [`TranslationUnit::computed_include`]
//! says where, for `cuwheel plan` to tell.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::spec::glob::slash_path;

/// A TU and the project headers it includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationUnit {
    pub path: PathBuf,
    pub headers: BTreeSet<PathBuf>,
    /// The first `#include` computed by a macro (`file:line`), if any: the
    /// TU's inputs are then its module's whole include directories.
    pub computed_include: Option<String>,
}

/// One `#include` line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Include<'a> {
    Quoted(&'a str),
    Angled(&'a str),
    Computed,
}

impl TranslationUnit {
    /// A TU that includes no project file.
    pub fn alone(path: impl Into<PathBuf>) -> TranslationUnit {
        TranslationUnit {
            path: path.into(),
            headers: BTreeSet::new(),
            computed_include: None,
        }
    }

    /// Reads `tu` and, transitively, every project file it includes.
    pub fn scan(root: &Path, tu: &Path, include_dirs: &[PathBuf]) -> Result<TranslationUnit> {
        let mut unit = TranslationUnit::alone(tu);
        let mut pending = vec![tu.to_path_buf()];
        while let Some(file) = pending.pop() {
            let text = fs::read(root.join(&file))
                .with_context(|| format!("cannot read {}", root.join(&file).display()))?;
            let text = String::from_utf8_lossy(&text);
            let dir = file.parent().unwrap_or(Path::new(""));
            for (line, include) in includes(&text) {
                let (name, beside) = match include {
                    Include::Quoted(name) => (name, true),
                    Include::Angled(name) => (name, false),
                    Include::Computed => {
                        if unit.computed_include.is_none() {
                            unit.computed_include = Some(format!("{}:{line}", slash_path(&file)));
                        }
                        continue;
                    }
                };
                let beside = beside.then(|| dir.to_path_buf());
                let found = beside
                    .iter()
                    .chain(include_dirs)
                    .filter_map(|base| normalise(&base.join(name)))
                    .find(|candidate| root.join(candidate).is_file());
                let Some(header) = found else {
                    continue;
                };
                if header != tu && unit.headers.insert(header.clone()) {
                    pending.push(header);
                }
            }
        }
        Ok(unit)
    }
}

/// The `#include` lines of `text`, with their 1-based line numbers.
fn includes(text: &str) -> Vec<(usize, Include<'_>)> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest
                .strip_prefix("include_next")
                .or_else(|| rest.strip_prefix("include"))?;
            if !rest.starts_with([' ', '\t', '"', '<']) {
                return None; // `#includefoo`, not a directive
            }
            let rest = rest.trim_start();
            let include = if let Some(quoted) = rest.strip_prefix('"') {
                Include::Quoted(quoted.split_once('"')?.0)
            } else if let Some(angled) = rest.strip_prefix('<') {
                Include::Angled(angled.split_once('>')?.0)
            } else if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                Include::Computed
            } else {
                return None;
            };
            Some((index + 1, include))
        })
        .collect()
}

/// `a/b/../c.h` → `a/c.h`; `None` for a path leaving the project.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(unit: &TranslationUnit) -> Vec<&str> {
        unit.headers.iter().map(|h| h.to_str().unwrap()).collect()
    }

    #[test]
    fn include_lines_are_read_by_kind() {
        let text = "#include <ATen/ATen.h>\n#include \"a.cuh\"\n  #  include  \"../b.h\" // x\n\
                    // #include \"commented.h\" is a comment line\n#define X \"y.h\"\n\
                    #include_next <c.h>\n#include HEADER_OF(x)\n#includefoo\n";
        assert_eq!(
            includes(text),
            [
                (1, Include::Angled("ATen/ATen.h")),
                (2, Include::Quoted("a.cuh")),
                (3, Include::Quoted("../b.h")),
                (6, Include::Angled("c.h")),
                (7, Include::Computed),
            ]
        );
    }

    #[test]
    fn paths_are_normalised_inside_the_project() {
        assert_eq!(
            normalise(Path::new("csrc/kernels/../common/x.h")),
            Some(PathBuf::from("csrc/common/x.h"))
        );
        assert_eq!(normalise(Path::new("csrc/../../x.h")), None);
        assert_eq!(normalise(Path::new("/usr/include/x.h")), None);
    }

    fn write_tree(root: &Path, files: &[(&str, &str)]) {
        for (rel, text) in files {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn the_scan_follows_siblings_and_include_dirs_transitively() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_tree(
            root,
            &[
                (
                    "k/a.cu",
                    "#include \"util.cuh\"\n#include \"missing.h\"\n#include <pkg/x.h>\n\
                     #include <ATen/ATen.h>\n",
                ),
                (
                    "k/util.cuh",
                    "#include \"../common/math.cuh\"\n#include \"util.cuh\"\n",
                ),
                ("common/math.cuh", "#pragma once\n"),
                ("inc/pkg/x.h", "#include \"y.h\"\n#include <pkg/z.h>\n"),
                ("inc/pkg/y.h", ""),
                ("inc/pkg/z.h", ""),
                ("inc/pkg/unused.h", ""),
                ("k/b.cu", "#include \"a.cu\"\n"),
            ],
        );
        let a = TranslationUnit::scan(root, Path::new("k/a.cu"), &[PathBuf::from("inc")]).unwrap();
        assert_eq!(
            names(&a),
            [
                "common/math.cuh",
                "inc/pkg/x.h",
                "inc/pkg/y.h",
                "inc/pkg/z.h",
                "k/util.cuh"
            ]
        );
        assert_eq!(a.computed_include, None);
        // Without the include directory, angle includes find nothing.
        let bare = TranslationUnit::scan(root, Path::new("k/a.cu"), &[]).unwrap();
        assert_eq!(names(&bare), ["common/math.cuh", "k/util.cuh"]);
        // Another TU included as a header is a header of this one.
        let b = TranslationUnit::scan(root, Path::new("k/b.cu"), &[PathBuf::from("inc")]).unwrap();
        assert!(names(&b).contains(&"k/a.cu"), "{:?}", names(&b));
    }

    #[test]
    fn quoted_includes_prefer_the_file_beside_and_computed_ones_are_noted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_tree(
            root,
            &[
                ("k/a.cpp", "#include \"cfg.h\"\n"),
                ("k/cfg.h", "#define H <inc/t.h>\n#include H\n"),
                ("inc/cfg.h", ""),
            ],
        );
        let a = TranslationUnit::scan(root, Path::new("k/a.cpp"), &[PathBuf::from("inc")]).unwrap();
        assert_eq!(names(&a), ["k/cfg.h"]);
        assert_eq!(a.computed_include.as_deref(), Some("k/cfg.h:2"));
    }
}
