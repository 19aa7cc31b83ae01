//! Cross-checks with real pip and pypa's `wheel`: wheels we write install
//! with `pip install --no-deps` into a fresh venv, `pip show` and
//! `importlib.metadata` report the name and the version with its local label,
//! and the installed files hold exactly the bytes we put in. A wheel whose
//! platform tag the machine cannot run must be refused by pip, so the tags
//! are shown to matter, not just to parse. pip does not check RECORD, so
//! `wheel unpack` (which checks every member's hash) and `wheel tags` (which
//! checks WHEEL against the file name) judge our RECORD, WHEEL and name, and
//! must agree with our verifier on a tampered wheel.

use std::fs;
use std::io::{Cursor, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{TestEnv, run_ok};
use cuwheel::wheel::{
    BuildTag, CoreMetadata, ProblemKind, ProjectName, TagSet, Version, WheelArchive, WheelBuilder,
    ZipTimestamp,
};

const VERSION: &str = "0.1.0+pt211cu130";

/// (path inside the wheel, contents, executable, where pip installs it
/// relative to the venv: `None` for the platlib directory).
const MEMBERS: [(&str, &str, bool, Option<&str>); 5] = [
    (
        "demo_ext/__init__.py",
        "VERSION = '0.1.0+pt211cu130'\n",
        false,
        None,
    ),
    (
        "demo_ext/_C.abi3.so",
        "\x7fELF stand-in, never imported\n",
        false,
        None,
    ),
    (
        "demo_ext/data/table.csv",
        "arch,sass\nsm_90,yes\n",
        false,
        None,
    ),
    (
        "demo_ext-0.1.0+pt211cu130.data/scripts/demo-run",
        "#!/bin/sh\necho demo\n",
        true,
        Some("bin/demo-run"),
    ),
    (
        "demo_ext-0.1.0+pt211cu130.data/data/share/demo_ext/NOTICE.txt",
        "data file\n",
        false,
        Some("share/demo_ext/NOTICE.txt"),
    ),
];

fn demo_wheel(tags: &str, dest: &Path) -> PathBuf {
    demo_wheel_with_build(tags, None, dest)
}

fn demo_wheel_with_build(tags: &str, build: Option<&str>, dest: &Path) -> PathBuf {
    let mut metadata = CoreMetadata::new(
        ProjectName::new("demo-ext").unwrap(),
        Version::parse(VERSION).unwrap(),
    );
    metadata.summary = Some("cuwheel's pip cross-check".to_string());
    metadata.requires_python = Some(">=3.9".to_string());
    metadata.requires_dist = vec!["torch==2.11.0".to_string()];
    let build = build.map(|b| BuildTag::parse(b).unwrap());
    let mut wheel = WheelBuilder::new(metadata, TagSet::parse(tags).unwrap(), build);
    for (path, contents, executable, _) in MEMBERS {
        wheel
            .add_member(path, contents.as_bytes().to_vec(), executable)
            .unwrap();
    }
    wheel.write_into(dest, ZipTimestamp::EARLIEST).unwrap()
}

/// The venv's Python tag (`cp311`) and every tag its pip accepts, most
/// preferred first, as pip's own bundled `packaging` computes them.
fn supported_tags(env: &TestEnv) -> (String, Vec<String>) {
    let out = run_ok(Command::new(env.python()).args([
        "-c",
        "import sys\n\
         from pip._vendor.packaging import tags\n\
         print(f'cp{sys.version_info[0]}{sys.version_info[1]}')\n\
         for t in tags.sys_tags(): print(t)",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(str::to_string);
    let python = lines.next().unwrap();
    (python, lines.collect())
}

/// A fresh, empty venv in `dir` (no pip of its own; the test venv's pip
/// installs into it with `--python`).
fn fresh_venv(env: &TestEnv, dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    run_ok(
        Command::new(env.python())
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    venv
}

fn pip(env: &TestEnv, venv: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env.python());
    cmd.args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--no-input",
        "--python",
    ])
    .arg(venv.join("bin/python"))
    .args(args);
    cmd
}

fn install(env: &TestEnv, venv: &Path, wheel: &Path) -> Output {
    pip(
        env,
        venv,
        &["install", "--no-deps", "--no-index", "--no-cache-dir"],
    )
    .arg(wheel)
    .output()
    .unwrap()
}

fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8(run_ok(cmd).stdout).unwrap()
}

/// Installs a wheel with `tags` into a fresh venv and checks what pip and
/// Python see, and every installed file's bytes.
fn installs_and_reports_its_version(tags: &str) {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(tags, dir.path());
    let venv = fresh_venv(&env, dir.path());
    let output = install(&env, &venv, &wheel);
    assert!(
        output.status.success(),
        "pip refused {}:\n{}{}",
        wheel.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let show = stdout_of(&mut pip(&env, &venv, &["show", "demo-ext"]));
    assert!(show.contains("Name: demo-ext\n"), "{show}");
    assert!(show.contains(&format!("Version: {VERSION}\n")), "{show}");
    assert!(show.contains("Requires: torch\n"), "{show}");

    let python = venv.join("bin/python");
    let seen = stdout_of(Command::new(&python).args([
        "-c",
        "import importlib.metadata as m, sysconfig, demo_ext\n\
         print(m.version('demo-ext')); print(demo_ext.VERSION)\n\
         print(sysconfig.get_path('platlib'))",
    ]));
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines[..2], [VERSION, VERSION], "{seen}");
    let platlib = Path::new(lines[2]);

    for (path, contents, executable, installed) in MEMBERS {
        let target = match installed {
            Some(relative) => venv.join(relative),
            None => platlib.join(path),
        };
        let bytes = fs::read(&target)
            .unwrap_or_else(|e| panic!("{path} should be installed at {}: {e}", target.display()));
        assert_eq!(bytes, contents.as_bytes(), "{}", target.display());
        if executable {
            let mode = fs::metadata(&target).unwrap().permissions().mode();
            assert!(mode & 0o111 != 0, "{} is not executable", target.display());
        }
    }
    let installed_metadata =
        fs::read_to_string(platlib.join("demo_ext-0.1.0+pt211cu130.dist-info/METADATA")).unwrap();
    assert!(
        installed_metadata.contains(&format!("\nVersion: {VERSION}\n")),
        "{installed_metadata}"
    );
}

#[test]
fn pure_python_wheel_installs_with_its_local_version() {
    installs_and_reports_its_version("py3-none-any");
}

#[test]
fn cpython_manylinux_2_31_wheel_installs() {
    let env = TestEnv::get();
    let (python, supported) = supported_tags(&env);
    let tag = format!("{python}-{python}-manylinux_2_31_x86_64");
    assert!(
        supported.contains(&tag),
        "this machine's pip does not accept {tag} (glibc older than 2.31, or not x86_64); \
         the wheel cross-check needs a machine that runs manylinux_2_31 x86_64 wheels"
    );
    installs_and_reports_its_version(&tag);
}

#[test]
fn compressed_abi3_tag_set_installs() {
    let env = TestEnv::get();
    let (_, supported) = supported_tags(&env);
    let tags = "cp39.cp310-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64";
    let accepted = TagSet::parse(tags)
        .unwrap()
        .expand()
        .iter()
        .any(|t| supported.contains(&t.to_string()));
    assert!(accepted, "this machine's pip accepts none of {tags}");
    installs_and_reports_its_version(tags);
}

#[test]
fn pip_refuses_a_platform_the_machine_cannot_run() {
    let env = TestEnv::get();
    let (python, supported) = supported_tags(&env);
    let tag = format!("{python}-{python}-manylinux_2_99_x86_64");
    assert!(!supported.contains(&tag));
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(&tag, dir.path());
    let venv = fresh_venv(&env, dir.path());
    let output = install(&env, &venv, &wheel);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "pip installed {tag}");
    assert!(
        stderr.contains("is not a supported wheel on this platform"),
        "{stderr}"
    );
}

/// `python -m wheel`, pypa's wheel tool from the test venv.
fn pypa_wheel(env: &TestEnv) -> Command {
    let mut cmd = Command::new(env.python());
    cmd.args(["-m", "wheel"]);
    cmd
}

#[test]
fn pypa_wheel_accepts_our_record_tags_and_name() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    // A build tag and a compressed tag set: the hardest name to get right.
    let tags = "cp39.cp310-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64";
    let wheel = demo_wheel_with_build(tags, Some("1"), dir.path());
    let name = wheel.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        name,
        "demo_ext-0.1.0+pt211cu130-1-cp310.cp39-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64.whl"
    );

    // `wheel tags` with no change prints the canonical name; it raises if
    // WHEEL's Tag or Build lines disagree with the file name.
    let canonical = stdout_of(pypa_wheel(&env).arg("tags").arg(&wheel));
    assert_eq!(
        canonical.trim(),
        name,
        "pypa/wheel's canonical name differs from ours"
    );

    // `wheel unpack` reads every member through RECORD's hashes.
    let unpacked = dir.path().join("unpacked");
    stdout_of(
        pypa_wheel(&env)
            .args(["unpack", "-d"])
            .arg(&unpacked)
            .arg(&wheel),
    );
    let root = unpacked.join("demo_ext-0.1.0+pt211cu130");
    for (path, contents, executable, _) in MEMBERS {
        let target = root.join(path);
        assert_eq!(fs::read(&target).unwrap(), contents.as_bytes(), "{path}");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, if executable { 0o755 } else { 0o644 }, "{path}");
    }
}

#[test]
fn pypa_wheel_and_our_verifier_both_reject_a_tampered_member() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let original = demo_wheel("py3-none-any", dir.path());

    // Copy every entry but change one member's bytes, leaving RECORD as it was.
    let tampered_dir = dir.path().join("tampered");
    fs::create_dir(&tampered_dir).unwrap();
    let tampered = tampered_dir.join(original.file_name().unwrap());
    let mut source = zip::ZipArchive::new(Cursor::new(fs::read(&original).unwrap())).unwrap();
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for i in 0..source.len() {
        let mut entry = source.by_index(i).unwrap();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        if entry.name() == "demo_ext/__init__.py" {
            data = b"VERSION = 'tampered'\n".to_vec();
        }
        let name = entry.name().to_string();
        drop(entry);
        out.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        out.write_all(&data).unwrap();
    }
    fs::write(&tampered, out.finish().unwrap().into_inner()).unwrap();

    let problems = WheelArchive::open(&tampered).unwrap().verify();
    assert!(
        problems.iter().any(|p| matches!(&p.kind,
            ProblemKind::HashMismatch { member, .. } if member == "demo_ext/__init__.py")),
        "{problems:#?}"
    );

    let output = pypa_wheel(&env)
        .args(["unpack", "-d"])
        .arg(dir.path().join("unpacked"))
        .arg(&tampered)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "pypa/wheel unpacked a tampered wheel"
    );
    assert!(
        stderr.contains("Hash mismatch for file 'demo_ext/__init__.py'"),
        "{stderr}"
    );
}
