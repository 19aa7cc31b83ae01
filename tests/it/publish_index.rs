//! `cuwheel publish` (the real binary) against real installers: wheels we
//! write are published, the directory is served by `python3 -m http.server`
//! and real pip and uv install from the `cu130/` variant index into fresh
//! venvs, the installed files matching the wheel's RECORD. Then the index's
//! promises: publishing the same wheels again changes no byte; a new version
//! keeps the old one listed; a publish killed with SIGKILL at any point
//! leaves an index whose every link resolves to a file with the linked hash;
//! one version's x86_64 and aarch64 wheels share an index, and pip picks
//! each platform's;
//! a wheel failing the audit, or reusing a published name with other bytes,
//! is refused and nothing is written.

use crate::audit_support;
use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Rng, Server, TestEnv, cuwheel_bin, fresh_venv, run_ok, snapshot, uv_install};
use cuwheel::wheel::{
    CoreMetadata, ProjectName, TagSet, Version, WheelArchive, WheelBuilder, ZipTimestamp,
};
use sha2::{Digest, Sha256};

/// A pure-Python `demo-ext` wheel of `version` in `dir`, with `blob_bytes`
/// of incompressible data (to make publishing take a while).
fn demo_wheel(dir: &Path, version: &str, blob_bytes: usize) -> PathBuf {
    let mut metadata = CoreMetadata::new(
        ProjectName::new("demo-ext").unwrap(),
        Version::parse(version).unwrap(),
    );
    metadata.summary = Some("cuwheel's publish cross-check".to_string());
    metadata.requires_python = Some(">=3.9, <4".to_string());
    let mut wheel = WheelBuilder::new(metadata, TagSet::parse("py3-none-any").unwrap(), None);
    wheel
        .add_member(
            "demo_ext/__init__.py",
            format!("VERSION = {version:?}\n").into_bytes(),
            false,
        )
        .unwrap();
    wheel
        .add_member(
            "demo_ext/ops.py",
            b"def scale(x, a):\n    return [a * v for v in x]\n".to_vec(),
            false,
        )
        .unwrap();
    if blob_bytes > 0 {
        let seed = version
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31) ^ b as u64);
        wheel
            .add_member("demo_ext/blob.bin", Rng(seed | 1).bytes(blob_bytes), false)
            .unwrap();
    }
    fs::create_dir_all(dir).unwrap();
    wheel.write_into(dir, ZipTimestamp::EARLIEST).unwrap()
}

fn cuwheel_publish(dir: &Path, wheels: &[&Path]) -> Command {
    let mut cmd = Command::new(cuwheel_bin());
    cmd.arg("publish").arg("--to").arg(dir).args(wheels);
    cmd
}

fn publish_ok(dir: &Path, wheels: &[&Path]) -> String {
    String::from_utf8(run_ok(&mut cuwheel_publish(dir, wheels)).stdout).unwrap()
}

fn publish_refused(dir: &Path, wheels: &[&Path]) -> String {
    let out: Output = cuwheel_publish(dir, wheels).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "publish should be refused\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The generation `.current` names.
fn current(dir: &Path) -> PathBuf {
    fs::read_link(dir.join(".current")).unwrap()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The value of `name="..."` in an HTML tag.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// One link of a project page: (file URL path relative to the page, sha256, metadata sha256, requires-python).
type Link = (String, String, String, Option<String>);

fn page_links(html: &str) -> Vec<Link> {
    html.split("<a ")
        .skip(1)
        .map(|rest| {
            let tag = format!(" {}", &rest[..rest.find('>').unwrap()]);
            let href = attribute(&tag, "href").unwrap();
            let (url, hash) = href
                .split_once("#sha256=")
                .expect("every link has #sha256=");
            let core = attribute(&tag, "data-core-metadata").expect("data-core-metadata");
            assert_eq!(attribute(&tag, "data-dist-info-metadata"), Some(core));
            (
                url.to_string(),
                hash.to_string(),
                core.strip_prefix("sha256=").unwrap().to_string(),
                attribute(&tag, "data-requires-python").map(str::to_string),
            )
        })
        .collect()
}

/// Checks the index served from `dir` (as a static server sees it, through
/// the symlinks) and returns every index's wheel files: every project list
/// entry has a page, every link resolves to a file with the linked sha256
/// and a `.metadata` with the linked one, and each page's JSON lists the
/// same files as its HTML.
fn check_index(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut indexes = BTreeMap::new();
    let mut roots = vec![String::new()];
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("cu") && dir.join(&name).join("index.html").is_file() {
            roots.push(format!("{name}/"));
        }
    }
    for root in roots {
        let list = fs::read_to_string(dir.join(&root).join("index.html")).unwrap();
        let mut files = BTreeSet::new();
        for project in list.split("<a href=\"").skip(1) {
            let project = &project[..project.find('"').unwrap()];
            let page_dir = dir.join(&root).join(project);
            let html = fs::read_to_string(page_dir.join("index.html")).unwrap_or_else(|e| {
                panic!("{root}{project}index.html is listed but unreadable: {e}")
            });
            let links = page_links(&html);
            assert!(!links.is_empty(), "{root}{project} lists no file");
            let json: serde_json::Value =
                serde_json::from_slice(&fs::read(page_dir.join("index.json")).unwrap()).unwrap();
            let json_files: Vec<(String, String)> = json["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["url"].as_str().unwrap().to_string(),
                        f["hashes"]["sha256"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let html_files: Vec<(String, String)> = links
                .iter()
                .map(|(u, h, _, _)| (u.clone(), h.clone()))
                .collect();
            assert_eq!(
                json_files, html_files,
                "{root}{project}: JSON and HTML differ"
            );
            for (url, hash, metadata_hash, requires_python) in links {
                // A relative URL resolves against the page's URL directory.
                let mut target = PathBuf::from(format!("/{root}{project}"));
                for part in url.split('/') {
                    match part {
                        ".." => assert!(target.pop(), "{url} leaves the served directory"),
                        part => target.push(percent_decode(part)),
                    }
                }
                let file = dir.join(target.strip_prefix("/").unwrap());
                let bytes = fs::read(&file).unwrap_or_else(|e| {
                    panic!("{root}{project} links {url}, which does not resolve: {e}")
                });
                assert_eq!(sha256_hex(&bytes), hash, "{}", file.display());
                let metadata = fs::read(format!("{}.metadata", file.display())).unwrap();
                assert_eq!(
                    sha256_hex(&metadata),
                    metadata_hash,
                    "{}.metadata",
                    file.display()
                );
                assert_eq!(requires_python.as_deref(), Some("&gt;=3.9, &lt;4"));
                files.insert(file.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        indexes.insert(root, files);
    }
    indexes
}

/// Checks what is installed in the venv of `python` against the wheel:
/// its version, the installer, and every file the wheel's RECORD lists.
fn assert_installed(python: &Path, wheel: &Path, version: &str, installer: &str) {
    let out = run_ok(Command::new(python).args([
        "-c",
        "import importlib.metadata as m, sysconfig, demo_ext\n\
         print(m.version('demo-ext')); print(demo_ext.VERSION); print(sysconfig.get_path('purelib'))",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], [version, version], "{text}");
    let site = Path::new(lines[2]);

    let checked = common::assert_installed_as_recorded(site, wheel);
    let dist_info = WheelArchive::open(wheel)
        .unwrap()
        .dist_info_dir()
        .to_string();
    assert!(checked >= 3, "RECORD listed only {checked} hashed files");
    let recorded_installer = fs::read_to_string(site.join(&dist_info).join("INSTALLER")).unwrap();
    assert_eq!(recorded_installer.trim(), installer);
}

#[test]
fn pip_and_uv_install_from_the_cu130_index() {
    let env = TestEnv::get();
    let uv = env.venv_bin("uv");
    assert!(
        uv.is_file(),
        "{} is missing: run `bash tests/prepare.sh` (it installs tests/requirements.txt)",
        uv.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let cu130 = demo_wheel(&t.join("in"), "0.1.0+pt211cu130", 0);
    let cu128 = demo_wheel(&t.join("in"), "0.1.0+pt211cu128", 0);
    let index = t.join("index");
    let out = publish_ok(&index, &[&cu130, &cu128]);
    assert!(
        out.contains("published demo_ext-0.1.0+pt211cu130-py3-none-any.whl"),
        "{out}"
    );
    assert!(out.contains("cu128/ cu130/"), "{out}");

    let indexes = check_index(&index);
    let names = |w: &Path| w.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(indexes["cu130/"], BTreeSet::from([names(&cu130)]));
    assert_eq!(indexes["cu128/"], BTreeSet::from([names(&cu128)]));
    assert_eq!(indexes[""], BTreeSet::from([names(&cu128), names(&cu130)]));

    let server = Server::start(&index, &t.join("server.log"));
    let python = fresh_venv(&env, &t.join("pip-venv"));
    run_ok(
        Command::new(env.python())
            .args([
                "-m",
                "pip",
                "--disable-pip-version-check",
                "--no-input",
                "--python",
            ])
            .arg(&python)
            .args(["install", "--no-deps", "--no-cache-dir", "--index-url"])
            .arg(server.url("cu130/"))
            .arg("demo-ext"),
    );
    assert_installed(&python, &cu130, "0.1.0+pt211cu130", "pip");

    // uv resolves from the metadata files alone (with --no-deps, its
    // install goes straight to the wheel).
    let mut compile = Command::new(&uv)
        .args(["pip", "compile", "--no-config", "--no-cache", "--index-url"])
        .arg(server.url("cu128/"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    compile
        .stdin
        .take()
        .unwrap()
        .write_all(b"demo-ext\n")
        .unwrap();
    let out = compile.wait_with_output().unwrap();
    let resolved = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success() && resolved.contains("\ndemo-ext==0.1.0+pt211cu128\n"),
        "{resolved}"
    );

    let python = fresh_venv(&env, &t.join("uv-venv"));
    uv_install(&env, &python, &server.url("cu128/"), "demo-ext");
    assert_installed(&python, &cu128, "0.1.0+pt211cu128", "uv");

    // pip and uv fetched each PEP 658 metadata file, then the wheel.
    let requests = server.requests();
    for wheel in [&cu130, &cu128] {
        let encoded = names(wheel).replace('+', "%2B");
        assert!(
            requests.contains(&format!("GET /{encoded}.metadata HTTP")),
            "{encoded}.metadata was not requested:\n{requests}"
        );
        assert!(
            requests.contains(&format!("GET /{encoded} HTTP")),
            "{requests}"
        );
    }
}

/// One version built for x86_64 and for aarch64 (real ELF modules, the
/// aarch64 one from Debian's cross gcc) is published into one index, and
/// pip, asked for each platform, downloads that platform's wheel.
#[test]
fn pip_picks_each_platforms_wheel_from_one_index() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let module = |arch: &str, so: PathBuf| {
        audit_support::write_wheel_with_metadata(
            &t.join("in"),
            &format!("demo_ext-0.1.0+pt211cu130-cp311-cp311-manylinux_2_17_{arch}.whl"),
            &[(
                format!("demo_ext/_ext.cpython-311-{arch}-linux-gnu.so").as_str(),
                fs::read(so).unwrap(),
            )],
            "Requires-Python: >=3.9, <4\n",
        )
    };
    let shared = ["-shared", "-fPIC"];
    fs::create_dir_all(t.join("in")).unwrap();
    let x86 = module(
        "x86_64",
        audit_support::gcc(t, "x86_64.so", audit_support::EXTENSION_C, false, &shared),
    );
    let arm = module(
        "aarch64",
        audit_support::aarch64_gcc(t, "aarch64.so", audit_support::EXTENSION_C, &shared),
    );
    let index = t.join("index");
    let out = publish_ok(&index, &[&x86, &arm]);
    assert!(out.contains("cu130/"), "{out}");
    let names = |w: &Path| w.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        check_index(&index)["cu130/"],
        BTreeSet::from([names(&x86), names(&arm)])
    );

    let server = Server::start(&index, &t.join("server.log"));
    // pip's --platform takes the tags given and no older ones: a machine
    // of glibc 2.28 accepts manylinux_2_28 down to 2_17.
    for (arch, wheel) in [("aarch64", &arm), ("x86_64", &x86)] {
        let dest = t.join(arch);
        run_ok(
            Command::new(env.python())
                .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
                .args([
                    "download",
                    "--no-deps",
                    "--no-cache-dir",
                    "--only-binary=:all:",
                ])
                .args(["--platform", &format!("manylinux_2_28_{arch}")])
                .args(["--platform", &format!("manylinux_2_17_{arch}")])
                .args(["--python-version", "3.11"])
                .args(["--implementation", "cp", "--abi", "cp311", "--dest"])
                .arg(&dest)
                .arg("--index-url")
                .arg(server.url("cu130/"))
                .arg("demo-ext"),
        );
        let got: Vec<String> = fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, [names(wheel)], "pip for {arch}");
        assert_eq!(
            fs::read(dest.join(names(wheel))).unwrap(),
            fs::read(wheel).unwrap()
        );
    }
}

#[test]
fn publishing_the_same_wheels_again_changes_no_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let a = demo_wheel(&t.join("in"), "0.1.0+pt211cu130", 0);
    let b = demo_wheel(&t.join("in"), "0.1.0+pt29cu126", 0);
    let c = demo_wheel(&t.join("in"), "0.1.0", 0);
    let index = t.join("index");
    publish_ok(&index, &[&a, &b, &c]);
    let first = snapshot(&index);
    let out = publish_ok(&index, &[&c, &b, &a]);
    assert!(out.contains("(unchanged)"), "{out}");
    assert_eq!(snapshot(&index), first);

    // The same wheels published one by one into a new directory give the same index files.
    let other = t.join("other");
    for wheel in [&b, &c, &a] {
        publish_ok(&other, &[wheel]);
    }
    assert_eq!(snapshot(&other), first);
    // A wheel without a CUDA label is only in the combined index.
    let indexes = check_index(&index);
    assert_eq!(indexes.keys().collect::<Vec<_>>(), ["", "cu126/", "cu130/"]);
    assert_eq!(indexes[""].len(), 3);
}

#[test]
fn a_new_version_is_added_and_the_old_one_stays_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let old = demo_wheel(&t.join("in"), "0.1.0+pt211cu130", 0);
    let new = demo_wheel(&t.join("in"), "0.2.0+pt211cu130", 0);
    let index = t.join("index");
    publish_ok(&index, &[&old]);
    let first_generation = current(&index);
    let out = publish_ok(&index, &[&new]);
    assert!(out.contains("2 wheels listed"), "{out}");
    assert_ne!(current(&index), first_generation);
    let indexes = check_index(&index);
    for root in ["", "cu130/"] {
        assert_eq!(indexes[root].len(), 2, "{root}: {:?}", indexes[root]);
    }
    let page: serde_json::Value =
        serde_json::from_slice(&fs::read(index.join("cu130/demo-ext/index.json")).unwrap())
            .unwrap();
    assert_eq!(
        page["versions"],
        serde_json::json!(["0.1.0+pt211cu130", "0.2.0+pt211cu130"])
    );
    // The old generation is gone: nothing names it any more.
    let generations: Vec<_> = fs::read_dir(index.join(".generations")).unwrap().collect();
    assert_eq!(generations.len(), 1);
}

#[test]
fn a_publish_killed_at_any_point_leaves_a_valid_index() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let cp = |from: &Path, to: &Path| {
        let _ = fs::remove_dir_all(to);
        run_ok(Command::new("cp").arg("-a").arg(from).arg(to));
    };
    let pristine = t.join("pristine");
    publish_ok(
        &pristine,
        &[&demo_wheel(&t.join("in"), "0.1.0+pt211cu130", 0)],
    );
    let old_generation = current(&pristine);
    let old_entries = snapshot(&pristine);

    // Large incompressible wheels, so that copying them takes a while.
    let big: Vec<PathBuf> = (0..8)
        .map(|i| demo_wheel(&t.join("in"), &format!("0.{}.0+pt211cu130", i + 2), 6 << 20))
        .collect();
    let big: Vec<&Path> = big.iter().map(PathBuf::as_path).collect();

    // How long a whole publish takes, and the index it makes.
    let index = t.join("index");
    cp(&pristine, &index);
    let started = Instant::now();
    publish_ok(&index, &big);
    let full = started.elapsed();
    let final_generation = current(&index);

    // SIGKILL at spread points of that duration, and last right when the
    // first new wheel file appears; each try starts from the old index.
    let mut stops: Vec<Option<Duration>> = (1..10).map(|i| Some(full * i / 10)).collect();
    stops.push(None);
    let mut killed_midway = 0;
    for stop in stops {
        cp(&pristine, &index);
        let mut child = cuwheel_publish(&index, &big)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            let due = match stop {
                Some(at) => started.elapsed() >= at,
                None => fs::read_dir(&index).unwrap().any(|e| {
                    let name = PathBuf::from(e.unwrap().file_name());
                    name.extension().is_some_and(|x| x == "whl") && !old_entries.contains_key(&name)
                }),
            };
            if due {
                child.kill().unwrap();
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let finished = child.wait().unwrap().success();
        check_index(&index);
        let generation = current(&index);
        if generation == final_generation {
            continue; // finished, or killed after its swap
        }
        assert_eq!(
            generation, old_generation,
            "neither the old nor the new index"
        );
        assert!(!finished, "a publish that exited 0 must have swapped");
        let now = snapshot(&index);
        for (path, bytes) in &old_entries {
            assert_eq!(now.get(path), Some(bytes), "{} changed", path.display());
        }
        // Killed before the swap with something already written: midway.
        if now.len() > old_entries.len() {
            killed_midway += 1;
        }
    }
    assert!(
        killed_midway > 0,
        "no kill landed after something was written and before the swap; the test proved nothing"
    );

    // A publish after the last kill completes and removes what it left staged.
    publish_ok(&index, &big);
    assert_eq!(current(&index), final_generation);
    assert_eq!(check_index(&index)["cu130/"].len(), 9);
    assert_eq!(fs::read_dir(index.join(".generations")).unwrap().count(), 1);
    let leftovers: Vec<_> = fs::read_dir(&index)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".publish-") || name == ".current.next")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_wheel_failing_the_audit_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let good = demo_wheel(&t.join("in"), "0.1.0+pt211cu130", 0);
    // totalorder has been versioned GLIBC_2.31 since glibc 2.31: too new for manylinux_2_28.
    let so = audit_support::gcc(
        t,
        "glibc231.so",
        "#define _GNU_SOURCE\n#include <math.h>\n\
         int PyInit__ext(double a, double b) { return totalorder(&a, &b); }\n",
        false,
        &["-shared", "-fPIC", "-lm"],
    );
    let bad = audit_support::write_wheel(
        t,
        "demo-0.1+pt211cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[(
            "demo/_ext.cpython-311-x86_64-linux-gnu.so",
            fs::read(so).unwrap(),
        )],
    );

    // Into a new directory: it is not even created.
    let index = t.join("index");
    let err = publish_refused(&index, &[&good, &bad]);
    assert!(!index.exists(), "{} was created", index.display());
    for needle in [
        "1 of 2 wheels cannot be published, so nothing was written",
        &format!("{} fails the audit", bad.display()),
        "requires GLIBC_2.31",
    ] {
        assert!(err.contains(needle), "`{needle}` not in:\n{err}");
    }

    // Into an existing index: not a byte changes.
    publish_ok(&index, &[&good]);
    let before = snapshot(&index);
    let newer = demo_wheel(&t.join("in"), "0.2.0+pt211cu130", 0);
    publish_refused(&index, &[&newer, &bad]);
    assert_eq!(snapshot(&index), before);
}

#[test]
fn conflicting_wheels_and_foreign_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let wheel = demo_wheel(&t.join("a"), "0.1.0+pt211cu130", 0);
    let index = t.join("index");
    publish_ok(&index, &[&wheel]);
    let before = snapshot(&index);

    // Same file name, other bytes.
    let other = demo_wheel(&t.join("b"), "0.1.0+pt211cu130", 10);
    let err = publish_refused(&index, &[&other]);
    assert!(err.contains("a different wheel named demo_ext-0.1.0+pt211cu130-py3-none-any.whl is already published"), "{err}");
    assert!(
        err.contains("publish it under a new version or build tag"),
        "{err}"
    );
    let err = publish_refused(&t.join("fresh"), &[&wheel, &other]);
    assert!(
        err.contains("have the same file name but different bytes"),
        "{err}"
    );
    assert_eq!(snapshot(&index), before);

    // A directory that holds something else.
    let foreign = t.join("foreign");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let err = publish_refused(&foreign, &[&wheel]);
    assert!(
        err.contains("is not empty and holds no index made by cuwheel publish"),
        "{err}"
    );
    assert_eq!(fs::read_dir(&foreign).unwrap().count(), 1);

    // Not a wheel at all.
    let err = publish_refused(&index, &[&t.join("missing-0.1-py3-none-any.whl")]);
    assert!(
        err.contains("missing-0.1-py3-none-any.whl: cannot be read"),
        "{err}"
    );
    assert_eq!(snapshot(&index), before);
}
