//! Dependency specifiers (PEP 508, as restated in the "Dependency
//! specifiers" specification).
//!
//! In: a requirement as `[project].dependencies` writes it
//! (`numpy>=1.24; python_version >= "3.10"`). Out: a [`Requirement`] that
//! keeps the text it was given (name, extras, versions or URL; and the
//! marker) and can add an `extra == "x"` clause for `Requires-Dist`, or a
//! [`RequirementError`] saying what is wrong at which byte.
//!
//! The grammar is checked exactly: the version specifiers by
//! [`parse_specifiers`], marker variables against the ones the
//! specification defines.

use std::fmt;

use super::pep503::ProjectName;
use super::specifier::parse_specifiers;

/// A checked requirement, with its text split at the marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub name: ProjectName,
    /// The text before the marker, trimmed: `numpy[extra]>=1.24`.
    pub requirement: String,
    /// The marker expression, trimmed, without `;`.
    pub marker: Option<String>,
}

/// Why a requirement is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a valid dependency specifier: {reason} (at byte {position})")]
pub struct RequirementError {
    pub input: String,
    pub position: usize,
    pub reason: String,
}

/// The marker variables the specification defines.
const MARKER_VARIABLES: [&str; 14] = [
    "python_version",
    "python_full_version",
    "os_name",
    "sys_platform",
    "platform_release",
    "platform_system",
    "platform_version",
    "platform_machine",
    "platform_python_implementation",
    "implementation_name",
    "implementation_version",
    "extra",
    "extras",
    "dependency_groups",
];

/// Comparison operators, longest first so that `<=` is not read as `<`.
const OPERATORS: [&str; 8] = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"];

impl Requirement {
    pub fn parse(input: &str) -> Result<Requirement, RequirementError> {
        let mut p = Cursor::new(input);
        p.skip_space();
        let start = p.at;
        let name = p.identifier();
        if name.is_empty() {
            return Err(p.fail("expected a project name"));
        }
        let name = ProjectName::new(name).map_err(|e| {
            let reason = e.reason;
            p.fail_at(start, &reason)
        })?;
        p.skip_space();
        if p.eat("[") {
            p.skip_space();
            if !p.eat("]") {
                loop {
                    p.skip_space();
                    let extra_start = p.at;
                    let extra = p.identifier();
                    if extra.is_empty() || ProjectName::new(extra).is_err() {
                        return Err(p.fail_at(extra_start, "expected an extra's name"));
                    }
                    p.skip_space();
                    if p.eat("]") {
                        break;
                    }
                    if !p.eat(",") {
                        return Err(p.fail("expected `,` or `]` after an extra"));
                    }
                }
            }
            p.skip_space();
        }
        if p.eat("@") {
            p.skip_space();
            let url_start = p.at;
            while p.peek().is_some_and(|c| !c.is_whitespace()) {
                p.at += p.peek().map_or(1, char::len_utf8);
            }
            let url = &input[url_start..p.at];
            if !url.contains(':') {
                return Err(p.fail_at(url_start, "expected a URL after `@`"));
            }
            p.skip_space();
            if !p.done() && !p.rest().starts_with(';') {
                // A `;` right after the URL is part of it: a space must come first.
                return Err(
                    p.fail("expected `;` and a marker after the URL (and a space before `;`)")
                );
            }
        } else if p.eat("(") {
            let Some(end) = p.rest().find(')') else {
                return Err(p.fail("expected `)`"));
            };
            p.specifiers(end)?;
            p.at += 1;
        } else if !p.done() && !p.rest().starts_with(';') {
            let end = p.rest().find(';').unwrap_or(p.rest().len());
            if p.rest()[..end].trim().is_empty() {
                return Err(p.fail("expected a comparison operator such as >="));
            }
            p.specifiers(end)?;
        }
        p.skip_space();
        let requirement = input[..p.at].trim().to_string();
        let marker = if p.eat(";") {
            let marker_start = p.at;
            p.marker_or()?;
            p.skip_space();
            if !p.done() {
                return Err(p.fail("unexpected text in the marker"));
            }
            let marker = input[marker_start..].trim();
            if marker.is_empty() {
                return Err(p.fail("expected a marker after `;`"));
            }
            Some(marker.to_string())
        } else {
            None
        };
        if !p.done() {
            return Err(p.fail("unexpected text after the requirement"));
        }
        Ok(Requirement {
            name,
            requirement,
            marker,
        })
    }

    /// The `Requires-Dist` value of this requirement in the optional
    /// dependencies of `extra` (a normalised extra name).
    pub fn for_extra(&self, extra: &str) -> String {
        let (requirement, semicolon) = (&self.requirement, self.marker_separator());
        match &self.marker {
            None => format!("{requirement}{semicolon}extra == \"{extra}\""),
            Some(marker) => format!("{requirement}{semicolon}({marker}) and extra == \"{extra}\""),
        }
    }

    /// Whether the requirement is a direct reference (`name @ URL`), which
    /// no index but a per-project one may carry: PyPI refuses it.
    pub fn is_direct_reference(&self) -> bool {
        self.requirement.contains('@')
    }

    /// What goes before the marker: `; `, or ` ; ` after a URL, which
    /// would otherwise take the `;` as its own (PEP 508 requires the space).
    fn marker_separator(&self) -> &'static str {
        if self.is_direct_reference() {
            " ; "
        } else {
            "; "
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.requirement)?;
        if let Some(marker) = &self.marker {
            write!(f, "{}{marker}", self.marker_separator())?;
        }
        Ok(())
    }
}

/// An extra's name as PEP 685 normalises it: lower case, runs of `-`, `_`
/// and `.` as one `-`.
pub fn normalize_extra(name: &str) -> String {
    super::pep503::normalize_name(name)
}

struct Cursor<'a> {
    input: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(input: &'a str) -> Cursor<'a> {
        Cursor { input, at: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.input[self.at..]
    }

    fn done(&self) -> bool {
        self.at >= self.input.len()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.at += 1;
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn fail_at(&self, position: usize, reason: &str) -> RequirementError {
        RequirementError {
            input: self.input.to_string(),
            position,
            reason: reason.to_string(),
        }
    }

    fn fail(&self, reason: &str) -> RequirementError {
        self.fail_at(self.at, reason)
    }

    /// Letters, digits, `-`, `_` and `.`.
    fn identifier(&mut self) -> &'a str {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            self.at += 1;
        }
        &self.input[start..self.at]
    }

    fn operator(&mut self) -> Option<&'static str> {
        let op = OPERATORS
            .into_iter()
            .find(|op| self.rest().starts_with(op))?;
        self.at += op.len();
        Some(op)
    }

    /// The version specifiers in the next `len` bytes, checked as PEP 440
    /// says ([`parse_specifiers`]); the cursor moves past them.
    fn specifiers(&mut self, len: usize) -> Result<(), RequirementError> {
        let text = &self.rest()[..len];
        if let Err(error) = parse_specifiers(text) {
            return Err(self.fail(&error.problem));
        }
        self.at += len;
        Ok(())
    }

    fn marker_or(&mut self) -> Result<(), RequirementError> {
        self.marker_and()?;
        while self.keyword("or") {
            self.marker_and()?;
        }
        Ok(())
    }

    fn marker_and(&mut self) -> Result<(), RequirementError> {
        self.marker_expr()?;
        while self.keyword("and") {
            self.marker_expr()?;
        }
        Ok(())
    }

    /// A keyword followed by a space or `(`.
    fn keyword(&mut self, word: &str) -> bool {
        self.skip_space();
        let rest = self.rest();
        let follows = rest[word.len().min(rest.len())..].chars().next();
        if rest.starts_with(word)
            && follows.is_some_and(|c| c == ' ' || c == '(' || c == '"' || c == '\'')
        {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn marker_expr(&mut self) -> Result<(), RequirementError> {
        self.skip_space();
        if self.eat("(") {
            self.marker_or()?;
            self.skip_space();
            if !self.eat(")") {
                return Err(self.fail("expected `)` in the marker"));
            }
            return Ok(());
        }
        self.marker_value()?;
        self.skip_space();
        let op_ok = self.operator().is_some()
            || self.keyword("in")
            || (self.keyword("not") && self.keyword("in"));
        if !op_ok {
            return Err(self.fail("expected a marker operator such as == or in"));
        }
        self.marker_value()
    }

    fn marker_value(&mut self) -> Result<(), RequirementError> {
        self.skip_space();
        match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.at += 1;
                let Some(end) = self.rest().find(quote) else {
                    return Err(self.fail("unclosed string in the marker"));
                };
                self.at += end + 1;
                Ok(())
            }
            _ => {
                let start = self.at;
                let name = self.identifier();
                if MARKER_VARIABLES.contains(&name) {
                    Ok(())
                } else if name.is_empty() {
                    Err(self.fail("expected a marker variable or a quoted string"))
                } else {
                    Err(self.fail_at(
                        start,
                        &format!("`{name}` is not a marker variable (such as python_version or sys_platform)"),
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_keep_their_text_and_split_the_marker() {
        for (input, requirement, marker) in [
            ("numpy", "numpy", None),
            ("numpy>=1.24", "numpy>=1.24", None),
            ("  numpy >= 1.24 , < 3 ", "numpy >= 1.24 , < 3", None),
            ("rich[jupyter]>=13", "rich[jupyter]>=13", None),
            ("a[b, c] (>=1,<2)", "a[b, c] (>=1,<2)", None),
            (
                "jaxtyping; python_version >= \"3.10\"",
                "jaxtyping",
                Some("python_version >= \"3.10\""),
            ),
            (
                "pkg @ https://example.invalid/pkg.whl ; sys_platform == 'linux'",
                "pkg @ https://example.invalid/pkg.whl",
                Some("sys_platform == 'linux'"),
            ),
            (
                "x==1.*; (os_name == \"posix\" and platform_machine in \"x86_64 aarch64\") or extra == \"t\"",
                "x==1.*",
                Some(
                    "(os_name == \"posix\" and platform_machine in \"x86_64 aarch64\") or extra == \"t\"",
                ),
            ),
            ("x~=1.4.2", "x~=1.4.2", None),
            ("x===weird", "x===weird", None),
        ] {
            let parsed = Requirement::parse(input).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(parsed.requirement, requirement, "{input}");
            assert_eq!(parsed.marker.as_deref(), marker, "{input}");
        }
    }

    #[test]
    fn extras_are_added_to_the_marker() {
        let plain = Requirement::parse("scipy>=1").unwrap();
        assert_eq!(plain.for_extra("full"), "scipy>=1; extra == \"full\"");
        let marked =
            Requirement::parse("scipy>=1; python_version < \"3.12\" or os_name == \"nt\"").unwrap();
        assert_eq!(
            marked.for_extra("full"),
            "scipy>=1; (python_version < \"3.12\" or os_name == \"nt\") and extra == \"full\""
        );
        assert_eq!(normalize_extra("Full_Set.x"), "full-set-x");
    }

    #[test]
    fn a_direct_reference_keeps_a_space_before_its_marker() {
        let url = Requirement::parse("pkg @ git+https://host.invalid/repo@abc").unwrap();
        assert!(url.is_direct_reference());
        let written = url.for_extra("testing");
        assert_eq!(
            written,
            "pkg @ git+https://host.invalid/repo@abc ; extra == \"testing\""
        );
        Requirement::parse(&written).unwrap_or_else(|e| panic!("{e}"));
        let marked =
            Requirement::parse("pkg @ https://host.invalid/p.whl ; os_name == 'nt'").unwrap();
        assert_eq!(
            marked.to_string(),
            "pkg @ https://host.invalid/p.whl ; os_name == 'nt'"
        );
        Requirement::parse(&marked.for_extra("x")).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !Requirement::parse("numpy>=1")
                .unwrap()
                .is_direct_reference()
        );
    }

    #[test]
    fn bad_requirements_say_what_and_where() {
        for (input, says) in [
            ("", "expected a project name"),
            ("-numpy", "a name must start with a letter or digit"),
            ("numpy>=", "has no version"),
            ("numpy=>1", "does not start with an operator"),
            ("numpy>=1.0+local", "local version label"),
            ("numpy>=1.*", "only after == and !="),
            ("numpy~=1", "two release numbers"),
            ("numpy>=one", "`>=one`"),
            (
                "numpy; python >= \"3\"",
                "`python` is not a marker variable",
            ),
            ("numpy; python_version >= \"3", "unclosed string"),
            ("numpy;", "expected a marker variable"),
            ("numpy[", "expected an extra"),
            (
                "pkg @ https://x.invalid/a.whl; os_name == 'nt'",
                "a space before `;`",
            ),
            ("numpy extra", "does not start with an operator"),
        ] {
            let error = Requirement::parse(input).unwrap_err().to_string();
            assert!(error.contains(says), "{input:?}: {error}");
            assert!(
                error.starts_with(&format!("`{input}` is not a valid")),
                "{error}"
            );
        }
    }
}
