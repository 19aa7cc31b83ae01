//! Sibling wheels: what the NVIDIA wheels a wheel's own `Requires-Dist`
//! installs put beside it in site-packages, derived from the requirements by
//! NVIDIA's naming convention rather than from a list of sonames.
//!
//! In: the wheel's `Requires-Dist` lines. Out: [`Siblings`], which says
//! whether a directory (relative to site-packages) or a soname is provided
//! by one of those wheels, and by which requirement.
//!
//! The convention, as NVIDIA's wheels follow it:
//!
//! - they install into the `nvidia/` namespace package;
//! - `nvidia-<component>-cu<N>` puts its libraries in
//!   `nvidia/<component>/lib` (`-` as `_`: `nvidia-cuda-cupti-cu12` in
//!   `nvidia/cuda_cupti/lib`, `nvidia-cudnn-cu13` in `nvidia/cudnn/lib`);
//! - from CUDA 13 on, a toolkit component `nvidia-<component>` (no suffix;
//!   its version is the component's, not CUDA's) puts them in the shared
//!   `nvidia/cu<N>/lib`;
//! - `cuda-toolkit[<component>,...]==<N>.x` installs those components of
//!   CUDA `N` into `nvidia/cu<N>/lib`;
//! - a component's libraries are named after it: `libcupti.so.13` for
//!   `cupti`, `libnvshmem_host.so.3` for `nvshmem`, `libcusparseLt.so.0`
//!   for `cusparselt`.
//!
//! A requirement only under an extra (`; extra == "x"`) is not installed
//! with the wheel, so it provides nothing. Anything not derived here is
//! still judged as before: unknown directories and libraries fail.

use crate::wheel::pep508::Requirement;

/// The metapackage whose extras are CUDA toolkit components.
const TOOLKIT: &str = "cuda-toolkit";

/// The shortest component name a library name is matched against, so that
/// a stray short word cannot claim every library.
const MIN_COMPONENT_LEN: usize = 3;

/// One requirement that installs NVIDIA libraries beside the wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sibling {
    /// The requirement as written before its marker: `nvidia-nccl-cu13==2.28.9`.
    pub requirement: String,
    /// Lower-case component names its libraries are named after.
    components: Vec<String>,
    /// Its directories relative to site-packages: `nvidia/nccl/lib`.
    dirs: Vec<String>,
    /// It installs into the shared `nvidia/cu<N>/lib` of CUDA `N`
    /// (`Some(Some(N))`) or of whichever CUDA it is for (`Some(None)`).
    cuda: Option<Option<String>>,
}

/// The sibling wheels a wheel's requirements install.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Siblings {
    siblings: Vec<Sibling>,
}

impl Siblings {
    /// Derives the siblings from `Requires-Dist` lines; lines that do not
    /// parse, or name no NVIDIA wheel, are skipped.
    pub fn from_requires_dist<'a>(lines: impl IntoIterator<Item = &'a str>) -> Siblings {
        let siblings = lines
            .into_iter()
            .filter_map(|line| Requirement::parse(line).ok())
            .filter(|r| !only_with_an_extra(r.marker.as_deref()))
            .filter_map(|r| sibling(&r))
            .collect();
        Siblings { siblings }
    }

    pub fn is_empty(&self) -> bool {
        self.siblings.is_empty()
    }

    /// The requirement that installs `dir` (relative to site-packages).
    pub fn dir_provider(&self, dir: &str) -> Option<&str> {
        self.siblings
            .iter()
            .find(|s| {
                s.dirs.iter().any(|d| d == dir)
                    || s.cuda
                        .as_ref()
                        .is_some_and(|major| is_cuda_dir(dir, major.as_deref()))
            })
            .map(|s| s.requirement.as_str())
    }

    /// The requirement that may install `dir` (relative to site-packages)
    /// without it being one of its known directories: a directory with a
    /// path component named after one of its components, such as the
    /// `cusparselt/lib` older `nvidia-cusparselt-cu12` releases used, which
    /// torch's RPATHs still name beside `nvidia/cusparselt/lib`.
    pub fn dir_may_provider(&self, dir: &str) -> Option<&str> {
        let parts: Vec<String> = dir.split('/').map(|p| p.to_ascii_lowercase()).collect();
        self.siblings
            .iter()
            .find(|s| s.components.iter().any(|c| parts.contains(c)))
            .map(|s| s.requirement.as_str())
    }

    /// The requirement whose libraries `soname` is named after: `lib<c>…`
    /// for one of its components `c`, compared without case.
    pub fn soname_provider(&self, soname: &str) -> Option<&str> {
        let stem = soname.strip_prefix("lib")?;
        let stem = stem[..stem.find(".so")?].to_ascii_lowercase();
        // the longest component named wins: `cusparselt` over `cusparse`
        self.siblings
            .iter()
            .flat_map(|s| s.components.iter().map(move |c| (c, s)))
            .filter(|(c, _)| stem.starts_with(c.as_str()))
            .max_by_key(|(c, _)| c.len())
            .map(|(_, s)| s.requirement.as_str())
    }
}

/// Whether a marker holds only when an extra is asked for.
fn only_with_an_extra(marker: Option<&str>) -> bool {
    marker.is_some_and(|m| {
        // an `or` could make it hold without the extra; treat that as installed
        m.replace(' ', "").contains("extra==") && !m.contains(" or ")
    })
}

/// The sibling a requirement names, if it is an NVIDIA wheel.
fn sibling(requirement: &Requirement) -> Option<Sibling> {
    let name = requirement.name.normalized();
    let (components, cuda) = if name == TOOLKIT {
        let major = pinned_major(requirement);
        (extras(&requirement.requirement), Some(major))
    } else {
        let rest = name.strip_prefix("nvidia-")?;
        match rest.rsplit_once("-cu") {
            // nvidia-cudnn-cu13: its own directory only
            Some((component, major)) if digits(major) => (vec![component.to_string()], None),
            // nvidia-cublas (CUDA 13 on): the shared nvidia/cu<N>/lib; its own
            // version (cusolver 12.x for CUDA 13) does not name the CUDA release
            _ => (vec![rest.to_string()], Some(None)),
        }
    };
    let mut dirs: Vec<String> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    for component in &components {
        dirs.push(format!("nvidia/{}/lib", component.replace('-', "_")));
        words.push(component.replace('-', "_"));
        if let Some((_, last)) = component.rsplit_once('-') {
            words.push(last.to_string());
        }
    }
    words.retain(|w| w.len() >= MIN_COMPONENT_LEN);
    words.sort();
    words.dedup();
    Some(Sibling {
        requirement: requirement.requirement.clone(),
        components: words,
        dirs,
        cuda,
    })
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `dir` is `nvidia/cu<N>/lib`, of CUDA `major` when one is given.
fn is_cuda_dir(dir: &str, major: Option<&str>) -> bool {
    dir.strip_prefix("nvidia/cu")
        .and_then(|rest| rest.strip_suffix("/lib"))
        .is_some_and(|n| digits(n) && major.is_none_or(|m| m == n))
}

/// The extras of `name[a,b]>=1`, lower case.
fn extras(requirement: &str) -> Vec<String> {
    let Some((_, rest)) = requirement.split_once('[') else {
        return Vec::new();
    };
    let Some((list, _)) = rest.split_once(']') else {
        return Vec::new();
    };
    list.split(',')
        .map(|e| e.trim().to_ascii_lowercase().replace('_', "-"))
        .filter(|e| !e.is_empty())
        .collect()
}

/// The major version of an `==`/`~=` pin (`==13.0.2` → `13`): the CUDA
/// release of NVIDIA's toolkit packages.
fn pinned_major(requirement: &Requirement) -> Option<String> {
    let text = &requirement.requirement;
    let at = text.find("==").or_else(|| text.find("~="))?;
    let major: String = text[at + 2..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    (!major.is_empty()).then_some(major)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TORCH_2_11: [&str; 8] = [
        "filelock",
        "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == \"Linux\"",
        "nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"",
        "nvidia-cusparselt-cu13==0.8.0; platform_system == \"Linux\"",
        "nvidia-nccl-cu13==2.28.9; platform_system == \"Linux\"",
        "nvidia-nvshmem-cu13==3.4.5; platform_system == \"Linux\"",
        "triton==3.6.0; platform_system == \"Linux\"",
        "nvidia-cuda-cupti-cu12; extra == \"cu12\"",
    ];

    #[test]
    fn torch_requirements_provide_their_directories_and_libraries() {
        let siblings = Siblings::from_requires_dist(TORCH_2_11);
        for dir in [
            "nvidia/cudnn/lib",
            "nvidia/nvshmem/lib",
            "nvidia/nccl/lib",
            "nvidia/cusparselt/lib",
            "nvidia/cu13/lib",
        ] {
            assert!(siblings.dir_provider(dir).is_some(), "{dir}");
        }
        assert_eq!(
            siblings.dir_provider("nvidia/cu13/lib"),
            Some(
                "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2"
            )
        );
        for (soname, by) in [
            ("libcupti.so.13", "cuda-toolkit"),
            ("libcufile.so.0", "cuda-toolkit"),
            ("libcusparseLt.so.0", "nvidia-cusparselt-cu13"),
            ("libnvshmem_host.so.3", "nvidia-nvshmem-cu13"),
            ("libcudnn_graph.so.9", "nvidia-cudnn-cu13"),
            ("libnccl.so.2", "nvidia-nccl-cu13"),
        ] {
            let got = siblings.soname_provider(soname).unwrap_or_default();
            assert!(got.starts_with(by), "{soname}: {got}");
        }
        // unknown ones stay unknown; an extra's requirement is not installed
        for soname in ["libfoo.so.1", "libcuda_cupti.so.12", "libssl.so.3"] {
            assert_eq!(siblings.soname_provider(soname), None, "{soname}");
        }
        assert_eq!(siblings.dir_provider("nvidia/cuda_cupti/lib"), None);
        assert_eq!(siblings.dir_provider("nvidia/cu12/lib"), None);
        // a -cu13 wheel has its own directory, not the toolkit's
        let nccl = Siblings::from_requires_dist(["nvidia-nccl-cu13==2.28.9"]);
        assert_eq!(nccl.dir_provider("nvidia/cu13/lib"), None);
        assert_eq!(nccl.soname_provider("libcupti.so.13"), None);
        assert_eq!(siblings.dir_provider("other/lib"), None);
        // where a requirement may install: a directory named after a component
        assert_eq!(siblings.dir_provider("cusparselt/lib"), None);
        assert!(
            siblings
                .dir_may_provider("cusparselt/lib")
                .is_some_and(|r| r.starts_with("nvidia-cusparselt-cu13"))
        );
        for unrelated in [
            "other/lib",
            "lib",
            "usr/local/cuda/lib64",
            "cusparse_lt/lib",
        ] {
            assert_eq!(siblings.dir_may_provider(unrelated), None, "{unrelated}");
        }
    }

    #[test]
    fn cuda_12_component_wheels_use_their_own_directory() {
        let siblings = Siblings::from_requires_dist(["nvidia-cuda-cupti-cu12==12.8.90"]);
        assert!(siblings.dir_provider("nvidia/cuda_cupti/lib").is_some());
        assert!(siblings.soname_provider("libcupti.so.12").is_some());
        assert!(Siblings::from_requires_dist(["numpy>=2", "not a requirement ("]).is_empty());
        // CUDA 13 component wheels share nvidia/cu13/lib
        let cublas = Siblings::from_requires_dist(["nvidia-cublas"]);
        assert!(cublas.dir_provider("nvidia/cu13/lib").is_some());
        assert!(cublas.soname_provider("libcublasLt.so.13").is_some());
        assert_eq!(cublas.dir_provider("nvidia/cuda/lib"), None);
    }
}
