//! `cuwheel.lock` as data (docs/reference/lock-format.md is its contract): the types,
//! their canonical JSON (two-space indent, keys sorted, a final newline, so
//! the same lock always has the same bytes), reading it back, writing it
//! atomically, and the store-name rule for artifact files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::spec::MatrixFacts;
use crate::spec::compat::join;
use crate::wheel::Arch;

/// The format version this cuwheel reads and writes (2: each suite's index
/// date; 3: the matrix's facts, cells named for the torch they serve,
/// Python header archives, torch's C++ standard).
pub const LOCK_VERSION: u32 = 3;
/// The lock's file name, beside `pyproject.toml`.
pub const LOCK_FILE: &str = "cuwheel.lock";
/// The `used-by` entry of what builds cuwheel itself (in `nix/driver.lock`,
/// [`super::driver`]).
pub const DRIVER: &str = "driver";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Lock {
    pub version: u32,
    pub project: String,
    pub config_sha256: String,
    /// What the registries said about the matrix's torch releases and
    /// toolkits: the cells are made from these.
    pub facts: MatrixFacts,
    pub cells: BTreeMap<String, CellToolchains>,
    pub bundles: BTreeMap<String, BTreeSet<String>>,
    pub toolchains: BTreeMap<String, Toolchain>,
    pub seeds: BTreeMap<String, Seed>,
    pub artifacts: BTreeMap<String, Artifact>,
    /// Each Debian suite the lock read, by name.
    pub suites: BTreeMap<String, SuiteIndex>,
}

/// The index of one Debian suite as the lock read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SuiteIndex {
    /// The `Date` of the signed Release file read, as a snapshot timestamp
    /// (`YYYYMMDDTHHMMSSZ`): where Debian's snapshot archive still serves
    /// the pinned files after the mirror has dropped them.
    pub index_date: String,
}

/// The toolchain of each role of one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellToolchains {
    pub bundle: String,
    pub cuda: String,
    pub gcc: String,
    /// `None` for an abi3 cell.
    pub python: Option<String>,
    pub torch: String,
    /// For a torch-stable cell, the torch toolchains of every release its
    /// wheel claims (its range, `torch` first among them); empty for the
    /// others, whose wheel claims only `torch`.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub claims: BTreeSet<String>,
}

impl CellToolchains {
    /// The torch toolchains whose releases the cell's wheel claims.
    pub fn claimed(&self) -> BTreeSet<String> {
        if self.claims.is_empty() {
            BTreeSet::from([self.torch.clone()])
        } else {
            self.claims.clone()
        }
    }
}

/// One toolchain of the lock. The CUDA toolkits are the toolkit sources'
/// ([`CudaToolchain`], crates/cuwheel-build/src/lock/toolkits/); the other kinds are cuwheel's
/// own. Written with its `kind` beside its fields (a CUDA toolchain's
/// `kind` is its own field); read through [`OwnKind`] or the sources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Toolchain {
    Gcc {
        suite: String,
        gcc: String,
        /// A cross compiler's target (`aarch64`): absent for the host's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Arch>,
        artifacts: BTreeSet<String>,
    },
    PythonHeaders {
        version: String,
        suite: String,
        artifacts: BTreeSet<String>,
    },
    /// Python headers from one archive: the directory holding `Python.h`
    /// and the real `pyconfig.h`, as member paths.
    PythonArchive {
        /// `3.12` or `3.13t`.
        version: String,
        include: String,
        pyconfig: String,
        artifacts: BTreeSet<String>,
    },
    Torch {
        version: String,
        artifacts: BTreeSet<String>,
        /// The NAR hash of its C++ headers tree.
        #[serde(rename = "headers-nar-sha256")]
        headers_nar_sha256: String,
        /// The C++ standard its headers require (`c++17`, `c++20`), read
        /// from their own check.
        #[serde(rename = "cxx-standard")]
        cxx_standard: String,
    },
    Rust {
        suite: String,
        artifacts: BTreeSet<String>,
    },
    /// Written as the struct, whose `kind` is the source's.
    #[serde(untagged)]
    Cuda(CudaToolchain),
}

/// The fields a toolkit source records in its lock entries.
pub type Fields = BTreeMap<String, String>;

/// A CUDA toolkit as its source locked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaToolchain {
    /// The source's kind of lock entry (`cuda-wheels`, `cuda-debian`):
    /// which source reads the entry, and the Nix file that builds it
    /// (`nix/<kind>.nix`).
    pub kind: String,
    /// `13.0`.
    pub version: String,
    /// What the source records besides (`runtime`, `suite`).
    #[serde(flatten)]
    pub fields: Fields,
    pub artifacts: BTreeSet<String>,
}

impl CudaToolchain {
    /// The source that reads it (the kind was checked on reading).
    pub fn source(&self) -> &'static dyn super::toolkits::ToolkitSource {
        super::toolkits::of_checked_kind(&self.kind)
    }
}

/// cuwheel's own toolchain kinds as the lock writes them, for reading (a
/// mirror of [`Toolchain`]'s variants but `Cuda`, whose kinds the sources
/// define: serde cannot read an internally tagged enum with such a variant
/// and still say which field of which kind is wrong).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum OwnKind {
    Gcc {
        suite: String,
        gcc: String,
        #[serde(default)]
        target: Option<Arch>,
        artifacts: BTreeSet<String>,
    },
    PythonHeaders {
        version: String,
        suite: String,
        artifacts: BTreeSet<String>,
    },
    PythonArchive {
        version: String,
        include: String,
        pyconfig: String,
        artifacts: BTreeSet<String>,
    },
    Torch {
        version: String,
        artifacts: BTreeSet<String>,
        #[serde(rename = "headers-nar-sha256")]
        headers_nar_sha256: String,
        #[serde(rename = "cxx-standard")]
        cxx_standard: String,
    },
    Rust {
        suite: String,
        artifacts: BTreeSet<String>,
    },
}

impl<'de> Deserialize<'de> for Toolchain {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let entry = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        let kind = entry
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| D::Error::missing_field("kind"))?
            .to_owned();
        let value = serde_json::Value::Object(entry);
        if let Some(source) = super::toolkits::by_kind(&kind) {
            let cuda: CudaToolchain = serde_json::from_value(value)
                .map_err(|e| D::Error::custom(format!("toolchain of kind {kind}: {e}")))?;
            source
                .check_entry(&cuda.fields)
                .map_err(|e| D::Error::custom(format!("toolchain of kind {kind}: {e}")))?;
            return Ok(Toolchain::Cuda(cuda));
        }
        let own: OwnKind = serde_json::from_value(value).map_err(|e| {
            D::Error::custom(format!(
                "toolchain of kind {kind}: {e} (the toolkit sources' kinds are {})",
                join(super::toolkits::kinds())
            ))
        })?;
        Ok(match own {
            OwnKind::Gcc {
                suite,
                gcc,
                target,
                artifacts,
            } => Toolchain::Gcc {
                suite,
                gcc,
                target,
                artifacts,
            },
            OwnKind::PythonHeaders {
                version,
                suite,
                artifacts,
            } => Toolchain::PythonHeaders {
                version,
                suite,
                artifacts,
            },
            OwnKind::PythonArchive {
                version,
                include,
                pyconfig,
                artifacts,
            } => Toolchain::PythonArchive {
                version,
                include,
                pyconfig,
                artifacts,
            },
            OwnKind::Torch {
                version,
                artifacts,
                headers_nar_sha256,
                cxx_standard,
            } => Toolchain::Torch {
                version,
                artifacts,
                headers_nar_sha256,
                cxx_standard,
            },
            OwnKind::Rust { suite, artifacts } => Toolchain::Rust { suite, artifacts },
        })
    }
}

impl Toolchain {
    pub fn artifacts(&self) -> &BTreeSet<String> {
        match self {
            Toolchain::Cuda(cuda) => &cuda.artifacts,
            Toolchain::Gcc { artifacts, .. }
            | Toolchain::PythonHeaders { artifacts, .. }
            | Toolchain::PythonArchive { artifacts, .. }
            | Toolchain::Torch { artifacts, .. }
            | Toolchain::Rust { artifacts, .. } => artifacts,
        }
    }

    pub fn artifacts_mut(&mut self) -> &mut BTreeSet<String> {
        match self {
            Toolchain::Cuda(cuda) => &mut cuda.artifacts,
            Toolchain::Gcc { artifacts, .. }
            | Toolchain::PythonHeaders { artifacts, .. }
            | Toolchain::PythonArchive { artifacts, .. }
            | Toolchain::Torch { artifacts, .. }
            | Toolchain::Rust { artifacts, .. } => artifacts,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Seed {
    /// The store name of the artifact it is taken from.
    pub artifact: String,
    pub member: String,
    pub nar_sha256: String,
}

/// One pinned file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Artifact {
    #[serde(flatten)]
    pub source: Source,
    /// The name the registry's client saves it under.
    pub file: String,
    pub sha256: String,
    pub size: u64,
    pub used_by: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "kebab-case")]
pub enum Source {
    Debian {
        suite: String,
        package: String,
        version: String,
        architecture: String,
    },
    Pypi {
        name: String,
        version: String,
    },
    /// A file no registry carries (Python headers): the user supplies it
    /// (`cuwheel fetch --archives DIR`), or it is fetched from `url`.
    Archive {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
}

/// A file name made legal as a Nix store name: `%3a` (apt's quoted epoch
/// colon) becomes `-`, then every character outside `[A-Za-z0-9+._?=-]`
/// becomes `-` (Debian's `~`, for one).
pub fn store_name(file: &str) -> String {
    crate::store::path::sanitize_name(&file.replace("%3a", "-"))
}

impl Lock {
    /// The canonical bytes: serde_json's maps are sorted by key, every list
    /// is a sorted set, and the output ends in a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::json::canonical(self).into_bytes()
    }

    pub fn parse(bytes: &[u8], path: &Path) -> Result<Lock> {
        let lock: Lock = serde_json::from_slice(bytes).with_context(|| {
            format!(
                "{} is not a cuwheel lock this version can read; run `cuwheel lock` to write it again",
                path.display()
            )
        })?;
        if lock.version != LOCK_VERSION {
            anyhow::bail!(
                "{} has format version {}, but this cuwheel reads version {LOCK_VERSION}; run \
                 `cuwheel lock` to write it again",
                path.display(),
                lock.version
            );
        }
        for (version, origin) in &lock.facts.toolkits {
            let checked = match super::toolkits::by_name(&origin.source) {
                Some(source) => source.check_origin(origin),
                None => Err(format!(
                    "names the toolkit source {}, which this cuwheel does not have (it has {})",
                    origin.source,
                    join(super::toolkits::SOURCES.iter().map(|source| source.name()))
                )),
            };
            if let Err(problem) = checked {
                anyhow::bail!(
                    "{}: facts.toolkits.\"{version}\" {problem}; run `cuwheel lock --fresh` to \
                     list the toolkits again",
                    path.display()
                );
            }
        }
        Ok(lock)
    }

    pub fn read(path: &Path) -> Result<Lock> {
        let bytes = std::fs::read(path).with_context(|| {
            format!(
                "cannot read {}; run `cuwheel lock` in the project first",
                path.display()
            )
        })?;
        Lock::parse(&bytes, path)
    }

    /// Writes through a temporary file in the same directory and a rename,
    /// so a reader sees the old lock or the new one, never a part.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomically(path, &self.to_bytes())
    }
}

/// Writes a lock's bytes through a temporary file in the same directory and
/// a rename, so a reader sees the old lock or the new one, never a part.
pub use crate::safe_io::write_atomically;

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lock {
        let mut artifacts = BTreeMap::new();
        artifacts.insert(
            "zlib1g_1-1.2.13.dfsg-1_amd64.deb".to_owned(),
            Artifact {
                source: Source::Debian {
                    suite: "bookworm".into(),
                    package: "zlib1g".into(),
                    version: "1:1.2.13.dfsg-1".into(),
                    architecture: "amd64".into(),
                },
                file: "zlib1g_1%3a1.2.13.dfsg-1_amd64.deb".into(),
                sha256: "ab".into(),
                size: 7,
                used_by: ["cu130-py313".to_owned(), "cu130-abi3".to_owned()].into(),
            },
        );
        let mut toolchains = BTreeMap::new();
        toolchains.insert(
            "torch211".to_owned(),
            Toolchain::Torch {
                version: "2.11.0".into(),
                artifacts: ["t.whl".to_owned()].into(),
                headers_nar_sha256: "cd".into(),
                cxx_standard: "c++17".into(),
            },
        );
        Lock {
            version: LOCK_VERSION,
            project: "demo-ext".into(),
            config_sha256: "00".into(),
            facts: MatrixFacts::default(),
            cells: [(
                "cu130-abi3".to_owned(),
                CellToolchains {
                    bundle: "cu130".into(),
                    cuda: "cuda130".into(),
                    gcc: "gcc-bullseye".into(),
                    python: None,
                    torch: "torch211".into(),
                    claims: Default::default(),
                },
            )]
            .into(),
            bundles: [(
                "cu130".to_owned(),
                ["torch211".to_owned(), "cuda130".to_owned()].into(),
            )]
            .into(),
            toolchains,
            seeds: BTreeMap::new(),
            artifacts,
            suites: [(
                "bookworm".to_owned(),
                SuiteIndex {
                    index_date: "20251122T081906Z".into(),
                },
            )]
            .into(),
        }
    }

    #[test]
    fn store_names_are_legal_nix_names() {
        assert_eq!(
            store_name("zlib1g_1%3a1.2.13.dfsg-1_amd64.deb"),
            "zlib1g_1-1.2.13.dfsg-1_amd64.deb"
        );
        assert_eq!(
            store_name("nvidia-cuda-dev_12.4.127~12.4.1-2_amd64.deb"),
            "nvidia-cuda-dev_12.4.127-12.4.1-2_amd64.deb"
        );
        assert_eq!(
            store_name("torch-2.11.0-cp311.whl"),
            "torch-2.11.0-cp311.whl"
        );
        for name in ["a%3ab~c d", "x:y"] {
            crate::store::path::check_name(&store_name(name)).unwrap();
        }
    }

    #[test]
    fn the_demo_lock_reads_and_writes_back_byte_for_byte() {
        // Its CUDA toolchains are the sources' (cuda-wheels, cuda-debian):
        // read through them, they write the same bytes.
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-ext/cuwheel.lock");
        let bytes = std::fs::read(&path).unwrap();
        let lock = Lock::parse(&bytes, &path).unwrap();
        let kinds: BTreeSet<&str> = lock
            .toolchains
            .values()
            .filter_map(|t| match t {
                Toolchain::Cuda(cuda) => Some(cuda.kind.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, BTreeSet::from(["cuda-debian", "cuda-wheels"]));
        assert!(
            lock.to_bytes() == bytes,
            "the demo's lock changed on a round trip"
        );
    }

    #[test]
    fn a_cuda_toolchain_with_fields_its_source_does_not_record_is_refused() {
        let path = Path::new("cuwheel.lock");
        let mut value: serde_json::Value = serde_json::from_slice(&sample().to_bytes()).unwrap();
        value["toolchains"]["cuda"] = serde_json::json!({
            "kind": "cuda-wheels", "version": "13.0", "suite": "trixie", "artifacts": []
        });
        let bytes = serde_json::to_vec(&value).unwrap();
        let error = format!("{:#}", Lock::parse(&bytes, path).unwrap_err());
        assert!(
            error.contains(
                "toolchain of kind cuda-wheels: has the fields suite where its source records \
                 runtime"
            ),
            "{error}"
        );
        value["toolchains"]["cuda"]["kind"] = "cuda-conda".into();
        let bytes = serde_json::to_vec(&value).unwrap();
        let error = format!("{:#}", Lock::parse(&bytes, path).unwrap_err());
        assert!(
            error.contains("unknown variant `cuda-conda`")
                && error.contains("the toolkit sources' kinds are cuda-debian, cuda-wheels"),
            "{error}"
        );
    }

    #[test]
    fn canonical_json_is_sorted_and_round_trips() {
        let lock = sample();
        let text = String::from_utf8(lock.to_bytes()).unwrap();
        assert!(text.ends_with("}\n"));
        // Keys sorted at every level, including inside artifacts and toolchains.
        let artifact = text.find("\"architecture\"").unwrap();
        assert!(artifact < text.find("\"file\"").unwrap());
        assert!(text.find("\"file\"").unwrap() < text.find("\"source\": \"debian\"").unwrap());
        assert!(
            text.find("\"headers-nar-sha256\"").unwrap()
                < text.find("\"kind\": \"torch\"").unwrap()
        );
        assert!(text.contains("\"python\": null"));
        assert!(text.contains(
            "\"suites\": {\n    \"bookworm\": {\n      \"index-date\": \"20251122T081906Z\"\n    }\n  }"
        ));
        assert!(
            text.contains(
                "\"used-by\": [\n        \"cu130-abi3\",\n        \"cu130-py313\"\n      ]"
            )
        );
        let back = Lock::parse(text.as_bytes(), Path::new("cuwheel.lock")).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.to_bytes(), lock.to_bytes());
    }

    #[test]
    fn other_versions_and_garbage_are_refused_with_advice() {
        let text = String::from_utf8(sample().to_bytes())
            .unwrap()
            .replace("\"version\": 3\n", "\"version\": 9\n");
        let err = Lock::parse(text.as_bytes(), Path::new("x/cuwheel.lock")).unwrap_err();
        assert!(err.to_string().contains("format version 9"), "{err}");
        let err = Lock::parse(b"{", Path::new("x/cuwheel.lock")).unwrap_err();
        assert!(err.to_string().contains("run `cuwheel lock`"), "{err}");
    }

    #[test]
    fn write_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::fs::write(&path, "old").unwrap();
        sample().write(&path).unwrap();
        assert_eq!(Lock::read(&path).unwrap(), sample());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o644);
    }
}
