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
//! of the cells serving CUDA 12.6, whichever nvcc builds them). An aarch64
//! cell's toolchains and bundle carry `-aarch64` ([`for_arch`]): its cross
//! gcc, its toolkit (x86_64's nvcc with aarch64's runtime), arm64 Python
//! headers and the aarch64 torch wheel; the x86_64 gcc is still pinned,
//! since nvcc runs on its glibc. A
//! torch-stable cell uses the torch of every release it claims (its
//! `claims`), so that its audit can check the wheel against each.

use std::collections::{BTreeMap, BTreeSet};

use crate::lock::data::DebianData;
use crate::lock::format::{CellToolchains, DRIVER};
use crate::lock::toolkits::{self, CudaRequest};
use crate::spec::compat::join;
use crate::spec::{
    Baseline, Cell, CompatTable, CudaVersion, HeaderArchive, MatrixFacts, PythonAbi, PythonVersion,
    TorchVersion, TorchWheel,
};
use crate::wheel::Arch;
use anyhow::{Context, Result, bail};
pub use cuwheel_build::lock::data::PypiData;

/// What one toolchain is to be resolved from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Gcc {
        suite: String,
        gcc: u32,
        /// A cross compiler's target; `None` for the host's.
        target: Option<Arch>,
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
    /// The Debian suites the plan reads, sorted (the unit tests check them).
    #[cfg(test)]
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

/// A toolchain's or bundle's name for cells of `arch`: `name` itself for
/// x86_64, `name-aarch64` for aarch64 (`cuda130-aarch64`, `cu130-aarch64`).
pub fn for_arch(name: String, arch: Arch) -> String {
    match arch {
        Arch::X86_64 => name,
        other => format!("{name}-{other}"),
    }
}

/// Names and requests for `cells` (already checked against the facts).
pub fn plan(cells: &[Cell], sources: &Sources<'_>) -> Result<Plan> {
    let suite = sources
        .compat
        .baseline(sources.baseline)
        .expect("the compatibility check refuses unknown baselines");
    // The host's gcc: x86_64 cells build with it, and every CUDA toolkit's
    // programs run on its glibc.
    let host_gcc = format!("gcc-{}", suite.debian);
    let mut toolchains = BTreeMap::new();
    let mut users: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cell_roles = BTreeMap::new();
    let mut bundles: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    toolchains.insert(
        host_gcc.clone(),
        Request::Gcc {
            suite: suite.debian.clone(),
            gcc: suite.gcc,
            target: None,
        },
    );
    for arch in cells.iter().map(|cell| cell.arch).collect::<BTreeSet<_>>() {
        if arch != Arch::X86_64 {
            toolchains.insert(
                for_arch(host_gcc.clone(), arch),
                Request::Gcc {
                    suite: suite.debian.clone(),
                    gcc: suite.gcc,
                    target: Some(arch),
                },
            );
        }
    }

    // torch, per architecture: the wheel of the lowest Python among its
    // cells, else (abi3 only, or only claimed by a torch-stable cell's
    // range) of the lowest Python it has a wheel for.
    let mut torch_python: BTreeMap<(TorchVersion, Arch), PythonAbi> = BTreeMap::new();
    for cell in cells {
        if let Some(python) = cell.python {
            let pinned = torch_python
                .entry((cell.torch, cell.arch))
                .or_insert(python);
            *pinned = (*pinned).min(python);
        }
    }
    let claimed: BTreeSet<(TorchVersion, Arch)> = cells
        .iter()
        .flat_map(|cell| {
            cell.claimed_torches(sources.facts)
                .into_iter()
                .map(|torch| (torch, cell.arch))
        })
        .collect();
    for (torch, arch) in claimed {
        if let std::collections::btree_map::Entry::Vacant(entry) = torch_python.entry((torch, arch))
        {
            let release = &sources.facts.torch[&torch];
            let lowest = release
                .for_arch(arch)
                .and_then(|wheels| wheels.wheels.keys().next().copied());
            let Some(lowest) = lowest else {
                bail!("torch {torch} has no {arch} wheel in the lock's facts");
            };
            entry.insert(lowest);
        }
    }

    let per_python_bundles: BTreeSet<String> = cells
        .iter()
        .filter(|cell| cell.python.is_some())
        .map(|cell| for_arch(cell.cuda.label(), cell.arch))
        .collect();
    for cell in cells {
        let name = cell.name().to_string();
        let arch = cell.arch;
        let bundle = for_arch(cell.cuda.label(), arch);
        let torch = for_arch(cell.torch.label(), arch);
        let python_of_torch = torch_python[&(cell.torch, arch)];
        // A torch-stable cell's wheel claims its whole range: the load check
        // needs each release's libraries.
        let mut claims = BTreeSet::new();
        for version in cell.claimed_torches(sources.facts) {
            let python = torch_python[&(version, arch)];
            let wheel = sources.facts.torch[&version]
                .for_arch(arch)
                .and_then(|wheels| wheels.wheels.get(&python))
                .cloned()
                .ok_or_else(|| {
                    anyhow::anyhow!("torch {version} has no {arch} wheel for Python {python}")
                })?;
            let name = for_arch(version.label(), arch);
            toolchains.insert(name.clone(), Request::Torch { version, wheel });
            claims.insert(name);
        }
        if !cell.is_stable() {
            claims.clear();
        }
        let cuda = for_arch(format!("cuda{}", cell.nvcc.compact()), arch);
        let cuda_request =
            cuda_request(cell.nvcc, &host_gcc, python_of_torch.version, arch, sources)?;
        let request = toolchains.entry(cuda.clone()).or_insert(cuda_request);
        if let Request::Cuda(cuda) = request {
            cuda.python = cuda.python.min(python_of_torch.version);
        }
        let python = match cell.python {
            Some(version) => {
                let name = for_arch(format!("python{}", version.compact()), arch);
                toolchains.insert(name.clone(), python_request(version, arch, sources)?);
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
                let name = for_arch(format!("python{}", version.compact()), arch);
                toolchains.insert(name.clone(), request);
                Some(name)
            }
            _ => None,
        };
        let roles = CellToolchains {
            bundle: bundle.clone(),
            cuda,
            gcc: for_arch(host_gcc.clone(), arch),
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
        if arch != Arch::X86_64 {
            // Its toolkit's nvcc runs on the host gcc's glibc.
            users
                .entry(host_gcc.clone())
                .or_default()
                .insert(name.clone());
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

/// Python headers: the config's archive, else Debian's `libpythonX.Y-dev`
/// (for aarch64 its arm64 package: `pyconfig.h` is per architecture, and
/// the archives are x86_64's).
fn python_request(version: PythonAbi, arch: Arch, sources: &Sources<'_>) -> Result<Request> {
    if let Some(archive) = sources.archives.get(&version) {
        if arch == Arch::X86_64 {
            return Ok(Request::PythonArchive {
                version,
                archive: archive.value.clone(),
            });
        }
    }
    let suite = (!version.free_threaded)
        .then(|| {
            sources
                .debian
                .python_suites
                .get(&version.version.to_string())
        })
        .flatten();
    if let (Some(_), Arch::Aarch64, None) = (sources.archives.get(&version), arch, suite) {
        bail!(
            "cuwheel has no source for Python {version}'s {arch} headers: the archive \
             [tool.cuwheel.matrix.python-headers.\"{version}\"] is used for x86_64 only (its \
             pyconfig.h is one architecture's), and Debian carries arm64 headers of {}; \
             exclude those cells with {{ python = \"{version}\", platform = \"{arch}\" }} in \
             tool.cuwheel.matrix.exclude",
            join(sources.debian.python_suites.keys())
        );
    }
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
        suite: super::apt::suite_key(suite, arch.debian()),
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
    // The archives are x86_64's headers.
    let mut candidates: BTreeSet<PythonAbi> = sources
        .archives
        .keys()
        .copied()
        .filter(|python| !python.free_threaded && cell.arch == Arch::X86_64)
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
    Ok((lowest, python_request(lowest, cell.arch, sources)?))
}

/// The nvcc toolchain, from the source the facts say it comes from, for
/// cells of `arch`.
fn cuda_request(
    version: CudaVersion,
    gcc: &str,
    python: PythonVersion,
    arch: Arch,
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
    if !source.builds_for(arch) {
        let others: Vec<String> = sources
            .facts
            .toolkits
            .iter()
            .filter(|(_, o)| toolkits::by_name(&o.source).is_some_and(|s| s.builds_for(arch)))
            .map(|(v, _)| v.to_string())
            .collect();
        bail!(
            "the {arch} cells of nvcc {version} cannot be built: CUDA {version} comes from {} \
             ({origin}), which has no {arch} runtime library; {arch} cells need a toolkit from \
             a source that has one ({}), so exclude them with {{ cuda = \"<their CUDA>\", \
             platform = \"{arch}\" }} in tool.cuwheel.matrix.exclude",
            source.name(),
            if others.is_empty() {
                "none of this lock's toolkits".to_string()
            } else {
                format!("here: CUDA {}", others.join(", "))
            }
        );
    }
    let mut fields = source.entry(origin, gcc);
    if arch != Arch::X86_64 {
        fields.insert(toolkits::TARGET_FIELD.to_owned(), arch.to_string());
    }
    Ok(Request::Cuda(CudaRequest {
        kind: source.kind().to_owned(),
        version,
        fields,
        python,
        arch,
    }))
}

#[cfg(test)]
#[path = "toolchain_plan_tests.rs"]
mod tests;
