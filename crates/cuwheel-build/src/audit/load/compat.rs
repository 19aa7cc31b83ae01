//! The backward-compatibility table and the audit's findings: the wheel
//! checked ([`super::check`]) against each torch release, what is missing
//! where, and one finding per member and set of claimed releases that fail
//! alike.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{LoadCheck, MissingVersion, Provider, Unresolved, WheelObject, check, is_torch_cxx};
use crate::audit::loader::Resolution;

/// How many unresolved symbols of one member one message lists.
const LISTED: usize = 5;

/// A problem as first reported, and the releases it fails with.
type FailsWith<'a, T> = (&'a T, Vec<&'a str>);

/// One member's problem, as the audit reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadFinding {
    pub member: String,
    pub problem: String,
    pub fix: String,
}

/// The findings of the releases a wheel claims: one per member and set of
/// releases that fail alike, each naming the symbols (demangled), the
/// libraries they were expected from, and the torch releases.
pub fn findings(rows: &[ReleaseVerdict], claimed: &dyn Fn(&str) -> bool) -> Vec<LoadFinding> {
    let every: Vec<&str> = rows.iter().map(|r| r.torch.as_str()).collect();
    let claimed_rows: Vec<&ReleaseVerdict> = rows.iter().filter(|r| claimed(&r.torch)).collect();
    // (member, symbol, version) -> the first report of it and the releases it fails with
    let mut symbols: BTreeMap<(&str, &str, Option<&str>), FailsWith<'_, Unresolved>> =
        BTreeMap::new();
    let mut versions: BTreeMap<(&str, &str, &str), FailsWith<'_, MissingVersion>> = BTreeMap::new();
    for row in &claimed_rows {
        for u in &row.check.unresolved {
            let key = (u.member.as_str(), u.symbol.as_str(), u.version.as_deref());
            symbols
                .entry(key)
                .or_insert((u, Vec::new()))
                .1
                .push(&row.torch);
        }
        for m in &row.check.missing_versions {
            let key = (m.member.as_str(), m.file.as_str(), m.version.as_str());
            versions
                .entry(key)
                .or_insert((m, Vec::new()))
                .1
                .push(&row.torch);
        }
    }
    let against = |releases: &[&str]| -> String {
        if releases.len() > 1 && releases == every.as_slice() {
            "any torch release checked".to_string()
        } else {
            format!("torch {}", releases.join(", "))
        }
    };
    let mut grouped: BTreeMap<(&str, Vec<&str>), Vec<&Unresolved>> = BTreeMap::new();
    for ((member, _, _), (u, releases)) in &symbols {
        grouped
            .entry((member, releases.clone()))
            .or_default()
            .push(u);
    }
    let mut out = Vec::new();
    for ((member, releases), unresolved) in grouped {
        let listed: Vec<String> = unresolved
            .iter()
            .take(LISTED)
            .map(|u| u.describe())
            .collect();
        let more = unresolved.len().saturating_sub(LISTED);
        let against = against(&releases);
        out.push(LoadFinding {
            member: member.to_string(),
            problem: format!(
                "would not load with {against}: {}{}; importing it fails with `undefined \
                 symbol: {}`",
                listed.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                },
                unresolved[0].symbol
            ),
            fix: if unresolved.iter().any(|u| is_torch_cxx(&u.symbol)) {
                format!(
                    "build it against the torch it claims, or, for one binary across torch \
                     releases, use only torch's stable ABI (torch/csrc/stable, \
                     torch/headeronly: the `aoti_torch_*`/`torch_*` C shim, no `at::`, \
                     `c10::` or `torch::` C++ symbols); else stop claiming {against} in its \
                     Requires-Dist"
                )
            } else {
                format!(
                    "link the library that defines it (on the link line, so that it becomes a \
                     DT_NEEDED entry), build against an older toolchain or sysroot when it is \
                     a newer glibc/libstdc++ symbol, or stop claiming {against}"
                )
            },
        });
    }
    for ((member, file, version), (m, releases)) in versions {
        out.push(LoadFinding {
            member: member.to_string(),
            problem: format!(
                "would not load with {}: it needs version {version} of {file}, which {} does \
                 not define; importing it fails with `version `{version}' not found`",
                against(&releases),
                m.origin
            ),
            fix: format!(
                "build against a {file} no newer than {}'s (an older toolchain or sysroot), or \
                 raise the wheel's baseline",
                m.origin
            ),
        });
    }
    out
}

/// One row of the backward-compatibility table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseVerdict {
    /// The release's label, e.g. `2.11.0`.
    pub torch: String,
    pub loads: bool,
    /// The first missing symbol (by member, then symbol), when it does not load.
    pub first_missing: Option<Unresolved>,
    /// How many symbols are missing in all.
    pub missing: usize,
    /// The full verdict.
    #[serde(skip)]
    pub check: LoadCheck,
}

/// The wheel loaded against each torch release in `releases` (labelled by
/// version, in the order given), with `base` (CUDA runtime, baseline
/// system) beside it.
pub fn compatibility(
    objects: &[WheelObject<'_>],
    resolved: &BTreeMap<(String, String), Resolution>,
    base: &[Provider<'_>],
    releases: &[Provider<'_>],
) -> Vec<ReleaseVerdict> {
    let mut rows: Vec<ReleaseVerdict> = releases
        .iter()
        .map(|release| {
            // torch's own copies (its libgomp) come before the system's.
            let providers: Vec<Provider<'_>> = std::iter::once(*release)
                .chain(base.iter().copied())
                .collect();
            let check = check(objects, resolved, &providers);
            ReleaseVerdict {
                torch: release.origin.to_string(),
                loads: check.loads(),
                first_missing: check.unresolved.first().cloned(),
                missing: check.unresolved.len() + check.missing_versions.len(),
                check,
            }
        })
        .collect();
    // Name where each missing symbol is defined: by a library of the same
    // release that is not loaded, else by another release.
    for (i, row) in rows.iter_mut().enumerate() {
        let order = std::iter::once(&releases[i]).chain(releases);
        for u in row
            .check
            .unresolved
            .iter_mut()
            .chain(&mut row.first_missing)
        {
            let found = order.clone().find_map(|r| {
                r.table
                    .libraries
                    .iter()
                    .find(|l| l.defines(&u.symbol, u.version.as_deref()))
                    .map(|l| (l.soname.clone(), r.origin))
            });
            if let Some((soname, origin)) = found {
                // the library it was expected from, when the member needs it
                if u.expected_from.contains(&soname) {
                    u.expected_from = vec![soname.clone()];
                }
                u.elsewhere = Some(format!("{soname} of torch {origin}"));
            }
        }
    }
    rows
}

/// The table in one line: `loads with torch 2.11.0, 2.14.1; not with 2.9.1`
/// ([`compatibility_text`] gives each one's first missing symbol).
pub fn compatibility_summary(verdicts: &[ReleaseVerdict]) -> String {
    let (loads, not): (Vec<&ReleaseVerdict>, Vec<&ReleaseVerdict>) =
        verdicts.iter().partition(|v| v.loads);
    let list = |v: &[&ReleaseVerdict]| -> String {
        let names: Vec<&str> = v.iter().map(|r| r.torch.as_str()).collect();
        names.join(", ")
    };
    match (loads.is_empty(), not.is_empty()) {
        (false, true) => format!("loads with torch {}", list(&loads)),
        (true, _) => format!("loads with no torch release given; not with {}", list(&not)),
        (false, false) => format!("loads with torch {}; not with {}", list(&loads), list(&not)),
    }
}

/// The first problem of a release that does not load.
fn first_missing(v: &ReleaseVerdict) -> String {
    match (&v.first_missing, v.check.missing_versions.first()) {
        (Some(u), _) => u.describe(),
        (None, Some(m)) => format!("{} needs {} of {}", m.member, m.version, m.file),
        (None, None) => "?".to_string(),
    }
}

/// The table as text: one line per release.
pub fn compatibility_text(verdicts: &[ReleaseVerdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let line = if v.loads {
            format!("  torch {}: loads\n", v.torch)
        } else {
            format!(
                "  torch {}: does not load ({} missing; first: {})\n",
                v.torch,
                v.missing,
                first_missing(v)
            )
        };
        out.push_str(&line);
    }
    out
}
