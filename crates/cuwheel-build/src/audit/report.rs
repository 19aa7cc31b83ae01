//! The audit's verdict on one wheel: what was found, what fails and how to
//! fix it, as a human-readable text or JSON (serde).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::archs::ExpectedArchs;
use super::checks::CheckId;
use super::elf::X86IsaLevel;
use super::fatbin::Fatbin;
use super::load::{ReleaseVerdict, compatibility_summary, compatibility_text};
use super::loader::Resolution;
use crate::spec::PythonVersion;
use crate::wheel::terminal::terminal_safe;

/// One failed check: which member, what is wrong, what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: CheckId,
    /// The member at fault, when one is.
    pub member: Option<String>,
    pub problem: String,
    pub fix: String,
}

/// The platform tag the ELF files allow against the tags the wheel carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformVerdict {
    /// The most compatible tag the ELF files allow, e.g. `manylinux_2_28_x86_64`.
    pub allowed: String,
    /// The wheel's platform tags.
    pub tagged: Vec<String>,
    /// What keeps the files from the next more compatible tag.
    pub held_by: Vec<String>,
}

/// A DT_NEEDED entry and where it resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NeededLibrary {
    pub soname: String,
    #[serde(flatten)]
    pub resolution: Resolution,
}

/// The facts of one ELF member that the report shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfSummary {
    pub member: String,
    pub extension_module: bool,
    pub soname: Option<String>,
    pub needed: Vec<NeededLibrary>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub x86_isa_needed: Option<X86IsaLevel>,
    /// The `.nv_fatbin` section's images, when it has one and it parses.
    pub fatbin: Option<Fatbin>,
}

/// The CUDA archs the audit expected, and where that came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CudaExpectation {
    /// `--cuda-archs`, or the provenance member's path.
    pub from: String,
    #[serde(flatten)]
    pub archs: ExpectedArchs,
}

/// The load check's backward-compatibility table: each torch release
/// given, whether the wheel loads with it (the claimed ones must).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TorchLoad {
    /// The releases the wheel claims, by label.
    pub claimed: Vec<String>,
    /// Every release checked, in the order given (oldest first).
    pub releases: Vec<ReleaseVerdict>,
}

impl TorchLoad {
    /// The table of `releases`, `claimed` naming the releases the wheel
    /// claims (listed in the table's order).
    pub fn new(releases: &[ReleaseVerdict], claimed: &BTreeSet<String>) -> TorchLoad {
        TorchLoad {
            claimed: releases
                .iter()
                .filter(|r| claimed.contains(&r.torch))
                .map(|r| r.torch.clone())
                .collect(),
            releases: releases.to_vec(),
        }
    }
}

/// Everything the audit says about one wheel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    /// The wheel's file name.
    pub wheel: String,
    /// True when there are no findings.
    pub passed: bool,
    /// Absent for a wheel without ELF files.
    pub platform: Option<PlatformVerdict>,
    /// The Python whose stable ABI an abi3 wheel may use.
    pub abi3_baseline: Option<PythonVersion>,
    pub cuda_archs_expected: Option<CudaExpectation>,
    /// The load check's table; absent when it was not run (no tables).
    pub torch_load: Option<TorchLoad>,
    /// The wheel's size against the limit, and its CUDA code per arch;
    /// absent when the file's size cannot be read.
    pub size: Option<super::size::SizeReport>,
    pub elf_files: Vec<ElfSummary>,
    pub findings: Vec<Finding>,
    /// What the verdict assumed, for the reader to know.
    pub notes: Vec<String>,
}

/// How many findings of one check, and reasons of the platform verdict,
/// the text report lists before it sums up the rest.
pub const LISTED_PER_CHECK: usize = 20;

impl AuditReport {
    /// The report as text for a terminal: every name and message escaped
    /// ([`terminal_safe`]), long lists cut to [`LISTED_PER_CHECK`] items
    /// and a count (the JSON report keeps them all).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let verdict = if self.passed {
            "PASSED".to_string()
        } else {
            format!(
                "FAILED ({} problem{})",
                self.findings.len(),
                if self.findings.len() == 1 { "" } else { "s" }
            )
        };
        let _ = writeln!(out, "{}: {verdict}", safe(&self.wheel));
        match &self.platform {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "  platform: ELF files allow {}; tagged {}",
                    p.allowed,
                    safe(&p.tagged.join(", "))
                );
                for reason in p.held_by.iter().take(LISTED_PER_CHECK) {
                    let _ = writeln!(out, "    not more compatible because {}", safe(reason));
                }
                if let Some(more) = p.held_by.len().checked_sub(LISTED_PER_CHECK + 1) {
                    let _ = writeln!(out, "    \u{2026} and {} more reasons", more + 1);
                }
            }
            None => {
                let _ = writeln!(out, "  platform: no ELF files");
            }
        }
        if let Some(baseline) = self.abi3_baseline {
            let _ = writeln!(out, "  abi3: stable ABI of Python {baseline}");
        }
        if let Some(expected) = &self.cuda_archs_expected {
            let _ = writeln!(
                out,
                "  CUDA archs expected ({}): {}",
                safe(&expected.from),
                expected.archs.declared.join(", ")
            );
        }
        if let Some(size) = &self.size {
            out += &size.render();
        }
        if let Some(load) = &self.torch_load {
            let _ = writeln!(
                out,
                "  load (claims torch {}): {}",
                load.claimed.join(", "),
                compatibility_summary(&load.releases)
            );
            for line in compatibility_text(&load.releases).lines() {
                let _ = writeln!(out, "  {}", safe(line));
            }
        }
        for elf in self.elf_files.iter().filter(|e| e.fatbin.is_some()) {
            let fatbin = elf.fatbin.as_ref().expect("filtered");
            let images = fatbin.image_names();
            let compressed = fatbin.images.iter().filter(|i| i.compressed).count();
            let _ = writeln!(
                out,
                "  fat binary {}: {} ({} of {} images compressed)",
                safe(&elf.member),
                images.join(" "),
                compressed,
                fatbin.images.len()
            );
        }
        let mut number = 0;
        for group in self.findings.chunk_by(|a, b| a.check == b.check) {
            for finding in group.iter().take(LISTED_PER_CHECK) {
                number += 1;
                let _ = write!(out, "  {number}. [{}] ", finding.check.label);
                if let Some(member) = &finding.member {
                    let _ = write!(out, "{}: ", safe(member));
                }
                let _ = writeln!(out, "{}", safe(&finding.problem));
                let _ = writeln!(out, "     fix: {}", safe(&finding.fix));
            }
            if let Some(more) = group.len().checked_sub(LISTED_PER_CHECK + 1) {
                let label = group[0].check.label;
                let _ = writeln!(
                    out,
                    "  \u{2026} and {} more [{label}] findings like these (`--json` lists all {})",
                    more + 1,
                    group.len()
                );
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {}", safe(note));
        }
        out
    }
}

fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    terminal_safe(text)
}
