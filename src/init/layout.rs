//! Inference without setup.py: from the source tree and the package layout.
//!
//! In: the project root. Out: an [`Inferred`] project with one module —
//! every translation unit under `csrc/` (or, without one, the tree outside
//! tests, docs, build output and vendored code), split into kernels and
//! bindings by their includes, each binding under its own flavour (they are
//! alternatives, as in the demo); the include dirs that resolve the
//! project's `#include <...>` lines; the module's name from a binding's
//! `PyInit_` or the package's `from pkg import _C`; the packages (root
//! directories with an `__init__.py`); and the version from a
//! `__version__` literal or a `VERSION` file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::classify::{Classifier, includes};
use super::model::{Inferred, Module, VersionSource};
use super::python::parse_module;
use super::python::{ExprKind, Stmt, StmtKind};

/// C++/CUDA translation units, by extension.
const TU_EXTENSIONS: [&str; 4] = ["cu", "cpp", "cc", "cxx"];
/// Directories never searched for sources.
const SKIPPED_DIRS: [&str; 12] = [
    "build",
    "dist",
    "third_party",
    "3rdparty",
    "vendor",
    "external",
    "tests",
    "test",
    "docs",
    "examples",
    "benchmarks",
    "node_modules",
];

pub fn from_tree(root: &Path) -> Result<Inferred> {
    let mut inferred = Inferred::default();
    let source_root = if root.join("csrc").is_dir() {
        PathBuf::from("csrc")
    } else {
        PathBuf::new()
    };
    let mut files = Vec::new();
    walk(root, &source_root, &mut files);
    files.sort();
    let tus: Vec<PathBuf> = files
        .iter()
        .filter(|f| {
            f.extension()
                .is_some_and(|e| TU_EXTENSIONS.iter().any(|t| e == *t))
        })
        .cloned()
        .collect();
    let where_ = if source_root.as_os_str().is_empty() {
        "the project".to_string()
    } else {
        format!("{}/", source_root.display())
    };
    if tus.is_empty() {
        inferred.find(
            "tool.cuwheel.kernels",
            format!("no setup.py, and no .cu or .cpp file in {where_}"),
            "list the kernel and binding sources in kernels and bindings",
        );
    }
    let include_dirs = include_dirs(root, &tus, &files)?;
    let dirs: Vec<PathBuf> = include_dirs.iter().map(PathBuf::from).collect();
    let mut classifier = Classifier::new(root);
    let mut module = Module {
        cuda: true,
        include_dirs: include_dirs.clone(),
        ..Module::default()
    };
    let mut leaf: Option<String> = None;
    for tu in &tus {
        let class = classifier.classify(tu, &dirs)?;
        if module.add_source(tu.to_string_lossy().to_string(), &class) && leaf.is_none() {
            leaf = py_init_name(&fs::read_to_string(root.join(tu)).unwrap_or_default());
        }
    }
    if module.bindings.is_empty() && !tus.is_empty() {
        inferred.find(
            "tool.cuwheel.bindings",
            format!("no source in {where_} includes Python, so none can be a binding"),
            "name the TU that defines the module (PYBIND11_MODULE, TORCH_LIBRARY or PyInit_) in bindings",
        );
    }
    inferred.packages = packages(root);
    let packages = inferred.packages.clone();
    module.name = module_name(root, &packages, leaf, &mut inferred);
    inferred.modules.push(module);
    inferred.find(
        "tool.cuwheel",
        "there is no setup.py: compile flags, defines and archs were not stated anywhere; cuwheel's defaults were written",
        "add nvcc-flags, cxx-flags, defines and cuda-archs if the build needs them",
    );
    version(root, &packages, &mut inferred);
    super::metadata::decide_license(root, None, "the source tree", &mut inferred);
    Ok(inferred)
}

/// Regular files under `dir`, relative to the root, skipping hidden,
/// vendored and test directories.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().to_string();
        let rel = dir.join(&name);
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !name.starts_with('.')
                && !SKIPPED_DIRS.contains(&name.as_str())
                && !name.ends_with(".egg-info")
            {
                walk(root, &rel, out);
            }
        } else if kind.is_file() {
            out.push(rel);
        }
    }
}

/// The directories that make the project's `#include <a/b.h>` (and quoted
/// includes not found beside their file) resolve: for each such include
/// naming a project file `D/a/b.h`, `D`. Followed through the headers
/// found, until nothing new turns up.
fn include_dirs(root: &Path, tus: &[PathBuf], files: &[PathBuf]) -> Result<Vec<String>> {
    let mut dirs: BTreeSet<String> = BTreeSet::new();
    let mut pending: Vec<PathBuf> = tus.to_vec();
    let mut seen: BTreeSet<PathBuf> = pending.iter().cloned().collect();
    while let Some(file) = pending.pop() {
        let text = fs::read(root.join(&file))
            .map(|b| String::from_utf8_lossy(&b).to_string())
            .unwrap_or_default();
        for (name, quoted) in includes(&text) {
            let beside = file.parent().map(|d| d.join(&name));
            if quoted && beside.as_ref().is_some_and(|b| root.join(b).is_file()) {
                if let Some(b) = beside.filter(|b| seen.insert(b.clone())) {
                    pending.push(b);
                }
                continue;
            }
            let suffix = format!("/{name}");
            let found = files
                .iter()
                .find(|f| f.to_string_lossy().ends_with(&suffix) || f.to_string_lossy() == name);
            if let Some(found) = found {
                let full = found.to_string_lossy();
                let dir = full[..full.len() - name.len()]
                    .trim_end_matches('/')
                    .to_string();
                dirs.insert(if dir.is_empty() { ".".into() } else { dir });
                if seen.insert(found.clone()) {
                    pending.push(found.clone());
                }
            }
        }
    }
    Ok(dirs.into_iter().collect())
}

/// `PyInit__C` → `_C`.
fn py_init_name(text: &str) -> Option<String> {
    let start = text.find("PyInit_")? + "PyInit_".len();
    let name: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Root directories holding an `__init__.py`, sorted.
fn packages(root: &Path) -> Vec<String> {
    super::metadata::root_names(root, |n| {
        !n.starts_with('.')
            && !SKIPPED_DIRS.contains(&n)
            && root.join(n).join("__init__.py").is_file()
    })
}

/// The module's dotted name: the package that imports an extension-only
/// submodule (`from demo_ext import _C` with no `demo_ext/_C.py`), with
/// the binding's `PyInit_` name, else the first package's `_C`.
fn module_name(
    root: &Path,
    packages: &[String],
    leaf: Option<String>,
    inferred: &mut Inferred,
) -> String {
    let mut imported: BTreeMap<String, String> = BTreeMap::new();
    for package in packages {
        let mut files = Vec::new();
        walk(root, Path::new(package), &mut files);
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "py"))
        {
            let Ok(text) = fs::read_to_string(root.join(file)) else {
                continue;
            };
            let Ok(body) = parse_module(&text) else {
                continue;
            };
            for stmt in &body {
                let candidates: Vec<String> = match &stmt.kind {
                    StmtKind::ImportFrom {
                        module,
                        level: 0,
                        names,
                    } => {
                        let mut c: Vec<String> =
                            names.iter().map(|(n, _)| format!("{module}.{n}")).collect();
                        c.push(module.clone());
                        c
                    }
                    StmtKind::ImportFrom {
                        module,
                        level: 1,
                        names,
                    } if module.is_empty() => {
                        let here = file
                            .parent()
                            .map(|p| p.to_string_lossy().replace('/', "."))
                            .unwrap_or_default();
                        names.iter().map(|(n, _)| format!("{here}.{n}")).collect()
                    }
                    StmtKind::Import(names) => names.iter().map(|(n, _)| n.clone()).collect(),
                    _ => Vec::new(),
                };
                for dotted in candidates {
                    let path: PathBuf = dotted.split('.').collect();
                    let in_package = packages
                        .iter()
                        .any(|p| dotted.starts_with(&format!("{p}.")));
                    let exists =
                        root.join(path.with_extension("py")).is_file() || root.join(&path).is_dir();
                    if in_package && !exists {
                        imported.insert(dotted, file.to_string_lossy().to_string());
                    }
                }
            }
        }
    }
    let by_leaf = leaf.as_ref().and_then(|l| {
        imported
            .keys()
            .find(|d| d.ends_with(&format!(".{l}")))
            .cloned()
    });
    if let Some(name) = by_leaf.or_else(|| {
        (imported.len() == 1)
            .then(|| imported.keys().next().cloned())
            .flatten()
    }) {
        return name;
    }
    let guess = match (packages.first(), &leaf) {
        (Some(p), Some(l)) => format!("{p}.{l}"),
        (Some(p), None) => format!("{p}._C"),
        (None, Some(l)) => l.clone(),
        (None, None) => "_C".into(),
    };
    inferred.find(
        "tool.cuwheel.module",
        format!(
            "no package imports an extension module cuwheel can recognise; `{guess}` was written"
        ),
        "write the extension's dotted module name, like module = \"pkg._C\"",
    );
    guess
}

/// `__version__ = "..."` in the first package's `__init__.py`, or a
/// `VERSION` file.
fn version(root: &Path, packages: &[String], inferred: &mut Inferred) {
    for package in packages {
        let file = format!("{package}/__init__.py");
        let assigns_version = |s: &Stmt| {
            matches!(&s.kind, StmtKind::Assign { targets, value }
                if targets.iter().any(|t| matches!(&t.kind, ExprKind::Name(n) if n == "__version__"))
                    && matches!(value.kind, ExprKind::Const(_)))
        };
        let literal_version = fs::read_to_string(root.join(&file))
            .ok()
            .and_then(|text| parse_module(&text).ok())
            .is_some_and(|body| body.iter().any(assigns_version));
        if literal_version {
            inferred.meta.version = Some(VersionSource::Attr(format!("{package}.__version__")));
            return;
        }
    }
    if root.join("VERSION").is_file() {
        inferred.meta.version = Some(VersionSource::File("VERSION".into()));
    }
}
