//! The newest Nix Debian carries (unstable's `nix-bin`), in a Debian root of
//! its own with its own store and build users, as root and as a user the
//! `nix-daemon` does not trust: `scripts/nix-versions.sh --quick sid`
//! (docs/guide/tests-and-ci.md#other-nix-versions).
//!
//! The host's Nix builds the demo's two CUDA 13.0 / torch 2.11 cells and
//! exports their inputs to a binary cache. In the root, from an empty
//! store: `cuwheel fetch --offline --substituter` fills it, root builds the
//! first cell and `cuwheel reproduce`s it (every derivation built again),
//! publishes it and exports a cache of its own; the untrusted user builds
//! the second Python through the daemon without rebuilding a kernel
//! object, is refused a cache of his own with the `nix.conf` lines printed,
//! and is refused a build once the daemon's sandbox is off. Both wheels
//! must be the host's, byte for byte.
//!
//! Needs root (debootstrap, mount namespaces), `debootstrap` (tests/run.sh
//! installs it), the registries apt reaches (for the root, the first time),
//! and what README command 1 built and fetched.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Command;

use crate::common::{cuwheel_bin, output_text};

/// The steps each mode must report as passed: a step that vanished from
/// the script fails this test as surely as one that failed.
const STEPS: &[(&str, &[&str])] = &[
    ("host", &["wheel-sha256"]),
    (
        "root",
        &[
            "fetch",
            "build",
            "wheel-sha256",
            "reproduce",
            "publish",
            "cache-key",
            "cache-export",
        ],
    ),
    (
        "untrusted",
        &[
            "second-python",
            "wheel-sha256",
            "kernels-reused",
            "publish",
            "cache-key",
            "cache-export",
            "cache-refused-untrusted",
        ],
    ),
    ("sandbox-off", &["build-refused"]),
];

#[test]
fn the_newest_nix_builds_the_hosts_wheels_byte_for_byte_as_root_and_through_an_untrusted_daemon_user()
 {
    let repo = crate::common::repo();
    let work = repo.join("target/nix-versions-quick");
    let out = Command::new("bash")
        .arg(repo.join("scripts/nix-versions.sh"))
        .args(["--quick", "--work"])
        .arg(&work)
        .arg("sid")
        .env("CUWHEEL", cuwheel_bin())
        .current_dir(repo)
        .output()
        .expect("bash runs");
    let text = output_text(&out);
    assert!(
        out.status.success(),
        "scripts/nix-versions.sh --quick sid failed ({}); the logs are in {}:\n{text}",
        out.status,
        work.display()
    );

    // The results, as the script recorded them: version, mode, step, ok|FAIL, detail.
    let results = fs::read_to_string(work.join("results.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = results.lines().map(|l| l.split('\t').collect()).collect();
    let passed: BTreeSet<(&str, &str)> = rows
        .iter()
        .filter(|r| r.len() >= 4 && r[3] == "ok")
        .map(|r| (r[1], r[2]))
        .collect();
    for (mode, steps) in STEPS {
        for step in *steps {
            assert!(
                passed.contains(&(*mode, *step)),
                "{mode}: the step {step} did not pass:\n{results}"
            );
        }
    }

    // One sha256 per wheel, whoever built it; the host's two wheels, one of
    // them built again under the newest Nix in each mode.
    let mut shas: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut versions = BTreeSet::new();
    for r in rows
        .iter()
        .filter(|r| r.len() >= 5 && r[2] == "wheel-sha256")
    {
        let (sha, wheel) = r[4].split_once(' ').expect("sha256 and wheel name");
        shas.entry(wheel).or_default().insert(sha);
        versions.insert(r[0]);
    }
    assert_eq!(shas.len(), 2, "two wheels, not:\n{results}");
    for (wheel, sha) in &shas {
        assert_eq!(
            sha.len(),
            1,
            "{wheel} differs by Nix version or mode:\n{results}"
        );
    }
    assert_eq!(
        versions.len(),
        2,
        "the host's Nix and the root's:\n{results}"
    );
}
