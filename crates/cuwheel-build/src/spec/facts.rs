//! What the registries said when the matrix was locked: the facts a
//! matrix's cells are made from, recorded in `cuwheel.lock` (`facts`) so that
//! `cuwheel plan` makes the same cells offline.
//!
//! In: nothing (plain data; `cuwheel lock` fills it, crates/cuwheel-registry/src/torch.rs and
//! crates/cuwheel-build/src/lock/toolkits/). Out: per torch minor, its newest release, the CUDA
//! runtime its wheels require, their platform tag, and which of the
//! matrix's Pythons it has a wheel for; per CUDA toolkit cuwheel can build
//! with, where it comes from. [`MatrixFacts::default_nvcc`] is the rule that
//! picks a cell's nvcc.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::spec::python::PythonAbi;
use crate::spec::version::{CudaVersion, TorchVersion};
use crate::wheel::Arch;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MatrixFacts {
    /// Every torch minor the matrix's `torch` list resolved to.
    pub torch: BTreeMap<TorchVersion, TorchRelease>,
    /// The toolkits a cell's nvcc may be: a source carries them and the
    /// compatibility table knows their host compilers and archs.
    pub toolkits: BTreeMap<CudaVersion, ToolkitOrigin>,
}

/// One torch minor as the package index serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TorchRelease {
    /// The newest release of the minor among its wheels (`2.7.1`).
    pub version: String,
    /// The CUDA runtime its Linux wheels require: the `cuXYZ` of its cells.
    pub cuda: CudaVersion,
    /// The Requires-Dist entry `cuda` was read from
    /// (`nvidia-cuda-runtime-cu12==12.6.77`, `cuda-toolkit[...]==13.0.2`).
    pub cuda_from: String,
    /// The most compatible platform tag its wheels all carry
    /// (`manylinux_2_28_x86_64`): no extension of it can be more compatible.
    pub platform: String,
    /// The wheel pip chose for each of the matrix's Pythons that has one.
    pub wheels: BTreeMap<PythonAbi, TorchWheel>,
    /// The matrix's Pythons it has no wheel for.
    pub missing: BTreeSet<PythonAbi>,
    /// The same minor's aarch64 wheels, resolved only for a matrix with
    /// aarch64 cells (`platforms`); absent otherwise, so that an x86_64
    /// matrix's lock does not change. `platform`, `wheels` and `missing`
    /// above are x86_64's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aarch64: Option<ArchWheels>,
}

/// One architecture's wheels of a torch minor: their platform tag, the
/// wheel pip chose per Python, and the Pythons it has none for (or none of
/// the release's CUDA: PyPI's older aarch64 torch wheels are CPU builds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ArchWheels {
    /// As [`TorchRelease::platform`]; `None` when it has no wheel at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    pub wheels: BTreeMap<PythonAbi, TorchWheel>,
    pub missing: BTreeSet<PythonAbi>,
}

/// A borrowed [`ArchWheels`]: what [`TorchRelease::for_arch`] gives.
#[derive(Debug, Clone, Copy)]
pub struct ArchWheelsRef<'a> {
    pub platform: Option<&'a str>,
    pub wheels: &'a BTreeMap<PythonAbi, TorchWheel>,
    pub missing: &'a BTreeSet<PythonAbi>,
}

impl TorchRelease {
    /// The release's wheels for `arch`; `None` when the lock did not
    /// resolve that architecture.
    pub fn for_arch(&self, arch: Arch) -> Option<ArchWheelsRef<'_>> {
        match arch {
            Arch::X86_64 => Some(ArchWheelsRef {
                platform: Some(&self.platform),
                wheels: &self.wheels,
                missing: &self.missing,
            }),
            Arch::Aarch64 => self.aarch64.as_ref().map(|a| ArchWheelsRef {
                platform: a.platform.as_deref(),
                wheels: &a.wheels,
                missing: &a.missing,
            }),
        }
    }

    /// Whether it has a wheel for `python` on `arch`.
    pub fn has_wheel(&self, arch: Arch, python: PythonAbi) -> bool {
        self.for_arch(arch)
            .is_some_and(|wheels| wheels.wheels.contains_key(&python))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TorchWheel {
    pub version: String,
    pub file: String,
    pub sha256: String,
}

/// Where a toolkit comes from: the toolkit source that offers it (its
/// name, `pypi` or `debian`: crates/cuwheel-build/src/lock/toolkits/ holds one module per
/// source) and what that source records of it (`release = "13.0.2"`,
/// `suite = "trixie"`). The lock writes it flat:
/// `{"source": "pypi", "release": "13.0.2"}`. Which fields a source may
/// record is the source's own business; the lock checks them on reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolkitOrigin {
    pub source: String,
    #[serde(flatten)]
    pub fields: BTreeMap<String, String>,
}

impl ToolkitOrigin {
    /// The origin of `source` with `fields`.
    pub fn new<const N: usize>(source: &str, fields: [(&str, &str); N]) -> ToolkitOrigin {
        ToolkitOrigin {
            source: source.to_owned(),
            fields: fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect(),
        }
    }

    /// The value of one of its fields.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

/// `pypi 13.0.2`, `debian trixie`: the source and its fields' values.
impl std::fmt::Display for ToolkitOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)?;
        for value in self.fields.values() {
            write!(f, " {value}")?;
        }
        Ok(())
    }
}

impl MatrixFacts {
    /// The nvcc a cell serving torch's CUDA `served` builds with, unless the
    /// matrix names one: the newest available toolkit of the same major
    /// whose minor is at most `served`'s. CUDA's minor-version compatibility
    /// is why that works: code built with 12.4 runs on the 12.6 runtime a
    /// torch loads, not the other way round.
    pub fn default_nvcc(&self, served: CudaVersion) -> Option<CudaVersion> {
        self.toolkits
            .keys()
            .filter(|toolkit| toolkit.major == served.major && toolkit.minor <= served.minor)
            .max()
            .copied()
    }
}

/// Facts for unit tests: each `(torch, cuda, pythons with a wheel)`, with
/// the matrix's other Pythons (`all_pythons`) missing; toolkits of major 12
/// or below from Debian, later ones from PyPI.
///
/// The registry crate's unit tests use it too, through the feature
/// `test-support`.
#[cfg(any(test, feature = "test-support"))]
pub fn fabricated(
    torches: &[(&str, &str, &[&str])],
    all_pythons: &[&str],
    toolkits: &[&str],
) -> MatrixFacts {
    let torch = torches
        .iter()
        .map(|(version, cuda, pythons)| {
            let wheels: BTreeMap<PythonAbi, TorchWheel> = pythons
                .iter()
                .map(|python| {
                    let abi: PythonAbi = python.parse().unwrap();
                    let wheel = TorchWheel {
                        version: format!("{version}.1"),
                        file: format!(
                            "torch-{version}.1-{}-{}-manylinux_2_28_x86_64.whl",
                            abi.interpreter_tag(),
                            abi.abi_tag()
                        ),
                        sha256: "ab".repeat(32),
                    };
                    (abi, wheel)
                })
                .collect();
            let missing = all_pythons
                .iter()
                .map(|p| p.parse::<PythonAbi>().unwrap())
                .filter(|p| !wheels.contains_key(p))
                .collect();
            let release = TorchRelease {
                version: format!("{version}.1"),
                cuda: cuda.parse().unwrap(),
                cuda_from: format!("cuda-toolkit=={cuda}.0"),
                platform: "manylinux_2_28_x86_64".into(),
                wheels,
                missing,
                aarch64: None,
            };
            (version.parse().unwrap(), release)
        })
        .collect();
    let toolkits = toolkits
        .iter()
        .map(|v| {
            let version: CudaVersion = v.parse().unwrap();
            let origin = if version.major <= 12 {
                ToolkitOrigin::new("debian", [("suite", "trixie")])
            } else {
                ToolkitOrigin::new("pypi", [("release", &format!("{v}.0"))])
            };
            (version, origin)
        })
        .collect();
    MatrixFacts { torch, toolkits }
}

/// `facts` with aarch64 wheels for `torches` (a copy of each x86_64 wheel,
/// tagged `manylinux_2_28_aarch64`) and none for its other torches, as a
/// lock of a matrix with aarch64 cells records them.
///
/// The registry crate's unit tests use it too, through the feature
/// `test-support`.
#[cfg(any(test, feature = "test-support"))]
pub fn with_aarch64(mut facts: MatrixFacts, torches: &[&str]) -> MatrixFacts {
    for (torch, release) in facts.torch.iter_mut() {
        let wheels: BTreeMap<PythonAbi, TorchWheel> =
            if torches.contains(&torch.to_string().as_str()) {
                release
                    .wheels
                    .iter()
                    .map(|(python, wheel)| {
                        let file = wheel.file.replace("x86_64", "aarch64");
                        (
                            *python,
                            TorchWheel {
                                file,
                                ..wheel.clone()
                            },
                        )
                    })
                    .collect()
            } else {
                BTreeMap::new()
            };
        let mut missing = release.missing.clone();
        missing.extend(release.wheels.keys().filter(|p| !wheels.contains_key(p)));
        release.aarch64 = Some(ArchWheels {
            platform: (!wheels.is_empty()).then(|| "manylinux_2_28_aarch64".to_string()),
            wheels,
            missing,
        });
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(toolkits: &[&str]) -> MatrixFacts {
        MatrixFacts {
            torch: BTreeMap::new(),
            toolkits: toolkits
                .iter()
                .map(|v| {
                    (
                        v.parse().unwrap(),
                        ToolkitOrigin::new("pypi", [("release", &format!("{v}.0"))]),
                    )
                })
                .collect(),
        }
    }

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_default_nvcc_is_the_newest_of_the_major_not_newer_than_torch() {
        let facts = facts(&["11.8", "12.4", "12.5", "13.0", "13.2", "13.5"]);
        let pick = |served: &str| facts.default_nvcc(cuda(served)).map(|v| v.to_string());
        assert_eq!(pick("12.6").as_deref(), Some("12.5"));
        assert_eq!(pick("12.5").as_deref(), Some("12.5"));
        assert_eq!(pick("12.4").as_deref(), Some("12.4"));
        assert_eq!(pick("13.0").as_deref(), Some("13.0"));
        assert_eq!(pick("13.2").as_deref(), Some("13.2"));
        assert_eq!(pick("13.9").as_deref(), Some("13.5"));
        assert_eq!(pick("12.2").as_deref(), None);
        assert_eq!(pick("14.0").as_deref(), None);
    }

    #[test]
    fn facts_round_trip_through_json_with_string_keys() {
        let mut facts = facts(&["13.0"]);
        facts.torch.insert(
            "2.11".parse().unwrap(),
            TorchRelease {
                version: "2.11.0".into(),
                cuda: cuda("13.0"),
                cuda_from: "cuda-toolkit[cudart]==13.0.2".into(),
                platform: "manylinux_2_28_x86_64".into(),
                wheels: BTreeMap::from([(
                    "3.13t".parse().unwrap(),
                    TorchWheel {
                        version: "2.11.0".into(),
                        file: "torch-2.11.0-cp313-cp313t-manylinux_2_28_x86_64.whl".into(),
                        sha256: "00".into(),
                    },
                )]),
                missing: BTreeSet::from(["3.9".parse().unwrap()]),
                aarch64: None,
            },
        );
        let json = serde_json::to_string(&facts).unwrap();
        assert!(json.contains("\"2.11\":{"), "{json}");
        assert!(json.contains("\"3.13t\":{"), "{json}");
        assert!(json.contains("\"source\":\"pypi\""), "{json}");
        let back: MatrixFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, facts);
    }
}
