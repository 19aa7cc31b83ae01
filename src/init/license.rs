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

use spdx::detection::{LicenseType, Store, TextData};

/// A file whose best match scores lower than this is not identified.
const CONFIDENCE: f32 = 0.8;

/// Two licenses whose scores are closer than this are a near tie: which
/// one the file is, is reported, not decided.
const NEAR_TIE: f32 = 0.01;

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
    /// Several licenses one after another (a file that bundles them), in
    /// the order the file has them.
    Several(Vec<String>),
    /// Two licenses match almost equally (within [`NEAR_TIE`]): the best
    /// and the runner-up, with their scores.
    NearTie((String, f32), (String, f32)),
    /// None above [`CONFIDENCE`]; the best guess and its score, if any.
    Unknown(Option<(String, f32)>),
}

/// The SPDX license list's texts, loaded once (a fraction of a second),
/// with [`terms_only`] variants added.
fn store() -> Option<&'static Store> {
    static STORE: OnceLock<Option<Store>> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let mut store = Store::load_inline().ok()?;
            terms_only(&mut store);
            Some(store)
        })
        .as_ref()
}

/// Adds, for each license whose text goes on after "END OF TERMS AND
/// CONDITIONS" (an appendix on how to apply it: Apache-2.0, the GPLs), its
/// text up to that line as an alternate: many projects ship the terms
/// alone, which otherwise match a license derived from the same terms
/// better (Apache-2.0's terms alone scored 98% as Pixar).
fn terms_only(store: &mut Store) {
    let mut variants = Vec::new();
    for (name, entry) in store.iter() {
        let lines = entry.original.lines();
        let end = lines.iter().position(|line| {
            line.to_ascii_lowercase()
                .contains("end of terms and conditions")
        });
        if let Some(end) = end.filter(|end| end + 1 < lines.len()) {
            variants.push((name.clone(), entry.original.with_view(0, end + 1)));
        }
    }
    for (name, data) in variants {
        let _ = store.add_variant(&name, LicenseType::Alternate, data);
    }
}

/// Each license's best score (over its text and alternates) for `data`,
/// the two highest, best first.
fn top_two<'s>(store: &'s Store, data: &TextData) -> Vec<(&'s str, f32)> {
    let mut ranked: Vec<(&str, f32)> = store
        .iter()
        .map(|(name, entry)| {
            let score = std::iter::once(&entry.original)
                .chain(&entry.alternates)
                .map(|text| text.match_score(data))
                .filter(|score| !score.is_nan())
                .fold(0.0, f32::max);
            (name.as_str(), score)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(2);
    ranked
}

/// The shortest run of lines scanned for a license of its own (in
/// normalized characters; the shortest SPDX texts, 0BSD and ISC, are about
/// twice as long), so a copyright line left over is not matched.
const SHORTEST: usize = 300;

/// The licenses `data` holds, in the file's order, with their scores: the
/// detector's elimination scan (the best match's lines found, then the runs
/// of lines before and after it scanned again). The crate's own `Scanner`
/// blanks the lines found and then fails to bound a second match after
/// them (MIT's text before Apache-2.0's was never found), so the runs are
/// scanned as views of their own.
fn contained<'s>(store: &'s Store, data: &TextData) -> Vec<(&'s str, f32)> {
    let mut found: Vec<(usize, &str, f32)> = Vec::new();
    let mut runs = vec![data.lines_view()];
    while let Some((start, end)) = runs.pop() {
        let view = data.with_view(start, end);
        if view.lines().iter().map(String::len).sum::<usize>() < SHORTEST || found.len() >= 10 {
            continue;
        }
        let best = store.analyze(&view);
        let (bounded, score) = view.optimize_bounds(best.data);
        let (from, to) = bounded.lines_view();
        if score < CONFIDENCE || from >= to {
            continue;
        }
        found.push((from, best.name, score));
        runs.push((start, from));
        runs.push((to, end));
    }
    found.sort_by_key(|(from, _, _)| *from);
    found
        .into_iter()
        .map(|(_, name, score)| (name, score))
        .collect()
}

/// Identifies a license file's text: every license it holds
/// ([`contained`]), and for one, whether another matches it almost as
/// well.
pub fn identify(text: &str) -> Identified {
    let Some(store) = store() else {
        return Identified::Unknown(None);
    };
    let data = TextData::new(text);
    let found = contained(store, &data);
    let mut names: Vec<String> = Vec::new();
    for (name, _) in &found {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    if names.len() > 1 {
        return Identified::Several(names);
    }
    let ranked = top_two(store, &data);
    let Some(&(best, score)) = ranked.first() else {
        return Identified::Unknown(None);
    };
    if score < CONFIDENCE {
        // One license among other words (a preamble, a header).
        if let [name] = names.as_slice() {
            let score = found.first().map_or(0.0, |(_, score)| *score);
            return Identified::License(name.clone(), score);
        }
        return Identified::Unknown((score > 0.0).then(|| (best.to_string(), score)));
    }
    if let Some(&(second, second_score)) = ranked.get(1) {
        if score - second_score < NEAR_TIE {
            return Identified::NearTie(
                (best.to_string(), score),
                (second.to_string(), second_score),
            );
        }
    }
    Identified::License(best.to_string(), score)
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
/// `refused` names the license files that were not read (the caller
/// reports why), so the report never says there is none.
pub fn decide(
    given: Option<&str>,
    files: &[LicenseFile<'_>],
    refused: &[&str],
    classifiers: &[String],
) -> Decision {
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
                "{} holds several licenses' texts ({}); whether they apply together (AND) or as \
                 a choice (OR) cannot be inferred",
                file.name,
                ids.join(", ")
            )),
            Identified::NearTie((a, a_score), (b, b_score)) => unknown.push(format!(
                "{} matches {a} ({:.1}%) and {b} ({:.1}%) almost equally, so neither was chosen",
                file.name,
                a_score * 100.0,
                b_score * 100.0
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
    if files.is_empty() && refused.is_empty() {
        why.push("there is no LICENSE, LICENCE or COPYING file at the root".into());
    } else if files.is_empty() {
        why.push(format!(
            "{} could not be read (see project.license-files)",
            refused.join(", ")
        ));
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

    fn fixture(id: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/licenses/");
        std::fs::read_to_string(format!("{dir}{id}")).unwrap()
    }

    /// Apache-2.0's terms without the appendix on how to apply them, as
    /// many projects ship them.
    pub(crate) fn apache_terms_only() -> String {
        let full = fixture("Apache-2.0");
        let end = full.find("END OF TERMS AND CONDITIONS").unwrap();
        full[..end + "END OF TERMS AND CONDITIONS".len()].to_string() + "\n"
    }

    #[test]
    fn every_license_of_a_file_is_found_in_its_order() {
        let both = format!("{}\n\n{}", fixture("MIT"), fixture("Apache-2.0"));
        assert_eq!(
            identify(&both),
            Identified::Several(vec!["MIT".into(), "Apache-2.0".into()])
        );
        let both = format!("{}\n\n{}", fixture("Apache-2.0"), fixture("BSD-3-Clause"));
        assert_eq!(
            identify(&both),
            Identified::Several(vec!["Apache-2.0".into(), "BSD-3-Clause".into()])
        );
        let decision = decide(
            None,
            &[LicenseFile {
                name: "LICENSE",
                text: &format!("{}\n\n{}", fixture("MIT"), fixture("Apache-2.0")),
            }],
            &[],
            &[],
        );
        assert_eq!(decision.expression, None);
        assert_eq!(
            decision.findings[0].1,
            "no license could be inferred: LICENSE holds several licenses' texts (MIT, \
             Apache-2.0); whether they apply together (AND) or as a choice (OR) cannot be \
             inferred; no License classifier names one"
        );
    }

    #[test]
    fn apache_terms_without_the_appendix_are_apache() {
        match identify(&apache_terms_only()) {
            Identified::License(id, score) => {
                assert_eq!(id, "Apache-2.0");
                assert!(score > 0.99, "{score}");
            }
            other => panic!("{other:?}"),
        }
        for id in ["MIT", "BSD-3-Clause", "Apache-2.0"] {
            assert!(
                matches!(identify(&fixture(id)), Identified::License(ref found, _) if found == id),
                "{id}: {:?}",
                identify(&fixture(id))
            );
        }
    }

    #[test]
    fn a_near_tie_is_reported_not_decided() {
        // MIT with its attribution condition cut after five words is as
        // near MIT (94.5%) as MIT-0 (94.8%), which has no such condition.
        let mit = fixture("MIT");
        let cut = mit.find("The above copyright notice").unwrap();
        let end = mit.find("THE SOFTWARE IS PROVIDED").unwrap();
        let text = format!(
            "{}The above copyright notice and\n\n{}",
            &mit[..cut],
            &mit[end..]
        );
        let found = identify(&text);
        let Identified::NearTie((a, a_score), (b, b_score)) = found else {
            panic!("{found:?}");
        };
        assert!((a_score - b_score).abs() < NEAR_TIE, "{a} {b}");
        let decision = decide(
            None,
            &[LicenseFile {
                name: "LICENSE",
                text: &text,
            }],
            &[],
            &[],
        );
        assert_eq!(decision.expression, None);
        assert_eq!((a.as_str(), b.as_str()), ("MIT-0", "MIT"));
        assert_eq!(
            decision.findings[0].1,
            "no license could be inferred: LICENSE matches MIT-0 (94.8%) and MIT (94.5%) almost \
             equally, so neither was chosen; no License classifier names one"
        );
    }
}
