//! What the integration tests share: the prepared tool environment
//! (`bash tests/prepare.sh`) and small process helpers.
//!
//! Cross-checks never skip: a missing tool is a failure that says how to
//! prepare it, so CI cannot pass by silently testing nothing.

// The first tier uses a part of this; the integration tier, all of it.
#![cfg_attr(not(feature = "integration"), allow(dead_code))]

pub mod flake;
pub mod project;
pub mod sshd;

pub use flake::repo;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Tools and downloaded artifacts made by `tests/prepare.sh`.
pub struct TestEnv {
    pub root: PathBuf,
}

impl TestEnv {
    pub fn get() -> TestEnv {
        let root = match std::env::var_os("CUWHEEL_TEST_ENV") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-env"),
        };
        assert!(
            root.join("ready").is_file(),
            "the cross-check tools are not prepared in {}: run `bash tests/prepare.sh` first \
             (or `bash tests/run.sh`, which prepares and then runs every test)",
            root.display()
        );
        TestEnv { root }
    }

    /// The venv's `python`, which has pip and `tests/requirements.txt` installed.
    pub fn python(&self) -> PathBuf {
        self.root.join("venv/bin/python")
    }

    /// A console script installed in the venv (e.g. `auditwheel`).
    pub fn venv_bin(&self, name: &str) -> PathBuf {
        self.root.join("venv/bin").join(name)
    }

    /// Real wheels listed in `tests/fixtures/real-wheels.txt`.
    pub fn wheels_dir(&self) -> PathBuf {
        self.root.join("wheels")
    }

    /// A CUDA 13 toolkit tree (`bin/nvcc`, `include/`, `lib64/`) made from pip's nvidia wheels.
    pub fn cuda_home(&self) -> PathBuf {
        self.root.join("cuda")
    }
}

/// A small deterministic generator (xorshift64*), so every run of a
/// generated cross-check compares the same cases.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Runs a command, panicking with its full output if it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The names in the `nix/store` of a store rooted at `store` (none yet: empty).
pub fn store_listing(store: &Path) -> std::collections::BTreeSet<String> {
    match std::fs::read_dir(store.join("nix/store")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Default::default(),
    }
}

/// Bytes a process wrote, as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A command's stderr, as text.
pub fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// A command's stdout and stderr, as two texts.
pub fn texts(out: &Output) -> (String, String) {
    (text(&out.stdout), text(&out.stderr))
}

/// A command's stdout then stderr, as one text.
pub fn output_text(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The demo project, `examples/demo-ext`.
pub fn demo() -> PathBuf {
    repo().join("examples/demo-ext")
}

/// The path of the `cuwheel` binary built for this test run.
pub fn cuwheel_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cuwheel"))
}

/// The `cuwheel` binary with its download cache (`XDG_CACHE_HOME`) at
/// `cache`, so that a test reads and fills no cache but its own; the
/// modules add their arguments and environment.
pub fn cuwheel(cache: &Path) -> Command {
    let mut cmd = Command::new(cuwheel_bin());
    cmd.env("XDG_CACHE_HOME", cache);
    cmd
}

/// A command run under coreutils' `timeout`, so that it ends after
/// `limit_s` seconds even if the test process is killed before it can stop
/// it; stop it with [`stop`], which `timeout` passes on.
pub fn bounded(limit_s: u32, program: &str) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["--signal=TERM", "--kill-after=5"])
        .arg(limit_s.to_string())
        .arg(program);
    cmd
}

/// Stops a [`bounded`] command: SIGTERM to `timeout`, which sends it on to
/// the command's process group, and waits for it.
pub fn stop(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// `python3 -m http.server` serving a directory on 127.0.0.1 (or a server
/// script of the tests), on a port the system picks; its request log goes to
/// `log`. Stopped on drop, and a script server also when its stdin closes
/// (the test process ended), for one held in a `static`; after half an hour in
/// any case.
pub struct Server {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
    _stdin: Option<std::process::ChildStdin>,
}

impl Server {
    pub fn start(dir: &Path, log: &Path) -> Server {
        let mut python = bounded(1800, "python3");
        python
            .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0"])
            .arg("--directory")
            .arg(dir);
        Server::spawn(python, log)
    }

    /// `python3 SCRIPT ARGS`: a script that serves like http.server does
    /// and says so first (`Serving HTTP on 127.0.0.1 port N …`).
    pub fn start_script(script: &Path, args: &[&Path], log: &Path) -> Server {
        let mut python = bounded(1800, "python3");
        python.arg("-u").arg(script).args(args);
        python.stdin(std::process::Stdio::piped());
        Server::spawn(python, log)
    }

    fn spawn(mut python: Command, log: &Path) -> Server {
        use std::io::{BufRead, BufReader};
        let mut child = python
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("timeout and python3 run");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let port = line
            .split(" port ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("cannot read the server's port from {line:?}"));
        Server {
            _stdin: child.stdin.take(),
            child,
            port,
            log: log.to_path_buf(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// The requests served so far, one log line each.
    pub fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// A Nix store rooted in a temporary directory; its store directories are
/// read-only, so they are made writable before the directory is dropped
/// (it can hold gigabytes).
pub struct TempStore(tempfile::TempDir);

impl TempStore {
    pub fn new() -> TempStore {
        TempStore(tempfile::tempdir().unwrap())
    }
    pub fn root(&self) -> &Path {
        self.0.path()
    }
    /// `local?root=…`, as `--store` and `nix copy --to` take it.
    pub fn url(&self) -> String {
        format!("local?root={}", self.root().display())
    }
    /// The store paths it holds.
    pub fn paths(&self) -> Vec<String> {
        match std::fs::read_dir(self.root().join("nix/store")) {
            Ok(entries) => entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name != ".links")
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+w")
            .arg(self.root())
            .status();
    }
}

/// `cuwheel cache export CACHE --key SECRET` of the demo with the
/// repository's flake, and `extra` arguments: what it printed.
pub fn cache_export(cache: &Path, secret: &Path, extra: &[&str]) -> String {
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["cache", "export"])
            .arg(cache)
            .arg("--key")
            .arg(secret)
            .arg("--project")
            .arg(flake::repo().join("examples/demo-ext"))
            .arg("--flake")
            .arg(flake::repo())
            .args(extra),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Builds the demo's `cu130-py313-torch211` wheel in `store` with `options` (a
/// binary cache as its substituter), and checks that Nix built only the
/// plan and the cell's own nodes (its symbol tables included) — toolchains,
/// kernel objects and the driver came from the cache — and that the wheel is byte-identical to the one in
/// `result` (the system store's). Nix's output.
pub fn build_cell_from_cache(store: &TempStore, options: &[String], result: &Path) -> Output {
    let mut args = vec![
        "build".to_string(),
        "--no-link".into(),
        "--json".into(),
        "--store".into(),
        store.url(),
    ];
    args.extend(options.iter().cloned());
    args.push(flake::installable("wheels.cu130-py313-torch211"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = flake::nix_ok(&args);
    let log = String::from_utf8_lossy(&out.stderr);
    let expected: std::collections::BTreeSet<String> = [
        "cuwheel-plan.json",
        "binding-cuda130-torch211-py313",
        "link-cu130-py313-torch211",
        // the symbol tables its audit reads: the torch release it claims
        // (the others of CUDA 13 are compat.<cell>'s, not built here), the
        // CUDA runtime, the baseline's sysroot
        "symbols-torch211",
        "symbols-cuda130",
        "symbols-gcc-bullseye",
        "wheel-cu130-py313-torch211",
        "audit-cu130-py313-torch211",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(flake::built(&log), expected, "{log}");
    let second = PathBuf::from(flake::json(&out)[0]["outputs"]["out"].as_str().unwrap());
    assert_eq!(second, result, "the same derivation");
    let wheel = std::fs::read_dir(result)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().ends_with(".whl"))
        .expect("the result holds the wheel");
    let in_second = store
        .root()
        .join(second.strip_prefix("/").unwrap())
        .join(&wheel);
    assert!(
        std::fs::read(&in_second).unwrap() == std::fs::read(result.join(&wheel)).unwrap(),
        "the wheel built from the cache differs from the system store's"
    );
    out
}

/// Checks that Nix, trusting only a key named like the cache's with other
/// key material (made in `dir`), refuses to copy `path` (input-addressed,
/// so its signature counts) from the cache at `url` into an empty store.
pub fn assert_other_key_refused(dir: &Path, url: &str, path: &str) {
    let other = impostor_key(dir, "demo-cache-1");
    let impostor = cuwheel::cache::Substituter::new(url, other.to_str().unwrap()).unwrap();
    let fresh = TempStore::new();
    let mut cmd = flake::nix(&[]);
    cmd.args(impostor.nix_options())
        .args(["copy", "--from", url, "--to", &fresh.url(), path]);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("lacks a valid signature"), "{stderr}");
    assert_eq!(fresh.paths(), Vec::<String>::new());
}

/// A second key pair in `dir` named like the first, with other key
/// material: its public key file.
pub fn impostor_key(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    run_ok(
        Command::new("nix-store")
            .args(["--generate-binary-cache-key", name])
            .arg(dir.join("other.sec"))
            .arg(dir.join("other.pub")),
    );
    dir.join("other.pub")
}

/// `cuwheel cache key demo-cache-1 --out DIR/keys`: the secret and public
/// key files.
pub fn demo_key(dir: &Path) -> (PathBuf, PathBuf) {
    let keys = dir.join("keys");
    run_ok(
        Command::new(cuwheel_bin())
            .args(["cache", "key", "demo-cache-1", "--out"])
            .arg(&keys),
    );
    (keys.join("demo-cache-1.sec"), keys.join("demo-cache-1.pub"))
}

/// Checks that every file the wheel's RECORD hashes is installed under
/// `site` with those bytes; returns how many were checked.
pub fn assert_installed_as_recorded(site: &Path, wheel: &Path) -> usize {
    let archive = cuwheel::wheel::WheelArchive::open(wheel).unwrap();
    let record = &archive
        .member(&format!("{}/RECORD", archive.dist_info_dir()))
        .unwrap()
        .data;
    let mut checked = 0;
    for entry in cuwheel::wheel::parse_record(std::str::from_utf8(record).unwrap()).unwrap() {
        let Some(hash) = entry.hash else { continue };
        let installed = std::fs::read(site.join(&entry.path)).unwrap_or_else(|e| {
            panic!("{}: {} is not installed: {e}", wheel.display(), entry.path)
        });
        assert_eq!(
            cuwheel::wheel::FileHash::sha256(&installed),
            hash,
            "{}: the installed {} differs from RECORD",
            wheel.display(),
            entry.path
        );
        checked += 1;
    }
    assert!(checked > 0, "{}: RECORD hashes no file", wheel.display());
    checked
}

/// A fresh venv at `dir` without pip of its own (the test venv's pip and uv
/// install into it); its python.
pub fn fresh_venv(env: &TestEnv, dir: &Path) -> PathBuf {
    run_ok(
        Command::new(env.python())
            .args(["-m", "venv", "--without-pip"])
            .arg(dir),
    );
    dir.join("bin/python")
}

/// Real pip installs `wheel` (no dependencies, no index) into a fresh venv
/// of this machine's `python3` at `venv`; the venv's site-packages.
pub fn pip_install_in_venv(venv: &Path, wheel: &Path) -> PathBuf {
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(venv));
    run_ok(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--no-deps", "--no-index", "--quiet"])
            .arg(wheel),
    );
    site_packages(&venv.join("bin/python"))
}

/// The site-packages directory of the venv of `python`.
pub fn site_packages(python: &Path) -> PathBuf {
    let out = run_ok(Command::new(python).args([
        "-c",
        "import sysconfig; print(sysconfig.get_path('purelib'))",
    ]));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Real uv (from the test venv) installs `requirement` from the index at
/// `index_url` into the venv of `python`, without dependencies or caches.
pub fn uv_install(env: &TestEnv, python: &Path, index_url: &str, requirement: &str) {
    run_ok(
        Command::new(env.venv_bin("uv"))
            .args(["pip", "install", "--no-config", "--no-cache", "--no-deps"])
            .arg("--python")
            .arg(python)
            .args(["--index-url", index_url, requirement])
            .env("UV_PYTHON_DOWNLOADS", "never"),
    );
}

/// Every entry under `dir` as it lies on disk (symlinks not followed):
/// file bytes, or `-> target` for a link, or `/` for a directory.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                all.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if meta.is_dir() {
                all.insert(rel, b"/".to_vec());
                todo.push(path);
            } else {
                all.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    all
}

/// The archs of a module's fat binary: its SASS images' and its PTX's
/// (`["80", "90", "90a"]`), in the fat binary's order.
pub fn fatbin_archs(name: &str, module: &[u8]) -> (Vec<String>, Vec<String>) {
    let section = cuwheel::audit::elf::nv_fatbin_section(name, module)
        .unwrap()
        .unwrap_or_else(|| panic!("{name} has no fat binary"));
    let images = cuwheel::audit::fatbin::parse(section).unwrap();
    let sass = images.sass().iter().map(ToString::to_string).collect();
    let ptx = images.ptx().iter().map(ToString::to_string).collect();
    (sass, ptx)
}

/// The venv's Python running `script` with `input` on its stdin; its
/// stdout, after asserting that it succeeded.
pub fn python_with_stdin(env: &TestEnv, script: &str, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new(env.python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{script}: {}", output_text(&out));
    out.stdout
}

/// A pure-Python `demo-ext` wheel of `version` in `dir`, whose
/// `demo_ext/__init__.py` names the version: the publish and upload tests'
/// wheels. `metadata` edits its core metadata first; `members` adds files.
pub fn demo_ext_wheel(
    dir: &Path,
    version: &str,
    metadata: impl FnOnce(&mut cuwheel::wheel::CoreMetadata),
    members: impl FnOnce(&mut cuwheel::wheel::WheelBuilder),
) -> PathBuf {
    let mut core = cuwheel::wheel::CoreMetadata::new(
        cuwheel::wheel::ProjectName::new("demo-ext").unwrap(),
        cuwheel::wheel::Version::parse(version).unwrap(),
    );
    metadata(&mut core);
    let mut builder = cuwheel::wheel::WheelBuilder::new(
        core,
        cuwheel::wheel::TagSet::parse("py3-none-any").unwrap(),
        None,
    );
    builder
        .add_member(
            "demo_ext/__init__.py",
            format!("VERSION = {version:?}\n").into_bytes(),
            false,
        )
        .unwrap();
    members(&mut builder);
    std::fs::create_dir_all(dir).unwrap();
    builder
        .write_into(dir, cuwheel::wheel::ZipTimestamp::EARLIEST)
        .unwrap()
}

/// A small pure-Python wheel; with `provenance`, one that claims to be a
/// cuwheel wheel of a cell the demo does not have.
pub fn tiny_wheel(dir: &Path, provenance: bool) -> PathBuf {
    let metadata = cuwheel::wheel::CoreMetadata::new(
        cuwheel::wheel::ProjectName::new("tiny").unwrap(),
        cuwheel::wheel::Version::parse("1.0").unwrap(),
    );
    let mut wheel = cuwheel::wheel::WheelBuilder::new(
        metadata,
        cuwheel::wheel::TagSet::parse("py3-none-any").unwrap(),
        None,
    );
    wheel
        .add_member("tiny/__init__.py", b"x = 1\n".to_vec(), false)
        .unwrap();
    if provenance {
        let provenance = cuwheel::build::Provenance {
            cell: "cu999-py313".into(),
            cuwheel: env!("CARGO_PKG_VERSION").into(),
            ..cuwheel::build::Provenance::default()
        };
        wheel
            .add_member(
                "tiny-1.0.dist-info/cuwheel-provenance.json",
                cuwheel::json::canonical(&provenance).into_bytes(),
                false,
            )
            .unwrap();
    }
    std::fs::create_dir_all(dir).unwrap();
    wheel
        .write_into(
            dir,
            cuwheel::wheel::ZipTimestamp::from_unix_seconds(0).unwrap(),
        )
        .unwrap()
}
