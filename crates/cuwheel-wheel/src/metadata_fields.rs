//! The METADATA fields installers parse, checked as they check them.
//!
//! In: a [`CoreMetadata`] read from a wheel (Name and Version were checked
//! when it was read). Out: a [`FieldProblem`] for each `Requires-Dist`
//! that is not a PEP 508 requirement (pip refuses the whole wheel: "invalid
//! metadata"), a `Requires-Python` that is not a PEP 440 specifier set (pip
//! warns and drops the constraint; PyPI refuses it), and a `Provides-Extra`
//! that is not a valid name (pip installs the wheel, but no requirement can
//! name the extra, and PyPI refuses it), a `License-Expression` that is not
//! an SPDX expression of listed identifiers (the `spdx` crate's strict
//! parse; deprecated identifiers pass, as PyPI takes them); and, for the PyPI variant, each
//! direct reference (`name @ URL`), which PyPI refuses. Each problem quotes
//! the field and its value as METADATA has them, and says who refuses it.
//! An extra written unnormalised (`Test_Suite`) is valid: installers
//! compare extras normalised (PEP 685).

use super::metadata::CoreMetadata;
use super::pep503::ProjectName;
use super::pep508::Requirement;
use super::specifier::parse_specifiers;

/// One field value installers (or PyPI) refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The METADATA field: `Requires-Dist`.
    pub field: &'static str,
    /// Its value as written.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
    /// How to write it instead.
    pub fix: &'static str,
}

impl std::fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "METADATA {} `{}`: {}",
            self.field, self.value, self.reason
        )
    }
}

/// The fields of `metadata` an installer would refuse.
pub fn installer_problems(metadata: &CoreMetadata) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    for requirement in &metadata.requires_dist {
        if let Err(error) = Requirement::parse(requirement) {
            problems.push(FieldProblem {
                field: "Requires-Dist",
                value: requirement.clone(),
                reason: format!(
                    "{} (at byte {}); pip refuses to install the wheel",
                    error.reason, error.position
                ),
                fix: "write the requirement in [project] as PEP 508 says (a space between a URL \
                      and its `;`, an operator such as >=, `.*` only after == or !=), and \
                      rebuild",
            });
        }
    }
    // No let chain: the driver is built by Nix with Rust 1.85.
    let bad_python = metadata
        .requires_python
        .as_ref()
        .and_then(|python| Some((python, parse_specifiers(python).err()?)));
    if let Some((requires_python, error)) = bad_python {
        problems.push(FieldProblem {
            field: "Requires-Python",
            value: requires_python.clone(),
            reason: format!(
                "{}; pip ignores it, so the wheel installs on any Python, and PyPI refuses it",
                error.problem
            ),
            fix: "write requires-python in [project] as PEP 440 specifiers, like \">=3.9\", \
                  and rebuild",
        });
    }
    for extra in &metadata.provides_extra {
        if let Err(error) = ProjectName::new(extra) {
            problems.push(FieldProblem {
                field: "Provides-Extra",
                value: extra.clone(),
                reason: format!(
                    "not a valid extra name ({}); no installer can request it and PyPI \
                     refuses it",
                    error.reason
                ),
                fix: "name the extra in [project.optional-dependencies] with ASCII letters, \
                      digits, `-`, `_` and `.`, and rebuild",
            });
        }
    }
    if let Some(expression) = &metadata.license_expression {
        let mode = spdx::ParseMode {
            allow_deprecated: true,
            ..spdx::ParseMode::STRICT
        };
        if let Err(error) = spdx::Expression::parse_mode(expression, mode) {
            let token = expression.get(error.span.clone()).unwrap_or("");
            problems.push(FieldProblem {
                field: "License-Expression",
                value: expression.clone(),
                reason: format!(
                    "{} (`{token}`, at byte {}); PyPI refuses the upload",
                    error.reason, error.span.start
                ),
                fix: "write project.license as an SPDX expression, like \"MIT OR Apache-2.0\" \
                      (LicenseRef-<name> for a license the SPDX list lacks), and rebuild",
            });
        }
    }
    problems
}

/// The `Requires-Dist` values that are direct references (`name @ URL`),
/// which PyPI refuses in an upload.
pub fn direct_references(metadata: &CoreMetadata) -> Vec<&str> {
    metadata
        .requires_dist
        .iter()
        .filter(|r| Requirement::parse(r).is_ok_and(|r| r.is_direct_reference()))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Version;

    fn metadata(requires: &[&str], python: Option<&str>, extras: &[&str]) -> CoreMetadata {
        let mut m = CoreMetadata::new(
            ProjectName::new("demo").unwrap(),
            Version::parse("0.1.0").unwrap(),
        );
        m.requires_dist = requires.iter().map(|r| r.to_string()).collect();
        m.requires_python = python.map(str::to_string);
        m.provides_extra = extras.iter().map(|e| e.to_string()).collect();
        m
    }

    #[test]
    fn what_installers_refuse_is_quoted_with_its_field() {
        let bad = metadata(
            &[
                "numpy>=1.24",
                "pkg @ git+https://host.invalid/r@abc; extra == \"testing\"",
                "scipy>=1.0.*",
            ],
            Some(">=3.9.*"),
            &["testing", "two words"],
        );
        let shown: Vec<String> = installer_problems(&bad)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(shown.len(), 4, "{shown:#?}");
        assert!(
            shown[0].starts_with(
                "METADATA Requires-Dist `pkg @ git+https://host.invalid/r@abc; extra == \"testing\"`: "
            ) && shown[0].contains("a space before `;`"),
            "{}",
            shown[0]
        );
        assert!(
            shown[1].starts_with("METADATA Requires-Dist `scipy>=1.0.*`"),
            "{}",
            shown[1]
        );
        assert!(
            shown[2].starts_with("METADATA Requires-Python `>=3.9.*`"),
            "{}",
            shown[2]
        );
        assert!(
            shown[3].starts_with("METADATA Provides-Extra `two words`"),
            "{}",
            shown[3]
        );
    }

    #[test]
    fn a_license_expression_pypi_refuses_is_quoted_with_the_token() {
        for (expression, token) in [
            ("MIT OR Apache 2.0", "Apache"),
            ("MIT/Apache-2.0", "/Apache-2.0"),
            ("Proprietary", "Proprietary"),
            ("MIT OR (Apache-2.0", "("),
        ] {
            let mut m = metadata(&[], None, &[]);
            m.license_expression = Some(expression.into());
            let problems = installer_problems(&m);
            assert_eq!(problems.len(), 1, "{expression}: {problems:?}");
            let shown = problems[0].to_string();
            assert!(
                shown.starts_with(&format!("METADATA License-Expression `{expression}`: "))
                    && shown.contains(&format!("(`{token}`, at byte "))
                    && shown.ends_with("PyPI refuses the upload"),
                "{shown}"
            );
        }
    }

    #[test]
    fn good_fields_pass_and_direct_references_are_found() {
        let good = metadata(
            &[
                "numpy>=1.24",
                "pkg @ git+https://host.invalid/r@abc ; extra == \"testing\"",
            ],
            Some(">=3.9, <4"),
            &["testing", "Test_Suite"],
        );
        assert_eq!(installer_problems(&good), vec![]);
        for expression in [
            "MIT OR Apache-2.0",
            "(MIT AND BSD-3-Clause) OR LicenseRef-Custom",
            "GPL-2.0",
        ] {
            let mut m = good.clone();
            m.license_expression = Some(expression.into());
            assert_eq!(installer_problems(&m), vec![], "{expression}");
        }
        assert_eq!(
            direct_references(&good),
            vec!["pkg @ git+https://host.invalid/r@abc ; extra == \"testing\""]
        );
    }
}
