//! The build plan: the derivation graph the driver hands to Nix.
//!
//! In: a project's [`Config`], its sources ([`ProjectSources`]: each
//! module's translation units with the project headers they include,
//! package and license files, the readme, digests), its cells and its
//! [`Lock`]. Out: a [`Plan`] — named [`Node`]s, each a build script (text
//! that `nix/plan.nix` runs with busybox in the sandbox) and the [`Input`]s
//! it sees as environment variables — and which nodes each cell uses.
//! Nothing here reads files or runs programs; `nix/` resolves the inputs
//! and holds no build logic of its own.
//!
//! Kernel objects ([`kernel`]) are compiled once per kernel translation unit
//! and per compiler set ([`compilers`]: CUDA, gcc, torch headers; gcc and
//! torch for a CPU-only module): their inputs never name a Python, so every
//! cell of a compiler set shares them. Each cell's wheel holds every
//! module, each built with the bindings of the cell's flavour or of a more
//! portable one ([`binding`]), linked ([`link`]) and assembled with the
//! package files, license files and METADATA ([`metadata`], [`wheel`]).
//! A binding or link that does not depend on the cell's Python (a
//! torch-library module) is shared by every cell of its compiler set.

pub mod binding;
mod cell;
pub mod compile;
pub mod compilers;
mod error;
pub mod includes;
pub mod kernel;
pub mod lineinfo;
pub mod link;
pub mod metadata;
pub mod pypi;
mod sharing;
pub mod shell;
pub mod sources;
pub use sources::{ModuleSources, ProjectSources};
pub mod standard;
pub mod symbols;
pub mod wheel;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::build::Provenance;
use crate::lock::format::Lock;
use crate::spec::{BindingFlavour, Cell, Config, CudaArch, CudaVersion, Module};
use crate::store::path::sanitize_name;
use crate::wheel::PlatformRule;

pub use crate::spec::glob::slash_path;
pub use binding::BindingObject;
pub use compilers::Compilers;
pub use error::PlanError;
pub use includes::TranslationUnit;
pub use kernel::KernelObject;
pub use link::LinkedModule;
pub use sharing::Sharing;
pub use standard::CxxStandard;
pub use wheel::{Channel, WheelAssembly};

use binding::flavour_plan;
use cell::CellPlan;
use symbols::{AuditTables, Scope};
use wheel::ModuleFile;

/// The graph: every node by its derivation name, and each cell's nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub cells: BTreeMap<String, PlanCell>,
    pub nodes: BTreeMap<String, Node>,
    /// The PyPI wheels, when `[tool.cuwheel.pypi]` names a variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pypi: Option<pypi::PypiPlan>,
}

/// What one cell (one wheel) is built from: its nodes, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanCell {
    /// The cell's binding flavour (its modules' may be more portable).
    pub flavour: BindingFlavour,
    /// The lock's torch toolchains whose releases the wheel claims to load
    /// in: the cell's own torch, or for a torch-stable wheel every torch of
    /// its range (the audit's load check fails unless it loads with each).
    pub claims: BTreeSet<String>,
    /// The kernel object nodes linked into the cell's extension modules.
    pub kernels: BTreeSet<String>,
    /// The binding object nodes, one per module.
    pub bindings: BTreeSet<String>,
    /// The extension modules, one link node each.
    pub links: BTreeSet<String>,
    pub wheel: String,
    /// The audit node: its output is the cell's result (wheel and report).
    pub audit: String,
    /// The wheel's file name as the plan predicts it: the wheel node
    /// computes the platform tag from the linked modules, within `platform`
    /// (the prediction takes torch's tag, which modules built on the
    /// baseline's sysroot reach). Read the result's `*.whl` for the name.
    pub predicted_wheel_file: String,
    pub platform: PlatformRule,
    /// The toolkit whose nvcc compiles the cell's CUDA kernels.
    pub nvcc: CudaVersion,
    /// The torch release the cell is built against (`2.7.1`).
    pub torch: String,
    /// The symbol-table nodes its audit reads ([`symbols`]).
    pub symbols: BTreeSet<String>,
    /// The compatibility node (`compat.<cell>`): which other torch releases
    /// of its CUDA major load the audited wheel. Not among [`Self::nodes`]:
    /// the wheel's build does not need it.
    pub compat: String,
    /// The symbol-table nodes the compatibility node reads beyond
    /// [`Self::symbols`].
    pub compat_symbols: BTreeSet<String>,
    /// What the wheel records of its origin (also in the wheel node's
    /// recipe): what `cuwheel reproduce` compares a wheel with.
    pub provenance: Provenance,
}

impl PlanCell {
    /// Every node the cell's wheel is made of: kernels, bindings, links,
    /// the wheel, the symbol tables and its audit.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.kernels
            .iter()
            .chain(&self.bindings)
            .chain(&self.links)
            .chain([&self.wheel])
            .chain(&self.symbols)
            .chain([&self.audit])
            .map(String::as_str)
    }
}

/// A cell for unit tests: the given kernel nodes and `[binding, link, wheel,
/// audit]` nodes, torch 2.11 built with nvcc 13.0. The host stages' unit
/// tests use it too, through the feature `test-support`.
#[cfg(any(test, feature = "test-support"))]
pub fn test_plan_cell(kernels: &[&str], nodes: [&str; 4]) -> PlanCell {
    let [binding, link, wheel, audit] = nodes.map(str::to_string);
    PlanCell {
        flavour: BindingFlavour::TorchLibrary,
        claims: ["torch211".to_string()].into(),
        kernels: kernels.iter().map(|k| k.to_string()).collect(),
        bindings: [binding].into(),
        links: [link].into(),
        wheel,
        audit,
        predicted_wheel_file: "w.whl".into(),
        platform: PlatformRule {
            least_compatible: "manylinux_2_31_x86_64".into(),
            most_compatible: "manylinux_2_28_x86_64".into(),
        },
        nvcc: CudaVersion::new(13, 0),
        torch: "2.11.0".into(),
        symbols: BTreeSet::new(),
        compat: "compat".into(),
        compat_symbols: BTreeSet::new(),
        provenance: Provenance::default(),
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

/// The kernel objects of one module, compiler set and (serving) flavour:
/// node name → object.
type KernelsOf = BTreeMap<(usize, Compilers, BindingFlavour), BTreeMap<String, String>>;

impl Plan {
    /// Plans every node of `cells`. `lock_path` only names the lock in errors.
    pub fn new(
        config: &Config,
        project: &ProjectSources,
        cells: &[Cell],
        lock: &Lock,
        lock_path: &Path,
    ) -> Result<Plan, PlanError> {
        let cell_plans = cells
            .iter()
            .map(|cell| CellPlan::new(cell, lock, lock_path))
            .collect::<Result<Vec<_>, _>>()?;
        let to_pypi = match &config.pypi {
            Some(pypi) => pypi::choose(pypi, &cells.iter().collect::<Vec<_>>())?,
            None => BTreeSet::new(),
        };
        let mut pypi_cells = BTreeMap::new();
        let mut sets: BTreeSet<Compilers> = BTreeSet::new();
        for cp in &cell_plans {
            sets.insert(cp.compilers.clone());
            sets.insert(cp.compilers.without_cuda());
        }
        let mut nodes = BTreeMap::new();
        let kernels_of = kernel_nodes(config, project, &cell_plans, &sets, &mut nodes)?;
        // Each link by its key (module, compiler set, Python or abi3), with
        // its module and the cells it goes into; each cell's (module, key).
        let mut links: BTreeMap<String, (LinkedModule, usize, BTreeSet<String>)> = BTreeMap::new();
        let mut cell_links: Vec<Vec<(usize, String)>> = Vec::new();
        let mut plan_cells = BTreeMap::new();
        for cp in &cell_plans {
            let cell = cp.cell;
            let name = cell.name().to_string();
            let mut planned = PlanCell {
                flavour: cell.flavour,
                claims: cp.claims.clone(),
                kernels: BTreeSet::new(),
                bindings: BTreeSet::new(),
                links: BTreeSet::new(),
                wheel: String::new(),
                audit: String::new(),
                predicted_wheel_file: String::new(),
                platform: PlatformRule::default(),
                nvcc: cp.nvcc(),
                torch: String::new(),
                symbols: BTreeSet::new(),
                compat: String::new(),
                compat_symbols: BTreeSet::new(),
                provenance: Provenance::default(),
            };
            let mut own = Vec::new();
            for (index, module) in config.modules.iter().enumerate() {
                let flavour = BindingFlavour::serving(cell.flavour, &module.flavours())
                    .ok_or_else(|| PlanError::FlavourNotServed {
                        cell: name.clone(),
                        module: module.name.value.to_string(),
                        flavour: cell.flavour,
                    })?;
                let fp = flavour_plan(flavour);
                let compilers = if module.cuda {
                    cp.compilers.clone()
                } else {
                    cp.compilers.without_cuda()
                };
                let python = cell.python.filter(|_| fp.per_python());
                let key = format!(
                    "{}{}-{}",
                    module_part(&config.modules, module),
                    compilers.name_prefix(&sets),
                    fp.python_part(python)
                );
                let units = project
                    .modules
                    .get(index)
                    .and_then(|sources| sources.bindings.get(&flavour))
                    .cloned()
                    .unwrap_or_default();
                let paths: Vec<PathBuf> = units.iter().map(|tu| tu.path.clone()).collect();
                let binding = BindingObject {
                    name: format!("{}{key}", binding::NAME_PREFIX),
                    flavour,
                    torch: cell.torch,
                    stems: kernel::unique_stems(&paths)?,
                    sources: units,
                    compilers: compilers.clone(),
                    python: cp.python_headers(fp.per_python())?,
                };
                let kernels = kernels_of
                    .get(&(index, compilers.clone(), flavour))
                    .cloned()
                    .unwrap_or_default();
                planned.kernels.extend(kernels.keys().cloned());
                planned.bindings.insert(binding.name.clone());
                let link = LinkedModule {
                    name: String::new(),
                    flavour,
                    python,
                    arch: cell.arch,
                    compilers,
                    kernels,
                    binding: binding.name.clone(),
                    binding_objects: binding.objects(),
                };
                nodes
                    .entry(binding.name.clone())
                    .or_insert_with(|| binding.node(module, archs_of(config, &binding.compilers)));
                links
                    .entry(key.clone())
                    .or_insert_with(|| (link, index, BTreeSet::new()))
                    .2
                    .insert(name.clone());
                own.push((index, key));
            }
            plan_cells.insert(name, planned);
            cell_links.push(own);
        }
        // A link one cell uses is named for the cell (`link-cu130-py313`),
        // one several share for its key (`link-_cpu-torch211-abi3`).
        for (key, (link, index, users)) in &mut links {
            let module = &config.modules[*index];
            link.name = match users.iter().next() {
                Some(cell) if users.len() == 1 => {
                    format!(
                        "{}{}{cell}",
                        link::NAME_PREFIX,
                        module_part(&config.modules, module)
                    )
                }
                _ => format!("{}{key}", link::NAME_PREFIX),
            };
            nodes.insert(link.name.clone(), link.node(module));
        }
        for (cp, own) in cell_plans.iter().zip(cell_links) {
            let planned = plan_cells
                .get_mut(&cp.cell.name().to_string())
                .expect("planned above");
            let mut modules = Vec::new();
            for (index, key) in own {
                let (link, _, _) = &links[&key];
                let module = &config.modules[index];
                let file = link.file_name(module);
                let dir = module.name.value.package_dir();
                modules.push(ModuleFile {
                    link: link.name.clone(),
                    member: if dir.is_empty() {
                        file.clone()
                    } else {
                        format!("{dir}/{file}")
                    },
                    file,
                });
                planned.links.insert(link.name.clone());
            }
            let release =
                lock.facts
                    .torch
                    .get(&cp.cell.torch)
                    .ok_or_else(|| PlanError::CellNotLocked {
                        cell: cp.cell.name().to_string(),
                        lock: lock_path.to_path_buf(),
                    })?;
            let arch = cp.cell.arch;
            let most_compatible = release
                .for_arch(arch)
                .and_then(|wheels| wheels.platform)
                .ok_or_else(|| PlanError::CellNotLocked {
                    cell: cp.cell.name().to_string(),
                    lock: lock_path.to_path_buf(),
                })?;
            let platform = PlatformRule {
                least_compatible: config.baseline.platform_tag_for(arch),
                most_compatible: most_compatible.to_string(),
            };
            let assembly = WheelAssembly::new(
                config,
                project,
                lock,
                cp,
                modules.clone(),
                &platform,
                Channel::Index,
            )?;
            let tables = |scope| {
                let stable_abi = planned.flavour.stable_abi();
                AuditTables::new(lock, cp, &planned.claims, stable_abi, scope, lock_path)
            };
            let (tables, compared) = (tables(Scope::Claimed)?, tables(Scope::Compared)?);
            let wheel_node = assembly.wheel_node();
            let audit_node = assembly.audit_node(&tables);
            let compat_node = assembly.compat_node(&compared);
            for node in tables.nodes.iter().chain(&compared.nodes) {
                let set = match tables.nodes.contains(node) {
                    true => &mut planned.symbols,
                    false => &mut planned.compat_symbols,
                };
                set.insert(node.name.clone());
                nodes
                    .entry(node.name.clone())
                    .or_insert_with(|| node.clone());
            }
            planned.wheel = wheel_node.name.clone();
            planned.audit = audit_node.name.clone();
            planned.compat = compat_node.name.clone();
            planned.predicted_wheel_file = assembly.wheel_file.clone();
            planned.platform = platform.clone();
            planned.torch = release.version.clone();
            planned.provenance = assembly.recipe.provenance.clone();
            for node in [wheel_node, audit_node, compat_node] {
                nodes.insert(node.name.clone(), node);
            }
            if let Some(pypi) = config
                .pypi
                .as_ref()
                .filter(|_| to_pypi.contains(&cp.cell.name().to_string()))
            {
                let channel = Channel::Pypi {
                    max_file_size: pypi.max_file_size,
                };
                let assembly =
                    WheelAssembly::new(config, project, lock, cp, modules, &platform, channel)?;
                let (wheel_node, audit_node) =
                    (assembly.wheel_node(), assembly.audit_node(&tables));
                pypi_cells.insert(
                    cp.cell.name().to_string(),
                    pypi::PypiCell {
                        wheel: wheel_node.name.clone(),
                        audit: audit_node.name.clone(),
                        predicted_wheel_file: assembly.wheel_file.clone(),
                    },
                );
                for node in [wheel_node, audit_node] {
                    nodes.insert(node.name.clone(), node);
                }
            }
        }
        Ok(Plan {
            cells: plan_cells,
            nodes,
            pypi: config.pypi.as_ref().map(|pypi| pypi::PypiPlan {
                max_file_size: pypi.max_file_size,
                cells: pypi_cells,
            }),
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

/// The GPU archs objects of `compilers` are built for: the config's list for
/// its toolkit (the compatibility check guarantees one for every cell's
/// nvcc); none for a CPU-only set.
pub(crate) fn archs_of<'c>(config: &'c Config, compilers: &Compilers) -> &'c [CudaArch] {
    compilers
        .cuda
        .as_ref()
        .and_then(|cuda| config.cuda_archs.for_toolkit(cuda.version))
        .unwrap_or_default()
}

/// The part of node names that says which module, where there are several.
fn module_part(modules: &[Module], module: &Module) -> String {
    if modules.len() > 1 {
        format!("{}-", module_label(modules, module))
    } else {
        String::new()
    }
}

/// A module's name inside node names: its last component (`_C`), or its
/// whole dotted name where another module ends the same way
/// (`torch_harmonics.disco._C` beside `torch_harmonics.attention._C`).
fn module_label(modules: &[Module], module: &Module) -> String {
    let leaf = module.name.value.leaf();
    let shared = modules
        .iter()
        .filter(|m| m.name.value.leaf() == leaf)
        .count()
        > 1;
    sanitize_name(if shared {
        module.name.value.as_str()
    } else {
        leaf
    })
}

/// Every kernel node: each kernel TU of each module with each compiler set
/// and flavour the cells build it with (the CUDA sets, or the CPU sets for
/// a `cuda = false` module; the flavour's own kernels where it names some).
/// Kernels are named by TU and compiler set, so a TU two flavours list is
/// one node; a flavour with kernel defines (the stable ABI's) adds its tag
/// (`kernel-cuda130-stable-axpby`). A TU two modules compile gets the
/// module's name in its node name. Returns each module's kernel objects
/// per compiler set and flavour.
fn kernel_nodes(
    config: &Config,
    project: &ProjectSources,
    cell_plans: &[CellPlan<'_>],
    sets: &BTreeSet<Compilers>,
    nodes: &mut BTreeMap<String, Node>,
) -> Result<KernelsOf, PlanError> {
    // (module, compiler set, flavour, torch) of every module of every cell.
    let mut builds = BTreeSet::new();
    for cp in cell_plans {
        for (index, module) in config.modules.iter().enumerate() {
            let Some(flavour) = BindingFlavour::serving(cp.cell.flavour, &module.flavours()) else {
                continue;
            };
            let compilers = if module.cuda {
                cp.compilers.clone()
            } else {
                cp.compilers.without_cuda()
            };
            builds.insert((index, compilers, flavour, cp.cell.torch));
        }
    }
    let sources_of = |index: usize, flavour: BindingFlavour| {
        project
            .modules
            .get(index)
            .map(|m| m.kernels_for(flavour))
            .unwrap_or_default()
    };
    // Stems are unique among the TUs of one tag (every shared kernel, or
    // every kernel of one flavour with defines).
    let mut paths_of_tag: BTreeMap<Option<&str>, BTreeSet<PathBuf>> = BTreeMap::new();
    for (index, _, flavour, _) in &builds {
        let tag = flavour_plan(*flavour).kernel_tag();
        let paths = sources_of(*index, *flavour)
            .iter()
            .map(|tu| tu.path.clone());
        paths_of_tag.entry(tag).or_default().extend(paths);
    }
    let mut stems: BTreeMap<(Option<&str>, PathBuf), String> = BTreeMap::new();
    for (tag, paths) in paths_of_tag {
        let paths: Vec<PathBuf> = paths.into_iter().collect();
        for (path, stem) in paths.iter().zip(kernel::unique_stems(&paths)?) {
            stems.insert((tag, path.clone()), stem);
        }
    }
    // Base name → (module, object) for every object planned under it.
    let mut by_name: BTreeMap<String, Vec<(usize, KernelObject)>> = BTreeMap::new();
    // Each build's node base names.
    let mut build_names: Vec<((usize, Compilers, BindingFlavour), Vec<String>)> = Vec::new();
    for (index, compilers, flavour, torch) in builds {
        let fp = flavour_plan(flavour);
        let tag = fp.kernel_tag();
        let prefix = match tag {
            Some(tag) => format!("{}-{tag}", compilers.name_prefix(sets)),
            None => compilers.name_prefix(sets),
        };
        let mut names = Vec::new();
        for tu in sources_of(index, flavour) {
            let stem = stems[&(tag, tu.path.clone())].clone();
            let object = KernelObject {
                name: format!("{}{prefix}-{stem}", kernel::NAME_PREFIX),
                source: tu.clone(),
                stem,
                compilers: compilers.clone(),
                defines: fp.kernel_defines(torch),
            };
            names.push(object.name.clone());
            let planned = by_name.entry(object.name.clone()).or_default();
            if !planned.contains(&(index, object.clone())) {
                planned.push((index, object));
            }
        }
        build_names.push(((index, compilers, flavour), names));
    }
    // Each (base name, module) → the node name and object.
    let mut named: BTreeMap<(String, usize), (String, String)> = BTreeMap::new();
    for (name, objects) in by_name {
        let shared = objects.len() == 1;
        for (index, mut object) in objects {
            let module: &Module = &config.modules[index];
            if !shared {
                object.name = format!("{name}-{}", module_label(&config.modules, module));
            }
            let node = object.node(module, archs_of(config, &object.compilers));
            named.insert((name.clone(), index), (node.name.clone(), object.object()));
            nodes.insert(node.name.clone(), node);
        }
    }
    let mut kernels_of: KernelsOf = BTreeMap::new();
    for (key, names) in build_names {
        let index = key.0;
        let objects = kernels_of.entry(key).or_default();
        for name in names {
            let (node, object) = named[&(name, index)].clone();
            objects.insert(node, object);
        }
    }
    Ok(kernels_of)
}
