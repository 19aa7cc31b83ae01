//! More than one machine, through Nix's own remote builders: a second Nix
//! store, reached over real ssh (an sshd started by the test on a loopback
//! port, with throwaway keys), builds a kernel object of the demo for a
//! first store that may build nothing itself (`max-jobs = 0`).
//!
//! Both stores are rooted in temporary directories, so nothing is built or
//! copied into the system store. The first holds what a coordinator holds:
//! the kernel's derivation and the outputs of its inputs (the CUDA
//! toolchain, gcc, the torch headers, the seeds), copied from the system
//! store. Nix then copies those inputs to the builder over ssh (it has
//! none), builds there in the builder's sandbox, and copies the object back,
//! byte-identical to the one the system store built.
//!
//! Needs the demo's toolchains (`bash tests/prepare.sh`) and OpenSSH's
//! server (`/usr/sbin/sshd`).

use crate::common::text;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Instant;

use crate::common::flake::{installable, json, nix_ok, nix_ok_env, nix_ok_with};
use crate::common::sshd::Sshd;
use crate::common::{TempStore, run_ok};

const KERNEL: &str = "kernels.kernel-cuda130-torch211-axpby";

/// `nix path-info --json` of `path` in the store at `url` (`None`: the
/// system store): its NAR hash and size.
fn nar(url: Option<&str>, path: &str) -> (String, u64) {
    let mut args = vec!["path-info", "--json"];
    if let Some(url) = url {
        args.extend(["--store", url]);
    }
    args.push(path);
    let info = &json(&nix_ok(&args))[0];
    (
        info["narHash"].as_str().unwrap().to_string(),
        info["narSize"].as_u64().unwrap(),
    )
}

#[test]
#[cfg_attr(not(feature = "heavy"), ignore = "heavy tier: tests/run.sh --full")]
fn a_remote_builder_over_ssh_builds_a_kernel_object_and_nix_copies_it_back() {
    let test_start = Instant::now();
    let phase = |what: &str| eprintln!("{:6.1} s  {what}", test_start.elapsed().as_secs_f64());
    // The kernel in the system store: the reference bytes.
    let built = json(&nix_ok(&[
        "build",
        "--no-link",
        "--json",
        &installable(KERNEL),
    ]));
    let drv = built[0]["drvPath"].as_str().unwrap().to_string();
    let out = built[0]["outputs"]["out"].as_str().unwrap().to_string();
    let (reference_hash, _) = nar(None, &out);
    phase("the kernel is in the system store");

    // The coordinator's store: the derivation (and those it names), and the
    // outputs of its inputs with their closures.
    let coordinator = TempStore::new();
    nix_ok(&[
        "copy",
        "--no-check-sigs",
        "--derivation",
        "--to",
        &coordinator.url(),
        &drv,
    ]);
    let references = nix_ok_with("nix-store", &["--query", "--references", &drv]);
    let mut inputs = Vec::new();
    for input in text(&references.stdout)
        .lines()
        .filter(|l| l.ends_with(".drv"))
    {
        let outputs = nix_ok_with("nix-store", &["--query", "--outputs", input]);
        inputs.extend(text(&outputs.stdout).lines().map(str::to_string));
    }
    assert!(
        inputs.iter().any(|p| p.ends_with("-cuda130")),
        "the kernel's inputs include the CUDA toolchain: {inputs:?}"
    );
    let mut args = vec!["copy", "--no-check-sigs", "--to"];
    let coordinator_url = coordinator.url();
    args.push(&coordinator_url);
    args.extend(inputs.iter().map(String::as_str));
    nix_ok(&args);
    let mut closure_args = vec!["path-info", "--json", "--recursive"];
    closure_args.extend(inputs.iter().map(String::as_str));
    let closure = json(&nix_ok(&closure_args));
    phase("the coordinator's store holds the derivation and its inputs");
    let closure_bytes: u64 = closure
        .as_array()
        .unwrap()
        .iter()
        .map(|info| info["narSize"].as_u64().unwrap())
        .sum();

    // The builder: an empty store behind sshd, served by `nix-store --serve
    // --write` with the same pinned settings (the sandbox on, no
    // substituters).
    let builder = TempStore::new();
    let sshd = Sshd::start();
    let remote_program = sshd.dir().join("nix-store-serve");
    let nix_store = text(&run_ok(Command::new("sh").args(["-c", "command -v nix-store"])).stdout);
    fs::write(
        &remote_program,
        format!(
            "#!/bin/sh\nexec {} --option sandbox true --option sandbox-fallback false \
             --option substituters '' --option max-jobs auto \"$@\"\n",
            nix_store.trim()
        ),
    )
    .unwrap();
    fs::set_permissions(&remote_program, fs::Permissions::from_mode(0o755)).unwrap();
    // A machines line: URI, system, ssh key, max jobs, speed, features
    // (supported, mandatory), the host's public key.
    let uri = format!(
        "ssh://{}@127.0.0.1?remote-store={}&remote-program={}",
        sshd.user,
        builder.root().display(),
        remote_program.display()
    );
    let machine = format!(
        "{uri} x86_64-linux {} 2 1 - - {}",
        sshd.client_key().display(),
        sshd.host_key_base64()
    );

    let start = Instant::now();
    let coordinator_root = coordinator.root().to_str().unwrap().to_string();
    let sshopts = sshd.nix_sshopts();
    let realised = nix_ok_env(
        "nix-store",
        &[("NIX_SSHOPTS", &sshopts)],
        &[
            "--store",
            &coordinator_root,
            "--option",
            "max-jobs",
            "0",
            "--option",
            "builders-use-substitutes",
            "false",
            "--option",
            "builders",
            &machine,
            "--realise",
            &drv,
        ],
    );
    let elapsed = start.elapsed();
    phase("built on the builder and copied back");
    let log = text(&realised.stderr);
    assert_eq!(text(&realised.stdout).trim(), out, "{log}");
    // Built on the builder, over ssh …
    let remote = format!("ssh://{}@127.0.0.1", sshd.user);
    assert!(
        log.contains(&format!("building '{drv}' on '{remote}")),
        "{log}"
    );
    assert!(
        sshd.log().contains(&format!(
            "Accepted publickey for {} from 127.0.0.1",
            sshd.user
        )),
        "{}",
        sshd.log()
    );
    // … after Nix copied the toolchains there, since the builder had none …
    let cuda = inputs.iter().find(|p| p.ends_with("-cuda130")).unwrap();
    assert!(
        log.contains(&format!("copying path '{cuda}' to '{remote}'")),
        "{log}"
    );
    // … and the object copied back: both stores hold it, with the bytes the
    // system store built.
    assert!(
        log.contains(&format!("copying path '{out}' from '{remote}'")),
        "{log}"
    );
    let (built_there, size) = nar(Some(&builder.url()), &out);
    assert_eq!(built_there, reference_hash);
    assert_eq!(nar(Some(&coordinator.url()), &out).0, reference_hash);
    eprintln!(
        "remote build of {KERNEL} took {:.1} s, copying its inputs' closure ({} paths, {} MB as \
         NARs) to the builder and the {} kB object back",
        elapsed.as_secs_f64(),
        closure.as_array().unwrap().len(),
        closure_bytes / 1_000_000,
        size / 1000
    );
}
