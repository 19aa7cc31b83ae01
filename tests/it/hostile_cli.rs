//! Hostile and broken inputs to the command line, each run as a real
//! process of the binary, asserting its exit status and message:
//! - stdout on a full device (`/dev/full`): a one-line error and exit 1,
//!   never a panic (exit 101), for `--help`, `--version`, `audit`,
//!   `plan --json`, `publish` and `store nar-hash`; a full stderr ends with
//!   exit 1 too;
//! - `lock` refuses config errors that need no registry (an unknown
//!   baseline, archs no toolkit has, a missing `--archives` directory)
//!   before it runs pip or apt-get: both are recorders here, and never run;
//! - `lock` against a registry that cannot be reached (pip pointed at a
//!   closed loopback port) says so, and how to fix it, never "no release";
//!   one that accepts connections and never answers ends in pip's timeout
//!   (`--net-timeout`), reported the same way; so is a Debian mirror on a
//!   closed port (`lock --refresh`, which asks apt-get first);
//! - `fetch --cell` of a cell the lock does not have is refused before
//!   anything is downloaded, naming the lock's cells;
//! - pip is given cuwheel's network limits (`--net-timeout`,
//!   `--net-retries`), which `lock --help` and `fetch --help` document.

use crate::common;
use crate::common::{demo, stderr};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::cuwheel_bin;
use crate::common::project::copy_dir;

const FULL_STDOUT: &str =
    "error: cannot write to standard output: No space left on device (os error 28)";

fn full_device() -> Stdio {
    Stdio::from(
        fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    )
}

#[test]
fn output_to_a_full_device_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = common::tiny_wheel(&tmp.path().join("w"), false);
    let wheel = wheel.to_str().unwrap();
    let demo = demo();
    let index = tmp.path().join("index");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["publish", "--help"],
        vec!["audit", wheel],
        vec!["audit", "--json", wheel],
        vec!["plan", "--json", "--project", demo.to_str().unwrap()],
        vec!["publish", "--to", index.to_str().unwrap(), wheel],
        // Still printed with print!: caught by the panic hook.
        vec!["store", "nar-hash", src],
    ];
    for args in &commands {
        let out = Command::new(cuwheel_bin())
            .args(args)
            .stdout(full_device())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "cuwheel {args:?}: {err}");
        assert!(!err.contains("panicked"), "cuwheel {args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with(FULL_STDOUT)).count(),
            1,
            "cuwheel {args:?}: {err}"
        );
    }
    // A full stderr: the error cannot be shown, but the exit is 1, not 101.
    let out = Command::new(cuwheel_bin())
        .args(["audit", "/nonexistent/x-1.0-py3-none-any.whl"])
        .stdout(Stdio::null())
        .stderr(full_device())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let out = Command::new(cuwheel_bin())
        .args(["plan", "--project", empty.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(full_device())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// Programs that record being run (their arguments, one run a line, into
/// `calls`) and fail: `python3`, `pip`, `pip3`, `apt-get`, `curl` and
/// `cargo`, in a directory put first on PATH.
struct Recorders {
    bin: PathBuf,
    calls: PathBuf,
}

impl Recorders {
    fn new(dir: &Path) -> Recorders {
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        let calls = dir.join("calls");
        for name in ["python3", "pip", "pip3", "apt-get", "curl", "cargo"] {
            let script = bin.join(name);
            fs::write(
                &script,
                format!(
                    "#!/bin/sh\necho \"{name} $*\" >> '{}'\necho \"{name}: recorder\" >&2\nexit 1\n",
                    calls.display()
                ),
            )
            .unwrap();
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        }
        Recorders { bin, calls }
    }

    /// `cuwheel ARGS` with the recorders first on PATH and as pip's Python.
    fn cuwheel(&self, args: &[&str], cache: &Path) -> Output {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(cuwheel_bin())
            .args(args)
            .arg("--python")
            .arg(self.bin.join("python3"))
            .env("PATH", path)
            .env("CARGO", self.bin.join("cargo"))
            .env("XDG_CACHE_HOME", cache)
            .env_remove("CUWHEEL_ARCHIVES")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn calls(&self) -> String {
        fs::read_to_string(&self.calls).unwrap_or_default()
    }
}

/// The demo project copied into `dir`, its pyproject.toml edited by `edit`.
fn demo_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let project = dir.join("demo-ext");
    copy_dir(&demo(), &project);
    let pyproject = project.join("pyproject.toml");
    let text = fs::read_to_string(&pyproject).unwrap();
    let edited = edit(text.clone());
    fs::write(&pyproject, edited).unwrap();
    project
}

/// An edit of a pyproject.toml's text.
type Edit = Box<dyn Fn(String) -> String>;

#[test]
fn lock_refuses_config_errors_before_asking_any_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let recorders = Recorders::new(tmp.path());
    let cache = tmp.path().join("cache");
    let archives = demo().join("archives");
    let archives = archives.to_str().unwrap();
    let cases: Vec<(&str, Edit, Vec<&str>, &str)> = vec![
        (
            "baseline",
            Box::new(|t: String| t.replace("\"manylinux_2_31\"", "\"manylinux_1_1\"")),
            vec!["--archives", archives],
            "tool.cuwheel.baseline = \"manylinux_1_1\" is not in cuwheel's compatibility table, \
             which knows manylinux_2_28",
        ),
        (
            "archs",
            Box::new(|t: String| t.replacen("[\"8.0\", \"9.0+PTX\"]", "[\"3.0\"]", 1)),
            vec!["--archives", archives],
            "tool.cuwheel.cuda-archs.default lists 3.0, which no CUDA toolkit cuwheel knows",
        ),
        (
            "archives",
            Box::new(|t: String| t),
            vec!["--archives", "/nonexistent"],
            "the archive directory /nonexistent (--archives) does not exist; fix: name the \
             directory that holds the archives",
        ),
    ];
    for (name, edit, extra, expected) in cases {
        let dir = tmp.path().join(name);
        let project = demo_copy(&dir, edit);
        let mut args = vec!["lock", "--project", project.to_str().unwrap()];
        args.extend(extra);
        let out = recorders.cuwheel(&args, &cache);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("found before asking any registry (nothing was resolved or downloaded)"),
            "{name}: {err}"
        );
        assert!(err.contains(expected), "{name}: {err}");
        assert_eq!(recorders.calls(), "", "{name}: a registry client ran");
        assert_eq!(
            fs::read(project.join("cuwheel.lock")).unwrap(),
            fs::read(demo().join("cuwheel.lock")).unwrap(),
            "{name}: the lock is untouched"
        );
    }

    // The recorders do record: a valid config gets as far as pip, which is
    // given cuwheel's network limits.
    let project = demo_copy(&tmp.path().join("valid"), |t| t);
    let out = recorders.cuwheel(
        &[
            "lock",
            // The copy holds the demo's lock: --fresh, so that pip is asked.
            "--fresh",
            "--project",
            project.to_str().unwrap(),
            "--archives",
            archives,
            "--net-timeout",
            "7",
            "--net-retries",
            "0",
        ],
        &cache,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let calls = recorders.calls();
    assert!(
        calls.starts_with("python3 -m pip --timeout 7 --retries 0 --log "),
        "{calls}"
    );
}

/// The cache of the two tests below, whose pip runs from cuwheel's own
/// venv: made once (a venv takes seconds to make, a minute on a busy
/// machine) and kept, under cargo's per-target scratch directory. Nothing
/// else is cached there: the index these tests give pip never answers.
fn pip_venv_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-cli-cache")
}

#[test]
fn an_unreachable_registry_is_reported_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let project = demo_copy(tmp.path(), |t| t);
    let out = Command::new(cuwheel_bin())
        .args(["lock", "--fresh", "--project"])
        .arg(&project)
        .args(["--archives"])
        .arg(demo().join("archives"))
        // No --python: pip runs from cuwheel's own venv, as for a user (a
        // system python3, as on a bare Debian, may have no pip).
        .args(["--net-timeout", "2", "--net-retries", "0"])
        // A closed loopback port, with a password that must not be shown.
        .env("PIP_INDEX_URL", "http://user:s3cret@127.0.0.1:1/simple")
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env_remove("PIP_EXTRA_INDEX_URL")
        .env_remove("PIP_FIND_LINKS")
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "2")
        .env("XDG_CACHE_HOME", pip_venv_cache())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "pip could not reach the package index ([Errno 111] Connection refused), so cuwheel \
             cannot tell which releases exist (this is not a missing release)"
        ),
        "{err}"
    );
    assert!(
        err.contains("check the network connection and any proxy"),
        "{err}"
    );
    assert!(err.contains("--net-timeout"), "{err}");
    assert!(!err.contains("has no release"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

#[test]
fn a_registry_that_accepts_and_never_answers_ends_in_a_timeout() {
    // A loopback server that accepts every connection and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let project = demo_copy(tmp.path(), |t| t);
    // `timeout` only guards the test run: without cuwheel's limits pip
    // would wait for the server forever.
    let out = common::bounded(300, cuwheel_bin().to_str().unwrap())
        .args(["lock", "--fresh", "--project"])
        .arg(&project)
        .args(["--archives"])
        .arg(demo().join("archives"))
        // No --python: pip runs from cuwheel's own venv, as for a user (a
        // system python3, as on a bare Debian, may have no pip).
        .args(["--net-timeout", "1", "--net-retries", "0"])
        .env("PIP_INDEX_URL", format!("http://127.0.0.1:{port}/simple"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env_remove("PIP_EXTRA_INDEX_URL")
        .env_remove("PIP_FIND_LINKS")
        .env_remove("PIP_TIMEOUT")
        .env_remove("PIP_RETRIES")
        .env("XDG_CACHE_HOME", pip_venv_cache())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("pip could not reach the package index (the connection timed out)"),
        "{err}"
    );
}

#[test]
fn an_unreachable_debian_mirror_is_reported_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let project = demo_copy(tmp.path(), |t| t);
    let out = Command::new(cuwheel_bin())
        .args(["lock", "--refresh", "--project"])
        .arg(&project)
        .args(["--net-timeout", "2", "--net-retries", "0"])
        .env("CUWHEEL_DEBIAN_MIRROR", "http://127.0.0.1:1/debian")
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: the Debian mirror of ")
            && err.contains(
                " could not be reached (this is not a missing package); check the network \
                 connection and any proxy"
            ),
        "{err}"
    );
    assert!(err.contains("Could not connect to 127.0.0.1:1"), "{err}");
}

#[test]
fn fetch_refuses_an_unknown_cell_before_any_download() {
    let tmp = tempfile::tempdir().unwrap();
    let recorders = Recorders::new(tmp.path());
    let store = tmp.path().join("store");
    let out = recorders.cuwheel(
        &[
            "fetch",
            "--project",
            demo().to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
            "--cell",
            "cu999",
        ],
        &tmp.path().join("cache"),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the lock has no cell `cu999`: its cells are cu126-"),
        "{err}"
    );
    assert!(err.contains("pass one of them to --cell"), "{err}");
    assert!(!err.contains("fetch: "), "nothing was fetched: {err}");
    assert_eq!(recorders.calls(), "");
    assert!(!store.exists());
}

#[test]
fn network_limits_are_documented() {
    for command in ["lock", "fetch"] {
        let out = Command::new(cuwheel_bin())
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0));
        for expected in [
            "--net-timeout <SECONDS>",
            "--net-retries <N>",
            "$CUWHEEL_NET_TIMEOUT",
            "apt-get",
        ] {
            assert!(help.contains(expected), "{command}: {help}");
        }
    }
    let out = Command::new(cuwheel_bin())
        .args(["lock", "--net-timeout", "0", "--project", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a network timeout of 0 seconds"));
}
