//! An audit PASS means pip installs the wheel: hostile METADATA (a URL
//! followed by `;`, bad specifiers, extras unnormalised and invalid, a
//! local version for PyPI, a bad Name, a bad Requires-Python), each a
//! wheel crafted here, judged three ways — `cuwheel audit` (its exit status
//! and the message quoting the field), real pip (`pip install --no-deps
//! --no-index WHEEL` into a fresh venv), and pypa's `packaging` with
//! `validate=True`, the parser PyPI judges uploads with — and the three must
//! agree. A good wheel's dependencies are then resolved by `pip install
//! --dry-run` against a loopback simple index of stand-ins with the same
//! names and versions.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::audit_support::{
    EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, assert_run, cuwheel_audit, write_wheel_with_metadata_text,
};
use crate::common::{Server, TestEnv, fresh_venv, output_text};

const FILE: &str = "demo-0.1.0-py3-none-any.whl";
const MEMBERS: &[(&str, &[u8])] = &[("demo/__init__.py", b"VERSION = '0.1.0'\n")];

/// The METADATA of `demo` `version` with `fields` (whole lines) after Version.
fn metadata(version: &str, fields: &str) -> String {
    format!("Metadata-Version: 2.1\nName: demo\nVersion: {version}\n{fields}")
}

fn crafted(dir: &Path, file: &str, text: &str) -> PathBuf {
    let members: Vec<(&str, Vec<u8>)> = MEMBERS.iter().map(|(n, d)| (*n, d.to_vec())).collect();
    write_wheel_with_metadata_text(dir, file, &members, text)
}

/// What real pip says of installing `wheel` (no dependencies, no index)
/// into a fresh venv: whether it installed, and its output.
fn pip_install(env: &TestEnv, wheel: &Path) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let python = fresh_venv(env, &dir.path().join("venv"));
    let out = Command::new(env.python())
        .args(["-m", "pip", "--disable-pip-version-check", "--python"])
        .arg(&python)
        .args(["install", "--no-deps", "--no-index", "--no-cache-dir"])
        .arg(wheel)
        .output()
        .unwrap();
    let installed = Command::new(&python)
        .args(["-c", "import demo"])
        .status()
        .unwrap()
        .success();
    assert_eq!(
        out.status.success(),
        installed,
        "pip's status disagrees with what it installed:\n{}",
        output_text(&out)
    );
    (installed, output_text(&out))
}

/// What `packaging.metadata.Metadata.from_email(text, validate=True)` says
/// of `text`: `valid`, or each field it refuses.
fn packaging_verdict(env: &TestEnv, text: &str) -> String {
    let script = "import sys\n\
                  from packaging.metadata import Metadata\n\
                  try:\n    Metadata.from_email(sys.stdin.read(), validate=True)\n    print('valid')\n\
                  except ExceptionGroup as group:\n    print('; '.join(str(e) for e in group.exceptions))\n";
    let out = crate::common::python_with_stdin(env, script, text.as_bytes());
    String::from_utf8(out).unwrap().trim().to_string()
}

/// One hostile (or good) METADATA and what each judge says of it.
struct Case {
    what: &'static str,
    file: &'static str,
    metadata: String,
    /// `cuwheel audit --pypi` rather than `cuwheel audit`.
    pypi: bool,
    audit: i32,
    audit_says: String,
    /// Whether pip installs it, and what its output holds.
    pip_installs: bool,
    pip_says: &'static str,
    /// What packaging's validator says: `valid` or a piece of its refusal.
    packaging_says: &'static str,
}

fn cases() -> Vec<Case> {
    let url = "pkg @ git+https://host.invalid/repo@abc";
    let finding = |text: &str| format!("[wheel format] demo-0.1.0.dist-info/METADATA: {text}");
    vec![
        Case {
            what: "a URL followed by `;` with no space",
            file: FILE,
            metadata: metadata(
                "0.1.0",
                &format!("Requires-Dist: {url}; extra == \"testing\"\nProvides-Extra: testing\n"),
            ),
            pypi: false,
            audit: EXIT_FAILED,
            audit_says: finding(&format!(
                "METADATA Requires-Dist `{url}; extra == \"testing\"`: expected `;` and a \
                 marker after the URL (and a space before `;`) (at byte 41); pip refuses to \
                 install the wheel"
            )),
            pip_installs: false,
            pip_says: "has invalid metadata: Expected semicolon (after URL and whitespace)",
            packaging_says: "is invalid for 'requires-dist'",
        },
        Case {
            what: "a URL, a space, then `;`",
            file: FILE,
            metadata: metadata(
                "0.1.0",
                &format!("Requires-Dist: {url} ; extra == \"testing\"\nProvides-Extra: testing\n"),
            ),
            pypi: false,
            audit: EXIT_PASSED,
            audit_says: "PASSED".to_string(),
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0",
            packaging_says: "valid",
        },
        Case {
            what: "a direct reference, for PyPI",
            file: FILE,
            metadata: metadata(
                "0.1.0",
                &format!("Requires-Dist: {url} ; extra == \"testing\"\nProvides-Extra: testing\n"),
            ),
            pypi: true,
            audit: EXIT_FAILED,
            audit_says: format!(
                "[PyPI] METADATA Requires-Dist `{url} ; extra == \"testing\"` is a direct \
                 reference, and PyPI refuses direct references"
            ),
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0",
            packaging_says: "valid",
        },
        Case {
            what: "a wildcard after >=",
            file: FILE,
            metadata: metadata("0.1.0", "Requires-Dist: numpy>=1.0.*\n"),
            pypi: false,
            audit: EXIT_FAILED,
            audit_says: finding("METADATA Requires-Dist `numpy>=1.0.*`: "),
            pip_installs: false,
            pip_says: "has invalid metadata: .* suffix can only be used with `==` or `!=`",
            packaging_says: "'numpy>=1.0.*' is invalid for 'requires-dist'",
        },
        Case {
            what: "an operator written backwards",
            file: FILE,
            metadata: metadata("0.1.0", "Requires-Dist: numpy=>1\n"),
            pypi: false,
            audit: EXIT_FAILED,
            audit_says: finding("METADATA Requires-Dist `numpy=>1`: "),
            pip_installs: false,
            pip_says: "has invalid metadata",
            packaging_says: "'numpy=>1' is invalid for 'requires-dist'",
        },
        Case {
            what: "an extra written unnormalised",
            file: FILE,
            metadata: metadata(
                "0.1.0",
                "Provides-Extra: Test_Suite\nRequires-Dist: pytest>=8; extra == \"Test_Suite\"\n",
            ),
            pypi: false,
            audit: EXIT_PASSED,
            audit_says: "PASSED".to_string(),
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0",
            packaging_says: "valid",
        },
        Case {
            what: "an extra that is no name",
            file: FILE,
            metadata: metadata("0.1.0", "Provides-Extra: test suite\n"),
            pypi: false,
            audit: EXIT_FAILED,
            audit_says: finding("METADATA Provides-Extra `test suite`: not a valid extra name ("),
            // pip installs it without its dependencies, but no requirement
            // can name the extra, and PyPI's parser refuses it.
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0",
            packaging_says: "'test suite' is invalid for 'provides-extra'",
        },
        Case {
            what: "a local version, for PyPI",
            file: "demo-0.1.0+pt211cu130-py3-none-any.whl",
            metadata: metadata("0.1.0+pt211cu130", ""),
            pypi: true,
            audit: EXIT_FAILED,
            audit_says: "[PyPI] version 0.1.0+pt211cu130 has a local label, and PyPI refuses \
                         local versions"
                .to_string(),
            // Installers take local versions; only PyPI refuses them.
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0+pt211cu130",
            packaging_says: "valid",
        },
        Case {
            what: "a local version, for the per-CUDA index",
            file: "demo-0.1.0+pt211cu130-py3-none-any.whl",
            metadata: metadata("0.1.0+pt211cu130", ""),
            pypi: false,
            audit: EXIT_PASSED,
            audit_says: "PASSED".to_string(),
            pip_installs: true,
            pip_says: "Successfully installed demo-0.1.0+pt211cu130",
            packaging_says: "valid",
        },
        Case {
            what: "a Name that is no project name",
            file: FILE,
            metadata: "Metadata-Version: 2.1\nName: demo ext!\nVersion: 0.1.0\n".to_string(),
            pypi: false,
            audit: EXIT_ERROR,
            audit_says: "METADATA line 2: invalid project name `demo ext!`".to_string(),
            pip_installs: false,
            pip_says: "ERROR:",
            packaging_says: "'demo ext!' is invalid for 'name'",
        },
        Case {
            what: "a Requires-Python that is no specifier",
            file: FILE,
            metadata: metadata("0.1.0", "Requires-Python: >=3.9.*\n"),
            pypi: false,
            audit: EXIT_FAILED,
            audit_says: finding("METADATA Requires-Python `>=3.9.*`: "),
            // pip warns and installs on any Python; PyPI refuses it.
            pip_installs: true,
            pip_says: "has an invalid Requires-Python: Invalid specifier: '>=3.9.*'",
            packaging_says: "'>=3.9.*' is invalid for 'requires-python'",
        },
    ]
}

#[test]
fn hostile_metadata_is_refused_by_the_audit_as_pip_and_pypi_refuse_it() {
    let env = TestEnv::get();
    for (i, case) in cases().into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = crafted(dir.path(), case.file, &case.metadata);
        let what = case.what;
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if case.pypi {
            args.push("--pypi".into());
        }
        args.push(wheel.clone().into());
        let run = cuwheel_audit(&args);
        eprintln!("case {i}, {what}:\n{}{}", run.stdout, run.stderr);
        assert_run(&run, case.audit, &[&case.audit_says]);
        let (installed, pip) = pip_install(&env, &wheel);
        assert_eq!(installed, case.pip_installs, "{what}: pip says\n{pip}");
        assert!(pip.contains(case.pip_says), "{what}: pip says\n{pip}");
        if !case.pypi {
            // What pip installs, the audit passes, unless PyPI's parser refuses it.
            let verdict = packaging_verdict(&env, &case.metadata);
            assert!(
                verdict.contains(case.packaging_says),
                "{what}: packaging says {verdict}"
            );
            assert_eq!(
                case.audit == EXIT_PASSED,
                installed && verdict == "valid",
                "{what}: the audit and pip with packaging disagree"
            );
        }
    }
}

/// A stand-in wheel: `name` `version` with `fields` in its METADATA, no code.
fn stand_in(dir: &Path, name: &str, version: &str, fields: &str) -> PathBuf {
    let text = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{fields}");
    write_wheel_with_metadata_text(
        dir,
        &format!("{name}-{version}-py3-none-any.whl"),
        &[],
        &text,
    )
}

/// A PEP 503 simple index of the wheels in `files`: `simple/<name>/`
/// linking to `../../files/<wheel>`.
fn simple_index(root: &Path, files: &Path) {
    let mut projects: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for entry in fs::read_dir(files).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.split('-').next().unwrap().to_string();
        projects.entry(name).or_default().push(file);
    }
    for (name, wheels) in &projects {
        let links: String = wheels
            .iter()
            .map(|w| format!("<a href=\"../../files/{w}\">{w}</a><br>\n"))
            .collect();
        let dir = root.join("simple").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("index.html"),
            format!("<html><body>\n{links}</body></html>\n"),
        )
        .unwrap();
    }
}

#[test]
fn a_passing_wheels_dependencies_resolve_against_an_index_of_stand_ins() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files = root.join("files");
    fs::create_dir_all(&files).unwrap();
    // What the wheel requires, and decoys the pins must pass over.
    stand_in(&files, "torch", "2.11.0", "");
    stand_in(&files, "torch", "2.12.0", "");
    stand_in(&files, "numpy", "1.20.0", "");
    stand_in(&files, "numpy", "1.26.4", "");
    stand_in(
        &files,
        "helper",
        "2.0",
        "Provides-Extra: fast\nRequires-Dist: fastdep>=1 ; extra == \"fast\"\n",
    );
    stand_in(&files, "fastdep", "1.0", "");
    stand_in(&files, "pytest", "8.0", "");
    simple_index(root, &files);
    let wheels = root.join("wheels");
    fs::create_dir_all(&wheels).unwrap();
    let text = metadata(
        "0.1.0",
        "Requires-Dist: torch>=2.11,<2.12\n\
         Requires-Dist: numpy>=1.24\n\
         Requires-Dist: helper[fast]==2.0; python_version >= \"3.8\"\n\
         Requires-Dist: pytest>=8; extra == \"testing\"\n\
         Provides-Extra: testing\n\
         Requires-Python: >=3.9\n",
    );
    let wheel = crafted(&wheels, FILE, &text);
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);

    let server = Server::start(root, &root.join("server.log"));
    let resolve = |requirement: &str| -> Vec<String> {
        let report = root.join("report.json");
        let venv = tempfile::tempdir().unwrap();
        let python = fresh_venv(&env, &venv.path().join("venv"));
        let out = Command::new(env.python())
            .args(["-m", "pip", "--disable-pip-version-check", "--python"])
            .arg(&python)
            .args(["install", "--dry-run", "--no-cache-dir", "--index-url"])
            .arg(server.url("simple/"))
            .arg("--report")
            .arg(&report)
            .arg(requirement)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", output_text(&out));
        let report: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
        let mut resolved: Vec<String> = report["install"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                format!(
                    "{} {}",
                    item["metadata"]["name"].as_str().unwrap(),
                    item["metadata"]["version"].as_str().unwrap()
                )
            })
            .collect();
        resolved.sort();
        resolved
    };
    let plain = wheel.display().to_string();
    assert_eq!(
        resolve(&plain),
        [
            "demo 0.1.0",
            "fastdep 1.0",
            "helper 2.0",
            "numpy 1.26.4",
            "torch 2.11.0"
        ]
    );
    assert_eq!(
        resolve(&format!("demo[testing] @ file://{plain}")),
        [
            "demo 0.1.0",
            "fastdep 1.0",
            "helper 2.0",
            "numpy 1.26.4",
            "pytest 8.0",
            "torch 2.11.0"
        ]
    );
}
