//! The audit's checks: each one module that reads the [`AuditContext`] and
//! returns its findings in its own words; [`CHECKS`] is the list the audit
//! runs, in report order.
//!
//! A new rule is a new module implementing [`AuditCheck`] plus one line in
//! [`CHECKS`]. A check that needs inputs beyond the wheel (the load check's
//! symbol tables of the libraries it loads against) reads them from
//! [`AuditContext::options`]`.extra` ([`super::ExtraInputs`]), where the
//! caller puts them.

mod cuda_archs;
mod elf_files;
mod images;
mod leak;
mod libraries;
mod load;
mod platform;
mod pypi;
mod sbom;
mod search_path;
mod stable_abi;
mod tags;
mod wheel_format;

use serde::Serialize;

pub use platform::verdict as platform_verdict;
pub use pypi::PypiRules;
pub use sbom::SBOM_FILE;
pub use stable_abi::abi3_baseline;

use super::context::AuditContext;
use super::report::Finding;

/// Which check a finding comes from: its id in JSON (`search-path`) and its
/// label in the text report (`RPATH/RUNPATH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckId {
    pub id: &'static str,
    pub label: &'static str,
}

impl Serialize for CheckId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id)
    }
}

/// One rule of the audit.
pub trait AuditCheck: Sync {
    fn id(&self) -> CheckId;
    /// Adds this check's findings and notes to `out`.
    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput);
}

/// Every check, in the order the report lists their findings.
pub const CHECKS: &[&dyn AuditCheck] = &[
    &wheel_format::WheelFormat,
    &tags::Tags,
    &elf_files::ElfFiles,
    &platform::PlatformTag,
    &libraries::Libraries,
    &search_path::SearchPath,
    &images::FatbinImages,
    &leak::BuildPaths,
    &stable_abi::StableAbi,
    &cuda_archs::CudaArchs,
    &sbom::Sbom,
    &pypi::Pypi,
    &load::Load,
];

/// What one check found.
#[derive(Debug)]
pub struct CheckOutput {
    check: CheckId,
    pub findings: Vec<Finding>,
    /// What the verdict assumed, for the reader to know.
    pub notes: Vec<String>,
}

impl CheckOutput {
    pub fn new(check: CheckId) -> CheckOutput {
        CheckOutput {
            check,
            findings: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A finding about `member` (or the whole wheel): what is wrong, how to fix it.
    pub fn finding(&mut self, member: Option<&str>, problem: String, fix: String) {
        self.findings.push(Finding {
            check: self.check,
            member: member.map(str::to_string),
            problem,
            fix,
        });
    }

    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}
