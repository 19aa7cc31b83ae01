//! The setup checks against what Nix 2.8, 2.26 and 2.34 really printed
//! (recorded by `scripts/nix-probe.sh` and `scripts/nix-versions.sh`).

use super::*;

const UNTRUSTED_2_26: &str = include_str!("../tests/fixtures/nix-2.26/store-info-untrusted.stderr");
const TRUSTED_2_26: &str = include_str!("../tests/fixtures/nix-2.26/store-info-trusted.stderr");
/// `nix store info` as an untrusted user of a 2.34 daemon, with cuwheel's
/// options and a cache's (`substituters`, `trusted-public-keys`,
/// `require-sigs`).
const UNTRUSTED_CACHE_2_34: &str =
    include_str!("../tests/fixtures/nix-2.34/store-info-untrusted-cache.stderr");
const UNTRUSTED_CACHE_2_26: &str =
    include_str!("../tests/fixtures/nix-2.26/store-info-untrusted-cache.stderr");
/// The same, once the daemon's nix.conf has the two lines the refusal
/// names (`extra-trusted-substituters`, `extra-trusted-public-keys`), and
/// what `nix config show` then says of them (the four lines that matter;
/// Nix's built-in default key, first on the `trusted-public-keys` line, is
/// left out of the recording).
const UNTRUSTED_CACHE_ALLOWED_2_34: &str =
    include_str!("../tests/fixtures/nix-2.34/store-info-untrusted-cache-allowed.stderr");
const CONFIG_CACHE_ALLOWED_2_34: &str =
    include_str!("../tests/fixtures/nix-2.34/config-cache-allowed.txt");

fn setup(version: Version, config: &str, stderr: &str) -> NixSetup {
    NixSetup {
        version,
        settings: parse_config(config),
        ignored: ignored_settings(stderr),
        user: "bob".into(),
    }
}

#[test]
fn versions_are_read_from_every_vendor_line() {
    for (line, version) in [
        ("nix (Nix) 2.8.0", Version(2, 8, 0)),
        ("nix (Nix) 2.34.8\n", Version(2, 34, 8)),
        ("nix (Lix, like Nix) 2.95.0", Version(2, 95, 0)),
        ("nix (Determinate Nix 3.23.1) 2.35.3", Version(2, 35, 3)),
        ("nix (Nix) 2.35pre20260101_abcdef", Version(2, 35, 0)),
    ] {
        assert_eq!(Version::from_version_line(line), Some(version), "{line}");
    }
    assert_eq!(Version::from_version_line("nix"), None);
    for (dir, version) in [
        ("2.8", include_str!("../tests/fixtures/nix-2.8/version.txt")),
        (
            "2.26",
            include_str!("../tests/fixtures/nix-2.26/version.txt"),
        ),
        (
            "2.34",
            include_str!("../tests/fixtures/nix-2.34/version.txt"),
        ),
    ] {
        let v = Version::from_version_line(version).unwrap();
        assert_eq!(format!("{}.{}", v.0, v.1), dir);
    }
}

#[test]
fn the_recorded_configs_read_as_settings() {
    for config in [
        include_str!("../tests/fixtures/nix-2.8/config.txt"),
        include_str!("../tests/fixtures/nix-2.26/config.txt"),
        include_str!("../tests/fixtures/nix-2.34/config.txt"),
    ] {
        let settings = parse_config(config);
        assert_eq!(settings["sandbox"], "true", "{config}");
        assert_eq!(settings["build-users-group"], "nixbld", "{config}");
        assert!(settings.contains_key("trusted-users"), "{config}");
    }
}

#[test]
fn an_untrusted_users_ignored_settings_are_read_from_the_daemons_warnings() {
    assert_eq!(
        ignored_settings(UNTRUSTED_2_26),
        ["sandbox", "sandbox-fallback", "trusted-public-keys"]
            .map(String::from)
            .into()
    );
    assert!(ignored_settings(TRUSTED_2_26).is_empty());
}

#[test]
fn a_daemon_without_its_sandbox_is_refused_with_the_fix() {
    let off = setup(Version(2, 26, 3), "sandbox = false\n", UNTRUSTED_2_26);
    assert!(!off.sandboxed());
    let refusal = off.check(true, None).unwrap_err().to_string();
    assert!(refusal.contains("sandbox = true"), "{refusal}");
    assert!(refusal.contains("restart"), "{refusal}");
    // Nothing is built by a command that only reads.
    assert!(off.check(false, None).is_ok());
    // The daemon's own sandbox, or cuwheel's option taken (trusted, or
    // single-user root), is enough.
    let on = setup(Version(2, 26, 3), "sandbox = true\n", UNTRUSTED_2_26);
    assert!(on.check(true, None).is_ok());
    let trusted = setup(Version(2, 26, 3), "sandbox = false\n", TRUSTED_2_26);
    assert!(trusted.check(true, None).is_ok());
}

#[test]
fn an_untrusted_user_asking_for_a_cache_gets_the_nix_conf_lines() {
    let nix = setup(Version(2, 26, 3), "sandbox = true\n", UNTRUSTED_2_26);
    let cache = WantedCache {
        url: "file:///srv/cache".into(),
        public_key: "demo-1:BwcH".into(),
    };
    let refusal = nix.check(false, Some(&cache)).unwrap_err().to_string();
    for line in [
        "\n    extra-trusted-substituters = file:///srv/cache\n",
        "\n    extra-trusted-public-keys = demo-1:BwcH\n",
        "\n    extra-trusted-users = bob",
    ] {
        assert!(refusal.contains(line), "{line:?} not in:\n{refusal}");
    }
    let trusted = setup(Version(2, 26, 3), "sandbox = true\n", TRUSTED_2_26);
    assert!(trusted.check(false, Some(&cache)).is_ok());
}

#[test]
fn a_daemon_ignoring_an_untrusted_users_cache_is_read_from_its_warnings() {
    // The substituter is not a restricted setting: the daemon drops the
    // URL with a warning of its own (the same words in 2.26 and 2.34).
    assert_eq!(
        ignored_settings(UNTRUSTED_CACHE_2_26),
        ignored_settings(UNTRUSTED_CACHE_2_34)
    );
    assert_eq!(
        ignored_settings(UNTRUSTED_CACHE_2_34),
        [
            "require-sigs",
            "sandbox",
            "sandbox-fallback",
            "substituters",
            "trusted-public-keys"
        ]
        .map(String::from)
        .into()
    );
    let nix = setup(Version(2, 34, 8), "sandbox = true\n", UNTRUSTED_CACHE_2_34);
    let cache = WantedCache {
        url: "file:///srv/cache".into(),
        public_key: "demo-1:BwcH".into(),
    };
    let refusal = nix.check(false, Some(&cache)).unwrap_err().to_string();
    assert!(
        refusal.starts_with(
            "the Nix daemon ignores cuwheel's `--option substituters`, `--option \
             trusted-public-keys` for the binary cache file:///srv/cache"
        ),
        "{refusal}"
    );
    assert!(refusal.contains("\n    extra-trusted-substituters = file:///srv/cache\n"));

    // With those lines in the daemon's nix.conf, it takes the URL and
    // trusts the key itself: its ignoring the client's key option (and
    // require-sigs) no longer matters.
    let allowed = setup(
        Version(2, 34, 8),
        CONFIG_CACHE_ALLOWED_2_34,
        UNTRUSTED_CACHE_ALLOWED_2_34,
    );
    assert!(allowed.ignored.contains("trusted-public-keys"));
    assert!(!allowed.ignored.contains("substituters"));
    assert_eq!(allowed.check(false, Some(&cache)), Ok(()));
    // Another key than the daemon trusts is still refused.
    let other = WantedCache {
        public_key: "other-1:AAAA".into(),
        ..cache
    };
    let refusal = allowed.check(false, Some(&other)).unwrap_err().to_string();
    assert!(
        refusal.starts_with(
            "the Nix daemon ignores cuwheel's `--option trusted-public-keys` for the binary cache"
        ),
        "{refusal}"
    );
}

#[test]
fn a_nix_older_than_the_oldest_supported_is_refused_by_name() {
    let old = setup(Version(2, 3, 16), "sandbox = true\n", "");
    let refusal = old.check(false, None).unwrap_err().to_string();
    assert!(
        refusal.starts_with("this is Nix 2.3.16; cuwheel needs Nix 2.8.0 or newer"),
        "{refusal}"
    );
    assert!(setup(OLDEST_SUPPORTED, "", "").check(true, None).is_ok());
}
