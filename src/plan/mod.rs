//! The build plan: the derivation graph the driver hands to Nix.
//!
//! In: a project's [`Config`], its kernel sources ([`KernelSource`]: each TU
//! and the headers beside it that it includes), its cells and its
//! [`Lock`]. Out: a [`Plan`] — named [`Node`]s, each a build script (text
//! that `nix/plan.nix` runs with busybox in the sandbox) and the [`Input`]s
//! it sees as environment variables — and which nodes each cell uses.
//! Nothing here reads files or runs programs; `nix/` resolves the inputs
//! and holds no build logic of its own.
//!
//! Kernel objects ([`kernel`]) are compiled once per kernel translation unit
//! and per compiler set (CUDA, gcc, torch headers): their inputs never name
//! a Python, so every cell of a toolkit shares them.

pub mod includes;
pub mod kernel;
pub mod shell;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::lock::format::{Lock, Toolchain};
use crate::spec::{Cell, Config, CudaVersion};

pub use includes::KernelSource;
pub use kernel::KernelObject;

/// The graph: every node by its derivation name, and each cell's nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub cells: BTreeMap<String, PlanCell>,
    pub nodes: BTreeMap<String, Node>,
}

/// What one cell (one wheel) is built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanCell {
    /// The kernel object nodes linked into the cell's extension module.
    pub kernels: BTreeSet<String>,
}

/// One derivation: `script` runs in the sandbox with each input's store
/// path in the environment variable that keys it, and writes `$out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// The derivation's name (also the key in [`Plan::nodes`]).
    pub name: String,
    pub script: String,
    pub inputs: BTreeMap<String, Input>,
}

/// Where an input's store path comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Input {
    /// A lock toolchain, or one of its outputs (`torch211`'s `headers`).
    Toolchain {
        toolchain: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// A file or directory of the project, relative to its root; each is
    /// its own store path, so editing one changes only the nodes using it.
    Source { source: String },
    /// Another node's output.
    Node { node: String },
}

impl Input {
    fn toolchain(name: &str) -> Input {
        Input::Toolchain {
            toolchain: name.to_string(),
            output: None,
        }
    }
}

/// Why a plan cannot be made; each says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "cell {cell} is not in {lock}: the lock was written for another matrix; run `cuwheel lock` \
         in the project to write it again"
    )]
    CellNotLocked { cell: String, lock: PathBuf },
    #[error(
        "{lock}: cell {cell} names the toolchain `{toolchain}`, which is not a {expected} \
         toolchain of the lock; run `cuwheel lock` to write it again"
    )]
    BadToolchain {
        cell: String,
        toolchain: String,
        expected: &'static str,
        lock: PathBuf,
    },
    #[error(
        "kernel sources {first} and {second} get the same derivation name `{name}`; rename one \
         of them"
    )]
    NameClash {
        first: String,
        second: String,
        name: String,
    },
    #[error("kernel source {path} is not a relative path inside the project; {fix}")]
    BadSource { path: String, fix: &'static str },
}

/// The compilers a kernel object is built with: one set per distinct
/// (CUDA, gcc, torch) among the cells.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelToolchains {
    pub cuda: String,
    pub cuda_version: CudaVersion,
    pub gcc: String,
    pub torch: String,
}

impl Plan {
    /// Plans every node of `cells`. `lock_path` only names the lock in errors.
    pub fn new(
        config: &Config,
        kernel_sources: &[KernelSource],
        cells: &[Cell],
        lock: &Lock,
        lock_path: &Path,
    ) -> Result<Plan, PlanError> {
        let mut cell_toolchains = BTreeMap::new();
        for cell in cells {
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
                Some(
                    Toolchain::CudaWheels { version, .. } | Toolchain::CudaDebian { version, .. },
                ) => version.parse().map_err(|_| bad(&locked.cuda, "CUDA"))?,
                _ => return Err(bad(&locked.cuda, "CUDA")),
            };
            if !matches!(
                lock.toolchains.get(&locked.gcc),
                Some(Toolchain::Gcc { .. })
            ) {
                return Err(bad(&locked.gcc, "gcc"));
            }
            if !matches!(
                lock.toolchains.get(&locked.torch),
                Some(Toolchain::Torch { .. })
            ) {
                return Err(bad(&locked.torch, "torch"));
            }
            let toolchains = KernelToolchains {
                cuda: locked.cuda.clone(),
                cuda_version,
                gcc: locked.gcc.clone(),
                torch: locked.torch.clone(),
            };
            cell_toolchains.insert(name, toolchains);
        }

        let sets: BTreeSet<&KernelToolchains> = cell_toolchains.values().collect();
        let paths: Vec<PathBuf> = kernel_sources.iter().map(|k| k.path.clone()).collect();
        let stems = kernel::unique_stems(&paths)?;
        let mut nodes = BTreeMap::new();
        let mut kernels_of: BTreeMap<&KernelToolchains, BTreeSet<String>> = BTreeMap::new();
        for toolchains in &sets {
            let prefix = kernel::name_prefix(toolchains, &sets);
            for (source, stem) in kernel_sources.iter().zip(&stems) {
                let object = KernelObject {
                    name: format!("kernel-{prefix}-{stem}"),
                    source: source.path.clone(),
                    headers: source.headers.iter().cloned().collect(),
                    stem: stem.clone(),
                    toolchains: (*toolchains).clone(),
                };
                let node = object.node(config);
                kernels_of
                    .entry(toolchains)
                    .or_default()
                    .insert(node.name.clone());
                nodes.insert(node.name.clone(), node);
            }
        }
        let cells = cell_toolchains
            .iter()
            .map(|(name, toolchains)| {
                let kernels = kernels_of.get(toolchains).cloned().unwrap_or_default();
                (name.clone(), PlanCell { kernels })
            })
            .collect();
        Ok(Plan { cells, nodes })
    }

    /// The canonical JSON: keys sorted, two-space indent, final newline.
    pub fn to_json(&self) -> String {
        let value = serde_json::to_value(self).expect("a plan always serialises");
        let mut text = serde_json::to_string_pretty(&value).expect("a JSON value always prints");
        text.push('\n');
        text
    }

    /// How much the sharing saves: kernel compiles planned, and what a build
    /// per cell would do.
    pub fn sharing(&self) -> Sharing {
        let kernels: BTreeSet<&str> = self
            .cells
            .values()
            .flat_map(|cell| cell.kernels.iter().map(String::as_str))
            .collect();
        Sharing {
            sources: self.kernel_sources().len(),
            toolkits: self.kernel_toolkits().len(),
            compiles: kernels.len(),
            wheels: self.cells.len(),
            per_cell: self.cells.values().map(|cell| cell.kernels.len()).sum(),
        }
    }

    fn kernel_sources(&self) -> BTreeSet<&str> {
        self.kernel_nodes()
            .filter_map(|node| match node.inputs.get(kernel::SOURCE_VAR) {
                Some(Input::Source { source }) => Some(source.as_str()),
                _ => None,
            })
            .collect()
    }

    fn kernel_toolkits(&self) -> BTreeSet<Vec<&Input>> {
        self.kernel_nodes()
            .map(|node| {
                node.inputs
                    .iter()
                    .filter(|(_, input)| matches!(input, Input::Toolchain { .. }))
                    .map(|(_, input)| input)
                    .collect()
            })
            .collect()
    }

    fn kernel_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .values()
            .filter(|node| node.name.starts_with(kernel::NAME_PREFIX))
    }
}

/// The arithmetic `cuwheel plan` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharing {
    pub sources: usize,
    pub toolkits: usize,
    pub compiles: usize,
    pub wheels: usize,
    /// Kernel compiles if every cell compiled its own.
    pub per_cell: usize,
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        write!(
            f,
            "{} × {} = {} serve {}; a per-cell build would do {}",
            plural(self.sources, "kernel"),
            plural(self.toolkits, "toolkit"),
            plural(self.compiles, "compile"),
            plural(self.wheels, "wheel"),
            self.per_cell
        )
    }
}
