//! cuwheel-build: the stages that run inside cuwheel's Nix builds, and those
//! they read. Everything here is what `nix/driver.nix` compiles into the
//! driver (`bin/cuwheel-build`), so an edit elsewhere (the CLI's own
//! commands, `init`, `fetch`, `publish`, `cache`, `reproduce`) changes no
//! derivation of any wheel.
//!
//! One module per pipeline stage: `spec` reads an extension's
//! `[tool.cuwheel]` config and expands its matrix into checked cells; `lock`
//! the lock that pins every toolchain artifact by hash (`cuwheel.lock`: its
//! format, its toolkit sources, the data both it and the resolver read);
//! `plan` the derivation
//! graph Nix builds; `build` what the driver does inside it (the wheel
//! assembly, its provenance and SBOM); `audit` the verdict on a wheel.
//! Around them: `cli` the driver's subcommands (which the `cuwheel` CLI
//! offers too); `json` writes the canonical JSON of cuwheel's files;
//! `safe_io` reads and writes only regular files; `url` shows URLs without
//! their secrets.
//!
//! What runs only on the host is elsewhere: the registry clients and the
//! resolver that writes `cuwheel.lock` in `cuwheel-registry`, which depends
//! on this crate (never the other way), the CLI's own commands in `cuwheel`.

pub mod audit;
pub mod build;
pub mod cli;
pub mod json;
pub mod lock;
pub mod plan;
pub mod safe_io;
pub mod spec;
/// The Nix formats, in their own crate (crates/cuwheel-nix).
pub use cuwheel_nix as store;
pub mod url;
/// The wheel format and its policy data, in their own crate (crates/cuwheel-wheel).
pub use cuwheel_wheel as wheel;
