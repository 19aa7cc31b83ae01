//! What the `init_*` tests share: a project tree in a temporary directory,
//! and init's findings and assumptions to search.

#![allow(dead_code)] // each test binary uses its own subset

use std::fs;
use std::path::PathBuf;

use cuwheel::init::model::Inferred;

/// `files` (path, text) written under a fresh temporary directory; the
/// directory (kept alive by the guard) and its canonical path.
pub fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (path, text) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, text).unwrap();
    }
    (dir, root)
}

/// Every finding, one a line, as a user reads them.
pub fn findings(inferred: &Inferred) -> String {
    inferred
        .findings
        .iter()
        .map(|f| format!("{f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of every assumption init noted, in order.
pub fn assumptions(inferred: &Inferred) -> Vec<&str> {
    inferred
        .assumptions
        .iter()
        .map(|n| n.text.as_str())
        .collect()
}
