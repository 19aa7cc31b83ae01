//! The Nix store formats, computed without asking Nix: hashes and their
//! printed forms, NAR serialisation, store paths, `.drv` files, `.narinfo`
//! files and binary-cache signing keys, and the shapes Nix prints its path
//! infos, settings and probes in. No process runs here: the typed wrapper
//! over the `nix` commands is the host's (`cuwheel-registry`'s `nix`).
//!
//! Every later stage of cuwheel names store objects through this crate (to
//! plan, to tell what is already built, to explain what is shared; cuwheel
//! re-exports it as `cuwheel::store`), so each piece is cross-checked
//! against Nix 2.8 itself in cuwheel's `tests/it/store_nix.rs`.

pub mod base32;
pub mod derivation;
pub mod expr;
pub mod hash;
pub mod nar;
pub mod narinfo;
pub mod path;
pub mod path_info;
pub mod setup;
pub mod shown_command;
pub mod signing;

pub use derivation::{Derivation, DerivationOutput};
pub use hash::{Hash, HashAlgo};
pub use path::{FileIngestion, StorePath};
