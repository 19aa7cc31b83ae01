//! Test projects outside the repository: a fixture copied with the demo's
//! lock beside it, its plan made by the cuwheel this test run built, and
//! the Nix expression of its nodes built with the repository's `nix/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::flake::repo;
use super::{bounded, cuwheel_bin, demo, run_ok};

/// A project in `dir`: `pyproject` as its pyproject.toml, and an empty file
/// at each of `sources` (project-relative), for configs read before any
/// source is compiled.
pub fn write_project(dir: &Path, pyproject: &str, sources: &[&str]) {
    fs::write(dir.join("pyproject.toml"), pyproject).unwrap();
    for source in sources {
        let path = dir.join(source);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "").unwrap();
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `tests/fixtures/<name>` copied into `dir`, with the demo's
/// `cuwheel.lock` beside it (the fixtures' cells are cells of the demo's
/// matrix, so its toolchains serve them); the copy's path.
pub fn fixture_with_demo_lock(name: &str, dir: &Path) -> PathBuf {
    let project = dir.join(name);
    copy_dir(&repo().join("tests/fixtures").join(name), &project);
    copy_demo_lock(&project);
    project
}

/// The demo's lock beside `project`, marked as made for its config (the
/// plan refuses a lock written for another `[tool.cuwheel]`): the fixtures
/// build cells the demo's lock has, with the same toolchains.
pub fn copy_demo_lock(project: &Path) {
    let lock = repo().join("examples/demo-ext/cuwheel.lock");
    let mut lock = cuwheel::lock::format::Lock::read(&lock).unwrap();
    lock.config_sha256 = cuwheel::lock::config_sha256(&project.join("pyproject.toml")).unwrap();
    lock.write(&project.join("cuwheel.lock")).unwrap();
}

/// `cuwheel plan --json` of `project`, written to `project/plan.json`.
pub fn write_plan(project: &Path) -> PathBuf {
    let out = run_ok(
        Command::new(cuwheel_bin())
            .args(["plan", "--json", "--project"])
            .arg(project),
    );
    let path = project.join("plan.json");
    fs::write(&path, &out.stdout).unwrap();
    path
}

/// The expression of `project`'s nodes, with the repository's nix/ and the
/// demo's lock, from the plan at `plan`. With `driver`, the wheel and audit
/// nodes run the driver Nix builds from this checkout with its
/// `nix/driver.lock` (as the flake does);
/// without, only nodes that never run it can be built.
pub fn nodes_expr(project: &Path, plan: &Path, driver: bool) -> String {
    let driver = if driver {
        "let driverLock = builtins.fromJSON (builtins.readFile (repo + \"/nix/driver.lock\")); in \
         import (repo + \"/nix/driver.nix\") (import (repo + \"/nix/seeds.nix\") driverLock) { \
         rust = (import (repo + \"/nix/toolchains.nix\") (repo + \"/nix/driver.lock\")).toolchains.${driverLock.driver.rust}; \
         src = repo; }"
    } else {
        "throw \"these nodes never run the driver\""
    };
    format!(
        r#"let
          repo = {repo};
          lockFile = repo + "/examples/demo-ext/cuwheel.lock";
          lock = builtins.fromJSON (builtins.readFile lockFile);
          seeds = import (repo + "/nix/seeds.nix") lock;
          toolchains = (import (repo + "/nix/toolchains.nix") lockFile).toolchains;
        in import (repo + "/nix/plan.nix") seeds {{
          inherit toolchains;
          projectDir = {project};
          plan = builtins.fromJSON (builtins.readFile {plan});
          driver = {driver};
        }}"#,
        repo = repo().display(),
        project = project.display(),
        plan = plan.display(),
    )
}

/// Where `cuwheel init --ci github` writes its workflow, project-relative.
pub const GITHUB_WORKFLOW: &str = ".github/workflows/cuwheel.yml";

/// `dir` made a project that already has `[tool.cuwheel]` (the demo's
/// pyproject.toml), where `init --ci` writes only the workflow.
pub fn demo_config_in(dir: &Path) {
    fs::copy(demo().join("pyproject.toml"), dir.join("pyproject.toml")).unwrap();
}

/// `cuwheel init --ci github [--force] DIR`, under `timeout`, so that a read
/// that blocks fails the test instead of hanging it.
pub fn init_ci(dir: &Path, force: bool) -> Output {
    let mut cmd = bounded(60, cuwheel_bin().to_str().unwrap());
    cmd.args(["init", "--ci", "github"]);
    if force {
        cmd.arg("--force");
    }
    cmd.arg(dir).output().unwrap()
}
