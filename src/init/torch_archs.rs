//! The GPU archs a torch release was built for, read from its wheel: what
//! `torch.cuda.get_arch_list()` answers on that release, and the GPUs
//! `torch.cuda.get_device_capability()` can name where torch runs.
//!
//! In: the torch wheel of one cell of the matrix (resolved by pip and kept
//! in cuwheel's download cache, where `cuwheel fetch` finds it again). Out:
//! [`TorchArchs`], the archs of its `torch/lib/libtorch_cuda.so`'s fat
//! binary that every translation unit compiled for torch's arch list has an
//! image of. Reading the fat binary ([`from_fatbin`]) is pure; getting the
//! wheel and its library ([`for_toolkits`]) is I/O.
//!
//! Why "every translation unit": torch compiles its generic kernels for
//! `TORCH_CUDA_ARCH_LIST` and a few files for extra targets. In torch
//! 2.11.0+cu130's library, sm_75, 80, 86, 90, 100 and 120 each have 444
//! images, while sm_89 has 1 and sm_100a 59 (measured on its cp312 wheel),
//! so an arch is torch's when it has as many images as the arch with most.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::python::Toolkit;
/// The evaluator's record of torch's archs, and the dotted form of an arch.
pub use super::python::{TorchArchs, dotted};
use crate::audit::fatbin::{self, Fatbin, ImageKind};
use crate::lock::format::Source;
use crate::registry::downloads::{Cache, Clients, Expected};
use crate::registry::pip::{Pip, Target};
use crate::spec::{Baseline, PythonAbi};
use crate::wheel::reader::WheelFile;

/// The member of torch's wheel that holds its kernels.
pub const LIBRARY: &str = "torch/lib/libtorch_cuda.so";

/// Where init gets the archs each torch of the matrix was built for.
#[derive(Debug, Clone, Default)]
pub enum Origin {
    /// From each torch's wheel, downloaded into the cache if need be.
    #[default]
    Wheels,
    /// Given by torch minor (`2.11`), read from no wheel: for callers that
    /// already know them, and for tests that must not download a gigabyte.
    Given(BTreeMap<String, TorchArchs>),
}

/// Binds the archs `given` holds for each toolkit's torch minor; an error
/// names a minor it lacks.
pub fn given(
    toolkits: &mut [Toolkit],
    given: &BTreeMap<String, TorchArchs>,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for toolkit in toolkits.iter_mut() {
        let minor = minor_of(&toolkit.torch);
        let Some(archs) = given.get(minor) else {
            bail!("no archs are given for torch {minor}");
        };
        lines.push(format!(
            "torch {} was built for {} (as given)",
            toolkit.torch,
            archs.shown()
        ));
        toolkit.archs = Some(archs.clone());
    }
    Ok(lines)
}

/// The minor of a toolkit's torch: `2.9` of `2.9.0+cu128`.
fn minor_of(torch: &str) -> &str {
    let release = torch.split('+').next().unwrap_or_default();
    release.rsplit_once('.').map_or(release, |(minor, _)| minor)
}

/// The plain (not arch- or family-specific) archs whose images are as
/// many as those of the arch with most, of SASS and of PTX.
pub fn from_fatbin(fatbin: &Fatbin) -> TorchArchs {
    let mut counts: BTreeMap<(bool, u32), usize> = BTreeMap::new();
    for image in &fatbin.images {
        if image.arch.suffix == crate::spec::target::ArchSuffix::None {
            let ptx = match image.kind {
                ImageKind::Sass => false,
                ImageKind::Ptx => true,
                _ => continue,
            };
            *counts.entry((ptx, image.arch.number)).or_default() += 1;
        }
    }
    let most = counts.values().copied().max().unwrap_or(0);
    let of = |ptx: bool| -> Vec<u32> {
        counts
            .iter()
            .filter(|((p, _), n)| *p == ptx && **n == most)
            .map(|((_, arch), _)| *arch)
            .collect()
    };
    TorchArchs {
        sass: of(false),
        ptx: of(true),
    }
}

/// The archs of the torch wheel at `wheel`: its [`LIBRARY`] is unpacked
/// into `scratch` (a directory, removed by the caller) and only its fat
/// binary's headers are read.
pub fn read_wheel(wheel: &Path, scratch: &Path) -> Result<TorchArchs> {
    let file =
        WheelFile::open(wheel).with_context(|| format!("cannot read {}", wheel.display()))?;
    let Some(member) = file.member(LIBRARY) else {
        bail!(
            "{} has no {LIBRARY}: it is not a CUDA build of torch",
            wheel.display()
        );
    };
    let unpacked = scratch.join("libtorch_cuda.so");
    let mut out = std::fs::File::create(&unpacked)
        .with_context(|| format!("cannot create {}", unpacked.display()))?;
    std::io::copy(&mut file.stream(member), &mut out)
        .map_err(|e| file.stream_error(e))
        .with_context(|| format!("cannot unpack {LIBRARY} from {}", wheel.display()))?;
    drop(out);
    let library = std::fs::File::open(&unpacked)
        .with_context(|| format!("cannot open {}", unpacked.display()))?;
    let data = object::read::ReadCache::new(library);
    let what = format!("{LIBRARY} of {}", wheel.display());
    let Some((offset, size)) = crate::audit::elf::nv_fatbin_range(&what, &data)? else {
        bail!("{what} has no CUDA fat binary (.nv_fatbin)");
    };
    let fatbin = fatbin::parse_at(&data, offset, size).with_context(|| format!("in {what}"))?;
    let archs = from_fatbin(&fatbin);
    if archs.sass.is_empty() {
        bail!("{what} holds no SASS image of a plain arch");
    }
    Ok(archs)
}

/// Binds, in each of `toolkits`, the archs its torch was built for, read
/// from the torch wheel for `python` (downloaded into `cache` when it is
/// not there, announced through `progress`). Returns one line per torch
/// release read, for init's report.
pub fn for_toolkits(
    toolkits: &mut [Toolkit],
    pip: &Pip,
    cache: &Cache,
    python: PythonAbi,
    baseline: &Baseline,
    progress: &dyn Fn(&str),
) -> Result<Vec<String>> {
    let clients = Clients {
        pip: pip.clone(),
        apt: BTreeMap::new(),
        archives: Vec::new(),
    };
    let target = Target::for_abi(python, baseline);
    let mut read: BTreeMap<String, TorchArchs> = BTreeMap::new();
    let mut lines = Vec::new();
    for toolkit in toolkits.iter_mut() {
        // The cells' minor: its newest release, as the lock picks it.
        let requirement = format!("torch=={}.*", minor_of(&toolkit.torch));
        if let Some(archs) = read.get(&requirement) {
            toolkit.archs = Some(archs.clone());
            continue;
        }
        let mut resolved = pip.resolve(&requirement, &target, false)?;
        let (Some(wheel), true) = (resolved.pop(), resolved.is_empty()) else {
            bail!("pip's resolution of {requirement} did not give exactly one wheel");
        };
        let expected = Expected {
            file: &wheel.file,
            sha256: &wheel.sha256,
            size: None,
        };
        let source = Source::Pypi {
            name: wheel.name.clone(),
            version: wheel.version.clone(),
        };
        let path = clients.obtain(cache, &source, &expected, || {
            progress(&format!(
                "downloading {} to read the GPU archs torch {} was built for (kept for `cuwheel \
                 fetch`)",
                wheel.file, toolkit.torch
            ));
        })?;
        let scratch = cache.temp_dir()?;
        let archs = read_wheel(&path, scratch.path())?;
        lines.push(format!(
            "torch {} was built for {} (read from {LIBRARY} of {})",
            toolkit.torch,
            archs.shown(),
            wheel.file
        ));
        read.insert(requirement, archs.clone());
        toolkit.archs = Some(archs);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::fatbin::{FatbinImage, GpuArch};
    use crate::spec::target::ArchSuffix;

    fn image(kind: ImageKind, number: u32, suffix: ArchSuffix) -> FatbinImage {
        FatbinImage {
            kind,
            arch: GpuArch { number, suffix },
            compressed: false,
        }
    }

    #[test]
    fn torchs_archs_are_those_every_generic_kernel_has() {
        let mut images = Vec::new();
        // Three translation units for the arch list, one with an sm_89
        // extra and one for sm_90a alone, as torch's library has them.
        for _ in 0..3 {
            for arch in [75, 80, 90, 100] {
                images.push(image(ImageKind::Sass, arch, ArchSuffix::None));
            }
            images.push(image(ImageKind::Ptx, 100, ArchSuffix::None));
        }
        images.push(image(ImageKind::Sass, 89, ArchSuffix::None));
        for _ in 0..5 {
            images.push(image(ImageKind::Sass, 90, ArchSuffix::ArchSpecific));
        }
        let fatbin = Fatbin {
            containers: 5,
            images,
        };
        let archs = from_fatbin(&fatbin);
        assert_eq!(archs.sass, [75, 80, 90, 100]);
        assert_eq!(archs.ptx, [100]);
        assert_eq!(
            archs.arch_list(),
            ["sm_75", "sm_80", "sm_90", "sm_100", "compute_100"]
        );
        assert_eq!(archs.shown(), "7.5, 8.0, 9.0, 10.0, 10.0+PTX");
    }

    #[test]
    fn a_fatbin_without_plain_images_gives_no_archs() {
        let fatbin = Fatbin {
            containers: 1,
            images: vec![image(ImageKind::Sass, 90, ArchSuffix::ArchSpecific)],
        };
        assert_eq!(from_fatbin(&fatbin), TorchArchs::default());
    }
}
