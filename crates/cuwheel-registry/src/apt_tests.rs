//! The unit tests of [`super`] (`apt.rs`).

use super::*;

#[test]
fn a_failed_download_is_judged_by_the_index() {
    assert_eq!(
        listing_of(true, b"Package: zlib1g\nVersion: 1:1.2.13\n", ""),
        Listing::ListedNotServed
    );
    assert_eq!(
        listing_of(false, b"", "E: Version '9' for 'zlib1g' was not found\n"),
        Listing::NotListed
    );
    assert_eq!(
        listing_of(false, b"", "E: No packages found\n"),
        Listing::NotListed
    );
    assert_eq!(listing_of(true, b"", ""), Listing::NotListed);
    assert_eq!(
        listing_of(false, b"", "E: Could not open file x - open (2)\n"),
        Listing::Unreadable("E: Could not open file x - open (2)".into())
    );
    // A cache apt could not write is not a missing package.
    let broken = "W: some warning\nE: Problem renaming the file /c/srcpkgcache.bin.Ab to \
                  /c/srcpkgcache.bin - rename (2: No such file or directory)\nE: Version '9' \
                  for 'zlib1g' was not found\n";
    assert_eq!(
        listing_of(false, b"", broken),
        Listing::Unreadable(
            "E: Problem renaming the file /c/srcpkgcache.bin.Ab to /c/srcpkgcache.bin - \
             rename (2: No such file or directory)"
                .into()
        )
    );
    assert_eq!(first_error("Err:1 x\n  expired\n"), "expired");
}

#[test]
fn unreachable_mirrors_are_told_from_answers() {
    assert!(mirror_unreachable(
        "Err:1 http://127.0.0.1:1 trixie InRelease\n  Could not connect to 127.0.0.1:1 \
         (127.0.0.1). - connect (111: Connection refused)"
    ));
    assert!(mirror_unreachable(
        "Err:1 http://m trixie InRelease\n  Temporary failure resolving 'm'"
    ));
    assert!(!mirror_unreachable(
        "E: The repository 'http://h x Release' does not have a Release file."
    ));
}

fn find(files: &[(&str, &str)]) -> Option<String> {
    let owned: Vec<(PathBuf, String)> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    find_mirror(&owned)
}

#[test]
fn finds_the_main_archive_in_deb822_sources() {
    let sources = "Types: deb\nURIs: http://mirror.example/debian-security\n\
                   Suites: bookworm-security\nComponents: main\n\n\
                   Types: deb\nURIs: https://vendor.example/apt\nSuites: nodistro\nComponents: main\n\n\
                   Types: deb deb-src\nURIs: http://mirror.example/debian\n\
                   Suites: bookworm bookworm-updates\nComponents: main contrib\n";
    assert_eq!(
        find(&[("/etc/apt/sources.list.d/debian.sources", sources)]),
        Some("http://mirror.example/debian".into())
    );
    let disabled = sources.replace("Types: deb deb-src", "Enabled: no\nTypes: deb");
    assert_eq!(find(&[("x/debian.sources", &disabled)]), None);
}

#[test]
fn finds_the_security_archive_apart_from_the_main_one() {
    let owned = |files: &[(&str, &str)]| -> Vec<(PathBuf, String)> {
        files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    };
    let sources = "Types: deb\nURIs: http://mirror.example/debian\n\
                   Suites: trixie trixie-updates\nComponents: main\n\n\
                   Types: deb\nURIs: http://mirror.example/debian-security\n\
                   Suites: trixie-security\nComponents: main\n";
    let files = owned(&[("/etc/apt/sources.list.d/debian.sources", sources)]);
    assert_eq!(
        find_security_mirror(&files),
        Some("http://mirror.example/debian-security".into())
    );
    assert_eq!(
        find_mirror(&files),
        Some("http://mirror.example/debian".into())
    );
    let list = "deb http://mirror.example/debian trixie main\n\
                deb http://other.example/security trixie-security main contrib\n\
                deb http://ubuntu.example/ubuntu noble-security main\n";
    let files = owned(&[("/etc/apt/sources.list", list)]);
    assert_eq!(
        find_security_mirror(&files),
        Some("http://other.example/security".into())
    );
    let files = owned(&[(
        "/etc/apt/sources.list",
        "deb http://m.example/debian trixie main\n",
    )]);
    assert_eq!(find_security_mirror(&files), None);
}

#[test]
fn finds_the_main_archive_in_one_line_sources() {
    let list = "# deb http://old.example/debian buster main\n\
                deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian trixie main\n";
    assert_eq!(
        find(&[("/etc/apt/sources.list", list)]),
        Some("http://mirror.example/debian".into())
    );
    assert_eq!(
        find(&[(
            "/etc/apt/sources.list",
            "deb http://ubuntu.example/ubuntu noble main\n"
        )]),
        None
    );
}

#[test]
fn knows_when_a_version_left_the_mirror() {
    assert!(is_gone(
        "E: Can't find a source to download version '2.36-9+deb12u13' of 'libc6:amd64'"
    ));
    assert!(is_gone("E: Version '1.0' for 'foo' was not found"));
    assert!(!is_gone("E: Could not resolve host"));
}
