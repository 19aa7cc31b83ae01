//! What one cell is built with, from the lock: its compiler set, its
//! Python's headers, and the headers a limited-API binding is compiled
//! against.
//!
//! In: a [`Cell`] and the [`Lock`]. Out: a [`CellPlan`], or a [`PlanError`]
//! naming the cell and saying to lock again.

use std::collections::BTreeSet;
use std::path::Path;

use crate::lock::format::{Lock, Toolchain};
use crate::plan::PlanError;
use crate::plan::compile::PythonHeaders;
use crate::plan::compilers::{Compilers, Cuda};
use crate::plan::standard::CxxStandard;
use crate::spec::{Cell, CudaVersion, PythonAbi};

/// What a cell is built with, from the lock.
pub struct CellPlan<'a> {
    pub cell: &'a Cell,
    pub compilers: Compilers,
    /// The cell's own Python (per-Python cells).
    pub python: Option<PythonHeaders>,
    /// The headers of the bundle's oldest Python: a limited-API binding
    /// uses only the stable ABI, so any Python's headers serve.
    pub limited: Option<PythonHeaders>,
    /// The torch toolchains whose releases the wheel claims.
    pub claims: BTreeSet<String>,
    bundle: String,
}

impl<'a> CellPlan<'a> {
    pub fn new(
        cell: &'a Cell,
        lock: &'a Lock,
        lock_path: &Path,
    ) -> Result<CellPlan<'a>, PlanError> {
        let name = cell.name().to_string();
        let locked = lock
            .cells
            .get(&name)
            .ok_or_else(|| PlanError::CellNotLocked {
                cell: name.clone(),
                lock: lock_path.to_path_buf(),
            })?;
        let bad = |toolchain: &str, expected| PlanError::BadToolchain {
            cell: name.clone(),
            toolchain: toolchain.to_string(),
            expected,
            lock: lock_path.to_path_buf(),
        };
        let cuda_version = match lock.toolchains.get(&locked.cuda) {
            Some(Toolchain::Cuda(cuda)) => cuda
                .version
                .parse()
                .map_err(|_| bad(&locked.cuda, "CUDA"))?,
            _ => return Err(bad(&locked.cuda, "CUDA")),
        };
        let (gcc_major, cross) = match lock.toolchains.get(&locked.gcc) {
            Some(Toolchain::Gcc { gcc, target, .. }) => (
                gcc.parse().map_err(|_| bad(&locked.gcc, "gcc"))?,
                target.filter(|arch| *arch != crate::wheel::Arch::X86_64),
            ),
            _ => return Err(bad(&locked.gcc, "gcc")),
        };
        let standard = match lock.toolchains.get(&locked.torch) {
            Some(Toolchain::Torch { cxx_standard, .. }) => cxx_standard.clone(),
            _ => return Err(bad(&locked.torch, "torch")),
        };
        let claims = locked.claimed();
        for torch in &claims {
            if !matches!(lock.toolchains.get(torch), Some(Toolchain::Torch { .. })) {
                return Err(bad(torch, "torch"));
            }
        }
        let python_version = |toolchain: &str| match lock.toolchains.get(toolchain) {
            Some(
                Toolchain::PythonHeaders { version, .. } | Toolchain::PythonArchive { version, .. },
            ) => version.parse::<PythonAbi>().ok(),
            _ => None,
        };
        let python = match &locked.python {
            Some(python) => Some(PythonHeaders {
                toolchain: python.clone(),
                version: python_version(python).ok_or_else(|| bad(python, "python-headers"))?,
            }),
            None => None,
        };
        let limited = lock
            .bundles
            .get(&locked.bundle)
            .into_iter()
            .flatten()
            .filter_map(|t| python_version(t).map(|v| (v, t.clone())))
            // A free-threaded build has no limited API before 3.15.
            .filter(|(v, _)| !v.free_threaded)
            .min()
            .map(|(version, toolchain)| PythonHeaders { toolchain, version });
        Ok(CellPlan {
            cell,
            compilers: Compilers {
                cuda: Some(Cuda {
                    toolchain: locked.cuda.clone(),
                    version: cuda_version,
                }),
                gcc: locked.gcc.clone(),
                torch: locked.torch.clone(),
                cxx: CxxStandard {
                    standard,
                    gcc_major,
                },
                cross,
            },
            python,
            limited,
            claims,
            bundle: locked.bundle.clone(),
        })
    }

    /// The toolkit whose nvcc compiles the cell's CUDA code.
    pub fn nvcc(&self) -> CudaVersion {
        self.compilers
            .cuda
            .as_ref()
            .map(|cuda| cuda.version)
            .expect("a cell always has a CUDA toolkit")
    }

    /// The Python headers a binding compiles against: the cell's own for a
    /// per-Python flavour, else the limited API's.
    pub fn python_headers(&self, per_python: bool) -> Result<PythonHeaders, PlanError> {
        let found = if per_python {
            self.python.clone()
        } else {
            self.limited.clone()
        };
        found.ok_or_else(|| PlanError::NoPythonHeaders {
            cell: self.cell.name().to_string(),
            bundle: self.bundle.clone(),
        })
    }
}
