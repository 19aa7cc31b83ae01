//! `cuwheel audit` (the real binary) on hostile wheels crafted here: member
//! paths 32,000 directories deep under a 1 GiB address-space limit,
//! nonsense tags, an ELF file whose program headers run past its end, junk
//! after the zip end record, member names with terminal escapes, 5,000
//! members missing from RECORD, inputs that are not files; and a wheel that
//! links a library of a sibling wheel its Requires-Dist names, as torch's
//! do. Each asserts the exit status and the message.

use std::io::Write;
use std::path::Path;

use crate::audit_support;
use crate::audit_support::{
    EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, EXT_MEMBER, EXTENSION_C, assert_run, cuwheel_audit,
    cuwheel_audit_limited, gcc, write_wheel, write_wheel_with_metadata,
};

/// Adds `members` to the zip at `wheel` without touching its RECORD.
fn append_members(wheel: &Path, members: impl IntoIterator<Item = (String, Vec<u8>)>) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(wheel)
        .unwrap();
    let mut zip = zip::ZipWriter::new_append(file).unwrap();
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in members {
        zip.start_file(name, options).unwrap();
        zip.write_all(&data).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn member_paths_32000_directories_deep_audit_within_1_gib() {
    let dir = tempfile::tempdir().unwrap();
    // four distinct chains of 32,000 directories: `a/a/…/m.py`, `b/b/…/m.py`, …
    let members: Vec<(String, Vec<u8>)> = ["a", "b", "c", "d"]
        .iter()
        .map(|c| {
            (
                format!("deep/{}m.py", format!("{c}/").repeat(32_000)),
                b"x = 1\n".to_vec(),
            )
        })
        .collect();
    let borrowed: Vec<(&str, Vec<u8>)> = members
        .iter()
        .map(|(n, d)| (n.as_str(), d.clone()))
        .collect();
    let wheel = write_wheel(dir.path(), "deep-1.0-py3-none-any.whl", &borrowed);

    // The address space of the audit is capped at 1 GiB: storing every
    // ancestor directory of every member (4 × 32,000 × ~32 KB, 4 GB) cannot
    // fit: it aborted here before.
    let run = cuwheel_audit_limited(1 << 30, [&wheel]);
    assert_run(
        &run,
        EXIT_PASSED,
        &[
            "deep-1.0-py3-none-any.whl: PASSED",
            "platform: no ELF files",
        ],
    );
    assert!(!run.stderr.contains("memory"), "{}", run.stderr);
}

#[test]
fn nonsense_tags_are_refused_naming_each_tag_and_valid_forms() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = write_wheel(
        dir.path(),
        "hostile-1.0-py9-bogus-nonsense_tag.whl",
        &[("hostile/__init__.py", b"".to_vec())],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            "FAILED (3 problems)",
            "[tags] the python tag `py9` names Python 9, which does not exist",
            "`py3`, `py310`, `cp311`",
            "[tags] the abi tag `bogus` is no ABI an interpreter reports",
            "`none`, `abi3`",
            "[tags] the platform tag `nonsense_tag` is no platform an installer selects",
            "`manylinux_2_28_x86_64`",
            "no installer would ever pick this wheel",
            "fix: name the wheel (and the Tag lines of its .dist-info/WHEEL)",
        ],
    );

    // real tags of every family pass
    let good = write_wheel(
        dir.path(),
        "fine-1.0-py2.py3-none-any.whl",
        &[("fine/__init__.py", b"".to_vec())],
    );
    assert_run(&cuwheel_audit([&good]), EXIT_PASSED, &["PASSED"]);
}

/// Sets the file size of the ELF file's last PT_LOAD program header to four
/// times the file's length: the loader would map bytes the file lacks.
fn stretch_last_load_segment(elf: &mut [u8]) {
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes(b[at..at + 2].try_into().unwrap());
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let phentsize = usize::from(u16_at(elf, 0x36));
    let phnum = usize::from(u16_at(elf, 0x38));
    let last_load = (0..phnum)
        .rev()
        .map(|i| phoff + i * phentsize)
        .find(|&at| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 1)
        .expect("a PT_LOAD");
    let huge = (elf.len() as u64 * 4).to_le_bytes();
    elf[last_load + 32..last_load + 40].copy_from_slice(&huge); // p_filesz
    elf[last_load + 40..last_load + 48].copy_from_slice(&huge); // p_memsz
}

#[test]
fn program_headers_past_the_end_of_the_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let so = gcc(
        dir.path(),
        "ext.so",
        EXTENSION_C,
        false,
        &["-shared", "-fPIC"],
    );
    let mut elf = std::fs::read(&so).unwrap();
    stretch_last_load_segment(&mut elf);
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, elf.clone())],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            &format!("[ELF] {EXT_MEMBER}: is a truncated or malformed ELF file: program header"),
            "(LOAD) covers bytes",
            &format!("of a {}-byte file, past its end", elf.len()),
            "the dynamic loader would map bytes the file does not have",
            "fix: the file is damaged: rebuild it and the wheel",
        ],
    );

    // the program header table itself past the end: dlopen says "cannot read file data"
    let mut elf = std::fs::read(&so).unwrap();
    let past = (elf.len() as u64 + 1000).to_le_bytes();
    elf[0x20..0x28].copy_from_slice(&past); // e_phoff
    let wheel = write_wheel(
        dir.path(),
        "table-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, elf.clone())],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!(
                "[ELF] {EXT_MEMBER}: is a truncated or malformed ELF file: its program header table"
            ),
            &format!(
                "from byte {}) runs past the end of the {}-byte file",
                elf.len() + 1000,
                elf.len()
            ),
            "dlopen: \"cannot read file data\"",
        ],
    );

    // the untouched library passes
    let good = write_wheel(
        dir.path(),
        "good-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, std::fs::read(&so).unwrap())],
    );
    assert_run(&cuwheel_audit([&good]), EXIT_PASSED, &["PASSED"]);
}

#[test]
fn junk_after_the_end_record_is_named_as_trailing_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-py3-none-any.whl",
        &[("demo/__init__.py", b"".to_vec())],
    );
    let clean_len = std::fs::metadata(&wheel).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&wheel)
        .unwrap()
        .write_all(&[0xAB; 300])
        .unwrap();
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_ERROR,
        &[
            "demo-0.1-py3-none-any.whl",
            "300 trailing bytes follow its end-of-central-directory record",
            &format!("ending at byte {clean_len}"),
            "a zip archive must end with that record",
            &format!("truncate -s {clean_len}"),
        ],
    );
    assert!(
        !run.stderr
            .contains("no end-of-central-directory record in its last 64 KiB")
    );

    // the fix the message gives works
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&wheel)
        .unwrap();
    file.set_len(clean_len).unwrap();
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);
}

#[test]
fn terminal_escapes_in_member_names_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // a name with a newline, a forged verdict and a clear-screen sequence:
    // refused as unreadable, the name shown escaped
    let forged = "demo/x\nRESULT: PASSED\u{1b}[2J\u{0}.py";
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-py3-none-any.whl",
        &[("demo/__init__.py", b"".to_vec())],
    );
    append_members(&wheel, [(forged.to_string(), b"1".to_vec())]);
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_ERROR,
        &["x\\nRESULT: PASSED\\u{1b}[2J\\0.py", "control character"],
    );
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(!all.contains('\u{1b}') && !all.contains('\0'), "{all:?}");
    assert!(!all.lines().any(|l| l.starts_with("RESULT")), "{all}");
    // the reader's own error escapes it, for every command that opens wheels
    let error = cuwheel::wheel::WheelFile::open(&wheel)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("member path `demo/x\\nRESULT: PASSED\\u{1b}[2J\\0.py` is unsafe")
            && !error.contains('\n')
            && !error.contains('\u{1b}'),
        "{error:?}"
    );

    // a name the reader accepts (a right-to-left override is no control
    // character) but RECORD does not list: the finding shows it escaped
    let wheel = write_wheel(
        dir.path(),
        "demo2-0.1-py3-none-any.whl",
        &[("demo2/__init__.py", b"".to_vec())],
    );
    append_members(
        &wheel,
        [("demo2/\u{202e}yp.exe".to_string(), b"1".to_vec())],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &["demo2/\\u{202e}yp.exe: member `demo2/\\u{202e}yp.exe` is not listed in RECORD"],
    );
    assert!(!run.stdout.contains('\u{202e}'), "{}", run.stdout);
}

#[test]
fn thousands_of_findings_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = write_wheel(
        dir.path(),
        "many-0.1-py3-none-any.whl",
        &[("many/__init__.py", b"".to_vec())],
    );
    append_members(
        &wheel,
        (0..5_000).map(|i| (format!("many/m{i:05}.py"), Vec::new())),
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            "FAILED (5000 problems)",
            "1. [wheel format] many/m00000.py: member `many/m00000.py` is not listed in RECORD",
            "20. [wheel format] many/m00019.py",
            "\u{2026} and 4980 more [wheel format] findings like these (`--json` lists all 5000)",
        ],
    );
    assert!(!run.stdout.contains("m00020.py"), "{}", run.stdout);
    let lines = run.stdout.lines().count();
    assert!(lines < 60, "{lines} lines:\n{}", run.stdout);

    // JSON keeps every finding
    let (code, report) = audit_support::audit_json([&wheel]);
    assert_eq!(code, EXIT_FAILED);
    assert_eq!(report["findings"].as_array().unwrap().len(), 5000);
}

#[test]
fn inputs_that_are_not_files_are_refused_without_reading() {
    let run = cuwheel_audit(["/dev/zero"]);
    assert_run(
        &run,
        EXIT_ERROR,
        &[
            "/dev/zero",
            "a character device, not a regular file",
            "nothing was read",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let as_dir = dir.path().join("d-0.1-py3-none-any.whl");
    std::fs::create_dir(&as_dir).unwrap();
    let run = cuwheel_audit([&as_dir]);
    assert_run(
        &run,
        EXIT_ERROR,
        &[
            "d-0.1-py3-none-any.whl",
            "it is a directory, not a regular file",
        ],
    );
}

/// An extension that needs `libcupti.so.13` through the RPATH
/// `$ORIGIN/../nvidia/cu13/lib`, as torch's libraries do; the stub library
/// it links against stays outside the wheel.
fn extension_linking_a_sibling(dir: &Path) -> Vec<u8> {
    extension_with_rpath(dir, "$ORIGIN/../nvidia/cu13/lib")
}

/// An extension that needs `libcupti.so.13`, with this RPATH.
fn extension_with_rpath(dir: &Path, rpath: &str) -> Vec<u8> {
    gcc(
        dir,
        "stub/libcupti.so.13",
        "int cuptiGetVersion(unsigned *v) { *v = 13; return 0; }\n",
        false,
        &["-shared", "-fPIC", "-Wl,-soname,libcupti.so.13"],
    );
    let source = format!(
        "{EXTENSION_C}\nint cuptiGetVersion(unsigned *);\nint v(void) {{ unsigned x; return cuptiGetVersion(&x); }}\n"
    );
    let so = gcc(
        dir,
        "ext.so",
        &source,
        false,
        &[
            "-shared",
            "-fPIC",
            "-Wl,--disable-new-dtags",
            &format!("-Wl,-rpath,{rpath}"),
            &format!("{}/stub/libcupti.so.13", dir.display()),
        ],
    );
    std::fs::read(so).unwrap()
}

#[test]
fn a_library_of_a_required_sibling_wheel_is_a_note_and_unknown_ones_fail() {
    let dir = tempfile::tempdir().unwrap();
    let ext = extension_linking_a_sibling(dir.path());
    let name = "demo-0.1-cp311-cp311-manylinux_2_28_x86_64.whl";

    // torch's form: the toolkit metapackage with the component as an extra
    let wheel = write_wheel_with_metadata(
        dir.path(),
        name,
        &[(EXT_MEMBER, ext.clone())],
        "Requires-Dist: cuda-toolkit[cupti]==13.0.2; platform_system == \"Linux\"\n",
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_PASSED,
        &[
            "PASSED",
            "note: 1 RPATH/RUNPATH entry points to nvidia/cu13/lib/, outside the wheel but \
             installed beside it by `cuda-toolkit[cupti]==13.0.2`, which its Requires-Dist names",
            "note: assumes `cuda-toolkit[cupti]==13.0.2`, which its Requires-Dist names, installs \
             libcupti.so.13",
        ],
    );

    // CUDA 13's own component wheel names it too
    let dir2 = dir.path().join("two");
    std::fs::create_dir(&dir2).unwrap();
    let wheel = write_wheel_with_metadata(
        &dir2,
        name,
        &[(EXT_MEMBER, ext.clone())],
        "Requires-Dist: nvidia-cuda-cupti\n",
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_PASSED,
        &["installs libcupti.so.13", "by `nvidia-cuda-cupti`"],
    );

    // a sibling that provides neither that directory nor that library, or
    // one only under an extra, changes nothing: both still fail
    for (sub, requires) in [
        ("three", "Requires-Dist: nvidia-nccl-cu13==2.28.9\n"),
        (
            "four",
            "Requires-Dist: cuda-toolkit[cupti]==13.0.2; extra == \"cuda\"\n",
        ),
        ("five", ""),
    ] {
        let d = dir.path().join(sub);
        std::fs::create_dir(&d).unwrap();
        let wheel = write_wheel_with_metadata(&d, name, &[(EXT_MEMBER, ext.clone())], requires);
        assert_run(
            &cuwheel_audit([&wheel]),
            EXIT_FAILED,
            &[
                &format!(
                    "{EXT_MEMBER}: needs libcupti.so.13, which is not in any manylinux whitelist"
                ),
                &format!(
                    "{EXT_MEMBER}: RPATH entry `$ORIGIN/../nvidia/cu13/lib` leaves the wheel: \
                     resolves to nvidia/cu13/lib/, a directory this wheel does not contain"
                ),
            ],
        );
    }
}

#[test]
fn dead_entries_into_a_sibling_or_the_own_package_are_notes_others_fail() {
    let dir = tempfile::tempdir().unwrap();
    let requires = "Requires-Dist: cuda-toolkit[cupti]==13.0.2\n";
    let member = "demo/sub/_ext.cpython-311-x86_64-linux-gnu.so";
    // from demo/sub/: `../../../nvidia/cu13/lib` climbs above site-packages
    // (torch's _C.so does this); `../lib64` is demo/lib64, absent from the
    // wheel's own package (torch's protoc); both reach nothing
    let ext = extension_with_rpath(
        dir.path(),
        "$ORIGIN/../../../nvidia/cu13/lib:$ORIGIN/../lib64",
    );
    let wheel = write_wheel_with_metadata(
        dir.path(),
        "demo-0.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[(member, ext), ("demo/__init__.py", Vec::new())],
        requires,
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_PASSED,
        &[
            "PASSED",
            "note: 1 RPATH/RUNPATH entry points above the wheel's root at a nvidia/cu13/lib/ that \
             `cuda-toolkit[cupti]==13.0.2` (in its Requires-Dist) installs one level lower",
            "note: 1 RPATH/RUNPATH entry points to demo/lib64/, inside the wheel's own package \
             directory but absent from it",
        ],
    );

    // a top-level directory the wheel does not own, and anything above the
    // root that is no sibling's, still fail
    let d = dir.path().join("other");
    std::fs::create_dir(&d).unwrap();
    let ext = extension_with_rpath(&d, "$ORIGIN/../../lib64:$ORIGIN/../../../usr/lib");
    let wheel = write_wheel_with_metadata(
        &d,
        "demo-0.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[(member, ext)],
        requires,
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            "FAILED (2 problems)",
            &format!(
                "{member}: RPATH entry `$ORIGIN/../../lib64` leaves the wheel: resolves to lib64/"
            ),
            &format!(
                "{member}: RPATH entry `$ORIGIN/../../../usr/lib` leaves the wheel: climbs above \
                 the wheel's root"
            ),
        ],
    );
}
