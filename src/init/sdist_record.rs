//! What an sdist recorded when it was made.
//!
//! In: a project root. Out: where the tree is an unpacked setuptools sdist
//! (`PKG-INFO` at the root and one `*.egg-info/`), the requirements its
//! `requires.txt` lists — what setup.py computed on the machine that made
//! the sdist, including choices that depend on what was installed there
//! (mmcv 2.2.0 adds `opencv-python>=3` only when `import cv2` fails) — and
//! the files its `SOURCES.txt` lists. [`parse`] is pure; [`read`] and
//! [`sources`] find the files.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// An sdist's recorded requirements.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    /// The file, relative to the root (`mmcv.egg-info/requires.txt`).
    pub file: String,
    pub dependencies: Vec<String>,
    pub extras: BTreeMap<String, Vec<String>>,
}

/// The recorded requirements of the sdist unpacked at `root`, if it is one.
pub fn read(root: &Path) -> Option<Recorded> {
    let (file, text) = record(root, "requires.txt")?;
    let (dependencies, extras) = parse(&text);
    Some(Recorded {
        file,
        dependencies,
        extras,
    })
}

/// The files the sdist unpacked at `root` was made of, as its
/// `*.egg-info/SOURCES.txt` lists them (what MANIFEST.in and setuptools
/// selected), with that file's path; `None` where the tree is no sdist.
pub fn sources(root: &Path) -> Option<(String, Vec<String>)> {
    let (file, text) = record(root, "SOURCES.txt")?;
    let files = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    Some((file, files))
}

/// `<name>.egg-info/<leaf>` and its text, where `root` is an unpacked sdist
/// (`PKG-INFO` at the root) with exactly one egg-info holding `leaf`.
fn record(root: &Path, leaf: &str) -> Option<(String, String)> {
    if !root.join("PKG-INFO").is_file() {
        return None;
    }
    let mut found = Vec::new();
    for entry in fs::read_dir(root).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".egg-info") && entry.path().join(leaf).is_file() {
            found.push(name);
        }
    }
    // Two records cannot both be this sdist's: trust neither.
    let [dir] = found.as_slice() else {
        return None;
    };
    let file = format!("{dir}/{leaf}");
    let text = fs::read_to_string(root.join(&file)).ok()?;
    Some((file, text))
}

/// setuptools' `requires.txt`: requirements, then `[extra]`, `[:marker]`
/// and `[extra:marker]` sections. A section's marker is appended to each of
/// its requirements (`regex; sys_platform == "win32"`).
pub fn parse(text: &str) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let mut dependencies = Vec::new();
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut section: (Option<String>, Option<String>) = (None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let (extra, marker) = match inner.split_once(':') {
                Some((e, m)) => (e.trim(), Some(m.trim().to_string())),
                None => (inner.trim(), None),
            };
            let extra = (!extra.is_empty()).then(|| extra.to_string());
            if let Some(extra) = &extra {
                extras.entry(extra.clone()).or_default();
            }
            section = (extra, marker);
            continue;
        }
        let requirement = match &section.1 {
            Some(marker) => format!("{line}; {marker}"),
            None => line.to_string(),
        };
        let list = match &section.0 {
            Some(extra) => extras.entry(extra.clone()).or_default(),
            None => &mut dependencies,
        };
        if !list.contains(&requirement) {
            list.push(requirement);
        }
    }
    (dependencies, extras)
}

/// Two requirement lists that say the same, spacing and quotes aside.
pub fn same_requirements(a: &[String], b: &[String]) -> bool {
    let norm = |list: &[String]| {
        let mut out: Vec<String> = list
            .iter()
            .map(|r| {
                r.chars()
                    .filter(|c| !c.is_whitespace())
                    .map(|c| if c == '\'' { '"' } else { c })
                    .collect::<String>()
                    .to_ascii_lowercase()
            })
            .collect();
        out.sort();
        out
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_become_extras_and_markers() {
        // The shape of mmcv 2.2.0's record.
        let (deps, extras) = parse(
            "addict\nnumpy\nopencv-python>=3\n\n[:sys_platform == \"win32\"]\nregex\n\n\
             [all]\nninja\nscipy\n\n[all:sys_platform == \"win32\"]\nregex\n\n[build]\n",
        );
        assert_eq!(
            deps,
            [
                "addict",
                "numpy",
                "opencv-python>=3",
                "regex; sys_platform == \"win32\""
            ]
        );
        assert_eq!(
            extras["all"],
            ["ninja", "scipy", "regex; sys_platform == \"win32\""]
        );
        assert!(extras["build"].is_empty());
    }

    #[test]
    fn only_an_unpacked_sdist_with_one_record_counts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join("x.egg-info")).unwrap();
        fs::write(root.join("x.egg-info/requires.txt"), "numpy\n").unwrap();
        // A checkout with a stale egg-info from `pip install -e`: no PKG-INFO.
        assert_eq!(read(root), None);
        fs::write(root.join("PKG-INFO"), "Metadata-Version: 2.1\n").unwrap();
        let recorded = read(root).unwrap();
        assert_eq!(recorded.file, "x.egg-info/requires.txt");
        assert_eq!(recorded.dependencies, ["numpy"]);
        fs::create_dir(root.join("y.egg-info")).unwrap();
        fs::write(root.join("y.egg-info/requires.txt"), "scipy\n").unwrap();
        assert_eq!(read(root), None);
    }
}
