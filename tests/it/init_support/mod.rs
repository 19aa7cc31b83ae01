//! What the `init_*` tests share: a project tree in a temporary directory,
//! and init's findings and assumptions to search.

// The first tier uses a part of this; the integration tier, all of it.
#![cfg_attr(not(feature = "integration"), allow(dead_code))]

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

/// A one-package setup.py project named `tiny` (its `tiny/__init__.py`
/// empty), with `setup_py` and each (path, text) of `sources` under it;
/// the directory guard and the project's path.
pub fn tiny_project(setup_py: &str, sources: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let setup = ("tiny/setup.py".to_owned(), setup_py.to_owned());
    let package = ("tiny/tiny/__init__.py".to_owned(), String::new());
    let files: Vec<(String, String)> = [setup, package]
        .into_iter()
        .chain(
            sources
                .iter()
                .map(|(p, t)| (format!("tiny/{p}"), (*t).to_owned())),
        )
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (dir, root) = tree(&refs);
    (dir, root.join("tiny"))
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
