//! Cross-check: the ELF facts of `cuwheel::audit::elf` against what binutils'
//! `readelf` prints, on shared objects compiled here with the system gcc:
//! with and without RPATH, with RUNPATH, with versioned symbols from a
//! version script, with a `PyInit_` function, linking libstdc++ and libm,
//! with an x86 ISA-level note, and an executable with an interpreter.

use crate::audit_support;
use crate::common;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use cuwheel::audit::elf::{ElfFacts, SymbolBinding, SymbolKind, X86IsaLevel};

/// `readelf ARGS FILE`'s standard output.
fn readelf(args: &[&str], file: &Path) -> String {
    let out = common::run_ok(Command::new("readelf").args(args).arg(file));
    String::from_utf8(out.stdout).unwrap()
}

/// The bracketed values of `readelf -d` lines of one tag: `(NEEDED) Shared library: [libm.so.6]`.
fn dynamic_tag(dump: &str, tag: &str) -> Vec<String> {
    dump.lines()
        .filter(|l| l.contains(&format!("({tag})")))
        .filter_map(|l| Some(l[l.find('[')? + 1..l.rfind(']')?].to_string()))
        .collect()
}

/// `readelf -V`'s "Version needs" section as (file, versions) in order.
fn version_needs(dump: &str) -> Vec<(String, Vec<String>)> {
    let mut needs: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in dump.lines() {
        if line.starts_with("Version needs section") {
            inside = true;
            continue;
        }
        if inside && !line.starts_with(' ') {
            inside = false;
        }
        if !inside {
            continue;
        }
        if let Some(at) = line.find("File: ") {
            let file = line[at + 6..].split_whitespace().next().unwrap();
            needs.push((file.to_string(), Vec::new()));
        } else if let Some(at) = line.find("Name: ") {
            let name = line[at + 6..].split_whitespace().next().unwrap();
            needs.last_mut().unwrap().1.push(name.to_string());
        }
    }
    needs
}

/// One `.dynsym` entry as compared: name, version, hidden, defined, binding, type.
type SymbolRow = (String, Option<String>, bool, bool, String, String);

/// `readelf --dyn-syms -W`, without the null entry.
fn readelf_dynsyms(dump: &str) -> BTreeSet<SymbolRow> {
    let mut rows = BTreeSet::new();
    for line in dump.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 || !fields[0].ends_with(':') || fields[0] == "Num:" {
            continue;
        }
        let (kind, bind, ndx) = (fields[3], fields[4], fields[6]);
        // "name@VER (2)" for imports: drop the version index
        let name_field = fields[7];
        let (name, version, hidden) = if let Some((n, v)) = name_field.split_once("@@") {
            (n, Some(v), false)
        } else if let Some((n, v)) = name_field.split_once('@') {
            (n, Some(v), ndx != "UND")
        } else {
            (name_field, None, false)
        };
        rows.insert((
            name.to_string(),
            version.map(str::to_string),
            hidden,
            ndx != "UND",
            bind.to_string(),
            kind.to_string(),
        ));
    }
    rows
}

fn our_dynsyms(facts: &ElfFacts) -> BTreeSet<SymbolRow> {
    facts
        .dynamic_symbols
        .iter()
        .map(|s| {
            // readelf prints a version definition's own symbol (`VERS_1.0`,
            // ABS) without `@VERS_1.0`; compare it the same way
            let version = s.version.clone().filter(|v| *v != s.name);
            let hidden = s.version_hidden && s.defined;
            let bind = match s.binding {
                SymbolBinding::Local => "LOCAL",
                SymbolBinding::Global => "GLOBAL",
                SymbolBinding::Weak => "WEAK",
                SymbolBinding::GnuUnique => "UNIQUE",
                SymbolBinding::Other(_) => "OTHER",
            };
            let kind = match s.kind {
                SymbolKind::NoType => "NOTYPE",
                SymbolKind::Object => "OBJECT",
                SymbolKind::Func => "FUNC",
                SymbolKind::Section => "SECTION",
                SymbolKind::File => "FILE",
                SymbolKind::Common => "COMMON",
                SymbolKind::Tls => "TLS",
                SymbolKind::GnuIfunc => "IFUNC",
                SymbolKind::Other(_) => "OTHER",
            };
            (
                s.name.clone(),
                version,
                hidden,
                s.defined,
                bind.to_string(),
                kind.to_string(),
            )
        })
        .collect()
}

/// The highest level named on `readelf -n`'s "x86 ISA needed:" line.
fn readelf_isa_needed(dump: &str) -> Option<X86IsaLevel> {
    let line = dump.lines().find(|l| l.contains("x86 ISA needed:"))?;
    let levels = &line[line.find("x86 ISA needed:").unwrap() + 15..];
    let level = levels.split(',').map(str::trim).next_back()?;
    Some(match level {
        "x86-64-baseline" => X86IsaLevel::Baseline,
        "x86-64-v2" => X86IsaLevel::V2,
        "x86-64-v3" => X86IsaLevel::V3,
        "x86-64-v4" => X86IsaLevel::V4,
        other => panic!("unexpected ISA level `{other}` in: {line}"),
    })
}

/// Asserts every fact of `file` equals readelf's reading; returns the facts.
fn cross_check(file: &Path) -> ElfFacts {
    let data = std::fs::read(file).unwrap();
    let facts = ElfFacts::parse(&file.display().to_string(), &data).unwrap();
    let what = file.display();

    let dynamic = readelf(&["-dW"], file);
    assert_eq!(
        facts.needed,
        dynamic_tag(&dynamic, "NEEDED"),
        "{what}: DT_NEEDED"
    );
    assert_eq!(
        facts.soname.iter().cloned().collect::<Vec<_>>(),
        dynamic_tag(&dynamic, "SONAME"),
        "{what}: SONAME"
    );
    let split = |values: Vec<String>| -> Vec<String> {
        values
            .iter()
            .flat_map(|v| v.split(':').map(str::to_string))
            .filter(|p| !p.is_empty())
            .collect()
    };
    assert_eq!(
        facts.rpath,
        split(dynamic_tag(&dynamic, "RPATH")),
        "{what}: RPATH"
    );
    assert_eq!(
        facts.runpath,
        split(dynamic_tag(&dynamic, "RUNPATH")),
        "{what}: RUNPATH"
    );

    let needs: Vec<(String, Vec<String>)> = facts
        .version_needs
        .iter()
        .map(|n| (n.file.clone(), n.versions.clone()))
        .collect();
    assert_eq!(
        needs,
        version_needs(&readelf(&["-VW"], file)),
        "{what}: .gnu.version_r"
    );

    let theirs = readelf_dynsyms(&readelf(&["--dyn-syms", "-W"], file));
    assert!(
        !theirs.is_empty(),
        "{what}: readelf printed no dynamic symbols"
    );
    assert_eq!(our_dynsyms(&facts), theirs, "{what}: .dynsym");

    let program_headers = readelf(&["-lW"], file);
    let interp = program_headers
        .lines()
        .find_map(|l| l.trim().strip_prefix("[Requesting program interpreter: "))
        .map(|rest| rest.trim_end_matches(']').to_string());
    assert_eq!(facts.interpreter, interp, "{what}: PT_INTERP");

    assert_eq!(
        facts.x86_isa_needed,
        readelf_isa_needed(&readelf(&["-nW"], file)),
        "{what}: x86 ISA needed"
    );
    facts
}

const VERSION_SCRIPT: &str = "\
VERS_1.0 { global: old_api; local: *; };
VERS_2.0 { global: new_api; } VERS_1.0;
";

const VERSIONED_C: &str = r#"
#include <math.h>
#include <stdio.h>
#include <string.h>
int old_impl(int x) { return x; }
int new_impl(int x) { return x * 2; }
__asm__(".symver old_impl,old_api@VERS_1.0");
__asm__(".symver new_impl,old_api@@VERS_2.0");
double new_api(double x) {
    char buf[64];
    snprintf(buf, sizeof buf, "%f", cos(x));
    return sqrt(x) + (double)strlen(buf);
}
"#;

const MATH_C: &str = r#"
#include <math.h>
double norm2(double x, double y) { return sqrt(x * x + y * y) + exp(x); }
"#;

const EXTENSION_C: &str = r#"
#include <string.h>
#include <stdlib.h>
static char *copy;
void *PyInit_foo(void) { copy = strdup("foo"); return copy; }
"#;

const CXX: &str = r#"
#include <map>
#include <stdexcept>
#include <string>
#include <cmath>
std::map<std::string, double> table;
extern "C" double lookup(const char *key) {
    auto it = table.find(key);
    if (it == table.end()) throw std::runtime_error(std::string("missing ") + key);
    return std::lgamma(it->second);
}
"#;

const MAIN_C: &str = r#"
#include <stdio.h>
int main(int argc, char **argv) { printf("%d %s\n", argc, argv[0]); return 0; }
"#;

#[test]
fn elf_facts_equal_readelf_on_gcc_built_objects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = d.join("vers.map");
    std::fs::write(&script, VERSION_SCRIPT).unwrap();
    let script_arg = format!("-Wl,--version-script={}", script.display());

    // (output, source, C++?, flags) — each exercises different facts
    let cases: Vec<(&str, &str, bool, Vec<&str>)> = vec![
        ("plain.so", EXTENSION_C, false, vec!["-shared", "-fPIC"]),
        (
            "foo.cpython-311-x86_64-linux-gnu.so",
            EXTENSION_C,
            false,
            vec!["-shared", "-fPIC", "-Wl,-soname,foo.so"],
        ),
        (
            "libversioned.so.1",
            VERSIONED_C,
            false,
            vec![
                "-shared",
                "-fPIC",
                "-lm",
                &script_arg,
                "-Wl,-soname,libversioned.so.1",
                "-Wl,--disable-new-dtags",
                "-Wl,-rpath,$ORIGIN/../lib:/opt/vendor/lib",
            ],
        ),
        (
            "librunpath.so",
            MATH_C,
            false,
            vec![
                "-shared",
                "-fPIC",
                "-lm",
                "-Wl,--enable-new-dtags",
                "-Wl,-rpath,$ORIGIN:/nix/store/abc-example/lib",
            ],
        ),
        (
            "libcxx.so",
            CXX,
            true,
            vec!["-shared", "-fPIC", "-Wl,--no-as-needed", "-lstdc++", "-lm"],
        ),
        (
            "libisa.so",
            EXTENSION_C,
            false,
            vec!["-shared", "-fPIC", "-Wl,-z,x86-64-v3"],
        ),
        ("prog", MAIN_C, false, vec![]),
    ];
    let mut checked = Vec::new();
    for (output, source, cxx, flags) in &cases {
        let file = audit_support::gcc(d, output, source, *cxx, flags);
        checked.push((*output, cross_check(&file)));
    }
    assert_eq!(checked.len(), 7);

    // The cross-check is only as good as the variety it saw: make sure each
    // kind of fact was present somewhere and compared non-trivially.
    let by = |name: &str| &checked.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(
        by("libversioned.so.1").rpath,
        ["$ORIGIN/../lib", "/opt/vendor/lib"]
    );
    assert!(by("libversioned.so.1").runpath.is_empty());
    assert_eq!(
        by("librunpath.so").runpath,
        ["$ORIGIN", "/nix/store/abc-example/lib"]
    );
    assert!(by("plain.so").rpath.is_empty() && by("plain.so").runpath.is_empty());
    assert_eq!(
        by("libversioned.so.1").soname.as_deref(),
        Some("libversioned.so.1")
    );
    let versioned = &by("libversioned.so.1").dynamic_symbols;
    assert!(versioned.iter().any(|s| s.name == "old_api"
        && s.version.as_deref() == Some("VERS_1.0")
        && s.version_hidden));
    assert!(versioned.iter().any(|s| s.name == "old_api"
        && s.version.as_deref() == Some("VERS_2.0")
        && !s.version_hidden));
    let cxx = by("libcxx.so");
    assert!(cxx.needed.iter().any(|n| n == "libstdc++.so.6"));
    let cxx_versions: Vec<&String> = cxx.version_needs.iter().flat_map(|n| &n.versions).collect();
    assert!(
        cxx_versions.iter().any(|v| v.starts_with("GLIBCXX_3.4")),
        "{cxx_versions:?}"
    );
    assert!(
        cxx_versions.iter().any(|v| v.starts_with("CXXABI_1.3")),
        "{cxx_versions:?}"
    );
    assert_eq!(by("libisa.so").x86_isa_needed, Some(X86IsaLevel::V3));
    assert_eq!(by("plain.so").x86_isa_needed, None);
    assert!(
        by("prog")
            .interpreter
            .as_deref()
            .unwrap()
            .contains("ld-linux-x86-64")
    );
    assert_eq!(by("plain.so").interpreter, None);

    // PyInit_<name> decides extension-module-ness, by file name as auditwheel does
    let ext = by("foo.cpython-311-x86_64-linux-gnu.so");
    assert!(ext.defines_function("PyInit_foo"));
    assert!(ext.is_extension_module("foo.cpython-311-x86_64-linux-gnu.so"));
    assert!(!ext.is_extension_module("bar.cpython-311-x86_64-linux-gnu.so"));
    assert!(!by("libcxx.so").is_extension_module("libcxx.so"));
}

#[test]
fn wrong_class_and_machine_are_typed_errors_naming_the_file() {
    use cuwheel::audit::elf::ElfErrorKind;
    let dir = tempfile::tempdir().unwrap();
    // A relocatable object is still an x86_64 ELF file and parses.
    let object = audit_support::gcc(dir.path(), "obj.o", EXTENSION_C, false, &["-c", "-fPIC"]);
    let data = std::fs::read(&object).unwrap();
    let facts = ElfFacts::parse("obj.o", &data).unwrap();
    assert!(facts.needed.is_empty());

    // Patch the class and machine fields of a real file: typed errors, no panic.
    let mut wrong_machine = data.clone();
    wrong_machine[18..20].copy_from_slice(&40u16.to_le_bytes()); // EM_ARM, 32-bit ARM
    let err = ElfFacts::parse("pkg/_arm.so", &wrong_machine).unwrap_err();
    assert_eq!(err.kind, ElfErrorKind::WrongMachine(40));
    assert_eq!(
        err.to_string(),
        "pkg/_arm.so: an ELF file for machine number 40, neither x86_64 (62) nor aarch64 (183)"
    );
    // aarch64 (EM_AARCH64) is read, and says so.
    let mut arm = data.clone();
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    assert_eq!(
        ElfFacts::parse("pkg/_arm64.so", &arm).unwrap().arch,
        cuwheel::wheel::Arch::Aarch64
    );
    assert_eq!(facts.arch, cuwheel::wheel::Arch::X86_64);

    let mut wrong_class = data.clone();
    wrong_class[4] = 1; // ELFCLASS32
    assert_eq!(
        ElfFacts::parse("x", &wrong_class).unwrap_err().kind,
        ElfErrorKind::WrongClass
    );
    let truncated = &data[..100];
    assert!(matches!(
        ElfFacts::parse("x", truncated).unwrap_err().kind,
        ElfErrorKind::Malformed(_)
    ));
}
