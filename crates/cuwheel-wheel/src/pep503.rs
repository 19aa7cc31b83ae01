//! Project names (PEP 508 name rule, PEP 503 normalisation).
//!
//! In: a project name as a user or a file wrote it. Out: a validated
//! [`ProjectName`] that gives the PEP 503 normalised form (for comparing
//! names) and the wheel file-name form (for `{name}-{ver}.dist-info` and the
//! `.whl` name), or a [`NameError`] saying which character is wrong and where.

use std::fmt;

/// A project name that satisfies PEP 508's name rule:
/// ASCII letters and digits, with `-`, `_` and `.` allowed only between them.
///
/// Keeps the spelling it was given (METADATA's `Name` shows it); equality and
/// hashing use the normalised form, so `Demo_Ext` equals `demo-ext`.
#[derive(Debug, Clone)]
pub struct ProjectName {
    given: String,
}

/// Why a string is not a valid project name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid project name `{name}`: {reason}")]
pub struct NameError {
    pub name: String,
    pub reason: String,
}

impl ProjectName {
    /// Validates `name` against PEP 508's rule
    /// `^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$` (case-insensitive).
    pub fn new(name: &str) -> Result<ProjectName, NameError> {
        let fail = |reason: String| NameError {
            name: name.to_string(),
            reason,
        };
        let (first, last) = match (name.chars().next(), name.chars().last()) {
            (Some(first), Some(last)) => (first, last),
            _ => return Err(fail("the name is empty".to_string())),
        };
        if let Some((at, bad)) = name
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(fail(format!(
                "character {bad:?} at byte {at} is not allowed; use only ASCII letters, digits, `-`, `_` and `.`"
            )));
        }
        if !first.is_ascii_alphanumeric() {
            return Err(fail(format!(
                "it starts with {first:?}; a name must start with a letter or digit"
            )));
        }
        if !last.is_ascii_alphanumeric() {
            return Err(fail(format!(
                "it ends with {last:?}; a name must end with a letter or digit"
            )));
        }
        Ok(ProjectName {
            given: name.to_string(),
        })
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.given
    }

    /// PEP 503 normalised form: runs of `-`, `_`, `.` become `-`, lowercased.
    pub fn normalized(&self) -> String {
        normalize_name(&self.given)
    }

    /// The form used in wheel file names and `.dist-info` directory names:
    /// runs of `-`, `_`, `.` become `_`, lowercased.
    pub fn wheel_form(&self) -> String {
        wheel_name_form(&self.given)
    }
}

impl PartialEq for ProjectName {
    fn eq(&self, other: &ProjectName) -> bool {
        self.normalized() == other.normalized()
    }
}

impl Eq for ProjectName {}

impl std::hash::Hash for ProjectName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.normalized().hash(state);
    }
}

impl fmt::Display for ProjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

/// As its string; reading checks the name.
impl serde::Serialize for ProjectName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.given)
    }
}

impl<'de> serde::Deserialize<'de> for ProjectName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ProjectName::new(&text).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for ProjectName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<ProjectName, NameError> {
        ProjectName::new(s)
    }
}

/// PEP 503: `re.sub(r"[-_.]+", "-", name).lower()`. Works on any string.
pub fn normalize_name(name: &str) -> String {
    collapse_separators(name, '-')
}

/// The wheel file-name form of a name: runs of `-`, `_`, `.` become `_`,
/// lowercased (binary distribution format, "Escaping and Unicode").
pub fn wheel_name_form(name: &str) -> String {
    collapse_separators(name, '_')
}

fn collapse_separators(name: &str, replacement: char) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                out.push(replacement);
            }
            in_run = true;
        } else {
            out.extend(c.to_lowercase());
            in_run = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pep503_examples_normalise_to_one_name() {
        // The examples of PEP 503's "Normalized Names" section.
        for name in [
            "friendly-bard",
            "Friendly-Bard",
            "FRIENDLY-BARD",
            "friendly.bard",
            "friendly_bard",
            "friendly--bard",
            "FrIeNdLy-._.-bArD",
        ] {
            assert_eq!(normalize_name(name), "friendly-bard", "{name}");
            assert_eq!(wheel_name_form(name), "friendly_bard", "{name}");
        }
    }

    #[test]
    fn names_compare_by_normalised_form_and_keep_their_spelling() {
        let a = ProjectName::new("Demo_Ext").unwrap();
        let b = ProjectName::new("demo-ext").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "Demo_Ext");
        assert_eq!(a.wheel_form(), "demo_ext");
        assert_eq!(a.normalized(), "demo-ext");
    }

    #[test]
    fn pep508_rule_accepts_and_rejects() {
        for ok in [
            "a",
            "A1",
            "torch",
            "nvidia-cuda-nvcc",
            "zope.interface",
            "a_b-c.d",
        ] {
            ProjectName::new(ok).unwrap();
        }
        let err = ProjectName::new("").unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
        let err = ProjectName::new("-abc").unwrap_err();
        assert!(err.to_string().contains("starts with '-'"), "{err}");
        let err = ProjectName::new("abc.").unwrap_err();
        assert!(err.to_string().contains("ends with '.'"), "{err}");
        let err = ProjectName::new("ab c").unwrap_err();
        assert!(err.to_string().contains("' ' at byte 2"), "{err}");
        let err = ProjectName::new("café").unwrap_err();
        assert!(err.to_string().contains("'é' at byte 3"), "{err}");
    }
}
