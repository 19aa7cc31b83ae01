//! `cuwheel publish` (real processes of the binary) under concurrency and
//! tampering: 100 pairs of publishes started together into one index lose no
//! wheel and leave an index that verifies; a `.generations` that is a
//! symlink out of the index is refused and what it points to is untouched;
//! a planted generation (at the name a publish will compute, or made
//! current) is refused and left alone; a published wheel changed on disk is
//! caught; entries publish did not make are left alone and reported; a bad
//! `Requires-Python` or `--base-url` is refused before anything is written.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{cuwheel_bin, demo_ext_wheel, run_ok, snapshot};
use sha2::{Digest, Sha256};

/// A pure-Python `demo-ext` wheel of `version` in `dir`.
fn wheel(dir: &Path, version: &str, requires_python: Option<&str>) -> PathBuf {
    demo_ext_wheel(
        dir,
        version,
        |m| m.requires_python = requires_python.map(str::to_string),
        |_| {},
    )
}

fn publish(dir: &Path, wheels: &[&Path], extra: &[&str]) -> Output {
    Command::new(cuwheel_bin())
        .arg("publish")
        .arg("--to")
        .arg(dir)
        .args(extra)
        .args(wheels)
        .output()
        .unwrap()
}

fn refused(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "publish should be refused: {stderr}"
    );
    stderr
}

/// The files the combined index lists for demo-ext, each checked to exist
/// with the sha256 its link gives.
fn listed(index: &Path) -> BTreeSet<String> {
    let page: serde_json::Value =
        serde_json::from_slice(&fs::read(index.join("demo-ext/index.json")).unwrap()).unwrap();
    let mut files = BTreeSet::new();
    for file in page["files"].as_array().unwrap() {
        let name = file["filename"].as_str().unwrap();
        let bytes = fs::read(index.join(name)).unwrap();
        let sha: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(file["hashes"]["sha256"], sha.as_str(), "{name}");
        files.insert(name.to_string());
    }
    files
}

/// An index in `tmp` with demo-ext 0.1.0 published, and a 0.2.0 wheel to publish next.
fn index_with_one_wheel(tmp: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let index = tmp.join("index");
    let a = wheel(&tmp.join("w"), "0.1.0", None);
    let b = wheel(&tmp.join("w"), "0.2.0", None);
    run_ok(
        Command::new(cuwheel_bin())
            .args(["publish", "--to"])
            .arg(&index)
            .arg(&a),
    );
    (index, a, b)
}

fn generation(index: &Path) -> PathBuf {
    index.join(fs::read_link(index.join(".current")).unwrap())
}

#[test]
fn concurrent_publish_pairs_lose_no_wheel() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let mut expected = BTreeSet::new();
    let mut wheels = Vec::new();
    for pair in 0..100 {
        let pair_wheels: Vec<PathBuf> = (0..2)
            .map(|k| {
                wheel(
                    &tmp.path().join("w"),
                    &format!("0.{pair}.{k}"),
                    Some(">=3.9"),
                )
            })
            .collect();
        for w in &pair_wheels {
            expected.insert(w.file_name().unwrap().to_string_lossy().into_owned());
        }
        wheels.push(pair_wheels);
    }
    for (pair, pair_wheels) in wheels.iter().enumerate() {
        // Both started before either is waited for, so they overlap.
        let started: Vec<std::process::Child> = pair_wheels
            .iter()
            .map(|w| {
                Command::new(cuwheel_bin())
                    .arg("publish")
                    .arg("--to")
                    .arg(&index)
                    .arg(w)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in started {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "pair {pair}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert_eq!(
        listed(&index),
        expected,
        "every wheel of every publish is listed"
    );
    assert_eq!(
        fs::read_dir(index.join(".generations")).unwrap().count(),
        1,
        "one generation is left"
    );
    // The index verifies: publishing one of its wheels again changes nothing.
    let out = publish(&index, &[&wheels[0][0]], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(unchanged)"));
}

#[test]
fn a_symlinked_generations_dir_is_refused_and_its_target_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let (index, _, b) = index_with_one_wheel(tmp.path());

    // The generations moved outside, a link left in their place, and folders
    // of the user's beside them there.
    let outside = tmp.path().join("outside");
    fs::rename(index.join(".generations"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, index.join(".generations")).unwrap();
    fs::create_dir_all(outside.join("0123456789abcdef0123456789abcdef")).unwrap();
    fs::write(
        outside.join("0123456789abcdef0123456789abcdef/keep.txt"),
        "mine",
    )
    .unwrap();
    fs::create_dir_all(outside.join("photos")).unwrap();
    fs::write(outside.join("photos/a.jpg"), "jpeg").unwrap();
    let before_outside = snapshot(&outside);
    let before_index = snapshot(&index);

    let err = refused(&publish(&index, &[&b], &[]));
    assert!(
        err.contains(".generations is a symlink") && err.contains("never follows"),
        "{err}"
    );
    assert_eq!(
        snapshot(&outside),
        before_outside,
        "the folder outside is untouched"
    );
    assert_eq!(snapshot(&index), before_index, "nothing was written");
}

#[test]
fn planted_generations_are_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (index, _, b) = index_with_one_wheel(tmp.path());

    // Learn the name publishing b will compute, in a copy of the index.
    let scratch = tmp.path().join("scratch");
    run_ok(Command::new("cp").arg("-a").arg(&index).arg(&scratch));
    run_ok(
        Command::new(cuwheel_bin())
            .args(["publish", "--to"])
            .arg(&scratch)
            .arg(&b),
    );
    let next = fs::read_link(scratch.join(".current")).unwrap();

    // Planted at that name with other pages: refused, not reused, not removed.
    let planted = index.join(&next);
    fs::create_dir_all(&planted).unwrap();
    fs::write(
        planted.join("index.html"),
        "<a href=\"https://evil.test/x.whl\">x</a>",
    )
    .unwrap();
    let before = snapshot(&index);
    let err = refused(&publish(&index, &[&b], &[]));
    assert!(err.contains("was not written by cuwheel publish"), "{err}");
    assert_eq!(snapshot(&index), before);
    fs::remove_dir_all(&planted).unwrap();

    // A generation planted and made current: it does not verify.
    let current = generation(&index);
    let forged = index.join(".generations/ffffffffffffffffffffffffffffffff");
    run_ok(Command::new("cp").arg("-a").arg(&current).arg(&forged));
    let page = forged.join("demo-ext/index.html");
    let text = fs::read_to_string(&page).unwrap();
    fs::write(
        &page,
        text.replace(
            "</body>",
            "<a href=\"https://evil.test/x.whl\">x</a></body>",
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        ".generations/ffffffffffffffffffffffffffffffff",
        index.join(".current.forged"),
    )
    .unwrap();
    fs::rename(index.join(".current.forged"), index.join(".current")).unwrap();
    let before = snapshot(&index);
    let err = refused(&publish(&index, &[&b], &[]));
    assert!(
        err.contains("does not verify") && err.contains("hash to"),
        "{err}"
    );
    assert_eq!(snapshot(&index), before);
}

#[test]
fn a_changed_wheel_and_foreign_entries_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let (index, a, b) = index_with_one_wheel(tmp.path());

    // Entries publish did not make are left alone, and said to be.
    fs::write(index.join(".generations/README"), "notes").unwrap();
    fs::create_dir(index.join(".generations/mine")).unwrap();
    let out = publish(&index, &[&b], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("left alone") && stderr.contains("mine"),
        "{stderr}"
    );
    assert!(index.join(".generations/README").is_file());
    assert!(index.join(".generations/mine").is_dir());

    // A published wheel changed on disk: the index no longer verifies.
    let published = index.join(a.file_name().unwrap());
    let mut bytes = fs::read(&published).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&published, bytes).unwrap();
    let c = wheel(&tmp.path().join("w"), "0.3.0", None);
    let err = refused(&publish(&index, &[&c], &[]));
    assert!(
        err.contains("does not verify") && err.contains("sha256"),
        "{err}"
    );
}

#[test]
fn bad_requires_python_and_base_url_are_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let bad = wheel(
        &tmp.path().join("w"),
        "0.1.0",
        Some("<3.14,>=3.9\"><script>"),
    );
    let err = refused(&publish(&index, &[&bad], &[]));
    assert!(
        err.contains("Requires-Python") && err.contains("`<3.14,>=3.9\"><script>`"),
        "{err}"
    );
    assert!(!index.exists(), "nothing was written");

    let good = wheel(&tmp.path().join("w"), "0.2.0", Some(">=3.9, <3.14"));
    for url in ["javascript:alert(1)", "https://h/?token=x", "ftp://h/whl"] {
        let err = refused(&publish(&index, &[&good], &["--base-url", url]));
        assert!(
            err.contains(&format!("`{}`", cuwheel::url::redact(url))),
            "{err}"
        );
        assert!(!index.exists(), "nothing was written");
    }
    let out = publish(
        &index,
        &[&good],
        &["--base-url", "https://example.test/whl"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Links written with a base URL verify on the next publish.
    let again = publish(
        &index,
        &[&good],
        &["--base-url", "https://example.test/whl"],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
