//! Unit tests of the resolver and the compatibility table on hand-made members and tables.

use super::fixtures::{external, facts, library, table};
use super::*;
use crate::audit::elf::{ElfSymbol, SymbolKind, VersionNeed};

#[test]
fn symbols_resolve_through_the_needed_closure_only() {
    // ext needs libtorch.so, which needs libtorch_cpu.so: at::foo comes from there
    let ext = facts(
        &["libtorch.so", "libc.so.6"],
        &[
            ("_ZN2at3fooEv", None, SymbolBinding::Global),
            ("memcpy", Some("GLIBC_2.14"), SymbolBinding::Global),
            ("PyModule_Create2", None, SymbolBinding::Global),
            ("maybe", None, SymbolBinding::Weak),
        ],
    );
    let torch = table(vec![
        library("libtorch.so", &["libtorch_cpu.so"], &[], &[]),
        library("libtorch_cpu.so", &[], &[], &["_ZN2at3fooEv"]),
        library("libunrelated.so", &[], &[], &["_ZN2at3barEv"]),
    ]);
    let system = table(vec![library(
        "libc.so.6",
        &[],
        &["GLIBC_2.14"],
        &["memcpy@@GLIBC_2.14"],
    )]);
    let objects = [WheelObject {
        member: "pkg/_C.so",
        facts: &ext,
    }];
    let resolved = external("pkg/_C.so", &ext);
    let providers = [
        Provider {
            origin: "torch 2.11.0",
            table: &torch,
        },
        Provider {
            origin: "system",
            table: &system,
        },
    ];
    let ok = check(&objects, &resolved, &providers);
    assert!(ok.loads(), "{ok:?}");
    assert_eq!(ok.interpreter_symbols, 1);
    assert_eq!(
        ok.unchecked_libraries,
        BTreeSet::from(["libm.so.6".to_string()])
    );

    // bar lives in a library the extension does not load: unresolved,
    // named, and where another release has it
    let ext = facts(
        &["libtorch.so"],
        &[("_ZN2at3barEv", None, SymbolBinding::Global)],
    );
    let objects = [WheelObject {
        member: "pkg/_C.so",
        facts: &ext,
    }];
    let newer = table(vec![
        library("libtorch.so", &["libtorch_cpu.so"], &[], &[]),
        library("libtorch_cpu.so", &[], &[], &["_ZN2at3barEv"]),
    ]);
    let releases = [
        Provider {
            origin: "2.11.0",
            table: &torch,
        },
        Provider {
            origin: "2.12.0",
            table: &newer,
        },
    ];
    let rows = compatibility(
        &objects,
        &external("pkg/_C.so", &ext),
        &providers[1..],
        &releases,
    );
    assert!(!rows[0].loads && rows[1].loads);
    let u = &rows[0].check.unresolved[0];
    assert_eq!(u.demangled, "at::bar()");
    assert_eq!(u.expected_from, ["libtorch.so"]);
    assert_eq!(
        u.elsewhere.as_deref(),
        Some("libunrelated.so of torch 2.11.0"),
        "a library of the same release first"
    );
    let found = findings(&rows, &|_| true);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].member, "pkg/_C.so");
    assert!(
        found[0].problem.contains(
            "would not load with torch 2.11.0: `at::bar()` (`_ZN2at3barEv`) is not defined \
             by libtorch.so (libunrelated.so of torch 2.11.0 defines it)"
        ),
        "{}",
        found[0].problem
    );
    assert!(found[0].fix.contains("stable ABI"), "{}", found[0].fix);
    assert!(
        findings(&rows, &|t| t == "2.12.0").is_empty(),
        "2.12.0 loads it"
    );
}

#[test]
fn versions_must_exist_and_untabled_libraries_only_make_symbols_unverified() {
    let mut ext = facts(
        &["libstdc++.so.6", "libcuda.so.1"],
        &[
            ("_ZSt4cout", Some("GLIBCXX_3.4"), SymbolBinding::Global),
            ("cuInit", None, SymbolBinding::Global),
        ],
    );
    ext.version_needs = vec![VersionNeed {
        file: "libstdc++.so.6".into(),
        versions: vec!["GLIBCXX_3.4".into(), "GLIBCXX_3.4.32".into()],
    }];
    let system = table(vec![library(
        "libstdc++.so.6",
        &[],
        &["GLIBCXX_3.4", "GLIBCXX_3.4.28"],
        &["_ZSt4cout@@GLIBCXX_3.4"],
    )]);
    let objects = [WheelObject {
        member: "_C.so",
        facts: &ext,
    }];
    let providers = [Provider {
        origin: "baseline system",
        table: &system,
    }];
    let result = check(&objects, &external("_C.so", &ext), &providers);
    assert_eq!(result.missing_versions.len(), 1);
    assert_eq!(result.missing_versions[0].version, "GLIBCXX_3.4.32");
    assert!(result.unresolved.is_empty(), "{result:?}");
    assert_eq!(
        result.unverified.len(),
        1,
        "cuInit may be libcuda's, which has no table"
    );
    assert!(result.unchecked_libraries.contains("libcuda.so.1"));
    assert!(!result.loads());
    let rows = compatibility(
        &objects,
        &external("_C.so", &ext),
        &providers,
        &[Provider {
            origin: "2.11.0",
            table: &SymbolTable::default(),
        }],
    );
    let found = findings(&rows, &|_| true);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .problem
            .contains("version `GLIBCXX_3.4.32' not found"),
        "{}",
        found[0].problem
    );
}

#[test]
fn members_resolve_against_each_other_and_releases_are_tabled() {
    let lib = {
        let mut f = facts(&[], &[]);
        f.soname = Some("libhelper.so".into());
        f.dynamic_symbols.push(ElfSymbol {
            name: "helper".into(),
            version: None,
            version_hidden: false,
            defined: true,
            binding: SymbolBinding::Global,
            kind: SymbolKind::Func,
        });
        f
    };
    let ext = facts(
        &["libhelper.so", "libc10.so"],
        &[
            ("helper", None, SymbolBinding::Global),
            ("_ZN3c104moreEv", None, SymbolBinding::Global),
        ],
    );
    let objects = [
        WheelObject {
            member: "pkg/_C.so",
            facts: &ext,
        },
        WheelObject {
            member: "pkg/libhelper.so",
            facts: &lib,
        },
    ];
    let mut resolved = external("pkg/_C.so", &ext);
    resolved.insert(
        ("pkg/_C.so".into(), "libhelper.so".into()),
        Resolution::InWheel("pkg/libhelper.so".into()),
    );
    let new = table(vec![library("libc10.so", &[], &[], &["_ZN3c104moreEv"])]);
    let old = table(vec![library("libc10.so", &[], &[], &[])]);
    let releases = [
        Provider {
            origin: "2.9.1",
            table: &old,
        },
        Provider {
            origin: "2.11.0",
            table: &new,
        },
    ];
    let rows = compatibility(&objects, &resolved, &[], &releases);
    assert_eq!(rows.len(), 2);
    assert!(!rows[0].loads && rows[1].loads);
    assert_eq!(
        rows[0].first_missing.as_ref().unwrap().symbol,
        "_ZN3c104moreEv"
    );
    let text = compatibility_text(&rows);
    assert!(
        text.contains("torch 2.9.1: does not load (1 missing; first: `c10::more()`"),
        "{text}"
    );
    assert!(text.contains("torch 2.11.0: loads"), "{text}");
}
