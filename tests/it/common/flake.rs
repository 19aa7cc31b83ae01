//! Real `nix` on the repository's flake, as a clean checkout sees it: the
//! flake is `<repo>` through git, so only tracked files count. Every call pins
//! the sandbox on (no silent fallback) and no substituters, and builds
//! independent derivations in parallel (`max-jobs = auto`).

use std::path::Path;
use std::process::{Command, Output};

const NIX_OPTIONS: &[&str] = &[
    "--extra-experimental-features",
    "nix-command flakes",
    "--option",
    "sandbox",
    "true",
    "--option",
    "sandbox-fallback",
    "false",
    "--option",
    "substituters",
    "",
    "--option",
    "max-jobs",
    "auto",
];

/// For `nix` only (nix-store has no evaluator): no evaluation cache. Tests
/// evaluate one flake from several threads at once, and Nix 2.8, finding
/// the cache's SQLite database busy, went on to report an attribute that
/// exists as missing (`attribute 'legacyPackages.x86_64-linux.legacyPackages'
/// is unexpectedly missing`, asked for `…toolchains.gcc-bullseye`).
const EVAL_OPTIONS: &[&str] = &["--option", "eval-cache", "false"];

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `<repo>#<attr>`.
pub fn installable(attr: &str) -> String {
    format!("{}#{attr}", repo().display())
}

/// `nix` with the options every test run pins.
pub fn nix(args: &[&str]) -> Command {
    let mut cmd = Command::new("nix");
    cmd.args(NIX_OPTIONS).args(EVAL_OPTIONS).args(args);
    cmd
}

/// Runs `program` (`nix` or `nix-store`) with the pinned options; a failure
/// panics with Nix's own message (which names a missing pinned artifact) and
/// what to do about it.
pub fn nix_ok_with(program: &str, args: &[&str]) -> Output {
    nix_ok_env(program, &[], args)
}

/// [`nix_ok_with`] with these environment variables set.
pub fn nix_ok_env(program: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let version = Command::new(program).arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "`{program}` is not runnable: install Nix 2.8 or later (`bash scripts/demo.sh` does) and run \
         `bash tests/prepare.sh`"
    );
    let (options, eval): (&[&str], &[&str]) = if program == "nix" {
        (NIX_OPTIONS, EVAL_OPTIONS)
    } else {
        (&NIX_OPTIONS[2..], &[])
    };
    let out = Command::new(program)
        .args(options)
        .args(eval)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("nix started a moment ago");
    assert!(
        out.status.success(),
        "{program} {} failed with {}:\n{}\nIf a pinned artifact is missing, run \
         `cuwheel fetch --project examples/demo-ext` (`bash tests/prepare.sh` does), then run \
         the tests again.",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn nix_ok(args: &[&str]) -> Output {
    nix_ok_with("nix", args)
}

/// Derivation names in Nix's "building '…drv'" lines.
pub fn built(stderr: &str) -> std::collections::BTreeSet<String> {
    stderr
        .lines()
        .filter_map(|line| {
            let drv = line.trim().strip_prefix("building '")?.split('\'').next()?;
            let base = drv.rsplit('/').next()?.strip_suffix(".drv")?;
            Some(base.split_once('-')?.1.to_string())
        })
        .collect()
}

/// `nix build --no-link --json ARGS` (an installable, or `--impure --expr
/// EXPR`): the output path of the first thing built.
pub fn build_out(args: &[&str]) -> std::path::PathBuf {
    let built = json(&nix_ok(&[&["build", "--no-link", "--json"], args].concat()));
    std::path::PathBuf::from(
        built[0]["outputs"]["out"]
            .as_str()
            .expect("an `out` output"),
    )
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("nix printed JSON")
}

/// A git repository in a temporary directory holding the working tree's
/// tracked files as they are now (edited or not), as a flake sees them.
pub fn flake_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let listed = super::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(repo())
            .args(["ls-files", "-z"]),
    );
    for file in listed.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let rel = Path::new(std::str::from_utf8(file).unwrap());
        let from = repo().join(rel);
        if !from.exists() {
            continue; // deleted in the working tree
        }
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    super::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["init", "-q"]),
    );
    super::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["add", "-A"]),
    );
    dir
}

/// A project outside cuwheel's repository, as its maintainer keeps it: the
/// tracked files of `project` (a directory of this repository), the
/// template flake from `nix flake init -t` with its cuwheel input pointed at
/// this checkout (`git+file:`), in a fresh git repository with every file
/// added. The directory holds no nix/, src/ or Cargo.* of cuwheel's.
pub fn project_flake(project: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let listed = super::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(repo())
            .args(["ls-files", "-z", "--", project]),
    );
    for file in listed.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let rel = Path::new(std::str::from_utf8(file).unwrap());
        let to = dir.path().join(rel.strip_prefix(project).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo().join(rel), &to).unwrap();
    }
    let url = format!("git+file://{}", repo().display());
    let mut init = nix(&["flake", "init", "-t", &url]);
    super::run_ok(init.current_dir(dir.path()));
    let flake = dir.path().join("flake.nix");
    let text = std::fs::read_to_string(&flake).unwrap();
    assert!(text.contains("git+file:///path/to/cuwheel"), "{text}");
    std::fs::write(&flake, text.replace("git+file:///path/to/cuwheel", &url)).unwrap();
    for args in [&["init", "-q"][..], &["add", "-A"]] {
        super::run_ok(Command::new("git").arg("-C").arg(dir.path()).args(args));
    }
    dir
}

/// Builds the flake's `wheels.<cell>` of each cell: each cell's result.
pub fn build_cells(cells: &[&str]) -> std::collections::BTreeMap<String, std::path::PathBuf> {
    let attrs: Vec<String> = cells
        .iter()
        .map(|c| installable(&format!("wheels.{c}")))
        .collect();
    let mut args = vec!["build", "--no-link", "--json"];
    args.extend(attrs.iter().map(String::as_str));
    let results: std::collections::BTreeMap<String, std::path::PathBuf> = json(&nix_ok(&args))
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let out = std::path::PathBuf::from(b["outputs"]["out"].as_str().unwrap());
            let name = out.file_name().unwrap().to_string_lossy().into_owned();
            let cell = name
                .split_once("-audit-")
                .expect("an audit node's output")
                .1;
            (cell.to_string(), out)
        })
        .collect();
    assert_eq!(results.len(), cells.len(), "{results:?}");
    results
}

/// The one wheel of a cell's result, which also holds the audit report.
pub fn wheel_of(result: &Path) -> std::path::PathBuf {
    let mut names: Vec<String> = std::fs::read_dir(result)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{}: {names:?}", result.display());
    assert_eq!(names[..2], ["audit.json", "audit.txt"], "{names:?}");
    result.join(&names[2])
}

/// Text no earlier run wrote, for an edit whose derivations must be new to
/// the store: what gets built, and how, then cannot pass vacuously (a
/// persistent store keeps an earlier run's outputs, or its build logs after
/// a collection).
pub fn nonce() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}-{}", now.as_nanos(), std::process::id())
}
