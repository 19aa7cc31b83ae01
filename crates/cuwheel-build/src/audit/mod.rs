//! The audit: ELF and CUDA fat-binary facts of a wheel judged against manylinux, abi3 and the declared CUDA archs.
//!
//! In: a `.whl` file and [`AuditOptions`]. Out: an [`AuditReport`] whose
//! findings each name the member at fault, the problem, and the fix; the
//! wheel passes when there are none. A wheel that cannot be read at all is
//! an error, not a report.
//!
//! The engine is small: [`scan`] streams every member once, in bounded
//! memory, gathering what the checks need (digests, leaked paths, ELF
//! facts, fat binaries); [`context`] derives the shared facts once (how each
//! DT_NEEDED resolves, the best manylinux policy, the expected CUDA archs);
//! then every check of [`checks::CHECKS`] — one module each, with its own
//! wording — adds its findings. The policies are data (`data/`). What the
//! NVIDIA wheels of the wheel's own `Requires-Dist` install beside it is
//! derived from their names ([`siblings`]): an RPATH into one of their
//! directories, or a library one provides, is a note, not a failure.
//!
//! # The provenance file
//!
//! cuwheel's own wheels carry `{name}-{version}.dist-info/cuwheel-provenance.json`
//! ([`archs::PROVENANCE_FILE`]), a JSON object describing how the wheel was
//! built. The audit reads one key from it, `cuda_archs`: the list of CUDA
//! architectures in `cuda-archs` form, e.g.
//!
//! ```json
//! { "cuda_archs": ["8.0", "9.0", "10.0+PTX"] }
//! ```
//!
//! Each entry `MAJOR.MINOR[a|f][+PTX]` asks for SASS `sm_MAJORMINOR` (with
//! the suffix) and, with `+PTX`, PTX `compute_MAJORMINOR`. Other keys are
//! ignored. `--cuda-archs` on the command line takes precedence over it.

pub mod abi3;
mod ahead;
pub mod archs;
pub mod checks;
pub mod context;
pub mod elf;
pub mod fatbin;
pub use cuwheel_images as images;
pub mod leaks;
pub mod load;
pub mod loader;
pub mod manylinux;
mod report;
pub mod scan;
pub mod siblings;
pub mod size;
pub mod symbols;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

pub use checks::PypiRules;
pub use context::{AuditContext, AuditOptions, ExtraInputs};
pub use report::{
    AuditReport, CudaExpectation, ElfSummary, Finding, NeededLibrary, PlatformVerdict, TorchLoad,
};

use crate::wheel::{MemberDigest, WheelFile};
use checks::{CHECKS, CheckOutput};
use scan::MemberScan;

/// Audits the wheel at `path`. Errors only when the wheel cannot be read.
pub fn audit_wheel(path: &Path, options: &AuditOptions) -> Result<AuditReport> {
    let wheel = WheelFile::open(path)?;
    audit_file(&wheel, options)
}

/// [`audit_wheel`] of a wheel already opened.
pub fn audit_file(wheel: &WheelFile, options: &AuditOptions) -> Result<AuditReport> {
    let members = scan::scan_members_with(
        wheel,
        scan::ScanOptions {
            sizes: options.sizes,
        },
    )?;
    let digests: BTreeMap<String, MemberDigest> = members
        .iter()
        .map(|m| {
            let seen = MemberDigest {
                size: m.size,
                digest: m.digest.clone(),
            };
            (m.name.clone(), seen)
        })
        .collect();
    let ctx = AuditContext::new(wheel, &members, wheel.verify(&digests), options);

    let mut findings = Vec::new();
    let mut notes = Vec::new();
    for (order, check) in CHECKS.iter().enumerate() {
        let mut out = CheckOutput::new(check.id());
        check.run(&ctx, &mut out);
        findings.extend(out.findings.into_iter().map(|f| (order, f)));
        notes.extend(out.notes);
    }
    findings.sort_by(|(a, x), (b, y)| (a, &x.member).cmp(&(b, &y.member)));
    let findings: Vec<Finding> = findings.into_iter().map(|(_, f)| f).collect();

    Ok(AuditReport {
        wheel: wheel
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        passed: findings.is_empty(),
        platform: checks::platform_verdict(&ctx),
        abi3_baseline: checks::abi3_baseline(&ctx),
        cuda_archs_expected: ctx.cuda_archs.expected.clone(),
        torch_load: ctx
            .load_verdict()
            .map(|verdict| TorchLoad::new(&verdict.releases, &options.extra.load.claimed)),
        size: std::fs::metadata(wheel.path()).ok().map(|meta| {
            size::size_report(
                meta.len(),
                options.pypi.as_ref().map(|rules| rules.max_file_size),
                members
                    .iter()
                    .filter_map(|m| m.elf.as_ref()?.as_ref().ok())
                    .flat_map(|elf| &elf.fatbin_bytes),
            )
        }),
        elf_files: members.iter().filter_map(|m| summary(&ctx, m)).collect(),
        findings,
        notes,
    })
}

/// The most compatible manylinux policy the ELF members of `wheel` allow,
/// judged as [`audit_file`] judges them (`None` when it holds no readable
/// ELF file): the platform tag a wheel of these members may carry at most.
pub fn allowed_policy(
    wheel: &WheelFile,
    options: &AuditOptions,
) -> Result<Option<&'static crate::wheel::manylinux::ManylinuxPolicy>> {
    let members = scan::scan_members(wheel)?;
    let ctx = AuditContext::new(wheel, &members, Vec::new(), options);
    Ok((!ctx.elfs.is_empty()).then(|| ctx.best_policy()))
}

/// What the report shows of one readable ELF member.
fn summary(ctx: &AuditContext<'_>, member: &MemberScan) -> Option<ElfSummary> {
    let Some(Ok(elf)) = &member.elf else {
        return None;
    };
    let name = &member.name;
    let file_name = name.rsplit('/').next().unwrap_or_default();
    Some(ElfSummary {
        member: name.clone(),
        extension_module: elf.facts.is_extension_module(file_name),
        soname: elf.facts.soname.clone(),
        needed: elf
            .facts
            .needed
            .iter()
            .map(|soname| NeededLibrary {
                soname: soname.clone(),
                resolution: ctx.resolved[&(name.clone(), soname.clone())].clone(),
            })
            .collect(),
        rpath: elf.facts.rpath.clone(),
        runpath: elf.facts.runpath.clone(),
        x86_isa_needed: elf.facts.x86_isa_needed,
        fatbin: elf.fatbin.as_ref().and_then(|f| f.as_ref().ok()).cloned(),
    })
}
