//! `cuwheel reproduce` (the real binary) on the demo's real
//! `cu130-py313-torch211` wheel, rebuilt by real Nix through the repository's flake:
//! - the wheel Nix built reproduces identically after every derivation of
//!   its cell was built again and compared (`nix-store --check`; heavy
//!   tier);
//! - a copy with one byte of the extension module's `.text` flipped (and a
//!   correct RECORD) is different, and the report names the member and the
//!   section;
//! - a copy whose provenance names another checkout (a kernel's digest, the
//!   torch headers') is refused before anything is built, naming both;
//! - a wheel without provenance is not a cuwheel wheel;
//! - the wheel served by `python3 -m http.server` reproduces by URL.
//!
//! The pinned artifacts must be in the store (`bash tests/prepare.sh`).

use crate::common::texts;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::flake::{installable, json, nix_ok, repo};
use crate::common::{Server, cuwheel_bin};
use cuwheel::build::Provenance;
use cuwheel::store::Hash;
use cuwheel::wheel::{WheelArchive, WheelBuilder, ZipTimestamp};
use object::read::{Object, ObjectSection};

const CELL: &str = "cu130-py313-torch211";

/// The cell's wheel as the flake builds it.
fn built_wheel() -> PathBuf {
    let built = json(&nix_ok(&[
        "build",
        "--no-link",
        "--json",
        &installable(&format!("wheels.{CELL}")),
    ]));
    let result = PathBuf::from(built[0]["outputs"]["out"].as_str().unwrap());
    let wheel = fs::read_dir(&result)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .unwrap_or_else(|| panic!("no wheel in {}", result.display()));
    assert!(
        wheel
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("-cp313-cp313-"),
        "{}",
        wheel.display()
    );
    wheel
}

/// `cuwheel reproduce --project examples/demo-ext --flake <repo> ARGS...`.
fn reproduce(args: &[&str]) -> Output {
    Command::new(cuwheel_bin())
        .arg("reproduce")
        .arg("--project")
        .arg(repo().join("examples/demo-ext"))
        .arg("--flake")
        .arg(repo())
        .args(args)
        .output()
        .unwrap()
}

/// The wheel at `from` written again into `dir` with `edit` applied to its
/// members (name, data); RECORD, METADATA and WHEEL are written anew.
fn rewrite(from: &Path, dir: &Path, edit: impl Fn(&str, &mut Vec<u8>) -> bool) -> PathBuf {
    let archive = WheelArchive::open(from).unwrap();
    let filename = archive.filename();
    let mut builder = WheelBuilder::new(
        archive.metadata().clone(),
        filename.tags.clone(),
        filename.build.clone(),
    );
    let generated =
        ["METADATA", "WHEEL", "RECORD"].map(|f| format!("{}/{f}", archive.dist_info_dir()));
    for member in archive.members() {
        if generated.contains(&member.name) {
            continue;
        }
        let mut data = member.data.clone();
        if !edit(&member.name, &mut data) {
            continue;
        }
        let executable = member.unix_mode.is_some_and(|m| m & 0o111 != 0);
        builder.add_member(&member.name, data, executable).unwrap();
    }
    let path = builder
        .write_into(dir, ZipTimestamp::from_unix_seconds(0).unwrap())
        .unwrap();
    assert_eq!(path.file_name(), from.file_name());
    assert!(WheelArchive::open(&path).unwrap().verify().is_empty());
    path
}

/// Heavy: CI's tier rebuilds the same derivations of the same wheel with
/// `cuwheel reproduce` under the newest Nix, against the outputs the host's
/// Nix built (tests/it/nix_versions_nix.rs); this is the host's Nix against
/// itself.
#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn the_built_wheel_reproduces_identically_with_every_derivation_built_again() {
    let wheel = built_wheel();
    let out = reproduce(&[wheel.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let name = wheel.file_name().unwrap().to_string_lossy();
    let sha256 = Hash::sha256(fs::read(&wheel).unwrap()).to_hex();
    assert_eq!(stdout, format!("identical: {name} sha256 {sha256}\n"));
    // Every node of the cell was built again: four kernels, the binding,
    // the link, the wheel and the audit.
    let checked = stderr
        .lines()
        .find(|l| l.contains("nix-store --realise --check"))
        .unwrap_or_else(|| panic!("no check in:\n{stderr}"));
    for node in [
        "kernel-cuda130-torch211-axpby",
        "kernel-cuda130-torch211-bias_gelu",
        "kernel-cuda130-torch211-row_norm",
        "kernel-cuda130-torch211-tile_matmul",
        "binding-cuda130-torch211-py313",
        "link-cu130-py313-torch211",
        "wheel-cu130-py313-torch211",
        "audit-cu130-py313-torch211",
    ] {
        assert!(checked.contains(node), "{node} not checked: {checked}");
    }
}

#[test]
fn a_flipped_byte_in_the_modules_text_is_named_by_member_and_section() {
    let wheel = built_wheel();
    let dir = tempfile::tempdir().unwrap();
    let module = std::cell::RefCell::new(String::new());
    let flipped = rewrite(&wheel, dir.path(), |name, data| {
        if name.ends_with(".so") {
            let file =
                object::read::elf::ElfFile64::<object::LittleEndian>::parse(&**data).unwrap();
            let (start, size) = file.section_by_name(".text").unwrap().file_range().unwrap();
            let at = (start + size / 2) as usize;
            data[at] ^= 0x5a;
            *module.borrow_mut() = name.to_string();
        }
        true
    });
    let module = module.into_inner();
    assert!(module.starts_with("demo_ext/"), "{module}");
    let out = reproduce(&["--no-check", flipped.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("different: "), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "differs: {module} (ELF)\n  section .text:\n    given "
        )),
        "{stdout}"
    );
    // Only .text: no other section, no symbol.
    assert_eq!(stdout.matches("  section ").count(), 1, "{stdout}");
    assert!(!stdout.contains(" symbol "), "{stdout}");
    // RECORD lists the module's new hash: a line diff of exactly that line.
    let record = format!(
        "{}/RECORD",
        WheelArchive::open(&wheel).unwrap().dist_info_dir()
    );
    assert!(
        stdout.contains(&format!("differs: {record} (text)")),
        "{stdout}"
    );
    let changed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("  +"))
        .filter(|l| !l.starts_with("  ---") && !l.starts_with("  +++"))
        .collect();
    assert_eq!(changed.len(), 2, "{stdout}");
    assert!(
        changed.iter().all(|l| l[3..].starts_with(&module)),
        "{changed:?}"
    );
    // Nothing else differs: the rewrite kept every other member.
    assert_eq!(stdout.matches("differs: ").count(), 2, "{stdout}");
    assert!(!stdout.contains("only in the"), "{stdout}");
}

#[test]
fn a_wheel_from_another_checkout_is_refused_before_anything_is_built() {
    let wheel = built_wheel();
    let dir = tempfile::tempdir().unwrap();
    let kernel = "csrc/kernels/axpby.cu";
    let (fake_source, fake_headers) = ("ab".repeat(32), "cd".repeat(32));
    let original = std::cell::RefCell::new(None);
    let other = rewrite(&wheel, dir.path(), |name, data| {
        if name.ends_with("/cuwheel-provenance.json") {
            let mut provenance: Provenance = serde_json::from_slice(data).unwrap();
            *original.borrow_mut() = Some(provenance.clone());
            provenance
                .sources
                .insert(kernel.into(), fake_source.clone());
            provenance.source_sha256 = Provenance::source_sha256(&provenance.sources);
            let torch = provenance.toolchains.get_mut("torch").unwrap();
            torch.headers_nar_sha256 = Some(fake_headers.clone());
            *data = serde_json::to_vec_pretty(&provenance).unwrap();
        }
        true
    });
    let original = original.into_inner().expect("the wheel has a provenance");
    let out = reproduce(&[other.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("other checkout: "), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  {kernel}: the wheel was built from sha256 {fake_source}, the checkout has {}\n",
            original.sources[kernel]
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  the torch toolchain: the wheel was built with the headers tree (NAR sha256 \
             {fake_headers}), where the checkout's lock has the headers tree (NAR sha256 {})\n",
            original.toolchains["torch"]
                .headers_nar_sha256
                .as_ref()
                .unwrap()
        )),
        "{stdout}"
    );
    // Exactly those two, and the advice; nothing was built.
    assert_eq!(
        stdout.matches(": the wheel was built").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("Check out the commit that built the wheel"),
        "{stdout}"
    );
    assert!(!stderr.contains("building"), "{stderr}");
}

#[test]
fn a_wheel_without_provenance_is_not_a_cuwheel_wheel() {
    let wheel = built_wheel();
    let dir = tempfile::tempdir().unwrap();
    let bare = rewrite(&wheel, dir.path(), |name, _| {
        !name.ends_with("/cuwheel-provenance.json")
    });
    let out = reproduce(&[bare.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("is not a cuwheel wheel"), "{stderr}");
    assert!(stderr.contains("cuwheel-provenance.json"), "{stderr}");
}

#[test]
fn a_wheel_served_over_http_reproduces_by_url() {
    let wheel = built_wheel();
    let dir = tempfile::tempdir().unwrap();
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    fs::copy(&wheel, dir.path().join(&name)).unwrap();
    let server = Server::start(dir.path(), &dir.path().join("server.log"));
    // As an index links it: the local label's `+` encoded.
    let url = server.url(&name.replace('+', "%2B"));
    // One build at a time: Nix takes `--max-jobs` after the pinned `auto`.
    let out = reproduce(&["--no-check", "--max-jobs", "1", &url]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let sha256 = Hash::sha256(fs::read(&wheel).unwrap()).to_hex();
    assert!(
        stdout.starts_with(&format!("identical: {name} sha256 {sha256} ")),
        "{stdout}"
    );
    assert!(stderr.contains(&format!("downloading {url}")), "{stderr}");

    // A URL the server does not have is an error naming it.
    let missing = server.url("missing-1.0-py3-none-any.whl");
    let out = reproduce(&["--no-check", &missing]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&missing) && stderr.contains("404"),
        "{stderr}"
    );
}
