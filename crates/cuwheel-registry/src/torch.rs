//! Facts about torch releases, read from the wheels the package index
//! resolves rather than kept in a table: which minors a `torch` range
//! covers, the CUDA runtime each minor's Linux wheels require, the CPython
//! builds it has wheels for and their platform tag.
//!
//! In: the matrix's torch selectors and Pythons, and pip (its listing of
//! torch releases, and its resolution of `torch==X.Y.*` for each Python,
//! whose report carries each wheel's file name, sha256 and Requires-Dist).
//! Out: a [`TorchRelease`] per minor, for the lock's `facts`. The reading of
//! the metadata ([`cuda_runtime`], [`release`]) is pure.
//!
//! The CUDA runtime is read from the pins torch's wheels carry: torch 2.7
//! to 2.10 require `nvidia-cuda-runtime-cu12==12.6.77` (or 12.8.90), torch
//! 2.11 and later `cuda-toolkit[...]==13.0.2` (13.2.2 for 2.15); torch 2.6
//! writes the same pins in parentheses (`nvidia-cuda-runtime-cu12
//! (==12.4.127)`). Requirements behind an `extra ==` marker are not the
//! default wheel's and are ignored.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};

use super::pip::{Pip, ResolvedWheel, Target};
use crate::spec::{
    ArchWheels, Baseline, Config, CudaVersion, PythonAbi, PythonVersion, TorchRelease,
    TorchSelector, TorchVersion, TorchWheel,
};
use crate::wheel::manylinux::{self, TagPolicy};
use crate::wheel::{Arch, WheelFilename};

/// The Python torch is resolved for when the matrix lists none (a project
/// with torch-library bindings only): every torch from 2.6 on has cp312 wheels.
pub const PROBE_PYTHON: PythonVersion = PythonVersion::new(3, 12);

/// The Pythons torch is resolved for: the matrix's, else [`PROBE_PYTHON`].
pub fn probe_pythons(config: &Config) -> Vec<PythonAbi> {
    if config.matrix.python.is_empty() {
        vec![PythonAbi::regular(PROBE_PYTHON)]
    } else {
        config.matrix.python.clone()
    }
}

/// The CUDA runtime a torch wheel requires, and the requirement it was read
/// from: `cuda-toolkit[…]==X.Y.Z`, `nvidia-cuda-runtime==X.Y.Z` or
/// `nvidia-cuda-runtime-cuNN==X.Y.Z`. `Err` when it names none, or two
/// that disagree.
pub fn cuda_runtime(requires_dist: &[String]) -> Result<(CudaVersion, String), String> {
    let mut found: Vec<(CudaVersion, String)> = Vec::new();
    for requirement in requires_dist {
        let (spec, marker) = match requirement.split_once(';') {
            Some((spec, marker)) => (spec.trim(), marker),
            None => (requirement.trim(), ""),
        };
        if marker.contains("extra") {
            continue;
        }
        let name_end = spec
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
            .unwrap_or(spec.len());
        let name = crate::wheel::pep503::normalize_name(&spec[..name_end]);
        let is_runtime = name == "cuda-toolkit"
            || name == "nvidia-cuda-runtime"
            || name
                .strip_prefix("nvidia-cuda-runtime-cu")
                .is_some_and(|major| {
                    !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())
                });
        if !is_runtime {
            continue;
        }
        let rest = &spec[name_end..];
        let rest = match rest.find(']') {
            Some(close) if rest.trim_start().starts_with('[') => &rest[close + 1..],
            _ => rest,
        };
        let pinned = rest
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim()
            .strip_prefix("==")
            .map(str::trim);
        let Some(version) = pinned else {
            return Err(format!(
                "`{}` does not pin one release (==X.Y.Z), so the CUDA it was built for is unknown",
                requirement.trim()
            ));
        };
        let mut parts = version.split('.');
        let cuda = match (parts.next(), parts.next()) {
            (Some(major), Some(minor)) => format!("{major}.{minor}").parse::<CudaVersion>().ok(),
            _ => None,
        };
        let Some(cuda) = cuda else {
            return Err(format!(
                "`{}` pins `{version}`, which is not a CUDA version",
                requirement.trim()
            ));
        };
        found.push((cuda, spec.to_string()));
    }
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    match &found[..] {
        [one] => Ok(one.clone()),
        [] => Err(
            "its Requires-Dist pins no CUDA runtime (cuda-toolkit, nvidia-cuda-runtime or \
             nvidia-cuda-runtime-cuNN), so it is not a CUDA build of torch"
                .to_string(),
        ),
        several => Err(format!(
            "its Requires-Dist pins several CUDA runtimes: {}",
            several
                .iter()
                .map(|(_, from)| from.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The C++ standard torch's headers require, from their own check in
/// Whether a torch build uses the C++11 ABI, as its `TorchConfig.cmake`
/// tells CMake users (`set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`):
/// `None` where the file does not say.
pub fn cxx11_abi(torch_config_cmake: &str) -> Option<bool> {
    let at = torch_config_cmake.find("_GLIBCXX_USE_CXX11_ABI=")?;
    match torch_config_cmake[at + "_GLIBCXX_USE_CXX11_ABI=".len()..]
        .chars()
        .next()
    {
        Some('1') => Some(true),
        Some('0') => Some(false),
        _ => None,
    }
}

/// `ATen/ATen.h` (torch 2.13 and later: `#error C++20 or later compatible
/// compiler is required`, on `__cplusplus < 202002L`; before, C++17).
pub fn required_standard(aten_h: &str) -> &'static str {
    if aten_h.contains("__cplusplus < 202002L") {
        "c++20"
    } else {
        "c++17"
    }
}

/// The most compatible platform tag of a wheel, by the manylinux policies'
/// priority (`manylinux_2_28_x86_64`); `None` when no tag is manylinux x86_64.
fn best_platform(file: &str) -> Option<(u32, String)> {
    let parsed = WheelFilename::parse(file).ok()?;
    parsed
        .tags
        .expand()
        .into_iter()
        .filter_map(|tag| match manylinux::for_platform_tag(&tag.platform) {
            TagPolicy::Known(policy) | TagPolicy::Nearest(policy) => {
                Some((policy.priority, policy.tag()))
            }
            TagPolicy::NotJudged => None,
        })
        .max()
}

/// One minor's facts from the wheels pip chose for each Python (and the
/// Pythons it found none for). `Err` names the wheel whose metadata cannot
/// be read.
pub fn release(
    minor: TorchVersion,
    wheels: &BTreeMap<PythonAbi, ResolvedWheel>,
    missing: BTreeSet<PythonAbi>,
) -> Result<TorchRelease> {
    let mut cuda: Option<(CudaVersion, String)> = None;
    let mut platform: Option<(u32, String)> = None;
    for wheel in wheels.values() {
        let read = cuda_runtime(&wheel.requires_dist)
            .map_err(|problem| anyhow::anyhow!("torch wheel {}: {problem}", wheel.file))?;
        match &cuda {
            Some((known, from)) if *known != read.0 => bail!(
                "torch {minor}'s wheels disagree on their CUDA: {} requires CUDA {} ({}), another \
                 CUDA {known} ({from}); cuwheel cannot name these cells",
                wheel.file,
                read.0,
                read.1
            ),
            Some(_) => {}
            None => cuda = Some(read),
        }
        let best = best_platform(&wheel.file).with_context(|| {
            format!(
                "torch wheel {} has no manylinux x86_64 platform tag",
                wheel.file
            )
        })?;
        // The release caps its extensions at what all its wheels allow.
        if platform.as_ref().is_none_or(|known| best.0 < known.0) {
            platform = Some(best);
        }
    }
    let (Some((cuda, cuda_from)), Some((_, platform))) = (cuda, platform) else {
        bail!("torch {minor} has no wheel for any of the matrix's Pythons");
    };
    let version = wheels
        .values()
        .map(|wheel| wheel.version.clone())
        .max_by(|a, b| compare_release(a, b))
        .unwrap_or_default();
    Ok(TorchRelease {
        version,
        cuda,
        cuda_from,
        platform,
        wheels: pinned(wheels),
        missing,
        aarch64: None,
    })
}

fn pinned(wheels: &BTreeMap<PythonAbi, ResolvedWheel>) -> BTreeMap<PythonAbi, TorchWheel> {
    wheels
        .iter()
        .map(|(python, wheel)| {
            (
                *python,
                TorchWheel {
                    version: wheel.version.clone(),
                    file: wheel.file.clone(),
                    sha256: wheel.sha256.clone(),
                },
            )
        })
        .collect()
}

/// A minor's wheels for another architecture than x86_64, from what pip
/// chose for each Python: those of the release's CUDA count, and a wheel of
/// another CUDA or none (a CPU build: its Requires-Dist pins no runtime)
/// makes its Python missing. Pure.
pub fn arch_wheels(
    cuda: CudaVersion,
    wheels: &BTreeMap<PythonAbi, ResolvedWheel>,
    mut missing: BTreeSet<PythonAbi>,
) -> ArchWheels {
    let mut kept = BTreeMap::new();
    for (python, wheel) in wheels {
        match cuda_runtime(&wheel.requires_dist) {
            Ok((found, _)) if found == cuda => {
                kept.insert(*python, wheel.clone());
            }
            _ => {
                missing.insert(*python);
            }
        }
    }
    let platform = kept
        .values()
        .filter_map(|w| best_platform(&w.file))
        .min()
        .map(|(_, tag)| tag);
    ArchWheels {
        platform,
        wheels: pinned(&kept),
        missing,
    }
}

/// `2.7.10` after `2.7.9`: numeric parts compared as numbers.
fn compare_release(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parts(a).cmp(&parts(b))
}

/// The minor of a release string (`2.15.0` → 2.15).
fn minor_of(version: &str) -> Option<TorchVersion> {
    let mut parts = version.split('.');
    format!("{}.{}", parts.next()?, parts.next()?).parse().ok()
}

/// Every minor the selectors name, given the releases listed per Python.
pub fn minors(selectors: &[TorchSelector], listed: &[String]) -> BTreeSet<TorchVersion> {
    let mut minors: BTreeSet<TorchVersion> = selectors
        .iter()
        .filter_map(|selector| match selector {
            TorchSelector::Minor(minor) => Some(*minor),
            TorchSelector::Range(_) => None,
        })
        .collect();
    for minor in listed.iter().filter_map(|v| minor_of(v)) {
        if selectors
            .iter()
            .any(|s| matches!(s, TorchSelector::Range(_)) && s.contains(minor))
        {
            minors.insert(minor);
        }
    }
    minors
}

/// The minors the matrix's torch selectors name; where one is a range, the
/// releases pip lists for each Python say which minors it selects (asked
/// every time: a new release may have come).
fn selected_minors(
    pip: &Pip,
    config: &Config,
    pythons: &[PythonAbi],
    baseline: &Baseline,
    progress: &dyn Fn(&str),
) -> Result<BTreeSet<TorchVersion>> {
    let selectors: Vec<TorchSelector> = config.matrix.torch.iter().map(|s| s.value).collect();
    let mut listed = Vec::new();
    if selectors
        .iter()
        .any(|s| matches!(s, TorchSelector::Range(_)))
    {
        for python in pythons {
            progress(&format!("listing torch releases (Python {python})"));
            listed.extend(pip.index_versions("torch", &Target::for_abi(*python, baseline))?);
        }
    }
    Ok(minors(&selectors, &listed))
}

/// Resolves the matrix's torch minors through pip (see the module
/// documentation); `progress` is told what runs.
pub fn probe(
    pip: &Pip,
    config: &Config,
    baseline: &Baseline,
    progress: &dyn Fn(&str),
) -> Result<BTreeMap<TorchVersion, TorchRelease>> {
    let pythons = probe_pythons(config);
    let mut releases = BTreeMap::new();
    for minor in selected_minors(pip, config, &pythons, baseline, progress)? {
        let (wheels, missing) =
            probe_minor(pip, minor, &pythons, baseline, Arch::X86_64, progress)?;
        if wheels.is_empty() {
            // Not released for this platform: the spec says so where the
            // config names it.
            continue;
        }
        let mut found = release(minor, &wheels, missing)?;
        found.aarch64 = probe_aarch64(pip, config, &found, minor, baseline, None, progress)?;
        releases.insert(minor, found);
    }
    Ok(releases)
}

/// The minor's aarch64 wheels when the matrix has aarch64 cells: those of
/// `known` (an earlier lock's) when it answered every Python, else pip's.
fn probe_aarch64(
    pip: &Pip,
    config: &Config,
    release: &TorchRelease,
    minor: TorchVersion,
    baseline: &Baseline,
    known: Option<&ArchWheels>,
    progress: &dyn Fn(&str),
) -> Result<Option<ArchWheels>> {
    if !config.matrix.builds_for(Arch::Aarch64) {
        return Ok(None);
    }
    // What the excludes remove whatever the facts say is not asked (each
    // aarch64 torch wheel is ~400 MB to resolve): a minor whose aarch64
    // cells are all excluded is recorded with no wheels, as are Pythons so.
    let pythons: Vec<PythonAbi> = probe_pythons(config)
        .into_iter()
        .filter(|python| !excluded_on(config, Arch::Aarch64, minor, Some(*python)))
        .collect();
    if excluded_on(config, Arch::Aarch64, minor, None) || pythons.is_empty() {
        return Ok(Some(ArchWheels {
            platform: None,
            wheels: BTreeMap::new(),
            missing: BTreeSet::new(),
        }));
    }
    if let Some(known) = known {
        let answered = |p: &PythonAbi| known.wheels.contains_key(p) || known.missing.contains(p);
        if pythons.iter().all(answered) {
            let mut known = known.clone();
            known.wheels.retain(|python, _| pythons.contains(python));
            known.missing.retain(|python| pythons.contains(python));
            return Ok(Some(known));
        }
    }
    let (wheels, missing) = probe_minor(pip, minor, &pythons, baseline, Arch::Aarch64, progress)?;
    Ok(Some(arch_wheels(release.cuda, &wheels, missing)))
}

/// Whether an exclude of the config removes every `arch` cell of torch
/// `minor` (with `python`: every one of that Python) whatever the facts
/// are: one that names the platform, and of the other keys at most the
/// torch and (for one Python's cells) the Python.
fn excluded_on(
    config: &Config,
    arch: Arch,
    minor: TorchVersion,
    python: Option<PythonAbi>,
) -> bool {
    config.matrix.exclude.iter().any(|exclude| {
        let e = &exclude.value;
        e.platform == Some(arch)
            && e.cuda.is_none()
            && e.binding.is_none()
            && e.torch.is_none_or(|torch| torch == minor)
            && match python {
                None => e.python.is_none(),
                Some(python) => e.python.is_none_or(|p| p == python),
            }
    })
}

/// The wheel pip chooses of torch `minor` for each of `pythons`, and the
/// Pythons it has none for.
type Probed = (BTreeMap<PythonAbi, ResolvedWheel>, BTreeSet<PythonAbi>);

fn probe_minor(
    pip: &Pip,
    minor: TorchVersion,
    pythons: &[PythonAbi],
    baseline: &Baseline,
    arch: Arch,
    progress: &dyn Fn(&str),
) -> Result<Probed> {
    let requirement = format!("torch=={minor}.*");
    let mut wheels = BTreeMap::new();
    let mut missing = BTreeSet::new();
    for python in pythons {
        progress(&format!(
            "resolving {requirement} (Python {python}{})",
            match arch {
                Arch::X86_64 => String::new(),
                other => format!(", {other}"),
            }
        ));
        let target = Target::for_abi_on(*python, baseline, arch);
        match pip.resolve_if_any(&requirement, &target, false)? {
            None => {
                missing.insert(*python);
            }
            Some(mut resolved) => match (resolved.pop(), resolved.is_empty()) {
                (Some(wheel), true) => {
                    wheels.insert(*python, wheel);
                }
                _ => bail!("pip's resolution of {requirement} did not give exactly one wheel"),
            },
        }
    }
    Ok((wheels, missing))
}

/// [`probe`], taking from an earlier lock what it already knows of each
/// torch minor for these Pythons and asking pip only about the rest
/// ([`super::reuse`]). A range of torch releases is listed again, since
/// what it selects may have changed; each minor it selects is then reused
/// like a minor the config names.
pub fn probe_reusing(
    pip: &Pip,
    config: &Config,
    baseline: &Baseline,
    progress: &dyn Fn(&str),
    previous: &super::reuse::Previous,
) -> Result<BTreeMap<TorchVersion, TorchRelease>> {
    let pythons = probe_pythons(config);
    let mut releases = BTreeMap::new();
    for minor in selected_minors(pip, config, &pythons, baseline, progress)? {
        let Some((known, unknown)) = previous.torch(minor, &pythons) else {
            let (wheels, missing) =
                probe_minor(pip, minor, &pythons, baseline, Arch::X86_64, progress)?;
            if !wheels.is_empty() {
                let mut found = release(minor, &wheels, missing)?;
                found.aarch64 =
                    probe_aarch64(pip, config, &found, minor, baseline, None, progress)?;
                releases.insert(minor, found);
            }
            continue;
        };
        let known_aarch64 = known.aarch64.clone();
        let mut merged = if unknown.is_empty() {
            known
        } else {
            let (wheels, missing) =
                probe_minor(pip, minor, &unknown, baseline, Arch::X86_64, progress)?;
            merge(minor, known, &wheels, missing)?
        };
        if !merged.wheels.is_empty() {
            // `merge` refuses a CUDA other than the earlier lock's, so its
            // aarch64 wheels are of the release's CUDA.
            merged.aarch64 = probe_aarch64(
                pip,
                config,
                &merged,
                minor,
                baseline,
                known_aarch64.as_ref(),
                progress,
            )?;
            releases.insert(minor, merged);
        }
    }
    Ok(releases)
}

/// `known` (from an earlier lock) with the wheels pip chose now for other
/// Pythons: they must require the same CUDA; the platform is what all the
/// wheels allow, the version the newest.
fn merge(
    minor: TorchVersion,
    mut known: TorchRelease,
    wheels: &BTreeMap<PythonAbi, ResolvedWheel>,
    missing: BTreeSet<PythonAbi>,
) -> Result<TorchRelease> {
    known.missing.extend(missing.iter().copied());
    if wheels.is_empty() {
        return Ok(known);
    }
    let fresh = release(minor, wheels, missing)?;
    if known.wheels.is_empty() {
        return Ok(fresh);
    }
    if fresh.cuda != known.cuda {
        bail!(
            "torch {minor}'s wheels disagree on their CUDA: the lock's require CUDA {} ({}), the \
             ones pip chooses now CUDA {} ({}); run `cuwheel lock --fresh` to resolve every \
             Python again",
            known.cuda,
            known.cuda_from,
            fresh.cuda,
            fresh.cuda_from
        );
    }
    known.wheels.extend(fresh.wheels);
    let platform = known
        .wheels
        .values()
        .filter_map(|w| best_platform(&w.file))
        .min()
        .map(|(_, tag)| tag);
    if let Some(platform) = platform {
        known.platform = platform;
    }
    if compare_release(&fresh.version, &known.version) == std::cmp::Ordering::Greater {
        known.version = fresh.version;
    }
    Ok(known)
}

#[cfg(test)]
#[path = "torch_tests.rs"]
mod tests;
