//! Helpers for tests that evaluate in a real tree (this crate's and
//! cuwheel's): a temporary project, and a plain [`ProjectFiles`] over it.
//!
//! In: the files (path, text) a test's project holds. Out: the tree, its
//! canonical root, and [`Plain`], which reads any file under the root and
//! matches globs with the `glob` crate (`*`, `?`, `**`), not the host's.

use std::fs;
use std::path::{Path, PathBuf};

use crate::ProjectFiles;

/// A temporary tree holding `files` (path, text), and its canonical root.
pub fn write_tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().canonicalize().expect("its canonical path");
    for (path, text) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().expect("a parent")).expect("a directory");
        fs::write(full, text).expect("a file");
    }
    (dir, root)
}

/// Project files as the tests need them: every file under the root read,
/// globs matched over the regular files of the tree.
pub struct Plain;

impl ProjectFiles for Plain {
    fn read_text(&self, root: &Path, rel: &Path) -> Result<String, String> {
        fs::read_to_string(root.join(rel)).map_err(|e| format!("{}: {e}", rel.display()))
    }

    fn glob(&self, root: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
        let options = glob::MatchOptions {
            require_literal_separator: true,
            ..glob::MatchOptions::new()
        };
        let full = root.join(pattern);
        let mut found = Vec::new();
        for path in glob::glob_with(&full.to_string_lossy(), options).map_err(|e| e.to_string())? {
            let path = path.map_err(|e| e.to_string())?;
            if path.is_file() {
                let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
                found.push(rel.to_path_buf());
            }
        }
        found.sort();
        Ok(found)
    }
}
