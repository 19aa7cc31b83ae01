//! The PyPI channel against a real index server: `cuwheel publish --pypi`
//! writes an uploader's directory, `cuwheel upload` sends it with real twine
//! to a real pypiserver on loopback that demands a password (htpasswd),
//! and real pip installs the wheel from that server into a fresh venv,
//! where it imports. A wrong password is refused by the server and stores
//! nothing. A wheel PyPI would refuse — a local version, a file over the
//! limit — is refused by cuwheel before twine is even started, and
//! `publish --pypi` writes nothing for it.

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Rng, TestEnv, bounded, cuwheel_bin, demo_ext_wheel, run_ok, stop};

const USER: &str = "maintainer";
const PASSWORD: &str = "correct-horse-battery-9";

/// A pure-Python `demo-ext` wheel of `version` with a Markdown long
/// description and `blob` bytes of incompressible data.
fn wheel(dir: &Path, version: &str, blob: usize) -> PathBuf {
    wheel_described(dir, version, blob, "text/markdown")
}

fn wheel_described(dir: &Path, version: &str, blob: usize, content_type: &str) -> PathBuf {
    demo_ext_wheel(
        dir,
        version,
        |m| {
            m.summary = Some("cuwheel's PyPI upload cross-check".to_string());
            m.description = Some("# demo-ext\n\nA *demo*.\n".to_string());
            m.description_content_type = Some(content_type.to_string());
        },
        |builder| {
            if blob > 0 {
                builder
                    .add_member("demo_ext/blob.bin", Rng(11).bytes(blob), false)
                    .unwrap();
            }
        },
    )
}

/// A real pypiserver on 127.0.0.1 serving `packages`, uploads allowed only
/// with [`USER`]'s [`PASSWORD`]; stopped on drop.
struct Pypiserver {
    child: Child,
    port: u16,
    packages: PathBuf,
}

impl Pypiserver {
    fn start(env: &TestEnv, dir: &Path) -> Pypiserver {
        let htpasswd = dir.join("htpasswd");
        run_ok(Command::new(env.python()).arg("-c").arg(format!(
            "from passlib.apache import HtpasswdFile\n\
             h = HtpasswdFile({:?}, new=True)\n\
             h.set_password({USER:?}, {PASSWORD:?})\n\
             h.save()",
            htpasswd.to_str().unwrap()
        )));
        let packages = dir.join("packages");
        fs::create_dir_all(&packages).unwrap();
        // A free port: bound, read, released, then given to the server.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = env.venv_bin("pypi-server");
        let child = bounded(1200, server.to_str().unwrap())
            .args(["run", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--authenticate", "update", "--passwords"])
            .arg(&htpasswd)
            // Never redirect a miss to another index: this machine reaches none.
            .arg("--disable-fallback")
            .arg(&packages)
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.join("server.log")).unwrap())
            .spawn()
            .expect("timeout and pypi-server run");
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "pypi-server did not listen on port {port}: {}",
                fs::read_to_string(dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Pypiserver {
            child,
            port,
            packages,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    fn stored(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.packages)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Pypiserver {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

fn upload(
    env: &TestEnv,
    server: &Pypiserver,
    password: &str,
    extra: &[&str],
    wheels: &[PathBuf],
) -> Output {
    Command::new(cuwheel_bin())
        .arg("upload")
        .args(["--repository-url", &server.url()])
        .arg("--twine")
        .arg(env.venv_bin("twine"))
        .args(extra)
        .args(wheels)
        .env("TWINE_USERNAME", USER)
        .env("TWINE_PASSWORD", password)
        // twine would otherwise look for a keyring.
        .env("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
        .output()
        .unwrap()
}

#[test]
fn the_pypi_variant_uploads_with_a_password_and_installs_with_pip() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let built = wheel(&tmp.path().join("built"), "0.1.0", 0);
    let dist = tmp.path().join("dist");
    run_ok(
        Command::new(cuwheel_bin())
            .args(["publish", "--pypi"])
            .arg(&dist)
            .arg(&built),
    );
    let file = built.file_name().unwrap().to_str().unwrap().to_string();
    let listed: Vec<String> = fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(
        listed,
        std::slice::from_ref(&file),
        "only the wheel, no .metadata"
    );
    let ready = dist.join(&file);
    assert_eq!(fs::read(&ready).unwrap(), fs::read(&built).unwrap());
    // twine agrees with cuwheel's PyPI rules, both ways.
    run_ok(
        Command::new(env.venv_bin("twine"))
            .args(["check", "--strict"])
            .arg(&ready),
    );
    let html = wheel_described(&tmp.path().join("html"), "0.1.0", 0, "text/html");
    let twine = Command::new(env.venv_bin("twine"))
        .arg("check")
        .arg(&html)
        .output()
        .unwrap();
    assert!(!twine.status.success(), "{}", common::output_text(&twine));
    let ours = Command::new(cuwheel_bin())
        .args(["audit", "--pypi"])
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(
        ours.status.code(),
        Some(3),
        "{}",
        common::output_text(&ours)
    );
    assert!(
        common::output_text(&ours).contains("`text/html` is not one PyPI renders"),
        "{}",
        common::output_text(&ours)
    );

    let server = Pypiserver::start(&env, tmp.path());
    let refused = upload(
        &env,
        &server,
        "wrong-password",
        &[],
        std::slice::from_ref(&ready),
    );
    assert!(
        !refused.status.success(),
        "{}",
        common::output_text(&refused)
    );
    assert!(server.stored().is_empty(), "{:?}", server.stored());

    let out = upload(&env, &server, PASSWORD, &[], std::slice::from_ref(&ready));
    assert!(out.status.success(), "{}", common::output_text(&out));
    assert!(
        !common::output_text(&out).contains(PASSWORD),
        "the password was echoed:\n{}",
        common::output_text(&out)
    );
    assert_eq!(server.stored(), std::slice::from_ref(&file));
    assert_eq!(
        fs::read(server.packages.join(&file)).unwrap(),
        fs::read(&built).unwrap()
    );

    // Real pip, from the server's simple index, into a fresh venv.
    let venv = tmp.path().join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run_ok(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-cache-dir",
            ])
            .args(["--index-url", &format!("{}simple/", server.url())])
            .arg("demo-ext==0.1.0"),
    );
    let out = run_ok(
        Command::new(venv.join("bin/python"))
            .args(["-c", "import demo_ext; print(demo_ext.VERSION)"])
            .current_dir(tmp.path()),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0.1.0");
}

#[test]
fn what_pypi_refuses_is_refused_before_twine_starts() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let server = Pypiserver::start(&env, tmp.path());
    // A twine that records being started: it must never be.
    let marker = tmp.path().join("twine-ran");
    let fake = tmp.path().join("twine");
    fs::write(
        &fake,
        format!("#!/bin/sh\ntouch {:?}\n", marker.to_str().unwrap()),
    )
    .unwrap();
    run_ok(Command::new("chmod").arg("755").arg(&fake));
    let good = wheel(&tmp.path().join("good"), "0.2.0", 0);
    let local = wheel(&tmp.path().join("local"), "0.2.0+pt211cu130", 0);
    let large = wheel(&tmp.path().join("large"), "0.3.0", 300_000);
    let run = |extra: &[&str], wheels: &[PathBuf]| -> Output {
        Command::new(cuwheel_bin())
            .arg("upload")
            .args(["--repository-url", &server.url(), "--twine"])
            .arg(&fake)
            .args(extra)
            .args(wheels)
            .env("TWINE_USERNAME", USER)
            .env("TWINE_PASSWORD", PASSWORD)
            .output()
            .unwrap()
    };

    let out = run(&[], &[good.clone(), local.clone()]);
    assert!(!out.status.success());
    let said = common::output_text(&out);
    assert!(
        said.contains("1 of 2 wheels cannot be uploaded, so nothing was sent"),
        "{said}"
    );
    assert!(
        said.contains("0.2.0+pt211cu130 has a local label"),
        "{said}"
    );
    assert!(said.contains("[tool.cuwheel.pypi]"), "{said}");

    let out = run(&["--max-file-size", "100000"], std::slice::from_ref(&large));
    assert!(!out.status.success());
    let said = common::output_text(&out);
    assert!(said.contains("over the 0.1 MiB PyPI takes"), "{said}");
    assert!(said.contains("max-file-size"), "{said}");

    let with_password = format!("http://{USER}:{PASSWORD}@127.0.0.1:{}/", server.port);
    let out = Command::new(cuwheel_bin())
        .args(["upload", "--repository-url", &with_password])
        .arg(&good)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        common::output_text(&out).contains("TWINE_PASSWORD"),
        "{}",
        common::output_text(&out)
    );
    assert!(
        !common::output_text(&out).contains(PASSWORD),
        "the password was echoed: {}",
        common::output_text(&out)
    );

    assert!(!marker.exists(), "twine was started for a refused upload");
    assert!(server.stored().is_empty());

    // publish --pypi writes nothing for a refused wheel, not even DIR.
    let dist = tmp.path().join("dist");
    let out = Command::new(cuwheel_bin())
        .args(["publish", "--pypi"])
        .arg(&dist)
        .args([&good, &local])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        common::output_text(&out).contains("cannot be published, so nothing was written"),
        "{}",
        common::output_text(&out)
    );
    assert!(!dist.exists(), "publish --pypi left {}", dist.display());
}
