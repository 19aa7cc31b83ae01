//! A closed pipe is a quiet exit: every cuwheel command that prints runs
//! here with its output connected to a real pipe whose reader has already
//! exited (as `cuwheel audit … | head -1` leaves it once `head` is done),
//! and ends as Unix filters do — killed by SIGPIPE at its first write —
//! never with a panic. Commands that report only on stderr (lock, fetch,
//! and every error) are run with a closed stderr.
//!
//! `store show-drv` needs `nix-instantiate` (a cross-check tool here).

use crate::common;
use crate::common::demo;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use crate::common::{cuwheel_bin, run_ok};
use cuwheel::build::{Provenance, WheelRecipe};

const SIGPIPE: i32 = 13;

/// The writing end of a real pipe whose only reader has exited.
fn closed_pipe() -> Stdio {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("true runs");
    let writer = reader.stdin.take().expect("stdin is piped");
    assert!(reader.wait().unwrap().success());
    Stdio::from(writer)
}

#[derive(Clone, Copy, Debug)]
enum Closed {
    Stdout,
    Stderr,
}

/// Runs `cuwheel ARGS` with `closed` on a closed pipe and the other stream
/// captured: it must die of SIGPIPE, without a panic message.
fn assert_quiet(args: &[&str], closed: Closed) {
    let mut cmd = Command::new(cuwheel_bin());
    cmd.args(args).stdin(Stdio::null());
    match closed {
        Closed::Stdout => cmd.stdout(closed_pipe()).stderr(Stdio::piped()),
        Closed::Stderr => cmd.stdout(Stdio::piped()).stderr(closed_pipe()),
    };
    let out = cmd.output().expect("cuwheel runs");
    let other = match closed {
        Closed::Stdout => String::from_utf8_lossy(&out.stderr),
        Closed::Stderr => String::from_utf8_lossy(&out.stdout),
    };
    assert!(
        !other.contains("panicked"),
        "cuwheel {args:?} panicked on a closed {closed:?}:\n{other}"
    );
    assert_eq!(
        out.status.signal(),
        Some(SIGPIPE),
        "cuwheel {args:?} with a closed {closed:?} ended with {} instead of SIGPIPE:\n{other}",
        out.status
    );
}

#[test]
fn commands_that_print_end_quietly_on_a_closed_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = common::tiny_wheel(&tmp.path().join("plain"), false);
    let wheel = wheel.to_str().unwrap();
    let foreign = common::tiny_wheel(&tmp.path().join("foreign"), true);
    let demo = demo();
    let demo = demo.to_str().unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let cargo_toml = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");

    // A real .drv for `store show-drv`.
    let drv = run_ok(Command::new("nix-instantiate").args([
        "--expr",
        "derivation { name = \"cuwheel-closed-pipe\"; system = \"x86_64-linux\"; builder = \"/bin/sh\"; }",
    ]));
    let drv = String::from_utf8(drv.stdout).unwrap();
    let drv = drv.trim();

    // A recipe for `build-wheel`.
    let tree = tmp.path().join("tree");
    fs::create_dir_all(tree.join("tiny")).unwrap();
    fs::write(tree.join("tiny/__init__.py"), "").unwrap();
    // One shared object, so the build can compute the platform tag.
    run_ok(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-x", "c", "/dev/null", "-o"])
            .arg(tree.join("tiny/_empty.so")),
    );
    let recipe = WheelRecipe {
        metadata: cuwheel::wheel::CoreMetadata::new(
            cuwheel::wheel::ProjectName::new("tiny").unwrap(),
            cuwheel::wheel::Version::parse("1.0").unwrap(),
        ),
        tag: "py3-none".into(),
        platform: cuwheel::wheel::PlatformRule {
            least_compatible: "manylinux_2_17_x86_64".into(),
            most_compatible: "manylinux_2_28_x86_64".into(),
        },
        provenance: Provenance {
            sources: BTreeMap::new(),
            ..Provenance::default()
        },
        sbom: Default::default(),
    };
    let recipe_file = tmp.path().join("recipe.json");
    fs::write(&recipe_file, recipe.to_json()).unwrap();
    let index = tmp.path().join("index");
    let keys = tmp.path().join("keys");
    let build_out = tmp.path().join("built");

    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["audit", wheel],
        vec!["audit", "--json", wheel],
        vec!["store", "nar-hash", src],
        vec!["store", "fixed-path", cargo_toml],
        vec!["store", "show-drv", drv],
        vec!["plan", "--no-store", "--project", demo],
        vec!["plan", "--json", "--project", demo],
        vec!["publish", "--to", index.to_str().unwrap(), wheel],
        vec![
            "cache",
            "key",
            "closed-pipe-1",
            "--out",
            keys.to_str().unwrap(),
        ],
        vec![
            "reproduce",
            "--project",
            demo,
            "--flake",
            "/nonexistent",
            foreign.to_str().unwrap(),
        ],
        vec![
            "build-wheel",
            "--recipe",
            recipe_file.to_str().unwrap(),
            "--tree",
            tree.to_str().unwrap(),
            "--out",
            build_out.to_str().unwrap(),
        ],
    ];
    for args in &commands {
        assert_quiet(args, Closed::Stdout);
    }
}

#[test]
fn commands_that_report_on_stderr_end_quietly_on_a_closed_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().to_str().unwrap();
    for args in [
        vec!["lock", "--project", empty],
        vec!["fetch", "--project", empty],
        vec!["plan", "--project", empty],
        vec!["audit", "/nonexistent/x-1.0-py3-none-any.whl"],
        vec!["no-such-command"],
    ] {
        assert_quiet(&args, Closed::Stderr);
    }
}
