//! `cuwheel audit` and `cuwheel symbols` (the real binary) on aarch64
//! files that Debian's cross compilers (`aarch64-linux-gnu-gcc`, and nvcc
//! with `-ccbin aarch64-linux-gnu-g++`) build here: an aarch64 wheel is
//! judged by aarch64's manylinux symbol versions and gets an aarch64 tag;
//! its files in an x86_64 wheel, or x86_64 files in an aarch64 wheel, are
//! findings naming the file; a symbol table records its architecture, and
//! the load check refuses tables of another architecture than the wheel's.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::audit_support::{
    EXIT_FAILED, EXIT_PASSED, EXTENSION_C, KERNEL, aarch64_gcc, assert_run, audit_json,
    cuwheel_audit, gcc, write_wheel,
};
use crate::common;
use crate::common::TestEnv;

const ARM_MEMBER: &str = "demo/_ext.cpython-311-aarch64-linux-gnu.so";
const CROSS_GXX: &str = "aarch64-linux-gnu-g++";

/// Compiles C `source` into the aarch64 shared object `dir/output`.
fn cross_shared_object(dir: &Path, output: &str, source: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["-shared", "-fPIC"];
    args.extend(extra);
    std::fs::read(aarch64_gcc(dir, output, source, &args)).unwrap()
}

fn symbols(inputs: &[&Path], out: &Path) -> std::process::Output {
    Command::new(common::cuwheel_bin())
        .arg("symbols")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn an_aarch64_wheel_is_judged_by_aarch64_symbol_versions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // strcpy: GLIBC_2.17, aarch64's first glibc version (x86_64's is 2.2.5).
    let plain = cross_shared_object(d, "plain.so", EXTENSION_C, &[]);
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-manylinux_2_17_aarch64.whl",
        &[(ARM_MEMBER, plain.clone())],
    );
    let (code, report) = audit_json([&wheel]);
    assert_eq!(code, EXIT_PASSED, "{report:#}");
    assert_eq!(
        report["platform"]["allowed"], "manylinux_2_17_aarch64",
        "{report:#}"
    );

    // pthread_create moved into libc as GLIBC_2.34; the cross sysroot is
    // glibc 2.36, so the module needs manylinux_2_34_aarch64.
    let threads = r#"
#include <pthread.h>
static void *run(void *x) { return x; }
int PyInit__ext(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }
"#;
    let newer = cross_shared_object(d, "threads.so", threads, &["-pthread"]);
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-manylinux_2_28_aarch64.whl",
        &[(ARM_MEMBER, newer.clone())],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &format!(
                "{ARM_MEMBER}: tagged manylinux_2_28_aarch64, but it requires GLIBC_2.34 from \
                 libc.so.6 (for pthread_create)"
            ),
            "the files allow at most manylinux_2_34_aarch64",
        ],
    );
    let wheel = write_wheel(
        d,
        "demo-0.3-cp311-cp311-manylinux_2_34_aarch64.whl",
        &[(ARM_MEMBER, newer)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_PASSED,
        &["ELF files allow manylinux_2_34_aarch64"],
    );
}

#[test]
fn files_of_the_other_architecture_are_findings_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let arm = cross_shared_object(d, "arm.so", EXTENSION_C, &[]);
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-manylinux_2_17_x86_64.whl",
        &[("demo/_ext.cpython-311-x86_64-linux-gnu.so", arm)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            "the wheel is tagged `manylinux_2_17_x86_64`, for x86_64, but its ELF files are for \
             aarch64",
            "fix: rebuild its ELF files for x86_64 (or, if the wheel is meant for aarch64, tag it \
             manylinux_2_17_aarch64)",
        ],
    );

    let x86 = std::fs::read(gcc(d, "x86.so", EXTENSION_C, false, &["-shared", "-fPIC"])).unwrap();
    let wheel = write_wheel(
        d,
        "demo-0.2-cp311-cp311-manylinux_2_17_aarch64.whl",
        &[(ARM_MEMBER, x86)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            "the wheel is tagged `manylinux_2_17_aarch64`, for aarch64, but its ELF files are for \
             x86_64",
            "fix: rebuild its ELF files for aarch64 (or, if the wheel is meant for x86_64, tag it \
             manylinux_2_5_x86_64)",
        ],
    );

    // One wheel tagged for both architectures.
    let arm = cross_shared_object(d, "arm2.so", EXTENSION_C, &[]);
    let wheel = write_wheel(
        d,
        "demo-0.3-cp311-cp311-manylinux_2_17_aarch64.manylinux_2_17_x86_64.whl",
        &[(ARM_MEMBER, arm)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            "the wheel is tagged `manylinux_2_17_x86_64`, for x86_64, but its ELF files are for \
             aarch64",
            "fix: a wheel is for one architecture: tag it manylinux_2_17_aarch64 only",
        ],
    );
}

/// nvcc's CUDA fat binary in an aarch64 object: the audit reads it as it
/// reads an x86_64 one's, and names a missing arch.
#[test]
fn an_aarch64_cuda_module_has_its_fat_binary_audited() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("kernel.cu");
    std::fs::write(&src, KERNEL).unwrap();
    let object = d.join("kernel.o");
    common::run_ok(
        Command::new(env.cuda_home().join("bin/nvcc"))
            .args(["-ccbin", CROSS_GXX, "-Xcompiler", "-fPIC"])
            .args(["-gencode", "arch=compute_90,code=sm_90", "-c", "-o"])
            .arg(&object)
            .arg(&src),
    );
    let module = d.join("module.so");
    common::run_ok(
        Command::new(CROSS_GXX)
            .args(["-shared", "-fPIC", "-o"])
            .arg(&module)
            .arg(&object),
    );
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-manylinux_2_17_aarch64.whl",
        &[(ARM_MEMBER, std::fs::read(&module).unwrap())],
    );
    assert_run(
        &cuwheel_audit(["--cuda-archs".as_ref(), "9.0".as_ref(), wheel.as_os_str()]),
        EXIT_PASSED,
        &[
            &format!("fat binary {ARM_MEMBER}: sm_90"),
            "ELF files allow manylinux_2_17_aarch64",
        ],
    );
    assert_run(
        &cuwheel_audit([
            "--cuda-archs".as_ref(),
            "8.0,9.0".as_ref(),
            wheel.as_os_str(),
        ]),
        EXIT_FAILED,
        &[ARM_MEMBER, "sm_80"],
    );
}

/// A symbol table records its architecture; the load check judges an
/// aarch64 module with aarch64 tables and refuses x86_64 ones.
#[test]
fn the_load_check_takes_only_tables_of_the_wheels_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let provider_c = "int provided(int x) { return x + 1; }\n";
    let provider = aarch64_gcc(
        d,
        "arm/libprovider.so",
        provider_c,
        &["-shared", "-fPIC", "-Wl,-soname,libprovider.so"],
    );
    let module = cross_shared_object(
        d,
        "module.so",
        "int provided(int);\nvoid *PyInit__ext(void) { return (void *)(long)provided(1); }\n",
        &[
            &format!("-L{}", provider.parent().unwrap().display()),
            "-lprovider",
        ],
    );
    let wheel = write_wheel(
        d,
        "demo-0.1-cp311-cp311-manylinux_2_17_aarch64.whl",
        &[(ARM_MEMBER, module)],
    );
    let arm_table = d.join("provider-aarch64.symbols");
    let made = symbols(&[&provider], &arm_table);
    assert!(made.status.success(), "{made:?}");
    let text = std::fs::read_to_string(&arm_table).unwrap();
    assert!(
        text.contains("\narch aarch64\nlibrary libprovider.so\n"),
        "{text}"
    );

    let audit = |table: &PathBuf| {
        cuwheel_audit([
            "--runtime-provided".to_string(),
            "libprovider.so".to_string(),
            "--torch".to_string(),
            format!("2.11.0={}", table.display()),
            wheel.display().to_string(),
        ])
    };
    assert_run(&audit(&arm_table), EXIT_PASSED, &["torch 2.11.0: loads"]);

    // The same check given an x86_64 table judges nothing and says why.
    let x86_provider = gcc(
        d,
        "x86/libprovider.so",
        provider_c,
        false,
        &["-shared", "-fPIC", "-Wl,-soname,libprovider.so"],
    );
    let x86_table = d.join("provider-x86_64.symbols");
    let made = symbols(&[&x86_provider], &x86_table);
    assert!(made.status.success(), "{made:?}");
    assert_run(
        &audit(&x86_table),
        EXIT_FAILED,
        &[
            "the load check was given symbol tables for another architecture than the ELF \
             files' aarch64: 2.11.0 (x86_64)",
            "extract the tables from the aarch64 builds of torch",
        ],
    );

    // So does `cuwheel load-check` of the bare module.
    let out = Command::new(common::cuwheel_bin())
        .arg("load-check")
        .arg(d.join("module.so"))
        .arg("--torch")
        .arg(format!("2.11.0={}", x86_table.display()))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("another architecture than the ELF files' aarch64: 2.11.0 (x86_64)"),
        "{text}"
    );

    // One table of both architectures' libraries is refused, naming both.
    let mixed = symbols(&[&provider, &x86_provider], &d.join("mixed.symbols"));
    assert!(!mixed.status.success());
    let stderr = String::from_utf8_lossy(&mixed.stderr);
    assert!(
        stderr.contains("arm/libprovider.so is an aarch64 library but")
            && stderr.contains("x86/libprovider.so is an x86_64 one"),
        "{stderr}"
    );
}
