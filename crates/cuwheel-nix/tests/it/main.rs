//! cuwheel-nix's integration tests: one binary, a module per concern.

mod recorded;
