//! cuwheel-build's integration tests: one binary, a module per concern.
//! The tests that run the CLI, Nix or the prepared tools are the root
//! crate's (tests/).

mod spec_load;
