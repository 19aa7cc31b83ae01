//! Cross-checks of `cuwheel::store` against Nix 2.8 itself: NAR hashes and
//! fixed-output paths of generated files and trees, `.drv` paths, bytes
//! and output paths of generated `derivation { … }` expressions, and the
//! lock's config digest against the flake's (`nix/config-digest.nix`).
//!
//! Everything runs in a store rooted in a temporary directory (`--store`),
//! so the tests need neither root nor a daemon, and leave nothing behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use crate::common::{Rng, run_ok};
use cuwheel::registry::nix::{Nix, NixError};
use cuwheel::store::derivation::{Derivation, DerivationOutput, OutputHashes};
use cuwheel::store::hash::{Hash, HashAlgo};
use cuwheel::store::nar;
use cuwheel::store::path::{self, FileIngestion, StorePath};

/// A file name: printable ASCII (no '/'), spaces, and non-ASCII letters.
fn random_name(rng: &mut Rng) -> String {
    const CHARS: &[char] = &[
        'a', 'Z', '0', '.', '-', '_', ' ', '+', '=', '#', '\'', 'é', 'ß', '語', '~',
    ];
    let len = 1 + rng.below(12);
    let name: String = (0..len).map(|_| CHARS[rng.below(CHARS.len())]).collect();
    if name == "." || name == ".." {
        "dot".into()
    } else {
        name
    }
}

/// Fills `dir` with a random tree: files of many sizes (some executable),
/// symlinks (relative, absolute, dangling), empty and deeply nested dirs.
fn random_tree(rng: &mut Rng, dir: &Path, depth: u32) {
    fs::create_dir_all(dir).unwrap();
    let entries = rng.below(6);
    for _ in 0..entries {
        let path = dir.join(random_name(rng));
        if path.exists() {
            continue;
        }
        match rng.below(10) {
            0..=4 => {
                let size = [0, 1, 7, 8, 9, 100, 4096, 70_000][rng.below(8)];
                fs::write(&path, rng.bytes(size)).unwrap();
                let mode = if rng.below(3) == 0 { 0o755 } else { 0o644 };
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            }
            5 | 6 => {
                let target = ["sibling", "../up", "/absolute/target", "a b/c"][rng.below(4)];
                symlink(target, &path).unwrap();
            }
            _ if depth < 12 => random_tree(rng, &path, depth + 1),
            _ => fs::create_dir(&path).unwrap(),
        }
    }
}

fn stdout_lines(out: std::process::Output) -> Vec<String> {
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

struct Fixtures {
    _dir: tempfile::TempDir,
    files: Vec<PathBuf>,
    trees: Vec<PathBuf>,
}

fn fixtures() -> Fixtures {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let mut files = Vec::new();
    for (i, size) in [0usize, 1, 5, 8, 13, 1000, 65_536, 1_048_583]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("file-{i}.bin"));
        fs::write(&path, rng.bytes(size)).unwrap();
        if i % 3 == 0 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        files.push(path);
    }
    let mut trees = Vec::new();
    for i in 0..24 {
        let path = dir.path().join(format!("tree-{i}"));
        random_tree(&mut rng, &path, 0);
        trees.push(path);
    }
    // One chain deep enough that recursion depth matters.
    let mut deep = dir.path().join("tree-deep");
    trees.push(deep.clone());
    for i in 0..64 {
        deep = deep.join(format!("level{i}"));
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("bottom"), b"bottom").unwrap();
    // A single symlink as the whole tree.
    let link = dir.path().join("tree-link");
    symlink("target", &link).unwrap();
    trees.push(link);
    Fixtures {
        _dir: dir,
        files,
        trees,
    }
}

#[test]
fn nar_hashes_equal_nix_hash_and_nix_store_dump() {
    let fx = fixtures();
    let all: Vec<&PathBuf> = fx.files.iter().chain(&fx.trees).collect();
    let nix_hashes = stdout_lines(run_ok(
        Command::new("nix-hash")
            .args(["--type", "sha256", "--base32"])
            .args(&all),
    ));
    assert_eq!(nix_hashes.len(), all.len());
    for (path, nix) in all.iter().zip(&nix_hashes) {
        let (ours, size) = nar::nar_hash(path).unwrap();
        assert_eq!(&ours.to_base32(), nix, "NAR hash of {}", path.display());
        let dump = run_ok(Command::new("nix-store").arg("--dump").arg(path)).stdout;
        assert_eq!(size, dump.len() as u64, "NAR size of {}", path.display());
        assert_eq!(
            Hash::sha256(&dump),
            ours,
            "nix-store --dump of {}",
            path.display()
        );
        let mut our_dump = Vec::new();
        nar::dump(path, &mut our_dump).unwrap();
        assert!(our_dump == dump, "NAR bytes of {}", path.display());
    }
    eprintln!(
        "compared {} NARs with nix-hash and nix-store --dump",
        all.len()
    );
}

#[test]
fn fixed_output_paths_equal_nix_store_add_fixed() {
    let fx = fixtures();
    let store = tempfile::tempdir().unwrap();
    let nix = Nix::with_store_root(store.path());
    let mut compared = 0;
    for file in &fx.files {
        let bytes = fs::read(file).unwrap();
        let ours =
            path::fixed_output_path(FileIngestion::Flat, &Hash::sha256(&bytes), name_of(file))
                .unwrap();
        assert_eq!(
            nix.add_fixed(file, FileIngestion::Flat).unwrap(),
            ours,
            "flat {}",
            file.display()
        );
        compared += 1;
    }
    for tree in fx.files.iter().chain(&fx.trees) {
        let (nar_hash, _) = nar::nar_hash(tree).unwrap();
        let ours =
            path::fixed_output_path(FileIngestion::Recursive, &nar_hash, name_of(tree)).unwrap();
        let added = nix.add_fixed(tree, FileIngestion::Recursive).unwrap();
        assert_eq!(added, ours, "recursive {}", tree.display());
        assert!(nix.real_path(&added).symlink_metadata().is_ok());
        compared += 1;
    }
    let valid = nix.valid_paths(&[path::fixed_output_path(
        FileIngestion::Flat,
        &Hash::sha256(b"never added"),
        "x",
    )
    .unwrap()]);
    assert_eq!(valid.unwrap(), vec![]);
    eprintln!("compared {compared} fixed-output paths with nix-store --add-fixed");
}

fn name_of(path: &Path) -> &str {
    path.file_name().unwrap().to_str().unwrap()
}

/// A piece of a string in a generated expression: literal text, or a
/// reference that Nix interpolates (and that adds to the derivation's inputs).
#[derive(Clone)]
enum Part {
    Lit(&'static str),
    Out(usize, &'static str),
    Src(usize),
}

enum Source {
    /// `builtins.toFile name contents`, contents may refer to earlier sources.
    ToFile(&'static str, Vec<Part>),
    /// `builtins.path { path = <a generated tree>; name = …; }`.
    Tree(&'static str, usize),
}

#[derive(Default)]
struct Case {
    name: &'static str,
    outputs: Option<Vec<&'static str>>,
    /// outputHashMode, outputHashAlgo (None when the hash is SRI), outputHash text.
    fixed: Option<(&'static str, Option<&'static str>, String)>,
    builder: Vec<Part>,
    args: Vec<Vec<Part>>,
    env: Vec<(&'static str, Vec<Part>)>,
}

fn lit(s: &'static str) -> Vec<Part> {
    vec![Part::Lit(s)]
}

/// Nix string syntax for literal text.
fn nix_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("${", "\\${")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}

const NASTY: &str = "q\"uote \\back\\slash\nnew\tline\r ü語 ${not-interpolated} $ {}";

fn cases(fixed_hashes: &[Hash]) -> (Vec<Source>, Vec<Case>) {
    let sources = vec![
        Source::ToFile("plain.txt", lit("hello\n")),
        Source::ToFile("nasty.txt", lit(NASTY)),
        Source::ToFile(
            "refers.sh",
            vec![
                Part::Lit("source "),
                Part::Src(0),
                Part::Lit(" "),
                Part::Src(1),
            ],
        ),
        Source::Tree("tree-src", 0),
        Source::Tree("source", 5),
    ];
    let base = |name| Case {
        name,
        builder: lit("/bin/sh"),
        ..Default::default()
    };
    let h = |i: usize| fixed_hashes[i].clone();
    let cases = vec![
        /* 0 */
        Case {
            args: vec![lit("-c"), lit("echo hi")],
            ..base("simple")
        },
        /* 1 */
        Case {
            outputs: Some(vec!["out", "dev", "lib"]),
            ..base("multi")
        },
        /* 2 */
        Case {
            outputs: Some(vec!["lib", "bin", "out"]),
            env: vec![("zz", lit("last")), ("AA", lit("first"))],
            ..base("unsorted-outputs")
        },
        /* 3 */
        Case {
            env: vec![("nasty", lit(NASTY)), ("empty", lit(""))],
            args: vec![lit(NASTY), lit("")],
            ..base("escapes")
        },
        /* 4 */
        Case {
            fixed: Some(("flat", Some("sha256"), h(0).to_base32())),
            ..base("fixed-flat-base32")
        },
        /* 5 */
        Case {
            fixed: Some(("flat", Some("sha256"), h(1).to_hex())),
            ..base("fixed-flat-hex")
        },
        /* 6 */
        Case {
            fixed: Some(("recursive", None, h(2).to_sri())),
            ..base("fixed-rec-sri")
        },
        /* 7 */
        Case {
            fixed: Some(("recursive", Some("sha256"), h(3).to_base32())),
            ..base("fixed-rec")
        },
        /* 8 */
        Case {
            fixed: Some(("flat", Some("sha512"), h(4).to_hex())),
            ..base("fixed-sha512")
        },
        /* 9 */
        Case {
            env: vec![("dep", vec![Part::Lit("at "), Part::Out(0, "out")])],
            ..base("one-input")
        },
        /* 10 */
        Case {
            env: vec![
                ("dev", vec![Part::Out(1, "dev")]),
                (
                    "lib",
                    vec![Part::Out(1, "lib"), Part::Lit(":"), Part::Out(1, "out")],
                ),
            ],
            ..base("input-outputs")
        },
        /* 11 */
        Case {
            env: vec![("src", vec![Part::Out(4, "out")])],
            ..base("fixed-input")
        },
        /* 12 */
        Case {
            env: vec![(
                "srcs",
                vec![
                    Part::Out(6, "out"),
                    Part::Lit(" "),
                    Part::Out(7, "out"),
                    Part::Lit(" "),
                    Part::Out(8, "out"),
                ],
            )],
            ..base("fixed-inputs")
        },
        /* 13 */
        Case {
            builder: vec![Part::Src(2)],
            args: vec![vec![Part::Src(0)]],
            env: vec![("tree", vec![Part::Src(3)])],
            ..base("sources")
        },
        /* 14 */
        Case {
            outputs: Some(vec!["out", "doc"]),
            env: vec![
                ("a", vec![Part::Out(9, "out")]),
                ("b", vec![Part::Out(10, "out")]),
                ("c", vec![Part::Out(13, "out")]),
            ],
            ..base("chain")
        },
        /* 15 */
        Case {
            env: vec![
                ("x", vec![Part::Out(14, "doc")]),
                ("y", vec![Part::Out(2, "bin"), Part::Out(2, "lib")]),
            ],
            args: vec![vec![Part::Out(11, "out")]],
            ..base("deeper")
        },
        /* 16 */
        Case {
            fixed: Some(("flat", Some("sha256"), h(5).to_base32())),
            env: vec![("from", vec![Part::Out(15, "out")])],
            ..base("fixed-with-inputs")
        },
        /* 17 */
        Case {
            env: vec![("f", vec![Part::Out(16, "out")])],
            ..base("after-fixed-with-inputs")
        },
        /* 18 */
        Case {
            fixed: Some(("flat", Some("sha256"), h(0).to_base32())),
            env: vec![("other", lit("same hash, other name"))],
            ..base("fixed-same-hash")
        },
        /* 19 */
        Case {
            env: vec![("both", vec![Part::Out(4, "out"), Part::Out(18, "out")])],
            ..base("two-fixed-same-hash")
        },
        /* 20 */
        Case {
            env: vec![("tree", vec![Part::Src(4)]), ("nasty", vec![Part::Src(1)])],
            ..base("name+with.odd_chars?=1-")
        },
        /* 21 */
        Case {
            args: (0..40).map(|_| lit("many")).collect(),
            env: vec![(
                "long",
                lit("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
            )],
            ..base("many-args")
        },
        /* 22 */
        Case {
            outputs: Some(vec!["out", "dev"]),
            env: vec![(
                "all",
                vec![
                    Part::Out(15, "out"),
                    Part::Out(17, "out"),
                    Part::Out(19, "out"),
                    Part::Out(20, "out"),
                    Part::Out(21, "out"),
                ],
            )],
            ..base("fan-in")
        },
        /* 23 */
        Case {
            builder: vec![Part::Out(0, "out"), Part::Lit("/bin/build")],
            env: vec![("dev", vec![Part::Out(22, "dev")])],
            ..base("builder-from-input")
        },
        /* 24 */
        Case {
            env: vec![("unicode-κλειδί", lit("τιμή")), ("tab\tkey", lit("v"))],
            ..base("odd-keys")
        },
    ];
    (sources, cases)
}

fn render_nix(parts: &[Part], src_names: &[String]) -> String {
    let mut s = String::from("\"");
    for p in parts {
        match p {
            Part::Lit(t) => s.push_str(&nix_escape(t)),
            Part::Out(i, o) => write!(s, "${{c{i:02}.{o}}}").unwrap(),
            Part::Src(i) => write!(s, "${{{}}}", src_names[*i]).unwrap(),
        }
    }
    s.push('"');
    s
}

/// What `derivation { … }` builds from a case, computed by cuwheel alone.
struct Ours {
    sources: Vec<StorePath>,
    drvs: Vec<(StorePath, Derivation)>,
}

fn render_ours(parts: &[Part], ours: &Ours, drv: &mut Derivation) -> String {
    let mut s = String::new();
    for p in parts {
        match p {
            Part::Lit(t) => s.push_str(t),
            Part::Out(i, o) => {
                let (input_path, input) = &ours.drvs[*i];
                s.push_str(&input.output_paths().unwrap()[*o].to_string());
                drv.input_drvs
                    .entry(input_path.clone())
                    .or_default()
                    .insert(o.to_string());
            }
            Part::Src(i) => {
                s.push_str(&ours.sources[*i].to_string());
                drv.input_srcs.insert(ours.sources[*i].clone());
            }
        }
    }
    s
}

#[test]
fn derivations_equal_nix_instantiate() {
    let fx = fixtures();
    let fixed_hashes: Vec<Hash> = (0..6u8)
        .map(|i| {
            if i == 4 {
                Hash::new(HashAlgo::Sha512, &[i; 64]).unwrap()
            } else {
                Hash::sha256([i])
            }
        })
        .collect();
    let (sources, cases) = cases(&fixed_hashes);
    assert!(cases.len() >= 20);

    // Our side: sources, then each derivation in order.
    let mut ours = Ours {
        sources: Vec::new(),
        drvs: Vec::new(),
    };
    for source in &sources {
        let path = match source {
            Source::ToFile(name, parts) => {
                let mut refs = Derivation {
                    name: String::new(),
                    outputs: BTreeMap::new(),
                    input_drvs: BTreeMap::new(),
                    input_srcs: BTreeSet::new(),
                    system: String::new(),
                    builder: String::new(),
                    args: vec![],
                    env: BTreeMap::new(),
                };
                let text = render_ours(parts, &ours, &mut refs);
                path::text_path(text.as_bytes(), name, &refs.input_srcs).unwrap()
            }
            Source::Tree(name, i) => path::source_path(
                &nar::nar_hash(&fx.trees[*i]).unwrap().0,
                name,
                &BTreeSet::new(),
            )
            .unwrap(),
        };
        ours.sources.push(path);
    }
    let mut known: BTreeMap<StorePath, OutputHashes> = BTreeMap::new();
    for case in &cases {
        let mut drv = Derivation {
            name: case.name.to_owned(),
            outputs: BTreeMap::new(),
            input_drvs: BTreeMap::new(),
            input_srcs: BTreeSet::new(),
            system: "x86_64-linux".into(),
            builder: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
        };
        drv.builder = render_ours(&case.builder, &ours, &mut drv);
        drv.args = case
            .args
            .iter()
            .map(|a| render_ours(a, &ours, &mut drv))
            .collect();
        for (key, parts) in &case.env {
            let value = render_ours(parts, &ours, &mut drv);
            drv.env.insert(key.to_string(), value);
        }
        for (key, value) in [("name", case.name), ("system", "x86_64-linux")] {
            drv.env.insert(key.into(), value.into());
        }
        drv.env.insert("builder".into(), drv.builder.clone());
        let outputs = case.outputs.clone().unwrap_or_else(|| vec!["out"]);
        if case.outputs.is_some() {
            drv.env.insert("outputs".into(), outputs.join(" "));
        }
        match &case.fixed {
            Some((mode, algo, text)) => {
                drv.env.insert("outputHashMode".into(), mode.to_string());
                if let Some(algo) = algo {
                    drv.env.insert("outputHashAlgo".into(), algo.to_string());
                }
                drv.env.insert("outputHash".into(), text.clone());
                let algo = algo.map(|a| HashAlgo::from_name(a).unwrap());
                let ingestion = if *mode == "flat" {
                    FileIngestion::Flat
                } else {
                    FileIngestion::Recursive
                };
                drv.outputs.insert(
                    "out".into(),
                    DerivationOutput::Fixed {
                        ingestion,
                        hash: Hash::parse(text, algo).unwrap(),
                    },
                );
            }
            None => drv.outputs.extend(
                outputs
                    .iter()
                    .map(|o| (o.to_string(), DerivationOutput::Deferred)),
            ),
        }
        let drv_path = drv.instantiate(&mut known).unwrap();
        ours.drvs.push((drv_path, drv));
    }

    // Nix's side: one expression with every source and case.
    let dir = tempfile::tempdir().unwrap();
    let src_names: Vec<String> = (0..sources.len()).map(|i| format!("s{i}")).collect();
    let mut expr = String::from("let\n");
    for (i, source) in sources.iter().enumerate() {
        match source {
            Source::ToFile(name, parts) => writeln!(
                expr,
                "  s{i} = builtins.toFile \"{name}\" {};",
                render_nix(parts, &src_names)
            )
            .unwrap(),
            Source::Tree(name, t) => writeln!(
                expr,
                "  s{i} = builtins.path {{ path = {}; name = \"{name}\"; }};",
                fx.trees[*t].display()
            )
            .unwrap(),
        }
    }
    for (i, case) in cases.iter().enumerate() {
        write!(
            expr,
            "  c{i:02} = derivation {{ name = \"{}\"; system = \"x86_64-linux\"; builder = {};",
            case.name,
            render_nix(&case.builder, &src_names)
        )
        .unwrap();
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| render_nix(a, &src_names))
            .collect();
        write!(expr, " args = [ {} ];", args.join(" ")).unwrap();
        if let Some(outputs) = &case.outputs {
            write!(
                expr,
                " outputs = [ {} ];",
                outputs
                    .iter()
                    .map(|o| format!("\"{o}\""))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
            .unwrap();
        }
        if let Some((mode, algo, text)) = &case.fixed {
            write!(
                expr,
                " outputHashMode = \"{mode}\"; outputHash = \"{text}\";"
            )
            .unwrap();
            if let Some(algo) = algo {
                write!(expr, " outputHashAlgo = \"{algo}\";").unwrap();
            }
        }
        for (key, parts) in &case.env {
            write!(
                expr,
                " \"{}\" = {};",
                nix_escape(key),
                render_nix(parts, &src_names)
            )
            .unwrap();
        }
        expr.push_str(" };\n");
    }
    let names: Vec<String> = (0..cases.len()).map(|i| format!("c{i:02}")).collect();
    writeln!(expr, "in {{ inherit {}; }}", names.join(" ")).unwrap();
    let file = dir.path().join("cases.nix");
    fs::write(&file, &expr).unwrap();

    let store = tempfile::tempdir().unwrap();
    let nix = Nix::with_store_root(store.path());
    let nix_drvs = nix
        .instantiate(&file, None)
        .unwrap_or_else(|e| panic!("{e}\n{expr}"));
    assert_eq!(nix_drvs.len(), cases.len());

    // Sources Nix added equal ours (text paths with references, source paths).
    for source in &ours.sources {
        assert!(
            nix.real_path(source).symlink_metadata().is_ok(),
            "Nix added no {source}"
        );
    }
    for ((case, (our_path, our_drv)), nix_path) in cases.iter().zip(&ours.drvs).zip(&nix_drvs) {
        let label = format!("case '{}'", case.name);
        assert_eq!(our_path, nix_path, "{label}: .drv path");
        let nix_bytes = fs::read(nix.real_path(nix_path)).unwrap();
        assert_eq!(
            our_drv.to_aterm().unwrap(),
            String::from_utf8(nix_bytes.clone()).unwrap(),
            "{label}: .drv bytes"
        );
        let parsed = Derivation::parse(&nix_bytes, case.name).unwrap();
        assert_eq!(&parsed, our_drv, "{label}: parsed .drv");
        assert_eq!(
            parsed.to_aterm().unwrap().as_bytes(),
            &nix_bytes[..],
            "{label}: parse → write"
        );
        // `nix-store --query --outputs`: stable text in every Nix version.
        let nix_outputs: BTreeSet<String> = nix
            .outputs(nix_path)
            .unwrap()
            .into_iter()
            .map(|p| p.to_string())
            .collect();
        let our_outputs: BTreeSet<String> = our_drv
            .output_paths()
            .unwrap()
            .into_values()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(our_outputs, nix_outputs, "{label}: output paths");
    }
    eprintln!(
        "compared {} derivations with nix-instantiate and nix-store --query --outputs",
        cases.len()
    );
}

/// `[tool.cuwheel]` tables that tell JSON writers apart: escapes and
/// control characters, non-ASCII text and keys, key order (upper case,
/// underscores, dotted keys), integers past a double's precision, empty and
/// nested arrays and tables, arrays of tables, and a `pypi` table, which
/// neither digest covers.
const CONFIGS: &[&str] = &[
    r#"module = "demo._C"
kernels = ["csrc/*.cu"]
cuda-archs = ["9.0", "10.0+PTX"]
"#,
    r#"name = "quote \" backslash \\ tab \t newline \n cr \r bell \u0007 del \u007f nul-ish \u0001"
"é" = "中文 ☃ 🦀"
Z = true
a = false
_ = 0
B.c.d = -9007199254740993
big = 9223372036854775807
empty = []
nested = [[1, 2], [], ["x", ["y"]]]
inline = { b = 1, a = { z = "" } }
[[tool.cuwheel.flavour]]
name = "one"
[[tool.cuwheel.flavour]]
name = "two"
extra = [{ k = "v" }]
[tool.cuwheel.pypi]
cuda = "13.0"
max-file-size = 104857600
"#,
    "",
];

#[test]
fn config_digests_equal_the_flakes() {
    let dir = tempfile::tempdir().unwrap();
    let digest_nix = crate::common::repo().join("nix/config-digest.nix");
    for (i, config) in CONFIGS.iter().enumerate() {
        let pyproject = dir.path().join(format!("pyproject-{i}.toml"));
        fs::write(
            &pyproject,
            format!("[project]\nname = \"p\"\n[tool.cuwheel]\n{config}"),
        )
        .unwrap();
        let ours = cuwheel::lock::config_sha256(&pyproject).unwrap();
        let expr = format!(
            "import {} (builtins.fromTOML (builtins.readFile {})).tool.cuwheel",
            digest_nix.display(),
            pyproject.display()
        );
        let out = run_ok(Command::new("nix").args([
            "--extra-experimental-features",
            "nix-command",
            "eval",
            "--impure",
            "--raw",
            "--expr",
            &expr,
        ]));
        let nix = String::from_utf8(out.stdout).unwrap();
        assert_eq!(ours, nix, "config {i}:\n{config}");
    }
    // The PyPI table is left out, and nothing else is.
    let digest = |config: &str| {
        let pyproject = dir.path().join("pyproject.toml");
        fs::write(&pyproject, format!("[tool.cuwheel]\n{config}")).unwrap();
        cuwheel::lock::config_sha256(&pyproject).unwrap()
    };
    assert_eq!(
        digest("a = 1\n"),
        digest("a = 1\n[tool.cuwheel.pypi]\ncuda = \"13.0\"\n")
    );
    assert_ne!(digest("a = 1\n"), digest("a = 2\n"));
}

#[test]
fn nix_failures_are_typed_and_explained() {
    let store = tempfile::tempdir().unwrap();
    let nix = Nix::with_store_root(store.path());
    let dir = tempfile::tempdir().unwrap();
    // A pinned artifact that was never added: the requireFile model's signal.
    let file = dir.path().join("pinned.nix");
    fs::write(
        &file,
        r#"derivation { name = "pinned.whl"; system = "x86_64-linux"; builder = "/bin/false-never-run";
           outputHashMode = "flat"; outputHashAlgo = "sha256";
           outputHash = "0000000000000000000000000000000000000000000000000000"; }"#,
    )
    .unwrap();
    let drvs = nix.instantiate(&file, None).unwrap();
    match nix.realise(&drvs) {
        Err(NixError::Failed { stderr, hint, .. }) => {
            assert!(stderr.contains("false-never-run"), "{stderr}");
            assert!(hint.to_string().contains("cuwheel fetch"), "{hint}");
        }
        other => panic!("expected a typed failure, got {other:?}"),
    }
    // Once the file is added, realising is a no-op that returns the same path.
    let blob = dir.path().join("pinned.whl");
    fs::write(&blob, b"").unwrap();
    let added = nix.add_fixed(&blob, FileIngestion::Flat).unwrap();
    let fod = dir.path().join("present.nix");
    fs::write(
        &fod,
        format!(
            r#"derivation {{ name = "pinned.whl"; system = "x86_64-linux"; builder = "/bin/false-never-run";
               outputHashMode = "flat"; outputHashAlgo = "sha256"; outputHash = "{}"; }}"#,
            Hash::sha256(b"").to_base32()
        ),
    )
    .unwrap();
    let drvs = nix.instantiate(&fod, None).unwrap();
    assert_eq!(nix.realise(&drvs).unwrap(), vec![added.clone()]);
    assert_eq!(
        nix.valid_paths(std::slice::from_ref(&added)).unwrap(),
        vec![added]
    );
    // An expression that does not evaluate is an error that quotes Nix.
    let bad = dir.path().join("bad.nix");
    fs::write(&bad, "derivation { name = \"x\"; }").unwrap();
    let err = nix.instantiate(&bad, None).unwrap_err().to_string();
    assert!(
        err.contains("nix-instantiate") && err.contains("required attribute"),
        "{err}"
    );
}

/// A machine whose Nix builds as a group that does not exist (Debian's
/// nix-bin on a fresh machine): every build fails, and the error names the
/// fix. The group is set with `--option`, so nothing on this machine changes.
#[test]
fn missing_build_users_are_named_with_the_fix() {
    let store = tempfile::tempdir().unwrap();
    let nix = Nix::with_store_root(store.path()).with_options(
        [
            "--option",
            "build-users-group",
            "cuwheel-test-no-such-group",
        ]
        .map(String::from)
        .to_vec(),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.nix");
    fs::write(
        &file,
        r#"derivation { name = "build-users-probe"; system = "x86_64-linux"; builder = "/nonexistent"; }"#,
    )
    .unwrap();
    let drvs = nix.instantiate(&file, None).unwrap();
    match nix.realise(&drvs) {
        Err(NixError::Failed { stderr, hint, .. }) => {
            assert!(
                stderr.contains("'cuwheel-test-no-such-group' specified in 'build-users-group'"),
                "{stderr}"
            );
            let hint = hint.to_string();
            assert!(hint.contains("scripts/setup-nix.sh"), "{hint}");
            assert!(hint.contains("build users"), "{hint}");
        }
        other => panic!("expected the build-users failure, got {other:?}"),
    }
}

/// `cuwheel store show-drv` on real `.drv` store paths: the hash part of a
/// store file name is not part of the derivation's name, and the path the
/// file's contents give must be the file's own. Fixed-output derivations
/// instantiated here (flat and recursive, sha256 and sha512, what fetchers
/// write), then every `.drv` the system store holds.
#[test]
fn show_drv_reads_real_store_derivations() {
    let store = tempfile::tempdir().unwrap();
    let nix = Nix::with_store_root(store.path());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fixed.nix");
    let mut expr = String::from("{\n");
    for (i, (mode, algo, hash)) in [
        ("flat", "sha256", Hash::sha256(b"a").to_base32()),
        ("recursive", "sha256", Hash::sha256(b"b").to_base32()),
        (
            "flat",
            "sha512",
            Hash::new(HashAlgo::Sha512, &[7; 64]).unwrap().to_base32(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        writeln!(
            expr,
            "  d{i} = derivation {{ name = \"torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl-{i}\"; \
             system = \"x86_64-linux\"; builder = \"/bin/sh\"; outputHashMode = \"{mode}\"; \
             outputHashAlgo = \"{algo}\"; outputHash = \"{hash}\"; }};"
        )
        .unwrap();
    }
    expr.push_str("  plain = derivation { name = \"plain\"; system = \"x86_64-linux\"; builder = \"/bin/sh\"; };\n}\n");
    fs::write(&file, &expr).unwrap();
    let mut files: Vec<(PathBuf, String)> = nix
        .instantiate(&file, None)
        .unwrap()
        .iter()
        .map(|p| (nix.real_path(p), p.to_string()))
        .collect();
    assert_eq!(files.len(), 4);
    let mut system: Vec<PathBuf> = fs::read_dir(path::STORE_DIR)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "drv"))
                .collect()
        })
        .unwrap_or_default();
    system.sort();
    files.extend(
        system
            .into_iter()
            .take(500)
            .map(|p| (p.clone(), p.display().to_string())),
    );
    let mut fixed = 0;
    for (file, store_path) in &files {
        let out = run_ok(
            Command::new(common::cuwheel_bin())
                .args(["store", "show-drv"])
                .arg(file),
        );
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(shown["drvPath"], store_path.as_str(), "{}", file.display());
        if fs::read_to_string(file).unwrap().contains("outputHash") {
            fixed += 1;
        }
    }
    assert!(fixed >= 3, "fixed-output derivations checked: {fixed}");
    eprintln!(
        "show-drv read {} real .drv files ({fixed} fixed-output)",
        files.len()
    );

    // A store file whose contents were changed no longer gives its own path.
    let (first, _) = &files[0];
    let changed = dir.path().join(first.file_name().unwrap());
    fs::write(
        &changed,
        fs::read_to_string(first)
            .unwrap()
            .replace("/bin/sh", "/bin/xx"),
    )
    .unwrap();
    let out = Command::new(common::cuwheel_bin())
        .args(["store", "show-drv"])
        .arg(&changed)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not its own name"), "{err}");
}
