//! PEP 440 version specifiers: the `Requires-Python` of METADATA, an index
//! page's `data-requires-python`.
//!
//! In: a specifier set as text (`>=3.9, <3.14`, `~=3.10`, `==3.11.*`). Out: the
//! parsed [`Specifier`]s, or a [`SpecifierError`] that quotes the input and
//! the clause at fault. The rules are PEP 440's ("Version specifiers"): a
//! comma-separated list of clauses, each an operator (`~=`, `==`, `!=`,
//! `<=`, `>=`, `<`, `>`, `===`) and a version; `.*` only after `==` and
//! `!=`; a local label (`+cu130`) only after `==` and `!=` without `.*`;
//! `~=` needs at least two release numbers; `===` takes any text without
//! spaces or commas.

use std::fmt;

use super::pep440::Version;

/// A comparison operator of PEP 440.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Compatible,
    Equal,
    NotEqual,
    LessEqual,
    GreaterEqual,
    Less,
    Greater,
    Arbitrary,
}

impl Operator {
    fn as_str(self) -> &'static str {
        match self {
            Operator::Compatible => "~=",
            Operator::Equal => "==",
            Operator::NotEqual => "!=",
            Operator::LessEqual => "<=",
            Operator::GreaterEqual => ">=",
            Operator::Less => "<",
            Operator::Greater => ">",
            Operator::Arbitrary => "===",
        }
    }
}

/// One clause: `>=3.9`, `==3.11.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specifier {
    pub operator: Operator,
    /// The version as written (without `.*`).
    pub version: String,
    /// `==3.11.*`: a prefix match.
    pub wildcard: bool,
}

impl fmt::Display for Specifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.operator.as_str(),
            self.version,
            if self.wildcard { ".*" } else { "" }
        )
    }
}

/// Why a specifier set is not PEP 440.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a PEP 440 version specifier set: {problem}; write comma-separated \
     clauses such as `>=3.9, <3.14`"
)]
pub struct SpecifierError {
    pub input: String,
    pub problem: String,
}

/// Parses a comma-separated specifier set; empty text is the empty set.
pub fn parse_specifiers(input: &str) -> Result<Vec<Specifier>, SpecifierError> {
    let fail = |problem: String| SpecifierError {
        input: input.to_string(),
        problem,
    };
    if input.trim().is_empty() {
        return Ok(Vec::new());
    }
    input
        .split(',')
        .map(|clause| parse_clause(clause.trim()).map_err(&fail))
        .collect()
}

fn parse_clause(clause: &str) -> Result<Specifier, String> {
    if clause.is_empty() {
        return Err("it has an empty clause (a stray comma)".to_string());
    }
    let operators = [
        ("===", Operator::Arbitrary),
        ("~=", Operator::Compatible),
        ("==", Operator::Equal),
        ("!=", Operator::NotEqual),
        ("<=", Operator::LessEqual),
        (">=", Operator::GreaterEqual),
        ("<", Operator::Less),
        (">", Operator::Greater),
    ];
    let Some((operator, rest)) = operators.iter().find_map(|(text, op)| {
        clause
            .strip_prefix(text)
            .map(|rest| (*op, rest.trim_start()))
    }) else {
        return Err(format!(
            "the clause `{clause}` does not start with an operator (~=, ==, !=, <=, >=, <, >, ===)"
        ));
    };
    if rest.is_empty() {
        return Err(format!("the clause `{clause}` has no version"));
    }
    if let Some(bad) = rest
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "<>\"'&;=!~".contains(*c))
    {
        return Err(format!(
            "the clause `{clause}` holds {bad:?}, which no version contains"
        ));
    }
    if operator == Operator::Arbitrary {
        return Ok(Specifier {
            operator,
            version: rest.to_string(),
            wildcard: false,
        });
    }
    let (text, wildcard) = match rest.strip_suffix(".*") {
        Some(prefix) => (prefix, true),
        None => (rest, false),
    };
    if wildcard && !matches!(operator, Operator::Equal | Operator::NotEqual) {
        return Err(format!(
            "the clause `{clause}`: `.*` is allowed only after == and !="
        ));
    }
    let version = Version::parse(text).map_err(|e| format!("the clause `{clause}`: {e}"))?;
    if !version.local().is_empty()
        && (wildcard || !matches!(operator, Operator::Equal | Operator::NotEqual))
    {
        return Err(format!(
            "the clause `{clause}`: a local version label is allowed only after == and != \
             without .*"
        ));
    }
    if operator == Operator::Compatible && version.release().len() < 2 {
        return Err(format!(
            "the clause `{clause}`: ~= needs at least two release numbers (~=3.9, not ~=3)"
        ));
    }
    Ok(Specifier {
        operator,
        version: text.to_string(),
        wildcard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_pep_440_allows() {
        for ok in [
            ">=3.9",
            ">=3.9, <3.14",
            "<3.14,>=3.9",
            "~=3.10",
            "==3.11.*",
            "!=3.12.0, >= 3.8",
            "==1.0+cu130",
            "===foobar",
            ">3.9.0rc1",
            "",
        ] {
            parse_specifiers(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let parsed = parse_specifiers("<3.14, >=3.9").unwrap();
        let shown: Vec<String> = parsed.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["<3.14", ">=3.9"]);
    }

    #[test]
    fn refuses_anything_else_quoting_it() {
        for (bad, words) in [
            ("<3.14,>=3.9\"><script>", "holds"),
            (">=3.9,", "empty clause"),
            ("3.9", "does not start with an operator"),
            (">=", "has no version"),
            (">=3.*", "only after == and !="),
            (">=3.9+local", "local version label"),
            ("==3.9+cu130.*", "local version label"),
            ("~=3", "two release numbers"),
            (">=three", "the clause `>=three`"),
            (">= 3.9 <4", "holds"),
        ] {
            let err = parse_specifiers(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
            assert!(err.contains(words), "{bad}: {err}");
        }
    }
}
