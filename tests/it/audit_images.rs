//! `cuwheel audit` (the real binary) on the second round of hostile wheels:
//! compressed fat-binary images that are random bytes, that claim 2^62 or
//! 1 GiB bytes in their header, that hide a store path behind a header
//! giving the wrong size (in `.nv_fatbin` or in a fat binary embedded
//! elsewhere), and Zstandard and LZ4 bombs, each run with its
//! address space capped at 1 GiB; a wheel tagged for two architectures
//! with one x86_64 file; and torch's RPATH entries into where its
//! requirements may install. The inputs are crafted here (fat-binary
//! containers included into a gcc-built extension); each test asserts the
//! exit status and the exact message.

use std::path::{Path, PathBuf};

use crate::audit_support::{
    AuditRun, EXIT_FAILED, EXIT_PASSED, EXT_MEMBER, EXTENSION_C, FATBIN_FLAGS, FATBIN_LZ4,
    FATBIN_ZSTD, FatbinEntry, assert_run, cuwheel_audit, cuwheel_audit_limited,
    extension_with_bytes_in, extension_with_fatbin, extension_with_sections, fatbin_container, gcc,
    write_wheel, write_wheel_with_metadata,
};

const GIB: u64 = 1 << 30;
const STORE_PATH: &str = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-cuda-13.0/include/x.h";

/// The `leak` finding for `image` of `member` holding [`STORE_PATH`] once.
fn store_path_leak(member: &str, image: &str) -> String {
    format!(
        "[build path] {member}: its compressed {image} image holds 1 build-machine path once \
         decompressed, e.g. `.file 1 \"{STORE_PATH}\"`"
    )
}

/// A compressed image's data holding [`STORE_PATH`] once, as nvcc's line
/// info does; its LZ4 block; and the block's size as stored (padded to 8).
fn store_path_lz4() -> (Vec<u8>, Vec<u8>, usize) {
    let data = format!("\0.file 1 \"{STORE_PATH}\"\0").into_bytes();
    let block = lz4_flex::block::compress(&data);
    let stored = block.len().next_multiple_of(8);
    (data, block, stored)
}

/// Where `module`'s bytes hold the fat-binary container magic.
fn magic_offsets(module: &[u8]) -> Vec<usize> {
    let magic = 0xBA55_ED50u32.to_le_bytes();
    (0..module.len() - 3)
        .filter(|&i| module[i..i + 4] == magic)
        .collect()
}

/// The `fatbin-image` finding for an LZ4 `image` of `member`, `stored`
/// bytes, whose header claims `claimed` bytes but which gives `real`.
fn lz4_size_mismatch(
    member: &str,
    image: &str,
    stored: usize,
    claimed: u64,
    real: usize,
) -> String {
    format!(
        "{member}: its {image} image (LZ4-compressed, {stored} bytes stored) claims {claimed} \
         bytes decompressed in its header but decompresses to {real}"
    )
}

/// A wheel whose extension module's `.nv_fatbin` holds `entries`.
fn wheel_with_images(dir: &Path, entries: &[FatbinEntry]) -> PathBuf {
    let module = extension_with_fatbin(dir, &fatbin_container(entries));
    write_wheel(
        dir,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, module)],
    )
}

/// A compressed SASS image of sm_90.
fn sm_90(flags: u64, payload: Vec<u8>, claimed: u64) -> FatbinEntry {
    FatbinEntry {
        kind: 2,
        arch: 90,
        flags: FATBIN_FLAGS | flags,
        payload,
        claimed,
    }
}

/// A Zstandard frame of `size` zero bytes in RLE blocks of 128 KiB: a few
/// bytes per block, however large.
fn zstd_zeros(size: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    assert_eq!(size % BLOCK, 0);
    // magic; frame header: no content size, a 2 MiB window (log 21)
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, (21 - 10) << 3];
    let blocks = size / BLOCK;
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | ((BLOCK as u32) << 3); // an RLE block
        frame.extend(&header.to_le_bytes()[..3]);
        frame.push(0);
    }
    frame
}

/// An LZ4 block of `size` zero bytes: one literal zero, one match copying it
/// (`size` - 2 bytes, its length in 255s), one last literal.
fn lz4_zeros(size: u64) -> Vec<u8> {
    let mut block = vec![0x1F, 0x00, 0x01, 0x00];
    let mut rest = size - 2 - 4 - 15;
    while rest >= 255 {
        block.push(255);
        rest -= 255;
    }
    block.push(rest as u8);
    block.extend([0x10, 0x00]);
    block
}

fn audit_within_1_gib(wheel: &Path) -> AuditRun {
    let run = cuwheel_audit_limited(GIB, [wheel]);
    assert!(!run.stderr.contains("memory"), "{}", run.stderr);
    run
}

#[test]
fn an_image_of_random_bytes_flagged_zstd_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let random: Vec<u8> = (0..64u32).map(|i| (i * 97 + 13) as u8).collect();
    let wheel = wheel_with_images(dir.path(), &[sm_90(FATBIN_ZSTD, random, 4096)]);
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[&format!(
            "[fat binary image] {EXT_MEMBER}: its sm_90 image (Zstandard-compressed, 64 bytes \
             stored) does not decompress (Zstandard: Unknown frame descriptor, after 0 bytes), so \
             the bytes past those were not checked for build paths"
        )],
    );
}

#[test]
fn a_real_frame_claiming_2_pow_62_bytes_is_a_size_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![7u8; 5000];
    let frame = zstd::bulk::compress(&data, 3).unwrap();
    let stored = frame.len().next_multiple_of(8);
    let wheel = wheel_with_images(dir.path(), &[sm_90(FATBIN_ZSTD, frame, 1 << 62)]);
    assert_run(
        &audit_within_1_gib(&wheel),
        EXIT_FAILED,
        &[&format!(
            "{EXT_MEMBER}: its sm_90 image (Zstandard-compressed, {stored} bytes stored) claims \
             4611686018427387904 bytes decompressed in its header but decompresses to 5000"
        )],
    );
}

#[test]
fn an_lz4_image_claiming_1_gib_allocates_nothing_and_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let data = b"abcdefgh".repeat(100);
    let block = lz4_flex::block::compress(&data);
    let stored = block.len().next_multiple_of(8);
    let wheel = wheel_with_images(dir.path(), &[sm_90(FATBIN_LZ4, block, GIB)]);
    assert_run(
        &audit_within_1_gib(&wheel),
        EXIT_FAILED,
        &[&lz4_size_mismatch(EXT_MEMBER, "sm_90", stored, GIB, 800)],
    );
}

#[test]
fn a_store_path_in_a_mis_sized_image_fails_the_leak_check() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("\0.file 1 \"{STORE_PATH}\"\0").into_bytes();
    for (flags, payload) in [
        (FATBIN_ZSTD, zstd::bulk::compress(&data, 3).unwrap()),
        (FATBIN_LZ4, lz4_flex::block::compress(&data)),
    ] {
        for claimed in [data.len() as u64, 16] {
            let wheel = wheel_with_images(dir.path(), &[sm_90(flags, payload.clone(), claimed)]);
            let run = cuwheel_audit([&wheel]);
            assert_run(&run, EXIT_FAILED, &[&store_path_leak(EXT_MEMBER, "sm_90")]);
            let mismatch = run.stdout.contains("claims 16 bytes decompressed");
            assert_eq!(mismatch, claimed == 16, "{}", run.stdout);
        }
    }
}

/// A wheel whose extension module embeds a fat binary of `entries` in
/// `.rodata` (as a library does for `cuModuleLoadData`), not in
/// `.nv_fatbin`; and the byte of the module where that fat binary starts.
fn wheel_with_embedded_images(dir: &Path, entries: &[FatbinEntry]) -> (PathBuf, usize) {
    let mut rodata = b"a table!".to_vec();
    rodata.extend(fatbin_container(entries));
    let module = extension_with_bytes_in(dir, ".rodata", &rodata);
    let at = magic_offsets(&module);
    assert_eq!(at.len(), 1, "one fat binary in the module");
    let wheel = write_wheel(
        dir,
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, module)],
    );
    (wheel, at[0])
}

#[test]
fn a_fat_binary_outside_nv_fatbin_is_decompressed_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    // honest, and holding no build path: it passes
    let clean = b"\0.file 1 \"x.cu\"\0".repeat(8);
    let payload = lz4_flex::block::compress(&clean);
    let (wheel, _) = wheel_with_embedded_images(
        dir.path(),
        &[sm_90(FATBIN_LZ4, payload, clean.len() as u64)],
    );
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);

    // a store path, under a header giving the wrong size: both are found
    let (data, payload, stored) = store_path_lz4();
    let (wheel, at) = wheel_with_embedded_images(dir.path(), &[sm_90(FATBIN_LZ4, payload, 16)]);
    let image = format!("sm_90 (in a fat binary at byte {at}, outside .nv_fatbin)");
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &store_path_leak(EXT_MEMBER, &image),
            &lz4_size_mismatch(EXT_MEMBER, &image, stored, 16, data.len()),
        ],
    );
}

#[test]
fn a_library_past_the_in_memory_size_has_every_image_checked() {
    // Over 32 MiB, a library is parsed from a temporary file and its
    // compressed images are decompressed while it still streams: the
    // findings are those of a small one.
    let dir = tempfile::tempdir().unwrap();
    let (data, payload, stored) = store_path_lz4();
    // 36 MiB that deflate about 50:1 (the audit refuses a large member
    // that claims more than 100:1 as a zip bomb): 64 varied bytes per 4 KiB
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut varied = vec![0u8; 36 << 20];
    for block in varied.chunks_mut(4096) {
        for byte in &mut block[..64] {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
    }
    let filler = FatbinEntry {
        kind: 2,
        arch: 80,
        flags: FATBIN_FLAGS,
        payload: varied,
        claimed: 0,
    };
    let mut section = fatbin_container(&[filler]);
    section.extend(fatbin_container(&[sm_90(FATBIN_LZ4, payload.clone(), 16)]));
    let mut rodata = b"a table!".to_vec();
    rodata.extend(fatbin_container(&[sm_90(
        FATBIN_LZ4,
        payload,
        data.len() as u64,
    )]));
    let module = extension_with_sections(
        dir.path(),
        &[(".nv_fatbin", &section[..]), (".rodata", &rodata[..])],
    );
    assert!(module.len() > 36 << 20);
    let hits = magic_offsets(&module);
    assert_eq!(hits.len(), 3, "three fat binaries in the module");
    // .rodata comes before .nv_fatbin in gcc's layout
    let outside = format!(
        "sm_90 (in a fat binary at byte {}, outside .nv_fatbin)",
        hits[0]
    );
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(EXT_MEMBER, module)],
    );
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &store_path_leak(EXT_MEMBER, "sm_90"),
            &store_path_leak(EXT_MEMBER, &outside),
            &lz4_size_mismatch(EXT_MEMBER, "sm_90", stored, 16, data.len()),
        ],
    );
}

#[test]
fn a_standalone_fat_binary_has_its_images_checked() {
    // A `.fatbin` file shipped for cuModuleLoad: no ELF around it.
    let dir = tempfile::tempdir().unwrap();
    let (data, payload, stored) = store_path_lz4();
    let fatbin = fatbin_container(&[sm_90(FATBIN_LZ4, payload, 16)]);
    let member = "demo/kernels.fatbin";
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(member, fatbin)],
    );
    let image = "sm_90 (in a fat binary at byte 0)";
    assert_run(
        &cuwheel_audit([&wheel]),
        EXIT_FAILED,
        &[
            &store_path_leak(member, image),
            &lz4_size_mismatch(member, image, stored, 16, data.len()),
        ],
    );

    // a file named so that holds no container is passed over
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-cp311-cp311-linux_x86_64.whl",
        &[(member, b"not a fat binary".to_vec())],
    );
    assert_run(&cuwheel_audit([&wheel]), EXIT_PASSED, &["PASSED"]);
}

#[test]
fn zstd_bombs_of_1_gib_each_audit_within_1_gib() {
    let dir = tempfile::tempdir().unwrap();
    // four honest 1 GiB images (the most one may hold): they pass
    let entries: Vec<FatbinEntry> = (0..4)
        .map(|_| sm_90(FATBIN_ZSTD, zstd_zeros(GIB), GIB))
        .collect();
    let wheel = wheel_with_images(dir.path(), &entries);
    assert!(std::fs::metadata(&wheel).unwrap().len() < 64 << 10);
    assert_run(&audit_within_1_gib(&wheel), EXIT_PASSED, &["PASSED"]);

    // one that holds 2 GiB, whatever it claims, stops at 1 GiB
    let wheel = wheel_with_images(dir.path(), &[sm_90(FATBIN_ZSTD, zstd_zeros(2 * GIB), 4096)]);
    let stored = zstd_zeros(2 * GIB).len().next_multiple_of(8);
    assert_run(
        &audit_within_1_gib(&wheel),
        EXIT_FAILED,
        &[&format!(
            "{EXT_MEMBER}: its sm_90 image (Zstandard-compressed, {stored} bytes stored) \
             decompresses to more than 1073741824 bytes (its header claims 4096); the bytes past \
             those were not checked for build paths"
        )],
    );
}

#[test]
fn an_lz4_bomb_stops_at_1_gib_within_1_gib() {
    let dir = tempfile::tempdir().unwrap();
    let block = lz4_zeros(GIB + (64 << 20));
    let stored = block.len().next_multiple_of(8);
    let wheel = wheel_with_images(dir.path(), &[sm_90(FATBIN_LZ4, block, 4096)]);
    assert_run(
        &audit_within_1_gib(&wheel),
        EXIT_FAILED,
        &[&format!(
            "{EXT_MEMBER}: its sm_90 image (LZ4-compressed, {stored} bytes stored) decompresses \
             to more than 1073741824 bytes (its header claims 4096)"
        )],
    );
}

#[test]
fn a_wheel_tagged_for_two_archs_is_judged_by_its_elf_files() {
    let dir = tempfile::tempdir().unwrap();
    let module = gcc(
        dir.path(),
        "ext.so",
        EXTENSION_C,
        false,
        &["-shared", "-fPIC"],
    );
    let wheel = write_wheel(
        dir.path(),
        "demo-0.1-cp311-cp311-manylinux_2_17_x86_64.manylinux_2_17_aarch64.whl",
        &[(EXT_MEMBER, std::fs::read(module).unwrap())],
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            "FAILED (1 problem)",
            "[platform tag] the wheel is tagged `manylinux_2_17_aarch64`, for aarch64, but its \
             ELF files are for x86_64",
            "fix: a wheel is for one architecture: tag it manylinux_2_5_x86_64 only, and build a \
             separate wheel for aarch64",
        ],
    );
    assert!(
        !run.stdout.contains("is an x86_64 ELF file"),
        "{}",
        run.stdout
    );
}

#[test]
fn torch_rpaths_into_where_its_requirements_install_are_notes_and_absolute_ones_fail() {
    let dir = tempfile::tempdir().unwrap();
    let rpath =
        "$ORIGIN/../../nvidia/cusparselt/lib:$ORIGIN/../../cusparselt/lib:/usr/local/cuda/lib64";
    let module = gcc(
        dir.path(),
        "ext.so",
        EXTENSION_C,
        false,
        &[
            "-shared",
            "-fPIC",
            &format!("-Wl,-rpath,{rpath}"),
            "-Wl,--disable-new-dtags",
        ],
    );
    let library = std::fs::read(module).unwrap();
    let wheel = write_wheel_with_metadata(
        dir.path(),
        "torchlike-0.1-cp311-cp311-linux_x86_64.whl",
        &[
            ("torchlike/lib/libtorchlike.so", library.clone()),
            ("torchlike/_C.so", library),
        ],
        "Requires-Dist: nvidia-cusparselt-cu12==0.7.1; platform_system == \"Linux\"\n",
    );
    let run = cuwheel_audit([&wheel]);
    assert_run(
        &run,
        EXIT_FAILED,
        &[
            "FAILED (2 problems)",
            "[RPATH/RUNPATH] torchlike/_C.so: RPATH entry `/usr/local/cuda/lib64` leaves the \
             wheel: an absolute path on the build machine",
            "[RPATH/RUNPATH] torchlike/lib/libtorchlike.so: RPATH entry `/usr/local/cuda/lib64` \
             leaves the wheel: an absolute path on the build machine",
            "1 RPATH/RUNPATH entry points to cusparselt/lib/, outside the wheel, where \
             `nvidia-cusparselt-cu12==0.7.1` (in its Requires-Dist) may install its libraries; \
             the wheel does not rely on it (dead entries unless it does)",
            "1 RPATH/RUNPATH entry points to nvidia/cusparselt/lib/, outside the wheel but \
             installed beside it by `nvidia-cusparselt-cu12==0.7.1`",
        ],
    );
    assert!(
        !run.stdout.contains("cusparselt/lib` leaves"),
        "{}",
        run.stdout
    );
}
