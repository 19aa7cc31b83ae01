//! `cuwheel audit` (the real binary) on wheels crafted here, each with one
//! defect: a `/nix/store` RUNPATH, a fat binary lacking an expected arch
//! (given on the command line and in the provenance file), non-limited-API
//! symbols in an abi3 wheel, a platform tag above what the symbols allow, a
//! non-ELF `.so`, a garbage `.nv_fatbin`, a RECORD with a wrong hash, and
//! unreadable wheels. Each asserts the exit status and that the message
//! names the file and the problem; clean twins assert the pass.

use std::path::Path;

use crate::audit_support;
use crate::audit_support::{
    EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, EXT_MEMBER, EXTENSION_C, FATBIN_ARCH_SPECIFIC,
    FATBIN_FLAGS, FatbinEntry, assert_run, audit_json, cuwheel_audit, fatbin_container, gcc, nvcc,
    write_wheel,
};
use crate::common::TestEnv;

fn shared_object(dir: &Path, output: &str, source: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["-shared", "-fPIC"];
    args.extend(extra);
    std::fs::read(gcc(dir, output, source, false, &args)).unwrap()
}

#[test]
fn a_nix_store_runpath_fails_naming_the_file_and_the_runpath() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let runpath = "/nix/store/9krlzvny65gdc8s7kpb6lkx8cd02c25c-gcc-12.3.0-lib/lib";
    let bad = shared_object(
        d,
        "bad.so",
        EXTENSION_C,
        &["-Wl,--enable-new-dtags", &format!("-Wl,-rpath,{runpath}")],
    );
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, bad)],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            &format!("{EXT_MEMBER}: RUNPATH entry `{runpath}` leaves the wheel"),
            "an absolute path on the build machine",
            "patchelf",
            // the store path is also left in the file's bytes
            &format!("{EXT_MEMBER}: holds"),
        ],
    );

    // the same module with an $ORIGIN RUNPATH inside the wheel passes
    let good = shared_object(
        d,
        "good.so",
        EXTENSION_C,
        &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"],
    );
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, good)],
    );
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);
}

#[test]
fn a_fatbin_lacking_an_expected_arch_says_which() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let library = nvcc(
        &env,
        d,
        "libkernels.so",
        audit_support::KERNEL,
        &["-shared", "-gencode", "arch=compute_80,code=sm_80"],
    );
    let member = "demo/libkernels.so";
    let bytes = std::fs::read(library).unwrap();

    // expectation on the command line
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(member, bytes.clone())],
    );
    let run = cuwheel_audit([
        "--cuda-archs".as_ref(),
        "8.0,9.0".as_ref(),
        wheel.as_os_str(),
    ]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            &format!("{member}: its CUDA fat binary lacks sm_90"),
            "expected 8.0, 9.0 from --cuda-archs",
        ],
    );
    // ... and in JSON, per member
    let (code, report) = audit_json(
        ["--cuda-archs", "8.0,9.0+PTX"]
            .iter()
            .map(Path::new)
            .chain([wheel.as_path()]),
    );
    assert_eq!(code, EXIT_FAILED);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "cuda-archs")
        .expect("a cuda-archs finding");
    assert_eq!(finding["member"], member);
    assert!(
        finding["problem"]
            .as_str()
            .unwrap()
            .contains("lacks sm_90, compute_90"),
        "{finding}"
    );
    assert_eq!(
        report["elf_files"][0]["fatbin"]["images"][0]["image"],
        "sm_80"
    );

    // the exact expectation passes
    assert_run(
        &cuwheel_audit(["--cuda-archs".as_ref(), "8.0".as_ref(), wheel.as_os_str()]),
        EXIT_PASSED,
        &["PASSED", "fat binary demo/libkernels.so: sm_80"],
    );
    // an extra arch is named too
    assert_run(
        &cuwheel_audit(["--cuda-archs".as_ref(), "9.0".as_ref(), wheel.as_os_str()]),
        EXIT_FAILED,
        &["lacks sm_90 and holds unexpected sm_80"],
    );

    // expectation in the provenance file that cuwheel's wheels carry
    let provenance = br#"{"cell": "cu130-py311", "cuda_archs": ["8.0", "9.0"]}"#.to_vec();
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[
            (member, bytes.clone()),
            ("demo-0.2.dist-info/cuwheel-provenance.json", provenance),
        ],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!("{member}: its CUDA fat binary lacks sm_90"),
            "from demo-0.2.dist-info/cuwheel-provenance.json",
        ],
    );
    // --cuda-archs overrides it
    assert_run(
        &cuwheel_audit(["--cuda-archs".as_ref(), "8.0".as_ref(), wheel.as_os_str()]),
        EXIT_PASSED,
        &["--cuda-archs overrides the cuda_archs of demo-0.2.dist-info/cuwheel-provenance.json"],
    );

    // a malformed provenance list is a finding naming the file
    let wheel = write_wheel(
        d,
        "demo-0.3-cp311-cp311-linux_x86_64.whl",
        &[
            (member, bytes),
            (
                "demo-0.3.dist-info/cuwheel-provenance.json",
                br#"{"cuda_archs": ["sm_80"]}"#.to_vec(),
            ),
        ],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &["demo-0.3.dist-info/cuwheel-provenance.json: `sm_80` is not a CUDA architecture"],
    );
}

#[test]
fn an_abi3_wheel_with_non_limited_symbols_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = r#"
extern void *_PyObject_NotInTheLimitedApi(void);
extern int PyModule_AddType(void *module, void *type);
void *PyInit__ext(void) { PyModule_AddType(0, 0); return _PyObject_NotInTheLimitedApi(); }
"#;
    let bytes = shared_object(d, "abi3.so", source, &[]);
    let member = "demo/_ext.abi3.so";
    let wheel = write_wheel(
        d,
        "demo-0.1-cp39-abi3-linux_x86_64.whl",
        &[(member, bytes.clone())],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!("{member}: the wheel is tagged abi3 for Python 3.9"),
            "_PyObject_NotInTheLimitedApi is not part of the stable ABI",
            "PyModule_AddType entered the stable ABI only in Python 3.10",
            "-DPy_LIMITED_API=0x03090000",
        ],
    );
    // A cp311-cp311 wheel makes no stable-ABI promise: the same file passes.
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[(member, bytes)],
    );
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);
}

#[test]
fn a_platform_tag_above_the_symbol_versions_fails_naming_the_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // totalorder has been versioned GLIBC_2.31 since glibc 2.31 changed its signature
    let source = r#"
#define _GNU_SOURCE
#include <math.h>
int PyInit__ext(double a, double b) { return totalorder(&a, &b); }
"#;
    let bytes = shared_object(d, "glibc231.so", source, &["-lm"]);
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[(EXT_MEMBER, bytes.clone())],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            &format!(
                "{EXT_MEMBER}: tagged manylinux_2_28_x86_64, but it requires GLIBC_2.31 from \
                 libm.so.6 (for totalorder)"
            ),
            "the files allow at most manylinux_2_31_x86_64",
        ],
    );
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-manylinux_2_31_x86_64.whl",
        &[(EXT_MEMBER, bytes)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_PASSED,
        &["ELF files allow manylinux_2_31_x86_64"],
    );
}

#[test]
fn a_library_outside_whitelist_and_wheel_fails_unless_declared() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dep = gcc(
        d,
        "libdep.so.1",
        "int dep(void) { return 1; }\n",
        false,
        &["-shared", "-fPIC", "-Wl,-soname,libdep.so.1"],
    );
    let bytes = shared_object(
        d,
        "needs_dep.so",
        "extern int dep(void);\nint PyInit__ext(void) { return dep(); }\n",
        &[dep.to_str().unwrap()],
    );
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, bytes.clone())],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!("{EXT_MEMBER}: needs libdep.so.1, which is not in any manylinux whitelist"),
            "--runtime-provided libdep.so.1",
        ],
    );
    assert_run(
        &cuwheel_audit([
            "--runtime-provided".as_ref(),
            "libdep.so.1".as_ref(),
            wheel.as_os_str(),
        ]),
        EXIT_PASSED,
        &["libdep.so.1 (declared with --runtime-provided)"],
    );
    // bundled beside the module but off its search path: says how to reach it
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[
            (EXT_MEMBER, bytes),
            ("demo.libs/libdep.so.1", std::fs::read(&dep).unwrap()),
        ],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            "the wheel holds it at demo.libs/libdep.so.1",
            "$ORIGIN/../demo.libs",
        ],
    );
}

#[test]
fn broken_members_are_findings_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // a .so that is not ELF
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(
            "demo/_ext.so",
            b"this is a text file, not a shared object\n".to_vec(),
        )],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &["demo/_ext.so: is not an ELF file (it starts with bytes 74 68 69 73)"],
    );

    // a .nv_fatbin section holding garbage
    let garbage = r#"
__attribute__((section(".nv_fatbin"), used))
static const char fatbin[64] = "definitely not a CUDA fat binary container";
int PyInit__ext(void) { return 0; }
"#;
    let bytes = shared_object(d, "garbage.so", garbage, &[]);
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, bytes)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[&format!(
            "{EXT_MEMBER}: section .nv_fatbin: the CUDA fat binary is malformed at byte 0 of the \
             section: expected the container magic 0xBA55ED50"
        )],
    );

    // RECORD with a wrong hash: the wheel's own verification, as a finding
    let good = write_wheel(
        d,
        "demo-0.3-cp311-cp311-linux_x86_64.whl",
        &[("demo/__init__.py", b"x = 1\n".to_vec())],
    );
    let tampered = d.join("tampered");
    std::fs::create_dir(&tampered).unwrap();
    let wheel = tampered.join("demo-0.3-cp311-cp311-linux_x86_64.whl");
    rewrite_member(&good, &wheel, "demo/__init__.py", b"x = 2\n");
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &["[wheel format] demo/__init__.py: member `demo/__init__.py` has hash"],
    );
}

/// Copies the wheel `from` to `to` with one member's bytes replaced (RECORD unchanged).
fn rewrite_member(from: &Path, to: &Path, member: &str, data: &[u8]) {
    use std::io::{Read, Write};
    let mut archive = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut out = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let name = file.name().to_string();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        out.start_file(name.as_str(), zip::write::SimpleFileOptions::default())
            .unwrap();
        out.write_all(if name == member { data } else { &bytes })
            .unwrap();
    }
    out.finish().unwrap();
}

#[test]
fn unreadable_wheels_exit_1_and_the_others_are_still_audited() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = write_wheel(
        d,
        "demo-0.1-py3-none-any.whl",
        &[("demo/__init__.py", b"x = 1\n".to_vec())],
    );
    let truncated = d.join("demo-0.2-py3-none-any.whl");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let missing = d.join("demo-0.3-py3-none-any.whl");

    let run = cuwheel_audit([&good, &truncated, &missing]);
    assert_run(
        &run,
        EXIT_ERROR,
        &[
            "demo-0.1-py3-none-any.whl: PASSED",
            "demo-0.2-py3-none-any.whl: not a readable zip archive",
            "cannot read",
            "demo-0.3-py3-none-any.whl",
        ],
    );
    // a pure wheel alone passes
    assert_run(
        &cuwheel_audit([&good]),
        EXIT_PASSED,
        &["platform: no ELF files"],
    );
}

#[test]
fn help_says_what_each_exit_status_means_and_bad_usage_is_2() {
    let run = cuwheel_audit(["--help"]);
    assert_run(
        &run,
        EXIT_PASSED,
        &[
            "0  every wheel passed",
            "1  a wheel could not be read",
            "3  every wheel was read and at least one failed the audit",
            "--cuda-archs <LIST>",
            "--runtime-provided <SONAME>",
        ],
    );
    let run = cuwheel_audit(["--cuda-archs", "sm_90", "x.whl"]);
    assert_run(&run, 2, &["`sm_90` is not a CUDA architecture"]);
}

#[test]
fn a_missing_arch_specific_image_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // sm_80 and sm_90a (the arch-specific flag 0x10_0000, as nvcc 13.0 sets it).
    let section = fatbin_container(&[
        FatbinEntry::sass(80, FATBIN_FLAGS),
        FatbinEntry::sass(90, FATBIN_ARCH_SPECIFIC | FATBIN_FLAGS),
    ]);
    let bytes: Vec<String> = section.iter().map(|b| format!("0x{b:02x}")).collect();
    let source = format!(
        "__attribute__((section(\".nv_fatbin\"), used, aligned(8)))\n\
         static const unsigned char fatbin[{}] = {{{}}};\n{EXTENSION_C}",
        section.len(),
        bytes.join(", ")
    );
    let module = shared_object(d, "specific.so", &source, &[]);
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, module.clone())],
    );
    // Exactly what the list asks for, suffix included.
    assert_run(
        &cuwheel_audit([
            "--cuda-archs".as_ref(),
            "8.0,9.0a".as_ref(),
            wheel.as_os_str(),
        ]),
        EXIT_PASSED,
        &["PASSED", "sm_80 sm_90a"],
    );
    // A plain 9.0 is not sm_90a: both directions are named.
    assert_run(
        &cuwheel_audit([
            "--cuda-archs".as_ref(),
            "8.0,9.0".as_ref(),
            wheel.as_os_str(),
        ]),
        EXIT_FAILED,
        &[&format!(
            "{EXT_MEMBER}: its CUDA fat binary lacks sm_90 and holds unexpected sm_90a"
        )],
    );
    // The provenance asks for 9.0a and 10.0f; the member lacks sm_100f.
    let provenance = br#"{"cell": "cu130-py311", "cuda_archs": ["8.0", "9.0a", "10.0f"]}"#;
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-linux_x86_64.whl",
        &[
            (EXT_MEMBER, module),
            (
                "demo-0.2.dist-info/cuwheel-provenance.json",
                provenance.to_vec(),
            ),
        ],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!("{EXT_MEMBER}: its CUDA fat binary lacks sm_100f"),
            "missing sm_100f (family-specific): cuda-archs asks for 10.0f",
            "from demo-0.2.dist-info/cuwheel-provenance.json",
        ],
    );
}
