//! What a stable-ABI wheel takes from torch beyond the stable ABI.
//!
//! In: the wheel's members and their scopes ([`Linker`]) with one torch
//! release among the providers, named by its origin. Out: every
//! [`NonStable`] reference: a symbol that only that torch's libraries
//! satisfy and that is not part of torch's stable C shim — the
//! `aoti_torch_*` and `torch_*` C functions of
//! `torch/csrc/inductor/aoti_torch/c/shim.h` and `torch/csrc/stable/c/shim.h`,
//! which torch promises to keep (LibTorch stable ABI notes). Everything
//! else torch exports (`at::`, `c10::`, `torch::` C++ symbols) may change or
//! vanish in any release, so a wheel claiming a range of releases must not
//! bind to it — even when every release of the range still happens to
//! export it. A C++ standard library symbol torch re-exports is fine when
//! another library in scope (libstdc++) also defines it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Linker, LoadFinding, WheelObject, demangle, references};

/// How many symbols one finding lists.
const LISTED: usize = 5;

/// A reference that binds only to torch, outside the stable C shim.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct NonStable {
    pub member: String,
    pub symbol: String,
    pub demangled: String,
    /// The torch library it binds to, e.g. `libc10.so`.
    pub library: String,
}

impl NonStable {
    /// `` `c10::detail::torchCheckFail(...)` (`_ZN3c10...`) from libc10.so ``.
    pub fn describe(&self) -> String {
        if self.demangled == self.symbol {
            format!("`{}` from {}", self.symbol, self.library)
        } else {
            format!(
                "`{}` (`{}`) from {}",
                self.demangled, self.symbol, self.library
            )
        }
    }
}

/// Whether `symbol` is a function of torch's stable C shim.
pub fn is_stable_shim(symbol: &str) -> bool {
    !symbol.starts_with("_Z") && (symbol.starts_with("aoti_torch_") || symbol.starts_with("torch_"))
}

/// The references of the wheel's members that only the libraries of the
/// provider named `torch` satisfy and that are not [`is_stable_shim`],
/// sorted.
pub fn non_stable_references(
    objects: &[WheelObject<'_>],
    linker: &Linker<'_>,
    torch: &str,
) -> Vec<NonStable> {
    let mut out = Vec::new();
    for object in objects {
        let scope = linker.scope(object);
        for symbol in references(object.facts) {
            if is_stable_shim(&symbol.name) {
                continue;
            }
            let satisfying = scope.satisfying(&symbol.name, symbol.version.as_deref());
            let Some(first) = satisfying.first() else {
                continue; // unresolved: the load check's business
            };
            if satisfying.iter().all(|l| l.origin == torch) {
                out.push(NonStable {
                    member: object.member.to_string(),
                    symbol: symbol.name.clone(),
                    demangled: demangle(&symbol.name),
                    library: first.exports.soname.clone(),
                });
            }
        }
    }
    out.sort();
    out
}

/// One finding per member of a wheel that claims torch's stable ABI, from
/// the [`non_stable_references`] found against each claimed release
/// (`(release, references)`).
pub fn findings(per_release: &[(&str, Vec<NonStable>)]) -> Vec<LoadFinding> {
    let mut by_member: BTreeMap<&str, BTreeMap<&NonStable, BTreeSet<&str>>> = BTreeMap::new();
    for (release, found) in per_release {
        for n in found {
            // the same symbol from another release's library is the same reference
            let key = by_member.entry(&n.member).or_default();
            let first = key
                .keys()
                .find(|k| k.symbol == n.symbol)
                .copied()
                .unwrap_or(n);
            key.entry(first).or_default().insert(release);
        }
    }
    by_member
        .into_iter()
        .map(|(member, symbols)| {
            let releases: BTreeSet<&str> = symbols.values().flatten().copied().collect();
            let listed: Vec<String> = symbols.keys().take(LISTED).map(|n| n.describe()).collect();
            let more = symbols.len().saturating_sub(LISTED);
            LoadFinding {
                member: member.to_string(),
                problem: format!(
                    "claims torch's stable ABI but binds to torch symbols outside it (checked \
                     against torch {}): {}{}",
                    releases.into_iter().collect::<Vec<_>>().join(", "),
                    listed.join("; "),
                    if more > 0 {
                        format!("; and {more} more")
                    } else {
                        String::new()
                    }
                ),
                fix: "use only torch/csrc/stable and torch/headeronly (compile with \
                      -DTORCH_STABLE_ONLY so that ATen and c10 headers refuse to compile), whose \
                      calls go through the `aoti_torch_*`/`torch_*` C shim; link libstdc++ \
                      before torch's libraries"
                    .to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::elf::SymbolBinding::Global;
    use crate::audit::load::Provider;
    use crate::audit::load::fixtures::{external, facts, library, table};

    #[test]
    fn only_torch_only_symbols_outside_the_shim_are_named() {
        let refs = [
            "_ZN3c106detail14torchCheckFailEPKcS2_jS2_",
            "_ZSt20__throw_length_errorPKc",
            "aoti_torch_get_dim",
            "torch_call_dispatcher",
            "memcpy",
        ];
        let undefined: Vec<(&str, Option<&str>, _)> =
            refs.iter().map(|r| (*r, None, Global)).collect();
        let facts = facts(&["libtorch_cpu.so", "libstdc++.so.6"], &undefined);
        let torch = table(vec![library("libtorch_cpu.so", &[], &[], &refs[..4])]);
        let system = table(vec![
            library("libc.so.6", &[], &[], &["memcpy"]),
            library(
                "libstdc++.so.6",
                &[],
                &[],
                &["_ZSt20__throw_length_errorPKc"],
            ),
        ]);
        let objects = [WheelObject {
            member: "pkg/_C.abi3.so",
            facts: &facts,
        }];
        let resolved = external("pkg/_C.abi3.so", &facts);
        let providers = [
            Provider {
                origin: "torch 2.11.0",
                table: &torch,
            },
            Provider {
                origin: "system",
                table: &system,
            },
        ];
        let linker = Linker::new(&objects, &resolved, &providers);
        let found = non_stable_references(&objects, &linker, "torch 2.11.0");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].describe(),
            "`c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)` \
             (`_ZN3c106detail14torchCheckFailEPKcS2_jS2_`) from libtorch_cpu.so"
        );
        assert!(is_stable_shim("aoti_torch_get_dim") && !is_stable_shim("_ZN5torch6stable3fooEv"));
        let findings = findings(&[("2.11.0", found.clone()), ("2.12.0", found)]);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0].problem.contains("torch 2.11.0, 2.12.0"),
            "{}",
            findings[0].problem
        );
    }
}
