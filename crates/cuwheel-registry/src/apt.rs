//! apt, run against a private state per Debian suite, so that cuwheel can
//! read and download any suite's packages without touching the system's apt
//! configuration or needing root.
//!
//! In: a suite name and the cache directory. Out: the suite's package
//! [`Index`] (`apt-cache dumpavail`) and downloaded `.deb` files
//! (`apt-get download package=version`), and the `Date` of the signed index
//! it read ([`AptSuite::index_date`]). The mirror and the security archive
//! are read at run time from the system's apt sources ([`find_mirror`], pure)
//! or `CUWHEEL_DEBIAN_MIRROR` / `CUWHEEL_DEBIAN_SECURITY_MIRROR`; they are
//! never written anywhere. apt checks every index against Debian's archive
//! keyring, or the one `CUWHEEL_DEBIAN_KEYRING` names.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::debian::Index;
use crate::file_lock::{FileLock, Mode};
use crate::process::checked_output;

/// The keys that sign Debian's archive; apt checks every index against them.
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Replaces [`KEYRING`] (a mirror of one's own, signed with one's own key).
pub const KEYRING_VARIABLE: &str = "CUWHEEL_DEBIAN_KEYRING";
/// Overrides the mirror found in the system's apt sources.
pub const MIRROR_VARIABLE: &str = "CUWHEEL_DEBIAN_MIRROR";
/// Overrides the security archive found in the system's apt sources.
pub const SECURITY_MIRROR_VARIABLE: &str = "CUWHEEL_DEBIAN_SECURITY_MIRROR";
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
    find_archive(sources, |suite| DEBIAN_SUITES.contains(&suite))
}

/// The first URI in apt sources that serves a Debian release's security
/// suite (`trixie-security`, `bookworm-security`): the security archive.
pub fn find_security_mirror(sources: &[(PathBuf, String)]) -> Option<String> {
    find_archive(sources, |suite| {
        suite
            .strip_suffix("-security")
            .is_some_and(|release| DEBIAN_SUITES.contains(&release))
    })
}

/// The first enabled `deb` URI of `sources` with component `main` and a
/// suite that `wanted` accepts.
fn find_archive(sources: &[(PathBuf, String)], wanted: impl Fn(&str) -> bool) -> Option<String> {
    let matches = |suites: &[&str], components: &[&str]| {
        suites.iter().any(|s| wanted(s)) && components.contains(&"main")
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
                    && matches(&field("Suites"), &field("Components"))
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
                    if matches(&[suite], components) {
                        return Some(uri.to_string());
                    }
                }
            }
        }
    }
    None
}

/// The system's apt sources: `/etc/apt/sources.list` and the `.list` and
/// `.sources` files of `/etc/apt/sources.list.d`, in apt's order.
fn system_sources() -> Vec<(PathBuf, String)> {
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
    files
        .into_iter()
        .filter_map(|path| Some((path.clone(), fs::read_to_string(&path).ok()?)))
        .collect()
}

/// A non-empty environment variable, trimmed.
fn variable(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The mirror to use: `$CUWHEEL_DEBIAN_MIRROR`, else the system's apt sources.
pub fn system_mirror() -> Result<String> {
    if let Some(mirror) = variable(MIRROR_VARIABLE) {
        return Ok(mirror);
    }
    find_mirror(&system_sources()).with_context(|| {
        format!(
            "no Debian archive is configured in /etc/apt/sources.list or /etc/apt/sources.list.d: \
             cuwheel fetches Debian packages through apt from the mirror this machine uses; \
             set {MIRROR_VARIABLE} to a Debian mirror's URL (the one you would put in a \
             sources.list `deb` line)"
        )
    })
}

/// The security archive: `$CUWHEEL_DEBIAN_SECURITY_MIRROR`, else the one the
/// system's apt sources name for a `-security` suite; `None` when neither does.
pub fn security_mirror() -> Option<String> {
    variable(SECURITY_MIRROR_VARIABLE).or_else(|| find_security_mirror(&system_sources()))
}

/// The mirror for one suite: `$CUWHEEL_DEBIAN_MIRROR_<SUITE>` (e.g.
/// `CUWHEEL_DEBIAN_MIRROR_BUSTER`, `CUWHEEL_DEBIAN_MIRROR_TRIXIE_BACKPORTS`)
/// if set, else `default`. Archived releases (buster, for `manylinux_2_28`)
/// live on another mirror than current ones.
pub fn suite_mirror(default: &str, suite: &str) -> String {
    let suite = split_suite_key(suite).0;
    let name = format!(
        "{MIRROR_VARIABLE}_{}",
        suite.to_uppercase().replace('-', "_")
    );
    variable(&name).unwrap_or_else(|| default.to_owned())
}

/// The keyring apt checks indexes with: `$CUWHEEL_DEBIAN_KEYRING`, else
/// Debian's archive keyring.
fn keyring() -> Result<PathBuf> {
    let (path, hint) = match variable(KEYRING_VARIABLE) {
        Some(path) => (
            PathBuf::from(path),
            format!("set {KEYRING_VARIABLE} to a keyring file that exists"),
        ),
        None => (
            PathBuf::from(KEYRING),
            format!(
                "install the debian-archive-keyring package (or set {KEYRING_VARIABLE} to the \
                 keyring that signs your mirror)"
            ),
        ),
    };
    if !path.is_file() {
        bail!(
            "{} is missing: apt needs the archive's key to check the package indexes; {hint}",
            path.display()
        );
    }
    Ok(path)
}

/// apt with a private configuration for one suite, under `root`.
#[derive(Debug, Clone)]
pub struct AptSuite {
    /// The suite's key as the lock writes it: `bookworm`, or
    /// `bookworm:arm64` for its arm64 packages ([`suite_key`]).
    pub suite: String,
    /// The Debian suite alone (`bookworm`).
    name: String,
    /// Debian's name of the architecture whose packages it reads (`amd64`).
    arch: String,
    root: PathBuf,
    /// A snapshot: its Release files are expired by design.
    frozen: bool,
}

/// The architecture of packages a suite key reads when it names none.
pub const HOST_ARCH: &str = "amd64";

/// A suite's key: the suite for its amd64 packages (`bookworm`, what every
/// lock before aarch64 cells recorded), `<suite>:<arch>` for another
/// architecture's (`bookworm:arm64`, the arm64 Python headers of an
/// aarch64 cell). Index, state and pins are kept per key.
pub fn suite_key(suite: &str, arch: &str) -> String {
    if arch == HOST_ARCH {
        suite.to_owned()
    } else {
        format!("{suite}:{arch}")
    }
}

/// The suite and architecture of a key ([`suite_key`]).
pub fn split_suite_key(key: &str) -> (&str, &str) {
    key.split_once(':').unwrap_or((key, HOST_ARCH))
}

/// A pinned version that the suite did not serve, and why ([`Listing`]).
#[derive(Debug, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Gone {
    pub suite: String,
    pub package: String,
    pub version: String,
    /// What apt said.
    pub detail: String,
    /// What the suite's index says of the version.
    pub listing: Listing,
}

/// What a suite's index, read again after a failed download, says of a
/// version: only [`Listing::NotListed`] means Debian dropped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// The index was read and lacks the version.
    NotListed,
    /// The index could not be read: apt's first error line.
    Unreadable(String),
    /// The index lists the version, but the mirror did not serve the file.
    ListedNotServed,
}

impl Gone {
    /// Why the suite did not serve the file, in a few words.
    pub fn why(&self) -> String {
        match &self.listing {
            Listing::NotListed => format!("not in Debian {} any more", self.suite),
            Listing::Unreadable(reason) => {
                format!("Debian {}'s index could not be read: {reason}", self.suite)
            }
            Listing::ListedNotServed => format!(
                "Debian {}'s index lists it, but the mirror did not serve it: {}",
                self.suite, self.detail
            ),
        }
    }

    fn describe(&self) -> String {
        match self.listing {
            Listing::NotListed => format!(
                "Debian {} no longer carries {} {}: Debian drops superseded versions from its \
                 mirrors ({})",
                self.suite, self.package, self.version, self.detail
            ),
            _ => format!("{} {}: {}", self.package, self.version, self.why()),
        }
    }
}

/// apt's own words for what went wrong: its first `E:` line, else the last
/// line it printed.
pub fn first_error(text: &str) -> String {
    text.lines()
        .find(|line| line.trim_start().starts_with("E:"))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// The apt configuration file every command of a suite reads, after the
/// machine's own (`/etc/apt/apt.conf.d`, which still says how to reach the
/// mirror: proxies, certificates).
const CONFIG: &str = "etc/cuwheel.conf";

/// What the machine's apt configuration may say and cuwheel's private state
/// must not follow. Docker's Debian images turn apt's package cache off
/// (`docker-clean`), so every `apt-get download` parsed the whole index
/// again; here it is built once, by `update`, in the suite's own `cache/`.
/// And the machine's hooks on `apt-get update` (which, in those images,
/// delete files under `/var/cache/apt`, and elsewhere refresh PackageKit's
/// or AppStream's data) concern the machine's apt, not this state.
const CONFIG_TEXT: &str = "\
// Written by cuwheel for its own apt state; rewritten when it differs.
Dir::Cache::pkgcache \"pkgcache.bin\";
Dir::Cache::srcpkgcache \"srcpkgcache.bin\";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear APT::Update::Post-Invoke-Stats;
";

impl AptSuite {
    /// Prepares `cache/apt/<suite>` (sources list, state and cache dirs) for
    /// `suite` of the archive at `mirror`; `suite` is a key ([`suite_key`]),
    /// so `bookworm:arm64` reads bookworm's arm64 packages.
    pub fn new(cache: &Path, suite: &str, mirror: &str) -> Result<AptSuite> {
        AptSuite::at(cache.join("apt").join(suite), suite, mirror, false)
    }

    /// Like [`new`](Self::new), for `suite` of an archive frozen in the past
    /// (a snapshot), with its state under `cache/apt/<state>/<suite>`: its
    /// Release's `Valid-Until` has passed, so apt is told not to check that
    /// (it still checks the signature).
    pub fn frozen(cache: &Path, state: &str, suite: &str, url: &str) -> Result<AptSuite> {
        AptSuite::at(cache.join("apt").join(state).join(suite), suite, url, true)
    }

    fn at(root: PathBuf, key: &str, mirror: &str, frozen: bool) -> Result<AptSuite> {
        let (suite, arch) = split_suite_key(key);
        let keyring = keyring()?;
        for dir in [
            "etc/sources.list.d",
            "etc/preferences.d",
            "state/lists/partial",
            "cache/archives/partial",
        ] {
            fs::create_dir_all(root.join(dir))
                .with_context(|| format!("cannot create {}", root.join(dir).display()))?;
        }
        let valid_until = if frozen { " check-valid-until=no" } else { "" };
        let base = super::debian::DebianData::embedded().suite_bases.get(suite);
        let lines: String = base
            .into_iter()
            .chain([&suite.to_owned()])
            .map(|suite| {
                format!(
                    "deb [signed-by={}{valid_until}] {mirror} {suite} main contrib non-free\n",
                    keyring.display()
                )
            })
            .collect();
        let conf = root.join(CONFIG);
        if fs::read_to_string(&conf).ok().as_deref() != Some(CONFIG_TEXT) {
            fs::write(&conf, CONFIG_TEXT)
                .with_context(|| format!("cannot write {}", conf.display()))?;
        }
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
            suite: key.to_owned(),
            name: suite.to_owned(),
            arch: arch.to_owned(),
            root,
            frozen,
        })
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        let dir = |sub: &str| self.root.join(sub).display().to_string();
        cmd.arg("-c").arg(dir(CONFIG));
        for (key, value) in [
            ("Dir::Etc", dir("etc")),
            ("Dir::Etc::SourceList", dir("etc/sources.list")),
            ("Dir::Etc::SourceParts", dir("etc/sources.list.d")),
            ("Dir::Etc::PreferencesParts", dir("etc/preferences.d")),
            ("Dir::State", dir("state")),
            ("Dir::Cache", dir("cache")),
            ("Dir::State::status", "/dev/null".into()),
            ("APT::Architecture", self.arch.clone()),
            // Only that architecture's lists, not also the host's foreign
            // architectures (dpkg's, which the empty status does not hide).
            ("APT::Architectures::", self.arch.clone()),
            ("Acquire::Languages", "none".into()),
            // A failed download fails `update`, rather than leaving an
            // index that silently lacks (or predates) the suite's packages.
            ("APT::Update::Error-Mode", "any".into()),
            ("Debug::NoLocking", "1".into()),
        ] {
            cmd.arg("-o").arg(format!("{key}={value}"));
        }
        // A snapshot's Release files are expired by design (their
        // signature is still checked, and every file pinned by sha256):
        // said for the whole command as well as on its sources line.
        if self.frozen {
            cmd.args(["-o", "Acquire::Check-Valid-Until=false"]);
        }
        // Connect and stall timeouts, and a bounded number of tries.
        cmd.args(super::net::NetLimits::current().apt_args());
        cmd
    }

    /// Holds this suite's state against other cuwheel processes and
    /// threads: `update` writes it exclusively; readers share it. apt's own
    /// locking is off (its lock files are the system's), and two apt
    /// processes rebuilding one `pkgcache.bin` break each other (`Problem
    /// renaming the file …srcpkgcache.bin`).
    fn lock(&self, mode: Mode) -> Result<FileLock> {
        FileLock::acquire(&self.root.join("cuwheel.lock"), mode)
    }

    /// `apt-get update`: fetches and checks the suite's signed indexes, and
    /// builds apt's package cache once, so that readers only read it.
    pub fn update(&self) -> Result<()> {
        let _lock = self.lock(Mode::Exclusive)?;
        let mut cmd = self.command("apt-get");
        cmd.args(["-q", "update"]);
        run(cmd, &format!("apt-get update for Debian {}", self.suite))
            .and_then(|_| {
                let mut cmd = self.command("apt-cache");
                cmd.arg("gencaches");
                run(
                    cmd,
                    &format!("apt-cache gencaches for Debian {}", self.suite),
                )
            })
            .map(drop)
            .map_err(|error| {
                if !mirror_unreachable(&format!("{error:#}")) {
                    return error;
                }
                error.context(format!(
                    "the Debian mirror of {} could not be reached (this is not a missing \
                     package); check the network connection and any proxy (http_proxy, apt's \
                     Acquire::http::Proxy), the mirror (CUWHEEL_DEBIAN_MIRROR), or give it more \
                     time with {}",
                    self.suite,
                    super::net::NetLimits::how_to_change()
                ))
            })
    }

    /// [`update`](Self::update), unless this suite's indexes were fetched
    /// and checked less than `max_age` ago: then they are read as they are.
    /// Returns how long ago they were fetched when they were not fetched now.
    pub fn update_unless_recent(
        &self,
        max_age: std::time::Duration,
    ) -> Result<Option<std::time::Duration>> {
        let stamp = self.root.join("state/updated");
        let age = fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if let Some(age) = age.filter(|age| *age < max_age) {
            if self.index_date().is_ok() {
                return Ok(Some(age));
            }
        }
        self.update()?;
        fs::write(&stamp, b"").with_context(|| format!("cannot write {}", stamp.display()))?;
        Ok(None)
    }

    /// Every package of the suite (after [`update`](Self::update)).
    pub fn index(&self) -> Result<Index> {
        self.index_of(|_| true)
    }

    /// The packages of the suite whose name `wanted` accepts.
    pub fn index_of(&self, wanted: impl Fn(&str) -> bool) -> Result<Index> {
        let _lock = self.lock(Mode::Shared)?;
        let mut cmd = self.command("apt-cache");
        cmd.arg("dumpavail");
        let text = run(
            cmd,
            &format!("apt-cache dumpavail for Debian {}", self.suite),
        )?;
        let stanzas: Vec<&str> = text
            .split("\n\n")
            .filter(|stanza| {
                let name = stanza
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("Package:"));
                name.is_none_or(|name| wanted(name.trim()))
            })
            .collect();
        Index::parse(&stanzas.join("\n\n"))
            .map_err(|e| anyhow::anyhow!("cannot read Debian {}'s package index: {e}", self.suite))
    }

    /// The `Date` of the signed Release file the last
    /// [`update`](Self::update) read, as a snapshot timestamp
    /// (`YYYYMMDDTHHMMSSZ`, UTC): the moment the archive wrote the index.
    pub fn index_date(&self) -> Result<String> {
        let lists = self.root.join("state/lists");
        let mut releases: Vec<PathBuf> = fs::read_dir(&lists)
            .with_context(|| format!("cannot read {}", lists.display()))?
            .filter_map(|entry| Some(entry.ok()?.path()))
            .filter(|path| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                [
                    format!("_dists_{}_InRelease", self.name),
                    format!("_dists_{}_Release", self.name),
                ]
                .iter()
                .any(|end| name.ends_with(end.as_str()))
            })
            .collect();
        releases.sort();
        let release = releases.first().with_context(|| {
            format!(
                "apt-get update for Debian {} left no Release file in {}",
                self.suite,
                lists.display()
            )
        })?;
        let text = fs::read_to_string(release)
            .with_context(|| format!("cannot read {}", release.display()))?;
        let date = text
            .lines()
            .find_map(|line| line.strip_prefix("Date:"))
            .with_context(|| format!("{} has no Date field", release.display()))?;
        super::snapshot::timestamp(date.trim())
            .with_context(|| format!("{}: the Date field", release.display()))
    }

    /// `apt-get download package=version` into `dir`; a version the suite
    /// did not serve is a [`Gone`] error that says whether its index, read
    /// again, lists it.
    pub fn download(&self, package: &str, version: &str, dir: &Path) -> Result<()> {
        let _lock = self.lock(Mode::Shared)?;
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
            Err(error) if is_gone(&format!("{error:#}")) => Err(Gone {
                suite: self.suite.clone(),
                package: package.to_owned(),
                version: version.to_owned(),
                detail: first_error(&format!("{error:#}")),
                listing: self.listing(package, version),
            }
            .into()),
            Err(error) => Err(error),
        }
    }

    /// Whether the suite's index lists `package` `version`
    /// (`apt-cache show`), with the lock already held.
    fn listing(&self, package: &str, version: &str) -> Listing {
        let mut cmd = self.command("apt-cache");
        cmd.args(["-q", "show", "--no-all-versions"])
            .arg(format!("{package}={version}"));
        let output = match cmd.output() {
            Ok(output) => output,
            Err(error) => return Listing::Unreadable(format!("cannot run apt-cache: {error}")),
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        listing_of(output.status.success(), &output.stdout, &stderr)
    }
}

/// Reads `apt-cache show P=V`'s answer: printed stanza, "not found" (and no
/// other error), or an index apt could not read.
fn listing_of(success: bool, stdout: &[u8], stderr: &str) -> Listing {
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("E:"))
        .collect();
    let not_found = |line: &&str| {
        [
            "was not found",
            "No packages found",
            "Unable to locate package",
        ]
        .iter()
        .any(|needle| line.contains(needle))
    };
    if success && errors.is_empty() && stdout.starts_with(b"Package:") {
        Listing::ListedNotServed
    } else if errors.iter().all(not_found) && (!errors.is_empty() || success) {
        // apt-cache prints nothing, successfully, for a known package's
        // unknown version, and "No packages found" for an unknown package.
        Listing::NotListed
    } else {
        Listing::Unreadable(first_error(stderr))
    }
}

/// apt's ways of saying a version is not (or no longer) on the mirror.
fn is_gone(message: &str) -> bool {
    ["was not found", "Can't find a source to download", "404"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// Whether apt's output says it could not reach a mirror (connect,
/// resolve or timeout failures), as opposed to a mirror that answered.
pub fn mirror_unreachable(output: &str) -> bool {
    [
        "Could not connect to",
        "Temporary failure resolving",
        "Could not resolve",
        "Connection timed out",
        "Connection failed",
        "Failed to connect",
    ]
    .iter()
    .any(|marker| output.contains(marker))
}

fn run(mut cmd: Command, what: &str) -> Result<String> {
    let output = checked_output(&mut cmd, what, || {
        format!("cannot run {what}: is apt installed? (cuwheel reads Debian through apt)")
    })?;
    String::from_utf8(output.stdout).with_context(|| format!("{what} printed non-UTF-8 text"))
}

#[cfg(test)]
#[path = "apt_tests.rs"]
mod tests;
