//! The PyPI variant: which cells also make a wheel with no local label.
//!
//! In: `[tool.cuwheel.pypi]` ([`PypiConfig`]) and the matrix's cells. Out:
//! the cells chosen — every cell of that CUDA and torch (a torch-stable cell
//! of that CUDA major whose range holds the torch), of the flavours named —
//! or a [`PlanError`] saying why none can be, or which two would upload
//! under one file name. Each chosen cell gets two more nodes from the same
//! links ([`super::wheel::Channel::Pypi`]): `wheel-pypi-<cell>` and
//! `audit-pypi-<cell>`, whose audit also checks PyPI's rules.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::PlanError;
use crate::spec::{Cell, Location, PypiConfig, TorchVersion};

/// The PyPI wheels of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PypiPlan {
    /// The largest wheel file PyPI takes, in bytes: checked by each PyPI
    /// wheel's audit and again by `cuwheel publish --pypi`.
    pub max_file_size: u64,
    /// Each chosen cell's PyPI wheel, by the cell's name.
    pub cells: BTreeMap<String, PypiCell>,
}

/// One cell's PyPI wheel: its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PypiCell {
    pub wheel: String,
    /// Its output is the result: the wheel beside its audit report.
    pub audit: String,
    pub predicted_wheel_file: String,
}

/// The names of the cells of `cells` that go to PyPI.
pub fn choose(pypi: &PypiConfig, cells: &[&Cell]) -> Result<BTreeSet<String>, PlanError> {
    let cuda = pypi.cuda.value;
    let variant = cuda.label();
    let torches: BTreeSet<TorchVersion> = cells
        .iter()
        .filter(|c| !c.is_stable() && c.cuda == cuda)
        .map(|c| c.torch)
        .collect();
    let list = |items: Vec<String>| items.join(", ");
    let torch = match &pypi.torch {
        Some(torch) if torches.contains(&torch.value) => torch.value,
        Some(torch) => {
            return Err(PlanError::PypiTorch {
                at: place(&torch.at),
                problem: format!(
                    "the matrix builds no {variant} cell of torch {}",
                    torch.value
                ),
                fix: if torches.is_empty() {
                    format!("name a CUDA the matrix builds ({})", cuda_labels(cells))
                } else {
                    format!(
                        "name one of {variant}'s torches: {}",
                        list(torches.iter().map(|t| format!("\"{t}\"")).collect())
                    )
                },
            });
        }
        None if torches.len() == 1 => *torches.first().expect("one torch"),
        None if torches.is_empty() => {
            return Err(PlanError::PypiCuda {
                at: place(&pypi.cuda.at),
                variant,
                built: cuda_labels(cells),
            });
        }
        None => {
            return Err(PlanError::PypiTorch {
                at: place(&pypi.cuda.at),
                problem: format!(
                    "{variant} serves several torches in the matrix ({}), and PyPI takes one \
                     version of each wheel",
                    list(torches.iter().map(ToString::to_string).collect())
                ),
                fix: format!(
                    "name the one torch's own PyPI wheels are, like torch = \"{}\" in \
                     [tool.cuwheel.pypi]",
                    torches.last().expect("several")
                ),
            });
        }
    };
    let wanted =
        |c: &Cell| pypi.flavours.is_empty() || pypi.flavours.iter().any(|f| f.value == c.flavour);
    let chosen: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| wanted(c))
        .filter(|c| {
            if c.is_stable() {
                c.cuda.major == cuda.major && c.torch <= torch
            } else {
                c.cuda == cuda && c.torch == torch
            }
        })
        .collect();
    for flavour in &pypi.flavours {
        if !chosen.iter().any(|c| c.flavour == flavour.value) {
            return Err(PlanError::PypiFlavour {
                at: place(&flavour.at),
                flavour: flavour.value,
                variant: format!("{variant} with torch {torch}"),
            });
        }
    }
    // PyPI keeps one file per name: two cells with one tag would collide
    // (the platform tag tells an aarch64 wheel from an x86_64 one).
    let mut by_tag: BTreeMap<String, &Cell> = BTreeMap::new();
    for cell in &chosen {
        let tag = match cell.arch {
            crate::wheel::Arch::X86_64 => cell.interpreter_abi(),
            other => format!("{} {other}", cell.interpreter_abi()),
        };
        if let Some(other) = by_tag.insert(tag.clone(), cell) {
            return Err(PlanError::PypiCollision {
                tag,
                cells: [other.name().to_string(), cell.name().to_string()],
                flavours: [other.flavour, cell.flavour],
            });
        }
    }
    Ok(chosen.iter().map(|c| c.name().to_string()).collect())
}

/// `pyproject.toml:31:8: tool.cuwheel.pypi.cuda`, for messages.
fn place(at: &Location) -> String {
    format!("pyproject.toml:{}:{}: {}", at.line, at.column, at.key)
}

/// `cu126, cu130`: the CUDA variants the matrix builds.
fn cuda_labels(cells: &[&Cell]) -> String {
    let labels: BTreeSet<String> = cells
        .iter()
        .filter(|c| !c.is_stable())
        .map(|c| c.cuda.label())
        .collect();
    labels.into_iter().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Located;
    use crate::spec::config::pypi::PYPI_MAX_FILE_SIZE;
    use crate::spec::matrix::test_cell;
    use crate::spec::{BindingFlavour, CudaVersion};

    fn located<T>(value: T) -> Located<T> {
        Located {
            value,
            at: Location {
                key: "tool.cuwheel.pypi.x".to_string(),
                line: 1,
                column: 1,
            },
        }
    }

    fn pypi(cuda: &str, torch: Option<&str>, flavours: &[BindingFlavour]) -> PypiConfig {
        PypiConfig {
            cuda: located(cuda.parse::<CudaVersion>().unwrap()),
            torch: torch.map(|t| located(t.parse().unwrap())),
            flavours: flavours.iter().copied().map(located).collect(),
            max_file_size: PYPI_MAX_FILE_SIZE,
        }
    }

    fn matrix() -> Vec<Cell> {
        let mut cells = vec![
            test_cell("12.6", Some("3.12"), "2.7"),
            test_cell("13.0", Some("3.12"), "2.11"),
            test_cell("13.0", Some("3.13"), "2.11"),
            test_cell("13.0", Some("3.13"), "2.14"),
            test_cell("13.0", None, "2.11"),
            test_cell("13.0", None, "2.11"),
        ];
        cells[4].flavour = BindingFlavour::TorchLibrary;
        cells[5].flavour = BindingFlavour::TorchStable;
        cells
    }

    fn names(config: &PypiConfig) -> Result<Vec<String>, String> {
        let cells = matrix();
        let refs: Vec<&Cell> = cells.iter().collect();
        choose(config, &refs)
            .map(|set| set.into_iter().collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_cuda_with_one_torch_needs_no_torch_and_a_cuda_with_several_does() {
        assert_eq!(names(&pypi("12.6", None, &[])).unwrap(), ["cu126-py312"]);
        let error = names(&pypi("13.0", None, &[])).unwrap_err();
        assert!(error.contains("cu130 serves several torches"), "{error}");
        assert!(error.contains("torch = \"2.14\""), "{error}");
        let error = names(&pypi("12.8", None, &[])).unwrap_err();
        assert!(error.contains("cu126, cu130"), "{error}");
        let error = names(&pypi("13.0", Some("2.9"), &[])).unwrap_err();
        assert!(error.contains("\"2.11\", \"2.14\""), "{error}");
    }

    #[test]
    fn two_abi3_flavours_would_collide_until_the_flavours_are_named() {
        let error = names(&pypi("13.0", Some("2.11"), &[])).unwrap_err();
        assert!(error.contains("cp39-abi3"), "{error}");
        assert!(error.contains("`flavours`"), "{error}");
        let chosen = names(&pypi(
            "13.0",
            Some("2.11"),
            &[BindingFlavour::Pybind11, BindingFlavour::TorchStable],
        ))
        .unwrap();
        assert_eq!(chosen.len(), 3, "{chosen:?}");
        assert!(chosen.iter().any(|c| c.ends_with("-stable")), "{chosen:?}");
        // The stable wheel's range holds 2.14 too.
        let chosen = names(&pypi(
            "13.0",
            Some("2.14"),
            &[BindingFlavour::Pybind11, BindingFlavour::TorchStable],
        ))
        .unwrap();
        assert_eq!(chosen.len(), 2, "{chosen:?}");
        let error = names(&pypi("12.6", None, &[BindingFlavour::TorchStable])).unwrap_err();
        assert!(error.contains("torch-stable"), "{error}");
    }
}
