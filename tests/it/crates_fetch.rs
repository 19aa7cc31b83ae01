//! `cuwheel fetch`'s way to the crates that build cuwheel inside Nix: `cargo
//! fetch --locked` of cuwheel's own workspace, from an empty cargo home, as
//! on a machine that never built cuwheel's dependencies. It once failed
//! there (and only there) because the scratch workspace lacked the member
//! crates' manifests.

use cuwheel::fetch::crates::{CARGO_LOCK, cargo_fetch, in_registry_cache, locked_crates};

#[test]
fn cargo_fetch_from_an_empty_cargo_home_leaves_every_locked_crate() {
    let home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let crates = locked_crates(CARGO_LOCK).unwrap();
    assert!(
        crates
            .iter()
            .all(|c| in_registry_cache(home.path(), c).unwrap().is_none())
    );
    cargo_fetch(home.path(), scratch.path()).unwrap();
    let missing: Vec<String> = crates
        .iter()
        .filter(|c| in_registry_cache(home.path(), c).unwrap().is_none())
        .map(|c| c.file())
        .collect();
    assert!(missing.is_empty(), "cargo fetch left out {missing:?}");
}
