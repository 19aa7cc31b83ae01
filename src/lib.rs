//! cuwheel: turns one PyTorch CUDA extension into a matrix of hermetic,
//! audited, bit-for-bit reproducible wheels built with Nix.
//!
//! One module per pipeline stage. `store` holds the Nix formats every stage
//! uses to name things in the store without asking Nix; `wheel` the wheel
//! format; `audit` the verdict on a built wheel.

pub mod audit;
pub mod store;
pub mod wheel;
