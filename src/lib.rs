//! cuwheel: turns one PyTorch CUDA extension into a matrix of hermetic,
//! audited, bit-for-bit reproducible wheels built with Nix.
//!
//! This crate is the `cuwheel` CLI and the stages that run only on the
//! host, never inside a build: `init` (cargo feature `init`, on by default)
//! writes a project's `[tool.cuwheel]` config and flake, inferred from its
//! sources and setup.py (read statically, never run); `fetch` puts every
//! artifact of the lock into the Nix store; `cache` archives them (and what
//! is built from them) in a signed Nix binary cache; `publish` the package
//! index audited wheels are served from, and the upload to PyPI;
//! `reproduce` the verdict on whether a checkout rebuilds a wheel bit for
//! bit.
//!
//! The stages a build runs (spec, the lock's format, plan, build, audit)
//! live in `cuwheel-build`, the registry clients and `cuwheel lock`'s
//! resolver in `cuwheel-registry`, the Nix formats in `cuwheel-nix`, the
//! wheel format in `cuwheel-wheel` and `init`'s setup.py evaluator in
//! `cuwheel-pyeval` (crates/; docs/reference/internals.md draws the
//! graph). They are re-exported here under their stage names, so
//! `cuwheel::lock` is the lock's format and `cuwheel::registry` the
//! registries' clients whichever crate holds them.

pub mod cache;
pub mod estimate;
pub mod fetch;
#[cfg(feature = "init")]
pub mod init;
pub mod jobs;
pub mod memory;
pub mod publish;
pub mod reproduce;

pub use cuwheel_build::{audit, build, json, lock, plan, safe_io, spec, url};
/// The Nix formats, in their own crate (crates/cuwheel-nix).
pub use cuwheel_nix as store;
/// The registries' clients and `cuwheel lock`, in their own crate (crates/cuwheel-registry).
pub use cuwheel_registry as registry;
/// The wheel format and its policy data, in their own crate (crates/cuwheel-wheel).
pub use cuwheel_wheel as wheel;
