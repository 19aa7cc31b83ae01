//! The project headers a kernel TU reaches through `#include "..."` beside
//! it, outside the include directories.
//!
//! In: the project root, a TU (relative to it) and the config's include
//! directories. Out: [`TranslationUnit`] — the TU and those headers, relative,
//! sorted. Each becomes an input of the TU's kernel objects on its own, so
//! a TU can include a sibling `.cuh` while editing another TU still leaves
//! its objects alone. Headers inside an include directory are already an
//! input (the whole directory) and are not listed.
//!
//! The scan is textual, as a build system's dependency scanner is: a line
//! `#include "name"` whose file exists relative to the including file. An
//! include computed by a macro is not seen; such a header belongs in an
//! include directory.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

/// A kernel TU and the project headers beside it that it includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationUnit {
    pub path: PathBuf,
    pub headers: BTreeSet<PathBuf>,
}

impl TranslationUnit {
    /// A TU that includes no header beside it.
    pub fn alone(path: impl Into<PathBuf>) -> TranslationUnit {
        TranslationUnit {
            path: path.into(),
            headers: BTreeSet::new(),
        }
    }

    /// Reads `tu` and, transitively, every header it includes by a quoted
    /// name found beside the including file.
    pub fn scan(root: &Path, tu: &Path, include_dirs: &[PathBuf]) -> Result<TranslationUnit> {
        let mut headers = BTreeSet::new();
        let mut pending = vec![tu.to_path_buf()];
        while let Some(file) = pending.pop() {
            let text = fs::read(root.join(&file))
                .with_context(|| format!("cannot read {}", root.join(&file).display()))?;
            let dir = file.parent().unwrap_or(Path::new(""));
            for name in quoted_includes(&String::from_utf8_lossy(&text)) {
                let Some(header) = normalise(&dir.join(name)) else {
                    continue;
                };
                if header == tu
                    || include_dirs.iter().any(|d| header.starts_with(d))
                    || !root.join(&header).is_file()
                {
                    continue;
                }
                if headers.insert(header.clone()) {
                    pending.push(header);
                }
            }
        }
        Ok(TranslationUnit {
            path: tu.to_path_buf(),
            headers,
        })
    }
}

/// The names of the `#include "name"` lines of `text`.
fn quoted_includes(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.split_once('"').map(|(name, _)| name)
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

    #[test]
    fn quoted_includes_are_found_and_angle_ones_left_to_the_include_path() {
        let text = "#include <ATen/ATen.h>\n#include \"a.cuh\"\n  #  include  \"../b.h\" // x\n\
                    // #include \"commented.h\" is a comment line\n#define X \"y.h\"\n";
        assert_eq!(quoted_includes(text), ["a.cuh", "../b.h"]);
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

    #[test]
    fn the_scan_follows_siblings_transitively_and_skips_include_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write(
            "k/a.cu",
            "#include \"util.cuh\"\n#include \"missing.h\"\n#include \"inc/x.h\"\n",
        );
        write(
            "k/util.cuh",
            "#include \"../common/math.cuh\"\n#include \"util.cuh\"\n",
        );
        write("common/math.cuh", "#pragma once\n");
        write("k/inc/x.h", "#include \"y.h\"\n");
        write("k/inc/y.h", "");
        write("k/b.cu", "#include \"a.cu\"\n");
        let scanned =
            TranslationUnit::scan(root, Path::new("k/a.cu"), &[PathBuf::from("k/inc")]).unwrap();
        let headers: Vec<&str> = scanned
            .headers
            .iter()
            .map(|h| h.to_str().unwrap())
            .collect();
        assert_eq!(headers, ["common/math.cuh", "k/util.cuh"]);
        // Another TU included as a header is a header of this one.
        let b = TranslationUnit::scan(root, Path::new("k/b.cu"), &[]).unwrap();
        let headers: Vec<&str> = b.headers.iter().map(|h| h.to_str().unwrap()).collect();
        assert_eq!(
            headers,
            [
                "common/math.cuh",
                "k/a.cu",
                "k/inc/x.h",
                "k/inc/y.h",
                "k/util.cuh"
            ]
        );
    }
}
