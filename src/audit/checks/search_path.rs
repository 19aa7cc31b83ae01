//! `search-path`: no RPATH/RUNPATH entry may leave the wheel
//! ([`crate::audit::loader::expand`]).

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::loader::{self, SearchDir};

pub struct SearchPath;

impl AuditCheck for SearchPath {
    fn id(&self) -> CheckId {
        CheckId {
            id: "search-path",
            label: "RPATH/RUNPATH",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let dirs = loader::wheel_dirs(ctx.member_names.iter().map(String::as_str));
        for elf in &ctx.elfs {
            for (tag, entries) in [("RPATH", &elf.facts.rpath), ("RUNPATH", &elf.facts.runpath)] {
                for entry in entries {
                    if let SearchDir::Outside(why) = loader::expand(entry, elf.name, &dirs) {
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
        }
    }
}
