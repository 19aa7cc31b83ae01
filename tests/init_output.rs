//! What `cuwheel init` leaves in the user's repository, run as the user
//! runs it: the license expression inferred from the LICENSE file's text
//! (the standard texts in tests/fixtures/licenses/) and checked against the
//! classifiers, the matrix its flags name, the files' modes, and the
//! staging of what it wrote in a git repository.
//!
//! Every run passes `--torch`, `--python`, `--cuda` and `--cuda-archs`, and
//! names an interpreter that does not exist for pip: a lookup of the
//! package index would fail the run, so these tests also prove that the
//! flags alone make the matrix.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuwheel::init::license::{Identified, identify};

fn license_text(id: &str) -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/licenses")
            .join(id),
    )
    .unwrap()
}

/// A one-module pybind11 project with `classifiers` and, when given, a
/// LICENSE of `license`.
fn project(classifiers: &[&str], license: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tiny");
    fs::create_dir_all(root.join("csrc")).unwrap();
    fs::create_dir_all(root.join("tiny")).unwrap();
    let classifiers: Vec<String> = classifiers.iter().map(|c| format!("{c:?}")).collect();
    fs::write(
        root.join("setup.py"),
        format!(
            "from setuptools import setup\n\
             from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\
             setup(\n    name=\"tiny\",\n    version=\"1.0.0\",\n    packages=[\"tiny\"],\n    \
             classifiers=[{}],\n    \
             ext_modules=[CUDAExtension(\"tiny._C\", [\"csrc/k.cu\", \"csrc/bind.cpp\"])],\n    \
             cmdclass={{\"build_ext\": BuildExtension}},\n)\n",
            classifiers.join(", ")
        ),
    )
    .unwrap();
    fs::write(
        root.join("csrc/k.cu"),
        "#include <torch/extension.h>\n__global__ void k() {}\n",
    )
    .unwrap();
    fs::write(
        root.join("csrc/bind.cpp"),
        "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
    )
    .unwrap();
    fs::write(root.join("tiny/__init__.py"), "").unwrap();
    if let Some(id) = license {
        fs::write(root.join("LICENSE"), license_text(id)).unwrap();
    }
    (dir, root)
}

/// `cuwheel init --no-lock` of `root` with the four matrix flags, and
/// `path` as PATH when given.
fn init(root: &Path, path: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuwheel"));
    cmd.args(["init", "--no-lock", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.11", "--torch", "2.9"])
        .args(["--python", "3.13,3.14", "--cuda", "13.0,12.8"])
        .args(["--cuda-archs", "8.0,9.0+PTX"])
        .args(["--pip-python", "/nonexistent/python3"])
        .arg(root)
        .env_remove("CUWHEEL_FLAKE");
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn pyproject(root: &Path) -> toml::Table {
    fs::read_to_string(root.join("pyproject.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

fn strings(value: &toml::Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn the_standard_texts_are_identified() {
    for id in ["MIT", "BSD-3-Clause", "Apache-2.0"] {
        match identify(&license_text(id)) {
            Identified::License(found, score) => {
                assert_eq!(found, id);
                assert!(score > 0.9, "{id}: {score}");
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    assert!(matches!(
        identify("All rights reserved. Do not copy."),
        Identified::Unknown(_)
    ));
}

#[test]
fn a_license_file_that_disagrees_with_the_classifier_wins_and_is_reported() {
    let (_dir, root) = project(
        &[
            "Programming Language :: Python :: 3",
            "License :: OSI Approved :: BSD License",
        ],
        Some("Apache-2.0"),
    );
    let out = init(&root, None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc = pyproject(&root);
    assert_eq!(doc["project"]["license"].as_str(), Some("Apache-2.0"));
    assert_eq!(strings(&doc["project"]["license-files"]), ["LICENSE"]);
    assert_eq!(
        strings(&doc["project"]["classifiers"]),
        ["Programming Language :: Python :: 3"]
    );
    assert!(
        err.contains(
            "LICENSE is Apache-2.0, but the classifier `License :: OSI Approved :: BSD License` \
             says BSD-2-Clause or BSD-3-Clause"
        ),
        "{err}"
    );
}

#[test]
fn an_apache_license_file_alone_gives_the_expression() {
    let (_dir, root) = project(&[], Some("Apache-2.0"));
    let out = init(&root, None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        pyproject(&root)["project"]["license"].as_str(),
        Some("Apache-2.0")
    );
    assert!(
        err.contains("license = \"Apache-2.0\" from LICENSE (Apache-2.0, "),
        "{err}"
    );
    assert!(!err.contains("project.license"), "{err}");
}

#[test]
fn a_bsd_classifier_with_its_text_gives_bsd_3_clause() {
    let (_dir, root) = project(
        &["License :: OSI Approved :: BSD License"],
        Some("BSD-3-Clause"),
    );
    let out = init(&root, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = pyproject(&root);
    assert_eq!(doc["project"]["license"].as_str(), Some("BSD-3-Clause"));
    assert!(doc["project"].get("classifiers").is_none(), "{doc}");
    // What init wrote is a config cuwheel accepts.
    cuwheel::spec::Spec::load(&root).unwrap();
}

#[test]
fn no_license_is_reported_and_the_classifier_kept() {
    let (_dir, root) = project(&["License :: OSI Approved :: BSD License"], None);
    let out = init(&root, None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc = pyproject(&root);
    assert!(doc["project"].get("license").is_none());
    assert!(
        err.contains(
            "project.license: no license could be inferred: there is no LICENSE, LICENCE or \
             COPYING file at the root; the classifier `License :: OSI Approved :: BSD License` \
             names no single SPDX license"
        ),
        "{err}"
    );
    assert!(
        err.contains("write license = \"<SPDX expression>\""),
        "{err}"
    );
}

#[test]
fn the_flags_are_the_matrix_written() {
    let (_dir, root) = project(&[], Some("MIT"));
    let out = init(&root, None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc = pyproject(&root);
    let tool = &doc["tool"]["cuwheel"];
    assert_eq!(strings(&tool["matrix"]["torch"]), ["2.11", "2.9"]);
    assert_eq!(strings(&tool["matrix"]["python"]), ["3.13", "3.14"]);
    assert_eq!(strings(&tool["matrix"]["cuda"]), ["13.0", "12.8"]);
    assert_eq!(strings(&tool["cuda-archs"]), ["8.0", "9.0+PTX"]);
    assert!(
        err.contains("init: matrix: torch 2.11, 2.9; python 3.13, 3.14; cuda 13.0, 12.8"),
        "{err}"
    );
    assert!(!err.contains("tool.cuwheel.cuda-archs"), "{err}");
    // A value a flag cannot hold is refused, naming it.
    let out = Command::new(env!("CARGO_BIN_EXE_cuwheel"))
        .args(["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"])
        .args([
            "--torch",
            "2.11",
            "--python",
            "3.13",
            "--cuda-archs",
            "sm90",
        ])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--cuda-archs `sm90`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn new_files_are_0644_and_replaced_ones_keep_their_mode() {
    let (_dir, root) = project(&[], Some("MIT"));
    let pyproject = root.join("pyproject.toml");
    fs::write(&pyproject, "[project]\nname = \"tiny\"\n").unwrap();
    fs::set_permissions(&pyproject, fs::Permissions::from_mode(0o755)).unwrap();
    let out = init(&root, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&pyproject), 0o755);
    assert_eq!(mode(&root.join("flake.nix")), 0o644);
    assert!(
        fs::read_to_string(&pyproject)
            .unwrap()
            .contains("[tool.cuwheel]")
    );
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn init_stages_what_it_wrote_in_a_git_repository() {
    let (_dir, root) = project(&[], Some("MIT"));
    git(&root, &["init", "-q"]);
    let out = init(&root, None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("init: staged pyproject.toml, flake.nix (git add)"),
        "{err}"
    );
    let staged = git(&root, &["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.lines().collect::<Vec<_>>(),
        ["flake.nix", "pyproject.toml"]
    );
}

#[test]
fn without_git_init_prints_the_command() {
    let (_dir, root) = project(&[], Some("MIT"));
    let empty = tempfile::tempdir().unwrap();
    let out = init(&root, Some(empty.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let root = root.canonicalize().unwrap();
    assert!(
        err.contains(&format!(
            "stage the files with `git -C {} add -- pyproject.toml flake.nix`",
            root.display()
        )),
        "{err}"
    );
}
