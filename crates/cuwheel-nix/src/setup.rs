//! What the Nix at hand is and how it is set up, and whether cuwheel may
//! build with it. In: the text of `nix --version`, of `nix config show`
//! (`nix show-config` before 2.20), and the warnings Nix printed when
//! cuwheel's `--option`s reached the store (a daemon ignores restricted
//! settings from a user it does not trust). Out: a [`NixSetup`], and from
//! it either nothing (fine to go on) or a [`Refusal`] that says what is
//! wrong and the `nix.conf` lines that fix it.
//!
//! Pure: the process calls that gather the texts are in [`super::nix`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The oldest Nix cuwheel is tested with (Debian 12's `nix-bin`): flakes,
/// `nix store ping`, `nix copy` and `nix store sign`/`verify` work as
/// cuwheel uses them from 2.8 on.
pub const OLDEST_SUPPORTED: Version = Version(2, 8, 0);

/// The first Nix with `nix config show` (before: `nix show-config`).
pub const CONFIG_SHOW_SINCE: Version = Version(2, 20, 0);
/// The first Nix with `nix store info` (before: `nix store ping`).
pub const STORE_INFO_SINCE: Version = Version(2, 19, 0);
/// The first Nix with `--json-format` (and a deprecation warning without it).
pub const JSON_FORMAT_SINCE: Version = Version(2, 33, 0);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl Version {
    /// The version in `nix --version`'s line: `nix (Nix) 2.34.8`, `nix (Lix,
    /// like Nix) 2.95.0`, `nix (Determinate Nix 3.23.1) 2.35.3`: the last
    /// word, read up to its first non-numeric part (`2.35pre…`).
    pub fn from_version_line(line: &str) -> Option<Version> {
        let word = line.split_whitespace().last()?;
        let mut parts = word.split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Version(major, minor, patch))
    }
}

/// The Nix at hand: its version, its effective settings (`name = value`
/// as `nix config show` prints them), and the settings among cuwheel's
/// `--option`s that the store ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NixSetup {
    pub version: Version,
    pub settings: BTreeMap<String, String>,
    pub ignored: BTreeSet<String>,
    /// The user cuwheel runs as, for the `trusted-users` line.
    pub user: String,
}

/// Reads `nix config show`'s `name = value` lines.
pub fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once(" = "))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

/// The settings a daemon said it ignored: from its warnings "ignoring the
/// client-specified setting 'NAME', because it is a restricted setting and
/// you are not a trusted user", and "ignoring untrusted substituter 'URL',
/// you are not a trusted user" (for `substituters`, which is not
/// restricted but keeps only the URLs of the daemon's
/// `trusted-substituters`).
pub fn ignored_settings(stderr: &str) -> BTreeSet<String> {
    stderr
        .lines()
        .filter_map(|line| {
            if line.contains("ignoring untrusted substituter '") {
                return Some("substituters".to_owned());
            }
            let rest = line
                .split("ignoring the client-specified setting '")
                .nth(1)?;
            Some(rest.split_once('\'')?.0.to_owned())
        })
        .collect()
}

/// Why cuwheel will not go on with this Nix; the text says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A binary cache cuwheel was asked to substitute from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WantedCache {
    pub url: String,
    pub public_key: String,
}

impl NixSetup {
    /// Whether builds run in a sandbox: cuwheel's `--option sandbox true`
    /// where the store took it, else the store's own setting. `relaxed`
    /// counts as on: it differs only for derivations that ask to leave
    /// the sandbox, and cuwheel's never do.
    pub fn sandboxed(&self) -> bool {
        if !self.ignored.contains("sandbox") {
            return true;
        }
        matches!(
            self.settings.get("sandbox").map(String::as_str),
            Some("true" | "relaxed")
        )
    }

    /// Whether cuwheel may use this Nix: a supported version, for building
    /// a sandbox, and for `cache` a cache it may substitute from.
    pub fn check(&self, building: bool, cache: Option<&WantedCache>) -> Result<(), Refusal> {
        if self.version < OLDEST_SUPPORTED {
            return Err(Refusal(format!(
                "this is Nix {}; cuwheel needs Nix {OLDEST_SUPPORTED} or newer (Debian 12's \
                 nix-bin is 2.8; the official installer gives the newest). Upgrade Nix and run \
                 again",
                self.version
            )));
        }
        if building && !self.sandboxed() {
            return Err(Refusal(format!(
                "the Nix daemon builds without its sandbox (its nix.conf says sandbox = {}) \
                 and ignores cuwheel's `--option sandbox true` because {} is not a trusted \
                 user. cuwheel never builds unsandboxed: a wheel's determinism rests on the \
                 sandbox. Fix: put this line in /etc/nix/nix.conf and restart the daemon \
                 (`systemctl restart nix-daemon`):\n    sandbox = true",
                self.settings
                    .get("sandbox")
                    .map_or("(unknown)", String::as_str),
                self.user
            )));
        }
        if let Some(cache) = cache {
            // What keeps the daemon from substituting: it dropped the URL
            // (not in its trusted-substituters), or it ignored the key and
            // does not trust it itself. An ignored `require-sigs` does not:
            // the daemon checks signatures by its own setting.
            let url_dropped = self.ignored.contains("substituters");
            let key_missing = self.ignored.contains("trusted-public-keys")
                && !self
                    .settings
                    .get("trusted-public-keys")
                    .is_some_and(|keys| keys.split_whitespace().any(|k| k == cache.public_key));
            let ignored: Vec<&str> = [
                ("substituters", url_dropped),
                ("trusted-public-keys", key_missing),
            ]
            .into_iter()
            .filter_map(|(name, matters)| matters.then_some(name))
            .collect();
            if !ignored.is_empty() {
                return Err(Refusal(format!(
                    "the Nix daemon ignores cuwheel's {} for the binary cache {} because {} is \
                     not a trusted user, so it would not take paths from that cache. Fix: add \
                     to /etc/nix/nix.conf and restart the daemon (`systemctl restart \
                     nix-daemon`) either these two lines, which let any user use this cache \
                     with this key:\n    extra-trusted-substituters = {}\n    \
                     extra-trusted-public-keys = {}\nor this one, which trusts {} with every \
                     setting:\n    extra-trusted-users = {}",
                    ignored
                        .iter()
                        .map(|n| format!("`--option {n}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    cache.url,
                    self.user,
                    cache.url,
                    cache.public_key,
                    self.user,
                    self.user
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
