//! The project's license as PEP 639 states it: one SPDX expression.
//!
//! In: the `license` setup() (or setup.cfg) gives, the texts of the
//! root's license files, and the `License ::` classifiers. Out: a
//! [`Decision`] — the expression to write (or none), whether the `License
//! ::` classifiers are to be dropped (PEP 639 allows none beside an
//! expression), and what to report: a disagreement between the file and a
//! classifier, or a license that could not be inferred.
//!
//! A license file's text is identified by the `spdx` crate's detector (the
//! askalono matcher over the SPDX license list's texts, embedded in the
//! crate), never by matching strings here; an expression is checked with
//! the same crate's parser against the SPDX list. Classifiers are a closed
//! vocabulary, so [`classifier_ids`] maps each to the SPDX ids it can mean.

use std::sync::OnceLock;

use spdx::detection::scan::Scanner;
use spdx::detection::{Store, TextData};

/// A file whose best match scores lower than this is not identified.
const CONFIDENCE: f32 = 0.8;

/// What init writes and reports about the license.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Decision {
    /// `project.license`.
    pub expression: Option<String>,
    /// Where it came from, for the report: `LICENSE (MIT, 99% match)`.
    pub source: Option<String>,
    /// `(key, problem, fix)` for the report's "not inferred" list.
    pub findings: Vec<(String, String, String)>,
}

/// One license file's text, and the name it has at the root.
pub struct LicenseFile<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// What a file's text was identified as.
#[derive(Debug, Clone, PartialEq)]
pub enum Identified {
    /// One SPDX license, with the detector's score.
    License(String, f32),
    /// Several licenses one after another (a file that bundles them).
    Several(Vec<String>),
    /// None above [`CONFIDENCE`]; the best guess and its score, if any.
    Unknown(Option<(String, f32)>),
}

/// The SPDX license list's texts, loaded once (a fraction of a second).
fn store() -> Option<&'static Store> {
    static STORE: OnceLock<Option<Store>> = OnceLock::new();
    STORE.get_or_init(|| Store::load_inline().ok()).as_ref()
}

/// Identifies a license file's text.
pub fn identify(text: &str) -> Identified {
    let Some(store) = store() else {
        return Identified::Unknown(None);
    };
    let data = TextData::new(text);
    let best = store.analyze(&data);
    if best.score >= CONFIDENCE {
        return Identified::License(best.name.to_string(), best.score);
    }
    let scanner = Scanner::new(store)
        .confidence_threshold(CONFIDENCE)
        .optimize(true);
    let scanned = scanner.scan(&data);
    if let Some(license) = scanned.license {
        return Identified::License(license.name.to_string(), scanned.score);
    }
    let mut names: Vec<String> = Vec::new();
    for contained in &scanned.containing {
        if !names.iter().any(|n| n == contained.license.name) {
            names.push(contained.license.name.to_string());
        }
    }
    match names.len() {
        0 => Identified::Unknown((best.score > 0.0).then(|| (best.name.to_string(), best.score))),
        1 => Identified::License(names.remove(0), scanned.score),
        _ => Identified::Several(names),
    }
}

/// Whether `text` is an SPDX expression of licenses on the SPDX list.
pub fn is_spdx_expression(text: &str) -> bool {
    spdx::Expression::parse(text).is_ok()
}

/// The trove classifiers' License section, by its last part → the SPDX
/// ids each can mean.
pub const CLASSIFIERS: &[(&str, &[&str])] = &[
    ("MIT License", &["MIT"]),
    ("MIT No Attribution License (MIT-0)", &["MIT-0"]),
    (
        "BSD License",
        &[
            "BSD-2-Clause",
            "BSD-3-Clause",
            "BSD-3-Clause-Clear",
            "BSD-4-Clause",
            "0BSD",
        ],
    ),
    (
        "Apache Software License",
        &["Apache-2.0", "Apache-1.1", "Apache-1.0"],
    ),
    ("ISC License (ISCL)", &["ISC"]),
    ("Mozilla Public License 2.0 (MPL 2.0)", &["MPL-2.0"]),
    ("Mozilla Public License 1.1 (MPL 1.1)", &["MPL-1.1"]),
    ("The Unlicense (Unlicense)", &["Unlicense"]),
    ("Boost Software License 1.0 (BSL-1.0)", &["BSL-1.0"]),
    ("zlib/libpng License", &["Zlib"]),
    ("Python Software Foundation License", &["PSF-2.0"]),
    (
        "Academic Free License (AFL)",
        &["AFL-3.0", "AFL-2.1", "AFL-2.0", "AFL-1.2", "AFL-1.1"],
    ),
    ("Artistic License", &["Artistic-2.0", "Artistic-1.0"]),
    ("Eclipse Public License 2.0 (EPL-2.0)", &["EPL-2.0"]),
    ("Eclipse Public License 1.0 (EPL-1.0)", &["EPL-1.0"]),
    (
        "GNU General Public License v2 (GPLv2)",
        &["GPL-2.0-only", "GPL-2.0-or-later"],
    ),
    (
        "GNU General Public License v2 or later (GPLv2+)",
        &["GPL-2.0-or-later"],
    ),
    (
        "GNU General Public License v3 (GPLv3)",
        &["GPL-3.0-only", "GPL-3.0-or-later"],
    ),
    (
        "GNU General Public License v3 or later (GPLv3+)",
        &["GPL-3.0-or-later"],
    ),
    (
        "GNU Lesser General Public License v2 (LGPLv2)",
        &[
            "LGPL-2.0-only",
            "LGPL-2.1-only",
            "LGPL-2.0-or-later",
            "LGPL-2.1-or-later",
        ],
    ),
    (
        "GNU Lesser General Public License v2 or later (LGPLv2+)",
        &["LGPL-2.0-or-later", "LGPL-2.1-or-later"],
    ),
    (
        "GNU Lesser General Public License v3 (LGPLv3)",
        &["LGPL-3.0-only", "LGPL-3.0-or-later"],
    ),
    (
        "GNU Lesser General Public License v3 or later (LGPLv3+)",
        &["LGPL-3.0-or-later"],
    ),
    (
        "GNU Affero General Public License v3",
        &["AGPL-3.0-only", "AGPL-3.0-or-later"],
    ),
    (
        "GNU Affero General Public License v3 or later (AGPLv3+)",
        &["AGPL-3.0-or-later"],
    ),
    (
        "CC0 1.0 Universal (CC0 1.0) Public Domain Dedication",
        &["CC0-1.0"],
    ),
    ("Universal Permissive License (UPL)", &["UPL-1.0"]),
];

/// The SPDX ids a `License ::` classifier can mean; `None` for a
/// classifier that names no license (`OSI Approved` alone, `Other/Proprietary`).
pub fn classifier_ids(classifier: &str) -> Option<&'static [&'static str]> {
    let last = classifier.rsplit("::").next()?.trim();
    CLASSIFIERS
        .iter()
        .find(|(name, _)| *name == last)
        .map(|(_, ids)| *ids)
}

/// Whether a `License ::` classifier is one (PEP 639 forbids them beside
/// an expression).
pub fn is_license_classifier(classifier: &str) -> bool {
    classifier.starts_with("License ::")
}

/// Decides the expression: the given one when it is SPDX; else the one the
/// license files are identified as; else the classifier's when it names
/// exactly one license. Each file's identification is checked against the
/// classifiers.
pub fn decide(given: Option<&str>, files: &[LicenseFile<'_>], classifiers: &[String]) -> Decision {
    let mut decision = Decision::default();
    let key = "project.license".to_string();
    let license_classifiers: Vec<&String> = classifiers
        .iter()
        .filter(|c| is_license_classifier(c))
        .collect();
    if let Some(given) = given {
        if is_spdx_expression(given) {
            decision.expression = Some(given.to_string());
            decision.source = Some("setup()'s license".into());
            return decision;
        }
        decision.findings.push((
            key.clone(),
            format!("setup()'s license `{given}` is not an SPDX expression; it was not written"),
            FIX.to_string(),
        ));
    }
    // Each file: its identification.
    let mut found: Vec<(String, String)> = Vec::new(); // (file, id)
    let mut unknown: Vec<String> = Vec::new();
    for file in files {
        match identify(file.text) {
            Identified::License(id, score) => {
                found.push((file.name.to_string(), id.clone()));
                if decision.source.is_none() {
                    decision.source =
                        Some(format!("{} ({id}, {:.0}% match)", file.name, score * 100.0));
                }
            }
            Identified::Several(ids) => unknown.push(format!(
                "{} holds several licenses ({})",
                file.name,
                ids.join(", ")
            )),
            Identified::Unknown(best) => unknown.push(match best {
                Some((id, score)) => format!(
                    "{} matches no SPDX license text (closest: {id}, {:.0}%)",
                    file.name,
                    score * 100.0
                ),
                None => format!("{} matches no SPDX license text", file.name),
            }),
        }
    }
    let mut ids: Vec<&str> = found.iter().map(|(_, id)| id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
        [id] => {
            decision.expression = Some(id.to_string());
            for classifier in &license_classifiers {
                if let Some(allowed) =
                    classifier_ids(classifier).filter(|allowed| !allowed.contains(id))
                {
                    let (file, _) = &found[0];
                    decision.findings.push((
                        key.clone(),
                        format!(
                            "{file} is {id}, but the classifier `{classifier}` says {}; the \
                             file's {id} was written and the classifier dropped",
                            allowed.join(" or ")
                        ),
                        format!(
                            "check which is right: if {file} is, nothing to do; if the \
                             classifier is, the project ships the wrong {file}: replace it and \
                             write that license's SPDX id as project.license"
                        ),
                    ));
                }
            }
            return decision;
        }
        [] => {}
        several => {
            decision.source = None;
            let listed: Vec<String> = found.iter().map(|(f, id)| format!("{f}: {id}")).collect();
            decision.findings.push((
                key,
                format!(
                    "the license files name {} licenses ({}); whether they apply together \
                     (AND) or as a choice (OR) cannot be inferred",
                    several.len(),
                    listed.join(", ")
                ),
                "write license = \"A AND B\" when all apply, \"A OR B\" when the user may \
                 choose (PEP 639)"
                    .to_string(),
            ));
            return decision;
        }
    }
    // No file identified: a classifier naming exactly one license.
    let single: Vec<(&String, &str)> = license_classifiers
        .iter()
        .filter_map(|c| match classifier_ids(c) {
            Some([one]) => Some((*c, *one)),
            _ => None,
        })
        .collect();
    if let ([(classifier, id)], 1) = (single.as_slice(), license_classifiers.len()) {
        decision.expression = Some(id.to_string());
        decision.source = Some(format!("the classifier `{classifier}`"));
        return decision;
    }
    let mut why: Vec<String> = unknown;
    if files.is_empty() {
        why.push("there is no LICENSE, LICENCE or COPYING file at the root".into());
    }
    match license_classifiers.as_slice() {
        [] => why.push("no License classifier names one".into()),
        some => why.push(format!(
            "the classifier{} {} name{} no single SPDX license",
            if some.len() > 1 { "s" } else { "" },
            some.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if some.len() > 1 { "" } else { "s" },
        )),
    }
    decision.findings.push((
        key,
        format!("no license could be inferred: {}", why.join("; ")),
        FIX.to_string(),
    ));
    decision
}

/// The fix the report gives for every license finding.
pub const FIX: &str = "write license = \"<SPDX expression>\" in [project] (PEP 639), like \
                       \"MIT\" or \"BSD-3-Clause\"; init drops the License :: classifiers beside it";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_are_checked_against_the_spdx_list() {
        assert!(is_spdx_expression("MIT"));
        assert!(is_spdx_expression("MIT OR Apache-2.0"));
        assert!(is_spdx_expression(
            "(GPL-2.0-only WITH Classpath-exception-2.0) AND MIT"
        ));
        assert!(!is_spdx_expression("BSD License"));
        assert!(!is_spdx_expression("BSD"));
        assert!(!is_spdx_expression("MIT OR"));
        assert!(!is_spdx_expression(""));
    }

    #[test]
    fn classifiers_map_to_the_ids_they_can_mean() {
        assert_eq!(
            classifier_ids("License :: OSI Approved :: MIT License"),
            Some(&["MIT"][..])
        );
        assert!(
            classifier_ids("License :: OSI Approved :: BSD License")
                .unwrap()
                .contains(&"BSD-3-Clause")
        );
        assert_eq!(classifier_ids("License :: OSI Approved"), None);
        // Every id in the table is on the SPDX list.
        for (_, ids) in CLASSIFIERS {
            for id in *ids {
                assert!(spdx::license_id(id).is_some(), "{id}");
            }
        }
    }
}
