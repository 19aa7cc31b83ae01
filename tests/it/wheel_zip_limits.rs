//! The streaming wheel reader's limits, on archives built byte by byte here
//! (so every field can lie): zip bombs by ratio and by a lying size, a local
//! header naming another file, overlapping members, symlink, FIFO and device
//! members, encryption, other compression methods, a bad CRC, a name that is
//! not UTF-8; and input paths that are not files (a FIFO named like a wheel,
//! `/dev/zero`, a directory), which `cuwheel audit` must refuse without
//! reading. A bounded property run throws random fields at the reader.

use crate::audit_support;
use crate::common;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuwheel::wheel::{RecordEntry, WheelError, WheelFile, write_record};
use proptest::prelude::*;

/// One member as written: every field the reader checks can be set.
#[derive(Clone, Debug)]
struct Raw {
    name: Vec<u8>,
    /// The local header's name when it differs from the central one.
    local_name: Option<Vec<u8>>,
    /// The stored (compressed) bytes.
    stored: Vec<u8>,
    method: u16,
    crc: u32,
    size: u32,
    flags: u16,
    /// The Unix mode in the external attributes.
    mode: u32,
    /// Extra bytes claimed by the central directory's compressed size.
    claim_more: u32,
}

impl Raw {
    fn deflated(name: &str, data: &[u8]) -> Raw {
        Raw {
            name: name.as_bytes().to_vec(),
            local_name: None,
            stored: miniz_oxide::deflate::compress_to_vec(data, 6),
            method: 8,
            crc: crc32fast::hash(data),
            size: data.len() as u32,
            flags: 0x0800,
            mode: 0o100644,
            claim_more: 0,
        }
    }
}

/// The bytes of a zip archive holding `members`.
fn zip_bytes(members: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for m in members {
        let offset = out.len() as u32;
        let local_name = m.local_name.as_ref().unwrap_or(&m.name);
        let csize = m.stored.len() as u32 + m.claim_more;
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(20u16.to_le_bytes());
        out.extend(m.flags.to_le_bytes());
        out.extend(m.method.to_le_bytes());
        out.extend([0u8; 4]); // time, date
        out.extend(m.crc.to_le_bytes());
        out.extend(csize.to_le_bytes());
        out.extend(m.size.to_le_bytes());
        out.extend((local_name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(local_name);
        out.extend(&m.stored);

        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend((0x0300u16 | 20).to_le_bytes()); // made by Unix
        central.extend(20u16.to_le_bytes());
        central.extend(m.flags.to_le_bytes());
        central.extend(m.method.to_le_bytes());
        central.extend([0u8; 4]);
        central.extend(m.crc.to_le_bytes());
        central.extend(csize.to_le_bytes());
        central.extend(m.size.to_le_bytes());
        central.extend((m.name.len() as u16).to_le_bytes());
        central.extend([0u8; 8]); // extra, comment, disk, internal attributes
        central.extend((m.mode << 16).to_le_bytes());
        central.extend(offset.to_le_bytes());
        central.extend(&m.name);
    }
    let cd_offset = out.len() as u32;
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((members.len() as u16).to_le_bytes());
    out.extend((members.len() as u16).to_le_bytes());
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(cd_offset.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

const WHEEL: &str = "demo-0.1-py3-none-any.whl";
const DIST_INFO: &str = "demo-0.1.dist-info";

/// A consistent wheel around `payload` (whose RECORD rows are written from
/// the bytes each member claims to hold, `claimed`).
fn wheel_with(payload: Vec<Raw>, claimed: &[(&str, &[u8])]) -> Vec<u8> {
    let metadata = b"Metadata-Version: 2.1\nName: demo\nVersion: 0.1\n".to_vec();
    let wheel =
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_vec();
    let mut rows: Vec<RecordEntry> = claimed
        .iter()
        .map(|(name, data)| RecordEntry::for_data(name, data))
        .collect();
    rows.push(RecordEntry::for_data(
        &format!("{DIST_INFO}/METADATA"),
        &metadata,
    ));
    rows.push(RecordEntry::for_data(&format!("{DIST_INFO}/WHEEL"), &wheel));
    rows.push(RecordEntry::unhashed(&format!("{DIST_INFO}/RECORD")));
    let record = write_record(&rows).into_bytes();
    let mut members = payload;
    members.push(Raw::deflated(&format!("{DIST_INFO}/METADATA"), &metadata));
    members.push(Raw::deflated(&format!("{DIST_INFO}/WHEEL"), &wheel));
    members.push(Raw::deflated(&format!("{DIST_INFO}/RECORD"), &record));
    zip_bytes(&members)
}

fn write(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join(WHEEL);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Opens and streams every member, as the audit does.
fn read_all(path: &Path) -> Result<(), WheelError> {
    let wheel = WheelFile::open(path)?;
    for member in wheel.members() {
        let mut sink = Vec::new();
        wheel
            .stream(member)
            .read_to_end(&mut sink)
            .map_err(|e| wheel.stream_error(e))?;
        assert_eq!(sink.len() as u64, member.size);
    }
    Ok(())
}

fn refused(dir: &Path, bytes: &[u8], words: &[&str]) {
    let path = write(dir, bytes);
    let err = read_all(&path)
        .expect_err("the reader must refuse it")
        .to_string();
    for word in words {
        assert!(err.contains(word), "`{word}` not in: {err}");
    }
    // The CLI says the same and exits 1; with --json, as a JSON error object.
    let run = audit_support::cuwheel_audit([path.as_os_str()]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(words[0]), "{}", run.stderr);
    let run = audit_support::cuwheel_audit(["--json".as_ref(), path.as_os_str()]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        json[0]["error"].as_str().unwrap().contains(words[0]),
        "{}",
        run.stdout
    );
}

#[test]
fn a_consistent_raw_wheel_reads() {
    let dir = tempfile::tempdir().unwrap();
    let data = b"x = 1\n";
    let bytes = wheel_with(
        vec![Raw::deflated("demo/__init__.py", data)],
        &[("demo/__init__.py", data)],
    );
    read_all(&write(dir.path(), &bytes)).unwrap();
    let run = audit_support::cuwheel_audit([dir.path().join(WHEEL)]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn zip_bombs_are_refused_before_or_while_inflating() {
    let dir = tempfile::tempdir().unwrap();
    // 2 GiB declared from a few kilobytes: refused on the declared ratio.
    let mut bomb = Raw::deflated("demo/zeros.bin", &vec![0u8; 1 << 20]);
    bomb.size = u32::MAX - 1;
    let bytes = wheel_with(vec![bomb], &[]);
    refused(dir.path(), &bytes, &["demo/zeros.bin", "zip bomb", "100:1"]);

    // A member that lies about its size: 64 MiB of zeros declared as 1 MiB
    // (a ratio the reader accepts) stops at the declared size.
    let zeros = vec![0u8; 64 << 20];
    let mut liar = Raw::deflated("demo/liar.bin", &zeros);
    liar.size = 1 << 20;
    let bytes = wheel_with(vec![liar], &[("demo/liar.bin", &zeros[..1 << 20])]);
    refused(
        dir.path(),
        &bytes,
        &["demo/liar.bin", "declared and actual sizes must agree"],
    );

    // Declared larger than the data holds.
    let mut short = Raw::deflated("demo/short.bin", b"abc");
    short.size = 10;
    let bytes = wheel_with(vec![short], &[]);
    refused(
        dir.path(),
        &bytes,
        &["demo/short.bin", "inflates to 3 bytes"],
    );
}

#[test]
fn a_local_header_naming_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut member = Raw::deflated("demo/a.py", b"a = 1\n");
    member.local_name = Some(b"../a.py".to_vec());
    let bytes = wheel_with(vec![member], &[("demo/a.py", b"a = 1\n")]);
    refused(
        dir.path(),
        &bytes,
        &[
            "its local header names it `../a.py`",
            "demo/a.py",
            "pip refuses",
        ],
    );
}

#[test]
fn overlapping_members_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Raw::deflated("demo/a.py", b"a = 1\n");
    first.claim_more = 40; // its data now runs into the next member's header
    let bytes = wheel_with(vec![first, Raw::deflated("demo/b.py", b"b = 2\n")], &[]);
    refused(dir.path(), &bytes, &["overlaps", "demo/a.py"]);
}

#[test]
fn symlink_fifo_and_device_members_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, kind) in [
        (0o120777, "a symbolic link"),
        (0o010644, "a FIFO"),
        (0o020644, "a character device"),
        (0o060644, "a block device"),
    ] {
        let mut member = Raw::deflated("demo/link", b"/etc/passwd");
        member.mode = mode;
        let bytes = wheel_with(vec![member], &[("demo/link", b"/etc/passwd")]);
        refused(dir.path(), &bytes, &["member `demo/link` is", kind]);
    }
}

#[test]
fn encryption_other_methods_bad_crcs_and_non_utf8_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut encrypted = Raw::deflated("demo/a.py", b"a");
    encrypted.flags |= 1;
    refused(
        dir.path(),
        &wheel_with(vec![encrypted], &[]),
        &["encrypted"],
    );
    let mut bzip2 = Raw::deflated("demo/a.py", b"a");
    bzip2.method = 12;
    refused(
        dir.path(),
        &wheel_with(vec![bzip2], &[]),
        &["compression method 12"],
    );
    let mut crc = Raw::deflated("demo/a.py", b"a = 1\n");
    crc.crc ^= 1;
    refused(
        dir.path(),
        &wheel_with(vec![crc], &[("demo/a.py", b"a = 1\n")]),
        &["demo/a.py", "CRC-32"],
    );
    let mut latin1 = Raw::deflated("demo/x.py", b"x");
    latin1.name = b"demo/caf\xe9.py".to_vec();
    refused(
        dir.path(),
        &wheel_with(vec![latin1], &[]),
        &["`demo/caf\\xe9.py`", "not UTF-8"],
    );
}

/// Runs `cuwheel audit ARGS` and fails the test if it has not finished
/// after `limit`: the inputs here used to make it hang or read forever.
fn audit_bounded(args: &[&std::ffi::OsStr], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(common::cuwheel_bin())
        .arg("audit")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap(), out, err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("cuwheel audit {args:?} did not finish in {limit:?}: it hangs or reads forever");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn inputs_that_are_not_files_are_refused_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join(WHEEL);
    common::run_ok(Command::new("mkfifo").arg(&fifo));
    let limit = Duration::from_secs(60);
    let (code, _, err) = audit_bounded(&[fifo.as_os_str()], limit);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("it is a FIFO (named pipe), not a regular file"),
        "{err}"
    );

    let (code, out, err) = audit_bounded(&["--json".as_ref(), "/dev/zero".as_ref()], limit);
    assert_eq!(code, 1, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let message = json[0]["error"].as_str().unwrap();
    assert!(
        message.contains("/dev/zero") && message.contains("a character device"),
        "{message}"
    );

    let as_dir = dir.path().join("d-0.1-py3-none-any.whl");
    std::fs::create_dir(&as_dir).unwrap();
    let (code, _, err) = audit_bounded(&[as_dir.as_os_str()], limit);
    assert_eq!(code, 1);
    assert!(err.contains("it is a directory"), "{err}");
}

#[test]
fn a_garbage_dynamic_section_is_a_corrupt_elf_file() {
    let dir = tempfile::tempdir().unwrap();
    let so = audit_support::gcc(
        dir.path(),
        "libx.so",
        "int f(void) { return 1; }\n",
        false,
        &["-shared", "-fPIC"],
    );
    let mut data = std::fs::read(&so).unwrap();
    let (offset, size) = {
        use object::{Object, ObjectSection};
        let file = object::File::parse(&*data).unwrap();
        let section = file.section_by_name(".dynamic").unwrap();
        section.file_range().unwrap()
    };
    let mut rng = common::Rng(0x5eed);
    let garbage = rng.bytes(size as usize);
    data[offset as usize..(offset + size) as usize].copy_from_slice(&garbage);
    let member = "demo/libx.so";
    let path = audit_support::write_wheel(
        dir.path(),
        "demo-0.1-py3-none-linux_x86_64.whl",
        &[(member, data)],
    );
    let run = audit_support::cuwheel_audit([&path]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "[ELF] {member}: is a truncated or malformed ELF file: its .dynamic section is corrupt"
        )),
        "{}",
        run.stdout
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any field may lie: the reader never panics, never yields more than a
    /// member declares, and what it accepts streams exactly as declared.
    #[test]
    fn random_fields_never_panic_or_overrun(
        members in prop::collection::vec((
            "[a-z]{1,3}(/[a-z]{1,3}){0,2}",
            prop::collection::vec(any::<u8>(), 0..200),
            prop_oneof![Just(0u16), Just(8u16), any::<u16>()],
            any::<u32>(),
            prop_oneof![Just(None), (0u32..1 << 30).prop_map(Some)],
            prop_oneof![Just(0o100644u32), any::<u32>()],
            0u32..64,
            any::<bool>(),
        ), 1..5),
    ) {
        let raws: Vec<Raw> = members
            .into_iter()
            .map(|(name, data, method, crc, size, mode, claim_more, flip)| {
                let mut raw = Raw::deflated(&name, &data);
                if method != 8 {
                    raw.method = method;
                    raw.stored = data.clone();
                }
                if let Some(size) = size {
                    raw.size = size;
                }
                if flip {
                    raw.crc = crc;
                }
                raw.mode = mode;
                raw.claim_more = claim_more;
                raw
            })
            .collect();
        let bytes = wheel_with(raws, &[]);
        if let Ok(wheel) = WheelFile::from_bytes(Path::new(WHEEL), &bytes) {
            for member in wheel.members() {
                let mut out = Vec::new();
                let read = wheel.stream(member).take(member.size + 1024).read_to_end(&mut out);
                prop_assert!(out.len() as u64 <= member.size + 1);
                if read.is_ok() {
                    prop_assert_eq!(out.len() as u64, member.size);
                }
            }
        }
    }
}
