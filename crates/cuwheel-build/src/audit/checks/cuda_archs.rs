//! `cuda-archs`: every `.nv_fatbin` section parses and, when CUDA archs are
//! expected (`--cuda-archs`, or the provenance file's `cuda_archs`), each
//! member's fat binary holds exactly the expected SASS and PTX
//! ([`crate::audit::archs`]).

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::fatbin::Fatbin;
use crate::audit::report::CudaExpectation;

pub struct CudaArchs;

impl AuditCheck for CudaArchs {
    fn id(&self) -> CheckId {
        CheckId {
            id: "cuda-archs",
            label: "CUDA archs",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        if let Some((member, problem)) = &ctx.cuda_archs.unreadable {
            out.finding(
                Some(member),
                problem.clone(),
                "write `cuda_archs` as a JSON list such as [\"8.0\", \"9.0\", \"10.0+PTX\"]"
                    .to_string(),
            );
        }
        if let Some(provenance) = &ctx.cuda_archs.overridden {
            out.note(format!(
                "--cuda-archs overrides the cuda_archs of {provenance}"
            ));
        }
        let expected = ctx.cuda_archs.expected.as_ref();
        let mut any_fatbin = false;
        for elf in &ctx.elfs {
            match elf.fatbin {
                None => {}
                Some(Err(problem)) => out.finding(
                    Some(elf.name),
                    problem.clone(),
                    "the section is corrupt or from an nvcc this audit does not know: rebuild \
                     the object with nvcc"
                        .to_string(),
                ),
                Some(Ok(fatbin)) => {
                    any_fatbin = true;
                    if let Some(expected) = expected {
                        compare(elf.name, expected, fatbin, out);
                    }
                }
            }
        }
        if let Some(expected) = expected {
            if !any_fatbin {
                out.finding(
                    None,
                    format!(
                        "no member holds a CUDA fat binary, but {} were expected (from {})",
                        expected.archs.declared.join(", "),
                        expected.from
                    ),
                    "check that the kernels were compiled with nvcc and linked into the \
                     extension, or do not expect CUDA archs for this wheel"
                        .to_string(),
                );
            }
        }
    }
}

/// A finding when `fatbin` does not hold exactly the expected images.
fn compare(member: &str, expected: &CudaExpectation, fatbin: &Fatbin, out: &mut CheckOutput) {
    let mismatch = expected.archs.compare(fatbin);
    if mismatch.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    if !mismatch.missing.is_empty() {
        parts.push(format!("lacks {}", mismatch.missing.join(", ")));
    }
    if !mismatch.extra.is_empty() {
        parts.push(format!("holds unexpected {}", mismatch.extra.join(", ")));
    }
    let mut problem = format!(
        "its CUDA fat binary {} (expected {} from {})",
        parts.join(" and "),
        expected.archs.declared.join(", "),
        expected.from
    );
    for note in &mismatch.notes {
        problem += &format!("; {note}");
    }
    out.finding(
        Some(member),
        problem,
        "compile every kernel for exactly the expected archs (nvcc -gencode \
         arch=compute_XY,code=sm_XY per arch, plus code=compute_XY for +PTX, keeping an a or f \
         suffix on both: arch=compute_90a,code=sm_90a; TORCH_CUDA_ARCH_LIST for torch builds), \
         or correct the expected list"
            .to_string(),
    );
}
