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
//! The stages a build runs (spec, lock, plan, build, audit) live in
//! `cuwheel-build`, the Nix formats in `cuwheel-nix` and the wheel format in
//! `cuwheel-wheel` (crates/; docs/reference/internals.md draws the graph).
//! They are re-exported here under their stage names, so `cuwheel::lock`
//! is the lock whichever crate holds it.

pub mod cache;
pub mod fetch;
#[cfg(feature = "init")]
pub mod init;
pub mod publish;
pub mod reproduce;

pub use cuwheel_build::{audit, build, flake, json, lock, plan, process, safe_io, spec, url};
/// The Nix formats, in their own crate (crates/cuwheel-nix).
pub use cuwheel_nix as store;
/// The wheel format and its policy data, in their own crate (crates/cuwheel-wheel).
pub use cuwheel_wheel as wheel;
