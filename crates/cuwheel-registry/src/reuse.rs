//! Relocking: what an earlier `cuwheel.lock` resolved, reused.
//!
//! In: the project's previous lock (when there is one that this cuwheel
//! reads) and what the new lock needs: the matrix's torch minors and
//! Pythons, and the plan's toolchain requests. Out: the parts of the
//! previous lock that answer exactly the same question — a torch minor's
//! facts for the same Pythons (those it lacks are asked of pip and
//! merged), the toolkits listing, each toolchain whose request is the same
//! (suite, compiler, version, the pinned torch wheel, the archive's hash)
//! with its artifacts, and the seeds — so that a matrix edit asks the
//! registries only about what is new. Pure: reading the file is the
//! caller's.
//!
//! A Debian toolchain is reused only when its suite's index is not read
//! again: every pin of one suite then comes from the one index whose date
//! the lock records (where Debian's snapshot archive serves them later).
//! `cuwheel lock --fresh` reuses nothing.

use std::collections::{BTreeMap, BTreeSet};

use crate::spec::{CudaVersion, PythonAbi, ToolkitOrigin, TorchRelease, TorchVersion};

use crate::lock::format::{Artifact, Lock, Seed, SuiteIndex, Toolchain};
use crate::toolchain_plan::Request;

/// The previous lock, as far as it can be reused.
#[derive(Debug)]
pub struct Previous {
    lock: Lock,
}

/// A toolchain taken over from the previous lock, with its artifacts.
#[derive(Debug, Clone)]
pub struct Reused {
    pub toolchain: Toolchain,
    pub artifacts: Vec<Artifact>,
}

impl Previous {
    pub fn new(lock: Lock) -> Previous {
        Previous { lock }
    }

    /// The toolkits listing, when the previous lock has one.
    pub fn toolkits(&self) -> Option<BTreeMap<CudaVersion, ToolkitOrigin>> {
        let toolkits = &self.lock.facts.toolkits;
        (!toolkits.is_empty()).then(|| toolkits.clone())
    }

    /// What the previous lock knows of torch `minor` for `pythons`: the
    /// release restricted to them, and the Pythons it knows nothing of
    /// (to be asked of pip). `None` when it has no facts of that minor.
    pub fn torch(
        &self,
        minor: TorchVersion,
        pythons: &[PythonAbi],
    ) -> Option<(TorchRelease, Vec<PythonAbi>)> {
        let known = self.lock.facts.torch.get(&minor)?;
        let mut release = known.clone();
        release.wheels.retain(|python, _| pythons.contains(python));
        release.missing.retain(|python| pythons.contains(python));
        let unknown: Vec<PythonAbi> = pythons
            .iter()
            .filter(|p| !known.wheels.contains_key(p) && !known.missing.contains(p))
            .copied()
            .collect();
        Some((release, unknown))
    }

    /// The previous toolchain called `name` when it answers `request`,
    /// with its artifacts.
    pub fn toolchain(&self, name: &str, request: &Request) -> Option<Reused> {
        let toolchain = self.lock.toolchains.get(name)?;
        let artifacts: Vec<Artifact> = toolchain
            .artifacts()
            .iter()
            .map(|a| self.lock.artifacts.get(a).cloned())
            .collect::<Option<_>>()?;
        let same = match (request, toolchain) {
            (
                Request::Gcc { suite, gcc, target },
                Toolchain::Gcc {
                    suite: s,
                    gcc: g,
                    target: t,
                    ..
                },
            ) => suite == s && gcc.to_string() == *g && target == t,
            (Request::Cuda(request), Toolchain::Cuda(locked)) => {
                request.kind == locked.kind
                    && request.version.to_string() == locked.version
                    && request.fields == locked.fields
                    && locked.source().current(locked, &artifacts)
            }
            (
                Request::PythonHeaders { version, suite },
                Toolchain::PythonHeaders {
                    version: v,
                    suite: s,
                    ..
                },
            ) => version.to_string() == *v && suite == s,
            (Request::Rust { suite }, Toolchain::Rust { suite: s, .. }) => suite == s,
            (Request::Torch { wheel, .. }, Toolchain::Torch { version, .. }) => {
                *version == wheel.version
                    && artifacts
                        .iter()
                        .any(|a| a.file == wheel.file && a.sha256 == wheel.sha256)
            }
            (
                Request::PythonArchive { version, archive },
                Toolchain::PythonArchive { version: v, .. },
            ) => {
                version.to_string() == *v
                    && artifacts.iter().any(|a| {
                        a.file == archive.file
                            && archive.sha256.as_ref().is_none_or(|s| *s == a.sha256)
                    })
            }
            _ => false,
        };
        same.then(|| Reused {
            toolchain: toolchain.clone(),
            artifacts,
        })
    }

    /// The seeds and their artifacts, when the previous lock has both.
    pub fn seeds(&self) -> Option<(BTreeMap<String, Seed>, Vec<Artifact>)> {
        let seeds = &self.lock.seeds;
        if seeds.is_empty() {
            return None;
        }
        let artifacts = seeds
            .values()
            .map(|s| self.lock.artifacts.get(&s.artifact).cloned())
            .collect::<Option<Vec<_>>>()?;
        Some((seeds.clone(), artifacts))
    }

    /// The date the previous lock read `suite`'s index at.
    pub fn suite(&self, suite: &str) -> Option<SuiteIndex> {
        self.lock.suites.get(suite).cloned()
    }
}

/// The Debian suite a request reads its packages from, if any.
pub fn suite_of(request: &Request) -> Option<&str> {
    request.debian_suite()
}

/// Which of `requests` the previous lock answers, given that a Debian
/// toolchain is reused only when no other toolchain of its suite must be
/// resolved (its index is then not read again).
pub fn choose<'a>(
    previous: Option<&Previous>,
    requests: &'a BTreeMap<String, Request>,
) -> BTreeMap<&'a str, Reused> {
    let Some(previous) = previous else {
        return BTreeMap::new();
    };
    let mut reused: BTreeMap<&str, Reused> = requests
        .iter()
        .filter_map(|(name, request)| Some((name.as_str(), previous.toolchain(name, request)?)))
        .collect();
    // Suites some toolchain must read: none of theirs is reused.
    let read: BTreeSet<&str> = requests
        .iter()
        .filter(|(name, _)| !reused.contains_key(name.as_str()))
        .filter_map(|(_, request)| suite_of(request))
        .collect();
    reused.retain(|name, _| suite_of(&requests[*name]).is_none_or(|s| !read.contains(s)));
    reused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::format::Source;

    fn artifact(file: &str, sha256: &str) -> Artifact {
        Artifact {
            source: Source::Pypi {
                name: "x".into(),
                version: "1".into(),
            },
            file: file.into(),
            sha256: sha256.into(),
            size: 1,
            used_by: ["old-cell".to_string()].into(),
        }
    }

    fn lock(toolchains: Vec<(&str, Toolchain)>, artifacts: Vec<(&str, Artifact)>) -> Lock {
        Lock {
            version: crate::lock::format::LOCK_VERSION,
            project: "p".into(),
            config_sha256: String::new(),
            facts: Default::default(),
            cells: BTreeMap::new(),
            bundles: BTreeMap::new(),
            toolchains: toolchains
                .into_iter()
                .map(|(n, t)| (n.to_string(), t))
                .collect(),
            seeds: BTreeMap::new(),
            artifacts: artifacts
                .into_iter()
                .map(|(n, a)| (n.to_string(), a))
                .collect(),
            suites: BTreeMap::new(),
        }
    }

    fn gcc(suite: &str, gcc: &str, artifact: &str) -> Toolchain {
        Toolchain::Gcc {
            suite: suite.into(),
            gcc: gcc.into(),
            target: None,
            artifacts: [artifact.to_string()].into(),
        }
    }

    #[test]
    fn a_toolchain_is_reused_only_for_the_same_request() {
        let previous = Previous::new(lock(
            vec![("gcc-bullseye", gcc("bullseye", "10", "a"))],
            vec![("a", artifact("a.deb", "aa"))],
        ));
        let same = Request::Gcc {
            suite: "bullseye".into(),
            gcc: 10,
            target: None,
        };
        let other = Request::Gcc {
            suite: "bullseye".into(),
            gcc: 12,
            target: None,
        };
        assert!(previous.toolchain("gcc-bullseye", &same).is_some());
        assert!(previous.toolchain("gcc-bullseye", &other).is_none());
        assert!(previous.toolchain("gcc-bookworm", &same).is_none());
    }

    #[test]
    fn a_pypi_toolkit_is_reused_only_while_it_has_every_component_the_data_names() {
        let packages = &crate::toolchain_plan::PypiData::embedded()
            .cuda_wheels
            .packages;
        let wheel = |package: &String| Artifact {
            source: Source::Pypi {
                name: package.clone(),
                version: "13.0.1".into(),
            },
            ..artifact(&format!("{package}.whl"), "aa")
        };
        let entry = |artifacts: &[&String]| {
            Toolchain::Cuda(crate::lock::format::CudaToolchain {
                kind: "cuda-wheels".into(),
                version: "13.0".into(),
                fields: [("runtime".to_owned(), "gcc-bullseye".to_owned())].into(),
                artifacts: artifacts.iter().map(|p| p.to_string()).collect(),
            })
        };
        let all: Vec<&String> = packages.iter().collect();
        let without_curand: Vec<&String> = all
            .iter()
            .copied()
            .filter(|p| *p != "nvidia-curand")
            .collect();
        assert_eq!(without_curand.len() + 1, all.len());
        let request = Request::Cuda(crate::lock::toolkits::CudaRequest {
            kind: "cuda-wheels".into(),
            version: "13.0".parse().unwrap(),
            fields: [("runtime".to_owned(), "gcc-bullseye".to_owned())].into(),
            python: crate::spec::PythonVersion::new(3, 11),
            arch: crate::wheel::Arch::X86_64,
        });
        for (artifacts, reused) in [(&all, true), (&without_curand, false)] {
            let previous = Previous::new(lock(
                vec![("cuda130", entry(artifacts))],
                artifacts.iter().map(|p| (p.as_str(), wheel(p))).collect(),
            ));
            assert_eq!(
                previous.toolchain("cuda130", &request).is_some(),
                reused,
                "{artifacts:?}"
            );
        }
    }

    #[test]
    fn a_torch_toolchain_needs_the_same_wheel_bytes() {
        let torch = Toolchain::Torch {
            version: "2.11.0".into(),
            artifacts: ["t".to_string()].into(),
            headers_nar_sha256: "h".into(),
            cxx_standard: "c++17".into(),
        };
        let previous = Previous::new(lock(
            vec![("torch211", torch)],
            vec![("t", artifact("torch-2.11.0-cp312.whl", "11"))],
        ));
        let request = |sha256: &str| Request::Torch {
            version: "2.11".parse().unwrap(),
            wheel: crate::spec::TorchWheel {
                version: "2.11.0".into(),
                file: "torch-2.11.0-cp312.whl".into(),
                sha256: sha256.into(),
            },
        };
        assert!(previous.toolchain("torch211", &request("11")).is_some());
        assert!(previous.toolchain("torch211", &request("22")).is_none());
    }

    #[test]
    fn a_suite_read_again_gives_all_its_toolchains_afresh() {
        let previous = Previous::new(lock(
            vec![
                ("gcc-bullseye", gcc("bullseye", "10", "a")),
                ("gcc-bookworm", gcc("bookworm", "12", "b")),
            ],
            vec![
                ("a", artifact("a.deb", "aa")),
                ("b", artifact("b.deb", "bb")),
            ],
        ));
        let mut requests = BTreeMap::new();
        requests.insert(
            "gcc-bullseye".to_string(),
            Request::Gcc {
                suite: "bullseye".into(),
                gcc: 10,
                target: None,
            },
        );
        requests.insert(
            "gcc-bookworm".to_string(),
            Request::Gcc {
                suite: "bookworm".into(),
                gcc: 12,
                target: None,
            },
        );
        // Python headers from bullseye are new: bullseye is read again.
        requests.insert(
            "python39".to_string(),
            Request::PythonHeaders {
                version: "3.9".parse().unwrap(),
                suite: "bullseye".into(),
            },
        );
        let reused = choose(Some(&previous), &requests);
        assert_eq!(reused.keys().copied().collect::<Vec<_>>(), ["gcc-bookworm"]);
        assert!(choose(None, &requests).is_empty());
    }

    #[test]
    fn torch_facts_are_restricted_and_say_what_pip_must_be_asked() {
        let mut facts = crate::spec::MatrixFacts::default();
        let wheel = |file: &str| crate::spec::TorchWheel {
            version: "2.11.0".into(),
            file: file.into(),
            sha256: "00".into(),
        };
        let py = |v: &str| v.parse::<PythonAbi>().unwrap();
        facts.torch.insert(
            "2.11".parse().unwrap(),
            TorchRelease {
                version: "2.11.0".into(),
                cuda: "13.0".parse().unwrap(),
                cuda_from: "cuda-toolkit==13.0.2".into(),
                platform: "manylinux_2_28_x86_64".into(),
                wheels: [(py("3.12"), wheel("a")), (py("3.13"), wheel("b"))].into(),
                missing: [py("3.9")].into(),
                aarch64: None,
            },
        );
        let mut previous = lock(vec![], vec![]);
        previous.facts = facts;
        let previous = Previous::new(previous);
        let (release, unknown) = previous
            .torch(
                "2.11".parse().unwrap(),
                &[py("3.12"), py("3.9"), py("3.14")],
            )
            .unwrap();
        assert_eq!(
            release.wheels.keys().copied().collect::<Vec<_>>(),
            [py("3.12")]
        );
        assert_eq!(
            release.missing.iter().copied().collect::<Vec<_>>(),
            [py("3.9")]
        );
        assert_eq!(unknown, [py("3.14")]);
        assert!(
            previous
                .torch("2.9".parse().unwrap(), &[py("3.12")])
                .is_none()
        );
    }
}
