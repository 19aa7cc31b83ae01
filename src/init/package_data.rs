//! The package directories setup.py names, and the data files it ships in
//! them.
//!
//! In: the project root and the evaluated `setup(...)` call: `packages`,
//! `package_dir`, `py_modules`, `package_data`, `include_package_data`.
//! Out: [`Inferred::packages`] and [`Inferred::package_include`], with a
//! [`Finding`](super::model::Finding) for what cuwheel cannot write.
//!
//! `include_package_data=True` makes setuptools ship every data file in
//! the package directories that the sdist's manifest (MANIFEST.in) lists.
//! setup() need not say it: with a `[project]` table in pyproject.toml,
//! setuptools' default is true.
//! Where the project is an unpacked sdist, its `*.egg-info/SOURCES.txt` is
//! that manifest, and those files become `package-include` entries: a
//! directory's `*` where it ships all its files, else the files. Outside an
//! sdist the manifest is not known, and a finding says what the package
//! directories hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::extract::strings;
use super::model::Inferred;
use super::python::{Call, Value};
use crate::spec::package::shipped_by_default;

/// setuptools' `include_package_data` where setup() does not pass it:
/// `[tool.setuptools] include-package-data` of pyproject.toml, whose
/// default is true wherever pyproject.toml has a `[project]` table
/// (setuptools 61 and later read the project's configuration from there);
/// false otherwise.
fn pyproject_includes_package_data(root: &Path) -> bool {
    let Some(table) = super::pyproject::existing(root) else {
        return false;
    };
    let stated = table
        .get("tool")
        .and_then(|t| t.get("setuptools"))
        .and_then(|t| t.get("include-package-data"))
        .and_then(toml::Value::as_bool);
    stated.unwrap_or_else(|| table.get("project").is_some_and(toml::Value::is_table))
}

/// `packages`, `package_dir`, `package_data`, `include_package_data`.
pub fn infer(root: &Path, setup: &Call, inferred: &mut Inferred) {
    let at = setup.at.clone();
    let mut base = String::new();
    if let Some(Value::Dict(dirs)) = setup.arg("package_dir", None) {
        for (k, v) in dirs.borrow().iter() {
            match (k.as_str(), v.as_str()) {
                (Some(""), Some(dir)) => base = format!("{}/", dir.trim_end_matches('/')),
                _ => inferred.find(
                    "tool.cuwheel.packages",
                    format!(
                        "{at}: package_dir maps {} to {}",
                        k.repr().unwrap_or_default(),
                        v.repr().unwrap_or_default()
                    ),
                    "list the package directories in packages by hand",
                ),
            }
        }
    }
    let dotted = strings(
        setup.arg("packages", None),
        "tool.cuwheel.packages",
        &at,
        inferred,
    );
    let mut dirs: Vec<String> = Vec::new();
    for package in &dotted {
        let top = package.split('.').next().unwrap_or(package);
        let dir = format!("{base}{top}");
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    if !strings(
        setup.arg("py_modules", None),
        "tool.cuwheel.packages",
        &at,
        inferred,
    )
    .is_empty()
    {
        inferred.find(
            "tool.cuwheel.packages",
            format!("{at}: py_modules (single-file modules) are not shipped by cuwheel"),
            "move them into a package directory listed in packages",
        );
    }
    if let Some(Value::Dict(data)) = setup.arg("package_data", None) {
        for (k, v) in data.borrow().iter() {
            let Some(package) = k.as_str() else { continue };
            let targets: Vec<String> = if package.is_empty() {
                dirs.iter().map(|d| format!("{d}/**")).collect()
            } else {
                vec![format!("{base}{}", package.replace('.', "/"))]
            };
            for pattern in strings(Some(v), "tool.cuwheel.package-include", &at, inferred) {
                for target in &targets {
                    let glob = format!("{target}/{pattern}");
                    if !inferred.package_include.contains(&glob) {
                        inferred.package_include.push(glob);
                    }
                }
            }
        }
    }
    let include_package_data = match setup.arg("include_package_data", None) {
        Some(v) => v.truth() == Some(true),
        None => pyproject_includes_package_data(root),
    };
    if include_package_data {
        let covered = |inferred: &Inferred, f: &String| {
            inferred
                .package_include
                .iter()
                .any(|g| crate::spec::glob::Pattern::parse(g).is_ok_and(|p| p.matches(f)))
        };
        match super::sdist_record::sources(root) {
            Some((_, listed)) => {
                let data: Vec<String> = manifest_data(root, &listed, &dirs)
                    .into_iter()
                    .filter(|f| !covered(inferred, f))
                    .collect();
                for entry in grouped(root, &data) {
                    if !inferred.package_include.contains(&entry) {
                        inferred.package_include.push(entry);
                    }
                }
                if setup.arg("exclude_package_data", None).is_some() {
                    inferred.find(
                        "tool.cuwheel.package-exclude",
                        format!("{at}: exclude_package_data is not read"),
                        "add package-exclude globs for the files it names",
                    );
                }
            }
            None => {
                let data = data_files(root, &dirs);
                let missing: Vec<&String> = data.iter().filter(|f| !covered(inferred, f)).collect();
                if !missing.is_empty() {
                    let shown: Vec<&str> = missing.iter().take(5).map(|s| s.as_str()).collect();
                    let more = if missing.len() > 5 {
                        format!(" and {} more", missing.len() - 5)
                    } else {
                        String::new()
                    };
                    inferred.find(
                        "tool.cuwheel.package-include",
                        format!("{at}: include_package_data ships the data files MANIFEST.in selects, which only an sdist records; the packages hold {}{more}", shown.join(", ")),
                        "add package-include globs for the ones the wheel needs",
                    );
                }
            }
        }
    }
    inferred.packages = dirs;
}

/// Files under the package dirs that cuwheel does not ship by default.
fn data_files(root: &Path, dirs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = dirs.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().to_string();
            let rel = format!("{dir}/{name}");
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            if entry.path().is_dir() {
                pending.push(rel);
            } else if is_data(&name) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// A file name package data is made of: not shipped by default (`.py`,
/// `.pyi`, `py.typed`) and not a built module (`.so`).
fn is_data(name: &str) -> bool {
    !shipped_by_default(name) && !name.ends_with(".so")
}

/// The files of an sdist's manifest that setuptools ships as package data:
/// in a package directory, not shipped by default, and present.
fn manifest_data(root: &Path, listed: &[String], dirs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = listed
        .iter()
        // A plain relative path (no `..`, `.` or empty part) in a package dir.
        .filter(|f| f.split('/').all(|c| !c.is_empty() && c != "." && c != ".."))
        .filter(|f| dirs.iter().any(|d| f.starts_with(&format!("{d}/"))))
        // No path named `.git` can be shipped: git never tracks one, so the
        // flake's copy of the project lacks it (gsplat's sdist lists a stray
        // `third_party/glm/.git` link file, which its own wheel keeps).
        .filter(|f| {
            is_data(f.rsplit('/').next().unwrap_or(f))
                && !f
                    .split('/')
                    .any(|part| part == "__pycache__" || part == ".git")
        })
        .filter(|f| root.join(f).is_file())
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `dir/*` for a directory all of whose data files are in `data`, else the
/// files themselves.
fn grouped(root: &Path, data: &[String]) -> Vec<String> {
    let mut by_dir: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for file in data {
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
        by_dir.entry(dir).or_default().insert(name);
    }
    let mut out = Vec::new();
    for (dir, names) in by_dir {
        let on_disk: BTreeSet<String> = fs::read_dir(root.join(dir))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.path().is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| is_data(n))
                    .collect()
            })
            .unwrap_or_default();
        // `*` matches no leading `.` (as in the shell): hidden files are
        // named one by one.
        let (hidden, plain): (BTreeSet<&str>, BTreeSet<&str>) =
            names.into_iter().partition(|n| n.starts_with('.'));
        let all_plain = on_disk
            .iter()
            .filter(|n| !n.starts_with('.'))
            .all(|n| plain.contains(n.as_str()));
        if !dir.is_empty() && !plain.is_empty() && all_plain {
            out.push(format!("{dir}/*"));
        } else {
            out.extend(plain.iter().map(|n| format!("{dir}/{n}")));
        }
        out.extend(hidden.iter().map(|n| format!("{dir}/{n}")));
    }
    out
}
