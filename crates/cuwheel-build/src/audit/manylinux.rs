//! auditwheel's rule for the platform tag a set of ELF files may carry,
//! over the manylinux policies (`crate::wheel::manylinux`, data).
//!
//! In: the ELF files of a wheel with their facts and the DT_NEEDED entries
//! that stay external (neither inside the wheel nor provided at run time).
//! Out: for any policy, the [`Violation`]s that rule it out, and the most
//! compatible policy none of the criteria rules out.
//!
//! The rule is set membership, as auditwheel's `versioned_symbols_policy`
//! does it, not a maximum: each required version (`GLIBC_2.28`) is split at
//! its first `_`; a policy allows it when the policy lists that prefix and
//! the version is in the prefix's set; unknown prefixes are ignored, so
//! `GLIBC_PRIVATE` (listed nowhere under `GLIBC`) leaves only `linux`.
//! Blacklisted symbols, an x86 ISA level above baseline, `PyFPE_jbuf` and
//! libraries outside a policy's whitelist rule a policy out too. The
//! verdict is the minimum over these criteria of the best policy each
//! allows, as in auditwheel's `analyze_wheel_abi`.

use std::collections::BTreeSet;
use std::fmt;

use super::elf::{ElfFacts, SymbolBinding, SymbolKind, X86IsaLevel};
use crate::wheel::Arch;
use crate::wheel::manylinux::{ManylinuxPolicy, is_dynamic_loader, policies};

/// One ELF file of the wheel as the policy check sees it.
#[derive(Debug)]
pub struct PolicyInput<'a> {
    pub member: &'a str,
    pub facts: &'a ElfFacts,
    /// A CPython extension module (defines `PyInit_<name>`).
    pub is_extension: bool,
    /// DT_NEEDED entries found neither inside the wheel nor among the
    /// libraries provided at run time: only a policy's whitelist can allow them.
    pub external_needed: Vec<&'a str>,
}

/// The kind of reason that rules a policy out; the verdict is the minimum
/// over criteria of the best policy each one allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Criterion {
    SymbolVersions,
    Blacklist,
    IsaLevel,
    PyFpe,
    Libraries,
}

/// Why one ELF file does not fit a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    /// Requires `version` from `file`; `symbols` are (some of) the imports using it.
    SymbolVersion {
        file: String,
        version: String,
        symbols: Vec<String>,
    },
    Blacklisted {
        library: String,
        symbols: Vec<String>,
    },
    IsaLevel(X86IsaLevel),
    PyFpe(String),
    Library(String),
}

impl Constraint {
    pub fn criterion(&self) -> Criterion {
        match self {
            Constraint::SymbolVersion { .. } => Criterion::SymbolVersions,
            Constraint::Blacklisted { .. } => Criterion::Blacklist,
            Constraint::IsaLevel(_) => Criterion::IsaLevel,
            Constraint::PyFpe(_) => Criterion::PyFpe,
            Constraint::Library(_) => Criterion::Libraries,
        }
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constraint::SymbolVersion {
                file,
                version,
                symbols,
            } => {
                write!(f, "requires {version} from {file}")?;
                if !symbols.is_empty() {
                    write!(f, " (for {})", symbols.join(", "))?;
                }
                Ok(())
            }
            Constraint::Blacklisted { library, symbols } => write!(
                f,
                "imports {} from {library}, blacklisted by the policy",
                symbols.join(", ")
            ),
            Constraint::IsaLevel(level) => write!(
                f,
                "needs the {} instruction set, above the x86-64 baseline every manylinux policy assumes",
                level.name()
            ),
            Constraint::PyFpe(symbol) => write!(f, "imports {symbol}, which manylinux forbids"),
            Constraint::Library(soname) => write!(
                f,
                "needs {soname}, which the policy's library whitelist does not hold and the wheel does not contain"
            ),
        }
    }
}

/// A constraint on one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub member: String,
    pub constraint: Constraint,
}

/// How many importing symbols a version constraint names.
const SYMBOLS_NAMED: usize = 3;

/// Every reason `policy` does not fit these ELF files, in member order.
pub fn violations(elfs: &[PolicyInput<'_>], policy: &ManylinuxPolicy) -> Vec<Violation> {
    let mut out = Vec::new();
    if policy.is_linux() {
        return out;
    }
    for elf in elfs {
        let mut push = |constraint| {
            out.push(Violation {
                member: elf.member.to_string(),
                constraint,
            })
        };
        for need in &elf.facts.version_needs {
            if is_dynamic_loader(&need.file) {
                continue;
            }
            for version in &need.versions {
                if !policy.allows_version(version) {
                    let symbols = elf
                        .facts
                        .dynamic_symbols
                        .iter()
                        .filter(|s| !s.defined && s.version.as_deref() == Some(version.as_str()))
                        .map(|s| s.name.clone())
                        .take(SYMBOLS_NAMED)
                        .collect();
                    push(Constraint::SymbolVersion {
                        file: need.file.clone(),
                        version: version.clone(),
                        symbols,
                    });
                }
            }
        }
        for library in &elf.facts.needed {
            let Some(blacklisted) = policy.blacklist.get(library) else {
                continue;
            };
            let symbols: BTreeSet<String> = elf
                .facts
                .dynamic_symbols
                .iter()
                .filter(|s| !s.defined && s.binding != SymbolBinding::Weak)
                .filter(|s| blacklisted.contains(&s.name))
                .map(|s| s.name.clone())
                .collect();
            if !symbols.is_empty() {
                push(Constraint::Blacklisted {
                    library: library.clone(),
                    symbols: symbols.into_iter().collect(),
                });
            }
        }
        if let Some(level) = elf.facts.x86_isa_needed {
            if level != X86IsaLevel::Baseline {
                push(Constraint::IsaLevel(level));
            }
        }
        if elf.is_extension {
            if let Some(symbol) = elf.facts.dynamic_symbols.iter().find(|s| {
                !s.defined
                    && matches!(s.kind, SymbolKind::Func | SymbolKind::NoType)
                    && matches!(
                        s.name.as_str(),
                        "PyFPE_jbuf" | "PyFPE_dummy" | "PyFPE_counter"
                    )
            }) {
                push(Constraint::PyFpe(symbol.name.clone()));
            }
        }
        for soname in &elf.external_needed {
            if !is_dynamic_loader(soname) && !policy.lib_whitelist.contains(*soname) {
                push(Constraint::Library(soname.to_string()));
            }
        }
    }
    out
}

/// The most compatible policy of `arch` these ELF files satisfy.
pub fn best_policy(elfs: &[PolicyInput<'_>], arch: Arch) -> &'static ManylinuxPolicy {
    let all = policies(arch);
    let violations_by_policy: Vec<BTreeSet<Criterion>> = all
        .policies
        .iter()
        .map(|p| {
            violations(elfs, p)
                .iter()
                .map(|v| v.constraint.criterion())
                .collect()
        })
        .collect();
    let criteria = [
        Criterion::SymbolVersions,
        Criterion::Blacklist,
        Criterion::IsaLevel,
        Criterion::PyFpe,
        Criterion::Libraries,
    ];
    criteria
        .iter()
        .map(|criterion| {
            // policies are sorted by priority, so the last one allowed is the best
            all.policies
                .iter()
                .zip(&violations_by_policy)
                .filter(|(_, violated)| !violated.contains(criterion))
                .map(|(policy, _)| policy)
                .next_back()
                .unwrap_or(all.linux())
        })
        .min_by_key(|p| p.priority)
        .unwrap_or(all.linux())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::elf::{ElfSymbol, VersionNeed};

    fn facts(needs: &[(&str, &[&str])]) -> ElfFacts {
        ElfFacts {
            arch: crate::wheel::Arch::X86_64,
            soname: None,
            needed: needs.iter().map(|(f, _)| f.to_string()).collect(),
            rpath: vec![],
            runpath: vec![],
            interpreter: None,
            version_needs: needs
                .iter()
                .map(|(file, versions)| VersionNeed {
                    file: file.to_string(),
                    versions: versions.iter().map(|v| v.to_string()).collect(),
                })
                .collect(),
            dynamic_symbols: vec![],
            static_symbols: vec![],
            x86_isa_needed: None,
        }
    }

    fn best(facts: &ElfFacts, external: &[&'static str]) -> String {
        let input = PolicyInput {
            member: "m.so",
            facts,
            is_extension: true,
            external_needed: external.to_vec(),
        };
        best_policy(&[input], facts.arch).name.clone()
    }

    #[test]
    fn aarch64_files_are_judged_by_aarch64_symbol_versions() {
        let mut f = facts(&[("libc.so.6", &["GLIBC_2.17", "GLIBC_2.28"])]);
        f.arch = Arch::Aarch64;
        assert_eq!(best(&f, &[]), "manylinux_2_28");
        // GLIBC_2.32 is in aarch64's manylinux_2_34, not before.
        f = facts(&[("libc.so.6", &["GLIBC_2.17", "GLIBC_2.32"])]);
        f.arch = Arch::Aarch64;
        assert_eq!(best(&f, &[]), "manylinux_2_34");
        // No aarch64 glibc ever defined GLIBC_2.2.5, x86_64's first.
        f = facts(&[("libc.so.6", &["GLIBC_2.2.5"])]);
        assert_eq!(best(&f, &[]), "manylinux_2_5");
        f.arch = Arch::Aarch64;
        assert_eq!(best(&f, &[]), "linux");
    }

    #[test]
    fn verdict_is_set_membership_not_the_highest_version() {
        let f = facts(&[("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.14"])]);
        assert_eq!(best(&f, &[]), "manylinux_2_17");
        let f = facts(&[
            ("libc.so.6", &["GLIBC_2.28"]),
            ("libstdc++.so.6", &["GLIBCXX_3.4.24"]),
        ]);
        assert_eq!(best(&f, &[]), "manylinux_2_28");
        // GLIBC_2.37 is in no x86_64 policy's set (2.36 then 2.38): set membership
        // leaves only linux, where a numeric maximum would say manylinux_2_38.
        let f = facts(&[("libc.so.6", &["GLIBC_2.37"])]);
        assert_eq!(best(&f, &[]), "linux");
        let f = facts(&[("libc.so.6", &["GLIBC_PRIVATE"])]);
        assert_eq!(best(&f, &[]), "linux");
        // unknown prefixes are ignored
        let f = facts(&[
            ("libcudart.so.12", &["libcudart.so.12"]),
            ("libfoo.so", &["FOO_9"]),
        ]);
        assert_eq!(best(&f, &[]), "manylinux_2_5");
        // the dynamic loader is left out
        let f = facts(&[("ld-linux-x86-64.so.2", &["GLIBC_PRIVATE"])]);
        assert_eq!(best(&f, &[]), "manylinux_2_5");
    }

    #[test]
    fn libraries_blacklist_isa_and_pyfpe_rule_policies_out() {
        let f = facts(&[]);
        assert_eq!(best(&f, &["libfoo.so.1"]), "linux");
        assert_eq!(best(&f, &["libz.so.1"]), "manylinux_2_5");
        // whitelists grow: libexpat joined with manylinux_2_12, libmvec with 2_24
        assert_eq!(best(&f, &["libexpat.so.1"]), "manylinux_2_12");
        assert_eq!(best(&f, &["libmvec.so.1"]), "manylinux_2_24");

        let mut f = facts(&[("libz.so.1", &[])]);
        f.dynamic_symbols.push(ElfSymbol {
            name: "_dist_code".into(),
            version: None,
            version_hidden: false,
            defined: false,
            binding: SymbolBinding::Global,
            kind: SymbolKind::Object,
        });
        assert_eq!(best(&f, &[]), "linux");
        f.dynamic_symbols[0].binding = SymbolBinding::Weak;
        assert_eq!(best(&f, &[]), "manylinux_2_5");

        let mut f = facts(&[]);
        f.x86_isa_needed = Some(X86IsaLevel::V3);
        assert_eq!(best(&f, &[]), "linux");
        f.x86_isa_needed = Some(X86IsaLevel::Baseline);
        assert_eq!(best(&f, &[]), "manylinux_2_5");

        let mut f = facts(&[]);
        f.dynamic_symbols.push(ElfSymbol {
            name: "PyFPE_jbuf".into(),
            version: None,
            version_hidden: false,
            defined: false,
            binding: SymbolBinding::Global,
            kind: SymbolKind::NoType,
        });
        assert_eq!(best(&f, &[]), "linux");
    }

    #[test]
    fn violations_name_the_version_and_the_symbol() {
        let mut f = facts(&[("libc.so.6", &["GLIBC_2.31"])]);
        f.dynamic_symbols.push(ElfSymbol {
            name: "pidfd_open_wrapper".into(),
            version: Some("GLIBC_2.31".into()),
            version_hidden: false,
            defined: false,
            binding: SymbolBinding::Global,
            kind: SymbolKind::Func,
        });
        let input = [PolicyInput {
            member: "pkg/_ext.so",
            facts: &f,
            is_extension: true,
            external_needed: vec![],
        }];
        let policy = policies(Arch::X86_64).by_name("manylinux_2_28").unwrap();
        let found = violations(&input, policy);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].member, "pkg/_ext.so");
        assert_eq!(
            found[0].constraint.to_string(),
            "requires GLIBC_2.31 from libc.so.6 (for pidfd_open_wrapper)"
        );
        assert!(
            violations(
                &input,
                policies(Arch::X86_64).by_name("manylinux_2_31").unwrap()
            )
            .is_empty()
        );
    }
}
