//! How `tool.cuwheel.matrix.torch` names torch release series: one minor
//! (`"2.11"`) or a range of them (`">=2.12,<=2.15"`), which `cuwheel lock`
//! resolves to the minors the package index has released.
//!
//! In: one list entry. Out: a [`TorchSelector`] that prints back in its
//! canonical form, or an [`InvalidValue`] saying how to write it. A range is
//! one to two comma-separated bounds of `>=`, `>`, `<=`, `<` on `major.minor`
//! versions, with a lower bound (an open range downward would pull in every
//! old torch the index keeps); an open upper bound takes every later release
//! at each `cuwheel lock`, so a torch released tomorrow needs no cuwheel
//! change, only a new lock.

use std::fmt;
use std::str::FromStr;

use crate::spec::version::{InvalidValue, TorchVersion};

/// One entry of the matrix's `torch` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TorchSelector {
    Minor(TorchVersion),
    Range(TorchRange),
}

/// Minors from `lower` on (inclusive), up to `upper` (inclusive) if given.
/// `>2.11` is stored as `>=2.12` and `<2.15` as `<=2.14`; they print as
/// written so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TorchRange {
    pub lower: TorchVersion,
    pub upper: Option<TorchVersion>,
}

impl TorchSelector {
    pub fn contains(&self, version: TorchVersion) -> bool {
        match self {
            TorchSelector::Minor(minor) => *minor == version,
            TorchSelector::Range(range) => range.contains(version),
        }
    }
}

impl TorchRange {
    pub fn contains(&self, version: TorchVersion) -> bool {
        version >= self.lower && self.upper.is_none_or(|upper| version <= upper)
    }
}

const RANGE_FORM: &str = "write one minor like \"2.11\", or a range of minors like \
                          \">=2.12,<=2.15\" or \">=2.12\" (bounds >=, >, <=, <)";

impl FromStr for TorchSelector {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<TorchSelector, InvalidValue> {
        if !text.starts_with(['<', '>', '=', '!', '~']) {
            return Ok(TorchSelector::Minor(text.parse()?));
        }
        let mut lower: Option<TorchVersion> = None;
        let mut upper: Option<TorchVersion> = None;
        for clause in text.split(',').map(str::trim) {
            let (op, rest) = match clause.find(|c: char| !"<>=!~".contains(c)) {
                Some(at) => clause.split_at(at),
                None => (clause, ""),
            };
            let version: TorchVersion = rest.trim().parse().map_err(|err: InvalidValue| {
                InvalidValue::new(
                    format!("`{text}`: {}", err.problem),
                    format!("{}; {RANGE_FORM}", err.fix),
                )
            })?;
            let (slot, bound) = match op {
                ">=" => (&mut lower, Some(version)),
                ">" => (&mut lower, next_minor(version)),
                "<=" => (&mut upper, Some(version)),
                "<" => (&mut upper, previous_minor(version)),
                _ => {
                    return Err(InvalidValue::new(
                        format!("`{clause}` in `{text}` is not a bound cuwheel reads"),
                        RANGE_FORM,
                    ));
                }
            };
            if slot.is_some() {
                return Err(InvalidValue::new(
                    format!(
                        "`{text}` has two {} bounds",
                        if op.starts_with('>') {
                            "lower"
                        } else {
                            "upper"
                        }
                    ),
                    RANGE_FORM,
                ));
            }
            let Some(bound) = bound else {
                return Err(InvalidValue::new(
                    format!("`{text}` admits no torch release"),
                    RANGE_FORM,
                ));
            };
            *slot = Some(bound);
        }
        let Some(lower) = lower else {
            return Err(InvalidValue::new(
                format!(
                    "`{text}` has no lower bound, so it would take every torch the index keeps"
                ),
                format!("add one, like \">=2.7,{text}\""),
            ));
        };
        if upper.is_some_and(|upper| upper < lower) {
            return Err(InvalidValue::new(
                format!("`{text}` admits no torch release: its upper bound is below its lower one"),
                RANGE_FORM,
            ));
        }
        Ok(TorchSelector::Range(TorchRange { lower, upper }))
    }
}

/// `2.11` → `2.12`; `None` past the one-digit majors torch labels spell.
fn next_minor(version: TorchVersion) -> Option<TorchVersion> {
    Some(TorchVersion::new(version.major, version.minor + 1))
}

/// `2.12` → `2.11`; `2.0` has no minor before it in its major.
fn previous_minor(version: TorchVersion) -> Option<TorchVersion> {
    version
        .minor
        .checked_sub(1)
        .map(|minor| TorchVersion::new(version.major, minor))
}

impl fmt::Display for TorchSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TorchSelector::Minor(minor) => minor.fmt(f),
            TorchSelector::Range(range) => range.fmt(f),
        }
    }
}

impl fmt::Display for TorchRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ">={}", self.lower)?;
        if let Some(upper) = self.upper {
            write!(f, ",<={upper}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(text: &str) -> TorchSelector {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn torch(text: &str) -> TorchVersion {
        text.parse().unwrap()
    }

    #[test]
    fn a_minor_is_a_selector_of_itself() {
        assert_eq!(selector("2.11"), TorchSelector::Minor(torch("2.11")));
        assert!(selector("2.11").contains(torch("2.11")));
        assert!(!selector("2.11").contains(torch("2.12")));
    }

    #[test]
    fn ranges_hold_their_minors_and_print_canonically() {
        let range = selector(">=2.12,<=2.15");
        assert_eq!(range.to_string(), ">=2.12,<=2.15");
        for (minor, inside) in [
            ("2.11", false),
            ("2.12", true),
            ("2.15", true),
            ("2.16", false),
        ] {
            assert_eq!(range.contains(torch(minor)), inside, "{minor}");
        }
        assert_eq!(selector(">2.11, <2.16").to_string(), ">=2.12,<=2.15");
        assert_eq!(selector("<2.16,>=2.12"), range);
        let open = selector(">=2.12");
        assert!(open.contains(torch("2.99")));
        assert_eq!(open.to_string(), ">=2.12");
        // Numeric, not textual: 2.9 is below 2.12.
        assert!(!open.contains(torch("2.9")));
    }

    #[test]
    fn bad_ranges_say_how_to_write_one() {
        for (text, says) in [
            ("<=2.15", "no lower bound"),
            (">=2.15,<=2.12", "below its lower one"),
            (">=2.12,>=2.13", "two lower bounds"),
            ("==2.12", "not a bound"),
            ("~=2.12", "not a bound"),
            (">=2.12.1", "patch"),
            (">=2", "no minor"),
            (">=2.12,<2.0", "admits no torch release"),
            (">=", "not a torch version"),
        ] {
            let err = text.parse::<TorchSelector>().unwrap_err();
            assert!(err.problem.contains(says), "{text}: {err}");
            assert!(!err.fix.is_empty(), "{text}");
        }
        assert!(
            "<=2.15"
                .parse::<TorchSelector>()
                .unwrap_err()
                .fix
                .contains("\">=2.7,<=2.15\"")
        );
    }
}
