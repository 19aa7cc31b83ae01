//! Unit tests of [`super`]: version order, relations, the index and the
//! closure, on fabricated package indexes.
use super::*;

#[test]
fn versions_order_like_dpkg() {
    // Known answers from dpkg --compare-versions.
    let less = [
        ("1.0", "1.0.1"),
        ("1.0~rc1", "1.0"),
        ("1.0", "1.0+b1"),
        ("1.0-1", "1.0-2"),
        ("1.9", "1.10"),
        ("1:0.1", "2:0.0"),
        ("2.36-9+deb12u13", "2.36-9+deb12u14"),
        ("12.4.131~12.4.1-2", "12.4.131-1"),
        ("1.0a", "1.0b"),
        ("1.0", "1.0a"),
        ("1.0~~", "1.0~"),
        ("9", "10"),
        ("1:1.35.0-4+deb12u1", "1:1.35.0-4+deb12u1+b1"),
    ];
    for (a, b) in less {
        assert_eq!(compare_versions(a, b), Ordering::Less, "{a} < {b}");
        assert_eq!(compare_versions(b, a), Ordering::Greater, "{b} > {a}");
    }
    assert_eq!(compare_versions("1.01", "1.1"), Ordering::Equal);
    assert_eq!(compare_versions("0:1.0", "1.0"), Ordering::Equal);
}

#[test]
fn relations_parse_with_alternatives_constraints_and_qualifiers() {
    let parsed =
        parse_relations("libc6 (>= 2.34), libgcc-s1 | libgcc1, python3:any (<< 3.12)").unwrap();
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[0][0].to_string(), "libc6 (>= 2.34)");
    assert_eq!(parsed[1].len(), 2);
    assert_eq!(parsed[2][0].name, "python3");
    assert_eq!(parsed[2][0].to_string(), "python3 (<< 3.12)");
    assert!(parse_relations("foo (>= )").is_err());
    assert!(parse_relations("foo (~ 1)").is_err());
    assert!(parse_relations("foo (>= 1").is_err());
}

const INDEX: &str = "\
Package: gcc-10
Version: 10.2.1-6
Architecture: amd64
Depends: cpp-10 (= 10.2.1-6), libc-dev, libasan6 (>= 10.2.1-6), awk | mawk
Filename: pool/main/g/gcc-10/gcc-10_10.2.1-6_amd64.deb
Size: 100
SHA256: aa

Package: cpp-10
Version: 10.2.1-6
Architecture: amd64
Pre-Depends: libc6 (>= 2.31)
Filename: pool/main/g/gcc-10/cpp-10_10.2.1-6_amd64.deb
Size: 50
SHA256: bb
Description: a long
 continuation line

Package: libc6
Version: 2.31-13
Architecture: amd64
Filename: pool/main/g/glibc/libc6_2.31-13_amd64.deb
Size: 10
SHA256: cc

Package: libc6
Version: 2.31-12
Architecture: amd64
Filename: pool/main/g/glibc/libc6_2.31-12_amd64.deb
Size: 9
SHA256: c0

Package: libc6-dev
Version: 2.31-13
Architecture: amd64
Provides: libc-dev
Depends: libc6 (= 2.31-13)
Filename: pool/main/g/glibc/libc6-dev_2.31-13_amd64.deb
Size: 20
SHA256: dd

Package: musl-dev
Version: 1.2
Architecture: amd64
Provides: libc-dev
Filename: pool/main/m/musl/musl-dev_1.2_amd64.deb
Size: 20
SHA256: ee

Package: libasan6
Version: 10.2.1-6
Architecture: amd64
Filename: pool/main/g/gcc-10/libasan6_10.2.1-6_amd64.deb
Size: 5
SHA256: ff

Package: mawk
Version: 1:1.3.4-1
Architecture: amd64
Provides: awk
Filename: pool/main/m/mawk/mawk_1.3.4-1_amd64.deb
Size: 5
SHA256: 11
";

fn names(packages: &[&Package]) -> Vec<String> {
    packages.iter().map(|p| p.name.clone()).collect()
}

#[test]
fn closure_follows_depends_virtuals_and_newest_versions() {
    let index = Index::parse(INDEX).unwrap();
    assert_eq!(index.get("libc6").unwrap().version, "2.31-13");
    let found = closure(&index, &["gcc-10".into()], &Patterns::default(), true).unwrap();
    // libc-dev: the first provider by name (libc6-dev) wins; awk via mawk.
    assert_eq!(
        names(&found),
        ["cpp-10", "gcc-10", "libasan6", "libc6", "libc6-dev", "mawk"]
    );
    assert_eq!(found[5].download_name(), "mawk_1%3a1.3.4-1_amd64.deb");
}

#[test]
fn closure_prefers_a_provider_already_chosen() {
    let index = Index::parse(INDEX).unwrap();
    let roots = ["musl-dev".to_string(), "gcc-10".to_string()];
    let found = closure(&index, &roots, &Patterns::default(), true).unwrap();
    assert!(
        !names(&found).contains(&"libc6-dev".to_string()),
        "{found:?}"
    );
}

#[test]
fn excluded_packages_and_their_relations_are_dropped() {
    let index = Index::parse(INDEX).unwrap();
    let exclude = Patterns(vec!["libasan*".into(), "mawk".into()]);
    let found = closure(&index, &["gcc-10".into()], &exclude, true).unwrap();
    assert_eq!(names(&found), ["cpp-10", "gcc-10", "libc6", "libc6-dev"]);
    let unfollowed = closure(&index, &["gcc-10".into()], &exclude, false).unwrap();
    assert_eq!(names(&unfollowed), ["gcc-10"]);
}

#[test]
fn unsatisfiable_versions_and_missing_roots_are_reported() {
    let text = INDEX.replace("libc6 (>= 2.31)", "libc6 (>= 2.36)");
    let index = Index::parse(&text).unwrap();
    let roots = ["gcc-10".to_string(), "gcc-99".to_string()];
    let problems = closure(&index, &roots, &Patterns::default(), true).unwrap_err();
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "root package gcc-99",
            "cpp-10 10.2.1-6 depends on libc6 (>= 2.36)"
        ]
    );
}

#[test]
fn patterns_match_globs() {
    let patterns = Patterns(vec!["libcufft*".into(), "lib*-dev".into(), "exact".into()]);
    assert!(patterns.matches("libcufft10"));
    assert!(patterns.matches("libnpp-dev"));
    assert!(patterns.matches("exact"));
    assert!(!patterns.matches("exactly"));
    assert!(!patterns.matches("libcurand10"));
}

#[test]
fn embedded_data_parses_and_names_every_kind() {
    let data = DebianData::embedded();
    for kind in ["gcc", "cuda-debian", "python-headers", "rust"] {
        assert!(!data.kind(kind).roots.is_empty(), "{kind}");
    }
    assert_eq!(
        data.kind("gcc").roots(Some(10), None),
        ["gcc-10", "g++-10", "libc6-dev", "binutils"]
    );
    assert_eq!(
        data.kind("python-headers").roots(None, Some("3.13")),
        ["libpython3.13-dev"]
    );
    assert!(!data.kind("python-headers").follow);
    assert_eq!(data.python_suites["3.13"], "trixie");
    for group in data.kinds.values().flat_map(|k| &k.exclude) {
        assert!(!group.why.trim().is_empty());
    }
}
