//! The wheel writer gives the same bytes whatever the umask, the file modes
//! and mtimes of its input tree, the order the tree was created in, the time
//! zone and the locale; `SOURCE_DATE_EPOCH` alone moves the timestamps.
//!
//! Each write runs in a child process (this test binary, re-run on
//! `child_writes_the_demo_wheel` under `/bin/sh -c 'umask …; exec …'`), so
//! the umask and environment really differ; the child builds the input tree
//! itself and reads `SOURCE_DATE_EPOCH` through `ZipTimestamp::from_env`.

use std::fs;
use std::io::{Cursor, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use cuwheel_wheel::{
    CoreMetadata, ProjectName, TagSet, Version, WheelArchive, WheelBuilder, ZipTimestamp,
};

const CHILD_OUT: &str = "CUWHEEL_TEST_CHILD_OUT";
const CHILD_ORDER: &str = "CUWHEEL_TEST_CHILD_ORDER";
const CHILD_EXEC_MODE: &str = "CUWHEEL_TEST_CHILD_EXEC_MODE";
const CHILD_MTIME: &str = "CUWHEEL_TEST_CHILD_MTIME";

const WHEEL: &str = "demo_ext-0.1.0+pt211cu130-cp311-cp311-manylinux_2_31_x86_64.whl";

/// The input tree: (path, contents, executable).
const TREE: [(&str, &str, bool); 6] = [
    ("demo_ext/__init__.py", "from . import _C\n", false),
    (
        "demo_ext/_C.cpython-311-x86_64-linux-gnu.so",
        "\x7fELF not really\n",
        true,
    ),
    ("demo_ext/kernels/données.txt", "non-ASCII name\n", false),
    ("demo_ext/kernels/sm_90.txt", "sm_90\n", false),
    (
        "demo_ext-0.1.0+pt211cu130.data/scripts/demo-run",
        "#!/bin/sh\necho run\n",
        true,
    ),
    (
        "demo_ext-0.1.0+pt211cu130.dist-info/provenance.json",
        "{\"cell\":\"cu130-py311\"}\n",
        false,
    ),
];

/// Not a check by itself: the body of the child process the tests below
/// start. Run directly (without `CUWHEEL_TEST_CHILD_OUT`) it does nothing.
#[test]
fn child_writes_the_demo_wheel() {
    let Some(out) = std::env::var_os(CHILD_OUT) else {
        return;
    };
    let out = Path::new(&out);
    let tree = out.join("tree");
    let reverse = std::env::var(CHILD_ORDER).unwrap() == "reverse";
    let exec_mode = u32::from_str_radix(&std::env::var(CHILD_EXEC_MODE).unwrap(), 8).unwrap();
    let mtime = SystemTime::UNIX_EPOCH
        + Duration::from_secs(std::env::var(CHILD_MTIME).unwrap().parse().unwrap());
    let mut files: Vec<_> = TREE.to_vec();
    if reverse {
        files.reverse();
    }
    for (path, contents, executable) in files {
        let path = tree.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        // Created under the child's umask.
        fs::write(&path, contents).unwrap();
        if executable {
            fs::set_permissions(&path, fs::Permissions::from_mode(exec_mode)).unwrap();
        }
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }

    let mut metadata = CoreMetadata::new(
        ProjectName::new("demo-ext").unwrap(),
        Version::parse("0.1.0+pt211cu130").unwrap(),
    );
    metadata.requires_dist = vec!["torch==2.11.0".to_string()];
    let tags = TagSet::parse("cp311-cp311-manylinux_2_31_x86_64").unwrap();
    let mut wheel = WheelBuilder::new(metadata, tags, None);
    wheel.add_tree(&tree, "").unwrap();
    let timestamp = ZipTimestamp::from_env().unwrap_or_else(|e| panic!("{e}"));
    let dist = out.join("dist");
    fs::create_dir(&dist).unwrap();
    wheel.write_into(&dist, timestamp).unwrap();
}

/// The conditions one child writes under.
struct Conditions {
    umask: &'static str,
    order: &'static str,
    exec_mode: &'static str,
    mtime: u64,
    tz: &'static str,
    locale: &'static str,
    source_date_epoch: Option<&'static str>,
}

const PLAIN: Conditions = Conditions {
    umask: "022",
    order: "forward",
    exec_mode: "755",
    mtime: 1_000_000_000,
    tz: "UTC",
    locale: "C",
    source_date_epoch: None,
};

const ODD: Conditions = Conditions {
    umask: "077",
    order: "reverse",
    exec_mode: "700",
    mtime: 1_600_000_000,
    tz: "Pacific/Chatham",
    locale: "tr_TR.UTF-8",
    source_date_epoch: None,
};

fn child_command(conditions: &Conditions, out: &Path) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("umask {}; exec \"$0\" \"$@\"", conditions.umask))
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "determinism::child_writes_the_demo_wheel",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_OUT, out)
        .env(CHILD_ORDER, conditions.order)
        .env(CHILD_EXEC_MODE, conditions.exec_mode)
        .env(CHILD_MTIME, conditions.mtime.to_string())
        .env("TZ", conditions.tz)
        .env("LC_ALL", conditions.locale);
    match conditions.source_date_epoch {
        Some(value) => cmd.env("SOURCE_DATE_EPOCH", value),
        None => cmd.env_remove("SOURCE_DATE_EPOCH"),
    };
    cmd
}

/// Writes the demo wheel in a child under `conditions`; returns its bytes
/// after checking the output directory holds just the wheel, mode 0644.
fn write_in_child(conditions: &Conditions) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let child = child_command(conditions, out.path()).output().unwrap();
    assert!(
        child.status.success(),
        "the child writing the wheel failed: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    let dist = out.path().join("dist");
    let names: Vec<String> = fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [WHEEL], "only the wheel, no temporary file left");
    let path = dist.join(WHEEL);
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "under umask {}", conditions.umask);
    assert_eq!(
        WheelArchive::open(&path).unwrap().verify(),
        vec![],
        "the written wheel verifies"
    );
    fs::read(path).unwrap()
}

/// Entry order, modes, timestamps and header fields, read back from the zip.
fn assert_layout(bytes: &[u8], expected_time: (u16, u8, u8, u8, u8, u8)) {
    let expected_order = [
        ("demo_ext-0.1.0+pt211cu130.data/scripts/demo-run", 0o100755),
        ("demo_ext/_C.cpython-311-x86_64-linux-gnu.so", 0o100755),
        ("demo_ext/__init__.py", 0o100644),
        ("demo_ext/kernels/données.txt", 0o100644),
        ("demo_ext/kernels/sm_90.txt", 0o100644),
        ("demo_ext-0.1.0+pt211cu130.dist-info/METADATA", 0o100644),
        ("demo_ext-0.1.0+pt211cu130.dist-info/WHEEL", 0o100644),
        (
            "demo_ext-0.1.0+pt211cu130.dist-info/provenance.json",
            0o100644,
        ),
        ("demo_ext-0.1.0+pt211cu130.dist-info/RECORD", 0o100644),
    ];
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    assert_eq!(zip.len(), expected_order.len(), "no directory entries");
    for (i, (name, mode)) in expected_order.iter().enumerate() {
        let mut file = zip.by_index(i).unwrap();
        assert_eq!(file.name(), *name, "entry {i}");
        assert_eq!(file.unix_mode(), Some(*mode), "{name}");
        assert_eq!(
            file.compression(),
            zip::CompressionMethod::Deflated,
            "{name}"
        );
        let t = file.last_modified().unwrap();
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            expected_time,
            "{name}"
        );
        assert!(
            file.extra_data().is_none_or(|e| e.is_empty()),
            "{name}: no extra field"
        );
        let header = file.header_start() as usize;
        let flags = u16::from_le_bytes([bytes[header + 6], bytes[header + 7]]);
        assert_eq!(flags & 0x0008, 0, "{name}: no data descriptor");
        let local_extra_len = u16::from_le_bytes([bytes[header + 28], bytes[header + 29]]);
        assert_eq!(local_extra_len, 0, "{name}: no local extra field");
        let mut data = Vec::new();
        file.read_to_end(&mut data).unwrap();
        if let Some((_, contents, _)) = TREE.iter().find(|(p, _, _)| p == name) {
            assert_eq!(data, contents.as_bytes(), "{name}");
        }
    }
}

#[test]
fn same_bytes_whatever_the_umask_modes_order_mtimes_time_zone_and_locale() {
    let plain = write_in_child(&PLAIN);
    let odd = write_in_child(&ODD);
    assert!(plain == odd, "the two writes differ");
    assert_layout(&plain, (1980, 1, 1, 0, 0, 0));
}

#[test]
fn source_date_epoch_sets_the_timestamps_and_only_them() {
    let plain = write_in_child(&PLAIN);
    let dated = write_in_child(&Conditions {
        source_date_epoch: Some("1700000000"),
        ..PLAIN
    });
    let dated_odd = write_in_child(&Conditions {
        source_date_epoch: Some("1700000000"),
        ..ODD
    });
    assert!(
        dated != plain,
        "SOURCE_DATE_EPOCH must change the timestamps"
    );
    assert!(dated == dated_odd, "one SOURCE_DATE_EPOCH, one result");
    assert_eq!(
        dated.len(),
        plain.len(),
        "only timestamps differ, not sizes"
    );
    // 1700000000 is 2023-11-14 22:13:20 UTC, whatever TZ says.
    assert_layout(&dated, (2023, 11, 14, 22, 13, 20));

    // Before 1980 is raised to 1980, the earliest a zip can say.
    let early = write_in_child(&Conditions {
        source_date_epoch: Some("315532799"),
        ..ODD
    });
    assert!(
        early == plain,
        "a pre-1980 SOURCE_DATE_EPOCH is floored at 1980-01-01"
    );
}

#[test]
fn unparsable_source_date_epoch_fails_naming_the_variable() {
    let out = tempfile::tempdir().unwrap();
    let output = child_command(
        &Conditions {
            source_date_epoch: Some("yesterday"),
            ..PLAIN
        },
        out.path(),
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("SOURCE_DATE_EPOCH=\"yesterday\" is not usable"),
        "{stderr}"
    );
    assert!(
        !out.path().join("dist").join(WHEEL).exists(),
        "no wheel is written"
    );
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-dir");
    let metadata = CoreMetadata::new(
        ProjectName::new("demo").unwrap(),
        Version::parse("1.0").unwrap(),
    );
    let wheel = WheelBuilder::new(metadata, TagSet::parse("py3-none-any").unwrap(), None);
    let err = wheel
        .write_into(&missing, ZipTimestamp::EARLIEST)
        .unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("cannot create a temporary file in"),
        "{message}"
    );
    assert!(message.contains("no-such-dir"), "{message}");
    assert_eq!(fs::read_dir(out.path()).unwrap().count(), 0);
}
