//! The build plan: the derivation graph the driver hands to Nix.
//!
//! In: a project's [`Config`], its kernel sources ([`TranslationUnit`]: each TU
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

pub mod binding;
pub mod includes;
pub mod kernel;
pub mod link;
pub mod shell;
pub mod sources;
pub mod standard;
pub mod wheel;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::build::{Provenance, WheelRecipe};
use crate::lock::format::{Lock, Toolchain};
use crate::spec::{
    BindingFlavour, Cell, Config, CudaVersion, PackageFile, PythonAbi, TorchVersion,
};
use crate::wheel::{PlatformRule, TagSet, WheelFilename};

pub use binding::BindingObject;
pub use includes::TranslationUnit;
pub use kernel::KernelObject;
pub use link::LinkedModule;
pub use standard::CxxStandard;
pub use wheel::WheelAssembly;

/// The graph: every node by its derivation name, and each cell's nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub cells: BTreeMap<String, PlanCell>,
    pub nodes: BTreeMap<String, Node>,
}

/// What one cell (one wheel) is built from: its nodes, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanCell {
    /// The kernel object nodes linked into the cell's extension module.
    pub kernels: BTreeSet<String>,
    pub binding: String,
    pub link: String,
    pub wheel: String,
    /// The audit node: its output is the cell's result (wheel and report).
    pub audit: String,
    /// The wheel's file name as the plan predicts it: the wheel node
    /// computes the platform tag from the linked module, within `platform`
    /// (the prediction takes torch's tag, which modules built on the
    /// baseline's sysroot reach). Read the result's `*.whl` for the name.
    pub predicted_wheel_file: String,
    pub platform: PlatformRule,
    /// The toolkit whose nvcc compiles the cell's kernels.
    pub nvcc: CudaVersion,
    /// The torch release the cell is built against (`2.7.1`).
    pub torch: String,
}

/// A cell for unit tests: the given kernel nodes and `[binding, link, wheel,
/// audit]` nodes, torch 2.11 built with nvcc 13.0.
#[cfg(test)]
pub(crate) fn test_plan_cell(kernels: &[&str], nodes: [&str; 4]) -> PlanCell {
    let [binding, link, wheel, audit] = nodes.map(str::to_string);
    PlanCell {
        kernels: kernels.iter().map(|k| k.to_string()).collect(),
        binding,
        link,
        wheel,
        audit,
        predicted_wheel_file: "w.whl".into(),
        platform: PlatformRule {
            least_compatible: "manylinux_2_31_x86_64".into(),
            most_compatible: "manylinux_2_28_x86_64".into(),
        },
        nvcc: CudaVersion::new(13, 0),
        torch: "2.11.0".into(),
    }
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
    /// The Nix-built driver (`{ "driver": true }`), for the nodes it runs.
    Driver { driver: bool },
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
    #[error(
        "cell {cell} builds the torch-library (abi3) binding, which needs Python headers for its \
         module init, but the lock's bundle {bundle} has none: add a Python to the matrix's \
         `python` list and run `cuwheel lock` again"
    )]
    NoPythonHeaders { cell: String, bundle: String },
    #[error("kernel source {path} is not a relative path inside the project; {fix}")]
    BadSource { path: String, fix: &'static str },
    #[error(
        "cell {cell}: `{tag}` is not a wheel tag (the lock's torch platform is not a platform \
         tag); run `cuwheel lock` to write the lock again"
    )]
    BadTag { cell: String, tag: String },
}

/// The compilers a kernel object is built with: one set per distinct
/// (CUDA, gcc, torch) among the cells.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelToolchains {
    pub cuda: String,
    pub cuda_version: CudaVersion,
    pub gcc: String,
    pub torch: String,
    /// The standard torch's headers require, for that gcc.
    pub cxx: CxxStandard,
}

/// The project beyond its kernels, read by the caller: binding sources,
/// package files, and the digests a wheel's provenance records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectSources {
    pub bindings: BTreeMap<BindingFlavour, Vec<TranslationUnit>>,
    pub package_files: Vec<PackageFile>,
    /// sha256 of every project file the wheels are built from, by relative
    /// path (`pyproject.toml`, kernels, bindings, headers, include
    /// directories' files, package files).
    pub digests: BTreeMap<String, String>,
    /// sha256 of the lock file.
    pub lock_sha256: String,
}

/// What a cell is built with, from the lock.
struct CellPlan<'a> {
    cell: &'a Cell,
    toolchains: KernelToolchains,
    /// The Python headers the binding is compiled against, and their build.
    python: String,
    python_version: PythonAbi,
}

impl Plan {
    /// Plans every node of `cells`. `lock_path` only names the lock in errors.
    pub fn new(
        config: &Config,
        kernel_sources: &[TranslationUnit],
        project: &ProjectSources,
        cells: &[Cell],
        lock: &Lock,
        lock_path: &Path,
    ) -> Result<Plan, PlanError> {
        let cell_plans = cells
            .iter()
            .map(|cell| CellPlan::new(cell, lock, lock_path))
            .collect::<Result<Vec<_>, _>>()?;

        let sets: BTreeSet<&KernelToolchains> = cell_plans.iter().map(|c| &c.toolchains).collect();
        let paths: Vec<PathBuf> = kernel_sources.iter().map(|k| k.path.clone()).collect();
        let stems = kernel::unique_stems(&paths)?;
        let mut nodes = BTreeMap::new();
        // Per compiler set: kernel node name → its object file.
        let mut kernels_of: BTreeMap<&KernelToolchains, BTreeMap<String, String>> = BTreeMap::new();
        for toolchains in &sets {
            let prefix = kernel::name_prefix(toolchains, &sets);
            for (source, stem) in kernel_sources.iter().zip(&stems) {
                let object = KernelObject {
                    name: format!("{}{prefix}-{stem}", kernel::NAME_PREFIX),
                    source: source.path.clone(),
                    headers: source.headers.iter().cloned().collect(),
                    stem: stem.clone(),
                    toolchains: (*toolchains).clone(),
                };
                let node = object.node(config);
                kernels_of
                    .entry(toolchains)
                    .or_default()
                    .insert(node.name.clone(), format!("{stem}.o"));
                nodes.insert(node.name.clone(), node);
            }
        }

        let digests = &project.digests;
        let module_dir = {
            let parts: Vec<&str> = config.module.components().collect();
            parts[..parts.len() - 1].join("/")
        };
        // Each flavour's binding sources and their object stems.
        let mut bindings = BTreeMap::new();
        for (flavour, sources) in &project.bindings {
            let paths: Vec<PathBuf> = sources.iter().map(|tu| tu.path.clone()).collect();
            bindings.insert(*flavour, (sources, kernel::unique_stems(&paths)?));
        }
        let mut plan_cells = BTreeMap::new();
        for cp in &cell_plans {
            let cell = cp.cell;
            let name = cell.name().to_string();
            let (sources, stems) = bindings
                .get(&cell.flavour)
                .map(|(sources, stems)| ((*sources).clone(), stems.clone()))
                .unwrap_or_default();
            let python_part = match cell.python {
                Some(python) => python.label(),
                None => "abi3".to_string(),
            };
            let binding = BindingObject {
                name: format!(
                    "{}{}-{python_part}",
                    binding::NAME_PREFIX,
                    kernel::name_prefix(&cp.toolchains, &sets)
                ),
                flavour: cell.flavour,
                stems,
                sources,
                toolchains: cp.toolchains.clone(),
                python: cp.python.clone(),
                python_version: cp.python_version,
            };
            let kernels = kernels_of.get(&cp.toolchains).cloned().unwrap_or_default();
            let link = LinkedModule {
                name: format!("{}{name}", link::NAME_PREFIX),
                flavour: cell.flavour,
                python: cell.python,
                toolchains: cp.toolchains.clone(),
                kernels: kernels.clone(),
                binding: binding.name.clone(),
                binding_objects: binding.objects(),
            };
            let toolchains = BTreeMap::from([
                ("cuda".to_string(), cp.toolchains.cuda.clone()),
                ("gcc".to_string(), cp.toolchains.gcc.clone()),
                ("python".to_string(), cp.python.clone()),
                ("torch".to_string(), cp.toolchains.torch.clone()),
            ]);
            let release =
                lock.facts
                    .torch
                    .get(&cell.torch)
                    .ok_or_else(|| PlanError::CellNotLocked {
                        cell: name.clone(),
                        lock: lock_path.to_path_buf(),
                    })?;
            let platform = PlatformRule {
                least_compatible: config.baseline.platform_tag(),
                most_compatible: release.platform.clone(),
            };
            let version = cell.wheel_version(&config.version);
            let predicted_tag = format!("{}-{}", cell.interpreter_abi(), platform.predicted());
            let predicted_wheel_file = WheelFilename {
                name: config.name.clone(),
                version: version.clone(),
                build: None,
                tags: TagSet::parse(&predicted_tag).map_err(|_| PlanError::BadTag {
                    cell: name.clone(),
                    tag: predicted_tag.clone(),
                })?,
            }
            .to_string();
            let archs = config
                .cuda_archs
                .for_toolkit(cp.toolchains.cuda_version)
                .unwrap_or_default();
            let recipe = WheelRecipe {
                name: config.name.as_str().to_string(),
                version: version.to_string(),
                summary: config.summary.clone(),
                license: config.license.clone(),
                requires_python: config.requires_python.clone(),
                requires_dist: vec![torch_requirement(cell.torch)],
                tag: cell.interpreter_abi(),
                platform: platform.clone(),
                provenance: Provenance {
                    cell: name.clone(),
                    cuda_archs: archs.iter().map(|a| a.to_string()).collect(),
                    config_sha256: lock.config_sha256.clone(),
                    lock_sha256: project.lock_sha256.clone(),
                    source_sha256: Provenance::source_sha256(digests),
                    sources: digests.clone(),
                    toolchains,
                    nvcc: cp.toolchains.cuda_version.to_string(),
                    cuwheel: env!("CARGO_PKG_VERSION").to_string(),
                },
            };
            let assembly = WheelAssembly {
                cell: name.clone(),
                link: link.name.clone(),
                module_file: link.file_name(config),
                module_dir: module_dir.clone(),
                package_files: project.package_files.clone(),
                wheel_file: predicted_wheel_file,
                recipe,
            };
            let wheel_node = assembly.wheel_node();
            let audit_node = assembly.audit_node();
            plan_cells.insert(
                name,
                PlanCell {
                    kernels: kernels.into_keys().collect(),
                    binding: binding.name.clone(),
                    link: link.name.clone(),
                    wheel: wheel_node.name.clone(),
                    audit: audit_node.name.clone(),
                    predicted_wheel_file: assembly.wheel_file.clone(),
                    platform,
                    nvcc: cp.toolchains.cuda_version,
                    torch: release.version.clone(),
                },
            );
            nodes.insert(binding.name.clone(), binding.node(config));
            for node in [link.node(config), wheel_node, audit_node] {
                nodes.insert(node.name.clone(), node);
            }
        }
        Ok(Plan {
            cells: plan_cells,
            nodes,
        })
    }

    /// The canonical JSON: keys sorted, two-space indent, final newline.
    pub fn to_json(&self) -> String {
        crate::json::canonical(self)
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

impl<'a> CellPlan<'a> {
    fn new(cell: &'a Cell, lock: &'a Lock, lock_path: &Path) -> Result<CellPlan<'a>, PlanError> {
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
            Some(Toolchain::CudaWheels { version, .. } | Toolchain::CudaDebian { version, .. }) => {
                version.parse().map_err(|_| bad(&locked.cuda, "CUDA"))?
            }
            _ => return Err(bad(&locked.cuda, "CUDA")),
        };
        let gcc_major = match lock.toolchains.get(&locked.gcc) {
            Some(Toolchain::Gcc { gcc, .. }) => gcc.parse().map_err(|_| bad(&locked.gcc, "gcc"))?,
            _ => return Err(bad(&locked.gcc, "gcc")),
        };
        let standard = match lock.toolchains.get(&locked.torch) {
            Some(Toolchain::Torch { cxx_standard, .. }) => cxx_standard.clone(),
            _ => return Err(bad(&locked.torch, "torch")),
        };
        let python_version = |toolchain: &str| match lock.toolchains.get(toolchain) {
            Some(
                Toolchain::PythonHeaders { version, .. } | Toolchain::PythonArchive { version, .. },
            ) => version.parse::<PythonAbi>().ok(),
            _ => None,
        };
        // An abi3 binding uses the limited API, so any regular Python's
        // headers serve: the bundle's oldest (a free-threaded build has no
        // limited API before 3.15).
        let (python, version) = match &locked.python {
            Some(python) => {
                let version =
                    python_version(python).ok_or_else(|| bad(python, "python-headers"))?;
                (python.clone(), version)
            }
            None => lock
                .bundles
                .get(&locked.bundle)
                .into_iter()
                .flatten()
                .filter_map(|t| python_version(t).map(|v| (v, t.clone())))
                .filter(|(v, _)| !v.free_threaded)
                .min()
                .map(|(v, t)| (t, v))
                .ok_or_else(|| PlanError::NoPythonHeaders {
                    cell: name.clone(),
                    bundle: locked.bundle.clone(),
                })?,
        };
        Ok(CellPlan {
            cell,
            toolchains: KernelToolchains {
                cuda: locked.cuda.clone(),
                cuda_version,
                gcc: locked.gcc.clone(),
                torch: locked.torch.clone(),
                cxx: CxxStandard {
                    standard,
                    gcc_major,
                },
            },
            python,
            python_version: version,
        })
    }
}

/// `torch>=2.11,<2.12`: torch's C++ ABI holds within one minor release.
fn torch_requirement(torch: TorchVersion) -> String {
    format!(
        "torch>={}.{},<{}.{}",
        torch.major,
        torch.minor,
        torch.major,
        torch.minor + 1
    )
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
