//! What `cuwheel init` leaves in the user's repository, run as the user
//! runs it: the license expression inferred from the LICENSE file's text
//! (the standard texts in tests/fixtures/licenses/) and checked against the
//! classifiers; hostile LICENSE files (two texts in one, Apache-2.0 without
//! its appendix, a symlink to /etc/shadow, binary, over 1 MiB, a FIFO),
//! each named in the report and never listed silently; the matrix its flags name, the files' modes, and the
//! staging of what it wrote in a git repository.
//!
//! Every run passes `--torch`, `--python`, `--cuda` and `--cuda-archs`, and
//! names an interpreter that does not exist for pip: a lookup of the
//! package index would fail the run, so these tests also prove that the
//! flags alone make the matrix.

use crate::common;
use crate::common::stderr;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::init_support::tiny_project;
use cuwheel::init::license::{Identified, identify};

fn license_text(id: &str) -> String {
    fs::read_to_string(
        crate::common::repo()
            .join("tests/fixtures/licenses")
            .join(id),
    )
    .unwrap()
}

/// A one-module pybind11 project with `classifiers` and, when given, a
/// LICENSE of `license`.
fn licensed_project(classifiers: &[&str], license: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let classifiers: Vec<String> = classifiers.iter().map(|c| format!("{c:?}")).collect();
    let setup_py = format!(
        "from setuptools import setup\n\
         from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\
         setup(\n    name=\"tiny\",\n    version=\"1.0.0\",\n    packages=[\"tiny\"],\n    \
         classifiers=[{}],\n    \
         ext_modules=[CUDAExtension(\"tiny._C\", [\"csrc/k.cu\", \"csrc/bind.cpp\"])],\n    \
         cmdclass={{\"build_ext\": BuildExtension}},\n)\n",
        classifiers.join(", ")
    );
    let (dir, root) = tiny_project(
        &setup_py,
        &[
            (
                "csrc/k.cu",
                "#include <torch/extension.h>\n__global__ void k() {}\n",
            ),
            (
                "csrc/bind.cpp",
                "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
            ),
        ],
    );
    if let Some(id) = license {
        fs::write(root.join("LICENSE"), license_text(id)).unwrap();
    }
    (dir, root)
}

/// `cuwheel init --no-lock` of `root` with the four matrix flags, and
/// `path` as PATH when given.
fn init(root: &Path, path: Option<&Path>) -> Output {
    let mut cmd = Command::new(crate::common::cuwheel_bin());
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
    let (_dir, root) = licensed_project(
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
    let (_dir, root) = licensed_project(&[], Some("Apache-2.0"));
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
    let (_dir, root) = licensed_project(
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
    let (_dir, root) = licensed_project(&["License :: OSI Approved :: BSD License"], None);
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
    let (_dir, root) = licensed_project(&[], Some("MIT"));
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
    let out = Command::new(crate::common::cuwheel_bin())
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
    let (_dir, root) = licensed_project(&[], Some("MIT"));
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
    let (_dir, root) = licensed_project(&[], Some("MIT"));
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
    let (_dir, root) = licensed_project(&[], Some("MIT"));
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

/// `project` with its LICENSE replaced by `make(root)`; init's stderr and
/// the pyproject.toml it wrote.
fn init_with_license(make: impl Fn(&Path)) -> (String, toml::Table) {
    let (_dir, root) = licensed_project(&[], None);
    make(&root);
    let out = common::bounded(120, crate::common::cuwheel_bin().to_str().unwrap())
        .args(["init", "--no-lock", "--cuwheel", "path:/opt/cuwheel"])
        .args(["--torch", "2.11", "--python", "3.13", "--cuda", "13.0"])
        .args([
            "--cuda-archs",
            "8.0",
            "--pip-python",
            "/nonexistent/python3",
        ])
        .arg(&root)
        .env_remove("CUWHEEL_FLAKE")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    (err, pyproject(&root))
}

#[test]
fn concatenated_license_texts_are_all_named() {
    let (err, doc) = init_with_license(|root| {
        let both = format!("{}\n\n{}", license_text("MIT"), license_text("Apache-2.0"));
        fs::write(root.join("LICENSE"), both).unwrap();
    });
    assert!(doc["project"].get("license").is_none(), "{doc}");
    assert_eq!(strings(&doc["project"]["license-files"]), ["LICENSE"]);
    assert!(
        err.contains(
            "project.license: no license could be inferred: LICENSE holds several licenses' \
             texts (MIT, Apache-2.0); whether they apply together (AND) or as a choice (OR) \
             cannot be inferred; no License classifier names one\n"
        ),
        "{err}"
    );
}

#[test]
fn apache_terms_without_the_appendix_are_apache() {
    let (err, doc) = init_with_license(|root| {
        let full = license_text("Apache-2.0");
        let end = full.find("END OF TERMS AND CONDITIONS").unwrap();
        fs::write(root.join("LICENSE"), &full[..end + 27]).unwrap();
    });
    assert_eq!(
        doc["project"]["license"].as_str(),
        Some("Apache-2.0"),
        "{err}"
    );
    assert!(!err.contains("Pixar"), "{err}");
}

#[test]
fn a_license_file_that_cannot_be_trusted_is_neither_read_nor_listed() {
    let over_cap = "MIT License\n".repeat((1 << 20) / 12 + 1);
    type Make = Box<dyn Fn(&Path)>;
    let cases: Vec<(Make, String)> = vec![
        (
            Box::new(|root: &Path| {
                std::os::unix::fs::symlink("/etc/shadow", root.join("LICENSE")).unwrap()
            }),
            "LICENSE is a symbolic link to /etc/shadow, out of the project".to_string(),
        ),
        (
            Box::new(|root: &Path| {
                fs::write(root.join("LICENSE"), b"\x7fELF\x02\x01\x01\0\0\0\xff\xfe").unwrap()
            }),
            "LICENSE is binary (not UTF-8 text)".to_string(),
        ),
        (
            Box::new(move |root: &Path| fs::write(root.join("LICENSE"), &over_cap).unwrap()),
            format!(
                "LICENSE is {} bytes, over the 1048576 bytes (1 MiB) a license file may be",
                ((1 << 20) / 12 + 1) * 12
            ),
        ),
        (
            Box::new(|root: &Path| {
                let made = Command::new("mkfifo")
                    .arg(root.join("LICENSE"))
                    .status()
                    .unwrap();
                assert!(made.success());
            }),
            "LICENSE is a FIFO (named pipe), not a regular file".to_string(),
        ),
    ];
    for (make, why) in cases {
        let (err, doc) = init_with_license(make);
        assert!(
            doc["project"].get("license-files").is_none(),
            "{why}: {doc}"
        );
        assert!(doc["project"].get("license").is_none(), "{why}: {doc}");
        assert!(
            err.contains(&format!(
                "project.license-files: {why}: it was neither read nor listed in license-files\n"
            )),
            "{why}:\n{err}"
        );
        assert!(
            err.contains(
                "project.license: no license could be inferred: LICENSE could not be read (see \
                 project.license-files); no License classifier names one\n"
            ),
            "{why}:\n{err}"
        );
        assert!(!err.contains("there is no LICENSE"), "{why}:\n{err}");
    }
}
