//! `cuwheel fetch --cell`: which of the lock's artifacts some cells need.
//!
//! In: the lock, cell names and whether their compatibility nodes are
//! wanted too. Out: the store names of the artifacts of the toolchains
//! those cells build with — each role's toolchain, for an abi3 cell every
//! `python-headers` toolchain of its bundle (the plan compiles its binding
//! against the oldest), the runtime a CUDA toolchain runs on, the torch
//! releases the wheel claims (its audit's load check reads them) and, with
//! `compat`, those its compatibility node compares it with
//! ([`compared_releases`]) — plus the seeds' artifacts, which every build
//! needs (the driver's toolchain is in cuwheel's own lock, fetched apart).
//! Pure.

use std::collections::BTreeSet;

use anyhow::{Result, bail};

use crate::lock::format::{Lock, Toolchain};
use crate::plan::symbols::compared_releases;

/// The artifacts that `cells` need: for their wheels (`wheels.<cell>`),
/// and with `compat` for their compatibility nodes (`compat.<cell>`) too.
pub fn artifacts_for_cells(
    lock: &Lock,
    cells: &[String],
    compat: bool,
) -> Result<BTreeSet<String>> {
    let unknown: Vec<&String> = cells
        .iter()
        .filter(|cell| !lock.cells.contains_key(*cell))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "the lock has no cell {}: its cells are {}; pass one of them to --cell, or run \
             `cuwheel lock` if the matrix changed",
            unknown
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            lock.cells.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let mut toolchains: BTreeSet<&str> = BTreeSet::new();
    for cell in cells {
        let roles = &lock.cells[cell];
        toolchains.extend([roles.cuda.as_str(), &roles.gcc, &roles.torch]);
        // the torch releases its wheel claims (its audit reads them), and
        // those its compatibility node compares it with
        let claims = roles.claimed();
        let compared = match compat {
            true => compared_releases(lock, &roles.torch, &claims).unwrap_or_default(),
            false => Vec::new(),
        };
        let releases = claims
            .iter()
            .chain(compared.iter().map(|release| &release.toolchain));
        for release in releases {
            if let Some((name, _)) = lock.toolchains.get_key_value(release) {
                toolchains.insert(name);
            }
        }
        match &roles.python {
            Some(python) => {
                toolchains.insert(python);
            }
            None => toolchains.extend(
                lock.bundles
                    .get(&roles.bundle)
                    .into_iter()
                    .flatten()
                    .filter(|name| {
                        matches!(
                            lock.toolchains.get(*name),
                            Some(Toolchain::PythonHeaders { .. })
                        )
                    })
                    .map(String::as_str),
            ),
        }
    }
    let mut read: Vec<&str> = Vec::new();
    for name in &toolchains {
        let Some(Toolchain::Cuda(cuda)) = lock.toolchains.get(*name) else {
            continue;
        };
        for other in cuda.source().reads(&cuda.fields) {
            let Some((other, _)) = lock.toolchains.get_key_value(&other) else {
                bail!(
                    "cuwheel.lock's toolchain {name} reads the toolchain {other}, but the lock \
                     has no toolchains.{other} entry; run `cuwheel lock` to write it again"
                );
            };
            read.push(other);
        }
    }
    toolchains.extend(read);
    let mut artifacts = BTreeSet::new();
    for name in toolchains {
        let Some(toolchain) = lock.toolchains.get(name) else {
            bail!(
                "cuwheel.lock names the toolchain {name} but has no toolchains.{name} entry; \
                 run `cuwheel lock` to write it again"
            );
        };
        artifacts.extend(toolchain.artifacts().iter().cloned());
    }
    artifacts.extend(lock.seeds.values().map(|seed| seed.artifact.clone()));
    Ok(artifacts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::format::CellToolchains;
    use std::collections::BTreeMap;

    fn toolchain(kind: &str, artifact: &str) -> Toolchain {
        let artifacts = [artifact.to_owned()].into();
        match kind {
            "python" => Toolchain::PythonHeaders {
                version: "3.x".into(),
                suite: "s".into(),
                artifacts,
            },
            "cuda" => Toolchain::Cuda(crate::lock::format::CudaToolchain {
                kind: "cuda-wheels".into(),
                version: "13.0".into(),
                fields: [("runtime".to_owned(), "gcc".to_owned())].into(),
                artifacts,
            }),
            _ => Toolchain::Rust {
                suite: "s".into(),
                artifacts,
            },
        }
    }

    fn lock() -> Lock {
        let cell = |python: Option<&str>| CellToolchains {
            bundle: "cu130".into(),
            cuda: "cuda130".into(),
            gcc: "gcc".into(),
            python: python.map(str::to_owned),
            torch: "torch".into(),
            claims: Default::default(),
        };
        Lock {
            version: crate::lock::format::LOCK_VERSION,
            project: "p".into(),
            config_sha256: "00".into(),
            facts: Default::default(),
            cells: [
                ("cu130-py311".to_owned(), cell(Some("python311"))),
                ("cu130-py313".to_owned(), cell(Some("python313"))),
                ("cu130-abi3".to_owned(), cell(None)),
            ]
            .into(),
            bundles: [(
                "cu130".to_owned(),
                ["cuda130", "gcc", "python311", "python313", "torch"]
                    .map(str::to_owned)
                    .into(),
            )]
            .into(),
            toolchains: [
                ("cuda130", toolchain("cuda", "nvcc.whl")),
                ("gcc", toolchain("rust", "gcc.deb")),
                ("python311", toolchain("python", "py311.deb")),
                ("python313", toolchain("python", "py313.deb")),
                ("torch", toolchain("rust", "torch.whl")),
            ]
            .map(|(n, t)| (n.to_owned(), t))
            .into(),
            seeds: BTreeMap::new(),
            artifacts: BTreeMap::new(),
            suites: BTreeMap::new(),
        }
    }

    fn names(cells: &[&str]) -> Vec<String> {
        let cells: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
        artifacts_for_cells(&lock(), &cells, false)
            .unwrap()
            .into_iter()
            .collect()
    }

    #[test]
    fn a_cell_gets_its_roles_and_the_runtime() {
        assert_eq!(
            names(&["cu130-py313"]),
            ["gcc.deb", "nvcc.whl", "py313.deb", "torch.whl"]
        );
        // abi3: every Python's headers of the bundle.
        assert_eq!(
            names(&["cu130-abi3"]),
            ["gcc.deb", "nvcc.whl", "py311.deb", "py313.deb", "torch.whl"]
        );
    }

    #[test]
    fn an_unknown_cell_is_named_with_the_known_ones() {
        let err = artifacts_for_cells(&lock(), &["cu999-py313".to_owned()], false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no cell `cu999-py313`"), "{err}");
        assert!(
            err.contains("cu130-abi3, cu130-py311, cu130-py313"),
            "{err}"
        );
    }
}
