//! More than one machine, through a shared binary cache over HTTP:
//! `cuwheel cache export --cell cu130-py313-torch211` writes a signed cache of what
//! that cell's own derivations take as inputs (toolchains, kernel objects,
//! seeds, the driver), `python3 -m http.server` serves it on loopback, and a
//! second, empty store rooted in a temporary directory builds the cell's
//! wheel with that URL as its one substituter, signatures required: the
//! toolchains and kernel objects come from the cache, only the plan and
//! the cell's binding, link, wheel and audit are built, and the wheel is
//! byte-identical to the system store's. A key of the same name with other
//! key material is refused.
//!
//! Needs the demo's toolchains (`bash tests/prepare.sh`).

use crate::common::text;

use std::fs;
use std::time::Instant;

use crate::common::flake::{installable, json, nix_ok};
use crate::common::{
    Server, TempStore, assert_other_key_refused, build_cell_from_cache, cache_export, demo_key,
};
use cuwheel::cache::Substituter;

/// The cell `build_cell_from_cache` builds.
const CELL: &str = "cu130-py313-torch211";

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn an_empty_store_substitutes_a_cells_toolchains_and_kernels_over_http() {
    let test_start = Instant::now();
    let phase = |what: &str| eprintln!("{:6.1} s  {what}", test_start.elapsed().as_secs_f64());
    // The cell in the system store: the reference wheel, and its kernels.
    let result = crate::common::flake::build_out(&[&installable(&format!("wheels.{CELL}"))]);
    let kernels: Vec<String> = serde_json::from_value(json(&nix_ok(&[
        "eval",
        "--json",
        &installable("plan"),
        "--apply",
        &format!("p: (builtins.fromJSON (builtins.readFile p)).cells.\"{CELL}\".kernels"),
    ])))
    .unwrap();
    assert_eq!(kernels.len(), 4, "{kernels:?}");
    phase("the cell is in the system store");

    // The cache: only what the cell's own nodes take as inputs.
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = demo_key(dir.path());
    let cache = dir.path().join("cache");
    let summary = cache_export(&cache, &secret, &["--cell", CELL]);
    eprintln!("{summary}");
    assert!(
        summary.contains(&format!(
            "the inputs of cell {CELL}: 4 kernel objects and 8 toolchains, seeds and the driver"
        )),
        "{summary}"
    );
    // No pinned artifact: no .deb, no .whl (a cell's wheels are built, not fetched).
    let narinfos: Vec<String> = fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".narinfo"))
        .collect();
    for name in &narinfos {
        let info = fs::read_to_string(cache.join(name)).unwrap();
        let path = info
            .lines()
            .find_map(|l| l.strip_prefix("StorePath: "))
            .unwrap();
        assert!(
            !path.ends_with(".deb") && !path.ends_with(".whl"),
            "{path} is a pinned artifact in the cell's cache"
        );
        assert!(info.contains("\nSig: demo-cache-1:"), "{info}");
    }
    phase("exported the cell's inputs");

    // Served over HTTP; an empty store builds the cell from it.
    let server = Server::start(&cache, &dir.path().join("server.log"));
    let url = server.url("");
    let url = url.trim_end_matches('/');
    let substituter = Substituter::new(url, public.to_str().unwrap()).unwrap();
    let store = TempStore::new();
    let out = build_cell_from_cache(&store, &substituter.nix_options(), &result);
    let log = text(&out.stderr);
    phase("built the cell in the empty store");
    // Every kernel object and the CUDA toolchain came from the cache.
    let kernel_paths: Vec<String> = kernels
        .iter()
        .map(|k| {
            text(
                &nix_ok(&[
                    "eval",
                    "--raw",
                    &installable(&format!("kernels.{k}.outPath")),
                ])
                .stdout,
            )
        })
        .collect();
    let cuda = text(&nix_ok(&["eval", "--raw", &installable("toolchains.cuda130.outPath")]).stdout);
    for path in kernel_paths.iter().chain([&cuda]) {
        assert!(
            log.contains(&format!("copying path '{path}' from '{url}'")),
            "{path} was not substituted from {url}:\n{log}"
        );
        let hash_part = &path["/nix/store/".len()..][..32];
        assert!(
            server
                .requests()
                .contains(&format!("\"GET /{hash_part}.narinfo HTTP")),
            "{}",
            server.requests()
        );
    }
    // Signatures are checked: trusting another key of the same name, Nix
    // refuses a kernel object (input-addressed, so its signature counts).
    assert_other_key_refused(&dir.path().join("other"), url, &kernel_paths[0]);
    phase("another key is refused");
}
