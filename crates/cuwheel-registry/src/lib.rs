//! cuwheel-registry: the registries' clients and `cuwheel lock`, which
//! asks them. Everything here runs on the host, never inside a build: the
//! driver (`crates/cuwheel-build`) reads the lock this writes but none of
//! this code, so an edit here changes no derivation of any wheel.
//!
//! In: a project (its `pyproject.toml` and the matrix the `cuwheel-build`
//! crate reads from it) and the registries: pip for PyPI, apt for Debian's
//! signed indexes, curl for the rest, Debian's snapshot archive for what a
//! mirror dropped. Out: `cuwheel.lock` ([`lock_project`], re-pinned by
//! [`refresh_project`]) and `nix/driver.lock` ([`lock_driver`]) in the
//! format `cuwheel_build::lock::format` defines; and, for the CLI's other
//! host stages (`fetch`, `init`, `cache`, `reproduce`), the clients
//! themselves and the download cache.
//!
//! The clients, one module each: [`pip`] (resolutions, listings, the
//! managed venv), [`apt`] (a suite's index and `.deb` files), [`snapshot`]
//! (the snapshot archive), [`downloads`] (the cache and the client that
//! fetches each artifact kind), [`net`] (their time and retry limits),
//! [`process`] (running them), [`file_lock`] (their shared caches, one
//! writer at a time), [`archive`] (Python header archives no registry
//! carries). What the lock makes of their answers: [`torch`]
//! (each torch minor's facts), [`pins`] (artifacts from Debian closures),
//! [`tree`] (the NAR hashes of unpacked trees), [`driver`] (cuwheel's own
//! lock). Besides: [`nix`], the typed wrapper over the `nix` commands
//! every host stage runs Nix through (the formats it reads and writes are
//! `cuwheel-nix`'s), and [`flake`], which checks through it that a flake
//! builds the project it is asked about. The resolver and its pure plan, the
//! preflight checks, the reuse of an earlier lock and the Debian closures
//! are private.

mod debian;
mod preflight;
mod refresh;
mod resolve;
mod reuse;
mod toolchain_plan;
mod toolkit_pins;

pub mod apt;
pub mod archive;
pub mod downloads;
pub mod driver;
pub mod file_lock;
pub mod flake;
pub mod net;
pub mod nix;
pub mod pins;
pub mod pip;
mod pip_venv;
pub mod process;
pub mod snapshot;
pub mod torch;
pub mod tree;

pub use refresh::{Refreshed, refresh_project};
pub use resolve::{LockOptions, lock_driver, lock_project, read_facts, read_facts_reusing};

// The stages this crate builds on, under the names the moved code knows.
use cuwheel_build::{json, lock, spec, store, url, wheel};
