//! cuwheel as a flake library, used as a maintainer uses it: the demo's
//! files copied into a directory outside this repository, with the flake
//! `nix flake init -t` writes (its cuwheel input pointed at this checkout)
//! and nothing else of cuwheel's — no nix/, src/ or Cargo.*.
//! - The project's flake makes the same plan as the cargo-built driver and
//!   the same derivations as cuwheel's own flake (whose demo is one call of
//!   the same function); it builds a kernel object and a whole audited
//!   wheel, and `cuwheel plan` uses it.
//! - `plan`, `reproduce` and `cache export` refuse a flake that builds
//!   another project, and name a file the flake does not see (`git add`).
//! - A `[tool.cuwheel]` edited after `cuwheel lock` is refused by `cuwheel
//!   plan`, by the flake's evaluation and by `nix build`, before any build,
//!   with the command that locks it again.
//! - Re-pinning a package the cell's wheel is not built from leaves the
//!   wheel's derivation unchanged and `cuwheel reproduce` says identical;
//!   re-pinning one it is built from is refused before any build, naming it.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use crate::common;
use crate::common::texts;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::cuwheel_bin;
use crate::common::flake::{installable, json, nix, nix_ok, project_flake, repo};
use cuwheel::lock::format::{Lock, Source, Toolchain, store_name};
use cuwheel::store::Hash;

const CELL: &str = "cu130-py313-torch211";
const KERNEL: &str = "kernel-cuda130-torch211-axpby";

fn attr(flake: &Path, attr: &str) -> String {
    format!("{}#{attr}", flake.display())
}

fn cli(args: &[&str]) -> Output {
    Command::new(cuwheel_bin()).args(args).output().unwrap()
}

fn eval_raw(installable: &str) -> String {
    String::from_utf8(nix_ok(&["eval", "--raw", installable]).stdout).unwrap()
}

/// `nix build` of `installable`: its output path.
fn build(installable: &str) -> PathBuf {
    crate::common::flake::build_out(&[installable])
}

fn the_wheel(result: &Path) -> PathBuf {
    fs::read_dir(result)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .unwrap_or_else(|| panic!("no wheel in {}", result.display()))
}

#[test]
fn a_project_flake_outside_the_repository_plans_and_builds_like_cuwheels_own() {
    let project = project_flake("examples/demo-ext");
    let dir = project.path();
    for absent in ["nix", "src", "Cargo.toml", "Cargo.lock"] {
        assert!(!dir.join(absent).exists(), "{absent} was copied");
    }
    let flake = fs::read_to_string(dir.join("flake.nix")).unwrap();
    assert!(
        flake.contains("cuwheel.lib.mkProject { src = ./.; }"),
        "{flake}"
    );

    // Its identity, then its plan: made by the Nix-built driver, the same
    // bytes as the cargo-built driver's.
    let identity = json(&nix_ok(&["eval", "--json", &attr(dir, "project")]));
    assert_eq!(identity["name"], "demo-ext");
    let plan = build(&attr(dir, "plan"));
    let ours = cli(&["plan", "--json", "--project", dir.to_str().unwrap()]);
    assert!(ours.status.success(), "{}", texts(&ours).1);
    assert_eq!(fs::read(&plan).unwrap(), ours.stdout);

    // The same derivations as cuwheel's own flake builds for the demo.
    for a in [
        format!("kernels.{KERNEL}.drvPath"),
        format!("wheels.{CELL}.drvPath"),
        "packages.x86_64-linux.cuwheel.drvPath".to_string(),
    ] {
        assert_eq!(eval_raw(&attr(dir, &a)), eval_raw(&installable(&a)), "{a}");
    }

    // A kernel object and the whole audited wheel.
    let kernel = build(&attr(dir, &format!("kernels.{KERNEL}")));
    assert!(kernel.join("axpby.o").is_file(), "{}", kernel.display());
    let result = build(&attr(dir, &format!("wheels.{CELL}")));
    let wheel = the_wheel(&result);
    assert!(
        wheel
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("demo_ext-0.1.0+pt211cu130-cp313-cp313-"),
        "{}",
        wheel.display()
    );
    let audit = fs::read_to_string(result.join("audit.txt")).unwrap();
    assert!(
        audit.lines().next().unwrap().ends_with(": PASSED"),
        "{audit}"
    );

    // `cuwheel plan` finds the project's own flake and asks it.
    let out = cli(&["plan", "--project", dir.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("  built     {KERNEL}  shared by")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("  built     audit-{CELL}  used by {CELL}")),
        "{stdout}"
    );
}

/// Asserts that `out` failed with every one of `expected` on stderr and
/// built nothing.
fn assert_refused(out: &Output, expected: &[&str]) {
    let (stdout, stderr) = texts(out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for text in expected {
        assert!(stderr.contains(text), "{text:?} not in:\n{stderr}");
    }
    assert!(!stderr.contains("building '"), "{stderr}");
}

#[test]
fn a_flake_that_builds_another_project_or_misses_a_file_is_refused() {
    let demo = project_flake("examples/demo-ext");
    let demo_dir = demo.path().to_str().unwrap();
    // Another project: a fixture with the demo's lock, marked as its own.
    let other = project_flake("tests/fixtures/sibling-header");
    let mut lock = Lock::read(&repo().join("examples/demo-ext/cuwheel.lock")).unwrap();
    lock.config_sha256 =
        cuwheel::lock::config_sha256(&other.path().join("pyproject.toml")).unwrap();
    lock.write(&other.path().join("cuwheel.lock")).unwrap();
    let other_flake = other.path().to_str().unwrap();
    let wrong = "the flake ".to_string() + other_flake;
    let expected = [
        wrong.as_str(),
        "builds the project `sibling-header`, not `demo-ext`",
        "pass --flake with the flake that builds this project",
    ];

    let out = cli(&["plan", "--project", demo_dir, "--flake", other_flake]);
    assert_refused(&out, &expected);

    // reproduce: a wheel this checkout builds (the provenance matches), but
    // the other project's flake.
    let wheel = the_wheel(&build(&installable(&format!("wheels.{CELL}"))));
    let out = cli(&[
        "reproduce",
        "--no-check",
        "--project",
        demo_dir,
        "--flake",
        other_flake,
        wheel.to_str().unwrap(),
    ]);
    assert_refused(&out, &expected);

    // cache export: refused before the key is even needed.
    let cache = tempfile::tempdir().unwrap();
    let out = cli(&[
        "cache",
        "export",
        cache.path().join("c").to_str().unwrap(),
        "--key",
        "/nonexistent.sec",
        "--project",
        demo_dir,
        "--flake",
        other_flake,
    ]);
    assert_refused(&out, &expected);
    assert!(!cache.path().join("c").exists());

    // A file the build uses that git does not track: the flake cannot see it.
    fs::write(demo.path().join("demo_ext/extra.py"), "X = 1\n").unwrap();
    let out = cli(&["plan", "--project", demo_dir]);
    assert_refused(
        &out,
        &[
            "demo_ext/extra.py: the flake does not see it",
            "A flake sees only the files git tracks: `git add demo_ext/extra.py`",
        ],
    );
    common::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(demo.path())
            .args(["add", "demo_ext/extra.py"]),
    );
    let out = cli(&["plan", "--project", demo_dir, "--no-store"]);
    assert!(out.status.success(), "{}", texts(&out).1);
    let out = cli(&["plan", "--project", demo_dir]);
    assert!(out.status.success(), "{}", texts(&out).1);
}

#[test]
fn a_config_edited_after_locking_is_refused_before_any_build() {
    let project = project_flake("examples/demo-ext");
    let dir = project.path();
    let pyproject = dir.join("pyproject.toml");
    let text = fs::read_to_string(&pyproject).unwrap();
    let edited = text.replace(
        "nvcc-flags = [\"--expt-relaxed-constexpr\"]",
        "nvcc-flags = [\"--expt-relaxed-constexpr\", \"-DEDITED\"]",
    );
    assert_ne!(edited, text);
    fs::write(&pyproject, edited).unwrap();
    let relock = format!("Run `cuwheel lock --project {}`", dir.display());

    let out = cli(&["plan", "--no-store", "--project", dir.to_str().unwrap()]);
    assert_refused(
        &out,
        &[
            "cuwheel.lock was written for another [tool.cuwheel]",
            "the config changed after `cuwheel lock`",
            &relock,
        ],
    );

    for (command, target) in [
        (["build", "--no-link"], format!("wheels.{CELL}")),
        (["build", "--no-link"], format!("kernels.{KERNEL}")),
        (["eval", "--raw"], "plan.drvPath".to_string()),
    ] {
        let mut args = command.to_vec();
        let target = attr(dir, &target);
        args.push(&target);
        let out = nix(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "nix {args:?}:\n{stderr}");
        for expected in [
            "cuwheel.lock was written for another [tool.cuwheel]",
            "the config changed after `cuwheel lock`",
            "Run `cuwheel lock --project <the project directory>`",
        ] {
            assert!(stderr.contains(expected), "{expected:?} not in:\n{stderr}");
        }
        assert!(!stderr.contains("building '"), "{stderr}");
    }
}

/// `lock` with toolchain `toolchain`'s artifact `name` re-pinned as `cuwheel
/// lock` would pin a newer release: another version, file, hash and size.
fn re_pin(lock: &mut Lock, toolchain: &str, name: &str) -> String {
    let mut artifact = lock.artifacts.remove(name).unwrap();
    let version = match &mut artifact.source {
        Source::Debian { version, .. } | Source::Pypi { version, .. } => version,
        Source::Archive { .. } => panic!("{name} is an archive the user supplies, not a release"),
    };
    let old = version.clone();
    version.push_str("+repin1");
    artifact.file = artifact
        .file
        .replace(&old.replace(':', "%3a"), &version.replace(':', "%3a"));
    assert_ne!(store_name(&artifact.file), name, "{}", artifact.file);
    artifact.sha256 = Hash::sha256(format!("re-pinned {name}")).to_hex();
    artifact.size += 1;
    let renamed = store_name(&artifact.file);
    lock.artifacts.insert(renamed.clone(), artifact);
    let artifacts = lock.toolchains.get_mut(toolchain).unwrap().artifacts_mut();
    assert!(artifacts.remove(name));
    artifacts.insert(renamed.clone());
    renamed
}

#[test]
fn a_re_pin_of_what_the_wheel_is_not_built_from_leaves_it_identical() {
    let project = project_flake("examples/demo-ext");
    let dir = project.path();
    let dir_str = dir.to_str().unwrap();
    let result = build(&attr(dir, &format!("wheels.{CELL}")));
    let keep = tempfile::tempdir().unwrap();
    let wheel = keep.path().join(the_wheel(&result).file_name().unwrap());
    fs::copy(the_wheel(&result), &wheel).unwrap();
    let drv = |cell: &str| eval_raw(&attr(dir, &format!("wheels.{cell}.drvPath")));
    let (ours_before, py311_before) = (drv(CELL), drv("cu130-py311-torch211"));

    // Python 3.11's headers: cu130-py311 and cu130-abi3 are built with them,
    // cu130-py313 is not.
    let lock_path = dir.join("cuwheel.lock");
    let mut lock = Lock::read(&lock_path).unwrap();
    let Toolchain::PythonHeaders { artifacts, .. } = &lock.toolchains["python311"] else {
        panic!("python311 is a python-headers toolchain");
    };
    let package = artifacts.iter().next().unwrap().clone();
    let renamed = re_pin(&mut lock, "python311", &package);
    lock.write(&lock_path).unwrap();

    assert_eq!(drv(CELL), ours_before, "{CELL}'s wheel derivation changed");
    assert_ne!(
        drv("cu130-py311-torch211"),
        py311_before,
        "the re-pin had no effect"
    );
    let out = cli(&[
        "reproduce",
        "--no-check",
        "--project",
        dir_str,
        wheel.to_str().unwrap(),
    ]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let sha256 = Hash::sha256(fs::read(&wheel).unwrap()).to_hex();
    assert!(
        stdout.starts_with(&format!(
            "identical: {} sha256 {sha256}",
            wheel.file_name().unwrap().to_string_lossy()
        )),
        "{stdout}"
    );

    // Re-pinning what the wheel is built from (the toolkit's nvcc) is
    // another checkout: refused before any build, naming both files.
    let Toolchain::Cuda(cuda) = &lock.toolchains["cuda130"] else {
        panic!("cuda130 is a CUDA toolchain");
    };
    assert_eq!(cuda.kind, "cuda-wheels");
    let nvcc = cuda
        .artifacts
        .iter()
        .find(|a| a.starts_with("nvidia_cuda_nvcc-"))
        .unwrap()
        .clone();
    let nvcc_renamed = re_pin(&mut lock, "cuda130", &nvcc);
    lock.write(&lock_path).unwrap();
    let out = cli(&["reproduce", "--project", dir_str, wheel.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "  the cuda toolchain: the wheel was built with {nvcc} (sha256 "
        )) && stdout.contains(&format!(
            "where the checkout's lock has {nvcc_renamed} (sha256 "
        )),
        "{stdout}"
    );
    assert!(!stdout.contains(&renamed), "{stdout}");
    assert!(!stderr.contains("building"), "{stderr}");
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn the_publish_app_builds_the_cells_itself_in_parallel_then_publishes() {
    // The demo cut down to torch 2.15 (CUDA 13.2) and Python 3.13, without
    // its stable-ABI cell and its PyPI variant (torch 2.11's cells, gone)
    // (its lock, marked as made for that config, has these cells'
    // toolchains, under the same names).
    let project = project_flake("examples/demo-ext");
    let dir = project.path();
    let pyproject = dir.join("pyproject.toml");
    let text = fs::read_to_string(&pyproject).unwrap();
    let matrix = text.find("[tool.cuwheel.matrix]").unwrap();
    let matrix = text.find("[tool.cuwheel.pypi]").unwrap().min(matrix);
    let cut = text[..matrix].to_string()
        + "[tool.cuwheel.matrix]\npython = [\"3.13\"]\ntorch = [\"2.15\"]\n\
           exclude = [{ binding = \"torch-stable\" }]\n";
    assert_ne!(cut, text);
    fs::write(&pyproject, cut).unwrap();
    let lock_path = dir.join("cuwheel.lock");
    let mut lock = Lock::read(&lock_path).unwrap();
    lock.config_sha256 = cuwheel::lock::config_sha256(&pyproject).unwrap();
    lock.write(&lock_path).unwrap();

    // The app itself refers to the cells' derivations, not to their results:
    // building it builds no node of any cell (its inputs are the driver and
    // busybox; the cells' .drv files are sources) ...
    let app_drv = eval_raw(&attr(dir, "packages.x86_64-linux.publish.drvPath"));
    let shown = json(&nix_ok(&["show-derivation", &app_drv]));
    let inputs: Vec<&String> = shown[&app_drv]["inputDrvs"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    for input in &inputs {
        let node = [
            "audit-", "wheel-", "link-", "binding-", "kernel-", "symbols-",
        ]
        .iter()
        .any(|kind| input.contains(kind));
        assert!(!node, "building the app would build {input}: {inputs:?}");
    }
    let sources = shown[&app_drv]["inputSrcs"].to_string();
    // ... and its closure holds their derivations, not their outputs.
    let app = build(&attr(dir, "packages.x86_64-linux.publish"));
    let closure = common::run_ok(Command::new("nix-store").arg("-qR").arg(&app));
    let closure = String::from_utf8(closure.stdout).unwrap();
    for cell in ["cu132-py313", "cu132-abi3"] {
        let drv = eval_raw(&attr(dir, &format!("wheels.{cell}.drvPath")));
        let out = eval_raw(&attr(dir, &format!("wheels.{cell}.outPath")));
        assert!(sources.contains(&drv), "{drv} is not a source of the app");
        assert!(closure.contains(&drv), "{drv} not in the app's closure");
        assert!(
            !closure.contains(&format!("{out}\n")),
            "{out} is in the app's closure"
        );
    }

    let index = tempfile::tempdir().unwrap();
    let index = index.path().join("index");
    let out = nix_ok(&[
        "run",
        &attr(dir, "publish"),
        "--",
        "--max-jobs",
        "2",
        "--to",
        index.to_str().unwrap(),
    ]);
    let (stdout, stderr) = texts(&out);
    assert!(
        stderr.contains("building every cell (nix-store --realise --max-jobs 2)"),
        "{stderr}"
    );
    let published: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("published "))
        .collect();
    assert_eq!(published.len(), 2, "{stdout}");
    for line in published {
        let wheel = index.join(line.trim_start_matches("published "));
        assert!(wheel.is_file(), "{}", wheel.display());
    }
}
