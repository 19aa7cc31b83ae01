//! The toolkit sources' pins, carried out: what each source offers as pip
//! lists it, and the files of each toolkit the lock asks for, pinned through
//! the registries' clients as its source's [`Pins`] says.
//!
//! In: pip (for the listing), a [`CudaRequest`] and the resolver, which
//! answers [`Registries`]. Out: the available toolkits; each toolkit's
//! pinned store names; for `cuwheel lock --refresh`, whether a suite's index
//! still carries a Debian toolkit's release. The sources themselves
//! ([`crate::lock::toolkits`]) are pure: they say what pins a toolkit, and this
//! is the one place that asks a registry for it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};

use super::debian::Index;
use super::pip::{Pip, ResolvedWheel, Target};
use crate::lock::data::PypiData;
use crate::lock::toolkits::{CudaRequest, Listing, Pins, SOURCES, TARGET_RUNTIME, available};
use crate::spec::{Baseline, CompatTable, CudaVersion, PythonVersion, ToolkitOrigin};
use crate::wheel::Arch;

/// pip's listing for the baseline's platform.
struct PipListing<'a> {
    pip: &'a Pip,
    baseline: &'a Baseline,
}

/// The Python pip lists with: the packages listed are pure
/// (`py2.py3-none-any`), so any CPython 3 lists the same releases.
const LISTING_PYTHON: PythonVersion = PythonVersion::new(3, 12);

impl Listing for PipListing<'_> {
    fn releases(&self, package: &str) -> Result<Vec<String>> {
        let target = Target::manylinux(LISTING_PYTHON, self.baseline);
        self.pip.index_versions(package, &target)
    }
}

/// Asks every source what it offers (pip lists for those that ask) and
/// returns the available toolkits.
pub fn probe(
    pip: &Pip,
    baseline: &Baseline,
    compat: &CompatTable,
) -> Result<BTreeMap<CudaVersion, ToolkitOrigin>> {
    let listing = PipListing { pip, baseline };
    let offers = SOURCES
        .iter()
        .map(|source| source.offers(&listing))
        .collect::<Result<Vec<_>>>()?;
    Ok(available(offers, compat))
}

/// What pinning a toolkit may ask of the registries; the lock's resolver
/// answers, recording every file pinned for the cells that use the toolkit.
pub trait Registries {
    /// The index of a Debian suite.
    fn debian_index(&self, suite: &str) -> &Index;
    /// Pins the closure of `data/debian.toml`'s recipe `recipe` in `suite`.
    fn debian_closure(&mut self, recipe: &str, suite: &str) -> Result<BTreeSet<String>>;
    /// What pip installs for `requirement` (dependencies included) for
    /// CPython `python` on the baseline's platform for `arch`.
    fn pip_resolve(
        &mut self,
        requirement: &str,
        python: PythonVersion,
        arch: Arch,
    ) -> Result<Vec<ResolvedWheel>>;
    /// Downloads and pins one wheel pip resolved.
    fn pypi_artifact(&mut self, wheel: &ResolvedWheel) -> Result<String>;
}

/// Pins the files of the toolkit `request` asks for, as its source says,
/// and returns their store names.
pub fn resolve(request: &CudaRequest, registries: &mut dyn Registries) -> Result<BTreeSet<String>> {
    let version = request.version.to_string();
    match request.source().pins(&version, &request.fields) {
        Pins::DebianClosure {
            recipe,
            suite,
            package,
        } => {
            if let Err(carried) = carries(registries.debian_index(&suite), package, &version) {
                bail!(
                    "Debian {suite} carries {carried}, not CUDA {version}: \
                     crates/cuwheel-build/src/lock/data/debian.toml [cuda-suites] must name a \
                     suite that has it"
                );
            }
            registries.debian_closure(recipe, &suite)
        }
        Pins::PypiComponents { requirement } => {
            pin_components(&requirement, request.python, request.arch, registries)
        }
    }
}

/// Whether `index` carries `package` at CUDA `version` (`X.Y.*`); `Err`
/// says what it carries instead.
pub fn carries(index: &Index, package: &str, version: &str) -> Result<(), String> {
    match index.get(package).map(|p| p.version.as_str()) {
        Some(v) if v.starts_with(&format!("{version}.")) => Ok(()),
        Some(v) => Err(format!("{package} {v}")),
        None => Err(format!("{package} (none)")),
    }
}

/// Resolves `requirement` (a `cuda-toolkit[...]` requirement) through pip
/// for CPython `python` and pins the components `data/pypi.toml` names:
/// all x86_64 wheels (nvcc runs here), but for cells of another `arch` the
/// runtime library ([`TARGET_RUNTIME`]), resolved for that architecture.
pub fn pin_components(
    requirement: &str,
    python: PythonVersion,
    arch: Arch,
    registries: &mut dyn Registries,
) -> Result<BTreeSet<String>> {
    let data = &PypiData::embedded().cuda_wheels;
    eprintln!("lock: resolving {requirement}");
    let resolved = registries.pip_resolve(requirement, python, Arch::X86_64)?;
    let target = match arch {
        Arch::X86_64 => None,
        other => {
            eprintln!("lock: resolving {requirement} for {other}");
            Some(registries.pip_resolve(requirement, python, other)?)
        }
    };
    let mut artifacts = BTreeSet::new();
    for package in &data.packages {
        let (from, on) = match &target {
            Some(target) if package == TARGET_RUNTIME => (target, arch),
            _ => (&resolved, Arch::X86_64),
        };
        let wheel = from.iter().find(|w| &w.name == package).with_context(|| {
            format!(
                "pip's resolution of {requirement} for {on} has no {package}: \
                 crates/cuwheel-build/src/lock/data/pypi.toml names a component the \
                 metapackage no longer pins"
            )
        })?;
        artifacts.insert(registries.pypi_artifact(wheel)?);
    }
    Ok(artifacts)
}
