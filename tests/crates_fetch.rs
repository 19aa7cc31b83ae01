//! `cuwheel fetch`'s way to the crates that build cuwheel inside Nix: `cargo
//! fetch --locked` of cuwheel's own workspace, from an empty cargo home, as
//! on a machine that never built cuwheel's dependencies. It once failed
//! there (and only there) because the scratch workspace lacked the member
//! crates' manifests.
#![cfg(feature = "integration")]

use cuwheel::fetch::crates::{CARGO_LOCK, cargo_fetch, in_registry_cache, locked_crates};

#[test]
fn cargo_fetch_from_an_empty_cargo_home_leaves_every_locked_crate() {
    let home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // The only test of this binary, so nothing else reads the environment.
    unsafe { std::env::set_var("CARGO_HOME", home.path()) };
    let crates = locked_crates(CARGO_LOCK).unwrap();
    assert!(
        crates
            .iter()
            .all(|c| in_registry_cache(c).unwrap().is_none())
    );
    cargo_fetch(scratch.path()).unwrap();
    let missing: Vec<String> = crates
        .iter()
        .filter(|c| in_registry_cache(c).unwrap().is_none())
        .map(|c| c.file())
        .collect();
    assert!(missing.is_empty(), "cargo fetch left out {missing:?}");
}
