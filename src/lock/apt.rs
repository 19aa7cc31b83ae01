//! apt, run against a private state per Debian suite, so that cuwheel can
//! read and download any suite's packages without touching the system's apt
//! configuration or needing root.
//!
//! In: a suite name and the cache directory. Out: the suite's package
//! [`Index`] (`apt-cache dumpavail`) and downloaded `.deb` files
//! (`apt-get download package=version`). The mirror is read at run time from
//! the system's apt sources ([`find_mirror`], pure) or `CUWHEEL_DEBIAN_MIRROR`;
//! it is never written anywhere.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::debian::Index;
use crate::process::checked_output;

/// The key that signs Debian's archive; apt checks every index against it.
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Overrides the mirror found in the system's apt sources.
pub const MIRROR_VARIABLE: &str = "CUWHEEL_DEBIAN_MIRROR";
/// Release names that mark an apt source as Debian's main archive.
const DEBIAN_SUITES: &[&str] = &[
    "buster",
    "bullseye",
    "bookworm",
    "trixie",
    "forky",
    "sid",
    "oldstable",
    "stable",
    "testing",
    "unstable",
];

/// The first Debian archive URI in apt sources: deb822 `.sources` stanzas
/// (`URIs:`/`Suites:`/`Components:`) and one-line `sources.list` entries.
/// Security and update archives do not count (their suites carry a `-`).
pub fn find_mirror(sources: &[(PathBuf, String)]) -> Option<String> {
    let is_debian = |suites: &[&str], components: &[&str]| {
        suites.iter().any(|s| DEBIAN_SUITES.contains(s)) && components.contains(&"main")
    };
    for (path, text) in sources {
        if path.extension().is_some_and(|e| e == "sources") {
            for stanza in text.split("\n\n") {
                let field = |key: &str| -> Vec<&str> {
                    stanza
                        .lines()
                        .filter_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
                        .flat_map(str::split_whitespace)
                        .collect()
                };
                let enabled = field("Enabled").first().is_none_or(|v| *v != "no");
                if enabled
                    && field("Types").contains(&"deb")
                    && is_debian(&field("Suites"), &field("Components"))
                {
                    if let Some(uri) = field("URIs").first() {
                        return Some(uri.to_string());
                    }
                }
            }
        } else {
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("");
                let mut words = line.split_whitespace();
                if words.next() != Some("deb") {
                    continue;
                }
                let mut words: Vec<&str> = words.collect();
                if words.first().is_some_and(|w| w.starts_with('[')) {
                    let close = words.iter().position(|w| w.ends_with(']')).unwrap_or(0);
                    words.drain(..=close);
                }
                if let [uri, suite, components @ ..] = &words[..] {
                    if is_debian(&[suite], components) {
                        return Some(uri.to_string());
                    }
                }
            }
        }
    }
    None
}

/// The mirror to use: `$CUWHEEL_DEBIAN_MIRROR`, else the system's apt sources.
pub fn system_mirror() -> Result<String> {
    if let Ok(mirror) = std::env::var(MIRROR_VARIABLE) {
        if !mirror.trim().is_empty() {
            return Ok(mirror.trim().to_owned());
        }
    }
    let mut files: Vec<PathBuf> = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(entries) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut parts: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        parts.sort();
        files.extend(
            parts
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "list" || e == "sources")),
        );
    }
    let sources: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter_map(|path| Some((path.clone(), fs::read_to_string(&path).ok()?)))
        .collect();
    find_mirror(&sources).with_context(|| {
        format!(
            "no Debian archive is configured in /etc/apt/sources.list or /etc/apt/sources.list.d: \
             cuwheel fetches Debian packages through apt from the mirror this machine uses; \
             set {MIRROR_VARIABLE} to a Debian mirror's URL (the one you would put in a \
             sources.list `deb` line)"
        )
    })
}

/// The mirror for one suite: `$CUWHEEL_DEBIAN_MIRROR_<SUITE>` (e.g.
/// `CUWHEEL_DEBIAN_MIRROR_BUSTER`) if set, else `default`. Archived releases
/// (buster, for `manylinux_2_28`) live on another mirror than current ones.
pub fn suite_mirror(default: &str, suite: &str) -> String {
    let variable = format!("{MIRROR_VARIABLE}_{}", suite.to_uppercase());
    match std::env::var(&variable) {
        Ok(mirror) if !mirror.trim().is_empty() => mirror.trim().to_owned(),
        _ => default.to_owned(),
    }
}

/// apt with a private configuration for one suite, under `root`.
#[derive(Debug, Clone)]
pub struct AptSuite {
    pub suite: String,
    root: PathBuf,
}

impl AptSuite {
    /// Prepares `cache/apt/<suite>` (sources list, state and cache dirs).
    pub fn new(cache: &Path, suite: &str, mirror: &str) -> Result<AptSuite> {
        if !Path::new(KEYRING).is_file() {
            bail!(
                "{KEYRING} is missing: apt needs Debian's archive key to check the package \
                 indexes; install the debian-archive-keyring package"
            );
        }
        let root = cache.join("apt").join(suite);
        for dir in [
            "etc/sources.list.d",
            "etc/preferences.d",
            "state/lists/partial",
            "cache/archives/partial",
        ] {
            fs::create_dir_all(root.join(dir))
                .with_context(|| format!("cannot create {}", root.join(dir).display()))?;
        }
        let base = super::debian::DebianData::embedded().suite_bases.get(suite);
        let lines: String = base
            .into_iter()
            .chain([&suite.to_owned()])
            .map(|suite| {
                format!("deb [signed-by={KEYRING}] {mirror} {suite} main contrib non-free\n")
            })
            .collect();
        let list = root.join("etc/sources.list");
        if fs::read_to_string(&list).ok().as_deref() != Some(&lines) {
            fs::write(&list, lines).with_context(|| format!("cannot write {}", list.display()))?;
        }
        // A suite read over its base (experimental over sid) is pinned like
        // the base, so that each package's newer version is the candidate
        // `apt-cache dumpavail` prints (apt gives experimental priority 1).
        let preferences = root.join("etc/preferences.d/cuwheel");
        if base.is_some() {
            let pin = format!("Package: *\nPin: release a={suite}\nPin-Priority: 500\n");
            if fs::read_to_string(&preferences).ok().as_deref() != Some(&pin) {
                fs::write(&preferences, pin)
                    .with_context(|| format!("cannot write {}", preferences.display()))?;
            }
        }
        Ok(AptSuite {
            suite: suite.to_owned(),
            root,
        })
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        let dir = |sub: &str| self.root.join(sub).display().to_string();
        for (key, value) in [
            ("Dir::Etc", dir("etc")),
            ("Dir::Etc::SourceList", dir("etc/sources.list")),
            ("Dir::Etc::SourceParts", dir("etc/sources.list.d")),
            ("Dir::Etc::PreferencesParts", dir("etc/preferences.d")),
            ("Dir::State", dir("state")),
            ("Dir::Cache", dir("cache")),
            ("Dir::State::status", "/dev/null".into()),
            ("APT::Architecture", "amd64".into()),
            ("Debug::NoLocking", "1".into()),
        ] {
            cmd.arg("-o").arg(format!("{key}={value}"));
        }
        cmd
    }

    /// `apt-get update`: fetches and checks the suite's signed indexes.
    pub fn update(&self) -> Result<()> {
        let mut cmd = self.command("apt-get");
        cmd.args(["-q", "update"]);
        run(cmd, &format!("apt-get update for Debian {}", self.suite)).map(drop)
    }

    /// Every package of the suite (after [`update`](Self::update)).
    pub fn index(&self) -> Result<Index> {
        let mut cmd = self.command("apt-cache");
        cmd.arg("dumpavail");
        let text = run(
            cmd,
            &format!("apt-cache dumpavail for Debian {}", self.suite),
        )?;
        Index::parse(&text)
            .map_err(|e| anyhow::anyhow!("cannot read Debian {}'s package index: {e}", self.suite))
    }

    /// `apt-get download package=version` into `dir`; returns what apt wrote.
    pub fn download(&self, package: &str, version: &str, dir: &Path) -> Result<()> {
        let mut cmd = self.command("apt-get");
        cmd.args(["-q", "download"])
            .arg(format!("{package}={version}"))
            .current_dir(dir);
        let what = format!(
            "apt-get download {package}={version} from Debian {}",
            self.suite
        );
        match run(cmd, &what) {
            Ok(_) => Ok(()),
            Err(error) if is_gone(&format!("{error:#}")) => bail!(
                "Debian {} no longer carries {package} {version}: Debian drops superseded \
                 versions from its mirrors. Run `cuwheel lock` to pin the versions it carries \
                 now (or fetch from a binary cache that holds the pinned paths)\n{error:#}",
                self.suite
            ),
            Err(error) => Err(error),
        }
    }
}

/// apt's ways of saying a version is not (or no longer) on the mirror.
fn is_gone(message: &str) -> bool {
    ["was not found", "Can't find a source to download", "404"]
        .iter()
        .any(|needle| message.contains(needle))
}

fn run(mut cmd: Command, what: &str) -> Result<String> {
    let output = checked_output(&mut cmd, what, || {
        format!("cannot run {what}: is apt installed? (cuwheel reads Debian through apt)")
    })?;
    String::from_utf8(output.stdout).with_context(|| format!("{what} printed non-UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
