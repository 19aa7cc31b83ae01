//! The load check as the audit runs it: one call from a check module.
//!
//! In: the wheel's ELF members and their DT_NEEDED resolutions (an
//! [`AuditContext`] has both) and the [`LoadInputs`]: the symbol tables of
//! every locked torch release, in release order, which of them the wheel
//! claims, the tables present beside any torch (CUDA runtime, baseline
//! system), and whether the wheel claims torch's stable ABI. Out: a
//! [`LoadVerdict`]: the backward-compatibility table, the findings (a
//! claimed release that would not load it, a stable-ABI wheel binding to
//! torch outside the stable shim) and the notes (what could not be judged).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::compat::{LoadFinding, ReleaseVerdict, compatibility, compatibility_text, findings};
use super::stable::{self, NonStable};
use super::{Linker, Provider, WheelObject};
use crate::audit::context::AuditContext;
use crate::audit::loader::Resolution;
use crate::audit::symbols::SymbolTable;

/// A symbol table and its label (`2.11.0`, `CUDA 13.0 runtime`).
#[derive(Debug, Clone)]
pub struct Labelled {
    pub label: String,
    pub table: SymbolTable,
}

/// What the load check needs beyond the wheel.
#[derive(Debug, Clone, Default)]
pub struct LoadInputs {
    /// Every locked torch release, labelled by version, oldest first.
    pub torch: Vec<Labelled>,
    /// The releases the wheel claims (its pinned torch; every release of a
    /// stable-ABI wheel's range); the others only fill the table.
    pub claimed: BTreeSet<String>,
    /// Present beside every release: the CUDA runtime, the baseline system.
    pub base: Vec<Labelled>,
    /// The wheel claims torch's stable ABI.
    pub stable_abi: bool,
}

/// The load check's verdict on one wheel.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadVerdict {
    /// One row per torch release: loads, or the first missing symbol.
    pub releases: Vec<ReleaseVerdict>,
    pub findings: Vec<LoadFinding>,
    pub notes: Vec<String>,
}

impl LoadVerdict {
    /// The backward-compatibility table as text lines.
    pub fn table_text(&self) -> String {
        compatibility_text(&self.releases)
    }
}

/// The load check of the wheel the audit context holds.
pub fn judge_context(ctx: &AuditContext<'_>, inputs: &LoadInputs) -> LoadVerdict {
    let objects: Vec<WheelObject<'_>> = ctx
        .elfs
        .iter()
        .map(|e| WheelObject {
            member: e.name,
            facts: e.facts,
        })
        .collect();
    judge(&objects, &ctx.resolved, inputs)
}

/// The load check of `objects`. Symbol tables of another architecture
/// than the objects' judge nothing: the verdict is then one finding naming
/// them.
pub fn judge(
    objects: &[WheelObject<'_>],
    resolved: &BTreeMap<(String, String), Resolution>,
    inputs: &LoadInputs,
) -> LoadVerdict {
    if let Some(finding) = foreign_tables(objects, inputs) {
        return LoadVerdict {
            findings: vec![finding],
            ..LoadVerdict::default()
        };
    }
    let base: Vec<Provider<'_>> = inputs.base.iter().map(provider).collect();
    let releases: Vec<Provider<'_>> = inputs.torch.iter().map(provider).collect();
    let claimed = |torch: &str| inputs.claimed.contains(torch);
    let rows = compatibility(objects, resolved, &base, &releases);
    let mut verdict = LoadVerdict {
        findings: findings(&rows, &claimed),
        ..LoadVerdict::default()
    };

    if inputs.stable_abi {
        let per_release: Vec<(&str, Vec<NonStable>)> = releases
            .iter()
            .filter(|r| claimed(r.origin))
            .map(|release| {
                let providers: Vec<Provider<'_>> = std::iter::once(*release)
                    .chain(base.iter().copied())
                    .collect();
                let linker = Linker::new(objects, resolved, &providers);
                (
                    release.origin,
                    stable::non_stable_references(objects, &linker, release.origin),
                )
            })
            .collect();
        verdict.findings.extend(stable::findings(&per_release));
    }

    let mut unchecked: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut unverified: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for row in rows.iter().filter(|r| claimed(&r.torch)) {
        for soname in &row.check.unchecked_libraries {
            unchecked.entry(soname).or_default().insert(&row.torch);
        }
        for u in &row.check.unverified {
            let key = format!("{}: {}", u.member, u.describe());
            unverified.entry(key).or_default().insert(&row.torch);
        }
    }
    if !unchecked.is_empty() {
        let listed: Vec<&str> = unchecked.keys().copied().collect();
        verdict.notes.push(format!(
            "no symbol table for {}, loaded by torch's libraries: symbols only they could \
             define were not checked",
            listed.join(", ")
        ));
    }
    for (what, releases) in unverified {
        let releases: Vec<&str> = releases.into_iter().collect();
        verdict.notes.push(format!(
            "not judged (a library it needs has no symbol table) with torch {}: {what}",
            releases.join(", ")
        ));
    }
    if let Some(row) = rows.first() {
        if row.check.interpreter_symbols > 0 {
            verdict.notes.push(format!(
                "{} references to the Python C API are left to the interpreter (the abi3 check \
                 judges an abi3 wheel's)",
                row.check.interpreter_symbols
            ));
        }
    }
    verdict.releases = rows;
    verdict
}

/// The finding when some table is for another architecture than the first
/// object's (objects of mixed architectures are the `elf` check's).
fn foreign_tables(objects: &[WheelObject<'_>], inputs: &LoadInputs) -> Option<LoadFinding> {
    let arch = objects.first()?.facts.arch;
    let foreign: Vec<String> = inputs
        .torch
        .iter()
        .chain(&inputs.base)
        .filter_map(|t| {
            let table = t.table.arch?;
            (table != arch).then(|| format!("{} ({table})", t.label))
        })
        .collect();
    (!foreign.is_empty()).then(|| LoadFinding {
        member: String::new(),
        problem: format!(
            "the load check was given symbol tables for another architecture than the ELF \
             files' {arch}: {}",
            foreign.join(", ")
        ),
        fix: format!(
            "extract the tables from the {arch} builds of torch, the CUDA runtime and the \
             baseline sysroot (`cuwheel symbols`)"
        ),
    })
}

fn provider(labelled: &Labelled) -> Provider<'_> {
    Provider {
        origin: &labelled.label,
        table: &labelled.table,
    }
}
