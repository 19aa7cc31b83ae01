//! `abi3`: an `abi3` wheel uses only the stable ABI of its baseline Python
//! ([`crate::audit::abi3`]).

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::abi3;
use crate::audit::context::AuditContext;

pub struct StableAbi;

impl AuditCheck for StableAbi {
    fn id(&self) -> CheckId {
        CheckId {
            id: "abi3",
            label: "abi3",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let Some(baseline) = abi3_baseline(ctx) else {
            return;
        };
        for elf in &ctx.elfs {
            let violations = abi3::check(elf.facts, baseline);
            if violations.is_empty() {
                continue;
            }
            let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
            out.finding(
                Some(elf.name),
                format!(
                    "the wheel is tagged abi3 for Python {baseline}, but {}",
                    listed.join("; ")
                ),
                format!(
                    "compile with -DPy_LIMITED_API=0x{:02X}{:02X}0000 and avoid these symbols, \
                     raise the wheel's cpXY tag to the Python that added them, or publish \
                     per-Python (cpXY-cpXY) wheels instead of abi3",
                    baseline.major, baseline.minor
                ),
            );
        }
    }
}

/// The Python whose stable ABI an abi3 wheel may use.
pub fn abi3_baseline(ctx: &AuditContext<'_>) -> Option<crate::spec::PythonVersion> {
    abi3::baseline(ctx.tags.iter().map(|t| (t.python.as_str(), t.abi.as_str())))
}
