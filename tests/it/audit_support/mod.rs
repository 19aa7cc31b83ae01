//! What the `audit_*` tests share: compiling shared objects with the system
//! gcc, building them with nvcc, writing wheels with a correct RECORD, and
//! running `cuwheel audit`.

// The first tier uses a part of this; the integration tier, all of it.
#![cfg_attr(not(feature = "integration"), allow(dead_code))]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::common::{self, TestEnv};

/// `cuwheel audit`'s exit statuses.
pub const EXIT_PASSED: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_FAILED: i32 = 3;

/// An extension module `_ext` for the crafted wheels: defines `PyInit__ext`.
pub const EXTENSION_C: &str = r#"
#include <string.h>
static char name[8];
void *PyInit__ext(void) { strcpy(name, "_ext"); return name; }
"#;

pub const EXT_MEMBER: &str = "demo/_ext.cpython-311-x86_64-linux-gnu.so";
/// Asserts the exit status and that the output holds each of `needles`.
pub fn assert_run(run: &AuditRun, code: i32, needles: &[&str]) {
    let all = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.code, code,
        "exit status\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(all.contains(needle), "`{needle}` not in the output:\n{all}");
    }
}

/// Compiles `source` (C, or C++ when `cxx`) into `dir/output` with `args` appended.
pub fn gcc(dir: &Path, output: &str, source: &str, cxx: bool, args: &[&str]) -> PathBuf {
    let (compiler, ext) = if cxx { ("g++", "cpp") } else { ("gcc", "c") };
    compile(compiler, ext, dir, output, source, args)
}

/// [`gcc`] of C for aarch64, with Debian's cross compiler.
pub fn aarch64_gcc(dir: &Path, output: &str, source: &str, args: &[&str]) -> PathBuf {
    compile("aarch64-linux-gnu-gcc", "c", dir, output, source, args)
}

fn compile(
    compiler: &str,
    ext: &str,
    dir: &Path,
    output: &str,
    source: &str,
    args: &[&str],
) -> PathBuf {
    let stem = output.replace(['/', '.'], "_");
    let src = dir.join(format!("{stem}.{ext}"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(output);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    common::run_ok(
        Command::new(compiler)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .args(args),
    );
    out
}

/// Builds `source` (CUDA) with the test toolkit's nvcc into `dir/output`;
/// `args` carry `-c` or `-shared` and the `-gencode` flags.
pub fn nvcc(env: &TestEnv, dir: &Path, output: &str, source: &str, args: &[&str]) -> PathBuf {
    let src = dir.join(format!("{}.cu", output.replace('.', "_")));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(output);
    let nvcc = env.cuda_home().join("bin/nvcc");
    assert!(
        nvcc.is_file(),
        "{} is missing: run `bash tests/prepare.sh`",
        nvcc.display()
    );
    common::run_ok(
        Command::new(nvcc)
            .args(["-ccbin", "g++", "-Xcompiler", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .args(args),
    );
    out
}

/// A small CUDA kernel and a host function that launches it.
pub const KERNEL: &str = r#"
__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" void launch_scale(float *x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"#;

/// The `sha256=` digest RECORD uses: urlsafe base64 without padding.
fn record_hash(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// Writes the wheel `dir/file_name` holding `members` plus a `.dist-info`
/// with METADATA, WHEEL (one Tag line per tag of the file name) and a
/// correct RECORD. Members may add more `.dist-info` files.
pub fn write_wheel(dir: &Path, file_name: &str, members: &[(&str, Vec<u8>)]) -> PathBuf {
    write_wheel_with_metadata(dir, file_name, members, "")
}

/// [`write_wheel`] with `extra` (whole lines, e.g. `Requires-Dist: x\n`)
/// appended to METADATA.
pub fn write_wheel_with_metadata(
    dir: &Path,
    file_name: &str,
    members: &[(&str, Vec<u8>)],
    extra: &str,
) -> PathBuf {
    let stem = file_name.strip_suffix(".whl").expect("a .whl name");
    let parts: Vec<&str> = stem.split('-').collect();
    let [name, version, ..] = parts[..] else {
        panic!("{file_name}: expected name-version-python-abi-platform.whl");
    };
    let metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}");
    write_wheel_with_metadata_text(dir, file_name, members, &metadata)
}

/// [`write_wheel`] with `metadata` as the whole METADATA text.
pub fn write_wheel_with_metadata_text(
    dir: &Path,
    file_name: &str,
    members: &[(&str, Vec<u8>)],
    metadata: &str,
) -> PathBuf {
    let stem = file_name.strip_suffix(".whl").expect("a .whl name");
    let parts: Vec<&str> = stem.split('-').collect();
    let [name, version, python, abi, platform] = parts[..] else {
        panic!("{file_name}: expected name-version-python-abi-platform.whl");
    };
    let dist_info = format!("{name}-{version}.dist-info");
    let mut tags = Vec::new();
    for p in python.split('.') {
        for a in abi.split('.') {
            for plat in platform.split('.') {
                tags.push(format!("Tag: {p}-{a}-{plat}\n"));
            }
        }
    }
    let mut all: Vec<(String, Vec<u8>)> = members
        .iter()
        .map(|(n, d)| (n.to_string(), d.clone()))
        .collect();
    all.push((
        format!("{dist_info}/METADATA"),
        metadata.as_bytes().to_vec(),
    ));
    all.push((
        format!("{dist_info}/WHEEL"),
        format!(
            "Wheel-Version: 1.0\nGenerator: cuwheel-tests\nRoot-Is-Purelib: false\n{}",
            tags.concat()
        )
        .into_bytes(),
    ));
    let mut record = String::new();
    for (n, d) in &all {
        record.push_str(&format!("{n},{},{}\n", record_hash(d), d.len()));
    }
    record.push_str(&format!("{dist_info}/RECORD,,\n"));
    all.push((format!("{dist_info}/RECORD"), record.into_bytes()));

    let path = dir.join(file_name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    for (n, d) in &all {
        zip.start_file(n.as_str(), options).unwrap();
        zip.write_all(d).unwrap();
    }
    zip.finish().unwrap();
    path
}

/// The result of one `cuwheel audit` run.
pub struct AuditRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cuwheel audit ARGS...`.
pub fn cuwheel_audit<I, S>(args: I) -> AuditRun
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(common::cuwheel_bin())
        .arg("audit")
        .args(args)
        .output()
        .expect("cannot run the cuwheel binary");
    AuditRun {
        code: out.status.code().expect("cuwheel exited by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cuwheel audit --json ARGS...` and returns the one report.
pub fn audit_json<I, S>(args: I) -> (i32, serde_json::Value)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut all: Vec<std::ffi::OsString> = vec!["--json".into()];
    all.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
    let run = cuwheel_audit(all);
    let reports: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "cuwheel audit --json printed no JSON ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    });
    let reports = reports.as_array().expect("a JSON array of reports");
    assert_eq!(reports.len(), 1, "one report expected: {}", run.stdout);
    (run.code, reports[0].clone())
}

/// Runs `cuwheel audit ARGS...` with its address space capped at
/// `address_space` bytes (`prlimit --as`): an allocation past it fails, so
/// the run shows whether memory stays bounded.
pub fn cuwheel_audit_limited<I, S>(address_space: u64, args: I) -> AuditRun
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new("prlimit")
        .arg(format!("--as={address_space}"))
        .arg(common::cuwheel_bin())
        .arg("audit")
        .args(args)
        .output()
        .expect("cannot run prlimit");
    AuditRun {
        code: out
            .status
            .code()
            .expect("cuwheel audit was killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The fat-binary entry flags nvcc sets: 64-bit, Linux host; LZ4 or
/// Zstandard compression; arch-specific (`sm_90a`).
pub const FATBIN_FLAGS: u64 = 0x11;
pub const FATBIN_LZ4: u64 = 0x2000;
pub const FATBIN_ZSTD: u64 = 0x8000;
pub const FATBIN_ARCH_SPECIFIC: u64 = 0x10_0000;

/// One entry of a crafted fat-binary container.
pub struct FatbinEntry {
    /// 1 PTX, 2 SASS (cubin).
    pub kind: u16,
    /// 90 for sm_90.
    pub arch: u32,
    pub flags: u64,
    /// As stored (compressed when `flags` say so).
    pub payload: Vec<u8>,
    /// The decompressed size the header claims.
    pub claimed: u64,
}

impl FatbinEntry {
    /// An uncompressed SASS image of `arch` with an 8-byte payload.
    pub fn sass(arch: u32, flags: u64) -> FatbinEntry {
        FatbinEntry {
            kind: 2,
            arch,
            flags,
            payload: vec![0xAB; 8],
            claimed: 0,
        }
    }
}

/// A fat-binary container as nvcc lays it out (64-byte entry headers, each
/// payload padded to 8 bytes, a compressed one's length before the padding
/// in the header).
pub fn fatbin_container(entries: &[FatbinEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let mut payload = e.payload.clone();
        payload.resize(payload.len().next_multiple_of(8), 0);
        let mut header = vec![0u8; 64];
        header[0..2].copy_from_slice(&e.kind.to_le_bytes());
        header[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        header[4..8].copy_from_slice(&64u32.to_le_bytes());
        header[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        // the compressed data's length before the padding, as nvcc gives it
        let compressed = if e.flags & (FATBIN_LZ4 | FATBIN_ZSTD) != 0 {
            e.payload.len() as u32
        } else {
            0
        };
        header[16..20].copy_from_slice(&compressed.to_le_bytes());
        header[28..32].copy_from_slice(&e.arch.to_le_bytes());
        header[40..48].copy_from_slice(&e.flags.to_le_bytes());
        header[56..64].copy_from_slice(&e.claimed.to_le_bytes());
        body.extend(header);
        body.extend(payload);
    }
    let mut out = Vec::new();
    out.extend(0xBA55_ED50u32.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend((body.len() as u64).to_le_bytes());
    out.extend(body);
    out
}

/// The extension module [`EXTENSION_C`] built by gcc with `section` as its
/// `.nv_fatbin` (included by the assembler, so a section of megabytes
/// compiles as fast as one of bytes).
pub fn extension_with_fatbin(dir: &Path, section: &[u8]) -> Vec<u8> {
    extension_with_bytes_in(dir, ".nv_fatbin", section)
}

/// A gcc-built extension module holding `bytes` in its section `name`
/// (8-byte aligned), as a library embeds a fat binary for the driver to load.
pub fn extension_with_bytes_in(dir: &Path, name: &str, bytes: &[u8]) -> Vec<u8> {
    extension_with_sections(dir, &[(name, bytes)])
}

/// [`extension_with_bytes_in`] with several sections, each `(name, bytes)`.
pub fn extension_with_sections(dir: &Path, sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut source = String::new();
    for (i, (name, bytes)) in sections.iter().enumerate() {
        let bin = dir.join(format!("section-{i}.bin"));
        std::fs::write(&bin, bytes).unwrap();
        source.push_str(&format!(
            "__asm__(\".section {name},\\\"a\\\"\\n.balign 8\\n.incbin \\\"{}\\\"\\n.previous\");\n",
            bin.display()
        ));
    }
    source.push_str(EXTENSION_C);
    std::fs::read(gcc(
        dir,
        "fatbin_ext.so",
        &source,
        false,
        &["-shared", "-fPIC"],
    ))
    .unwrap()
}
