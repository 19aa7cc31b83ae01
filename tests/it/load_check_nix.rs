//! The load check on real torch releases, from the artifacts the demo's lock
//! pins (in the Nix store after `bash tests/prepare.sh`) and toolchains the
//! flake builds from them:
//! - symbol tables of torch 2.11.0's and 2.9.1's wheels, the CUDA 13.0
//!   runtime wheel and the demo's baseline sysroot (Debian bullseye) agree
//!   with binutils' `nm -D` and round-trip through their file format;
//! - a stable-ABI module compiled here with the pinned gcc against torch
//!   2.11's headers loads with torch 2.11 and not with 2.9.1 (naming a
//!   missing shim function), and binds to nothing outside the stable shim;
//! - the same module with one c10 symbol still loads with 2.11, but fails
//!   the stable-ABI check with that symbol named (library and `cuwheel
//!   load-check`);
//! - the demo's cu130-py313-torch211 wheel loads with torch 2.11 and not
//!   with 2.9.1; its Nix-built audit ran the load check against torch 2.11
//!   alone, and its compatibility node (`compat.<cell>`) against every CUDA
//!   13 release of the lock;
//! - `cuwheel audit` of a wheel holding the stable-ABI module passes with
//!   torch 2.11.0, 2.14.1 and 2.15.0 claimed; with the c10 symbol it fails,
//!   naming it.

use crate::audit_support;
use crate::common;
use crate::common::demo;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::flake::installable;
use cuwheel::audit::elf::{self, ElfFacts};
use cuwheel::audit::load::{self, Linker, Provider, WheelObject, stable};
use cuwheel::audit::loader::{self, LoadedObject};
use cuwheel::audit::symbols::{self, SymbolTable};
use cuwheel::lock::format::Lock;
use cuwheel::store::hash::{Hash, HashAlgo};
use cuwheel::store::path::{FileIngestion, fixed_output_path};

const TORCH_211: &str = "torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl";
const TORCH_291: &str = "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl";
const CUDA_RUNTIME: &str =
    "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";

/// The store path of an artifact the demo's lock pins, which must be there.
fn artifact(name: &str) -> PathBuf {
    let lock = Lock::read(&demo().join("cuwheel.lock")).unwrap();
    let pinned = &lock.artifacts[name];
    let hash = Hash::parse(&pinned.sha256, Some(HashAlgo::Sha256)).unwrap();
    let path = PathBuf::from(
        fixed_output_path(FileIngestion::Flat, &hash, name)
            .unwrap()
            .to_string(),
    );
    assert!(
        path.exists(),
        "{} is not in the store: run `bash tests/prepare.sh` (it runs `cuwheel fetch`)",
        path.display()
    );
    path
}

/// The output of a flake attribute, built (or found built) once.
fn built(attr: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let cache = BUILT.get_or_init(Default::default);
    if let Some(path) = cache.lock().unwrap().get(attr) {
        return path.clone();
    }
    let path = crate::common::flake::build_out(&[&installable(attr)]);
    cache.lock().unwrap().insert(attr.to_string(), path.clone());
    path
}

fn toolchain(name: &str) -> PathBuf {
    built(&format!("legacyPackages.x86_64-linux.toolchains.{name}"))
}

/// Each input's table, extracted once per test run.
fn table(input: &Path) -> &'static SymbolTable {
    static TABLES: OnceLock<std::sync::Mutex<BTreeMap<PathBuf, &'static SymbolTable>>> =
        OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    if let Some(t) = tables.lock().unwrap().get(input) {
        return t;
    }
    let extracted = symbols::extract_paths(&[input.to_path_buf()]).unwrap();
    let leaked: &'static SymbolTable = Box::leak(Box::new(extracted));
    tables.lock().unwrap().insert(input.to_path_buf(), leaked);
    leaked
}

fn torch_table(wheel: &str) -> &'static SymbolTable {
    table(&artifact(wheel))
}

/// The demo's baseline: the libraries of its pinned gcc's Debian root.
fn baseline_table() -> &'static SymbolTable {
    table(&toolchain("gcc-bullseye").join("sysroot"))
}

fn base() -> Vec<Provider<'static>> {
    vec![
        Provider {
            origin: "CUDA 13.0 runtime",
            table: table(&artifact(CUDA_RUNTIME)),
        },
        Provider {
            origin: "baseline system",
            table: baseline_table(),
        },
    ]
}

/// `nm -D --defined-only` of `file` with the pinned binutils, as the table
/// writes symbols (`name`, `name@@V`, `name@V`), version definitions left out.
fn nm_exports(file: &Path) -> BTreeSet<String> {
    let nm = toolchain("gcc-bullseye").join("bin/nm");
    let out = common::run_ok(
        Command::new(nm)
            .args(["-D", "--defined-only", "--with-symbol-versions"])
            .arg(file),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (_address, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
            (kind != "A").then(|| name.to_string())
        })
        .collect()
}

fn written(table: &SymbolTable, soname: &str) -> BTreeSet<String> {
    let library = table
        .library(soname)
        .unwrap_or_else(|| panic!("the table has no {soname}"));
    let text = SymbolTable {
        sources: vec![],
        arch: table.arch,
        libraries: vec![library.clone()],
    }
    .write();
    text.lines()
        .skip_while(|l| !l.starts_with("symbols "))
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Copies a wheel member to `dir` and returns its path.
fn unzip_member(wheel: &Path, member: &str, dir: &Path) -> PathBuf {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let mut entry = archive.by_name(member).unwrap();
    let path = dir.join(member.rsplit('/').next().unwrap());
    let mut file = std::fs::File::create(&path).unwrap();
    std::io::copy(&mut entry, &mut file).unwrap();
    path
}

#[test]
fn tables_agree_with_nm_and_round_trip() {
    let torch = torch_table(TORCH_211);
    assert_eq!(SymbolTable::parse(&torch.write()).unwrap(), *torch);
    assert_eq!(torch.arch, Some(cuwheel::wheel::Arch::X86_64));
    let sonames: Vec<&str> = torch.libraries.iter().map(|l| l.soname.as_str()).collect();
    for expected in [
        "libc10.so",
        "libtorch_cpu.so",
        "libtorch_cuda.so",
        "libtorch_python.so",
    ] {
        assert!(sonames.contains(&expected), "{sonames:?}");
    }
    assert!(
        !sonames.iter().any(|s| s.contains("cpython")),
        "extension modules are no libraries: {sonames:?}"
    );
    // the stable C shim: generic functions in libtorch_cpu, CUDA ones in libtorch_cuda
    let cpu = torch.library("libtorch_cpu.so").unwrap();
    for shim in [
        "aoti_torch_get_dim",
        "torch_call_dispatcher",
        "torch_library_impl",
    ] {
        assert!(cpu.defines(shim, None), "{shim}");
    }
    let cuda = torch.library("libtorch_cuda.so").unwrap();
    assert!(cuda.defines("aoti_torch_get_current_cuda_stream", None));
    assert!(
        cuda.needed.iter().any(|n| n == "libtorch_cpu.so"),
        "{:?}",
        cuda.needed
    );

    let dir = tempfile::tempdir().unwrap();
    let c10 = unzip_member(&artifact(TORCH_211), "torch/lib/libc10.so", dir.path());
    assert_eq!(written(torch, "libc10.so"), nm_exports(&c10));

    // versioned exports: default and hidden versions exactly as nm shows them
    let cudart = unzip_member(
        &artifact(CUDA_RUNTIME),
        "nvidia/cu13/lib/libcudart.so.13",
        dir.path(),
    );
    assert_eq!(
        written(table(&artifact(CUDA_RUNTIME)), "libcudart.so.13"),
        nm_exports(&cudart)
    );
    let baseline = baseline_table();
    let libc = baseline.library("libc.so.6").unwrap();
    assert!(
        libc.versions.contains(&"GLIBC_2.30".to_string()),
        "glibc 2.31 adds no GLIBC_2.31 node"
    );
    assert!(!libc.versions.contains(&"GLIBC_2.32".to_string()));
    let libc_file = toolchain("gcc-bullseye").join("sysroot/lib/x86_64-linux-gnu/libc-2.31.so");
    let from_nm = nm_exports(&libc_file);
    assert!(from_nm.contains("memcpy@GLIBC_2.2.5") && from_nm.contains("memcpy@@GLIBC_2.14"));
    assert_eq!(written(baseline, "libc.so.6"), from_nm);
}

/// Compiles `tests/fixtures/load/stable_op.cpp` into a shared object with the
/// pinned gcc against torch 2.11 (`extra` flags added), linking `libs`.
fn stable_module(dir: &Path, extra: &[&str], libs: &[&str]) -> PathBuf {
    let gcc = toolchain("gcc-bullseye");
    let torch = toolchain("torch211");
    let out = dir.join("_C.abi3.so");
    let fixture = crate::common::repo().join("tests/fixtures/load/stable_op.cpp");
    let mut cmd = Command::new(gcc.join("bin/g++"));
    cmd.args(["-shared", "-fPIC", "-O2", "-std=c++17", "-isystem"])
        .arg(torch.join("include"))
        .args([
            "-DTORCH_STABLE_ONLY",
            "-DTORCH_TARGET_VERSION=0x020b000000000000",
        ])
        .args(extra)
        .arg(&fixture)
        .arg("-o")
        .arg(&out)
        .arg("-Wl,--as-needed")
        .arg(format!("-L{}", torch.join("lib").display()))
        .args(libs);
    common::run_ok(&mut cmd);
    out
}

/// The member facts and DT_NEEDED resolutions of bare ELF files, as if in one wheel.
fn objects_of(files: &[PathBuf]) -> Vec<(String, ElfFacts)> {
    files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let facts = ElfFacts::parse(&name, &std::fs::read(f).unwrap()).unwrap();
            (name, facts)
        })
        .collect()
}

fn resolved(members: &[(String, ElfFacts)]) -> BTreeMap<(String, String), loader::Resolution> {
    let loaded: Vec<LoadedObject<'_>> = members
        .iter()
        .map(|(member, facts)| LoadedObject { member, facts })
        .collect();
    let names: BTreeSet<String> = members.iter().map(|(n, _)| n.clone()).collect();
    loader::resolve_needed(&loaded, &names, &loader::runtime_provided().sonames())
}

fn in_one_wheel(members: &[(String, ElfFacts)]) -> Vec<WheelObject<'_>> {
    members
        .iter()
        .map(|(member, facts)| WheelObject { member, facts })
        .collect()
}

/// The torch 2.9.1 and 2.11.0 rows of the compatibility table of `members`.
fn against_291_and_211(members: &[(String, ElfFacts)]) -> Vec<load::ReleaseVerdict> {
    let releases = [
        Provider {
            origin: "2.9.1",
            table: torch_table(TORCH_291),
        },
        Provider {
            origin: "2.11.0",
            table: torch_table(TORCH_211),
        },
    ];
    load::compatibility(
        &in_one_wheel(members),
        &resolved(members),
        &base(),
        &releases,
    )
}

/// Whether `members` load with torch 2.11.0, and what they take from it
/// beyond the stable shim.
fn against_211_stable(members: &[(String, ElfFacts)]) -> (bool, Vec<stable::NonStable>) {
    let objects = in_one_wheel(members);
    let resolved = resolved(members);
    let torch = Provider {
        origin: "2.11.0",
        table: torch_table(TORCH_211),
    };
    let providers: Vec<Provider<'_>> = std::iter::once(torch).chain(base()).collect();
    let loads = load::check(&objects, &resolved, &providers).loads();
    let linker = Linker::new(&objects, &resolved, &providers);
    (
        loads,
        stable::non_stable_references(&objects, &linker, "2.11.0"),
    )
}

#[test]
fn a_stable_abi_module_loads_from_its_target_on_and_only_uses_the_shim() {
    let dir = tempfile::tempdir().unwrap();
    let module = stable_module(dir.path(), &[], &["-ltorch_cpu"]);
    let members = objects_of(&[module]);
    let rows = against_291_and_211(&members);
    let text = load::compatibility_text(&rows);
    assert!(rows[1].loads, "{text}{:?}", rows[1].check);
    assert!(!rows[0].loads, "{text}");
    let first = rows[0].first_missing.as_ref().unwrap();
    // added to the shim in 2.10
    assert!(
        ["torch_call_dispatcher", "torch_library_impl"].contains(&first.symbol.as_str()),
        "{text}"
    );
    assert_eq!(first.expected_from, ["libtorch_cpu.so"], "{text}");
    assert!(
        text.contains(&format!(
            "torch 2.9.1: does not load (2 missing; first: `{}` is not defined by libtorch_cpu.so \
             (libtorch_cpu.so of torch 2.11.0 defines it))",
            first.symbol
        )),
        "{text}"
    );
    assert!(load::findings(&rows, &|t| t == "2.11.0").is_empty());
    let against_291 = load::findings(&rows, &|t| t == "2.9.1");
    assert!(
        against_291[0]
            .problem
            .contains("would not load with torch 2.9.1"),
        "{against_291:?}"
    );

    let (loads, non_stable) = against_211_stable(&members);
    assert!(loads);
    assert_eq!(non_stable, []);
}

#[test]
fn a_non_stable_symbol_fails_the_stable_abi_check_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let module = stable_module(
        dir.path(),
        &["-DCUWHEEL_TEST_NON_STABLE"],
        &["-ltorch_cpu", "-lc10"],
    );
    let members = objects_of(std::slice::from_ref(&module));
    let (loads, found) = against_211_stable(&members);
    // torch 2.11 exports it, so the module loads ...
    assert!(loads);
    // ... but it is not the stable ABI, which a range of releases needs
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].symbol, "_ZN3c106detail14torchCheckFailEPKcS2_jS2_");
    assert_eq!(found[0].library, "libc10.so");
    let findings = stable::findings(&[("2.11.0", found)]);
    assert!(
        findings[0].problem.contains(
            "`c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)` \
             (`_ZN3c106detail14torchCheckFailEPKcS2_jS2_`) from libc10.so"
        ),
        "{}",
        findings[0].problem
    );

    // the same verdict from the command line, with tables written by `cuwheel symbols`
    let cuwheel = crate::common::cuwheel_bin();
    let torch_file = dir.path().join("torch-2.11.0.symbols");
    common::run_ok(
        Command::new(&cuwheel)
            .arg("symbols")
            .arg(artifact(TORCH_211))
            .arg("-o")
            .arg(&torch_file),
    );
    assert_eq!(
        std::fs::read_to_string(&torch_file).unwrap(),
        torch_table(TORCH_211).write(),
        "the command writes the library's table"
    );
    let out = Command::new(&cuwheel)
        .arg("load-check")
        .arg(&module)
        .arg(format!("--torch=2.11.0={}", torch_file.display()))
        .arg("--stable-abi")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("torch 2.11.0: loads"), "{stdout}");
    assert!(
        stdout.contains("FAIL _C.abi3.so: claims torch's stable ABI but binds to torch symbols")
            && stdout.contains("c10::detail::torchCheckFail"),
        "{stdout}"
    );
}

#[test]
fn the_demo_wheel_loads_with_its_torch_and_not_with_the_older_one() {
    let result = built("wheels.cu130-py313-torch211");
    // the audit the build ran: the load check passed, against the one
    // release the wheel claims
    let report = std::fs::read_to_string(result.join("audit.txt")).unwrap();
    assert!(report.contains(": PASSED"), "{report}");
    assert!(
        report.contains("  load (claims torch 2.11.0): loads with torch 2.11.0\n"),
        "{report}"
    );
    assert!(
        !report.contains("2.14.1") && !report.contains("2.15.0"),
        "{report}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(result.join("audit.json")).unwrap()).unwrap();
    let rows = json[0]["torch_load"]["releases"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["torch"], "2.11.0");
    assert_eq!(rows[0]["loads"], true);
    // its compatibility node: every CUDA 13 release of the lock, from the
    // audited wheel
    let compat = built("compat.cu130-py313-torch211");
    let table = std::fs::read_to_string(compat.join("compat.txt")).unwrap();
    assert!(table.ends_with("PASSED\n"), "{table}");
    // it names the wheel by its file name, not a store path
    assert!(
        table.starts_with("demo_ext-0.1.0+pt211cu130-cp313-cp313-"),
        "{table}"
    );
    for release in ["2.11.0", "2.14.1", "2.15.0"] {
        assert!(table.contains(&format!("  torch {release}: ")), "{table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(compat.join("compat.json")).unwrap())
            .unwrap();
    assert_eq!(json["passed"], true);
    assert_eq!(json["claimed"], serde_json::json!(["2.11.0"]));
    let versions: Vec<&str> = json["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["torch"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["2.11.0", "2.14.1", "2.15.0"]);
    assert_eq!(json["releases"][0]["loads"], true);
    let wheel = std::fs::read_dir(&result)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("the cell's result holds its wheel");
    let archive = cuwheel::wheel::WheelArchive::open(&wheel).unwrap();
    let members: Vec<(String, ElfFacts)> = archive
        .members()
        .iter()
        .filter(|m| elf::is_elf(&m.data))
        .map(|m| (m.name.clone(), ElfFacts::parse(&m.name, &m.data).unwrap()))
        .collect();
    assert_eq!(members.len(), 1);
    let rows = against_291_and_211(&members);
    let text = load::compatibility_text(&rows);
    assert!(rows[1].loads, "{text}");
    assert!(
        rows[1].check.interpreter_symbols > 0,
        "pybind11 calls the C API"
    );
    assert!(!rows[0].loads, "{text}");
    // c10's CUDA error check changed its signature between 2.9 and 2.11
    let first = rows[0].first_missing.as_ref().unwrap();
    assert!(first.symbol.starts_with("_ZN3c10"), "{text}");
    assert!(
        first
            .elsewhere
            .as_deref()
            .is_some_and(|e| e.ends_with("of torch 2.11.0")),
        "{text}"
    );
}

/// The symbol table `cuwheel symbols` writes of `input`, in `dir`.
fn table_file(dir: &Path, name: &str, input: &Path) -> PathBuf {
    let file = dir.join(name);
    common::run_ok(
        Command::new(crate::common::cuwheel_bin())
            .arg("symbols")
            .arg(input)
            .arg("-o")
            .arg(&file),
    );
    file
}

/// The wheel artifact of the lock's torch toolchain `name`.
fn torch_wheel(name: &str) -> PathBuf {
    let lock = Lock::read(&demo().join("cuwheel.lock")).unwrap();
    let cuwheel::lock::format::Toolchain::Torch { artifacts, .. } = &lock.toolchains[name] else {
        panic!("{name} is not a torch toolchain");
    };
    artifact(artifacts.iter().next().unwrap())
}

#[test]
fn the_audit_of_a_stable_abi_wheel_lists_its_releases_and_names_a_non_stable_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = Vec::new();
    for (version, toolchain) in [
        ("2.9.1", "torch29"),
        ("2.11.0", "torch211"),
        ("2.14.1", "torch214"),
        ("2.15.0", "torch215"),
    ] {
        let file = table_file(dir.path(), toolchain, &torch_wheel(toolchain));
        args.push(format!("--torch={version}={}", file.display()));
    }
    let cuda = table_file(dir.path(), "cuda", &artifact(CUDA_RUNTIME));
    let sysroot = table_file(
        dir.path(),
        "sysroot",
        &toolchain("gcc-bullseye").join("sysroot"),
    );
    args.push(format!("--with=CUDA 13.0 runtime={}", cuda.display()));
    args.push(format!("--with=baseline system={}", sysroot.display()));
    for claimed in ["2.11.0", "2.14.1", "2.15.0"] {
        args.push(format!("--claims={claimed}"));
    }
    args.push("--stable-abi".into());
    // `cuwheel audit` of a wheel holding `module` alone
    let audit = |name: &str, module: &Path| {
        let wheel_dir = dir.path().join(name);
        std::fs::create_dir(&wheel_dir).unwrap();
        let wheel = audit_support::write_wheel(
            &wheel_dir,
            "stable_op-0.1.0-cp39-abi3-manylinux_2_31_x86_64.whl",
            &[("stable_op/_C.abi3.so", std::fs::read(module).unwrap())],
        );
        let run = audit_support::cuwheel_audit(args.iter().map(PathBuf::from).chain([wheel]));
        let text = format!("{}{}", run.stdout, run.stderr);
        (run.code, run.stdout, text)
    };

    // the module's own build path stays out of it (the audit's leak check)
    let map = format!(
        "-ffile-prefix-map={}=torch",
        toolchain("torch211").display()
    );
    let module = stable_module(dir.path(), &[&map], &["-ltorch_cpu"]);
    let (code, stdout, text) = audit("stable", &module);
    assert_eq!(code, 0, "{text}");
    assert!(
        stdout.contains(
            "  load (claims torch 2.11.0, 2.14.1, 2.15.0): loads with torch 2.11.0, 2.14.1, \
             2.15.0; not with 2.9.1"
        ),
        "{text}"
    );

    let other = dir.path().join("non-stable");
    std::fs::create_dir(&other).unwrap();
    let module = stable_module(
        &other,
        &["-DCUWHEEL_TEST_NON_STABLE", &map],
        &["-ltorch_cpu", "-lc10"],
    );
    let (code, stdout, text) = audit("bad", &module);
    assert_eq!(code, 3, "{text}");
    assert!(
        stdout.contains(
            "[load] stable_op/_C.abi3.so: claims torch's stable ABI but binds to torch symbols \
             outside it (checked against torch 2.11.0, 2.14.1, 2.15.0): \
             `c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)` \
             (`_ZN3c106detail14torchCheckFailEPKcS2_jS2_`) from libc10.so"
        ),
        "{text}"
    );
}
