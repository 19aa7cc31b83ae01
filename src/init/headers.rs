//! The Python headers init names for a Python no Debian suite carries.
//!
//! In: the matrix's Pythons and the directories of user-supplied archives
//! (`--archives DIR`, then `$CUWHEEL_ARCHIVES`, as `cuwheel lock` reads
//! them). Out: for each Python without a Debian suite
//! (crates/cuwheel-build/src/lock/data/debian.toml `[python-suites]`), the first archive in
//! those directories (by name) that holds its `Python.h` and `pyconfig.h`,
//! with its sha256 — written as `[tool.cuwheel.matrix.python-headers."X.Y"]`
//! — or a note saying how to supply one. Only the file's name is written:
//! `cuwheel lock` and `cuwheel fetch` find it in the same directories.

use std::fs;
use std::path::{Path, PathBuf};

use crate::registry::archive;
use crate::spec::PythonAbi;

/// A header archive found for one Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub python: String,
    /// The file's name in its directory.
    pub file: String,
    pub sha256: String,
    /// Where it was found, for the report.
    pub path: PathBuf,
}

/// What was found, and a note for each Python nothing was found for.
#[derive(Debug, Default)]
pub struct Headers {
    pub found: Vec<Found>,
    pub notes: Vec<String>,
}

/// Looks for the headers of each of `pythons` Debian does not carry.
pub fn find(pythons: &[String], given: &[PathBuf]) -> Headers {
    let carried = super::matrix::header_pythons();
    let dirs = archive::archive_dirs(given);
    let mut out = Headers::default();
    for text in pythons {
        let Ok(python) = text.parse::<PythonAbi>() else {
            continue;
        };
        if carried.contains(&python) {
            continue;
        }
        match dirs.iter().find_map(|dir| in_dir(dir, python)) {
            Some((file, path, sha256)) => out.found.push(Found {
                python: text.clone(),
                file,
                sha256,
                path,
            }),
            None => out.notes.push(format!(
                "no Debian suite carries Python {text}'s headers and no archive of them was \
                 found{}: put one (a tar of include/python{text}/ with its pyconfig.h, or a \
                 python-build-standalone release) in a directory and pass --archives DIR, or \
                 set CUWHEEL_ARCHIVES=DIR",
                if dirs.is_empty() {
                    String::new()
                } else {
                    format!(
                        " in {}",
                        dirs.iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )),
        }
    }
    out
}

/// The first archive in `dir`, by name, that holds `python`'s headers.
fn in_dir(dir: &Path, python: PythonAbi) -> Option<(String, PathBuf, String)> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            [".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.zst"]
                .iter()
                .any(|s| n.ends_with(s))
        })
        .collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let path = dir.join(&name);
        archive::inspect(&path, python).ok()?;
        let (sha256, _) = crate::registry::downloads::sha256_file(&path).ok()?;
        Some((name, path, sha256))
    })
}

/// The tables init writes for what was found.
pub fn render(found: &[Found]) -> String {
    let mut text = String::new();
    for f in found {
        text.push_str(&format!(
            "\n# Python {}'s headers: no Debian suite carries them; the archive init found in \
             {} (pass its directory to `cuwheel lock` and `cuwheel fetch` with --archives, or \
             in CUWHEEL_ARCHIVES).\n[tool.cuwheel.matrix.python-headers.\"{}\"]\nfile = {}\n\
             sha256 = \"{}\"\n",
            f.python,
            f.path
                .parent()
                .map_or(String::new(), |p| p.display().to_string()),
            f.python,
            super::render::quote(&f.file),
            f.sha256
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_debian_carries_needs_no_archive() {
        let carried = super::super::matrix::header_pythons()[0].to_string();
        let headers = find(&[carried], &[]);
        assert!(headers.found.is_empty() && headers.notes.is_empty());
    }

    #[test]
    fn a_python_without_a_suite_or_archive_gets_a_note_naming_the_fix() {
        let empty = tempfile::tempdir().unwrap();
        let headers = find(&["3.10".into()], &[empty.path().to_path_buf()]);
        assert!(headers.found.is_empty());
        assert!(
            headers.notes[0].contains("Python 3.10's headers"),
            "{:?}",
            headers.notes
        );
        assert!(headers.notes[0].contains("--archives DIR"));
    }

    #[test]
    fn the_archive_holding_the_headers_is_found_and_hashed() {
        // The demo's archive of Ubuntu 24.04's CPython 3.12 headers, beside
        // a file that is not an archive of them.
        let demo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/demo-ext/archives/python3.12-headers.tar");
        let archives = tempfile::tempdir().unwrap();
        fs::write(archives.path().join("a-not-headers.tar.gz"), "not a tar").unwrap();
        fs::copy(&demo, archives.path().join("py312.tar")).unwrap();
        let headers = find(&["3.12".into()], &[archives.path().to_path_buf()]);
        assert_eq!(headers.found.len(), 1, "{:?}", headers.notes);
        assert_eq!(headers.found[0].file, "py312.tar");
        let (sha, _) = crate::registry::downloads::sha256_file(&demo).unwrap();
        assert_eq!(headers.found[0].sha256, sha);
        let text = render(&headers.found);
        assert!(
            text.contains("[tool.cuwheel.matrix.python-headers.\"3.12\"]\nfile = \"py312.tar\""),
            "{text}"
        );
        // What init writes is a config cuwheel reads.
        let config = format!(
            "[project]\nname = \"x\"\nversion = \"1\"\n[tool.cuwheel]\nmodule = \"x._C\"\nbindings = [\"b.cpp\"]\n\
             binding = \"pybind11\"\ncuda-archs = [\"9.0\"]\nbaseline = \"manylinux_2_31\"\n\
             [tool.cuwheel.matrix]\ntorch = [\"2.11\"]\npython = [\"3.12\"]\n{text}"
        );
        let parsed = crate::spec::Config::parse(&config, Path::new("pyproject.toml"));
        assert!(parsed.is_ok(), "{:?}\n{config}", parsed.err());
    }
}
