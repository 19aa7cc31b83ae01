//! The manylinux policies as data, per architecture (x86_64, aarch64):
//! each policy's name, aliases, priority, allowed symbol versions, library
//! whitelist and blacklisted symbols, and which policy judges a platform tag.
//!
//! In: `data/manylinux-policy.json`, auditwheel's policy file reduced to
//! the architectures cuwheel builds (its `"source"` key names the version;
//! `scripts/regenerate-manylinux-policy.py` writes it). Out: [`policies`]
//! of an [`Arch`], and the lookups the wheel's platform tag, the config's
//! `libraries`, the lock's torch platform and the audit's rule
//! (`audit/manylinux.rs`) share. Pure data: how ELF files are judged against
//! a policy is the audit's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;

use crate::arch::Arch;

/// One policy for one architecture: `manylinux_2_28` on aarch64 and what it
/// allows.
#[derive(Debug, PartialEq, Eq)]
pub struct ManylinuxPolicy {
    /// Without the architecture: `manylinux_2_28`, or `linux`.
    pub name: String,
    /// Legacy names: `manylinux2014`.
    pub aliases: Vec<String>,
    /// Higher is more compatible; `linux` is 0.
    pub priority: u32,
    /// The architecture whose symbol versions these are.
    pub arch: Arch,
    /// Version prefix (`GLIBC`) to the versions allowed under it (`2.28`).
    pub symbol_versions: BTreeMap<String, BTreeSet<String>>,
    pub lib_whitelist: BTreeSet<String>,
    /// Soname to symbols that must not be imported from it.
    pub blacklist: BTreeMap<String, BTreeSet<String>>,
}

impl ManylinuxPolicy {
    /// The platform tag: `manylinux_2_28_x86_64`.
    pub fn tag(&self) -> String {
        format!("{}_{}", self.name, self.arch)
    }

    pub fn is_linux(&self) -> bool {
        self.priority == 0
    }

    pub fn allows_version(&self, version: &str) -> bool {
        let prefix = version.split('_').next().unwrap_or(version);
        match self.symbol_versions.get(prefix) {
            None => true,
            Some(allowed) => version
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|v| allowed.contains(v)),
        }
    }
}

/// A policy as the data file holds it: symbol versions per architecture.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyData {
    name: String,
    aliases: Vec<String>,
    priority: u32,
    symbol_versions: BTreeMap<Arch, BTreeMap<String, BTreeSet<String>>>,
    lib_whitelist: BTreeSet<String>,
    blacklist: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    source: String,
    policies: Vec<PolicyData>,
}

/// One architecture's policies, least compatible (`linux`) first.
#[derive(Debug)]
pub struct ManylinuxPolicies {
    /// Where the data comes from.
    pub source: String,
    pub arch: Arch,
    pub policies: Vec<ManylinuxPolicy>,
}

/// The policies of every architecture, in [`Arch::ALL`]'s order.
static POLICIES: LazyLock<Vec<ManylinuxPolicies>> = LazyLock::new(|| {
    let file: PolicyFile = serde_json::from_str(include_str!("data/manylinux-policy.json")).expect(
        "crates/cuwheel-wheel/src/data/manylinux-policy.json is valid (checked by a unit test)",
    );
    Arch::ALL
        .into_iter()
        .map(|arch| {
            let mut policies: Vec<ManylinuxPolicy> = file
                .policies
                .iter()
                // `linux` holds every architecture; a manylinux policy
                // without symbol versions for one does not exist for it
                // (manylinux_2_5 and _2_12 have none for aarch64).
                .filter_map(|p| {
                    let versions = match p.symbol_versions.get(&arch) {
                        Some(versions) => versions.clone(),
                        None if p.priority == 0 => BTreeMap::new(),
                        None => return None,
                    };
                    Some(ManylinuxPolicy {
                        name: p.name.clone(),
                        aliases: p.aliases.clone(),
                        priority: p.priority,
                        arch,
                        symbol_versions: versions,
                        lib_whitelist: p.lib_whitelist.clone(),
                        blacklist: p.blacklist.clone(),
                    })
                })
                .collect();
            policies.sort_by_key(|p| p.priority);
            ManylinuxPolicies {
                source: file.source.clone(),
                arch,
                policies,
            }
        })
        .collect()
});

/// The policies shipped with cuwheel for `arch`.
pub fn policies(arch: Arch) -> &'static ManylinuxPolicies {
    POLICIES
        .iter()
        .find(|p| p.arch == arch)
        .expect("POLICIES holds every architecture of Arch::ALL")
}

/// The policy that judges the platform tag `tag`, of the architecture the
/// tag ends in.
pub fn for_platform_tag(tag: &str) -> TagPolicy {
    Arch::of_platform_tag(tag).map_or(TagPolicy::NotJudged, |arch| {
        policies(arch).for_platform_tag(tag)
    })
}

/// How a wheel's platform tag maps onto the policies.
#[derive(Debug, PartialEq, Eq)]
pub enum TagPolicy {
    /// The tag names a policy (or its alias) in the data.
    Known(&'static ManylinuxPolicy),
    /// A valid `manylinux_2_N` tag without a policy of its own: judged by
    /// the newest known policy not newer than it, which is stricter.
    Nearest(&'static ManylinuxPolicy),
    /// Another architecture or libc: these policies cannot judge it.
    NotJudged,
}

impl ManylinuxPolicies {
    pub fn linux(&'static self) -> &'static ManylinuxPolicy {
        &self.policies[0]
    }

    pub fn by_name(&'static self, name: &str) -> Option<&'static ManylinuxPolicy> {
        self.policies.iter().find(|p| p.name == name)
    }

    /// The policy that judges the platform tag `tag` (`manylinux2014_x86_64`)
    /// among this architecture's.
    pub fn for_platform_tag(&'static self, tag: &str) -> TagPolicy {
        let Some(name) = self.arch.strip_from_tag(tag) else {
            return TagPolicy::NotJudged;
        };
        if let Some(policy) = self
            .policies
            .iter()
            .find(|p| p.name == name || p.aliases.iter().any(|a| a == name))
        {
            return TagPolicy::Known(policy);
        }
        let Some(glibc) = name.strip_prefix("manylinux_").and_then(glibc_of) else {
            return TagPolicy::NotJudged;
        };
        self.policies
            .iter()
            .filter(|p| p.name.strip_prefix("manylinux_").and_then(glibc_of) <= Some(glibc))
            .max_by_key(|p| p.name.strip_prefix("manylinux_").and_then(glibc_of))
            .filter(|p| !p.is_linux())
            .map_or(TagPolicy::NotJudged, TagPolicy::Nearest)
    }
}

/// `2_28` → `(2, 28)`.
pub fn glibc_of(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.split_once('_')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The policy just more compatible than `policy`, if any.
pub fn next_more_compatible(policy: &ManylinuxPolicy) -> Option<&'static ManylinuxPolicy> {
    policies(policy.arch)
        .policies
        .iter()
        .find(|p| p.priority > policy.priority)
}

/// True when some policy's whitelist holds `soname`, or it is the dynamic
/// loader: a library the user's system may provide.
pub fn is_allowed_system_library(soname: &str) -> bool {
    is_dynamic_loader(soname) || whitelisted_sonames().any(|s| s == soname)
}

/// Every soname some policy of some architecture whitelists (repeats
/// included).
pub fn whitelisted_sonames() -> impl Iterator<Item = &'static str> {
    POLICIES
        .iter()
        .flat_map(|all| &all.policies)
        .flat_map(|p| p.lib_whitelist.iter().map(String::as_str))
}

/// auditwheel leaves the dynamic loader out of every check.
pub fn is_dynamic_loader(file: &str) -> bool {
    file.starts_with("ld-linux") || file == "ld64.so.1" || file == "ld64.so.2"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_loads_sorted_with_its_source() {
        let all = policies(Arch::X86_64);
        assert!(all.source.contains("auditwheel"));
        assert_eq!(all.linux().name, "linux");
        assert_eq!(all.policies.last().unwrap().name, "manylinux_2_5");
        assert!(all.by_name("manylinux_2_28").is_some());
        assert!(all.by_name("manylinux_2_31").is_some());
        // aarch64 starts at manylinux2014: glibc 2.17 was its first.
        let arm = policies(Arch::Aarch64);
        assert_eq!(arm.linux().name, "linux");
        assert_eq!(arm.policies.last().unwrap().name, "manylinux_2_17");
        assert!(arm.by_name("manylinux_2_12").is_none());
        assert_eq!(arm.policies.len() + 2, all.policies.len());
    }

    #[test]
    fn each_architecture_has_its_own_symbol_versions() {
        let glibc = |arch, name| {
            policies(arch).by_name(name).unwrap().symbol_versions["GLIBC"]
                .iter()
                .cloned()
                .collect::<BTreeSet<String>>()
        };
        // x86_64's glibc symbols go back to 2.2.5; aarch64's begin at 2.17.
        assert!(glibc(Arch::X86_64, "manylinux_2_28").contains("2.2.5"));
        assert!(!glibc(Arch::Aarch64, "manylinux_2_28").contains("2.2.5"));
        assert!(glibc(Arch::Aarch64, "manylinux_2_28").contains("2.17"));
        assert!(glibc(Arch::Aarch64, "manylinux_2_28").contains("2.28"));
        assert!(!glibc(Arch::Aarch64, "manylinux_2_28").contains("2.29"));
        let arm = policies(Arch::Aarch64).by_name("manylinux_2_28").unwrap();
        assert_eq!(arm.tag(), "manylinux_2_28_aarch64");
        assert!(arm.allows_version("GLIBC_2.17"));
        assert!(!arm.allows_version("GLIBC_2.32"));
    }

    #[test]
    fn platform_tags_map_to_policies() {
        let known = |tag| match for_platform_tag(tag) {
            TagPolicy::Known(p) => p.tag(),
            other => panic!("{tag}: {other:?}"),
        };
        assert_eq!(known("manylinux2014_x86_64"), "manylinux_2_17_x86_64");
        assert_eq!(known("manylinux1_x86_64"), "manylinux_2_5_x86_64");
        assert_eq!(known("manylinux_2_28_x86_64"), "manylinux_2_28_x86_64");
        assert_eq!(known("linux_x86_64"), "linux_x86_64");
        assert_eq!(known("manylinux_2_28_aarch64"), "manylinux_2_28_aarch64");
        assert_eq!(known("manylinux2014_aarch64"), "manylinux_2_17_aarch64");
        assert_eq!(known("linux_aarch64"), "linux_aarch64");
        let nearest = |tag| match for_platform_tag(tag) {
            TagPolicy::Nearest(p) => p.tag(),
            other => panic!("{tag}: {other:?}"),
        };
        assert_eq!(nearest("manylinux_2_30_x86_64"), "manylinux_2_28_x86_64");
        assert_eq!(nearest("manylinux_2_99_x86_64"), "manylinux_2_41_x86_64");
        assert_eq!(nearest("manylinux_2_32_aarch64"), "manylinux_2_31_aarch64");
        // One architecture's policies do not judge another's tags.
        assert_eq!(
            policies(Arch::X86_64).for_platform_tag("manylinux_2_28_aarch64"),
            TagPolicy::NotJudged
        );
        for tag in [
            "manylinux1_aarch64",
            "manylinux_2_12_aarch64",
            "manylinux_2_17_ppc64le",
            "musllinux_1_2_x86_64",
            "manylinux_2_3_x86_64",
            "any",
        ] {
            assert_eq!(for_platform_tag(tag), TagPolicy::NotJudged, "{tag}");
        }
    }
}
