//! `elf`: every member that starts with the ELF magic or is named like a
//! shared object (`*.so`, `*.so.N`) must be a readable ELF file for the
//! wheel's architecture (x86_64 or aarch64: the machine of its ELF files,
//! [`crate::audit::context::wheel_arch`]); a garbage `.dynamic` section
//! makes it a corrupt one.

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::elf::ElfErrorKind;

pub struct ElfFiles;

impl AuditCheck for ElfFiles {
    fn id(&self) -> CheckId {
        CheckId {
            id: "elf",
            label: "ELF",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        for member in ctx.members {
            let Some(Err(error)) = &member.elf else {
                continue;
            };
            let fix = match &error.kind {
                ElfErrorKind::NotElf(_) => {
                    "a file named like a shared library must be one: remove it from the wheel or \
                     rename it"
                }
                ElfErrorKind::WrongClass
                | ElfErrorKind::WrongEndian
                | ElfErrorKind::WrongMachine(_) => &format!(
                    "cuwheel audits x86_64 and aarch64 Linux wheels: rebuild the file for {} or \
                     remove it",
                    ctx.arch
                ),
                ElfErrorKind::Malformed(_) => "the file is damaged: rebuild it and the wheel",
            };
            out.finding(
                Some(&member.name),
                format!("is {}", error.kind),
                fix.to_string(),
            );
        }
        for elf in ctx.elfs.iter().filter(|e| e.facts.arch != ctx.arch) {
            out.finding(
                Some(elf.name),
                format!(
                    "is an {} ELF file in a wheel for {}",
                    elf.facts.arch, ctx.arch
                ),
                format!(
                    "rebuild it for {} (or build the wheel for {}, with that platform tag)",
                    ctx.arch, elf.facts.arch
                ),
            );
        }
    }
}
