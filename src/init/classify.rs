//! Which translation units see Python: kernels and bindings, by includes.
//!
//! In: the project root, a TU (relative to it) and the include directories
//! its module compiles with. Out: a [`TuClass`] — whether the TU reaches a
//! Python header (and through which chain of project headers), and the
//! binding flavour its includes and registrations point to.
//!
//! The scan follows `#include "x"` (beside the including file, then the
//! include dirs) and `#include <x>` (the include dirs) through the
//! project's own headers, transitively. Every include counts, conditional
//! or not (an `#ifdef WITH_PYTHON` include of `Python.h` makes a binding).
//! A header outside the project is judged by its name ([`PYTHON_HEADERS`]).
//! `<torch/torch.h>` and `<torch/script.h>` count as Python-free:
//! `torch/torch.h` includes `torch/extension.h` only when
//! `TORCH_API_INCLUDE_EXTENSION_H` is defined (torch 2.11's header), which
//! a kernel's compile must then not define.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Headers outside the project that bring in Python, by name: an exact
/// name, or a prefix ending in `/`.
const PYTHON_HEADERS: [&str; 6] = [
    "Python.h",
    "structmember.h",
    "pybind11/",
    "torch/extension.h",
    "torch/python.h",
    "numpy/",
];

/// Of those, the ones that mean pybind11 (per-Python builds).
const PYBIND_HEADERS: [&str; 3] = ["pybind11/", "torch/extension.h", "torch/python.h"];

/// Whether an outside header name matches one of `list`, or is one of
/// torch's internal Python headers (`torch/csrc/utils/pybind.h`,
/// `torch/csrc/autograd/python_variable.h`).
fn named_in(name: &str, list: &[&str]) -> bool {
    let torch_python =
        name.starts_with("torch/csrc/") && (name.contains("python") || name.contains("pybind"));
    torch_python
        || list.iter().any(|h| {
            if h.ends_with('/') {
                name.starts_with(h)
            } else {
                name == *h
            }
        })
}

/// The binding flavours, least portable first (see CONFIG-V2: a module
/// built for a flavour may use the bindings of a more portable one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flavour {
    Pybind11,
    TorchLibrary,
    TorchStable,
}

impl Flavour {
    pub fn as_str(self) -> &'static str {
        match self {
            Flavour::Pybind11 => "pybind11",
            Flavour::TorchLibrary => "torch-library",
            Flavour::TorchStable => "torch-stable",
        }
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the include scan found for one TU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuClass {
    /// How the TU reaches Python (`csrc/ops.cu includes "grouped_gemm.h",
    /// which includes <torch/extension.h>`); `None` for a kernel.
    pub python: Option<String>,
    /// The flavour its includes and text point to, if it is a binding.
    pub flavour: Option<Flavour>,
    /// Whether it registers ops or defines a module (`TORCH_LIBRARY`,
    /// `PYBIND11_MODULE`, `PyInit_`): a binding candidate even without
    /// Python includes.
    pub registers: bool,
    /// The project headers it reaches.
    pub headers: BTreeSet<PathBuf>,
}

/// One file's includes and markers, read once.
#[derive(Debug, Clone, Default)]
struct FileScan {
    /// (name, whether quoted).
    includes: Vec<(String, bool)>,
    pybind_module: bool,
    torch_library: bool,
    stable_library: bool,
    py_init: bool,
}

/// Scans TUs, caching each file's includes.
#[derive(Default)]
pub struct Classifier {
    root: PathBuf,
    cache: HashMap<PathBuf, FileScan>,
}

impl Classifier {
    pub fn new(root: &Path) -> Classifier {
        Classifier {
            root: root.to_path_buf(),
            cache: HashMap::new(),
        }
    }

    fn scan(&mut self, file: &Path) -> Result<FileScan> {
        if let Some(scan) = self.cache.get(file) {
            return Ok(scan.clone());
        }
        let bytes = fs::read(self.root.join(file))
            .with_context(|| format!("cannot read {}", self.root.join(file).display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let scan = FileScan {
            includes: includes(&text),
            pybind_module: text.contains("PYBIND11_MODULE"),
            torch_library: text.contains("TORCH_LIBRARY") || text.contains("RegisterOperators"),
            stable_library: text.contains("STABLE_TORCH_LIBRARY"),
            py_init: text.contains("PyInit_") || text.contains("PyMODINIT_FUNC"),
        };
        self.cache.insert(file.to_path_buf(), scan.clone());
        Ok(scan)
    }

    /// Classifies `tu` (relative to the root) compiled with `include_dirs`.
    pub fn classify(&mut self, tu: &Path, include_dirs: &[PathBuf]) -> Result<TuClass> {
        // Breadth first, so the chain reported for Python is a shortest one.
        let mut queue: Vec<(PathBuf, Vec<String>)> = vec![(tu.to_path_buf(), Vec::new())];
        let mut seen: BTreeSet<PathBuf> = BTreeSet::from([tu.to_path_buf()]);
        let mut python: Option<String> = None;
        let (mut pybind, mut stable_header) = (false, false);
        let (mut pybind_module, mut torch_library, mut stable_library, mut py_init) =
            (false, false, false, false);
        let mut next = 0;
        while next < queue.len() {
            let (file, chain) = queue[next].clone();
            next += 1;
            let scan = self.scan(&file)?;
            pybind_module |= scan.pybind_module;
            torch_library |= scan.torch_library;
            stable_library |= scan.stable_library;
            py_init |= scan.py_init;
            for (name, quoted) in &scan.includes {
                let spelled = if *quoted {
                    format!("\"{name}\"")
                } else {
                    format!("<{name}>")
                };
                match self.resolve(&file, name, *quoted, include_dirs) {
                    Some(header) => {
                        if seen.insert(header.clone()) {
                            let mut longer = chain.clone();
                            longer.push(format!("{spelled} ({})", header.display()));
                            queue.push((header, longer));
                        }
                    }
                    None => {
                        stable_header |= name.starts_with("torch/csrc/stable/");
                        if named_in(name, &PYTHON_HEADERS) {
                            pybind |= named_in(name, &PYBIND_HEADERS);
                            if python.is_none() {
                                let mut steps = chain.clone();
                                steps.push(spelled);
                                python = Some(format!(
                                    "{} includes {}",
                                    tu.display(),
                                    steps.join(", which includes ")
                                ));
                            }
                        }
                    }
                }
            }
        }
        let flavour = if pybind || pybind_module {
            Some(Flavour::Pybind11)
        } else if stable_library || stable_header {
            Some(Flavour::TorchStable)
        } else if torch_library {
            Some(Flavour::TorchLibrary)
        } else {
            None
        };
        seen.remove(tu);
        Ok(TuClass {
            python,
            flavour,
            registers: pybind_module || torch_library || stable_library || py_init,
            headers: seen,
        })
    }

    /// The project file an include names, if it is one.
    fn resolve(
        &self,
        from: &Path,
        name: &str,
        quoted: bool,
        include_dirs: &[PathBuf],
    ) -> Option<PathBuf> {
        let beside = from.parent().map(|dir| dir.join(name));
        let candidates = quoted
            .then_some(beside)
            .flatten()
            .into_iter()
            .chain(include_dirs.iter().map(|d| d.join(name)));
        for candidate in candidates {
            let normal = crate::init::python::normpath(&candidate.to_string_lossy());
            if normal.starts_with("../") || normal == ".." || normal.starts_with('/') {
                continue;
            }
            let path = PathBuf::from(normal);
            if self.root.join(&path).is_file() {
                return Some(path);
            }
        }
        None
    }
}

/// The `#include` lines of a C++ file: (name, quoted).
pub fn includes(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let (close, quoted) = match rest.chars().next()? {
                '"' => ('"', true),
                '<' => ('>', false),
                _ => return None,
            };
            let (name, _) = rest[1..].split_once(close)?;
            Some((name.to_string(), quoted))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_read_with_their_form() {
        let text = "#include <ATen/ATen.h>\n  #  include \"a.h\" // c\n// #include <Python.h>\n#define X\n";
        assert_eq!(
            includes(text),
            [
                ("ATen/ATen.h".to_string(), false),
                ("a.h".to_string(), true)
            ]
        );
    }

    #[test]
    fn python_is_found_through_project_headers() {
        let (_dir, root) = cuwheel_pyeval::test_support::write_tree(&[
            (
                "csrc/ops.cu",
                "#include \"ops.h\"\n#include <ATen/ATen.h>\n",
            ),
            ("csrc/ops.h", "#include <torch/extension.h>\n"),
            (
                "csrc/kernel.cu",
                "#include <mylib/util.cuh>\n#include <ATen/cuda/CUDAContext.h>\n",
            ),
            (
                "csrc/include/mylib/util.cuh",
                "#include \"../../common.h\"\n",
            ),
            ("csrc/common.h", "#include <torch/torch.h>\n"),
            (
                "csrc/fps.cpp",
                "#ifdef WITH_PYTHON\n#include <Python.h>\n#endif\nstatic auto r = torch::RegisterOperators();\n",
            ),
        ]);
        let mut classifier = Classifier::new(&root);
        let include_dirs = [PathBuf::from("csrc/include")];
        let ops = classifier
            .classify(Path::new("csrc/ops.cu"), &include_dirs)
            .unwrap();
        assert_eq!(
            ops.python.as_deref(),
            Some("csrc/ops.cu includes \"ops.h\" (csrc/ops.h), which includes <torch/extension.h>")
        );
        assert_eq!(ops.flavour, Some(Flavour::Pybind11));
        let kernel = classifier
            .classify(Path::new("csrc/kernel.cu"), &include_dirs)
            .unwrap();
        assert_eq!(kernel.python, None);
        assert_eq!(
            kernel
                .headers
                .iter()
                .map(|h| h.to_str().unwrap())
                .collect::<Vec<_>>(),
            ["csrc/common.h", "csrc/include/mylib/util.cuh"]
        );
        // Without the include dir the header is not the project's: still a kernel.
        assert_eq!(
            classifier
                .classify(Path::new("csrc/kernel.cu"), &[])
                .unwrap()
                .python,
            None
        );
        let fps = classifier.classify(Path::new("csrc/fps.cpp"), &[]).unwrap();
        assert!(fps.python.is_some());
        assert_eq!(fps.flavour, Some(Flavour::TorchLibrary));
        assert!(fps.registers);
    }
}
