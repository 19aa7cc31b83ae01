//! What `cuwheel init` infers about a project, before it is written.
//!
//! In: nothing (types only). Out: [`Inferred`] — the project metadata, the
//! extension modules with their sources split into kernels and bindings,
//! archs and package files — with a [`Finding`] for each thing that could
//! not be inferred and what to write there instead.

use std::collections::BTreeMap;
use std::fmt;

use super::classify::{Flavour, TuClass};
use super::python::Note;
use crate::spec::archs::ToolkitKey;
use crate::spec::target::CudaArch;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inferred {
    pub meta: Meta,
    pub modules: Vec<Module>,
    /// Empty when setup.py says nothing cuwheel can read.
    pub archs: Vec<CudaArch>,
    /// The archs of each toolkit, when setup.py computes them per toolkit
    /// and they differ (then `archs` is not written); empty otherwise.
    pub toolkit_archs: BTreeMap<ToolkitKey, Vec<CudaArch>>,
    /// Package directories shipped, relative to the root.
    pub packages: Vec<String>,
    pub package_include: Vec<String>,
    pub package_exclude: Vec<String>,
    /// setup.py's `BuildExtension(no_python_abi_suffix=True)`: modules
    /// named `<name>.so`.
    pub no_python_abi_suffix: bool,
    /// Each branch or value the evaluation assumed, with its source line.
    pub assumptions: Vec<Note>,
    pub findings: Vec<Finding>,
    /// What setup.py asked of the GPU torch runs on, in any evaluation.
    pub gpu: super::python::GpuQuestions,
}

/// `[project]`'s keys as setup.py gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub name: Option<String>,
    pub version: Option<VersionSource>,
    pub description: Option<String>,
    pub requires_python: Option<String>,
    pub dependencies: Vec<String>,
    pub optional_dependencies: BTreeMap<String, Vec<String>>,
    pub authors: Vec<Person>,
    pub maintainers: Vec<Person>,
    pub urls: BTreeMap<String, String>,
    pub classifiers: Vec<String>,
    pub keywords: Vec<String>,
    pub readme: Option<Readme>,
    pub license: Option<String>,
    pub license_files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSource {
    Static(String),
    /// A file whose whole text is the version (`VERSION`).
    File(String),
    /// A string literal assigned in a project module (`pkg.__version__`).
    Attr(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub name: Option<String>,
    pub email: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readme {
    File { path: String, content_type: String },
    Text { text: String, content_type: String },
}

impl Readme {
    /// The content type a readme file has by its extension (PEP 621's rule).
    pub fn content_type_of(path: &str) -> &'static str {
        if path.ends_with(".md") {
            "text/markdown"
        } else if path.ends_with(".rst") {
            "text/x-rst"
        } else {
            "text/plain"
        }
    }
}

/// One extension module of the wheel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Module {
    /// Dotted (`torch_cluster._fps_cuda`).
    pub name: String,
    /// `CUDAExtension` (true) or `CppExtension` (false).
    pub cuda: bool,
    /// Python-free TUs, relative to the root.
    pub kernels: Vec<String>,
    /// The TUs that see Python, by flavour (one flavour for a setup.py
    /// module: its TUs link into one shared object).
    pub bindings: BTreeMap<Flavour, Vec<String>>,
    /// Python-free TUs on torch's stable ABI (they include
    /// `torch/csrc/stable/`), by flavour: torch-stable's own kernels.
    pub flavour_kernels: BTreeMap<Flavour, Vec<String>>,
    /// Why each binding is one: the include chain that reaches Python.
    pub reasons: Vec<String>,
    pub include_dirs: Vec<String>,
    pub defines: Vec<String>,
    pub undefines: Vec<String>,
    /// The flags every toolkit shares: `nvcc-flags`, or its `default`.
    pub nvcc_flags: Vec<String>,
    /// Where setup.py gives nvcc different flags per toolkit, each
    /// toolkit's whole list (the table form of `nvcc-flags`); else empty.
    pub nvcc_flags_by_toolkit: BTreeMap<ToolkitKey, Vec<String>>,
    pub cxx_flags: Vec<String>,
    pub link_flags: Vec<String>,
    pub libraries: Vec<String>,
    pub strip: bool,
}

impl Module {
    /// Adds a classified TU: a binding (under its flavour, pybind11 when its
    /// includes name none) if it reaches Python, else a kernel. Returns
    /// whether it is a binding.
    pub fn add_source(&mut self, rel: String, class: &TuClass) -> bool {
        match &class.python {
            Some(chain) => {
                self.reasons.push(chain.clone());
                self.bindings
                    .entry(class.flavour.unwrap_or(Flavour::Pybind11))
                    .or_default()
                    .push(rel);
                true
            }
            None if class.flavour == Some(Flavour::TorchStable) => {
                self.flavour_kernels
                    .entry(Flavour::TorchStable)
                    .or_default()
                    .push(rel);
                false
            }
            None => {
                self.kernels.push(rel);
                false
            }
        }
    }
}

impl Module {
    /// The module as the config writes it: a flavour's own kernels stay
    /// its own only beside other flavours' bindings (the table form);
    /// otherwise they are the module's kernels.
    pub fn with_own_kernels_placed(&self) -> Module {
        let mut module = self.clone();
        let own = std::mem::take(&mut module.flavour_kernels);
        for (flavour, kernels) in own {
            if module.bindings.contains_key(&flavour) && module.bindings.len() > 1 {
                module.flavour_kernels.insert(flavour, kernels);
            } else {
                module.kernels.extend(kernels);
                module.kernels.sort();
            }
        }
        module
    }
}

/// Something `init` could not infer: the key, what and where, and what to
/// write there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The key in pyproject.toml (`tool.cuwheel.cuda-archs`).
    pub key: String,
    /// What could not be inferred, quoting the source where there is one.
    pub problem: String,
    /// What to write there.
    pub fix: String,
}

impl Finding {
    pub fn new(
        key: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            key: key.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n    → {}", self.key, self.problem, self.fix)
    }
}

impl Inferred {
    pub fn find(&mut self, key: &str, problem: impl Into<String>, fix: impl Into<String>) {
        let finding = Finding::new(key, problem, fix);
        if !self.findings.contains(&finding) {
            self.findings.push(finding);
        }
    }
}
