//! `cuwheel publish` (real processes of the binary) racing into index
//! directories that do not exist yet: 100 pairs, and 10 rounds of 8 at once,
//! each into its own new directory, all land (every wheel listed, none
//! refused), since the directory is judged under its lock; a refused first
//! publish leaves no directory, and racing with good ones loses none of
//! them (their waits survive its removing the lock file); and a publish
//! that finds the lock held says so once on stderr, naming the lock file and
//! the process holding it, and goes on when the lock is released.

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::cuwheel_bin;
use cuwheel::wheel::{CoreMetadata, ProjectName, TagSet, Version, WheelBuilder, ZipTimestamp};

/// A pure-Python `demo-ext` wheel of `version` in `dir`.
fn wheel(dir: &Path, version: &str) -> PathBuf {
    project_wheel(dir, "demo-ext", version)
}

/// A pure-Python wheel of `project` and `version` in `dir`.
fn project_wheel(dir: &Path, project: &str, version: &str) -> PathBuf {
    let metadata = CoreMetadata::new(
        ProjectName::new(project).unwrap(),
        Version::parse(version).unwrap(),
    );
    let mut builder = WheelBuilder::new(metadata, TagSet::parse("py3-none-any").unwrap(), None);
    builder
        .add_member(
            &format!("{}/__init__.py", project.replace('-', "_")),
            format!("VERSION = {version:?}\n").into_bytes(),
            false,
        )
        .unwrap();
    fs::create_dir_all(dir).unwrap();
    builder.write_into(dir, ZipTimestamp::EARLIEST).unwrap()
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn spawn_publish(index: &Path, wheel: &Path) -> Child {
    Command::new(cuwheel_bin())
        .arg("publish")
        .arg("--to")
        .arg(index)
        .arg(wheel)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The files the combined index of `index` lists for demo-ext.
fn listed(index: &Path) -> BTreeSet<String> {
    let page: serde_json::Value =
        serde_json::from_slice(&fs::read(index.join("demo-ext/index.json")).unwrap()).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            let name = file["filename"].as_str().unwrap().to_string();
            assert!(index.join(&name).is_file(), "{name} is listed but missing");
            name
        })
        .collect()
}

/// Starts one publish per wheel into `index` (a directory that does not
/// exist yet), all before any is waited for; each must succeed and every
/// wheel must be listed.
fn race_into_new_dir(index: &Path, wheels: &[PathBuf], what: &str) {
    assert!(!index.exists());
    let started: Vec<Child> = wheels.iter().map(|w| spawn_publish(index, w)).collect();
    for (child, wheel) in started.into_iter().zip(wheels) {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: publish of {} was refused:\n{stderr}",
            wheel.display()
        );
        assert!(
            stdout.contains(&format!("published {}", file_name(wheel))),
            "{what}: {stdout}"
        );
        assert!(!stderr.contains("is not empty"), "{what}: {stderr}");
    }
    let expected: BTreeSet<String> = wheels.iter().map(|w| file_name(w)).collect();
    assert_eq!(listed(index), expected, "{what}: every wheel is listed");
}

#[test]
fn concurrent_first_publishes_into_new_directories_all_land() {
    let tmp = tempfile::tempdir().unwrap();
    let wheels: Vec<PathBuf> = (0..8)
        .map(|k| wheel(&tmp.path().join("w"), &format!("0.1.{k}")))
        .collect();
    for pair in 0..100 {
        let index = tmp.path().join(format!("pair-{pair}/index"));
        race_into_new_dir(&index, &wheels[..2], &format!("pair {pair}"));
    }
    for round in 0..10 {
        let index = tmp.path().join(format!("round-{round}"));
        race_into_new_dir(&index, &wheels, &format!("round {round} of 8"));
    }
}

#[test]
fn a_refused_first_publish_leaves_no_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("new");
    let missing = tmp.path().join("missing-0.1-py3-none-any.whl");
    let out = Command::new(cuwheel_bin())
        .arg("publish")
        .arg("--to")
        .arg(&index)
        .arg(&missing)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot be read"), "{stderr}");
    assert!(!index.exists());

    // Refused under the lock (after it created the directory): removed too.
    let clash = project_wheel(&tmp.path().join("w"), "cu130", "0.1.0+pt211cu130");
    let out = spawn_publish(&index, &clash).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is also the name of a variant index"),
        "{stderr}"
    );
    assert!(!index.exists());
}

#[test]
fn refused_first_publishes_racing_with_good_ones_lose_none_of_the_good() {
    // A project named like its own variant index (cu130) is refused under
    // the lock; refused first, it removes the directory it created, while
    // the others wait on its lock file.
    let tmp = tempfile::tempdir().unwrap();
    let good: Vec<PathBuf> = (0..4)
        .map(|k| wheel(&tmp.path().join("w"), &format!("0.1.{k}+pt211cu130")))
        .collect();
    let bad: Vec<PathBuf> = (0..4)
        .map(|k| {
            project_wheel(
                &tmp.path().join("w"),
                "cu130",
                &format!("0.1.{k}+pt211cu130"),
            )
        })
        .collect();
    for round in 0..10 {
        let index = tmp.path().join(format!("round-{round}"));
        // Refused ones first, so they often take the lock first.
        let started: Vec<(Child, bool)> = bad
            .iter()
            .map(|w| (spawn_publish(&index, w), false))
            .chain(good.iter().map(|w| (spawn_publish(&index, w), true)))
            .collect();
        for (child, ok) in started {
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if ok {
                assert_eq!(out.status.code(), Some(0), "round {round}: {stderr}");
            } else {
                assert_eq!(out.status.code(), Some(1), "round {round}: {stderr}");
                assert!(
                    stderr.contains("the project name `cu130` is also the name of a variant index"),
                    "round {round}: {stderr}"
                );
            }
        }
        let expected: BTreeSet<String> = good.iter().map(|w| file_name(w)).collect();
        assert_eq!(listed(&index), expected, "round {round}");
    }
}

/// An exclusive flock on `path`, held until the file is dropped.
fn hold_lock(path: &Path) -> fs::File {
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    // SAFETY: flock on a descriptor `file` keeps open.
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
    file
}

#[test]
fn a_publish_waiting_for_the_lock_says_so_and_goes_on_when_it_is_released() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let first = wheel(&tmp.path().join("w"), "0.1.0");
    let second = wheel(&tmp.path().join("w"), "0.2.0");
    let out = spawn_publish(&index, &first).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    let lock_file = index.join(".lock");
    let held = hold_lock(&lock_file);
    let mut child = spawn_publish(&index, &second);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(
        line.starts_with(&format!(
            "publish: waiting for the lock {}, held by process {} (`",
            lock_file.display(),
            std::process::id()
        )),
        "{line}"
    );
    assert!(
        line.contains("another publish into this index is running; this one goes on once it ends"),
        "{line}"
    );
    // It cannot have finished: the lock is still held here.
    assert!(child.try_wait().unwrap().is_none());
    drop(held);

    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(!rest.contains("waiting"), "said once: {rest}");
    assert!(
        stdout.contains(&format!("published {}", file_name(&second))),
        "{stdout}"
    );
    assert_eq!(
        listed(&index),
        BTreeSet::from([file_name(&first), file_name(&second)])
    );
}
