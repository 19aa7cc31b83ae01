//! The rebuild of one cell by Nix, never trusting an output the store
//! already holds.
//!
//! In: the flake, the cell and its plan nodes. Out: the cell's result
//! directory (wheel and audit), after `nix build` made what was missing and
//! `nix-store --realise --check` built every plan node of the cell again
//! and compared the bytes — or the derivations whose outputs came out
//! different ([`NotDeterministic`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::localize::{self, FileDifference};
use crate::plan::PlanCell;
use crate::plan::pypi::PypiCell;
use crate::registry::nix::{Nix, NixError};

/// A derivation whose second build gave other bytes than its first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotDeterministic {
    pub derivation: String,
    pub output: String,
    /// Where Nix kept the second build's output (`--keep-failed`).
    pub kept: Option<String>,
    /// What differs between the output and its rebuild, file by file
    /// ([`super::localize`]); empty until localized.
    pub differences: Vec<FileDifference>,
    /// Why the differences could not be read, when they could not.
    pub unread: Option<String>,
}

pub enum Rebuild {
    /// The result directory of the cell (`wheels.<cell>`).
    Built(PathBuf),
    NotDeterministic(Vec<NotDeterministic>),
}

/// Every plan node a cell's wheel is made of, kernels first; for its PyPI
/// wheel (`pypi`), that wheel's own two nodes in place of the index's.
pub fn nodes_of<'p>(cell: &'p PlanCell, pypi: Option<&'p PypiCell>) -> Vec<&'p str> {
    match pypi {
        None => cell.nodes().collect(),
        Some(pypi) => cell
            .nodes()
            .filter(|node| *node != cell.wheel && *node != cell.audit)
            .chain([pypi.wheel.as_str(), pypi.audit.as_str()])
            .collect(),
    }
}

/// Builds `FLAKE#<attr>` (`wheels.<cell>`, or `pypi.<cell>` for its PyPI
/// wheel); with `check`, then builds each of `nodes` again and has Nix
/// compare.
pub fn rebuild(
    nix: &Nix,
    flake: &str,
    attr: &str,
    nodes: &[&str],
    check: bool,
    progress: &dyn Fn(&str),
) -> Result<Rebuild> {
    let installable = format!("{flake}#{attr}");
    progress(&format!("building {installable}"));
    let built = nix
        .build(std::slice::from_ref(&installable))
        .with_context(|| format!("cannot build {installable}"))?;
    let result = built
        .first()
        .with_context(|| format!("`nix build {installable}` reported no output"))?;
    if check {
        // One evaluation for every node's derivation.
        let installable = format!("{flake}#nodes");
        let by_name: BTreeMap<String, String> = nix
            .eval_json(
                &installable,
                Some("builtins.mapAttrs (name: node: node.drvPath)"),
            )
            .with_context(|| format!("cannot list the derivations of {installable}"))?;
        let mut drvs = Vec::new();
        for node in nodes {
            let drv = by_name
                .get(*node)
                .with_context(|| format!("{installable} has no node {node}"))?;
            drvs.push(
                drv.parse().with_context(|| {
                    format!("{installable}.{node}: `{drv}` is not a store path")
                })?,
            );
        }
        progress(&format!(
            "building again and comparing ({}): {}",
            "nix-store --realise --check",
            nodes.join(" ")
        ));
        if let Err(err) = nix.check(&drvs) {
            let found = match &err {
                NixError::Failed { stderr, .. } => not_deterministic(stderr),
                _ => Vec::new(),
            };
            if found.is_empty() {
                return Err(err).context("cannot build the cell's derivations again");
            }
            return Ok(Rebuild::NotDeterministic(localized(found)));
        }
    }
    Ok(Rebuild::Built(nix.real_path(result)))
}

/// Each derivation with what differs between its output and the rebuild
/// Nix kept; where either cannot be read, the reason is kept instead.
fn localized(found: Vec<NotDeterministic>) -> Vec<NotDeterministic> {
    found
        .into_iter()
        .map(|mut d| {
            if let Some(kept) = &d.kept {
                match localize::localize(Path::new(&d.output), Path::new(kept)) {
                    Ok(differences) => d.differences = differences,
                    Err(err) => d.unread = Some(format!("{err:#}")),
                }
            }
            d
        })
        .collect()
}

/// Nix 2.8's "derivation '…' may not be deterministic: output '…' differs
/// [from '….check']" lines.
pub fn not_deterministic(stderr: &str) -> Vec<NotDeterministic> {
    let quoted = |text: &str| -> Vec<String> {
        text.split('\'')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    stderr
        .lines()
        .filter(|line| line.contains("may not be deterministic"))
        .filter_map(|line| {
            let mut parts = quoted(line).into_iter();
            Some(NotDeterministic {
                derivation: parts.next()?,
                output: parts.next()?,
                kept: parts.next(),
                differences: Vec::new(),
                unread: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nixs_non_determinism_lines_are_read() {
        let stderr = "checking outputs of '/nix/store/a-link.drv'...\n\
            error: derivation '/nix/store/a-link.drv' may not be deterministic: output \
            '/nix/store/b-link' differs from '/nix/store/b-link.check'\n\
            error: derivation '/nix/store/c-k.drv' may not be deterministic: output \
            '/nix/store/d-k' differs\n\
            error: build of '/nix/store/a-link.drv' failed\n";
        assert_eq!(
            not_deterministic(stderr),
            [
                NotDeterministic {
                    derivation: "/nix/store/a-link.drv".into(),
                    output: "/nix/store/b-link".into(),
                    kept: Some("/nix/store/b-link.check".into()),
                    differences: Vec::new(),
                    unread: None,
                },
                NotDeterministic {
                    derivation: "/nix/store/c-k.drv".into(),
                    output: "/nix/store/d-k".into(),
                    kept: None,
                    differences: Vec::new(),
                    unread: None,
                },
            ]
        );
        assert_eq!(not_deterministic("error: builder failed"), []);
    }

    #[test]
    fn a_cells_nodes_are_kernels_then_the_rest() {
        let cell = crate::plan::test_plan_cell(
            &["kernel-b", "kernel-a"],
            ["binding", "link", "wheel", "audit"],
        );
        assert_eq!(
            nodes_of(&cell, None),
            ["kernel-a", "kernel-b", "binding", "link", "wheel", "audit"]
        );
        let pypi = crate::plan::pypi::PypiCell {
            wheel: "wheel-pypi".into(),
            audit: "audit-pypi".into(),
            predicted_wheel_file: String::new(),
        };
        assert_eq!(
            nodes_of(&cell, Some(&pypi)),
            [
                "kernel-a",
                "kernel-b",
                "binding",
                "link",
                "wheel-pypi",
                "audit-pypi"
            ]
        );
    }
}
