//! The build matrix: which cells a config asks for, and what each is called.
//!
//! In: a [`Config`] and the [`MatrixFacts`] of its lock (each torch minor's
//! CUDA and wheels, the toolkits available). Out: its [`Cell`]s — every
//! torch minor the `torch` list resolves to × (each `python` for pybind11
//! bindings, one abi3 build for torch-library bindings), kept to the `cuda`
//! list when there is one, minus the excludes, sorted by CUDA, torch, then
//! abi3 before the Pythons in numeric order — with each cell's nvcc, and the
//! problems of the config that only the facts reveal.
//!
//! A cell serves a torch build: in `cu126-py313`, `cu126` is the CUDA of the
//! torch wheel the cell's wheel is for (torch 2.7's), what a user matches
//! with `pip install torch` or PyTorch's own `cu126` index — not necessarily
//! the nvcc that compiles it. The nvcc is the newest available toolkit of
//! the same CUDA major with a minor at most torch's
//! ([`MatrixFacts::default_nvcc`]), unless `nvcc = { cu126 = "12.4" }` names
//! one; the compatibility check ([`compat`](super::compat)) then checks it.
//!
//! The torch suffix (`cu130-py313-torch211`) is added to every cell of a
//! CUDA that more than one torch serves after the excludes, and only there:
//! one torch per CUDA keeps the short names (`cu126-py313`), while names
//! that would collide always carry it. Adding or removing an exclude can
//! therefore rename the cells of one CUDA.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::spec::config::{BindingFlavour, Config};
use crate::spec::document::Location;
use crate::spec::facts::MatrixFacts;
use crate::spec::python::PythonAbi;
use crate::spec::version::{CudaVersion, PythonVersion, TorchVersion};
use crate::wheel::{Arch, Version};

/// The oldest Python an abi3 cell's wheel is tagged for (`cp39-abi3`), as
/// torch's `py_limited_api` builds use (`Py_LIMITED_API=0x03090000`).
pub const ABI3_PYTHON: PythonVersion = PythonVersion::new(3, 9);

/// The first torch whose stable ABI is versioned by `TORCH_TARGET_VERSION`
/// (pytorch `docs/source/notes/libtorch_stable_abi.md`: "torch 2.10 is the
/// first release that enforces this versioning"): the oldest torch a
/// torch-stable cell serves.
pub const STABLE_ABI_SINCE: TorchVersion = TorchVersion::new(2, 10);

/// One wheel to build. Field order is the sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    /// The CUDA of the torch build the wheel serves (its `cuXYZ`).
    pub cuda: CudaVersion,
    /// The torch the cell is built against; for a torch-stable cell the
    /// oldest of its range, its `TORCH_TARGET_VERSION`.
    pub torch: TorchVersion,
    /// `None` for the abi3 wheels (torch-library, torch-stable).
    pub python: Option<PythonAbi>,
    pub flavour: BindingFlavour,
    /// The toolkit whose nvcc compiles the kernels.
    pub nvcc: CudaVersion,
    /// Whether the name ends in `-torch…` (see the module documentation).
    pub torch_in_name: bool,
    /// The architecture the wheel is for; an aarch64 cell is cross-built
    /// and its name ends in `-aarch64`.
    pub arch: Arch,
}

impl Cell {
    pub fn name(&self) -> CellName {
        if self.is_stable() {
            return CellName {
                cuda: CudaVersion::new(self.cuda.major, 0),
                python: None,
                torch: None,
                stable: true,
                arch: self.arch,
            };
        }
        CellName {
            cuda: self.cuda,
            python: self.python,
            torch: self.torch_in_name.then_some(self.torch),
            stable: false,
            arch: self.arch,
        }
    }

    /// Whether the cell is a torch-stable wheel, serving a range of torches.
    pub fn is_stable(&self) -> bool {
        self.flavour == BindingFlavour::TorchStable
    }

    /// `pt27cu126`: the local version label of the cell's wheel, as
    /// PyTorch's own extension wheels write it; `cu13` for a torch-stable
    /// wheel, which serves every torch of its CUDA major from its target on.
    pub fn local_label(&self) -> String {
        if self.is_stable() {
            return format!("cu{}", self.cuda.major);
        }
        format!("{}{}", self.torch.local_label(), self.cuda.label())
    }

    /// The torch minors of `facts` whose releases the wheel claims to load
    /// in: the cell's torch, or for a torch-stable cell every torch of the
    /// facts with its CUDA major from its torch on.
    pub fn claimed_torches(&self, facts: &MatrixFacts) -> BTreeSet<TorchVersion> {
        if !self.is_stable() {
            return BTreeSet::from([self.torch]);
        }
        facts
            .torch
            .iter()
            .filter(|(torch, release)| {
                release.cuda.major == self.cuda.major
                    && **torch >= self.torch
                    && release
                        .for_arch(self.arch)
                        .is_some_and(|wheels| !wheels.wheels.is_empty())
            })
            .map(|(torch, _)| *torch)
            .collect()
    }

    /// The wheel's torch requirement: `torch>=2.11,<2.12` (torch's C++ ABI
    /// holds within one minor release), or `torch>=2.11` for torch-stable.
    pub fn torch_requirement(&self) -> String {
        let torch = self.torch;
        if self.is_stable() {
            return format!("torch>={}.{}", torch.major, torch.minor);
        }
        format!(
            "torch>={}.{},<{}.{}",
            torch.major,
            torch.minor,
            torch.major,
            torch.minor + 1
        )
    }

    /// The project's version with the cell's local label: `0.1.0+pt27cu126`.
    pub fn wheel_version(&self, project: &Version) -> Version {
        let text = format!("{}+{}", project.without_local(), self.local_label());
        // A public version plus an alphanumeric label is always a version.
        Version::parse(&text).expect("a public version with an alphanumeric local label parses")
    }

    /// `cp313`, or `cp39` for abi3.
    pub fn python_tag(&self) -> String {
        match self.python {
            Some(python) => python.interpreter_tag(),
            None => ABI3_PYTHON.cpython_tag(),
        }
    }

    /// `cp313`, `cp313t`, or `abi3`.
    pub fn abi_tag(&self) -> String {
        match self.python {
            Some(python) => python.abi_tag(),
            None => "abi3".to_string(),
        }
    }

    /// `cp313-cp313`: the wheel's tag without its platform, which the
    /// wheel's build computes from the linked module.
    pub fn interpreter_abi(&self) -> String {
        format!("{}-{}", self.python_tag(), self.abi_tag())
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.name().fmt(f)
    }
}

/// A cell for unit tests: pybind11 when it has a Python, torch-library (abi3)
/// when not; built with nvcc `cuda`, serving it; never carrying the torch
/// suffix.
#[cfg(test)]
pub(crate) fn test_cell(cuda: &str, python: Option<&str>, torch: &str) -> Cell {
    Cell {
        cuda: cuda.parse().unwrap(),
        nvcc: cuda.parse().unwrap(),
        torch: torch.parse().unwrap(),
        python: python.map(|python| python.parse().unwrap()),
        flavour: match python {
            Some(_) => BindingFlavour::Pybind11,
            None => BindingFlavour::TorchLibrary,
        },
        torch_in_name: false,
        arch: Arch::X86_64,
    }
}

/// A config for unit tests: the demo's `[tool.cuwheel]` with `bindings`
/// (the body of `[tool.cuwheel.bindings]`) and `matrix` (the body of
/// `[tool.cuwheel.matrix]`, and any tables after it).
///
/// The registry crate's unit tests use it too, through the feature
/// `test-support`.
#[cfg(any(test, feature = "test-support"))]
pub fn test_config(matrix: &str, bindings: &str) -> Config {
    let text = format!(
        r#"
[project]
name = "demo-ext"
version = "0.1.0"

[tool.cuwheel]
module = "demo_ext._C"
kernels = ["csrc/kernels/*.cu"]
cuda-archs = ["8.0", "9.0+PTX"]
baseline = "manylinux_2_31"

[tool.cuwheel.bindings]
{bindings}

[tool.cuwheel.matrix]
{matrix}
"#
    );
    Config::parse(&text, std::path::Path::new("pyproject.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// A cell's name: `cu130-py313`, `cu130-py313t`, `cu130-abi3`,
/// `cu130-py311-torch213`, or `cu13-stable` (torch-stable: the CUDA major);
/// an aarch64 cell's ends in `-aarch64` (`cu130-abi3-torch211-aarch64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellName {
    /// For a torch-stable cell, only the major counts (minor 0).
    pub cuda: CudaVersion,
    /// `None` for `abi3` and `stable`.
    pub python: Option<PythonAbi>,
    /// Present only when the name carries `-torch…`.
    pub torch: Option<TorchVersion>,
    /// A torch-stable cell: `cu13-stable`.
    pub stable: bool,
    /// Written only when not x86_64.
    pub arch: Arch,
}

/// The suffix of an aarch64 cell's name.
const AARCH64_SUFFIX: &str = "-aarch64";

impl fmt::Display for CellName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stable {
            write!(f, "cu{}-stable", self.cuda.major)?;
        } else {
            f.write_str(&self.cuda.label())?;
            match self.python {
                Some(python) => write!(f, "-{}", python.label())?,
                None => f.write_str("-abi3")?,
            }
            if let Some(torch) = self.torch {
                write!(f, "-{}", torch.label())?;
            }
        }
        if self.arch == Arch::Aarch64 {
            f.write_str(AARCH64_SUFFIX)?;
        }
        Ok(())
    }
}

/// Why a string is not a cell name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a cell name: {reason}; cell names look like cu130-py313, cu130-abi3, \
     cu130-py311-torch213, cu13-stable or cu130-abi3-aarch64 (`cuwheel plan` lists them)"
)]
pub struct CellNameError {
    pub input: String,
    pub reason: String,
}

impl FromStr for CellName {
    type Err = CellNameError;

    fn from_str(input: &str) -> Result<CellName, CellNameError> {
        let fail = |reason: String| CellNameError {
            input: input.to_string(),
            reason,
        };
        let (rest, arch) = match input.strip_suffix(AARCH64_SUFFIX) {
            Some(rest) => (rest, Arch::Aarch64),
            None => (input, Arch::X86_64),
        };
        let parts: Vec<&str> = rest.split('-').collect();
        if let [cuda, "stable"] = parts[..] {
            let major = cuda
                .strip_prefix("cu")
                .filter(|m| !m.is_empty() && m.len() <= 2 && m.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|m| m.parse::<u32>().ok())
                .ok_or_else(|| {
                    fail(format!(
                        "`{cuda}` is not the CUDA major of a torch-stable cell, like cu13"
                    ))
                })?;
            return Ok(CellName {
                cuda: CudaVersion::new(major, 0),
                python: None,
                torch: None,
                stable: true,
                arch,
            });
        }
        let (cuda, target, torch) = match parts[..] {
            [cuda, target] => (cuda, target, None),
            [cuda, target, torch] => (cuda, target, Some(torch)),
            _ => {
                return Err(fail(format!(
                    "it has {} `-`-separated parts, not 2 or 3 (and -aarch64)",
                    parts.len()
                )));
            }
        };
        let cuda = cuda
            .strip_prefix("cu")
            .and_then(CudaVersion::from_compact)
            .ok_or_else(|| {
                fail(format!(
                    "`{cuda}` is not a CUDA label like cu130 (cu, the major version, one minor digit)"
                ))
            })?;
        let python = match target {
            "abi3" => None,
            _ => Some(
                target
                    .strip_prefix("py")
                    .and_then(PythonAbi::from_compact)
                    .ok_or_else(|| {
                        fail(format!(
                            "`{target}` is neither abi3 nor a Python label like py313 or py313t"
                        ))
                    })?,
            ),
        };
        let torch = match torch {
            None => None,
            Some(torch) => Some(
                torch
                    .strip_prefix("torch")
                    .and_then(TorchVersion::from_compact)
                    .ok_or_else(|| fail(format!("`{torch}` is not a torch label like torch211")))?,
            ),
        };
        Ok(CellName {
            cuda,
            python,
            torch,
            stable: false,
            arch,
        })
    }
}

/// A problem of the config that only the lock's facts reveal, where it is
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixProblem {
    pub at: Location,
    pub problem: String,
    pub fix: String,
}

/// The cells of a config, and what the config says that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// Sorted.
    pub cells: Vec<Cell>,
    pub problems: Vec<MatrixProblem>,
}

/// The torch minors the `torch` list resolves to with `facts`, and a problem
/// for each entry that resolves to none.
pub fn torch_minors(
    config: &Config,
    facts: &MatrixFacts,
) -> (BTreeSet<TorchVersion>, Vec<MatrixProblem>) {
    let mut minors = BTreeSet::new();
    let mut problems = Vec::new();
    let pythons: Vec<String> = config
        .matrix
        .python
        .iter()
        .map(ToString::to_string)
        .collect();
    for selector in &config.matrix.torch {
        let found: Vec<TorchVersion> = facts
            .torch
            .keys()
            .filter(|minor| selector.value.contains(**minor))
            .copied()
            .collect();
        if found.is_empty() {
            let released: Vec<String> = facts.torch.keys().map(ToString::to_string).collect();
            problems.push(MatrixProblem {
                at: selector.at.clone(),
                problem: format!(
                    "torch {} has no release with a wheel for this platform{} on the package \
                     index (as `cuwheel lock` read it){}",
                    selector.value,
                    if pythons.is_empty() {
                        String::new()
                    } else {
                        format!(" and Python {}", pythons.join(", "))
                    },
                    if released.is_empty() {
                        String::new()
                    } else {
                        format!("; the lock knows torch {}", released.join(", "))
                    }
                ),
                fix: "name a released torch, or run `cuwheel lock` again if it was released since"
                    .into(),
            });
        }
        minors.extend(found);
    }
    (minors, problems)
}

/// Expands the matrix with the lock's facts and applies the `cuda` list and
/// the excludes; the compatibility rules are checked separately
/// ([`compat`](super::compat)), so that an impossible cell is reported rather
/// than silently dropped. A cell whose CUDA has no available toolkit gets
/// its own CUDA as nvcc here, which the check then refuses.
pub fn expand(config: &Config, facts: &MatrixFacts) -> Expansion {
    let matrix = &config.matrix;
    let (minors, mut problems) = torch_minors(config, facts);
    let mut product = Vec::new();
    for &torch in &minors {
        let cuda = facts.torch[&torch].cuda;
        let nvcc = match matrix.nvcc.get(&cuda) {
            Some(named) => named.value,
            None => facts.default_nvcc(cuda).unwrap_or(cuda),
        };
        for flavour in config.flavours() {
            let pythons: Vec<Option<PythonAbi>> = match flavour {
                BindingFlavour::Pybind11 => matrix.python.iter().copied().map(Some).collect(),
                BindingFlavour::TorchLibrary => vec![None],
                // One per CUDA major, added below.
                BindingFlavour::TorchStable => Vec::new(),
            };
            for platform in &matrix.platforms {
                product.extend(pythons.iter().map(|&python| Cell {
                    cuda,
                    nvcc,
                    torch,
                    python,
                    flavour,
                    torch_in_name: false,
                    arch: platform.value,
                }));
            }
        }
    }
    if config.flavours().contains(&BindingFlavour::TorchStable) {
        product.extend(stable_cells(config, facts, &minors));
    }
    // A module that only torch-stable bindings serve needs the stable ABI,
    // whatever the cell's flavour.
    product.retain(|cell| cell.torch >= STABLE_ABI_SINCE || !needs_stable_abi(config, cell));
    let served: BTreeSet<CudaVersion> = product.iter().map(|cell| cell.cuda).collect();
    let by_torch: BTreeMap<TorchVersion, CudaVersion> =
        product.iter().map(|cell| (cell.torch, cell.cuda)).collect();
    let torches_shown = by_torch
        .iter()
        .map(|(torch, cuda)| format!("torch {torch}: CUDA {cuda}"))
        .collect::<Vec<_>>()
        .join(", ");
    for cuda in &matrix.cuda {
        if !served.contains(&cuda.value) {
            problems.push(MatrixProblem {
                at: cuda.at.clone(),
                problem: format!(
                    "no torch of the matrix is built for CUDA {} ({torches_shown}); a cell is \
                     named for the CUDA of the torch build it serves, not for its nvcc",
                    cuda.value
                ),
                fix: match served
                    .iter()
                    .find(|c| c.major == cuda.value.major && c.minor > cuda.value.minor)
                {
                    Some(newer) => format!(
                        "list the CUDA of a torch in the matrix, or leave `cuda` out; to build \
                         the {} cells with nvcc {}, write nvcc = {{ {} = \"{}\" }}",
                        newer.label(),
                        cuda.value,
                        newer.label(),
                        cuda.value
                    ),
                    None => "list the CUDA of a torch in the matrix, or leave `cuda` out".into(),
                },
            });
        }
    }
    for (cuda, toolkit) in &matrix.nvcc {
        if !served.contains(cuda) {
            problems.push(MatrixProblem {
                at: toolkit.at.clone(),
                problem: format!(
                    "no cell serves CUDA {cuda} ({torches_shown}), so this nvcc is used by none"
                ),
                fix: "key the entry by the label of cells the matrix has, or remove it".into(),
            });
        }
    }
    if !matrix.cuda.is_empty() {
        product.retain(|cell| {
            matrix.cuda.iter().any(|c| {
                c.value == cell.cuda || (cell.is_stable() && c.value.major == cell.cuda.major)
            })
        });
    }
    let mut matched = vec![false; matrix.exclude.len()];
    product.retain(|cell| {
        let mut keep = true;
        for (index, exclude) in matrix.exclude.iter().enumerate() {
            if exclude.value.matches(cell) {
                matched[index] = true;
                keep = false;
            }
        }
        keep
    });
    for (exclude, matched) in matrix.exclude.iter().zip(matched) {
        if !matched {
            problems.push(MatrixProblem {
                at: exclude.at.clone(),
                problem: format!(
                    "the exclude {} matches no cell of the matrix",
                    exclude.value
                ),
                fix: format!(
                    "check it for typos (a python key never matches the Python-less \
                     torch-library cells; cuda is the CUDA a cell serves: {torches_shown}), or \
                     remove it"
                ),
            });
        }
    }
    let mut torches_per_cuda: BTreeMap<CudaVersion, BTreeSet<TorchVersion>> = BTreeMap::new();
    for cell in product.iter().filter(|cell| !cell.is_stable()) {
        torches_per_cuda
            .entry(cell.cuda)
            .or_default()
            .insert(cell.torch);
    }
    for cell in product.iter_mut().filter(|cell| !cell.is_stable()) {
        cell.torch_in_name = torches_per_cuda[&cell.cuda].len() > 1;
    }
    product.sort();
    let stable_only = config.flavours() == [BindingFlavour::TorchStable];
    if product.is_empty() && problems.is_empty() && stable_only {
        if let Some(last) = config.matrix.torch.last() {
            let shown: Vec<String> = minors.iter().map(ToString::to_string).collect();
            problems.push(MatrixProblem {
                at: last.at.clone(),
                problem: format!(
                    "the project's bindings are torch-stable only, which needs torch \
                     {STABLE_ABI_SINCE} or later (the first with a versioned stable ABI), and the \
                     matrix's torches are {}",
                    shown.join(", ")
                ),
                fix: format!(
                    "add a torch >= {STABLE_ABI_SINCE} to the matrix, or give the modules \
                     torch-library or pybind11 bindings"
                ),
            });
        }
    }
    if product.is_empty() && problems.is_empty() {
        let at = config
            .matrix
            .exclude
            .last()
            .map(|last| last.at.clone())
            .or_else(|| config.matrix.cuda.last().map(|last| last.at.clone()))
            .unwrap_or_else(|| Location {
                key: "tool.cuwheel.matrix".into(),
                line: 1,
                column: 1,
            });
        problems.push(MatrixProblem {
            at,
            problem: "the `cuda` list and the excludes remove every cell of the matrix".into(),
            fix: "remove or narrow them".into(),
        });
    }
    Expansion {
        cells: product,
        problems,
    }
}

/// The torch-stable cells: per CUDA major of the matrix's torches, one
/// built against the oldest of them with the stable ABI (see the module
/// documentation).
fn stable_cells(
    config: &Config,
    facts: &MatrixFacts,
    minors: &BTreeSet<TorchVersion>,
) -> Vec<Cell> {
    let mut oldest: BTreeMap<u32, TorchVersion> = BTreeMap::new();
    for &torch in minors.iter().filter(|torch| **torch >= STABLE_ABI_SINCE) {
        let major = facts.torch[&torch].cuda.major;
        oldest.entry(major).or_insert(torch);
    }
    oldest
        .into_values()
        .flat_map(|torch| {
            config
                .matrix
                .platforms
                .iter()
                .map(move |p| (torch, p.value))
        })
        .map(|(torch, arch)| {
            let cuda = facts.torch[&torch].cuda;
            Cell {
                cuda,
                nvcc: match config.matrix.nvcc.get(&cuda) {
                    Some(named) => named.value,
                    None => facts.default_nvcc(cuda).unwrap_or(cuda),
                },
                torch,
                python: None,
                flavour: BindingFlavour::TorchStable,
                torch_in_name: false,
                arch,
            }
        })
        .collect()
}

/// Whether some module of the cell can be built only with torch-stable
/// bindings.
fn needs_stable_abi(config: &Config, cell: &Cell) -> bool {
    config.modules.iter().any(|module| {
        BindingFlavour::serving(cell.flavour, &module.flavours())
            == Some(BindingFlavour::TorchStable)
    })
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
