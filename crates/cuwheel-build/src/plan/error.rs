//! Why a plan cannot be made: the [`PlanError`]s of [`super::Plan::new`]
//! and the PyPI variant's choice ([`super::pypi`]), each naming the fix.

use std::path::PathBuf;

use crate::spec::BindingFlavour;

/// Why a plan cannot be made; each says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "cell {cell} is not in {lock}: the lock was written for another matrix; run `cuwheel lock` \
         in the project to write it again"
    )]
    CellNotLocked { cell: String, lock: PathBuf },
    #[error(
        "{lock}: cell {cell} names the toolchain `{toolchain}`, which is not a {expected} \
         toolchain of the lock; run `cuwheel lock` to write it again"
    )]
    BadToolchain {
        cell: String,
        toolchain: String,
        expected: &'static str,
        lock: PathBuf,
    },
    #[error(
        "kernel sources {first} and {second} get the same derivation name `{name}`; rename one \
         of them"
    )]
    NameClash {
        first: String,
        second: String,
        name: String,
    },
    #[error(
        "cell {cell} builds the torch-library (abi3) binding, which needs Python headers for its \
         module init, but the lock's bundle {bundle} has none: add a Python to the matrix's \
         `python` list and run `cuwheel lock` again"
    )]
    NoPythonHeaders { cell: String, bundle: String },
    #[error("kernel source {path} is not a relative path inside the project; {fix}")]
    BadSource { path: String, fix: &'static str },
    #[error(
        "cell {cell} is a {flavour} wheel, but module {module} has no bindings of that flavour \
         or a more portable one: give it {flavour} bindings, or exclude the {flavour} cells"
    )]
    FlavourNotServed {
        cell: String,
        module: String,
        flavour: BindingFlavour,
    },
    #[error(
        "cell {cell}: `{tag}` is not a wheel tag (the lock's torch platform is not a platform \
         tag); run `cuwheel lock` to write the lock again"
    )]
    BadTag { cell: String, tag: String },
    #[error(
        "{at}: the matrix builds no {variant} cell for PyPI; fix: name a CUDA it builds \
         ({built}) in [tool.cuwheel.pypi]"
    )]
    PypiCuda {
        at: String,
        variant: String,
        built: String,
    },
    #[error("{at}: {problem}; fix: {fix}")]
    PypiTorch {
        at: String,
        problem: String,
        fix: String,
    },
    #[error(
        "{at}: no {flavour} cell is in the PyPI variant ({variant}); fix: remove it from \
         `flavours`, or add {flavour} bindings"
    )]
    PypiFlavour {
        at: String,
        flavour: BindingFlavour,
        variant: String,
    },
    #[error(
        "cells {} ({}) and {} ({}) would both go to PyPI as {tag} wheels, and PyPI keeps one \
         file per name; fix: list in [tool.cuwheel.pypi] `flavours` the flavours that go to \
         PyPI, leaving out {} or {}",
        cells[0], flavours[0], cells[1], flavours[1], flavours[0], flavours[1]
    )]
    PypiCollision {
        tag: String,
        cells: [String; 2],
        flavours: [BindingFlavour; 2],
    },
}
