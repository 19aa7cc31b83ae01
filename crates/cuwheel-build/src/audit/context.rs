//! What every check sees: the wheel, its scanned members, the facts derived
//! from them once (how each DT_NEEDED resolves, the best manylinux policy,
//! the expected CUDA archs), and the caller's options with their optional
//! extra inputs.
//!
//! In: a [`WheelFile`], its [`MemberScan`]s and the [`AuditOptions`]. Out:
//! an [`AuditContext`] the checks of [`super::checks`] read, never write.
//!
//! A check that needs more than the wheel (the load check needs the symbol
//! tables of the torch releases a wheel claims, the CUDA runtime and the
//! baseline system) reads it from [`ExtraInputs`]; absent inputs are
//! empty, and such a check says what it could not judge.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use super::archs::{ExpectedArchs, PROVENANCE_FILE};
use super::elf::ElfFacts;
use super::fatbin::Fatbin;
use super::load::{self, LoadInputs, LoadVerdict};
use super::loader::{self, LoadedObject, Resolution};
use super::manylinux::{self, PolicyInput};
use super::report::CudaExpectation;
use super::scan::MemberScan;
use super::siblings::Siblings;
use crate::wheel::manylinux::ManylinuxPolicy;
use crate::wheel::{Arch, Tag, WheelFile, WheelProblem};

/// The largest provenance file read.
const MAX_PROVENANCE_SIZE: u64 = 1 << 20;

/// What the audit is told beyond the wheel itself.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The CUDA archs every fat binary must hold; overrides the provenance file's.
    pub cuda_archs: Option<ExpectedArchs>,
    /// Sonames that exist at run time without being in the wheel.
    pub runtime_provided: BTreeSet<String>,
    /// Inputs only some checks use; empty unless the caller has them.
    pub extra: ExtraInputs,
    /// PyPI's rules, checked only when given ([`super::checks::PypiRules`]).
    pub pypi: Option<super::checks::PypiRules>,
    /// Deflate every fat-binary image for the size report's "deflated"
    /// column (`--sizes`); without it the column is left out.
    pub sizes: bool,
}

impl Default for AuditOptions {
    /// No CUDA expectation beyond the provenance file; torch's and CUDA's
    /// libraries (`data/runtime-provided.json`) provided at run time.
    fn default() -> AuditOptions {
        AuditOptions {
            cuda_archs: None,
            runtime_provided: loader::runtime_provided().sonames(),
            extra: ExtraInputs::default(),
            pypi: None,
            sizes: false,
        }
    }
}

/// Inputs beyond the wheel that a check may need, each optional.
#[derive(Debug, Clone, Default)]
pub struct ExtraInputs {
    /// The symbol tables of the load check ([`crate::audit::load`]): torch
    /// releases by label, the ones the wheel claims, the tables beside
    /// every release (CUDA runtime, baseline system) and whether the wheel
    /// claims torch's stable ABI. No torch table: the check is not run.
    pub load: LoadInputs,
}

/// A readable ELF member.
#[derive(Debug, Clone, Copy)]
pub struct ElfMember<'a> {
    pub name: &'a str,
    pub facts: &'a ElfFacts,
    /// Its `.nv_fatbin`, when it has one: parsed, or why not.
    pub fatbin: Option<&'a Result<Fatbin, String>>,
}

impl ElfMember<'_> {
    /// Whether it is a CPython extension module (defines `PyInit_<name>`).
    pub fn is_extension(&self) -> bool {
        let file_name = self.name.rsplit('/').next().unwrap_or_default();
        self.facts.is_extension_module(file_name)
    }
}

/// The CUDA archs expected of the wheel, or why the provenance file's
/// cannot be read.
#[derive(Debug, Clone)]
pub struct CudaArchs {
    pub expected: Option<CudaExpectation>,
    /// The provenance member and what is wrong with its `cuda_archs`.
    pub unreadable: Option<(String, String)>,
    /// `--cuda-archs` differs from the provenance file's.
    pub overridden: Option<String>,
}

/// Everything the checks read.
pub struct AuditContext<'a> {
    pub wheel: &'a WheelFile,
    pub options: &'a AuditOptions,
    /// Every member, in archive order.
    pub members: &'a [MemberScan],
    pub member_names: BTreeSet<String>,
    /// The wheel's tags, expanded from its file name.
    pub tags: Vec<Tag>,
    /// The platform parts of its tags.
    pub platforms: BTreeSet<String>,
    /// The architecture it is for: its ELF files' ([`wheel_arch`]).
    pub arch: Arch,
    /// Where RECORD, WHEEL, METADATA and the file name disagree.
    pub wheel_problems: Vec<WheelProblem>,
    /// The readable ELF members, in archive order.
    pub elfs: Vec<ElfMember<'a>>,
    /// How each `(member, soname)` DT_NEEDED entry resolves.
    pub resolved: BTreeMap<(String, String), Resolution>,
    /// What the NVIDIA wheels of its own `Requires-Dist` install beside it.
    pub siblings: Siblings,
    pub cuda_archs: CudaArchs,
    best_policy: OnceLock<&'static ManylinuxPolicy>,
    load: OnceLock<Option<LoadVerdict>>,
}

impl<'a> AuditContext<'a> {
    pub fn new(
        wheel: &'a WheelFile,
        members: &'a [MemberScan],
        wheel_problems: Vec<WheelProblem>,
        options: &'a AuditOptions,
    ) -> AuditContext<'a> {
        let tags = wheel.filename().tags.expand();
        let platforms: BTreeSet<String> = tags.iter().map(|t| t.platform.clone()).collect();
        let member_names: BTreeSet<String> = members.iter().map(|m| m.name.clone()).collect();
        let elfs: Vec<ElfMember<'a>> = members
            .iter()
            .filter_map(|m| match &m.elf {
                Some(Ok(scan)) => Some(ElfMember {
                    name: &m.name,
                    facts: &scan.facts,
                    fatbin: scan.fatbin.as_ref(),
                }),
                _ => None,
            })
            .collect();
        let objects: Vec<LoadedObject<'_>> = elfs
            .iter()
            .map(|e| LoadedObject {
                member: e.name,
                facts: e.facts,
            })
            .collect();
        let siblings =
            Siblings::from_requires_dist(wheel.metadata().requires_dist.iter().map(String::as_str));
        let resolved = loader::resolve_needed_with(
            &objects,
            &member_names,
            &options.runtime_provided,
            &siblings,
        );
        let cuda_archs = cuda_archs(wheel, options);
        let arch = wheel_arch(&platforms, &elfs);
        AuditContext {
            wheel,
            options,
            members,
            member_names,
            tags,
            platforms,
            arch,
            wheel_problems,
            elfs,
            resolved,
            siblings,
            cuda_archs,
            best_policy: OnceLock::new(),
            load: OnceLock::new(),
        }
    }

    /// The ELF members as the manylinux policies see them: libraries that
    /// resolve neither inside the wheel nor at run time count against them.
    pub fn policy_inputs(&self) -> Vec<PolicyInput<'_>> {
        self.elfs
            .iter()
            .map(|e| PolicyInput {
                member: e.name,
                facts: e.facts,
                is_extension: e.is_extension(),
                external_needed: e
                    .facts
                    .needed
                    .iter()
                    .filter(|soname| {
                        matches!(
                            self.resolved.get(&(e.name.to_string(), soname.to_string())),
                            Some(Resolution::External | Resolution::NotOnSearchPath(_))
                        )
                    })
                    .map(String::as_str)
                    .collect(),
            })
            .collect()
    }

    /// The load check's verdict (computed once), `None` when no torch
    /// symbol table was given.
    pub fn load_verdict(&self) -> Option<&LoadVerdict> {
        self.load
            .get_or_init(|| {
                let inputs = &self.options.extra.load;
                (!inputs.torch.is_empty()).then(|| load::judge_context(self, inputs))
            })
            .as_ref()
    }

    /// The most compatible policy the ELF files satisfy (computed once).
    pub fn best_policy(&self) -> &'static ManylinuxPolicy {
        self.best_policy
            .get_or_init(|| manylinux::best_policy(&self.policy_inputs(), self.arch))
    }
}

/// The architecture a wheel is for, judged from its ELF files, never from
/// the order of its tags: the one machine they are all built for; should
/// they mix machines, the one its platform tags name if they name exactly
/// one of those, else the machine most of them are for (the earlier in
/// sorted order: x86_64 before aarch64, on a tie). Without a readable ELF
/// file: the first architecture its platform tags name in that order, else
/// x86_64.
pub fn wheel_arch(platforms: &BTreeSet<String>, elfs: &[ElfMember<'_>]) -> Arch {
    let tagged: BTreeSet<Arch> = platforms
        .iter()
        .filter_map(|p| Arch::of_platform_tag(p))
        .collect();
    let mut counts: BTreeMap<Arch, usize> = BTreeMap::new();
    for elf in elfs {
        *counts.entry(elf.facts.arch).or_default() += 1;
    }
    if counts.len() > 1 {
        let named: Vec<&Arch> = counts.keys().filter(|a| tagged.contains(a)).collect();
        if let [one] = named[..] {
            return *one;
        }
    }
    counts
        .iter()
        .max_by(|(a, x), (b, y)| x.cmp(y).then(b.cmp(a)))
        .map(|(arch, _)| *arch)
        .or_else(|| tagged.first().copied())
        .unwrap_or(Arch::X86_64)
}

/// `--cuda-archs`, else the provenance file's `cuda_archs`.
fn cuda_archs(wheel: &WheelFile, options: &AuditOptions) -> CudaArchs {
    let provenance_path = format!("{}/{PROVENANCE_FILE}", wheel.dist_info_dir());
    let mut unreadable = None;
    let from_provenance = match wheel.read_member(&provenance_path, MAX_PROVENANCE_SIZE) {
        Ok(None) => None,
        Ok(Some(bytes)) => match ExpectedArchs::from_provenance(&bytes) {
            Ok(archs) => archs,
            Err(problem) => {
                unreadable = Some((provenance_path.clone(), problem));
                None
            }
        },
        Err(error) => {
            unreadable = Some((provenance_path.clone(), error.to_string()));
            None
        }
    };
    let mut overridden = None;
    let expected = match (&options.cuda_archs, from_provenance) {
        (Some(given), provenance) => {
            if provenance.is_some_and(|p| p != *given) {
                overridden = Some(provenance_path);
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
    };
    CudaArchs {
        expected,
        unreadable,
        overridden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(arch: Arch) -> ElfFacts {
        ElfFacts {
            arch,
            soname: None,
            needed: vec![],
            rpath: vec![],
            runpath: vec![],
            interpreter: None,
            version_needs: vec![],
            dynamic_symbols: vec![],
            static_symbols: vec![],
            x86_isa_needed: None,
        }
    }

    fn arch_of(tags: &[&str], archs: &[Arch]) -> Arch {
        let all: Vec<ElfFacts> = archs.iter().map(|a| facts(*a)).collect();
        let elfs: Vec<ElfMember<'_>> = all
            .iter()
            .map(|facts| ElfMember {
                name: "x.so",
                facts,
                fatbin: None,
            })
            .collect();
        let platforms = tags.iter().map(|t| t.to_string()).collect();
        wheel_arch(&platforms, &elfs)
    }

    #[test]
    fn the_elf_files_decide_not_the_tag_order() {
        let both = ["manylinux_2_17_aarch64", "manylinux_2_17_x86_64"];
        assert_eq!(arch_of(&both, &[Arch::X86_64]), Arch::X86_64);
        assert_eq!(arch_of(&both, &[Arch::Aarch64]), Arch::Aarch64);
        assert_eq!(arch_of(&["linux_aarch64"], &[Arch::X86_64]), Arch::X86_64);
        // mixed files: the one the tags name, else the majority
        let mixed = [Arch::X86_64, Arch::X86_64, Arch::Aarch64];
        assert_eq!(arch_of(&["linux_aarch64"], &mixed), Arch::Aarch64);
        assert_eq!(arch_of(&both, &mixed), Arch::X86_64);
        assert_eq!(arch_of(&[], &[Arch::Aarch64, Arch::X86_64]), Arch::X86_64);
        // no ELF file: the tags
        assert_eq!(arch_of(&both, &[]), Arch::X86_64);
        assert_eq!(arch_of(&["linux_aarch64"], &[]), Arch::Aarch64);
        assert_eq!(arch_of(&["any"], &[]), Arch::X86_64);
    }
}
