//! The CLI crate's integration tests: one binary, one module per subject
//! (the shape of uv's `crates/*/tests/it`), and one set of helpers
//! (`common`, with `audit_support` and `init_support` for the audit's and
//! init's fixtures).
//!
//! Tiers, as in `Cargo.toml`'s features:
//! - plain `cargo test`: the modules below that need no Nix, no prepared
//!   tools and no network;
//! - `--features integration`: the modules marked so, which run real Nix,
//!   pip, nvcc, readelf, auditwheel and loopback servers (`tests/run.sh`
//!   prepares them);
//! - `--features heavy`: inside those modules, the tests marked
//!   `ignore = "heavy tier…"` run as well.
//!
//! One module alone: `cargo test --features integration --test it plan_nix::`.
//! `tests/run.sh` runs each module so, one after the other, and lists each
//! one's wall time.

mod audit_support;
mod common;
mod init_support;

// The first tier.
mod arch_specific_lock;
mod audit_hostile;
mod driver_lock;
mod error_messages;
mod hostile_cli;
mod hostile_init;
mod hostile_paths;
mod hostile_urls;
mod init_infer;
mod init_output;
mod init_patterns;
mod init_toolkit;
mod module_graph;
mod plan_graph;
mod publish_concurrent;
mod publish_safety;
mod reproduce_url;
mod toolkit_source_guide;
mod wheel_platform;
mod wheel_zip_limits;

// The integration tier.
#[cfg(feature = "integration")]
mod aarch64_nix;
#[cfg(feature = "integration")]
mod audit_aarch64;
#[cfg(feature = "integration")]
mod audit_auditwheel;
#[cfg(feature = "integration")]
mod audit_crafted;
#[cfg(feature = "integration")]
mod audit_fuzz;
#[cfg(feature = "integration")]
mod audit_images;
#[cfg(feature = "integration")]
mod audit_leaks;
#[cfg(feature = "integration")]
mod audit_nvcc;
#[cfg(feature = "integration")]
mod audit_readelf;
#[cfg(feature = "integration")]
mod cache_nix;
#[cfg(feature = "integration")]
mod ci_workflow;
#[cfg(feature = "integration")]
mod closed_pipe;
#[cfg(feature = "integration")]
mod crates_fetch;
#[cfg(feature = "integration")]
mod driver_nix;
#[cfg(feature = "integration")]
mod fetch_fallback;
#[cfg(feature = "integration")]
mod flags_determinism_nix;
#[cfg(feature = "integration")]
mod http_cache_nix;
#[cfg(feature = "integration")]
mod init_budget;
#[cfg(feature = "integration")]
mod init_direct_reference;
#[cfg(feature = "integration")]
mod init_torch_archs;
#[cfg(feature = "integration")]
mod load_check_nix;
#[cfg(feature = "integration")]
mod lock_fetch;
#[cfg(feature = "integration")]
mod metadata_pip;
#[cfg(feature = "integration")]
mod multi_module_nix;
#[cfg(feature = "integration")]
mod nix_versions_nix;
#[cfg(feature = "integration")]
mod plan_nix;
#[cfg(feature = "integration")]
mod project_flake_nix;
#[cfg(feature = "integration")]
mod publish_index;
#[cfg(feature = "integration")]
mod publish_nix;
#[cfg(feature = "integration")]
mod pypi_nix;
#[cfg(feature = "integration")]
mod pypi_upload;
#[cfg(feature = "integration")]
mod remote_builder_nix;
#[cfg(feature = "integration")]
mod reproduce_nix;
#[cfg(feature = "integration")]
mod sbom;
#[cfg(feature = "integration")]
mod store_nix;
#[cfg(feature = "integration")]
mod toolchains_nix;
#[cfg(feature = "integration")]
mod wheel_packaging;
#[cfg(feature = "integration")]
mod wheel_pip;
#[cfg(feature = "integration")]
mod wheels_nix;
