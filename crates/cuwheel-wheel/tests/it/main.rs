//! cuwheel-wheel's integration tests: one binary, a module per concern.
//! The tests that need the CLI, pip or the audit stay with the crates that
//! have them (the root crate's tests/).

mod bad_input;
mod determinism;
mod fuzz;
