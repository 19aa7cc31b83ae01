//! Broken wheels, built here with the `zip` crate directly (not with our
//! writer), must give a typed error or a verification problem whose message
//! names the file and the problem, and never a panic.
//!
//! RECORD rows are computed in this file with `sha2` and `base64`, so the
//! reader is checked against an independent computation.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cuwheel_wheel::{ProblemKind, WheelArchive, WheelError, WheelProblem};
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

const WHEEL_NAME: &str = "bad-1.0+cu130-py3-none-any.whl";
const DIST_INFO: &str = "bad-1.0+cu130.dist-info";

/// A zip of `entries`, in order, written by the zip crate.
fn zip_of(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn record_row(path: &str, data: &[u8]) -> String {
    let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(data));
    format!("{path},sha256={digest},{}\n", data.len())
}

/// A consistent wheel's members, with METADATA's version and extra members
/// chosen by the caller, and RECORD listing everything correctly.
fn members(metadata_version: &str, extra: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = vec![("bad/__init__.py".into(), b"x = 1\n".to_vec())];
    entries.extend(extra.iter().map(|(n, d)| (n.to_string(), d.to_vec())));
    entries.push((
        format!("{DIST_INFO}/METADATA"),
        format!("Metadata-Version: 2.1\nName: bad\nVersion: {metadata_version}\n").into_bytes(),
    ));
    entries.push((
        format!("{DIST_INFO}/WHEEL"),
        b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_vec(),
    ));
    let mut record: String = entries.iter().map(|(n, d)| record_row(n, d)).collect();
    record.push_str(&format!("{DIST_INFO}/RECORD,,\n"));
    entries.push((format!("{DIST_INFO}/RECORD"), record.into_bytes()));
    entries
}

fn replace_member(entries: &mut [(String, Vec<u8>)], name: &str, data: Vec<u8>) {
    let entry = entries
        .iter_mut()
        .find(|(n, _)| n == name)
        .expect("member exists");
    entry.1 = data;
}

fn record_text(entries: &[(String, Vec<u8>)]) -> String {
    let record = format!("{DIST_INFO}/RECORD");
    String::from_utf8(
        entries
            .iter()
            .find(|(n, _)| *n == record)
            .unwrap()
            .1
            .clone(),
    )
    .unwrap()
}

/// Writes `bytes` as `name` in a fresh temporary directory.
fn write_wheel(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn open_err(path: &Path) -> WheelError {
    match WheelArchive::open(path) {
        Ok(_) => panic!("{} opened, but it is broken", path.display()),
        Err(err) => err,
    }
}

fn assert_mentions(message: &str, words: &[&str]) {
    for word in words {
        assert!(message.contains(word), "expected {word:?} in: {message}");
    }
}

/// Opens a wheel that must open, and returns what verify finds.
fn problems(path: &Path) -> Vec<WheelProblem> {
    WheelArchive::open(path)
        .unwrap_or_else(|e| panic!("{e}"))
        .verify()
}

#[test]
fn the_consistent_fixture_has_no_problems() {
    // Guards every test below: each breaks exactly one thing of this wheel.
    let dir = tempfile::tempdir().unwrap();
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&members("1.0+cu130", &[])));
    assert_eq!(problems(&path), vec![]);
}

#[test]
fn truncated_zip_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = zip_of(&members("1.0+cu130", &[]));
    for keep in [0, 10, bytes.len() / 2, bytes.len() - 10] {
        let path = write_wheel(&dir, WHEEL_NAME, &bytes[..keep]);
        let err = open_err(&path);
        assert!(matches!(err, WheelError::Zip { .. }), "{err:?}");
        assert_mentions(
            &err.to_string(),
            &[
                &path.display().to_string(),
                "not a readable zip archive",
                "truncated or corrupt",
            ],
        );
    }
}

#[test]
fn corrupt_member_data_is_an_error_naming_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let payload = vec![b'a'; 4000];
    let mut bytes = zip_of(&members("1.0+cu130", &[("bad/big.txt", &payload)]));
    // Flip a byte inside big.txt's compressed data, found by its header.
    let header = bytes
        .windows(b"bad/big.txt".len())
        .position(|w| w == b"bad/big.txt")
        .unwrap();
    bytes[header + b"bad/big.txt".len() + 3] ^= 0xff;
    let path = write_wheel(&dir, WHEEL_NAME, &bytes);
    let err = open_err(&path);
    assert!(matches!(err, WheelError::MemberData { .. }), "{err:?}");
    assert_mentions(
        &err.to_string(),
        &[&path.display().to_string(), "`bad/big.txt`", "corrupt"],
    );
}

#[test]
fn wrong_hash_and_size_in_record_are_problems() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = members("1.0+cu130", &[]);
    let record = record_text(&entries).replace(
        &record_row("bad/__init__.py", b"x = 1\n"),
        &record_row("bad/__init__.py", b"x = 2\n!"),
    );
    replace_member(
        &mut entries,
        &format!("{DIST_INFO}/RECORD"),
        record.into_bytes(),
    );
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let found = problems(&path);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        matches!(&found[0].kind, ProblemKind::HashMismatch { member, .. } if member == "bad/__init__.py")
    );
    assert!(matches!(
        &found[1].kind,
        ProblemKind::SizeMismatch {
            recorded: 7,
            actual: 6,
            ..
        }
    ));
    let actual = URL_SAFE_NO_PAD.encode(Sha256::digest(b"x = 1\n"));
    assert_mentions(
        &found[0].to_string(),
        &[
            &path.display().to_string(),
            "`bad/__init__.py`",
            &actual,
            "RECORD says",
        ],
    );
    assert_mentions(&found[1].to_string(), &["is 6 bytes but RECORD says 7"]);
}

#[test]
fn missing_and_extra_record_rows_are_problems() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = members("1.0+cu130", &[]);
    let record = record_text(&entries)
        .replace(
            &record_row("bad/__init__.py", b"x = 1\n"),
            &record_row("bad/gone.py", b""),
        )
        .replace(&format!("{DIST_INFO}/RECORD,,\n"), "");
    replace_member(
        &mut entries,
        &format!("{DIST_INFO}/RECORD"),
        record.into_bytes(),
    );
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let messages: Vec<String> = problems(&path).iter().map(|p| p.to_string()).collect();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_mentions(
        &messages[0],
        &[
            "RECORD does not list itself",
            &format!("`{DIST_INFO}/RECORD,,`"),
        ],
    );
    assert_mentions(
        &messages[1],
        &["member `bad/__init__.py` is not listed in RECORD"],
    );
    assert_mentions(
        &messages[2],
        &["RECORD lists `bad/gone.py`, which is not in the archive"],
    );
    for message in &messages {
        assert!(
            message.starts_with(&path.display().to_string()),
            "{message}"
        );
    }
}

#[test]
fn record_with_a_hex_digest_is_a_problem() {
    // The uv_build mistake (hex instead of urlsafe base64) must not pass.
    let dir = tempfile::tempdir().unwrap();
    let mut entries = members("1.0+cu130", &[]);
    let hex: String = Sha256::digest(b"x = 1\n")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let record = record_text(&entries).replace(
        &record_row("bad/__init__.py", b"x = 1\n"),
        &format!("bad/__init__.py,sha256={hex},6\n"),
    );
    replace_member(
        &mut entries,
        &format!("{DIST_INFO}/RECORD"),
        record.into_bytes(),
    );
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let found = problems(&path);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_mentions(&found[0].to_string(), &["cannot be checked", "is it hex?"]);
}

#[test]
fn unsafe_member_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (member, words) in [
        ("../evil", "`..` component"),
        ("bad/../../evil", "`..` component"),
        ("/abs/evil", "absolute"),
        ("bad\\evil", "`\\`"),
    ] {
        let bytes = zip_of(&members("1.0+cu130", &[(member, b"boom")]));
        let path = write_wheel(&dir, WHEEL_NAME, &bytes);
        let err = open_err(&path);
        assert!(
            matches!(err, WheelError::UnsafeMemberPath { .. }),
            "{err:?}"
        );
        assert_mentions(
            &err.to_string(),
            &[
                &path.display().to_string(),
                &format!("`{member}` is unsafe"),
                words,
            ],
        );
    }
}

#[test]
fn duplicate_members_are_refused() {
    // The zip crate will not write a duplicate name, so write two names of
    // equal length and rename the second in its local and central headers.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = zip_of(&members(
        "1.0+cu130",
        &[("bad/dup_a.py", b"1"), ("bad/dup_b.py", b"2")],
    ));
    let mut renamed = 0;
    for at in 0..bytes.len() - b"bad/dup_b.py".len() {
        if &bytes[at..at + 12] == b"bad/dup_b.py" {
            bytes[at..at + 12].copy_from_slice(b"bad/dup_a.py");
            renamed += 1;
        }
    }
    assert_eq!(
        renamed, 2,
        "the local and the central header (RECORD is compressed)"
    );
    let path = write_wheel(&dir, WHEEL_NAME, &bytes);
    let err = open_err(&path);
    assert!(
        matches!(err, WheelError::DuplicateMember { count: 2, .. }),
        "{err:?}"
    );
    assert_mentions(
        &err.to_string(),
        &[
            &path.display().to_string(),
            "`bad/dup_a.py` appears 2 times",
        ],
    );
}

#[test]
fn version_mismatch_between_file_name_and_metadata_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    // METADATA lacks the local label the file name has: the uv failure mode.
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&members("1.0", &[])));
    let found = problems(&path);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].kind,
        ProblemKind::VersionMismatch {
            filename: "1.0+cu130".into(),
            metadata: "1.0".into()
        }
    );
    assert_mentions(
        &found[0].to_string(),
        &[
            &path.display().to_string(),
            "version `1.0+cu130`",
            "Version is `1.0`",
            "local label",
        ],
    );
}

#[test]
fn file_name_that_disagrees_with_the_contents_gives_each_problem() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = zip_of(&members("1.0+cu130", &[]));
    let path = write_wheel(
        &dir,
        "other-1.0+cu130-7-cp311-cp311-linux_x86_64.whl",
        &bytes,
    );
    let messages: Vec<String> = problems(&path).iter().map(|p| p.to_string()).collect();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_mentions(&messages[0], &["project `other`", "Name is `bad`"]);
    assert_mentions(
        &messages[1],
        &[
            &format!("directory is `{DIST_INFO}`"),
            "`other-1.0+cu130.dist-info`",
        ],
    );
    assert_mentions(
        &messages[2],
        &[
            "missing from WHEEL: cp311-cp311-linux_x86_64",
            "not the file name: py3-none-any",
        ],
    );
    assert_mentions(&messages[3], &["build tag is `7`", "Build is absent"]);
}

#[test]
fn wheel_version_2_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = members("1.0+cu130", &[]);
    let wheel = b"Wheel-Version: 2.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_vec();
    let record = record_text(&entries).replace(
        &record_row(&format!("{DIST_INFO}/WHEEL"), &entries[2].1),
        &record_row(&format!("{DIST_INFO}/WHEEL"), &wheel),
    );
    replace_member(&mut entries, &format!("{DIST_INFO}/WHEEL"), wheel);
    replace_member(
        &mut entries,
        &format!("{DIST_INFO}/RECORD"),
        record.into_bytes(),
    );
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let found = problems(&path);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_mentions(
        &found[0].to_string(),
        &["Wheel-Version is `2.0`", "only 1.x"],
    );
}

#[test]
fn missing_dist_info_and_metadata_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_wheel(
        &dir,
        WHEEL_NAME,
        &zip_of(&[("bad/__init__.py".into(), vec![])]),
    );
    let err = open_err(&path);
    assert!(matches!(err, WheelError::MissingDistInfo { .. }), "{err:?}");
    assert_mentions(
        &err.to_string(),
        &[
            &path.display().to_string(),
            "no `.dist-info` directory",
            DIST_INFO,
        ],
    );

    let entries: Vec<_> = members("1.0+cu130", &[])
        .into_iter()
        .filter(|(n, _)| !n.ends_with("/METADATA"))
        .collect();
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let err = open_err(&path);
    assert_mentions(
        &err.to_string(),
        &[
            &path.display().to_string(),
            &format!("`{DIST_INFO}/METADATA` is missing"),
        ],
    );

    let mut entries = members("1.0+cu130", &[]);
    replace_member(
        &mut entries,
        &format!("{DIST_INFO}/METADATA"),
        b"Name: bad\n".to_vec(),
    );
    let path = write_wheel(&dir, WHEEL_NAME, &zip_of(&entries));
    let err = open_err(&path);
    assert_mentions(
        &err.to_string(),
        &[
            &path.display().to_string(),
            "METADATA: the required field `Metadata-Version` is missing",
        ],
    );
}

#[test]
fn bad_file_names_and_missing_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = zip_of(&members("1.0+cu130", &[]));
    let path = write_wheel(&dir, "bad-1.0.zip", &bytes);
    assert_mentions(
        &open_err(&path).to_string(),
        &[
            &path.display().to_string(),
            "does not end in `.whl`",
            "must be named",
        ],
    );
    let missing = dir.path().join("absent-1.0-py3-none-any.whl");
    let err = open_err(&missing);
    assert!(matches!(err, WheelError::Read { .. }), "{err:?}");
    assert_mentions(
        &err.to_string(),
        &["cannot read", &missing.display().to_string()],
    );
}
