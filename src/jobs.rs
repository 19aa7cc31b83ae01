//! The matrix split into CI jobs, one per toolkit.
//!
//! In: a [`Plan`]. Out: [`CiJobs`], GitHub Actions' `strategy.matrix` form
//! (`{"include": [...]}`): one job per nvcc toolkit, naming its cells and
//! those of them that also make a PyPI wheel, space-separated. Cells of one
//! toolkit share their kernel objects, so splitting by toolkit builds each
//! kernel object in one job only (`cuwheel plan --jobs`; the workflow
//! `cuwheel init --ci github` writes reads it).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::Plan;

/// `strategy.matrix`: `{"include": [{"toolkit": "13.0", "cells": "…", "pypi": "…"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CiJobs {
    pub include: Vec<CiJob>,
}

/// One job: the cells whose kernels one nvcc compiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CiJob {
    /// The nvcc toolkit's version, `13.0`.
    pub toolkit: String,
    /// Its cells, space-separated.
    pub cells: String,
    /// Those of its cells that also make a PyPI wheel, space-separated.
    pub pypi: String,
}

/// The jobs of a CI run: the cells of `plan` grouped by the toolkit that
/// compiles their kernels, in toolkit order.
pub fn ci_jobs(plan: &Plan) -> CiJobs {
    let mut groups: BTreeMap<_, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    for (name, cell) in &plan.cells {
        let (cells, pypi) = groups.entry(cell.nvcc).or_default();
        cells.push(name);
        if plan
            .pypi
            .as_ref()
            .is_some_and(|p| p.cells.contains_key(name))
        {
            pypi.push(name);
        }
    }
    CiJobs {
        include: groups
            .into_iter()
            .map(|(nvcc, (cells, pypi))| CiJob {
                toolkit: nvcc.to_string(),
                cells: cells.join(" "),
                pypi: pypi.join(" "),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuwheel_build::plan::test_plan_cell;

    #[test]
    fn cells_are_grouped_by_their_nvcc_with_their_pypi_wheels() {
        let mut plan = Plan {
            cells: BTreeMap::new(),
            nodes: BTreeMap::new(),
            pypi: None,
        };
        for (name, nvcc) in [
            ("cu126-py313", "12.5"),
            ("cu130-py313", "13.0"),
            ("cu130-abi3", "13.0"),
        ] {
            let mut cell = test_plan_cell(&[], ["b", "l", "w", "a"]);
            cell.nvcc = nvcc.parse().unwrap();
            plan.cells.insert(name.to_string(), cell);
        }
        plan.pypi = Some(crate::plan::pypi::PypiPlan {
            max_file_size: 1,
            cells: BTreeMap::from([(
                "cu130-py313".to_string(),
                crate::plan::pypi::PypiCell {
                    wheel: "w".into(),
                    audit: "a".into(),
                    predicted_wheel_file: String::new(),
                },
            )]),
        });
        assert_eq!(
            serde_json::to_string(&ci_jobs(&plan)).unwrap(),
            r#"{"include":[{"toolkit":"12.5","cells":"cu126-py313","pypi":""},{"toolkit":"13.0","cells":"cu130-abi3 cu130-py313","pypi":"cu130-py313"}]}"#
        );
    }
}
