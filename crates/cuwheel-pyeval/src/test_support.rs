//! Helpers for tests that evaluate in a real tree (this crate's and
//! cuwheel's): a temporary project, and a plain [`ProjectFiles`] over it.
//!
//! In: the files (path, text) a test's project holds. Out: the tree, its
//! canonical root, and [`Plain`], which reads any file under the root and
//! matches globs with a small matcher (`*`, `?`, `**`), not the host's.

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
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        let mut found = Vec::new();
        let mut pending = vec![PathBuf::new()];
        while let Some(dir) = pending.pop() {
            let entries = fs::read_dir(root.join(&dir)).map_err(|e| e.to_string())?;
            for entry in entries {
                let entry = entry.map_err(|e| e.to_string())?;
                let rel = dir.join(entry.file_name());
                if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
                    pending.push(rel);
                } else {
                    let names: Vec<String> = rel
                        .iter()
                        .map(|n| n.to_string_lossy().into_owned())
                        .collect();
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    if path_matches(&parts, &names) {
                        found.push(rel);
                    }
                }
            }
        }
        found.sort();
        Ok(found)
    }
}

fn path_matches(parts: &[&str], names: &[&str]) -> bool {
    match (parts.split_first(), names.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => {
            path_matches(rest, names)
                || names
                    .split_first()
                    .is_some_and(|(_, more)| path_matches(parts, more))
        }
        (Some((part, rest)), Some((name, more))) => {
            name_matches(part.as_bytes(), name.as_bytes()) && path_matches(rest, more)
        }
        _ => false,
    }
}

fn name_matches(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => {
            name_matches(rest, name)
                || name
                    .split_first()
                    .is_some_and(|(_, more)| name_matches(pattern, more))
        }
        (Some((b'?', rest)), Some((_, more))) => name_matches(rest, more),
        (Some((p, rest)), Some((n, more))) => p == n && name_matches(rest, more),
        _ => false,
    }
}
