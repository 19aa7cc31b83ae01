//! Where `cuwheel fetch` looks for a pinned `.deb` that its suite no longer
//! carries, in order, after the store, the binary cache and cuwheel's cache:
//!
//! 1. another suite that carries the same file (same package, version and
//!    sha256): the release's `-updates`, `-proposed-updates`, `-security`
//!    (on the security archive the system's apt sources name, or
//!    `CUWHEEL_DEBIAN_SECURITY_MIRROR`) and `-backports` suites, then the
//!    next newer and the next older release (a version leaves unstable for
//!    testing, and testing's may stay in the release before it);
//! 2. Debian's snapshot archive, as it was when the lock read the suite's
//!    index ([`crate::registry::snapshot`]), read through apt, which checks the
//!    suite's signed Release of that moment.
//!
//! In: the lost artifacts and a [`Session`]. Out: the ones no fallback
//! served, each with what was tried. Every file is checked against the
//! lock's size and sha256 before it reaches the store, as any other.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use anyhow::Result;

use super::session::Session;
use crate::lock::format::{Artifact, Source};
use crate::registry::apt::{self, AptSuite};
use crate::registry::downloads::Clients;
use crate::registry::pins;
use crate::registry::pip::Pip;
use crate::registry::snapshot;
use crate::store::StorePath;

/// Debian's releases, oldest first.
const RELEASES: &[&str] = &["buster", "bullseye", "bookworm", "trixie", "forky", "sid"];

/// A pinned artifact that no source has served yet.
pub(super) struct Lost<'a> {
    pub name: &'a str,
    pub path: &'a StorePath,
    pub artifact: &'a Artifact,
    /// Why its own suite did not serve it: `None` when the suite's index no
    /// longer lists it, else why (an index apt could not read, quoting apt's
    /// first error line; or a file the index lists that was not served).
    pub unreadable: Option<String>,
    /// Where else it was looked for.
    pub tried: Vec<String>,
}

/// The archives another suite may be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Archive {
    Main,
    Security,
}

/// The other suites that may carry a file pinned from `suite`, in the order
/// they are tried.
fn other_suites(suite: &str) -> Vec<(Archive, String)> {
    let mut suites = Vec::new();
    let Some(at) = RELEASES.iter().position(|r| *r == suite) else {
        return suites;
    };
    if suite != "sid" {
        suites.push((Archive::Main, format!("{suite}-updates")));
        suites.push((Archive::Main, format!("{suite}-proposed-updates")));
        suites.push((Archive::Security, format!("{suite}-security")));
        suites.push((Archive::Main, format!("{suite}-backports")));
    }
    if let Some(newer) = RELEASES.get(at + 1) {
        suites.push((Archive::Main, (*newer).to_owned()));
    }
    if at > 0 {
        suites.push((Archive::Main, RELEASES[at - 1].to_owned()));
    }
    suites
}

fn pinned_suite(artifact: &Artifact) -> &str {
    match &artifact.source {
        Source::Debian { suite, .. } => suite,
        Source::Pypi { .. } | Source::Archive { .. } => "",
    }
}

/// apt's own words for why an index could not be read: its first `E:` line.
fn apt_reason(error: &anyhow::Error) -> String {
    apt::first_error(&format!("{error:#}"))
}

/// Tries the other suites, then the snapshot archive, for `lost`; returns
/// what is still lost and how many files each fallback served.
pub(super) fn recover<'a>(
    session: &Session,
    mut lost: Vec<Lost<'a>>,
    pip: &Pip,
    snapshot_base: &str,
    jobs: usize,
) -> (Vec<Lost<'a>>, BTreeMap<String, usize>) {
    let mut served = BTreeMap::new();
    let mirror = apt::system_mirror();
    let security = apt::security_mirror();
    let mut candidates: Vec<(Archive, String)> = Vec::new();
    for item in &lost {
        for candidate in other_suites(pinned_suite(item.artifact)) {
            if !candidates.contains(&candidate) {
                candidates.push(candidate);
            }
        }
    }
    for (archive, suite) in candidates {
        let wanting: Vec<usize> = (0..lost.len())
            .filter(|&i| {
                other_suites(pinned_suite(lost[i].artifact)).contains(&(archive, suite.clone()))
            })
            .collect();
        if wanting.is_empty() {
            continue;
        }
        let base = match (archive, &mirror, &security) {
            (Archive::Main, Ok(mirror), _) => mirror.clone(),
            (Archive::Security, _, Some(security)) => security.clone(),
            (Archive::Main, Err(_), _) => continue,
            (Archive::Security, _, None) => {
                eprintln!(
                    "fetch: no security archive is configured (neither the system's apt sources \
                     nor {}), so {suite} is not looked at",
                    apt::SECURITY_MIRROR_VARIABLE
                );
                continue;
            }
        };
        let url = apt::suite_mirror(&base, &suite);
        let from = format!("Debian {suite}");
        let apt = AptSuite::new(&session.cache.root, &suite, &url);
        let done = look(session, &mut lost, &wanting, apt, &from, pip, jobs);
        *served.entry(from).or_default() += done.len();
        remove(&mut lost, &done);
    }

    let suites: BTreeSet<String> = lost
        .iter()
        .map(|item| pinned_suite(item.artifact).to_owned())
        .collect();
    for suite in suites {
        let Some(read) = session.lock.suites.get(&suite) else {
            for item in lost
                .iter_mut()
                .filter(|i| pinned_suite(i.artifact) == suite)
            {
                item.tried.push(format!(
                    "the snapshot archive (the lock records no index date for {suite})"
                ));
            }
            continue;
        };
        let looks = match snapshot::looks(&read.index_date) {
            Ok(looks) => looks,
            Err(error) => {
                eprintln!("fetch: cuwheel.lock's index date of {suite}: {error:#}");
                continue;
            }
        };
        for timestamp in looks {
            let wanting: Vec<usize> = (0..lost.len())
                .filter(|&i| pinned_suite(lost[i].artifact) == suite)
                .collect();
            if wanting.is_empty() {
                break;
            }
            let from = format!("the snapshot archive at {timestamp}");
            let state = format!("snapshot/{timestamp}");
            let url = snapshot::url(snapshot_base, &timestamp);
            let apt = AptSuite::frozen(&session.cache.root, &state, &suite, &url);
            let done = look(session, &mut lost, &wanting, apt, &from, pip, jobs);
            *served.entry("the snapshot archive".to_owned()).or_default() += done.len();
            remove(&mut lost, &done);
            // The snapshot's indexes are read once per timestamp; keep no copy.
            let _ = std::fs::remove_dir_all(session.cache.root.join("apt").join(&state));
        }
    }
    served.retain(|_, count| *count > 0);
    (lost, served)
}

/// Drops the items at `done` (indexes into `lost`).
fn remove(lost: &mut Vec<Lost>, done: &[usize]) {
    let mut at = 0;
    lost.retain(|_| {
        at += 1;
        !done.contains(&(at - 1))
    });
}

/// Reads `apt`'s suite and downloads from it what it carries of
/// `lost[wanting]`; returns the indexes of those it served.
fn look(
    session: &Session,
    lost: &mut [Lost],
    wanting: &[usize],
    apt: Result<AptSuite>,
    from: &str,
    pip: &Pip,
    jobs: usize,
) -> Vec<usize> {
    let packages: BTreeSet<&str> = wanting
        .iter()
        .filter_map(|&i| match &lost[i].artifact.source {
            Source::Debian { package, .. } => Some(package.as_str()),
            Source::Pypi { .. } | Source::Archive { .. } => None,
        })
        .collect();
    let index = apt.and_then(|apt| {
        apt.update()?;
        Ok((apt.index_of(|name| packages.contains(name))?, apt))
    });
    let (index, apt) = match index {
        Ok(read) => read,
        Err(error) => {
            let reason = apt_reason(&error);
            eprintln!("fetch: cannot read {from} ({reason}); not looked at");
            for &i in wanting {
                lost[i].tried.push(format!("{from} (unreadable: {reason})"));
            }
            return Vec::new();
        }
    };
    let (carried, absent): (Vec<usize>, Vec<usize>) = wanting
        .iter()
        .partition(|&&i| pins::listed(&index, lost[i].artifact));
    for i in absent {
        lost[i].tried.push(from.to_owned());
    }
    if carried.is_empty() {
        return Vec::new();
    }
    eprintln!(
        "fetch: {from} carries {} of the files the pinned suites dropped",
        carried.len()
    );
    // The artifact's own suite is read through this suite's apt.
    let suites: BTreeSet<&str> = carried
        .iter()
        .map(|&i| pinned_suite(lost[i].artifact))
        .collect();
    let clients = Clients {
        pip: pip.clone(),
        apt: suites
            .into_iter()
            .map(|suite| (suite.to_owned(), apt.clone()))
            .collect(),
        archives: Vec::new(),
    };
    let items: Vec<(&str, &StorePath)> = carried
        .iter()
        .map(|&i| (lost[i].name, lost[i].path))
        .collect();
    let results = session.run_all(
        &items,
        jobs,
        |(name, _)| (*name).to_owned(),
        |id, (name, path)| session.artifact(id, name, path, &clients, from),
    );
    let mut done = Vec::new();
    for (i, result) in carried.into_iter().zip(results) {
        match result {
            Ok(_) => done.push(i),
            Err(error) => lost[i].tried.push(format!("{from} ({error:#})")),
        }
    }
    done
}

/// Pinned Debian files that no source serves any more: re-pinning
/// (`cuwheel lock --refresh`) is the way on. `cuwheel fetch` exits 3 for it.
#[derive(Debug, thiserror::Error)]
pub struct Vanished {
    /// Store name, package, version, suite, what was tried.
    pub files: Vec<VanishedFile>,
    /// The project directory, for the command to run.
    pub project: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VanishedFile {
    pub name: String,
    pub package: String,
    pub version: String,
    pub suite: String,
    pub tried: Vec<String>,
}

impl VanishedFile {
    pub(super) fn of(lost: &Lost) -> VanishedFile {
        let (package, version) = match &lost.artifact.source {
            Source::Debian {
                package, version, ..
            } => (package.clone(), version.clone()),
            Source::Pypi { name, version } => (name.clone(), version.clone()),
            Source::Archive { .. } => (lost.artifact.file.clone(), String::new()),
        };
        VanishedFile {
            name: lost.name.to_owned(),
            package,
            version,
            suite: pinned_suite(lost.artifact).to_owned(),
            tried: lost.tried.clone(),
        }
    }
}

impl Vanished {
    /// The command that re-pins them.
    pub fn refresh_command(&self) -> String {
        match &self.project {
            Some(project) => format!("cuwheel lock --refresh --project {}", project.display()),
            None => "cuwheel lock --refresh".to_owned(),
        }
    }
}

impl fmt::Display for Vanished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} pinned Debian files are gone: their suite no longer carries them, and neither \
             another suite of the mirror nor Debian's snapshot archive served them (nothing \
             unverified reached the store):",
            self.files.len()
        )?;
        for file in &self.files {
            let tried = if file.tried.is_empty() {
                String::new()
            } else {
                format!("; also tried: {}", file.tried.join(", "))
            };
            writeln!(
                f,
                "  {}: {} {} of Debian {}{tried}",
                file.name, file.package, file.version, file.suite
            )?;
        }
        write!(
            f,
            "Re-pin them to the versions the mirror carries now with `{}` (it changes only these \
             pins and the toolchains that hold them; every other pin stays), or fetch them from \
             a binary cache that holds them (--substituter, --trusted-key)",
            self.refresh_command()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_suites_come_in_order() {
        let names = |suite| -> Vec<String> {
            other_suites(suite)
                .into_iter()
                .map(|(archive, s)| format!("{archive:?}:{s}"))
                .collect()
        };
        assert_eq!(
            names("trixie"),
            [
                "Main:trixie-updates",
                "Main:trixie-proposed-updates",
                "Security:trixie-security",
                "Main:trixie-backports",
                "Main:forky",
                "Main:bookworm",
            ]
        );
        assert_eq!(names("sid"), ["Main:forky"]);
        assert!(names("bullseye").ends_with(&["Main:bookworm".into(), "Main:buster".into()]));
        assert!(names("noble").is_empty());
    }

    #[test]
    fn apt_reason_is_its_first_error_line() {
        let error = anyhow::anyhow!(
            "apt-get update for Debian x failed (exit status: 100):\nIgn:1 http://h x InRelease\n\
             E: The repository 'http://h x Release' does not have a Release file.\nN: more\n\
             E: Some index files failed to download."
        );
        assert_eq!(
            apt_reason(&error),
            "E: The repository 'http://h x Release' does not have a Release file."
        );
    }
}
