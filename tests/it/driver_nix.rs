//! The binaries built by Nix (`nix/driver.nix`: the flake's `packages.x86_64-linux.driver`,
//! `bin/cuwheel-build`, and `.cuwheel`, the CLI), checked with real Nix: their crate inputs are
//! exactly Cargo.lock's registry packages with Cargo.lock's checksums; each is static and refers
//! to no store path; the driver runs exactly the subcommands the plan's derivations run, each as
//! the CLI does; the CLI answers `--help` on the host and through `nix run` like the cargo-built
//! one.
//!
//! The first run builds the Rust toolchain root and the driver in the sandbox (minutes); later
//! runs find them in the store. The pinned .debs and crates must be in the store: a build that
//! lacks one fails with Nix's message naming it and saying to run `cuwheel fetch`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use crate::common;
use crate::common::flake::{installable, json, nix_ok, repo};
use crate::common::{cuwheel_bin, run_ok};
use cuwheel::fetch::crates::locked_crates;

/// A store path of the flake, built once per test run.
fn built(attr: &str, slot: &'static OnceLock<PathBuf>) -> &'static Path {
    slot.get_or_init(|| {
        let start = Instant::now();
        let out = nix_ok(&["build", "--no-link", "--json", &installable(attr)]);
        eprintln!(
            "nix build .#{attr}: {:.1} s (the toolchain root and the binary, unless already in the store)",
            start.elapsed().as_secs_f64()
        );
        let path = json(&out)[0]["outputs"]["out"]
            .as_str()
            .expect("nix build --json names the output")
            .to_owned();
        PathBuf::from(path)
    })
}

/// The driver (crates/cuwheel-build), what every derivation runs.
fn nix_built_driver() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    built("driver", &OUT)
}

/// The CLI (the package `cuwheel`), the flake's default package and app.
fn nix_built_cli() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    built("cuwheel", &OUT)
}

/// A static PIE whose closure is itself: no loader, no library, no
/// toolchain path kept alive.
fn assert_static_and_self_contained(out: &Path, bin: &Path) {
    let refs = run_ok(
        Command::new("nix-store")
            .arg("-q")
            .arg("--references")
            .arg(out),
    );
    assert_eq!(
        String::from_utf8_lossy(&refs.stdout).trim(),
        "",
        "{} refers to store paths",
        out.display()
    );
    let headers = run_ok(Command::new("readelf").args(["-lW"]).arg(bin));
    let headers = String::from_utf8_lossy(&headers.stdout);
    assert!(
        headers.contains("DYN"),
        "{}: not a position-independent executable:\n{headers}",
        bin.display()
    );
    assert!(
        !headers.contains("INTERP"),
        "{}: has an ELF interpreter:\n{headers}",
        bin.display()
    );
}

fn help(cmd: &mut Command) -> String {
    String::from_utf8(run_ok(cmd.arg("--help")).stdout).unwrap()
}

/// The subcommands a `--help` lists.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no command list in:\n{help}"))
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect()
}

/// The subcommands the plan's derivations run: all the driver has.
const BUILD_COMMANDS: [&str; 5] = ["audit", "build-wheel", "load-check", "plan", "symbols"];

#[test]
fn nix_built_driver_is_static_self_contained_and_runs_only_the_build_commands() {
    let out = nix_built_driver();
    let bin = out.join("bin/cuwheel-build");
    assert_static_and_self_contained(out, &bin);

    // Exactly the subcommands the plan's derivations run, each the CLI's own (the same
    // arguments, from the same code in cuwheel-build): the driver carries nothing else.
    // `plan` is the one the CLI extends: the driver prints only the JSON, and the CLI adds
    // the host's forms (the summary, `--jobs`, the store query: src/cli/plan.rs), so each
    // of the driver's options is the CLI's, word for word.
    let driver = help(&mut Command::new(&bin));
    assert_eq!(subcommands(&driver), BUILD_COMMANDS, "{driver}");
    for command in BUILD_COMMANDS {
        let ours = help(Command::new(&bin).arg(command)).replace("cuwheel-build ", "cuwheel ");
        let cli = help(Command::new(cuwheel_bin()).arg(command));
        if command == "plan" {
            let theirs = options(&cli);
            for option in options(&ours) {
                assert!(theirs.contains(&option), "plan: {option}\n{cli}");
            }
        } else {
            assert_eq!(ours, cli, "{command}");
        }
    }
}

/// The option lines of a `--help` (each `-x, --name <VALUE>  what it does`).
fn options(help: &str) -> Vec<String> {
    help.lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn nix_built_cli_is_static_self_contained_and_answers_help() {
    let out = nix_built_cli();
    let bin = out.join("bin/cuwheel");
    assert_static_and_self_contained(out, &bin);

    // Same help as the CLI cargo built for this test run, on the host and through the app,
    // less `init`: the CLI Nix builds leaves out that feature (it never runs in a build).
    let full = help(&mut Command::new(cuwheel_bin()));
    assert!(full.contains("Usage: cuwheel <COMMAND>"), "{full}");
    let init_line = |line: &str| line.trim_start().starts_with("init ");
    assert_eq!(full.lines().filter(|l| init_line(l)).count(), 1, "{full}");
    let expected: String = full
        .lines()
        .filter(|line| !init_line(line))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(help(&mut Command::new(&bin)), expected);
    let app = nix_ok(&["run", &installable("cuwheel"), "--", "--help"]);
    assert_eq!(String::from_utf8(app.stdout).unwrap(), expected);
}

/// The `.crate` inputs of a vendor directory's derivation (`attr`, named
/// `name`): file name to sha256.
fn vendor_inputs(attr: &str, name: &str) -> BTreeMap<String, String> {
    // The vendor directory's derivation and, recursively, every derivation it depends on.
    let shown = json(&nix_ok(&[
        "show-derivation",
        "--recursive",
        &installable(attr),
    ]));
    let drvs = shown.as_object().unwrap();
    let vendor = drvs
        .values()
        .find(|d| d["env"]["name"] == name)
        .expect("the vendor derivation is shown");
    let mut inputs = BTreeMap::new();
    for drv_path in vendor["inputDrvs"].as_object().unwrap().keys() {
        let drv = &drvs[drv_path];
        let name = drv["env"]["name"].as_str().unwrap().to_owned();
        if !name.ends_with(".crate") {
            continue; // the busybox and patchelf seeds
        }
        let output = &drv["outputs"]["out"];
        assert_eq!(
            output["hashAlgo"], "sha256",
            "{name} is a flat sha256 fixed-output path"
        );
        inputs.insert(name, output["hash"].as_str().unwrap().to_owned());
    }
    inputs
}

/// A lock's registry crates, as `cuwheel fetch` adds them to the store.
fn registry_crates(lock: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(repo().join(lock)).unwrap();
    locked_crates(&text)
        .unwrap()
        .into_iter()
        .map(|krate| (krate.file(), krate.checksum))
        .collect()
}

/// The driver's vendor directory holds exactly its own lock's crates
/// (nix/driver-workspace/Cargo.lock), the CLI's exactly the root lock's; and
/// the root lock's are what `cuwheel fetch` pins, the driver's among them.
#[test]
fn crate_inputs_are_exactly_each_locks_registry_packages() {
    let root = registry_crates("Cargo.lock");
    let driver = registry_crates("nix/driver-workspace/Cargo.lock");
    assert!(
        driver.len() > 50,
        "the driver's lock lists {} crates",
        driver.len()
    );
    assert!(driver.iter().all(|(file, sum)| root.get(file) == Some(sum)));
    assert_eq!(vendor_inputs("driver.vendor", "cuwheel-vendor"), driver);
    assert_eq!(
        vendor_inputs("driver.cliVendor", "cuwheel-cli-vendor"),
        root
    );
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn driver_and_vendor_directory_rebuild_bit_for_bit() {
    nix_built_driver();
    for attr in ["driver.vendor", "driver"] {
        let start = Instant::now();
        // Nix fails the build if the second output differs from the one in the store.
        nix_ok(&["build", "--no-link", "--rebuild", &installable(attr)]);
        eprintln!(
            "nix build --rebuild .#{attr}: {:.1} s, no difference",
            start.elapsed().as_secs_f64()
        );
    }
}

/// The `.drv` path of a flake's attribute.
fn drv(flake: &Path, attr: &str) -> String {
    let out = nix_ok(&[
        "eval",
        "--raw",
        &format!("{}#{attr}.drvPath", flake.display()),
    ]);
    String::from_utf8(out.stdout).unwrap()
}

/// The `.drv` paths of the driver, the CLI and every wheel of a flake. The
/// wheels' come from the plan, which the flake's driver makes (import from
/// derivation): a flake whose driver is not built yet builds it first.
fn drvs(flake: &Path) -> [String; 3] {
    ["driver", "cuwheel", "wheels.all"].map(|attr| drv(flake, attr))
}

fn append_comment(file: &Path) {
    let mut text = std::fs::read_to_string(file).unwrap();
    text.push_str("\n// an edit\n");
    std::fs::write(file, text).unwrap();
}

/// A dependency only the CLI uses, added as `cargo add` would: a line in the
/// root manifest's `[dependencies]`, and its package in the root lock (the
/// lock's own registry source, a made-up checksum: nothing is fetched to
/// evaluate a derivation).
fn add_cli_only_dependency(flake: &Path) {
    let manifest = flake.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replacen(
        "[dependencies]\n",
        "[dependencies]\ncli-only-dependency = \"1\"\n",
        1,
    );
    assert!(
        text.contains("cli-only-dependency"),
        "no [dependencies] table"
    );
    std::fs::write(&manifest, text).unwrap();
    let lock = flake.join("Cargo.lock");
    let mut text = std::fs::read_to_string(&lock).unwrap();
    let source = text
        .lines()
        .find(|l| l.starts_with("source = \"registry+"))
        .expect("a registry package in Cargo.lock")
        .to_owned();
    text.push_str(&format!(
        "\n[[package]]\nname = \"cli-only-dependency\"\nversion = \"1.0.0\"\n{source}\nchecksum = \"{}\"\n",
        "ab".repeat(32)
    ));
    std::fs::write(&lock, text).unwrap();
}

/// An edit to a flake's working tree.
type Edit = Box<dyn Fn(&Path)>;

/// The driver is built from its own workspace alone (nix/driver-workspace
/// and the crates it names): each edit below — init, a registry client, the
/// CLI's other host stages, a dependency only the CLI uses — changes neither
/// it nor any wheel's derivation, only the CLI's; an edit to cuwheel-build
/// changes the driver.
#[test]
fn an_edit_outside_the_build_crates_changes_no_wheel_derivation() {
    nix_built_driver(); // the plan (import from derivation) runs it
    let flake = common::flake::flake_copy();
    let [driver, mut cli, wheels] = drvs(flake.path());
    let comment_in = |files: &'static [&'static str]| {
        move |dir: &Path| {
            for file in files {
                append_comment(&dir.join(file));
            }
        }
    };
    // Each edit, and whether the Nix-built CLI (which leaves `init` out) changes with it.
    let edits: [(&str, bool, Edit); 4] = [
        ("init", false, Box::new(comment_in(&["src/init/mod.rs"]))),
        (
            "a registry client",
            true,
            Box::new(comment_in(&[
                "crates/cuwheel-registry/src/pip.rs",
                "crates/cuwheel-registry/src/apt.rs",
            ])),
        ),
        (
            "the CLI's other stages",
            true,
            Box::new(comment_in(&[
                "src/fetch/mod.rs",
                "src/publish/mod.rs",
                "src/cache/mod.rs",
                "src/reproduce/mod.rs",
                "src/cli/mod.rs",
            ])),
        ),
        (
            "a dependency only the CLI uses",
            true,
            Box::new(add_cli_only_dependency),
        ),
    ];
    for (edit, cli_changes, apply) in edits {
        apply(flake.path());
        let [driver_after, cli_after, wheels_after] = drvs(flake.path());
        assert_eq!(
            driver_after, driver,
            "{edit} changed the driver's derivation"
        );
        assert_eq!(wheels_after, wheels, "{edit} changed a wheel's derivation");
        assert_eq!(
            cli_after != cli,
            cli_changes,
            "{edit}: the CLI's derivation"
        );
        cli = cli_after;
    }

    // The driver's own `.drv` alone: the wheels' would build the edited
    // driver to make their plan, one more compile of it for nothing.
    append_comment(&flake.path().join("crates/cuwheel-build/src/lib.rs"));
    assert_ne!(
        drv(flake.path(), "driver"),
        driver,
        "the driver is built from crates/"
    );
}
