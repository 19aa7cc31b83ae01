//! Cross-check: the CUDA fat-binary facts of `cuwheel::audit::fatbin` on
//! objects and shared libraries built here with nvcc (CUDA 13 from pip's
//! nvidia wheels, host compiler the system g++), for several `-gencode`
//! combinations and compression modes. Each must list exactly the SASS and
//! PTX requested, and agree with NVIDIA's `cuobjdump --list-elf --list-ptx`.

use crate::audit_support;
use crate::common;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::TestEnv;
use cuwheel::audit::archs::ExpectedArchs;
use cuwheel::audit::elf;
use cuwheel::audit::fatbin::{self, Fatbin};

/// How the images of one build must be compressed.
#[derive(Clone, Copy, Debug)]
enum Compression {
    /// Whatever nvcc does by default: not asserted.
    Default,
    None,
    All,
}

struct Case {
    name: &'static str,
    flags: &'static [&'static str],
    sass: &'static [&'static str],
    ptx: &'static [&'static str],
    compression: Compression,
}

const CASES: &[Case] = &[
    Case {
        name: "sm80",
        flags: &["-gencode", "arch=compute_80,code=sm_80"],
        sass: &["sm_80"],
        ptx: &[],
        compression: Compression::Default,
    },
    Case {
        name: "sm80_sm90_ptx90",
        flags: &[
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
        ],
        sass: &["sm_80", "sm_90"],
        ptx: &["compute_90"],
        compression: Compression::Default,
    },
    Case {
        name: "sm80_sm90_ptx90_compress_all",
        flags: &[
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
            "-Xfatbin=-compress-all",
        ],
        sass: &["sm_80", "sm_90"],
        ptx: &["compute_90"],
        compression: Compression::All,
    },
    Case {
        name: "sm80_sm90_ptx90_uncompressed",
        flags: &[
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
            "--compress-mode=none",
        ],
        sass: &["sm_80", "sm_90"],
        ptx: &["compute_90"],
        compression: Compression::None,
    },
    Case {
        name: "sm75_ptx75_sm86_speed",
        flags: &[
            "-gencode",
            "arch=compute_75,code=[sm_75,compute_75]",
            "-gencode",
            "arch=compute_86,code=sm_86",
            "--compress-mode=speed",
        ],
        sass: &["sm_75", "sm_86"],
        ptx: &["compute_75"],
        compression: Compression::Default,
    },
    Case {
        name: "sm90a_sm100f_ptx100f_ptx120_size",
        flags: &[
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-gencode",
            "arch=compute_100f,code=[sm_100f,compute_100f]",
            "-gencode",
            "arch=compute_120,code=compute_120",
            "--compress-mode=size",
        ],
        sass: &["sm_90a", "sm_100f"],
        ptx: &["compute_100f", "compute_120"],
        compression: Compression::Default,
    },
    Case {
        name: "ptx120_only",
        flags: &["-gencode", "arch=compute_120,code=compute_120"],
        sass: &[],
        ptx: &["compute_120"],
        compression: Compression::Default,
    },
];

/// The fat binary of an nvcc output file, parsed by cuwheel.
fn our_fatbin(file: &Path) -> Fatbin {
    let data = std::fs::read(file).unwrap();
    let name = file.display().to_string();
    let section = elf::nv_fatbin_section(&name, &data)
        .unwrap()
        .unwrap_or_else(|| panic!("{name} has no .nv_fatbin section"));
    fatbin::parse(section).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// cuobjdump's listing as (SASS, PTX) names. It names the arch of an
/// image as `sm_XY` for both kinds; a PTX `sm_XY` here is `compute_XY`.
fn cuobjdump(env: &TestEnv, file: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let tool = env.root.join("cuobjdump/bin/cuobjdump");
    assert!(
        tool.is_file(),
        "{} is missing: run `bash tests/prepare.sh`",
        tool.display()
    );
    // cuobjdump exits non-zero when one of the two kinds is absent, so run
    // it once per kind and read what it lists.
    let list = |flag: &str, prefix: &str| -> BTreeSet<String> {
        let out = Command::new(&tool).arg(flag).arg(file).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .map(|l| {
                let arch = l
                    .rsplit('.')
                    .nth(1)
                    .unwrap_or_else(|| panic!("unexpected cuobjdump line `{l}`"));
                arch.to_string()
            })
            .collect()
    };
    let sass = list("--list-elf", "ELF file");
    let ptx = list("--list-ptx", "PTX file")
        .into_iter()
        .map(|a| a.replacen("sm_", "compute_", 1))
        .collect();
    (sass, ptx)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn fatbin_facts_list_exactly_the_requested_sass_and_ptx() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for case in CASES {
        let object_flags: Vec<&str> = ["-c"].iter().chain(case.flags).copied().collect();
        let library_flags: Vec<&str> = ["-shared"].iter().chain(case.flags).copied().collect();
        let object = format!("{}.o", case.name);
        let library = format!("lib{}.so", case.name);
        let builds = [
            audit_support::nvcc(
                &env,
                dir.path(),
                &object,
                audit_support::KERNEL,
                &object_flags,
            ),
            audit_support::nvcc(
                &env,
                dir.path(),
                &library,
                audit_support::KERNEL,
                &library_flags,
            ),
        ];
        for file in &builds {
            let what = format!("{} ({})", case.name, file.display());
            let fatbin = our_fatbin(file);
            let sass: BTreeSet<String> = fatbin.sass().iter().map(|a| format!("sm_{a}")).collect();
            let ptx: BTreeSet<String> = fatbin
                .ptx()
                .iter()
                .map(|a| format!("compute_{a}"))
                .collect();
            assert_eq!(sass, set(case.sass), "{what}: SASS");
            assert_eq!(ptx, set(case.ptx), "{what}: PTX");

            // cuobjdump drops the family suffix of SASS images (an sm_100f
            // cubin is listed as sm_100) but keeps it for PTX.
            let (their_sass, their_ptx) = cuobjdump(&env, file);
            let family_free: BTreeSet<String> = sass
                .iter()
                .map(|s| s.trim_end_matches('f').to_string())
                .collect();
            assert_eq!(family_free, their_sass, "{what}: SASS against cuobjdump");
            assert_eq!(ptx, their_ptx, "{what}: PTX against cuobjdump");

            match case.compression {
                Compression::Default => {}
                Compression::None => assert!(
                    fatbin.images.iter().all(|i| !i.compressed),
                    "{what}: --compress-mode=none left compressed images: {:?}",
                    fatbin.images
                ),
                Compression::All => assert!(
                    fatbin.images.iter().all(|i| i.compressed),
                    "{what}: -compress-all left uncompressed images: {:?}",
                    fatbin.images
                ),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * CASES.len());
}

#[test]
fn two_translation_units_give_two_containers_whose_union_is_reported() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = audit_support::nvcc(
        &env,
        d,
        "first.o",
        audit_support::KERNEL,
        &["-c", "-gencode", "arch=compute_80,code=sm_80"],
    );
    let second_source = audit_support::KERNEL
        .replace("scale", "shift")
        .replace("*= a", "+= a");
    let second = audit_support::nvcc(
        &env,
        d,
        "second.o",
        &second_source,
        &["-c", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
    );
    let library = d.join("libtwo.so");
    common::run_ok(
        Command::new("g++")
            .arg("-shared")
            .arg("-o")
            .arg(&library)
            .arg(&first)
            .arg(&second)
            .arg(env.cuda_home().join("lib/libcudart.so.13")),
    );
    let fatbin = our_fatbin(&library);
    assert_eq!(fatbin.containers, 2);
    assert_eq!(fatbin.image_names(), ["sm_80", "sm_90", "compute_90"]);
    let (sass, ptx) = cuobjdump(&env, &library);
    assert_eq!(sass, set(&["sm_80", "sm_90"]));
    assert_eq!(ptx, set(&["compute_90"]));
}

/// The plan's own `-gencode` flags for `9.0a` and `10.0f+PTX` compile (the
/// sm_90a pass sees its feature macro), and the audit, reading the same
/// list as the config, finds exactly those images; a list asking for plain
/// `9.0` is told sm_90 is missing and sm_90a unexpected.
#[test]
fn the_plans_arch_specific_gencode_builds_what_the_audit_expects() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let archs: Vec<cuwheel::spec::CudaArch> = ["8.0", "9.0a", "10.0f+PTX"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    let gencode = cuwheel::plan::kernel::gencode_flags(&archs);
    let source = format!(
        "{}\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n\
         #error \"the sm_90a pass lacks __CUDA_ARCH_FEAT_SM90_ALL\"\n#endif\n",
        audit_support::KERNEL
    );
    let mut flags = vec!["-c"];
    flags.extend(gencode.iter().map(String::as_str));
    let object = audit_support::nvcc(&env, dir.path(), "specific.o", &source, &flags);
    let fatbin = our_fatbin(&object);
    assert_eq!(
        fatbin.image_names(),
        ["sm_80", "sm_90a", "sm_100f", "compute_100f"]
    );
    let expected = ExpectedArchs::parse(&["8.0", "9.0a", "10.0f+PTX"]).unwrap();
    let mismatch = expected.compare(&fatbin);
    assert!(mismatch.is_empty(), "{mismatch:?}");
    let plain = ExpectedArchs::parse(&["8.0", "9.0", "10.0f+PTX"]).unwrap();
    let mismatch = plain.compare(&fatbin);
    assert_eq!(mismatch.missing, ["sm_90"]);
    assert_eq!(mismatch.extra, ["sm_90a"]);
}

/// nvcc compresses the images of a fat binary (`--compress-mode`): a build path in the device
/// line info is then invisible in the file's bytes. The audit reads the decompressed images too,
/// and its size report gives each arch's weight.
#[test]
fn a_store_path_inside_a_compressed_image_is_found_and_each_arch_is_weighed() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    // The source sits at a path that looks like a store path, as a build's would without
    // cuwheel's mapping; -lineinfo puts it into the cubin.
    let src_dir = dir
        .path()
        .join("nix/store/0123456789abcdfghijklmnpqrsvwxyz-source");
    std::fs::create_dir_all(&src_dir).unwrap();
    let wheel_of = |mode: &str| {
        let library = audit_support::nvcc(
            &env,
            &src_dir,
            &format!("lib{mode}.so"),
            audit_support::KERNEL,
            &[
                "-shared",
                "-lineinfo",
                &format!("--compress-mode={mode}"),
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=[sm_90,compute_90]",
            ],
        );
        let bytes = std::fs::read(library).unwrap();
        let out = dir.path().join(mode);
        std::fs::create_dir_all(&out).unwrap();
        audit_support::write_wheel(
            &out,
            "demo-0.1-cp311-cp311-linux_x86_64.whl",
            &[("demo/libkernels.so", bytes)],
        )
    };
    for mode in ["size", "none"] {
        let wheel = wheel_of(mode);
        // `--sizes`: the deflated column is computed only when asked.
        let (_, report) =
            audit_support::audit_json([std::ffi::OsStr::new("--sizes"), wheel.as_os_str()]);
        let leaks: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "leak")
            .map(|f| f["problem"].as_str().unwrap().to_string())
            .collect();
        let in_image = leaks
            .iter()
            .any(|p| p.starts_with("its compressed sm_90 image holds"));
        if mode == "size" {
            assert!(in_image, "{mode}: {leaks:#?}");
        } else {
            assert!(!in_image, "{mode}: {leaks:#?}");
            assert!(
                leaks
                    .iter()
                    .any(|p| p.contains("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-source")),
                "{mode}: {leaks:#?}"
            );
        }
        // The size report: the file's size, and one row per arch, SASS and PTX of 9.0 together.
        let size = &report["size"];
        let file_size = std::fs::metadata(&wheel).unwrap().len();
        assert_eq!(size["wheel_bytes"], file_size, "{size}");
        let archs: Vec<(&str, Vec<&str>)> = size["archs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let images = a["images"].as_array().unwrap();
                (
                    a["arch"].as_str().unwrap(),
                    images.iter().map(|i| i.as_str().unwrap()).collect(),
                )
            })
            .collect();
        assert_eq!(
            archs,
            [
                ("sm_80", vec!["sm_80"]),
                ("sm_90", vec!["sm_90", "compute_90"])
            ],
            "{size}"
        );
        for arch in size["archs"].as_array().unwrap() {
            let (stored, deflated) = (
                arch["stored_bytes"].as_u64().unwrap(),
                arch["deflated_bytes"].as_u64().unwrap(),
            );
            assert!(stored > 0 && deflated > 0 && deflated < file_size, "{arch}");
        }
        eprintln!("--compress-mode={mode}: {size}");
    }
}
