//! The Nix store formats, computed without asking Nix: hashes and their
//! printed forms, NAR serialisation, store paths, `.drv` files, `.narinfo`
//! files and binary-cache signing keys — plus a
//! typed wrapper over the `nix` commands for what only Nix can do.
//!
//! Every later stage of cuwheel names store objects through this crate (to
//! plan, to tell what is already built, to explain what is shared; cuwheel
//! re-exports it as `cuwheel::store`), so each piece is cross-checked
//! against Nix 2.8 itself in cuwheel's `tests/store_nix.rs`. The formats are
//! pure; [`nix`] is the one module that runs a process.

pub mod base32;
pub mod derivation;
pub mod expr;
pub mod hash;
pub mod nar;
pub mod narinfo;
pub mod nix;
pub mod path;
pub mod path_info;
pub mod setup;
pub mod shown_command;
pub mod signing;

pub use derivation::{Derivation, DerivationOutput};
pub use hash::{Hash, HashAlgo};
pub use path::{FileIngestion, StorePath};
