//! A lock that outlives the mirror: `cuwheel fetch` takes each pinned `.deb`
//! that its suite dropped from another suite carrying the same file, or
//! from Debian's snapshot archive as it was when the lock read the suite's
//! index, and only then fails (exit 3, naming every missing file and the
//! re-pin command); `cuwheel lock --refresh` re-pins only what vanished.
//!
//! Against a real Debian archive built here and served on 127.0.0.1 by
//! tests/fixtures/archive_server.py (which answers snapshot timestamps as
//! Debian's snapshot service does): real `.deb`s made with dpkg-deb, real
//! `Packages` and `Release` files, `InRelease` signed with a throwaway GPG
//! key that apt checks through `CUWHEEL_DEBIAN_KEYRING`; real apt-get, real
//! Nix stores rooted in temporary directories. The archive:
//!
//! - the lock was taken at 2025-11-22 08:19:06 UTC from trixie and bookworm
//!   (their Release `Date`): libc6 and libc6-dev 2.41-12+deb13u4, zlib1g
//!   1:1.3.dfsg+really1.3.1-1+b1, busybox-static 1:1.35.0-4+b3 and others;
//! - the mirror now carries deb13u5, +b2 and +b4 instead; libc6-dev deb13u4
//!   is still in trixie-security (on the security archive), the old zlib1g
//!   in forky; libc6 deb13u4 and the old busybox-static in no suite;
//! - the snapshot archive has an import from before the lock (deb13u3, no
//!   bookworm) and one six hours after the lock's index date.

use crate::common::text;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{Server, run_ok, store_listing};
use cuwheel::lock::format::{
    Artifact, CellToolchains, CudaToolchain, LOCK_VERSION, Lock, Seed, Source, SuiteIndex,
    Toolchain, store_name,
};
use cuwheel::store::path::{FileIngestion, fixed_output_path};
use cuwheel::store::{Hash, HashAlgo};

const LOCKED_AT: &str = "Sat, 22 Nov 2025 08:19:06 UTC";
const LOCKED_STAMP: &str = "20251122T081906Z";
const NOW: &str = "Mon, 01 Dec 2025 09:00:00 UTC";
const NOW_STAMP: &str = "20251201T090000Z";
/// Snapshot imports: one before the lock's index date, one after.
const EARLIER_IMPORT: &str = "20251121T200000Z";
const LATER_IMPORT: &str = "20251122T140000Z";

const PYPROJECT: &str = r#"[project]
name = "fallback-ext"
version = "0.1.0"

[tool.cuwheel]
module = "fallback_ext._C"
kernels = ["csrc/*.cu"]
cuda-archs = ["9.0"]
baseline = "manylinux_2_36"

[tool.cuwheel.bindings]
pybind11 = ["csrc/bindings.cpp"]

[tool.cuwheel.matrix]
cuda = ["12.4"]
python = ["3.11", "3.13"]
torch = ["2.9"]
"#;

/// A stand-in for the torch wheel (a PyPI pin, never downloaded: it sits in
/// cuwheel's cache, and a refresh must leave its pin alone).
const TORCH_WHEEL: &str = "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl";

/// One `.deb` to build: name, version, Depends, and whether it is the
/// busybox seed's package (it then holds `bin/busybox`).
struct DebSpec {
    name: &'static str,
    version: &'static str,
    depends: &'static str,
}

const fn deb(name: &'static str, version: &'static str, depends: &'static str) -> DebSpec {
    DebSpec {
        name,
        version,
        depends,
    }
}

const LIBC6_OLD: DebSpec = deb("libc6", "2.41-12+deb13u4", "");
const LIBC6_NEW: DebSpec = deb("libc6", "2.41-12+deb13u5", "");
const LIBC6_OLDER: DebSpec = deb("libc6", "2.41-12+deb13u3", "");
const LIBC6_DEV_OLD: DebSpec = deb(
    "libc6-dev",
    "2.41-12+deb13u4",
    "libc6 (= 2.41-12+deb13u4), libc-dev-bin",
);
const LIBC6_DEV_NEW: DebSpec = deb(
    "libc6-dev",
    "2.41-12+deb13u5",
    "libc6 (= 2.41-12+deb13u5), libc-dev-bin",
);
const LIBC6_DEV_OLDER: DebSpec = deb(
    "libc6-dev",
    "2.41-12+deb13u3",
    "libc6 (= 2.41-12+deb13u3), libc-dev-bin",
);
const ZLIB_OLD: DebSpec = deb("zlib1g", "1:1.3.dfsg+really1.3.1-1+b1", "");
const ZLIB_NEW: DebSpec = deb("zlib1g", "1:1.3.dfsg+really1.3.1-1+b2", "");
const BUSYBOX_OLD: DebSpec = deb("busybox-static", "1:1.35.0-4+b3", "");
const BUSYBOX_NEW: DebSpec = deb("busybox-static", "1:1.35.0-4+b4", "");
/// The trixie packages that did not change.
const TRIXIE_KEPT: [DebSpec; 6] = [
    deb(
        "rustc",
        "1.85.0+dfsg-1",
        "libc6 (>= 2.38), zlib1g (>= 1:1.1.4)",
    ),
    deb("cargo", "1.85.0+dfsg-1", "libc6 (>= 2.38)"),
    deb("gcc", "4:14.2.0-1", "binutils"),
    deb("binutils", "2.44-3", "libc6 (>= 2.38)"),
    deb(
        "nvidia-cuda-toolkit",
        "12.4.131~12.4.1-2",
        "libc6 (>= 2.34), gcc-13 | clang",
    ),
    deb(
        "libpython3.13-dev",
        "3.13.5-2",
        "libpython3.13 (= 3.13.5-2)",
    ),
];
/// The bookworm packages that did not change.
const BOOKWORM_KEPT: [DebSpec; 6] = [
    deb("gcc-12", "12.2.0-14", "binutils (>= 2.40)"),
    deb("g++-12", "12.2.0-14", "gcc-12 (= 12.2.0-14)"),
    deb("libc6-dev", "2.36-9+deb12u13", "libc6 (= 2.36-9+deb12u13)"),
    deb("libc6", "2.36-9+deb12u13", ""),
    deb("binutils", "2.40-2", "libc6 (>= 2.34)"),
    deb("libpython3.11-dev", "3.11.2-6+deb12u6", ""),
];

/// A built `.deb`.
#[derive(Clone)]
struct Built {
    name: String,
    version: String,
    depends: String,
    path: PathBuf,
    sha256: String,
    size: u64,
}

impl Built {
    /// The name apt-get download saves it under.
    fn file(&self) -> String {
        format!(
            "{}_{}_amd64.deb",
            self.name,
            self.version.replace(':', "%3a")
        )
    }

    fn store_name(&self) -> String {
        store_name(&self.file())
    }

    /// Where it lies in an archive (the version without its epoch).
    fn pool(&self) -> String {
        let version = self
            .version
            .split_once(':')
            .map_or(self.version.as_str(), |v| v.1);
        format!("pool/main/{}/{}_{version}_amd64.deb", self.name, self.name)
    }

    fn artifact(&self, suite: &str, used_by: &BTreeSet<String>) -> Artifact {
        Artifact {
            source: Source::Debian {
                suite: suite.to_owned(),
                package: self.name.clone(),
                version: self.version.clone(),
                architecture: "amd64".to_owned(),
            },
            file: self.file(),
            sha256: self.sha256.clone(),
            size: self.size,
            used_by: used_by.clone(),
        }
    }
}

/// The archive, its server and its key, made once per test run.
struct World {
    keyring: PathBuf,
    debs: BTreeMap<(String, String), Built>,
    /// Never dropped: it stops when the test process ends.
    server: Server,
}

impl World {
    fn get() -> &'static World {
        static WORLD: OnceLock<World> = OnceLock::new();
        WORLD.get_or_init(World::make)
    }

    fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    fn deb(&self, spec: &DebSpec) -> &Built {
        &self.debs[&(spec.name.to_owned(), spec.version.to_owned())]
    }

    fn server_log(&self) -> String {
        self.server.requests()
    }

    fn make() -> World {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch-fallback");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let gnupg = tempfile::tempdir().unwrap();
        let gpg = |args: &[&str]| {
            run_ok(
                Command::new("gpg")
                    .env("GNUPGHOME", gnupg.path())
                    .args(["--batch", "--no-tty", "--pinentry-mode", "loopback"])
                    .args(["--passphrase", ""])
                    .args(args),
            )
        };
        gpg(&[
            "--quick-gen-key",
            "cuwheel test archive <archive@invalid>",
            "ed25519",
            "sign",
            "never",
        ]);
        let keyring = dir.join("archive-keyring.gpg");
        gpg(&["--output", keyring.to_str().unwrap(), "--export"]);

        let mut debs = BTreeMap::new();
        let all = [
            &LIBC6_OLD,
            &LIBC6_NEW,
            &LIBC6_OLDER,
            &LIBC6_DEV_OLD,
            &LIBC6_DEV_NEW,
            &LIBC6_DEV_OLDER,
            &ZLIB_OLD,
            &ZLIB_NEW,
            &BUSYBOX_OLD,
            &BUSYBOX_NEW,
        ]
        .into_iter()
        .chain(TRIXIE_KEPT.iter())
        .chain(BOOKWORM_KEPT.iter());
        for spec in all {
            let built = build_deb(&dir.join("build"), spec);
            debs.insert((spec.name.to_owned(), spec.version.to_owned()), built);
        }
        let get = |spec: &DebSpec| debs[&(spec.name.to_owned(), spec.version.to_owned())].clone();
        let trixie_kept: Vec<Built> = TRIXIE_KEPT.iter().map(get).collect();
        let bookworm_kept: Vec<Built> = BOOKWORM_KEPT.iter().map(get).collect();
        let with = |extra: &[&DebSpec], kept: &[Built]| -> Vec<Built> {
            extra
                .iter()
                .map(|s| get(s))
                .chain(kept.iter().cloned())
                .collect()
        };

        let root = dir.join("root");
        let sign = |release: &Path| {
            let inrelease = release.with_file_name("InRelease");
            gpg(&[
                "--clearsign",
                "--output",
                inrelease.to_str().unwrap(),
                release.to_str().unwrap(),
            ]);
        };
        let main = root.join("debian");
        let trixie_now = with(&[&LIBC6_NEW, &LIBC6_DEV_NEW, &ZLIB_NEW], &trixie_kept);
        write_suite(&main, "trixie", NOW, &trixie_now, &sign);
        write_suite(&main, "forky", NOW, &with(&[&ZLIB_OLD], &[]), &sign);
        let bookworm_now = with(&[&BUSYBOX_NEW], &bookworm_kept);
        write_suite(&main, "bookworm", NOW, &bookworm_now, &sign);
        // A mirror whose bookworm index no apt can read: its InRelease is
        // not a signed file, and there is no Release to fall back on.
        let broken = root.join("broken");
        write_suite(&broken, "bookworm", NOW, &bookworm_now, &sign);
        let broken_dists = broken.join("dists/bookworm");
        fs::write(
            broken_dists.join("InRelease"),
            "not a signed Release file\n",
        )
        .unwrap();
        fs::remove_file(broken_dists.join("Release")).unwrap();
        let security = root.join("debian-security");
        write_suite(
            &security,
            "trixie-security",
            NOW,
            &with(&[&LIBC6_DEV_OLD], &[]),
            &sign,
        );
        let snapshot = root.join("snapshot/archive/debian");
        let earlier = with(&[&LIBC6_OLDER, &LIBC6_DEV_OLDER, &ZLIB_OLD], &trixie_kept);
        write_suite(
            &snapshot.join(EARLIER_IMPORT),
            "trixie",
            "Fri, 21 Nov 2025 19:00:00 UTC",
            &earlier,
            &sign,
        );
        let locked_trixie = with(&[&LIBC6_OLD, &LIBC6_DEV_OLD, &ZLIB_OLD], &trixie_kept);
        let later = snapshot.join(LATER_IMPORT);
        write_suite(&later, "trixie", LOCKED_AT, &locked_trixie, &sign);
        let locked_bookworm = with(&[&BUSYBOX_OLD], &bookworm_kept);
        write_suite(&later, "bookworm", LOCKED_AT, &locked_bookworm, &sign);
        run_ok(
            Command::new("gpgconf")
                .env("GNUPGHOME", gnupg.path())
                .args(["--kill", "all"]),
        );

        let script = crate::common::repo().join("tests/fixtures/archive_server.py");
        let server = Server::start_script(&script, &[&root], &dir.join("server.log"));
        World {
            keyring,
            debs,
            server,
        }
    }
}

/// A real `.deb` (dpkg-deb) whose payload names its package and version;
/// busybox-static's is a `bin/busybox` that the seed is cut from.
fn build_deb(dir: &Path, spec: &DebSpec) -> Built {
    let tree = dir.join(format!("{}_{}", spec.name, spec.version.replace(':', "-")));
    fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    let mut control = format!(
        "Package: {}\nVersion: {}\nArchitecture: amd64\nMaintainer: cuwheel tests <tests@invalid>\n",
        spec.name, spec.version
    );
    if !spec.depends.is_empty() {
        control += &format!("Depends: {}\n", spec.depends);
    }
    control += "Description: a package of cuwheel's fetch tests\n";
    fs::write(tree.join("DEBIAN/control"), control).unwrap();
    let (payload, mode) = if spec.name == "busybox-static" {
        ("bin/busybox".to_owned(), 0o755)
    } else {
        (format!("usr/share/doc/{}/version", spec.name), 0o644)
    };
    let file = tree.join(&payload);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(
        &file,
        format!("#!/bin/sh\necho {} {}\n", spec.name, spec.version),
    )
    .unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
    let path = dir.join(format!(
        "{}.deb",
        tree.file_name().unwrap().to_str().unwrap()
    ));
    run_ok(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zgzip", "--build"])
            .arg(&tree)
            .arg(&path),
    );
    let (sha256, size) = cuwheel::registry::downloads::sha256_file(&path).unwrap();
    Built {
        name: spec.name.to_owned(),
        version: spec.version.to_owned(),
        depends: spec.depends.to_owned(),
        path,
        sha256,
        size,
    }
}

/// `archive/dists/<suite>/` (Packages of main, contrib and non-free;
/// Release; InRelease signed by `sign`) and the debs in `archive/pool/`.
fn write_suite(archive: &Path, suite: &str, date: &str, debs: &[Built], sign: &dyn Fn(&Path)) {
    let mut packages = String::new();
    for deb in debs {
        let pool = archive.join(deb.pool());
        fs::create_dir_all(pool.parent().unwrap()).unwrap();
        fs::copy(&deb.path, &pool).unwrap();
        packages += &format!(
            "Package: {}\nVersion: {}\nArchitecture: amd64\n",
            deb.name, deb.version
        );
        if !deb.depends.is_empty() {
            packages += &format!("Depends: {}\n", deb.depends);
        }
        packages += &format!(
            "Filename: {}\nSize: {}\nSHA256: {}\nDescription: a package of cuwheel's fetch tests\n\n",
            deb.pool(),
            deb.size,
            deb.sha256
        );
    }
    let dists = archive.join("dists").join(suite);
    let mut sums = String::new();
    for component in ["main", "contrib", "non-free"] {
        let index = format!("{component}/binary-amd64/Packages");
        let text = if component == "main" {
            packages.as_str()
        } else {
            ""
        };
        fs::create_dir_all(dists.join(&index).parent().unwrap()).unwrap();
        fs::write(dists.join(&index), text).unwrap();
        let sha = cuwheel::store::Hash::sha256(text).to_hex();
        sums += &format!(" {sha} {} {index}\n", text.len());
    }
    let release = format!(
        "Origin: cuwheel tests\nLabel: cuwheel tests\nSuite: {suite}\nCodename: {suite}\n\
         Date: {date}\nArchitectures: amd64\nComponents: main contrib non-free\n\
         Description: an archive of cuwheel's fetch tests\nSHA256:\n{sums}"
    );
    fs::write(dists.join("Release"), release).unwrap();
    sign(&dists.join("Release"));
}

/// `cuwheel ARGS` against the test archive, with cuwheel's cache at `cache`.
fn in_world(args: &[&str], cache: &Path) -> Output {
    in_world_with(args, cache, &[])
}

/// [`in_world`], with `env` set on top (a suite's own mirror, say).
fn in_world_with(args: &[&str], cache: &Path, env: &[(&str, String)]) -> Output {
    let world = World::get();
    crate::common::cuwheel(cache)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("CUWHEEL_DEBIAN_MIRROR", world.url("debian"))
        .env(
            "CUWHEEL_DEBIAN_SECURITY_MIRROR",
            world.url("debian-security"),
        )
        .env(
            "CUWHEEL_DEBIAN_SNAPSHOT",
            world.url("snapshot/archive/debian"),
        )
        .env("CUWHEEL_DEBIAN_KEYRING", &world.keyring)
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .output()
        .expect("cannot run cuwheel")
}

/// Who uses each toolchain: the cells that name it in a role.
fn users(lock: &Lock, toolchain: &str) -> BTreeSet<String> {
    lock.cells
        .iter()
        .filter(|(_, c)| {
            [&c.cuda, &c.gcc, &c.torch].contains(&&toolchain.to_owned())
                || c.python.as_deref() == Some(toolchain)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The lock as `cuwheel lock` wrote it on 2025-11-22.
fn old_lock() -> Lock {
    let world = World::get();
    let cell = |python: &str| CellToolchains {
        bundle: "cu124".into(),
        cuda: "cuda124".into(),
        gcc: "gcc-bookworm".into(),
        python: Some(python.to_owned()),
        torch: "torch29".into(),
        claims: Default::default(),
    };
    let mut lock = Lock {
        version: LOCK_VERSION,
        project: "fallback-ext".into(),
        config_sha256: String::new(),
        facts: Default::default(),
        cells: [
            ("cu124-py311".to_owned(), cell("python311")),
            ("cu124-py313".to_owned(), cell("python313")),
        ]
        .into(),
        bundles: [(
            "cu124".to_owned(),
            [
                "cuda124",
                "gcc-bookworm",
                "python311",
                "python313",
                "torch29",
            ]
            .map(str::to_owned)
            .into(),
        )]
        .into(),
        toolchains: BTreeMap::new(),
        seeds: BTreeMap::new(),
        artifacts: BTreeMap::new(),
        suites: ["trixie", "bookworm"]
            .map(|suite| {
                let index = SuiteIndex {
                    index_date: LOCKED_STAMP.to_owned(),
                };
                (suite.to_owned(), index)
            })
            .into(),
    };
    let kept = |specs: &[DebSpec], names: &[&str]| -> Vec<Built> {
        specs
            .iter()
            .filter(|s| names.contains(&s.name))
            .map(|s| world.deb(s).clone())
            .collect()
    };
    let toolchains: Vec<(&str, &str, Vec<Built>, Toolchain)> = vec![
        (
            "cuda124",
            "trixie",
            [world.deb(&LIBC6_OLD).clone()]
                .into_iter()
                .chain(kept(&TRIXIE_KEPT, &["nvidia-cuda-toolkit"]))
                .collect(),
            Toolchain::Cuda(CudaToolchain {
                kind: "cuda-debian".into(),
                version: "12.4".into(),
                fields: [("suite".to_owned(), "trixie".to_owned())].into(),
                artifacts: BTreeSet::new(),
            }),
        ),
        (
            "gcc-bookworm",
            "bookworm",
            kept(
                &BOOKWORM_KEPT,
                &["gcc-12", "g++-12", "libc6-dev", "libc6", "binutils"],
            ),
            Toolchain::Gcc {
                suite: "bookworm".into(),
                gcc: "12".into(),
                target: None,
                artifacts: BTreeSet::new(),
            },
        ),
        (
            "python311",
            "bookworm",
            kept(&BOOKWORM_KEPT, &["libpython3.11-dev"]),
            Toolchain::PythonHeaders {
                version: "3.11".into(),
                suite: "bookworm".into(),
                artifacts: BTreeSet::new(),
            },
        ),
        (
            "python313",
            "trixie",
            kept(&TRIXIE_KEPT, &["libpython3.13-dev"]),
            Toolchain::PythonHeaders {
                version: "3.13".into(),
                suite: "trixie".into(),
                artifacts: BTreeSet::new(),
            },
        ),
        // A toolchain no cell uses (as the driver's Rust toolchain was in
        // project locks before it moved to cuwheel's own nix/driver.lock):
        // more of what trixie dropped, fetched and re-pinned like the rest.
        (
            "rust-trixie",
            "trixie",
            [&LIBC6_OLD, &LIBC6_DEV_OLD, &ZLIB_OLD]
                .map(|s| world.deb(s).clone())
                .into_iter()
                .chain(kept(&TRIXIE_KEPT, &["rustc", "cargo", "gcc", "binutils"]))
                .collect(),
            Toolchain::Rust {
                suite: "trixie".into(),
                artifacts: BTreeSet::new(),
            },
        ),
    ];
    for (name, suite, debs, mut toolchain) in toolchains {
        let used_by = users(&lock, name);
        for deb in debs {
            let artifact = deb.artifact(suite, &used_by);
            let entry = lock
                .artifacts
                .entry(deb.store_name())
                .or_insert_with(|| artifact.clone());
            entry.used_by.extend(artifact.used_by);
            toolchain.artifacts_mut().insert(deb.store_name());
        }
        lock.toolchains.insert(name.to_owned(), toolchain);
    }
    let torch = Artifact {
        source: Source::Pypi {
            name: "torch".into(),
            version: "2.9.1".into(),
        },
        file: TORCH_WHEEL.into(),
        sha256: Hash::sha256(torch_bytes()).to_hex(),
        size: torch_bytes().len() as u64,
        used_by: users(&lock, "torch29"),
    };
    lock.artifacts.insert(TORCH_WHEEL.into(), torch);
    lock.toolchains.insert(
        "torch29".into(),
        Toolchain::Torch {
            version: "2.9.1".into(),
            artifacts: [TORCH_WHEEL.to_owned()].into(),
            headers_nar_sha256: "0".repeat(64),
            cxx_standard: "c++17".into(),
        },
    );
    let everyone: BTreeSet<String> = lock.cells.keys().cloned().collect();
    let busybox = world.deb(&BUSYBOX_OLD);
    lock.artifacts.insert(
        busybox.store_name(),
        busybox.artifact("bookworm", &everyone),
    );
    lock.seeds.insert(
        "busybox".into(),
        Seed {
            artifact: busybox.store_name(),
            member: "bin/busybox".into(),
            nar_sha256: seed_hash(busybox),
        },
    );
    lock
}

fn torch_bytes() -> &'static [u8] {
    b"a stand-in for a torch wheel, kept in cuwheel's cache\n"
}

fn seed_hash(busybox: &Built) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (_, hash) = cuwheel::registry::tree::seed(
        &busybox.path,
        &busybox.file(),
        "bin/busybox",
        "busybox",
        dir.path(),
    )
    .unwrap();
    hash.to_hex()
}

/// A project holding `lock` (and a pyproject.toml whose config it was taken
/// from), and a cuwheel cache holding the torch stand-in.
fn locked_project(lock: &Lock) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let pyproject = dir.path().join("pyproject.toml");
    fs::write(&pyproject, PYPROJECT).unwrap();
    let mut lock = lock.clone();
    lock.config_sha256 = cuwheel::lock::config_sha256(&pyproject).unwrap();
    lock.write(&dir.path().join("cuwheel.lock")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let files = cache.path().join("cuwheel/files");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join(TORCH_WHEEL), torch_bytes()).unwrap();
    (dir, cache)
}

/// `cuwheel fetch` of the project's lock (`--no-driver`: cuwheel's own
/// `nix/driver.lock` comes from the real mirror, not this archive).
fn fetch(project: &Path, store: &Path, cache: &Path, extra: &[&str]) -> Output {
    fetch_with(project, store, cache, extra, &[])
}

/// [`fetch`], with `env` set on top.
fn fetch_with(
    project: &Path,
    store: &Path,
    cache: &Path,
    extra: &[&str],
    env: &[(&str, String)],
) -> Output {
    let mut args = vec![
        "fetch",
        "--no-driver",
        "--project",
        project.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ];
    args.extend(extra);
    in_world_with(&args, cache, env)
}

/// Adds to `lock` a pin of `spec`'s package at `version`, a version no
/// archive here has ever published, used by `toolchain`; returns its name.
fn pin_unpublished(lock: &mut Lock, spec: &DebSpec, version: &str, toolchain: &str) -> String {
    let mut pin = lock.artifacts[&World::get().deb(spec).store_name()].clone();
    if let Source::Debian {
        version: pinned, ..
    } = &mut pin.source
    {
        *pinned = version.into();
    }
    pin.file = format!("{}_{version}_amd64.deb", spec.name);
    let name = store_name(&pin.file);
    lock.artifacts.insert(name.clone(), pin);
    lock.toolchains
        .get_mut(toolchain)
        .unwrap()
        .artifacts_mut()
        .insert(name.clone());
    name
}

/// The store entry name of an artifact's flat path.
fn artifact_entry(lock: &Lock, name: &str) -> String {
    let hash = Hash::parse(&lock.artifacts[name].sha256, Some(HashAlgo::Sha256)).unwrap();
    let path = fixed_output_path(FileIngestion::Flat, &hash, name).unwrap();
    format!("{}-{name}", path.hash_part())
}

/// The line `cuwheel fetch` prints for one path.
fn line_of<'a>(stderr: &'a str, name: &str) -> &'a str {
    let prefix = format!("fetch: {name}: ");
    stderr
        .lines()
        .find(|line| line.starts_with(&prefix) && !line.ends_with("any more"))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{stderr}"))
}

#[test]
fn fetch_takes_each_dropped_deb_from_the_next_source_that_has_it() {
    let world = World::get();
    let lock = old_lock();
    let (project, cache) = locked_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let out = fetch(project.path(), store.path(), cache.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // Each file says where it came from, in the order of the chain.
    let expect = [
        (
            world.deb(&LIBC6_DEV_OLD),
            "from Debian trixie-security and added",
        ),
        (world.deb(&ZLIB_OLD), "from Debian forky and added"),
        (
            world.deb(&LIBC6_OLD),
            "from the snapshot archive at 20251122T201906Z and added",
        ),
        (
            world.deb(&BUSYBOX_OLD),
            "from the snapshot archive at 20251122T201906Z and added",
        ),
        (world.deb(&TRIXIE_KEPT[0]), "from Debian trixie and added"),
        (
            world.deb(&BOOKWORM_KEPT[5]),
            "from Debian bookworm and added",
        ),
    ];
    for (deb, from) in expect {
        let line = line_of(&stderr, &deb.store_name());
        assert!(line.ends_with(from), "{line}");
    }
    assert!(
        line_of(&stderr, TORCH_WHEEL).ends_with("added from cuwheel's cache"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fetch: seed busybox: cut from busybox-static_1-1.35.0-4+b3_amd64.deb"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "for .debs their suite dropped: 1 from Debian forky, 1 from Debian trixie-security, \
             2 from the snapshot archive"
        ),
        "{stderr}"
    );
    // The pinned suite was read first, and told it had dropped them.
    assert!(
        stderr.contains(&format!(
            "fetch: {}: not in Debian trixie any more",
            world.deb(&LIBC6_OLD).store_name()
        )),
        "{stderr}"
    );
    // The first look, at the index date, is answered with the import
    // before it: trixie there lacks the pins, bookworm is not there at all.
    // The second look, half a day later, is answered with the import after.
    assert!(
        stderr.contains("cannot read the snapshot archive at 20251122T081906Z"),
        "{stderr}"
    );
    let log = world.server_log();
    for request in [
        format!("/snapshot/archive/debian/{LOCKED_STAMP}/dists/trixie/InRelease HTTP/1.1\" 302"),
        format!("/snapshot/archive/debian/{EARLIER_IMPORT}/dists/trixie/InRelease HTTP/1.1\" 200"),
        format!(
            "/snapshot/archive/debian/{LATER_IMPORT}/{} HTTP/1.1\" 200",
            world.deb(&LIBC6_OLD).pool().replace('+', "%2b")
        ),
    ] {
        assert!(
            log.contains(&format!("\"GET {request}")),
            "{request}:\n{log}"
        );
    }

    // Every pinned path is in the store, verified; the downloads are in
    // cuwheel's cache, so a second store fills without downloading.
    let listing = store_listing(store.path());
    for name in lock.artifacts.keys() {
        assert!(listing.contains(&artifact_entry(&lock, name)), "{name}");
    }
    let busybox = store
        .path()
        .join("nix/store")
        .join(listing.iter().find(|n| n.ends_with("-busybox")).unwrap())
        .join("bin/busybox");
    let ran = run_ok(&mut Command::new(&busybox));
    assert_eq!(text(&ran.stdout), "busybox-static 1:1.35.0-4+b3\n");
    let cached = cache.path().join("cuwheel/files");
    for deb in [&LIBC6_OLD, &LIBC6_DEV_OLD, &ZLIB_OLD, &BUSYBOX_OLD] {
        let deb = world.deb(deb);
        assert!(
            cached.join(deb.store_name()).is_file(),
            "{} is not kept",
            deb.file()
        );
    }
    let again = fetch(project.path(), store.path(), cache.path(), &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("nothing to download"),
        "{}",
        text(&again.stderr)
    );
    let second = tempfile::tempdir().unwrap();
    let out = fetch(project.path(), second.path(), cache.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(0.0 MB downloaded)"), "{stderr}");
    assert!(!stderr.contains("package index"), "{stderr}");
}

#[test]
fn fetch_cell_takes_only_what_that_cell_needs() {
    let world = World::get();
    let lock = old_lock();
    let (project, cache) = locked_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let out = fetch(
        project.path(),
        store.path(),
        cache.path(),
        &["--cell", "cu124-py311"],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let listing = store_listing(store.path());
    let py313 = world.deb(&TRIXIE_KEPT[5]).store_name();
    let py311 = world.deb(&BOOKWORM_KEPT[5]).store_name();
    assert!(
        !listing.contains(&artifact_entry(&lock, &py313)),
        "{stderr}"
    );
    assert!(!stderr.contains(&py313), "{stderr}");
    // The cell's toolchains and the seeds; not the other cell's Python, nor
    // the toolchain no cell uses.
    let seeds: BTreeSet<&String> = lock.seeds.values().map(|s| &s.artifact).collect();
    for (name, artifact) in &lock.artifacts {
        let needed = artifact.used_by.contains("cu124-py311") || seeds.contains(name);
        assert_eq!(
            listing.contains(&artifact_entry(&lock, name)),
            needed,
            "{name}: {stderr}"
        );
    }
    assert!(!listing.contains(&artifact_entry(&lock, &world.deb(&ZLIB_OLD).store_name())));
    assert!(listing.contains(&artifact_entry(&lock, &py311)));

    let out = fetch(
        project.path(),
        store.path(),
        cache.path(),
        &["--cell", "cu124-py311", "--cell", "cu999-py311"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no cell `cu999-py311`: its cells are cu124-py311, cu124-py313"),
        "{stderr}"
    );
}

#[test]
fn apt_keeps_its_own_package_cache_and_runs_none_of_the_machines_update_hooks() {
    // A machine whose apt configuration turns the package cache off (as
    // Docker's Debian images do) and runs a hook after every update.
    let lock = old_lock();
    let (project, cache) = locked_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let machine = tempfile::tempdir().unwrap();
    let marker = machine.path().join("hook-ran");
    let config = machine.path().join("apt.conf");
    fs::write(
        &config,
        format!(
            "Dir::Cache::pkgcache \"\";\nDir::Cache::srcpkgcache \"\";\n\
             APT::Update::Post-Invoke {{ \"touch {}\"; }};\n",
            marker.display()
        ),
    )
    .unwrap();
    let out = fetch_with(
        project.path(),
        store.path(),
        cache.path(),
        &["--cell", "cu124-py311"],
        &[("APT_CONFIG", config.display().to_string())],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let suite = cache.path().join("cuwheel/apt/bookworm");
    assert!(suite.join("cache/pkgcache.bin").is_file(), "{stderr}");
    assert!(!marker.exists(), "the machine's apt hook ran: {stderr}");
}

#[test]
fn fetch_names_every_file_no_source_has_and_the_command_that_repins() {
    let world = World::get();
    let mut lock = old_lock();
    // Two pins that were never published anywhere (a version the archive
    // never had, and a known version whose bytes differ from the pin).
    let libc6 = world.deb(&LIBC6_OLD).store_name();
    let ghost_name = pin_unpublished(&mut lock, &LIBC6_OLD, "2.41-12+deb13u1", "rust-trixie");
    let zlib = world.deb(&ZLIB_OLD).store_name();
    lock.artifacts.get_mut(&zlib).unwrap().sha256 = "ab".repeat(32);
    let (project, cache) = locked_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let out = fetch(project.path(), store.path(), cache.path(), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("error: 2 pinned Debian files are gone"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  {ghost_name}: libc6 2.41-12+deb13u1 of Debian trixie; also tried: Debian \
             trixie-updates (unreadable: E: The repository"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  {zlib}: zlib1g 1:1.3.dfsg+really1.3.1-1+b1 of Debian trixie"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("Debian forky, Debian bookworm, the snapshot archive at 20251122T081906Z, the snapshot archive at 20251122T201906Z"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "`cuwheel lock --refresh --project {}`",
            project.path().display()
        )),
        "{stderr}"
    );
    // stdout: the missing files, one a line, for scripts.
    let mut names = [ghost_name.clone(), zlib.clone()];
    names.sort();
    assert_eq!(text(&out.stdout), names.join("\n") + "\n");
    // What could be fetched was; nothing of the missing ones reached the store.
    let listing = store_listing(store.path());
    assert!(listing.contains(&artifact_entry(&lock, &libc6)));
    assert!(!listing.contains(&artifact_entry(&lock, &zlib)));
    assert!(!listing.contains(&artifact_entry(&lock, &ghost_name)));
}

#[test]
fn an_index_apt_cannot_read_is_said_so_and_never_called_a_vanished_package() {
    let world = World::get();
    let mut lock = old_lock();
    // A bookworm pin that no archive here has: were bookworm's index read,
    // it would be "no longer in Debian bookworm" and a re-pin (exit 3).
    let name = pin_unpublished(
        &mut lock,
        &BOOKWORM_KEPT[3],
        "2.36-9+deb12u1",
        "gcc-bookworm",
    );
    let (project, cache) = locked_project(&lock);
    let store = tempfile::tempdir().unwrap();
    let out = in_world_with(
        &[
            "fetch",
            "--no-driver",
            "--project",
            project.path().to_str().unwrap(),
            "--store",
            store.path().to_str().unwrap(),
        ],
        cache.path(),
        &[("CUWHEEL_DEBIAN_MIRROR_BOOKWORM", world.url("broken"))],
    );
    let stderr = text(&out.stderr);
    // A failure to report, not a re-pin: exit 1, and nothing on stdout.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(text(&out.stdout), "", "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("  {name}: ")))
        .unwrap_or_else(|| panic!("no line for {name}:\n{stderr}"));
    assert!(
        line.starts_with(&format!(
            "  {name}: libc6 2.36-9+deb12u1: Debian bookworm's index could \
             not be read: E: "
        )),
        "{line}"
    );
    assert!(!line.contains("no longer in"), "{line}");
    // apt's first error line, not its whole output.
    let reason = line.split("could not be read: ").nth(1).unwrap();
    assert!(
        !reason.contains("Ign:") && !reason.contains("Get:"),
        "{line}"
    );
    assert!(
        stderr.contains(
            "fetch: cannot read Debian bookworm's index; its files go to the fallbacks: E: "
        ),
        "{stderr}"
    );
}

#[test]
fn lock_refresh_repins_only_what_vanished_and_prints_each_change() {
    let world = World::get();
    let old = old_lock();
    let (project, cache) = locked_project(&old);
    let path = project.path().join("cuwheel.lock");
    let before = Lock::read(&path).unwrap();
    let dir = project.path().to_str().unwrap();

    // A config changed since locking is refused, the lock untouched.
    let pyproject = project.path().join("pyproject.toml");
    fs::write(&pyproject, PYPROJECT.replace("\"9.0\"", "\"8.0\"")).unwrap();
    let out = in_world(&["lock", "--refresh", "--project", dir], cache.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("run `cuwheel lock --project {dir}` to lock again")),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(Lock::read(&path).unwrap(), before);
    fs::write(&pyproject, PYPROJECT).unwrap();

    let out = in_world(&["lock", "--refresh", "--project", dir], cache.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        text(&out.stdout),
        "libc6 2.41-12+deb13u4 → 2.41-12+deb13u5 (trixie, toolchain cuda124)\n\
         libc6 2.41-12+deb13u4 → 2.41-12+deb13u5 (trixie, toolchain rust-trixie)\n\
         libc6-dev 2.41-12+deb13u4 → 2.41-12+deb13u5 (trixie, toolchain rust-trixie)\n\
         zlib1g 1:1.3.dfsg+really1.3.1-1+b1 → 1:1.3.dfsg+really1.3.1-1+b2 (trixie, toolchain rust-trixie)\n\
         busybox-static 1:1.35.0-4+b3 → 1:1.35.0-4+b4 (bookworm, seed busybox)\n"
    );
    assert!(
        stderr.contains("re-pinned 4 files the mirror no longer carries (5 version changes)"),
        "{stderr}"
    );
    let after = Lock::read(&path).unwrap();

    // Untouched: the toolchains that lost nothing, the PyPI pin, every
    // artifact not re-pinned, the config.
    for name in ["gcc-bookworm", "python311", "python313", "torch29"] {
        assert_eq!(
            json(&after.toolchains[name]),
            json(&before.toolchains[name]),
            "{name}"
        );
    }
    let gone: BTreeSet<String> = [&LIBC6_OLD, &LIBC6_DEV_OLD, &ZLIB_OLD, &BUSYBOX_OLD]
        .map(|s| world.deb(s).store_name())
        .into();
    for (name, artifact) in &before.artifacts {
        if gone.contains(name) {
            assert!(
                !after.artifacts.contains_key(name),
                "{name} is still pinned"
            );
        } else {
            assert_eq!(json(&after.artifacts[name]), json(artifact), "{name}");
        }
    }
    assert_eq!(after.config_sha256, before.config_sha256);
    assert_eq!(
        (&after.cells, &after.bundles),
        (&before.cells, &before.bundles)
    );

    // Re-pinned: the new files, used by the users of every toolchain that holds them.
    let libc6 = world.deb(&LIBC6_NEW).store_name();
    assert_eq!(
        after.artifacts[&libc6].used_by,
        ["cu124-py311", "cu124-py313"].map(str::to_owned).into()
    );
    assert!(after.toolchains["cuda124"].artifacts().contains(&libc6));
    let rust: BTreeSet<String> = [&LIBC6_NEW, &LIBC6_DEV_NEW, &ZLIB_NEW]
        .map(|s| world.deb(s).store_name())
        .into_iter()
        .chain(TRIXIE_KEPT[..4].iter().map(|s| world.deb(s).store_name()))
        .collect();
    assert_eq!(after.toolchains["rust-trixie"].artifacts(), &rust);
    assert_eq!(
        after.artifacts[&world.deb(&ZLIB_NEW).store_name()].used_by,
        BTreeSet::new()
    );
    let busybox = world.deb(&BUSYBOX_NEW);
    assert_eq!(after.seeds["busybox"].artifact, busybox.store_name());
    assert_eq!(after.seeds["busybox"].nar_sha256, seed_hash(busybox));
    assert_ne!(
        after.seeds["busybox"].nar_sha256,
        before.seeds["busybox"].nar_sha256
    );
    for suite in ["trixie", "bookworm"] {
        assert_eq!(after.suites[suite].index_date, NOW_STAMP, "{suite}");
    }

    // Once more: nothing is gone, nothing is written.
    let bytes = fs::read(&path).unwrap();
    let out = in_world(&["lock", "--refresh", "--project", dir], cache.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("nothing to refresh"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "");
    assert_eq!(fs::read(&path).unwrap(), bytes);

    // And the refreshed lock fetches from the pinned suites alone.
    let store = tempfile::tempdir().unwrap();
    let out = fetch(project.path(), store.path(), cache.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("any more"), "{stderr}");
    assert!(!stderr.contains("dropped"), "{stderr}");
}

/// A lock part as JSON, to compare bytes rather than values.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}
