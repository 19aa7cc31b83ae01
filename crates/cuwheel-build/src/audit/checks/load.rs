//! `load`: every undefined dynamic symbol of every ELF member resolves at
//! `import` with each torch release the wheel claims, beside the CUDA
//! runtime and the baseline system ([`crate::audit::load`]); a stable-ABI
//! wheel binds to nothing of torch's beyond the stable C shim.
//!
//! In: the symbol tables of [`crate::audit::ExtraInputs`]`.load`. Out: one
//! finding per member and set of claimed releases that fail alike (the
//! symbols demangled, the library each was expected from, the torch
//! releases), and the notes of what could not be judged. The
//! backward-compatibility table over every release given goes into the
//! report ([`crate::audit::TorchLoad`]). Without torch tables the check is
//! not run, and says how to run it.

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;

pub struct Load;

/// What the audit says when it has no tables.
const NOT_RUN: &str = "load check not run: no torch symbol tables given. Run it with \
     `cuwheel symbols <torch wheel or its torch/lib> -o torch.symbols` per release, then \
     `cuwheel audit WHEEL --torch VERSION=torch.symbols ... --with \"CUDA runtime=cuda.symbols\" \
     --with \"baseline system=sysroot.symbols\" --claims VERSION` (cuwheel's own builds pass them)";

impl AuditCheck for Load {
    fn id(&self) -> CheckId {
        CheckId {
            id: "load",
            label: "load",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let Some(verdict) = ctx.load_verdict() else {
            if !ctx.elfs.is_empty() {
                out.note(NOT_RUN.to_string());
            }
            return;
        };
        for finding in &verdict.findings {
            out.finding(
                Some(finding.member.as_str()).filter(|m| !m.is_empty()),
                finding.problem.clone(),
                finding.fix.clone(),
            );
        }
        for note in &verdict.notes {
            out.note(format!("load: {note}"));
        }
    }
}
