//! `search-path`: no RPATH/RUNPATH entry may leave the wheel
//! ([`crate::audit::loader::expand`]), except into the directory of a
//! sibling wheel that the wheel's own `Requires-Dist` installs
//! ([`crate::audit::siblings`]): that is a note naming the requirement.
//! Dead entries that can reach nothing but what the wheel or its siblings
//! install (a missing directory under the wheel's own package directory, a
//! sibling's directory aimed at from too deep a member, a directory named
//! after a sibling's component where it may install, such as torch's
//! `$ORIGIN/../../cusparselt/lib`) are notes too. An absolute path, or one
//! not relative to `$ORIGIN`, stays a finding.

use std::collections::BTreeMap;

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::loader::{self, SearchDir, WheelDirs};

pub struct SearchPath;

impl AuditCheck for SearchPath {
    fn id(&self) -> CheckId {
        CheckId {
            id: "search-path",
            label: "RPATH/RUNPATH",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let dirs = WheelDirs::new(&ctx.member_names);
        // what an entry that is no failure points at -> how many entries do
        let mut harmless: BTreeMap<Harmless<'_>, usize> = BTreeMap::new();
        for elf in &ctx.elfs {
            for (tag, entries) in [("RPATH", &elf.facts.rpath), ("RUNPATH", &elf.facts.runpath)] {
                for entry in entries {
                    let SearchDir::Outside(why) = loader::expand(entry, elf.name, &dirs) else {
                        continue;
                    };
                    if let Some(kind) = harmless_kind(ctx, &dirs, entry, elf.name) {
                        *harmless.entry(kind).or_default() += 1;
                        continue;
                    }
                    out.finding(
                        Some(elf.name),
                        format!("{tag} entry `{entry}` leaves the wheel: {why}"),
                        format!(
                            "point it at a directory inside the wheel relative to $ORIGIN \
                             (patchelf --set-rpath '$ORIGIN/...' {0}) or remove it \
                             (patchelf --remove-rpath {0})",
                            elf.name
                        ),
                    );
                }
            }
        }
        for (kind, count) in harmless {
            let entries = if count == 1 {
                "1 RPATH/RUNPATH entry points".to_string()
            } else {
                format!("{count} RPATH/RUNPATH entries point")
            };
            out.note(match kind {
                Harmless::Sibling { dir, requirement } => format!(
                    "{entries} to {dir}/, outside the wheel but installed beside it by \
                     `{requirement}`, which its Requires-Dist names"
                ),
                Harmless::AboveSibling { dir, requirement } => format!(
                    "{entries} above the wheel's root at a {dir}/ that `{requirement}` (in its \
                     Requires-Dist) installs one level lower; nothing is installed there, so \
                     the loader finds nothing (dead entries)"
                ),
                Harmless::MaySibling { dir, requirement } => format!(
                    "{entries} to {dir}/, outside the wheel, where `{requirement}` (in its \
                     Requires-Dist) may install its libraries; the wheel does not rely on it \
                     (dead entries unless it does)"
                ),
                Harmless::OwnDirectory { dir } => format!(
                    "{entries} to {dir}/, inside the wheel's own package directory but absent \
                     from it, so the loader finds nothing (dead entries)"
                ),
            });
        }
    }
}

/// An RPATH/RUNPATH entry outside the wheel that is no failure, by where it points.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Harmless<'a> {
    /// The directory of a sibling wheel the wheel requires.
    Sibling { dir: String, requirement: &'a str },
    /// A sibling wheel's directory, reached from too deep a member: it
    /// climbs above site-packages, where no wheel installs anything.
    AboveSibling { dir: String, requirement: &'a str },
    /// A directory named after a component of a sibling wheel the wheel
    /// requires, where that wheel may install ([`crate::audit::siblings::Siblings::dir_may_provider`]).
    MaySibling { dir: String, requirement: &'a str },
    /// A missing directory under one of the wheel's own top-level
    /// directories, which no other wheel installs into.
    OwnDirectory { dir: String },
}

fn harmless_kind<'a>(
    ctx: &'a AuditContext<'_>,
    dirs: &WheelDirs<'_>,
    entry: &str,
    member: &str,
) -> Option<Harmless<'a>> {
    match loader::origin_dir(entry, member) {
        Ok(dir) => {
            if let Some(requirement) = ctx.siblings.dir_provider(&dir) {
                return Some(Harmless::Sibling { dir, requirement });
            }
            if let Some(requirement) = ctx.siblings.dir_may_provider(&dir) {
                return Some(Harmless::MaySibling { dir, requirement });
            }
            let top = dir.split('/').next().unwrap_or_default();
            (!top.is_empty() && top != dir && dirs.contains(top) && !is_shared_top(top))
                .then_some(Harmless::OwnDirectory { dir })
        }
        Err(_) => {
            // `$ORIGIN/../../nvidia/cudnn/lib` from `torch/_C.so`: the
            // path after the climb is a sibling's directory
            let rest = entry
                .strip_prefix("$ORIGIN")
                .or_else(|| entry.strip_prefix("${ORIGIN}"))?;
            let parts: Vec<&str> = rest
                .split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .skip_while(|p| *p == "..")
                .collect();
            if parts.contains(&"..") {
                return None;
            }
            let dir = parts.join("/");
            let requirement = ctx
                .siblings
                .dir_provider(&dir)
                .or_else(|| ctx.siblings.dir_may_provider(&dir))?;
            Some(Harmless::AboveSibling { dir, requirement })
        }
    }
}

/// Top-level directories several wheels install into: a missing directory
/// under them may be another wheel's.
fn is_shared_top(top: &str) -> bool {
    top == "nvidia" || top.ends_with(".data") || top.ends_with(".dist-info")
}
