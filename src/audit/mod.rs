//! The audit: ELF and CUDA fat-binary facts of a wheel judged against manylinux, abi3 and the declared CUDA archs.
//!
//! In: a `.whl` file and [`AuditOptions`]. Out: an [`AuditReport`] whose
//! findings each name the member at fault, the problem, and the fix; the
//! wheel passes when there are none. A wheel that cannot be read at all is
//! an error, not a report.
//!
//! The checks, each in its own module:
//! - the wheel's own consistency (RECORD, WHEEL, METADATA, file name), from
//!   [`crate::wheel::WheelArchive::verify`];
//! - every member named like a shared object (`*.so`, `*.so.N`) or starting
//!   with the ELF magic must be an x86_64 ELF file ([`elf`]);
//! - no RPATH/RUNPATH entry may leave the wheel, and every DT_NEEDED must
//!   resolve inside the wheel, be in a manylinux whitelist, or be provided
//!   at run time by torch or CUDA ([`loader`], `data/runtime-provided.json`);
//! - no platform tag may promise more than auditwheel's rule allows for the
//!   ELF files ([`manylinux`]);
//! - an `abi3` wheel uses only the stable ABI of its baseline Python ([`abi3`]);
//! - no member holds `/nix/store/` or `/build/` ([`leaks`]; RECORD, which
//!   only lists member paths, is left out);
//! - every `.nv_fatbin` section parses ([`fatbin`]) and, when CUDA archs are
//!   expected, each member's fat binaries hold exactly the expected SASS and
//!   PTX ([`archs`]).
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
pub mod archs;
pub mod elf;
pub mod fatbin;
pub mod leaks;
pub mod loader;
pub mod manylinux;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;

pub use report::{
    AuditReport, Check, CudaExpectation, ElfSummary, Finding, NeededLibrary, PlatformVerdict,
};

use crate::spec::PythonVersion;
use crate::wheel::{Member, ProblemKind, Tag, WheelArchive, WheelProblem};
use archs::{ExpectedArchs, PROVENANCE_FILE};
use elf::{ElfErrorKind, ElfFacts};
use fatbin::Fatbin;
use loader::{LoadedObject, Resolution, SearchDir};
use manylinux::{PolicyInput, TagPolicy};

/// What the audit is told beyond the wheel itself.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The CUDA archs every fat binary must hold; overrides the provenance file's.
    pub cuda_archs: Option<ExpectedArchs>,
    /// Sonames that exist at run time without being in the wheel.
    pub runtime_provided: BTreeSet<String>,
}

impl Default for AuditOptions {
    /// No CUDA expectation beyond the provenance file; torch's and CUDA's
    /// libraries (`data/runtime-provided.json`) provided at run time.
    fn default() -> AuditOptions {
        AuditOptions {
            cuda_archs: None,
            runtime_provided: loader::runtime_provided().sonames(),
        }
    }
}

/// Audits the wheel at `path`. Errors only when the wheel cannot be read.
pub fn audit_wheel(path: &Path, options: &AuditOptions) -> Result<AuditReport> {
    let archive = WheelArchive::open(path)?;
    Ok(audit_archive(path, &archive, options))
}

/// [`audit_wheel`] of a wheel already read from `path`.
pub fn audit_archive(path: &Path, archive: &WheelArchive, options: &AuditOptions) -> AuditReport {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let format_findings = archive.verify().iter().map(format_finding).collect();
    let input = WheelInput {
        file_name,
        tags: archive.filename().tags.expand(),
        dist_info_dir: archive.dist_info_dir(),
        members: archive.members(),
        format_findings,
    };
    audit_input(input, options)
}

/// The most compatible manylinux policy the ELF members allow, judged as
/// [`audit_wheel`] judges them (`None` when no member is an ELF file): the
/// platform tag a wheel of these members may carry at most. Members that
/// cannot be read as ELF are left to the audit to report.
pub fn allowed_policy(
    members: &[Member],
    options: &AuditOptions,
) -> Option<&'static manylinux::ManylinuxPolicy> {
    let (elfs, _) = read_elf_members(members);
    if elfs.is_empty() {
        return None;
    }
    let names: BTreeSet<String> = members.iter().map(|m| m.name.clone()).collect();
    let resolved = resolve(&elfs, &names, options);
    Some(manylinux::best_policy(&policy_inputs(&elfs, &resolved)))
}

/// Where each DT_NEEDED entry of the ELF members resolves.
fn resolve(
    elfs: &[ElfMember<'_>],
    member_names: &BTreeSet<String>,
    options: &AuditOptions,
) -> BTreeMap<(String, String), Resolution> {
    let objects: Vec<LoadedObject<'_>> = elfs
        .iter()
        .map(|e| LoadedObject {
            member: &e.member.name,
            facts: &e.facts,
        })
        .collect();
    loader::resolve_needed(&objects, member_names, &options.runtime_provided)
}

/// A readable wheel, as the checks see it.
struct WheelInput<'a> {
    file_name: String,
    tags: Vec<Tag>,
    dist_info_dir: &'a str,
    members: &'a [Member],
    format_findings: Vec<Finding>,
}

/// An ELF member and its facts.
struct ElfMember<'a> {
    member: &'a Member,
    facts: ElfFacts,
}

/// How many findings one too-high platform tag lists before summing up the rest.
const PLATFORM_FINDINGS_LISTED: usize = 10;

fn audit_input(input: WheelInput<'_>, options: &AuditOptions) -> AuditReport {
    let mut findings = input.format_findings;
    let mut notes = Vec::new();

    let record = format!("{}/RECORD", input.dist_info_dir);
    findings.extend(leak_findings(
        input.members.iter().filter(|m| m.name != record),
    ));

    let (elfs, elf_findings) = read_elf_members(input.members);
    findings.extend(elf_findings);

    let member_names: BTreeSet<String> = input.members.iter().map(|m| m.name.clone()).collect();
    findings.extend(search_path_findings(&elfs, &member_names));

    let resolved = resolve(&elfs, &member_names, options);
    findings.extend(library_findings(&resolved, &mut notes));

    let platforms: BTreeSet<&str> = input.tags.iter().map(|t| t.platform.as_str()).collect();
    let platform = (!elfs.is_empty()).then(|| {
        let inputs = policy_inputs(&elfs, &resolved);
        findings.extend(platform_findings(&inputs, &platforms));
        platform_verdict(&inputs, &platforms)
    });

    let abi3_baseline = abi3::baseline(
        input
            .tags
            .iter()
            .map(|t| (t.python.as_str(), t.abi.as_str())),
    );
    if let Some(baseline) = abi3_baseline {
        findings.extend(abi3_findings(&elfs, baseline));
    }

    let expected = cuda_expectation(
        input.dist_info_dir,
        input.members,
        options,
        &mut findings,
        &mut notes,
    );
    let mut elf_files = Vec::new();
    for elf in &elfs {
        let fatbin = read_fatbin(elf, &mut findings);
        if let (Some(expected), Some(fatbin)) = (&expected, &fatbin) {
            findings.extend(arch_finding(&elf.member.name, expected, fatbin));
        }
        elf_files.push(summary(elf, &resolved, fatbin));
    }
    if let Some(expected) = &expected {
        if elf_files.iter().all(|e| e.fatbin.is_none()) {
            findings.push(Finding {
                check: Check::CudaArchs,
                member: None,
                problem: format!(
                    "no member holds a CUDA fat binary, but {} were expected (from {})",
                    expected.archs.declared.join(", "),
                    expected.from
                ),
                fix: "check that the kernels were compiled with nvcc and linked into the \
                      extension, or do not expect CUDA archs for this wheel"
                    .to_string(),
            });
        }
    }

    findings.sort_by(|a, b| (a.check, &a.member).cmp(&(b.check, &b.member)));
    AuditReport {
        wheel: input.file_name,
        passed: findings.is_empty(),
        platform,
        abi3_baseline,
        cuda_archs_expected: expected,
        elf_files,
        findings,
        notes,
    }
}

/// Build-machine paths in the members' bytes.
fn leak_findings<'a>(members: impl Iterator<Item = &'a Member>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for member in members {
        let Some(scan) = leaks::scan(&member.data) else {
            continue;
        };
        let examples: Vec<String> = scan
            .examples
            .iter()
            .map(|e| format!("`{}` at byte {}", e.text, e.offset))
            .collect();
        findings.push(Finding {
            check: Check::Leak,
            member: Some(member.name.clone()),
            problem: format!(
                "holds {} build-machine path{} ({}), e.g. {}",
                scan.hits,
                if scan.hits == 1 { "" } else { "s" },
                leaks::LEAK_PATTERNS.join(" or "),
                examples.join(", ")
            ),
            fix: "rebuild with build and store paths mapped away (gcc and nvcc \
                  -ffile-prefix-map=DIR=., as cuwheel's builds do) and strip debug \
                  information from shipped objects"
                .to_string(),
        });
    }
    findings
}

/// The facts of every member that starts with the ELF magic or is named
/// like a shared object; a finding for each that is not a readable x86_64 ELF file.
fn read_elf_members(members: &[Member]) -> (Vec<ElfMember<'_>>, Vec<Finding>) {
    let mut elfs = Vec::new();
    let mut findings = Vec::new();
    for member in members {
        if !elf::is_elf(&member.data) && !named_like_shared_object(&member.name) {
            continue;
        }
        match ElfFacts::parse(&member.name, &member.data) {
            Ok(facts) => elfs.push(ElfMember { member, facts }),
            Err(error) => findings.push(Finding {
                check: Check::Elf,
                member: Some(member.name.clone()),
                fix: elf_fix(&error.kind).to_string(),
                problem: format!("is {}", error.kind),
            }),
        }
    }
    (elfs, findings)
}

/// RPATH/RUNPATH entries that leave the wheel.
fn search_path_findings(elfs: &[ElfMember<'_>], member_names: &BTreeSet<String>) -> Vec<Finding> {
    let dirs = loader::wheel_dirs(member_names.iter().map(String::as_str));
    let mut findings = Vec::new();
    for elf in elfs {
        for (tag, entries) in [("RPATH", &elf.facts.rpath), ("RUNPATH", &elf.facts.runpath)] {
            for entry in entries {
                if let SearchDir::Outside(why) = loader::expand(entry, &elf.member.name, &dirs) {
                    findings.push(Finding {
                        check: Check::SearchPath,
                        member: Some(elf.member.name.clone()),
                        problem: format!("{tag} entry `{entry}` leaves the wheel: {why}"),
                        fix: format!(
                            "point it at a directory inside the wheel relative to $ORIGIN \
                             (patchelf --set-rpath '$ORIGIN/...' {0}) or remove it \
                             (patchelf --remove-rpath {0})",
                            elf.member.name
                        ),
                    });
                }
            }
        }
    }
    findings
}

/// DT_NEEDED entries that resolve nowhere allowed; a note naming the
/// libraries assumed to exist at run time.
fn library_findings(
    resolved: &BTreeMap<(String, String), Resolution>,
    notes: &mut Vec<String>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut relied_on = BTreeSet::new();
    for ((member, soname), resolution) in resolved {
        match resolution {
            Resolution::InWheel(_) => {}
            Resolution::RuntimeProvided => {
                relied_on.insert(soname.clone());
            }
            // a whitelisted library comes from the system if the wheel's copy is not found
            Resolution::NotOnSearchPath(_) if manylinux::is_allowed_system_library(soname) => {}
            Resolution::NotOnSearchPath(at) => findings.push(Finding {
                check: Check::Libraries,
                member: Some(member.clone()),
                problem: format!(
                    "needs {soname}; the wheel holds it at {at}, but its RPATH/RUNPATH does not \
                     reach that directory, so loading fails unless something loaded it before"
                ),
                fix: format!(
                    "add `$ORIGIN/{}` to its RUNPATH (patchelf --add-rpath)",
                    relative_dir(member, at)
                ),
            }),
            Resolution::External if manylinux::is_allowed_system_library(soname) => {}
            Resolution::External => findings.push(Finding {
                check: Check::Libraries,
                member: Some(member.clone()),
                problem: format!(
                    "needs {soname}, which is not in any manylinux whitelist, not in the wheel, \
                     and not declared as provided at run time"
                ),
                fix: if soname.starts_with("libpython") {
                    "do not link an extension against libpython: drop -lpython3.X; the \
                     interpreter provides those symbols"
                        .to_string()
                } else {
                    format!(
                        "bundle it (auditwheel repair), link it statically, or, if another \
                         installed package provides it at run time, declare it with \
                         `--runtime-provided {soname}`"
                    )
                },
            }),
        }
    }
    if !relied_on.is_empty() {
        let provided = loader::runtime_provided();
        let described: Vec<String> = relied_on
            .iter()
            .map(|s| match provided.provider_of(s) {
                Some(provider) => format!("{s} ({provider})"),
                None => format!("{s} (declared with --runtime-provided)"),
            })
            .collect();
        notes.push(format!(
            "assumes these libraries exist at run time: {}",
            described.join(", ")
        ));
    }
    findings
}

/// The ELF members as the manylinux policies see them: libraries that
/// resolve neither inside the wheel nor at run time count against them.
fn policy_inputs<'a>(
    elfs: &'a [ElfMember<'a>],
    resolved: &BTreeMap<(String, String), Resolution>,
) -> Vec<PolicyInput<'a>> {
    elfs.iter()
        .map(|e| {
            let file_name = e.member.name.rsplit('/').next().unwrap_or_default();
            PolicyInput {
                member: &e.member.name,
                facts: &e.facts,
                is_extension: e.facts.is_extension_module(file_name),
                external_needed: e
                    .facts
                    .needed
                    .iter()
                    .filter(|soname| {
                        matches!(
                            resolved.get(&(e.member.name.clone(), soname.to_string())),
                            Some(Resolution::External | Resolution::NotOnSearchPath(_))
                        )
                    })
                    .map(String::as_str)
                    .collect(),
            }
        })
        .collect()
}

/// The most compatible tag and what holds the files there.
fn platform_verdict(inputs: &[PolicyInput<'_>], platforms: &BTreeSet<&str>) -> PlatformVerdict {
    let best = manylinux::best_policy(inputs);
    let held_by: BTreeSet<String> = manylinux::next_more_compatible(best)
        .map(|next| {
            manylinux::violations(inputs, next)
                .iter()
                .map(|v| format!("{}: {}", v.member, v.constraint))
                .collect()
        })
        .unwrap_or_default();
    PlatformVerdict {
        allowed: best.tag(),
        tagged: platforms.iter().map(|p| p.to_string()).collect(),
        held_by: held_by.into_iter().collect(),
    }
}

/// Symbols beyond the stable ABI of `baseline`, one finding per member.
fn abi3_findings(elfs: &[ElfMember<'_>], baseline: PythonVersion) -> Vec<Finding> {
    let mut findings = Vec::new();
    for elf in elfs {
        let violations = abi3::check(&elf.facts, baseline);
        if violations.is_empty() {
            continue;
        }
        let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
        findings.push(Finding {
            check: Check::Abi3,
            member: Some(elf.member.name.clone()),
            problem: format!(
                "the wheel is tagged abi3 for Python {baseline}, but {}",
                listed.join("; ")
            ),
            fix: format!(
                "compile with -DPy_LIMITED_API=0x{:02X}{:02X}0000 and avoid these symbols, \
                 raise the wheel's cpXY tag to the Python that added them, or publish \
                 per-Python (cpXY-cpXY) wheels instead of abi3",
                baseline.major, baseline.minor
            ),
        });
    }
    findings
}

/// The CUDA archs expected: `--cuda-archs`, else the provenance file's.
fn cuda_expectation(
    dist_info_dir: &str,
    members: &[Member],
    options: &AuditOptions,
    findings: &mut Vec<Finding>,
    notes: &mut Vec<String>,
) -> Option<CudaExpectation> {
    let provenance_path = format!("{dist_info_dir}/{PROVENANCE_FILE}");
    let from_provenance = members
        .iter()
        .find(|m| m.name == provenance_path)
        .and_then(|m| match ExpectedArchs::from_provenance(&m.data) {
            Ok(archs) => archs,
            Err(problem) => {
                findings.push(Finding {
                    check: Check::CudaArchs,
                    member: Some(m.name.clone()),
                    problem,
                    fix:
                        "write `cuda_archs` as a JSON list such as [\"8.0\", \"9.0\", \"10.0+PTX\"]"
                            .to_string(),
                });
                None
            }
        });
    match (&options.cuda_archs, from_provenance) {
        (Some(given), provenance) => {
            if provenance.is_some_and(|p| p != *given) {
                notes.push(format!(
                    "--cuda-archs overrides the cuda_archs of {provenance_path}"
                ));
            }
            Some(CudaExpectation {
                from: "--cuda-archs".to_string(),
                archs: given.clone(),
            })
        }
        (None, Some(archs)) => Some(CudaExpectation {
            from: provenance_path,
            archs,
        }),
        (None, None) => None,
    }
}

/// The member's fat binary, if it has one; a finding when it does not parse.
fn read_fatbin(elf: &ElfMember<'_>, findings: &mut Vec<Finding>) -> Option<Fatbin> {
    let name = &elf.member.name;
    let problem = match elf::nv_fatbin_section(name, &elf.member.data) {
        Ok(None) => return None,
        Ok(Some(section)) => match fatbin::parse(section) {
            Ok(fatbin) => return Some(fatbin),
            Err(error) => format!("section {}: {error}", elf::NV_FATBIN_SECTION),
        },
        Err(error) => format!("is {}", error.kind),
    };
    findings.push(Finding {
        check: Check::CudaArchs,
        member: Some(name.clone()),
        problem,
        fix: "the section is corrupt or from an nvcc this audit does not know: rebuild the \
              object with nvcc"
            .to_string(),
    });
    None
}

/// A finding when `fatbin` does not hold exactly the expected images.
fn arch_finding(member: &str, expected: &CudaExpectation, fatbin: &Fatbin) -> Option<Finding> {
    let mismatch = expected.archs.compare(fatbin);
    if mismatch.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !mismatch.missing.is_empty() {
        parts.push(format!("lacks {}", mismatch.missing.join(", ")));
    }
    if !mismatch.extra.is_empty() {
        parts.push(format!("holds unexpected {}", mismatch.extra.join(", ")));
    }
    Some(Finding {
        check: Check::CudaArchs,
        member: Some(member.to_string()),
        problem: format!(
            "its CUDA fat binary {} (expected {} from {})",
            parts.join(" and "),
            expected.archs.declared.join(", "),
            expected.from
        ),
        fix: "compile every kernel for exactly the expected archs (nvcc -gencode \
              arch=compute_XY,code=sm_XY per arch, plus code=compute_XY for +PTX; \
              TORCH_CUDA_ARCH_LIST for torch builds), or correct the expected list"
            .to_string(),
    })
}

fn summary(
    elf: &ElfMember<'_>,
    resolved: &BTreeMap<(String, String), Resolution>,
    fatbin: Option<Fatbin>,
) -> ElfSummary {
    let name = &elf.member.name;
    let file_name = name.rsplit('/').next().unwrap_or_default();
    ElfSummary {
        member: name.clone(),
        extension_module: elf.facts.is_extension_module(file_name),
        soname: elf.facts.soname.clone(),
        needed: elf
            .facts
            .needed
            .iter()
            .map(|soname| NeededLibrary {
                soname: soname.clone(),
                resolution: resolved[&(name.clone(), soname.clone())].clone(),
            })
            .collect(),
        rpath: elf.facts.rpath.clone(),
        runpath: elf.facts.runpath.clone(),
        x86_isa_needed: elf.facts.x86_isa_needed,
        fatbin,
    }
}

/// Findings for platform tags that promise more than the ELF files allow,
/// or that these policies cannot judge.
fn platform_findings(inputs: &[PolicyInput<'_>], platforms: &BTreeSet<&str>) -> Vec<Finding> {
    let best = manylinux::best_policy(inputs);
    let all = manylinux::policies();
    let mut findings = Vec::new();
    let mut too_high: BTreeMap<&str, (&manylinux::ManylinuxPolicy, Vec<&str>)> = BTreeMap::new();
    for &platform in platforms {
        match all.for_platform_tag(platform) {
            TagPolicy::Known(policy) | TagPolicy::Nearest(policy) => {
                if policy.priority > best.priority {
                    too_high
                        .entry(policy.name.as_str())
                        .or_insert((policy, Vec::new()))
                        .1
                        .push(platform);
                }
            }
            TagPolicy::NotJudged => findings.push(Finding {
                check: Check::Platform,
                member: None,
                problem: format!(
                    "the wheel holds ELF files but is tagged `{platform}`, which cuwheel's \
                     policies (manylinux and linux, {}) cannot vouch for",
                    manylinux::ARCH
                ),
                fix: if platform == "any" {
                    "a wheel with compiled code needs a platform tag: build it as a platform \
                     wheel (manylinux_2_X_x86_64)"
                        .to_string()
                } else {
                    "audit this wheel with a tool for its platform".to_string()
                },
            }),
        }
    }
    for (policy, tags) in too_high.values() {
        let tags = tags.join(", ");
        let violations = manylinux::violations(inputs, policy);
        let more = violations.len().saturating_sub(PLATFORM_FINDINGS_LISTED);
        for violation in violations.into_iter().take(PLATFORM_FINDINGS_LISTED) {
            findings.push(Finding {
                check: Check::Platform,
                member: Some(violation.member),
                problem: format!(
                    "tagged {tags}, but it {}; the files allow at most {}",
                    violation.constraint,
                    best.tag()
                ),
                fix: format!(
                    "tag the wheel {} or rebuild against an older glibc/libstdc++ (an older \
                     sysroot or manylinux image) so it fits {}",
                    best.tag(),
                    policy.tag()
                ),
            });
        }
        if more > 0 {
            findings.push(Finding {
                check: Check::Platform,
                member: None,
                problem: format!("tagged {tags}: {more} more constraints like the above"),
                fix: format!("tag the wheel {}", best.tag()),
            });
        }
    }
    findings
}

/// `libfoo.so`, `libfoo.so.1.2`, `_ext.cpython-311-x86_64-linux-gnu.so`.
fn named_like_shared_object(member: &str) -> bool {
    let file_name = member.rsplit('/').next().unwrap_or(member);
    let Some(at) = file_name.rfind(".so") else {
        return false;
    };
    file_name[at + 3..]
        .split('.')
        .skip(1)
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && (file_name.len() == at + 3 || file_name.as_bytes()[at + 3] == b'.')
}

/// The directory of `to` relative to the directory of `from`, both member paths.
fn relative_dir(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from.split('/').rev().skip(1).collect::<Vec<_>>();
    let from_dir: Vec<&str> = from_dir.into_iter().rev().collect();
    let to_dir: Vec<&str> = {
        let mut parts: Vec<&str> = to.split('/').collect();
        parts.pop();
        parts
    };
    let common = from_dir
        .iter()
        .zip(&to_dir)
        .take_while(|(a, b)| a == b)
        .count();
    let ups = std::iter::repeat_n("..", from_dir.len() - common);
    let parts: Vec<&str> = ups.chain(to_dir[common..].iter().copied()).collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

fn elf_fix(kind: &ElfErrorKind) -> &'static str {
    match kind {
        ElfErrorKind::NotElf(_) => {
            "a file named like a shared library must be one: remove it from the wheel or \
             rename it"
        }
        ElfErrorKind::WrongClass | ElfErrorKind::WrongEndian | ElfErrorKind::WrongMachine(_) => {
            "cuwheel audits x86_64 Linux wheels: rebuild the file for x86_64 or remove it"
        }
        ElfErrorKind::Malformed(_) => "the file is damaged: rebuild it and the wheel",
    }
}

/// A [`WheelProblem`] as a finding naming the member it is about.
fn format_finding(problem: &WheelProblem) -> Finding {
    let member = match &problem.kind {
        ProblemKind::NotInRecord { member }
        | ProblemKind::UnhashedMember { member }
        | ProblemKind::BadHash { member, .. }
        | ProblemKind::HashMismatch { member, .. }
        | ProblemKind::SizeMismatch { member, .. } => Some(member.clone()),
        ProblemKind::RecordedButMissing { path } | ProblemKind::DuplicateRecordRow { path } => {
            Some(path.clone())
        }
        ProblemKind::RecordMissing { record }
        | ProblemKind::RecordUnreadable { record, .. }
        | ProblemKind::RecordSelfRow { record, .. } => Some(record.clone()),
        _ => None,
    };
    // WheelProblem's message starts with the wheel's path, which the report already names.
    let text = problem.to_string();
    let prefix = format!("{}: ", problem.wheel.display());
    Finding {
        check: Check::WheelFormat,
        member,
        problem: text.strip_prefix(&prefix).unwrap_or(&text).to_string(),
        fix: "rebuild the wheel with a writer that keeps RECORD, WHEEL, METADATA and the file \
              name consistent (cuwheel's does); never change members after RECORD is written"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_object_names() {
        for yes in [
            "a/libfoo.so",
            "libfoo.so.1",
            "libfoo.so.1.2.3",
            "pkg/_ext.cpython-311-x86_64-linux-gnu.so",
            "pkg/_C.abi3.so",
        ] {
            assert!(named_like_shared_object(yes), "{yes}");
        }
        for no in [
            "a/foo.so.py",
            "libfoo.so.x",
            "README",
            "a.sofa",
            "pkg/so/x.py",
            "x.so.",
        ] {
            assert!(!named_like_shared_object(no), "{no}");
        }
    }

    #[test]
    fn relative_dirs_between_members() {
        assert_eq!(
            relative_dir("pkg/_ext.so", "pkg.libs/libfoo.so"),
            "../pkg.libs"
        );
        assert_eq!(relative_dir("pkg/a/_ext.so", "pkg/libfoo.so"), "..");
        assert_eq!(relative_dir("pkg/_ext.so", "pkg/sub/libfoo.so"), "sub");
        assert_eq!(relative_dir("_ext.so", "libs/libfoo.so"), "libs");
    }
}
