//! cuwheel: turns one PyTorch CUDA extension into a matrix of hermetic,
//! audited, bit-for-bit reproducible wheels built with Nix.
//!
//! One module per pipeline stage: `init` (cargo feature `init`, on by
//! default and left out of the driver Nix builds) writes a project's
//! `[tool.cuwheel]` config and flake, inferred from its sources and setup.py
//! (read statically, never run); `spec` reads an extension's
//! `[tool.cuwheel]` config and expands its matrix into checked cells; `store`
//! holds the Nix formats every stage uses to name store objects without
//! asking Nix; `lock` pins every toolchain artifact by hash (`cuwheel.lock`)
//! and `fetch` puts them into the Nix store; `cache` archives them (and
//! what is built from them) in a signed Nix binary cache; `wheel` the wheel format;
//! `plan` the derivation graph Nix builds; `build` what the driver does
//! inside it (the wheel assembly); `audit` the verdict on a wheel;
//! `publish` the package index audited wheels are served from;
//! `reproduce` the verdict on whether a checkout rebuilds a wheel bit for bit;
//! `flake` checks that a flake builds the project it is asked about;
//! `process` runs the registries' clients; `json` writes the canonical JSON
//! of cuwheel's files; `safe_io` reads and writes only regular files;
//! `url` shows URLs without their secrets.

pub mod audit;
pub mod build;
pub mod cache;
pub mod fetch;
pub mod flake;
#[cfg(feature = "init")]
pub mod init;
pub mod json;
pub mod lock;
pub mod plan;
pub mod process;
pub mod publish;
pub mod reproduce;
pub mod safe_io;
pub mod spec;
/// The Nix formats, in their own crate (crates/cuwheel-nix).
pub use cuwheel_nix as store;
pub mod url;
/// The wheel format and its policy data, in their own crate (crates/cuwheel-wheel).
pub use cuwheel_wheel as wheel;
