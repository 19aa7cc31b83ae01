//! The manylinux policies (x86_64) as data: each policy's name, aliases,
//! priority, allowed symbol versions, library whitelist and blacklisted
//! symbols, and which policy judges a platform tag.
//!
//! In: `data/manylinux-policy.json`, the x86_64 part of auditwheel's policy
//! file (its `"source"` key names the version). Out: [`policies`], and the
//! lookups the wheel's platform tag, the config's `libraries`, the lock's
//! torch platform and the audit's rule (`audit/manylinux.rs`) share.
//! Pure data: how ELF files are judged against a policy is the audit's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;

/// The architecture every policy here is for, as platform tags spell it.
pub const ARCH: &str = "x86_64";

/// One policy: `manylinux_2_28` and what it allows.
#[derive(Debug, PartialEq, Eq, Deserialize)]
pub struct ManylinuxPolicy {
    /// Without the architecture: `manylinux_2_28`, or `linux`.
    pub name: String,
    /// Legacy names: `manylinux2014`.
    pub aliases: Vec<String>,
    /// Higher is more compatible; `linux` is 0.
    pub priority: u32,
    /// Version prefix (`GLIBC`) to the versions allowed under it (`2.28`).
    pub symbol_versions: BTreeMap<String, BTreeSet<String>>,
    pub lib_whitelist: BTreeSet<String>,
    /// Soname to symbols that must not be imported from it.
    pub blacklist: BTreeMap<String, BTreeSet<String>>,
}

impl ManylinuxPolicy {
    /// The platform tag: `manylinux_2_28_x86_64`.
    pub fn tag(&self) -> String {
        format!("{}_{ARCH}", self.name)
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

/// All policies, least compatible (`linux`) first.
#[derive(Debug, Deserialize)]
pub struct ManylinuxPolicies {
    /// Where the data comes from.
    pub source: String,
    pub policies: Vec<ManylinuxPolicy>,
}

static POLICIES: LazyLock<ManylinuxPolicies> = LazyLock::new(|| {
    let mut data: ManylinuxPolicies =
        serde_json::from_str(include_str!("data/manylinux-policy.json")).expect(
            "crates/cuwheel-wheel/src/data/manylinux-policy.json is valid (checked by a unit test)",
        );
    data.policies.sort_by_key(|p| p.priority);
    data
});

/// The policies shipped with cuwheel.
pub fn policies() -> &'static ManylinuxPolicies {
    &POLICIES
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

    /// The policy that judges the platform tag `tag` (`manylinux2014_x86_64`).
    pub fn for_platform_tag(&'static self, tag: &str) -> TagPolicy {
        let Some(name) = tag.strip_suffix(ARCH).and_then(|t| t.strip_suffix('_')) else {
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
    policies()
        .policies
        .iter()
        .find(|p| p.priority > policy.priority)
}

/// True when some policy's whitelist holds `soname`, or it is the dynamic
/// loader: a library the user's system may provide.
pub fn is_allowed_system_library(soname: &str) -> bool {
    is_dynamic_loader(soname)
        || policies()
            .policies
            .iter()
            .any(|p| p.lib_whitelist.contains(soname))
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
        let all = policies();
        assert!(all.source.contains("auditwheel"));
        assert_eq!(all.linux().name, "linux");
        assert_eq!(all.policies.last().unwrap().name, "manylinux_2_5");
        assert!(all.by_name("manylinux_2_28").is_some());
        assert!(all.by_name("manylinux_2_31").is_some());
    }

    #[test]
    fn platform_tags_map_to_policies() {
        let all = policies();
        let known = |tag| match all.for_platform_tag(tag) {
            TagPolicy::Known(p) => p.name.clone(),
            other => panic!("{tag}: {other:?}"),
        };
        assert_eq!(known("manylinux2014_x86_64"), "manylinux_2_17");
        assert_eq!(known("manylinux1_x86_64"), "manylinux_2_5");
        assert_eq!(known("manylinux_2_28_x86_64"), "manylinux_2_28");
        assert_eq!(known("linux_x86_64"), "linux");
        let nearest = |tag| match all.for_platform_tag(tag) {
            TagPolicy::Nearest(p) => p.name.clone(),
            other => panic!("{tag}: {other:?}"),
        };
        assert_eq!(nearest("manylinux_2_30_x86_64"), "manylinux_2_28");
        assert_eq!(nearest("manylinux_2_99_x86_64"), "manylinux_2_41");
        assert_eq!(
            all.for_platform_tag("manylinux_2_28_aarch64"),
            TagPolicy::NotJudged
        );
        assert_eq!(
            all.for_platform_tag("musllinux_1_2_x86_64"),
            TagPolicy::NotJudged
        );
        assert_eq!(
            all.for_platform_tag("manylinux_2_3_x86_64"),
            TagPolicy::NotJudged
        );
        assert_eq!(all.for_platform_tag("any"), TagPolicy::NotJudged);
    }
}
