//! The last nodes of a cell: the wheel assembly, its audit and its
//! compatibility table, all run by the Nix-built driver.
//!
//! In: the cell, its link nodes (one per extension module), the package
//! files, the license files and the recipe (METADATA, tag, provenance).
//! Out: two [`Node`]s — `wheel-<cell>` stages the members at their wheel
//! paths (license files under `.dist-info/licenses/`) and writes
//! `$out/<wheel file>` with `cuwheel build-wheel`, which computes the
//! platform tag from the linked modules (so the file name here is a
//! prediction); `audit-<cell>` copies that one wheel beside `audit.txt` and `audit.json` and
//! fails when `cuwheel audit` does, so a wheel that fails is never a build
//! result. The audit's load check reads the symbol tables of the torch
//! releases the wheel claims ([`super::symbols`]); `compat-<cell>`, built
//! only when asked (`compat.<cell>`), runs `cuwheel load-check` on the
//! audited wheel against every release of its CUDA major and writes
//! `compat.txt` and `compat.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::build::sbom::SbomInputs;
use crate::build::{Provenance, ToolchainIdentity, WheelRecipe};
use crate::lock::format::Lock;
use crate::plan::cell::CellPlan;
use crate::plan::compile::stage_files;
use crate::plan::shell::quote;
use crate::plan::symbols::AuditTables;
use crate::plan::{Input, Node, PlanError, ProjectSources, archs_of, metadata, slash_path};
use crate::spec::{Config, PackageFile};
use crate::wheel::{PlatformRule, TagSet, WheelFilename};

/// The wheel assembly node's name starts with this.
pub const WHEEL_PREFIX: &str = "wheel-";
/// The audit node's name starts with this: its output is the cell's result.
pub const AUDIT_PREFIX: &str = "audit-";
/// The compatibility node's name starts with this.
pub const COMPAT_PREFIX: &str = "compat-";

/// Where the driver's store path is, in both nodes.
const DRIVER_VAR: &str = "cuwheel";

/// One extension module of a wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleFile {
    /// The link node and the file it writes.
    pub link: String,
    pub file: String,
    /// Its path in the wheel: `demo_ext/_C.abi3.so`.
    pub member: String,
}

/// Where a wheel goes: the per-CUDA index, with the cell's local label, or
/// PyPI, with none and the PyPI rules checked by its audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Index,
    Pypi { max_file_size: u64 },
}

/// A PyPI wheel's nodes are named for its cell with this before it:
/// `wheel-pypi-cu130-py313`.
pub const PYPI_PREFIX: &str = "pypi-";

/// One cell's wheel: what goes in it and how it is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelAssembly {
    /// The cell's name, or `pypi-<cell>` for its PyPI wheel.
    pub cell: String,
    pub channel: Channel,
    pub modules: Vec<ModuleFile>,
    pub package_files: Vec<PackageFile>,
    /// Relative to the project; shipped as `.dist-info/licenses/<path>`.
    pub license_files: Vec<PathBuf>,
    /// `demo_ext-0.1.0+pt211cu130.dist-info`.
    pub dist_info: String,
    /// The wheel's file name as predicted (the build computes the platform
    /// tag: [`crate::wheel::PlatformRule`]).
    pub wheel_file: String,
    pub recipe: WheelRecipe,
}

impl WheelAssembly {
    /// The wheel of one cell for `channel`: its modules, package and license
    /// files, METADATA and provenance.
    pub(super) fn new(
        config: &Config,
        project: &ProjectSources,
        lock: &Lock,
        cp: &CellPlan<'_>,
        modules: Vec<ModuleFile>,
        platform: &PlatformRule,
        channel: Channel,
    ) -> Result<WheelAssembly, PlanError> {
        let cell = cp.cell;
        let name = cell.name().to_string();
        let version = match channel {
            Channel::Index => cell.wheel_version(&config.version),
            Channel::Pypi { .. } => config.version.without_local(),
        };
        let predicted_tag = format!("{}-{}", cell.interpreter_abi(), platform.predicted());
        let filename = WheelFilename {
            name: config.name.clone(),
            version: version.clone(),
            build: None,
            tags: TagSet::parse(&predicted_tag).map_err(|_| PlanError::BadTag {
                cell: name.clone(),
                tag: predicted_tag.clone(),
            })?,
        };
        let mut roles = vec![("gcc", &cp.compilers.gcc), ("torch", &cp.compilers.torch)];
        if let Some(cuda) = &cp.compilers.cuda {
            roles.push(("cuda", &cuda.toolchain));
        }
        if let Some(python) = cp.python.as_ref().or(cp.limited.as_ref()) {
            roles.push(("python", &python.toolchain));
        }
        let toolchains = roles
            .into_iter()
            .map(|(role, name)| (role.to_string(), ToolchainIdentity::of(lock, name)))
            .collect();
        let sbom = SbomInputs::of(lock, &toolchains, cell.cuda);
        let recipe = WheelRecipe {
            metadata: metadata::core_metadata(
                config,
                project.description.as_ref(),
                &project.license_files,
                cell,
                version,
                matches!(channel, Channel::Pypi { .. }),
            ),
            tag: cell.interpreter_abi(),
            platform: platform.clone(),
            provenance: Provenance {
                cell: name.clone(),
                cuda_archs: archs_of(config, &cp.compilers)
                    .iter()
                    .map(|a| a.to_string())
                    .collect(),
                config_sha256: project.config_sha256.clone(),
                source_sha256: Provenance::source_sha256(&project.digests),
                sources: project.digests.clone(),
                toolchains,
                seeds: Provenance::seeds(lock),
                nvcc: cp.nvcc().to_string(),
                cuwheel: env!("CARGO_PKG_VERSION").to_string(),
            },
            sbom,
        };
        Ok(WheelAssembly {
            cell: match channel {
                Channel::Index => name,
                Channel::Pypi { .. } => format!("{PYPI_PREFIX}{name}"),
            },
            channel,
            modules,
            package_files: project.package_files.clone(),
            license_files: project.license_files.clone(),
            dist_info: filename.dist_info_dir(),
            wheel_file: filename.to_string(),
            recipe,
        })
    }
}

impl WheelAssembly {
    pub fn wheel_node(&self) -> Node {
        let mut inputs = BTreeMap::from([(DRIVER_VAR.to_string(), Input::Driver { driver: true })]);
        let mut files = Vec::new();
        for (i, module) in self.modules.iter().enumerate() {
            let var = format!("module{i}");
            files.push((
                format!("\"${var}\"/{}", quote(&module.file)),
                module.member.clone(),
            ));
            inputs.insert(
                var,
                Input::Node {
                    node: module.link.clone(),
                },
            );
        }
        let sources = self
            .package_files
            .iter()
            .map(|file| ("package", file.source.clone(), file.member.clone()))
            .chain(self.license_files.iter().map(|file| {
                let member = format!("{}/licenses/{}", self.dist_info, slash_path(file));
                ("license", file.clone(), member)
            }));
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (kind, source, member) in sources {
            let count = counts.entry(kind).or_default();
            let var = format!("{kind}{count}");
            *count += 1;
            files.push((format!("\"${var}\""), member));
            inputs.insert(
                var,
                Input::Source {
                    source: slash_path(&source),
                },
            );
        }
        let mut s = format!(
            "# wheel-{}: {} (predicted; the driver tags it from the modules' symbols), assembled by \
             the driver from the modules, the package and license files.\n",
            self.cell, self.wheel_file
        );
        s += "# Written by `cuwheel plan`.\n";
        // The members at their paths under tree/.
        let files: Vec<(String, String)> = files
            .into_iter()
            .map(|(from, member)| (from, format!("tree/{member}")))
            .collect();
        s += &stage_files(&files);
        s += "cat > recipe.json <<'CUWHEEL_RECIPE'\n";
        s += &self.recipe.to_json();
        s += "CUWHEEL_RECIPE\n";
        s += &format!(
            "\"${DRIVER_VAR}\"/bin/cuwheel-build build-wheel --recipe recipe.json --tree tree --out \"$out\"\n"
        );
        Node {
            name: format!("{WHEEL_PREFIX}{}", self.cell),
            script: s,
            inputs,
        }
    }

    /// The audit node; `tables` are its load check's symbol tables.
    pub fn audit_node(&self, tables: &AuditTables) -> Node {
        let inputs = load_check_inputs("wheel", format!("{WHEEL_PREFIX}{}", self.cell), tables);
        let failed = quote(&format!(
            "cuwheel: the audit of cell {} failed (report above): no result is built for it. Fix \
             what the report names, or run `cuwheel audit` on the wheel for details.",
            self.cell
        ));
        let not_one = quote(&format!(
            "cuwheel: wheel-{} did not write exactly one .whl",
            self.cell
        ));
        let s = format!(
            "# audit-{cell}: the wheel of cell {cell} beside its audit report; fails when the \
             audit does.\n\
             # Written by `cuwheel plan`.\n\
             set -- \"$wheel\"/*.whl\n\
             if [ \"$#\" != 1 ] || [ ! -f \"$1\" ]; then echo {not_one} >&2; exit 1; fi\n\
             file=\"${{1##*/}}\"\n\
             mkdir -p \"$out\"\n\
             cp \"$1\" \"$out/$file\"\n\
             audit() {{ \"${DRIVER_VAR}\"/bin/cuwheel-build audit {arguments} \"$@\"; }}\n\
             status=0\n\
             audit \"$out/$file\" > \"$out\"/audit.txt || status=$?\n\
             audit --json \"$out/$file\" > \"$out\"/audit.json || true\n\
             cat \"$out\"/audit.txt\n\
             if [ \"$status\" != 0 ]; then echo {failed} >&2; exit 1; fi\n",
            cell = self.cell,
            arguments = match self.channel {
                Channel::Index => tables.arguments(),
                Channel::Pypi { max_file_size } => format!(
                    "{} --pypi --max-file-size {max_file_size}",
                    tables.arguments()
                ),
            },
        );
        Node {
            name: format!("{AUDIT_PREFIX}{}", self.cell),
            script: s,
            inputs,
        }
    }

    /// The compatibility node: the audited wheel loaded against the
    /// releases of `tables` (built with [`super::symbols::Scope::Compared`]).
    pub fn compat_node(&self, tables: &AuditTables) -> Node {
        let inputs = load_check_inputs("audit", format!("{AUDIT_PREFIX}{}", self.cell), tables);
        let not_one = quote(&format!(
            "cuwheel: audit-{} does not hold exactly one .whl",
            self.cell
        ));
        let s = format!(
            "# compat-{cell}: which torch releases of its CUDA major the audited wheel of cell \
             {cell} loads with.\n\
             # Written by `cuwheel plan`.\n\
             set -- \"$audit\"/*.whl\n\
             if [ \"$#\" != 1 ] || [ ! -f \"$1\" ]; then echo {not_one} >&2; exit 1; fi\n\
             file=\"${{1##*/}}\"\n\
             mkdir -p \"$out\"\n\
             check() {{ \"${DRIVER_VAR}\"/bin/cuwheel-build load-check {arguments} \"$@\"; }}\n\
             # From the wheel's directory: the reports name the file, not a store path.\n\
             cd \"$audit\"\n\
             check \"$file\" > \"$out\"/compat.txt\n\
             check --json \"$file\" > \"$out\"/compat.json\n\
             cat \"$out\"/compat.txt\n",
            cell = self.cell,
            arguments = tables.arguments(),
        );
        Node {
            name: format!("{COMPAT_PREFIX}{}", self.cell),
            script: s,
            inputs,
        }
    }
}

/// The inputs of a node that runs the load check: the driver, the node
/// holding the wheel (as `var`) and the symbol tables.
fn load_check_inputs(var: &str, node: String, tables: &AuditTables) -> BTreeMap<String, Input> {
    let mut inputs = BTreeMap::from([
        (DRIVER_VAR.to_string(), Input::Driver { driver: true }),
        (var.to_string(), Input::Node { node }),
    ]);
    inputs.extend(tables.inputs());
    inputs
}
