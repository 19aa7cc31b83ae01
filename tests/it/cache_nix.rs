//! The binary cache with real Nix:
//! - `cuwheel cache key` writes a private secret key and never overwrites;
//! - `cuwheel cache export --cell` of the demo's `cu130-py313-torch211`, then,
//!   in a second, empty store rooted in a temporary directory, `nix build`
//!   with the cache as its substituter builds a byte-identical wheel,
//!   building only the cell's own nodes and the plan;
//! - `cuwheel fetch --offline --substituter` copies what a cache signed by
//!   the trusted key holds;
//! - a cache signed by another key of the same name is refused, by cuwheel
//!   (before copying anything) and by Nix (for a path that is not
//!   content-addressed);
//! - offline without a cache, the missing paths are named and no client runs.
//!
//! The demo's pinned artifacts must be in the store (`bash tests/prepare.sh`).

use crate::common::{demo, text};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::flake::{installable, nix_ok, repo};
use crate::common::{
    TempStore, assert_other_key_refused, build_cell_from_cache, cache_export, cuwheel_bin,
    demo_key, impostor_key, run_ok,
};
use cuwheel::cache::Substituter;
use cuwheel::fetch::pinned_paths;
use cuwheel::lock::format::{LOCK_FILE, Lock};

/// `cuwheel fetch` of the demo into `store`, offline, where pip, apt-get
/// and cargo cannot be reached: PATH holds only nix and nix-store, HOME and
/// the caches are empty, and the proxies point at a closed port.
fn fetch_offline(store: &TempStore, scratch: &Path, cache: Option<(&Path, &Path)>) -> Output {
    let bin = scratch.join("bin");
    let home = scratch.join("home");
    if !bin.exists() {
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&home).unwrap();
        for tool in ["nix", "nix-store"] {
            let found = run_ok(Command::new("sh").args(["-c", &format!("command -v {tool}")]));
            let target = text(&found.stdout).trim().to_string();
            std::os::unix::fs::symlink(target, bin.join(tool)).unwrap();
        }
    }
    let closed = "http://127.0.0.1:9/";
    let mut cmd = Command::new(cuwheel_bin());
    cmd.env_clear()
        .env("PATH", &bin)
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("CARGO_HOME", home.join("cargo"))
        .env("PIP_INDEX_URL", closed)
        .env("http_proxy", closed)
        .env("https_proxy", closed)
        .args(["fetch", "--offline", "--project"])
        .arg(demo())
        .arg("--store")
        .arg(store.root());
    if let Some((dir, key)) = cache {
        cmd.arg("--substituter")
            .arg(dir)
            .arg("--trusted-key")
            .arg(key);
    }
    cmd.output().unwrap()
}

/// The demo cell exported and built from the cache.
const CELL: &str = "cu130-py313-torch211";

fn demo_pinned() -> Vec<String> {
    let lock = Lock::read(&demo().join(LOCK_FILE)).unwrap();
    pinned_paths(&lock)
        .unwrap()
        .iter()
        .map(|p| p.to_absolute())
        .collect()
}

#[test]
fn a_key_pair_is_private_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = demo_key(dir.path());
    let keys = secret.parent().unwrap().to_path_buf();
    assert_eq!(
        fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let public_text = fs::read_to_string(&public).unwrap();
    assert!(public_text.starts_with("demo-cache-1:"), "{public_text}");
    // The public key is the secret key's public half.
    assert_eq!(
        cuwheel::cache::key::public_key_of_secret(&secret)
            .unwrap()
            .to_string(),
        public_text.trim()
    );
    let before = fs::read(&secret).unwrap();
    let out = Command::new(cuwheel_bin())
        .args(["cache", "key", "demo-cache-1", "--out"])
        .arg(&keys)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("does not overwrite keys"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(fs::read(&secret).unwrap(), before);
    let mut names: Vec<_> = fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["demo-cache-1.pub", "demo-cache-1.sec"]);
}

#[test]
fn a_cache_signed_by_another_key_of_the_same_name_is_refused_before_any_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (_, public) = demo_key(dir.path());
    // A small cache, written and signed by Nix with the other key: the
    // demo's busybox seed (content-addressed, as every pinned path is, so
    // Nix itself would not check its signature).
    let other_dir = dir.path().join("other");
    let other_public = impostor_key(&other_dir, "demo-cache-1");
    let busybox = demo_pinned()
        .into_iter()
        .find(|p| p.ends_with("-busybox"))
        .expect("the demo pins a busybox seed");
    let cache = dir.path().join("cache");
    nix_ok(&[
        "copy",
        "--to",
        &format!(
            "file://{}?secret-key={}",
            cache.display(),
            other_dir.join("other.sec").display()
        ),
        &busybox,
    ]);
    let store = TempStore::new();
    let out = fetch_offline(&store, dir.path(), Some((&cache, &public)));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is not signed by the trusted key demo-cache-1")
            && stderr.contains(&busybox)
            && stderr.contains("Nothing was copied"),
        "{stderr}"
    );
    assert_eq!(store.paths(), Vec::<String>::new());
    // With the key it was signed with, the same cache is accepted (and the
    // rest is missing, offline, which names the fix).
    let out = fetch_offline(&store, dir.path(), Some((&cache, &other_public)));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("copying 1 paths from the binary cache"),
        "{stderr}"
    );
    assert!(stderr.contains("cuwheel cache export"), "{stderr}");
    assert_eq!(
        store.paths(),
        [busybox.trim_start_matches("/nix/store/").to_string()]
    );
}

#[test]
fn offline_without_a_cache_names_what_is_missing_and_runs_no_client() {
    let dir = tempfile::tempdir().unwrap();
    let store = TempStore::new();
    let out = fetch_offline(&store, dir.path(), None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // Every pinned path is missing; all but the seeds (cut from their
    // artifacts) are unavailable.
    let pinned = demo_pinned().len();
    let seeds = Lock::read(&demo().join(LOCK_FILE)).unwrap().seeds.len();
    assert!(
        stderr.contains(&format!(
            "offline, {} of the {pinned} missing pinned paths are neither in a binary cache",
            pinned - seeds
        )),
        "{stderr}"
    );
    assert!(stderr.contains("fetch without --offline"), "{stderr}");
    // Neither apt nor cargo was started (pip has no line of its own).
    assert!(
        !stderr.contains("package index") && !stderr.contains("cargo fetch of"),
        "{stderr}"
    );
    assert_eq!(store.paths(), Vec::<String>::new());
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn an_exported_cache_alone_fills_an_empty_store_that_builds_the_same_wheel() {
    // The wheel in the main store.
    let result = crate::common::flake::build_out(&[&installable(&format!("wheels.{CELL}"))]);

    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = demo_key(dir.path());
    let cache = dir.path().join("cache");
    // The cell's inputs only (the whole lock would be every toolchain and
    // kernel object of 25 cells, over 14 GB of NARs).
    let export = || cache_export(&cache, &secret, &["--cell", CELL]);
    let first = export();
    assert!(
        first.contains(&format!("the inputs of cell {CELL}: 4 kernel objects and ")),
        "{first}"
    );
    let paths: usize = first
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{first}"));
    assert!(paths > 3, "{first}");
    assert!(first.contains(&format!("({paths} new)")), "{first}");
    eprintln!("{first}");
    // Idempotent: nothing new the second time.
    let second = export();
    assert!(
        second.starts_with(&format!("exported {paths} store paths")) && second.contains("(0 new)"),
        "{second}"
    );

    // A second, empty store.
    let store = TempStore::new();

    // Nix builds the wheel there with the cache as its one substituter:
    // toolchains, kernel objects and the driver come from it; only the
    // plan and the cell's own nodes are built.
    let substituter = Substituter::new(cache.to_str().unwrap(), public.to_str().unwrap()).unwrap();
    build_cell_from_cache(&store, &substituter.nix_options(), &result);
    let wheel = fs::read_dir(&result)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().ends_with(".whl"))
        .expect("the result holds the wheel");
    // And `cuwheel reproduce` there, from the cache alone, builds every
    // derivation of the cell again (kernel objects included, which came
    // from the cache) and finds the main store's wheel identical.
    let out = Command::new(cuwheel_bin())
        .args(["reproduce", "--project"])
        .arg(repo().join("examples/demo-ext"))
        .arg("--store")
        .arg(store.root())
        .arg("--substituter")
        .arg(&cache)
        .arg("--trusted-key")
        .arg(&public)
        .arg(result.join(&wheel))
        .output()
        .unwrap();
    assert!(
        out.status.success() && text(&out.stdout).contains("identical: "),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    // Nix itself refuses what is not content-addressed (the driver) from
    // the cache when trusting another key of the same name.
    let driver = text(
        &nix_ok(&[
            "eval",
            "--raw",
            &installable("packages.x86_64-linux.driver.outPath"),
        ])
        .stdout,
    );
    assert_other_key_refused(&dir.path().join("other"), &substituter.url, &driver);
}
