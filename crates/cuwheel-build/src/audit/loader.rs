//! What the dynamic loader would find for each ELF file of an unpacked
//! wheel: where its RPATH/RUNPATH entries point, and where each DT_NEEDED
//! entry resolves. Nothing is unpacked and nothing is run; paths are member
//! paths relative to the wheel's root (the site-packages directory).
//!
//! In: the member paths, the ELF members with their facts, the sonames
//! provided at run time. Out: a [`SearchDir`] per RPATH/RUNPATH entry and a
//! [`Resolution`] per DT_NEEDED entry.
//!
//! The lookup follows glibc's order where it matters inside a wheel: an
//! object's DT_RUNPATH if it has one; otherwise its DT_RPATH and the
//! DT_RPATHs of the objects that loaded it (a RUNPATH stops that
//! inheritance). `$ORIGIN` is the directory of the object itself.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::elf::ElfFacts;
use super::siblings::Siblings;
pub use crate::wheel::runtime_provided::runtime_provided;

/// Where one RPATH/RUNPATH entry points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "where", content = "detail", rename_all = "kebab-case")]
pub enum SearchDir {
    /// A directory of the wheel, relative to its root (`""` is the root).
    Inside(String),
    /// A path the wheel does not control; the text says why.
    Outside(String),
}

/// The directory one RPATH/RUNPATH `entry` of the member at `member` (a
/// path relative to the wheel's root) names, relative to the wheel's root;
/// or why it is not relative to the wheel at all.
pub fn origin_dir(entry: &str, member: &str) -> Result<String, String> {
    let rest = entry
        .strip_prefix("$ORIGIN")
        .or_else(|| entry.strip_prefix("${ORIGIN}"));
    let Some(rest) = rest.filter(|r| r.is_empty() || r.starts_with('/')) else {
        return Err(if entry.starts_with('/') {
            "an absolute path on the build machine".to_string()
        } else {
            "not relative to $ORIGIN, so it depends on the machine or working directory".to_string()
        });
    };
    let mut parts: Vec<&str> = member.split('/').collect();
    parts.pop(); // the file itself: $ORIGIN is its directory
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("climbs above the wheel's root".to_string());
                }
            }
            name => parts.push(name),
        }
    }
    Ok(parts.join("/"))
}

/// Expands one RPATH/RUNPATH `entry` of the member at `member` (a path
/// relative to the wheel's root) against the directories the wheel holds.
pub fn expand(entry: &str, member: &str, wheel_dirs: &WheelDirs<'_>) -> SearchDir {
    let dir = match origin_dir(entry, member) {
        Ok(dir) => dir,
        Err(why) => return SearchDir::Outside(why),
    };
    if wheel_dirs.contains(&dir) {
        SearchDir::Inside(dir)
    } else {
        SearchDir::Outside(format!(
            "resolves to {}/, a directory this wheel does not contain",
            if dir.is_empty() { "." } else { &dir }
        ))
    }
}

/// The directories of a wheel: the root and every ancestor of a member.
/// Answered from the sorted member names themselves (a directory `d` holds
/// something exactly when some member starts with `d/`), so it takes no
/// memory beyond the names, however deep their paths.
pub struct WheelDirs<'a> {
    members: &'a BTreeSet<String>,
}

impl<'a> WheelDirs<'a> {
    pub fn new(members: &'a BTreeSet<String>) -> WheelDirs<'a> {
        WheelDirs { members }
    }

    /// Whether `dir` (`""` for the root) is a directory of the wheel.
    pub fn contains(&self, dir: &str) -> bool {
        if dir.is_empty() {
            return true;
        }
        let prefix = format!("{dir}/");
        self.members
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .is_some_and(|first| first.starts_with(&prefix))
    }
}

/// Where one DT_NEEDED entry resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "resolves", content = "detail", rename_all = "kebab-case")]
pub enum Resolution {
    /// To this member, through the object's search path.
    InWheel(String),
    /// To nothing in the wheel, but the soname is declared as provided at run time.
    RuntimeProvided,
    /// The wheel holds a file of that name (this member), but the object's
    /// search path does not reach it.
    NotOnSearchPath(String),
    /// To nothing in the wheel, but a sibling wheel that the wheel's own
    /// `Requires-Dist` names installs it ([`super::siblings`]): that requirement.
    SiblingWheel(String),
    /// To something outside the wheel: the system, or nothing.
    External,
}

/// One ELF member as the loader sees it.
pub struct LoadedObject<'a> {
    pub member: &'a str,
    pub facts: &'a ElfFacts,
}

/// The resolution of every DT_NEEDED entry of every object, keyed by
/// `(member, soname)`.
pub fn resolve_needed(
    objects: &[LoadedObject<'_>],
    members: &BTreeSet<String>,
    runtime_provided: &BTreeSet<String>,
) -> BTreeMap<(String, String), Resolution> {
    resolve_needed_with(objects, members, runtime_provided, &Siblings::default())
}

/// [`resolve_needed`], with the libraries the wheel's sibling wheels provide.
pub fn resolve_needed_with(
    objects: &[LoadedObject<'_>],
    members: &BTreeSet<String>,
    runtime_provided: &BTreeSet<String>,
    siblings: &Siblings,
) -> BTreeMap<(String, String), Resolution> {
    let dirs = WheelDirs::new(members);
    let inside = |entries: &[String], member: &str| -> Vec<String> {
        entries
            .iter()
            .filter_map(|e| match expand(e, member, &dirs) {
                SearchDir::Inside(dir) => Some(dir),
                SearchDir::Outside(_) => None,
            })
            .collect()
    };
    let own_rpath: Vec<Vec<String>> = objects
        .iter()
        .map(|o| {
            if o.facts.runpath.is_empty() {
                inside(&o.facts.rpath, o.member)
            } else {
                Vec::new()
            }
        })
        .collect();
    let runpath: Vec<Vec<String>> = objects
        .iter()
        .map(|o| inside(&o.facts.runpath, o.member))
        .collect();
    let index: BTreeMap<&str, usize> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.member, i))
        .collect();
    let find = |dirs: &[String], soname: &str| -> Option<String> {
        dirs.iter()
            .map(|d| join(d, soname))
            .find(|candidate| members.contains(candidate))
    };
    let search_path = |i: usize, inherited: &[BTreeSet<String>]| -> Vec<String> {
        if objects[i].facts.runpath.is_empty() {
            own_rpath[i].iter().chain(&inherited[i]).cloned().collect()
        } else {
            runpath[i].clone()
        }
    };

    // RPATHs inherited from loaders, grown until nothing changes (each round
    // can only add directories, so this ends).
    let mut inherited: Vec<BTreeSet<String>> = vec![BTreeSet::new(); objects.len()];
    loop {
        let mut changed = false;
        for (i, object) in objects.iter().enumerate() {
            let path = search_path(i, &inherited);
            let passed_on: BTreeSet<String> = if object.facts.runpath.is_empty() {
                own_rpath[i].iter().chain(&inherited[i]).cloned().collect()
            } else {
                BTreeSet::new()
            };
            for soname in &object.facts.needed {
                let Some(target) = find(&path, soname) else {
                    continue;
                };
                let Some(&t) = index.get(target.as_str()) else {
                    continue;
                };
                for dir in &passed_on {
                    changed |= inherited[t].insert(dir.clone());
                }
            }
        }
        if !changed {
            break;
        }
    }

    let mut by_file_name: BTreeMap<&str, &str> = BTreeMap::new();
    for member in members {
        let file_name = member.rsplit('/').next().unwrap_or(member);
        by_file_name.entry(file_name).or_insert(member);
    }
    let mut out = BTreeMap::new();
    for (i, object) in objects.iter().enumerate() {
        let path = search_path(i, &inherited);
        for soname in &object.facts.needed {
            let resolution = if let Some(target) = find(&path, soname) {
                Resolution::InWheel(target)
            } else if runtime_provided.contains(soname) {
                Resolution::RuntimeProvided
            } else if let Some(elsewhere) = by_file_name.get(soname.as_str()) {
                Resolution::NotOnSearchPath(elsewhere.to_string())
            } else if let Some(requirement) = siblings.soname_provider(soname) {
                Resolution::SiblingWheel(requirement.to_string())
            } else {
                Resolution::External
            };
            out.insert((object.member.to_string(), soname.clone()), resolution);
        }
    }
    out
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(needed: &[&str], rpath: &[&str], runpath: &[&str]) -> ElfFacts {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        ElfFacts {
            arch: crate::wheel::Arch::X86_64,
            soname: None,
            needed: strings(needed),
            rpath: strings(rpath),
            runpath: strings(runpath),
            interpreter: None,
            version_needs: vec![],
            dynamic_symbols: vec![],
            static_symbols: vec![],
            x86_isa_needed: None,
        }
    }

    #[test]
    fn runtime_provided_data_loads() {
        let provided = runtime_provided();
        assert!(provided.source.contains("cpp_extension.py"));
        let sonames = provided.sonames();
        for soname in [
            "libc10.so",
            "libtorch.so",
            "libcudart.so.13",
            "libcuda.so.1",
        ] {
            assert!(sonames.contains(soname), "{soname}");
        }
        assert_eq!(
            provided.sonames().len(),
            provided.libraries.len(),
            "no duplicates"
        );
        assert_eq!(provided.provider_of("libc10.so"), Some("torch"));
    }

    #[test]
    fn origin_entries_expand_inside_the_wheel() {
        let members: BTreeSet<String> = ["pkg/sub/_ext.so", "pkg.libs/libfoo.so.1", "pkg.libsx"]
            .map(String::from)
            .into();
        let dirs = WheelDirs::new(&members);
        assert!(dirs.contains("pkg") && dirs.contains("pkg/sub") && dirs.contains(""));
        assert!(!dirs.contains("pkg/s") && !dirs.contains("pkg.libsx") && !dirs.contains("pk"));
        let at = "pkg/sub/_ext.so";
        assert_eq!(
            expand("$ORIGIN", at, &dirs),
            SearchDir::Inside("pkg/sub".into())
        );
        assert_eq!(
            expand("${ORIGIN}/../../pkg.libs", at, &dirs),
            SearchDir::Inside("pkg.libs".into())
        );
        assert_eq!(
            expand("$ORIGIN/../..", at, &dirs),
            SearchDir::Inside(String::new())
        );
        for outside in [
            "$ORIGIN/../../..",
            "$ORIGIN/../../nvidia/cu13/lib",
            "/nix/store/abc-gcc/lib",
            "lib",
            "$ORIGINAL",
            "$LIB",
        ] {
            assert!(
                matches!(expand(outside, at, &dirs), SearchDir::Outside(_)),
                "{outside}"
            );
        }
    }

    #[test]
    fn needed_libraries_resolve_through_rpath_runpath_and_inheritance() {
        let members: BTreeSet<String> = [
            "pkg/_ext.so",
            "pkg.libs/libfoo.so.1",
            "pkg.libs/libbar.so.2",
            "pkg/other/libbaz.so",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let ext = facts(
            &["libfoo.so.1", "libc.so.6", "libtorch.so", "libbaz.so"],
            &["$ORIGIN/../pkg.libs"],
            &[],
        );
        // libfoo has no search path of its own: it inherits the extension's RPATH
        let foo = facts(&["libbar.so.2"], &[], &[]);
        let objects = [
            LoadedObject {
                member: "pkg/_ext.so",
                facts: &ext,
            },
            LoadedObject {
                member: "pkg.libs/libfoo.so.1",
                facts: &foo,
            },
        ];
        let provided = BTreeSet::from(["libtorch.so".to_string()]);
        let got = resolve_needed(&objects, &members, &provided);
        let at = |m: &str, s: &str| got[&(m.to_string(), s.to_string())].clone();
        assert_eq!(
            at("pkg/_ext.so", "libfoo.so.1"),
            Resolution::InWheel("pkg.libs/libfoo.so.1".into())
        );
        assert_eq!(at("pkg/_ext.so", "libc.so.6"), Resolution::External);
        assert_eq!(
            at("pkg/_ext.so", "libtorch.so"),
            Resolution::RuntimeProvided
        );
        assert_eq!(
            at("pkg/_ext.so", "libbaz.so"),
            Resolution::NotOnSearchPath("pkg/other/libbaz.so".into())
        );
        assert_eq!(
            at("pkg.libs/libfoo.so.1", "libbar.so.2"),
            Resolution::InWheel("pkg.libs/libbar.so.2".into())
        );

        // a RUNPATH is not inherited
        let ext = facts(&["libfoo.so.1"], &[], &["$ORIGIN/../pkg.libs"]);
        let objects = [
            LoadedObject {
                member: "pkg/_ext.so",
                facts: &ext,
            },
            LoadedObject {
                member: "pkg.libs/libfoo.so.1",
                facts: &foo,
            },
        ];
        let got = resolve_needed(&objects, &members, &BTreeSet::new());
        assert_eq!(
            got[&(
                "pkg.libs/libfoo.so.1".to_string(),
                "libbar.so.2".to_string()
            )],
            Resolution::NotOnSearchPath("pkg.libs/libbar.so.2".into())
        );
    }
}
