//! `platform`: no platform tag may promise more than auditwheel's rule
//! allows for the ELF files ([`crate::audit::manylinux`]); and the verdict
//! the report shows (the best tag, and what holds the files below the next).

use std::collections::{BTreeMap, BTreeSet};

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::manylinux::violations;
use crate::audit::report::PlatformVerdict;
use crate::wheel::manylinux::{self, ManylinuxPolicy, TagPolicy};

/// How many findings one too-high platform tag lists before summing up the rest.
const FINDINGS_LISTED: usize = 10;

pub struct PlatformTag;

impl AuditCheck for PlatformTag {
    fn id(&self) -> CheckId {
        CheckId {
            id: "platform",
            label: "platform tag",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        if ctx.elfs.is_empty() {
            return;
        }
        let inputs = ctx.policy_inputs();
        let best = ctx.best_policy();
        let mut too_high: BTreeMap<&str, (&ManylinuxPolicy, Vec<&str>)> = BTreeMap::new();
        // A tag of the ELF files' architecture beside one of another: the
        // other tag goes; with none of theirs, the files or the tag are wrong.
        let tags_name_elf_arch = ctx.platforms.iter().any(|platform| {
            matches!(
                manylinux::for_platform_tag(platform),
                TagPolicy::Known(policy) | TagPolicy::Nearest(policy) if policy.arch == ctx.arch
            )
        });
        for platform in &ctx.platforms {
            match manylinux::for_platform_tag(platform) {
                TagPolicy::Known(policy) | TagPolicy::Nearest(policy)
                    if policy.arch != ctx.arch =>
                {
                    out.finding(
                        None,
                        format!(
                            "the wheel is tagged `{platform}`, for {}, but its ELF files are for \
                             {}",
                            policy.arch, ctx.arch
                        ),
                        if tags_name_elf_arch {
                            format!(
                                "a wheel is for one architecture: tag it {} only, and build a \
                                 separate wheel for {}",
                                best.tag(),
                                policy.arch
                            )
                        } else {
                            format!(
                                "rebuild its ELF files for {} (or, if the wheel is meant for {}, \
                                 tag it {})",
                                policy.arch,
                                ctx.arch,
                                best.tag()
                            )
                        },
                    );
                }
                TagPolicy::Known(policy) | TagPolicy::Nearest(policy) => {
                    if policy.priority > best.priority {
                        too_high
                            .entry(policy.name.as_str())
                            .or_insert((policy, Vec::new()))
                            .1
                            .push(platform);
                    }
                }
                TagPolicy::NotJudged => out.finding(
                    None,
                    format!(
                        "the wheel holds ELF files but is tagged `{platform}`, which cuwheel's \
                         policies (manylinux and linux, x86_64 and aarch64) cannot vouch for"
                    ),
                    if platform == "any" {
                        format!(
                            "a wheel with compiled code needs a platform tag: build it as a \
                             platform wheel (manylinux_2_X_{})",
                            ctx.arch
                        )
                    } else {
                        "audit this wheel with a tool for its platform".to_string()
                    },
                ),
            }
        }
        for (policy, tags) in too_high.values() {
            let tags = tags.join(", ");
            let violations = violations(&inputs, policy);
            let more = violations.len().saturating_sub(FINDINGS_LISTED);
            for violation in violations.into_iter().take(FINDINGS_LISTED) {
                out.finding(
                    Some(&violation.member),
                    format!(
                        "tagged {tags}, but it {}; the files allow at most {}",
                        violation.constraint,
                        best.tag()
                    ),
                    format!(
                        "tag the wheel {} or rebuild against an older glibc/libstdc++ (an older \
                         sysroot or manylinux image) so it fits {}",
                        best.tag(),
                        policy.tag()
                    ),
                );
            }
            if more > 0 {
                out.finding(
                    None,
                    format!("tagged {tags}: {more} more constraints like the above"),
                    format!("tag the wheel {}", best.tag()),
                );
            }
        }
    }
}

/// The most compatible tag and what holds the files there; `None` for a
/// wheel without ELF files.
pub fn verdict(ctx: &AuditContext<'_>) -> Option<PlatformVerdict> {
    if ctx.elfs.is_empty() {
        return None;
    }
    let best = ctx.best_policy();
    let held_by: BTreeSet<String> = manylinux::next_more_compatible(best)
        .map(|next| {
            violations(&ctx.policy_inputs(), next)
                .iter()
                .map(|v| format!("{}: {}", v.member, v.constraint))
                .collect()
        })
        .unwrap_or_default();
    Some(PlatformVerdict {
        allowed: best.tag(),
        tagged: ctx.platforms.iter().cloned().collect(),
        held_by: held_by.into_iter().collect(),
    })
}
