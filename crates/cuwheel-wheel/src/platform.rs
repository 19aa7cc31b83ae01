//! The platform tag of a wheel cuwheel builds: the most compatible
//! manylinux tag its linked module proves, never more compatible than the
//! torch wheel it needs, and never less than its baseline promises.
//!
//! In: a [`PlatformRule`] (the plan writes it into the wheel's recipe: the
//! baseline's tag and torch's) and the policy the audit's rule allows for
//! the members (the audit's `allowed_policy`). Out: the platform tag
//! (`manylinux_2_28_x86_64`), or why the module cannot carry the baseline's
//! tag. Before the build, the plan can only predict the tag
//! ([`PlatformRule::predicted`]): the symbol versions decide.
//!
//! Why the torch cap: an extension is installed next to the torch release
//! it was built for, which itself needs its own tag's glibc (torch 2.7 and
//! later: `manylinux_2_28`, glibc 2.28); a more compatible tag would promise
//! installs that cannot import torch.

use serde::{Deserialize, Serialize};

use crate::manylinux::{self, ManylinuxPolicy, TagPolicy};

/// The bounds of a wheel's platform tag, as platform tags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PlatformRule {
    /// The baseline's tag (`manylinux_2_31_x86_64`): the module's glibc
    /// sysroot guarantees at least this.
    pub least_compatible: String,
    /// The torch wheel's tag (`manylinux_2_28_x86_64`).
    pub most_compatible: String,
}

/// The policy a platform tag names (or the nearest stricter one).
fn policy_of(tag: &str) -> Result<&'static ManylinuxPolicy, String> {
    match manylinux::for_platform_tag(tag) {
        TagPolicy::Known(policy) | TagPolicy::Nearest(policy) => Ok(policy),
        TagPolicy::NotJudged => Err(format!(
            "`{tag}` is not a manylinux x86_64 or aarch64 platform tag, which cuwheel's policies \
             judge"
        )),
    }
}

impl PlatformRule {
    /// The tag for members whose most compatible policy is `allowed`.
    pub fn choose(&self, allowed: &ManylinuxPolicy) -> Result<String, String> {
        let floor = policy_of(&self.least_compatible)?;
        let cap = policy_of(&self.most_compatible)?;
        if floor.arch != cap.arch || allowed.arch != cap.arch {
            return Err(format!(
                "the baseline's tag {}, torch's {} and the module's {} are not all for one \
                 architecture: build the module, its sysroot and torch for the same one",
                self.least_compatible,
                self.most_compatible,
                allowed.tag()
            ));
        }
        if allowed.priority < floor.priority {
            return Err(format!(
                "the linked module allows only {}, less compatible than the baseline's {}: \
                 something it links needs a newer glibc or libstdc++ than the baseline's sysroot \
                 (`cuwheel audit` of the wheel names the symbols)",
                allowed.tag(),
                self.least_compatible
            ));
        }
        Ok(if allowed.priority < cap.priority {
            allowed.tag()
        } else {
            cap.tag()
        })
    }

    /// The tag the build will choose if the module proves at least the
    /// torch cap, as modules built on the baseline's sysroot do: the cap.
    pub fn predicted(&self) -> String {
        self.most_compatible.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;

    fn rule(least: &str, most: &str) -> PlatformRule {
        PlatformRule {
            least_compatible: format!("{least}_x86_64"),
            most_compatible: format!("{most}_x86_64"),
        }
    }

    fn policy(name: &str) -> &'static ManylinuxPolicy {
        manylinux::policies(Arch::X86_64).by_name(name).unwrap()
    }

    #[test]
    fn torch_caps_what_the_module_proves() {
        let demo = rule("manylinux_2_31", "manylinux_2_28");
        // The bullseye sysroot's module proves manylinux_2_24 or so.
        assert_eq!(
            demo.choose(policy("manylinux_2_24")).unwrap(),
            "manylinux_2_28_x86_64"
        );
        assert_eq!(demo.predicted(), "manylinux_2_28_x86_64");
        // A module that needs glibc 2.30 gets what it proves.
        assert_eq!(
            demo.choose(policy("manylinux_2_31")).unwrap(),
            "manylinux_2_31_x86_64"
        );
        // torch 2.6's manylinux1 wheels cap nothing here.
        let old = rule("manylinux_2_31", "manylinux_2_5");
        assert_eq!(
            old.choose(policy("manylinux_2_24")).unwrap(),
            "manylinux_2_24_x86_64"
        );
    }

    #[test]
    fn a_module_below_its_baseline_is_refused() {
        let demo = rule("manylinux_2_31", "manylinux_2_28");
        let err = demo.choose(policy("manylinux_2_34")).unwrap_err();
        assert!(err.contains("less compatible than the baseline's"), "{err}");
        let linux = manylinux::policies(Arch::X86_64).linux();
        assert!(demo.choose(linux).is_err());
        let bad = rule("musllinux_1_2", "manylinux_2_28");
        assert!(bad.choose(policy("manylinux_2_28")).is_err());
    }

    #[test]
    fn an_aarch64_module_gets_an_aarch64_tag() {
        let arm = |name| manylinux::policies(Arch::Aarch64).by_name(name).unwrap();
        let grace = PlatformRule {
            least_compatible: "manylinux_2_31_aarch64".into(),
            most_compatible: "manylinux_2_28_aarch64".into(),
        };
        assert_eq!(
            grace.choose(arm("manylinux_2_17")).unwrap(),
            "manylinux_2_28_aarch64"
        );
        assert_eq!(
            grace.choose(arm("manylinux_2_31")).unwrap(),
            "manylinux_2_31_aarch64"
        );
        // An x86_64 verdict for an aarch64 rule, or a rule mixing both, is
        // a build that mixed architectures.
        let err = grace.choose(policy("manylinux_2_28")).unwrap_err();
        assert_eq!(
            err,
            "the baseline's tag manylinux_2_31_aarch64, torch's manylinux_2_28_aarch64 and the \
             module's manylinux_2_28_x86_64 are not all for one architecture: build the module, \
             its sysroot and torch for the same one"
        );
        let mixed = PlatformRule {
            least_compatible: "manylinux_2_31_x86_64".into(),
            most_compatible: "manylinux_2_28_aarch64".into(),
        };
        assert!(mixed.choose(arm("manylinux_2_28")).is_err());
    }
}
