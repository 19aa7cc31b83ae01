//! `project.license` as a PEP 639 license expression: SPDX syntax, known
//! identifiers, canonical form.
//!
//! In: the expression as written (`mit or apache-2.0`). Out: its canonical
//! form (`MIT OR Apache-2.0`: operators upper case, identifiers as the SPDX
//! list spells them, one space between tokens), which METADATA's
//! `License-Expression` carries; or an [`InvalidValue`] naming the token
//! that is wrong. The identifiers are data, `../data/spdx.json` (its
//! `"source"` key says where they come from).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

use crate::spec::version::InvalidValue;

#[derive(Deserialize)]
struct SpdxList {
    #[allow(dead_code)] // documents the data's origin
    source: String,
    licenses: Vec<String>,
    exceptions: Vec<String>,
}

/// Lower-cased identifier → SPDX spelling, for licenses and exceptions.
struct Identifiers {
    licenses: BTreeMap<String, String>,
    exceptions: BTreeMap<String, String>,
}

static IDENTIFIERS: LazyLock<Identifiers> = LazyLock::new(|| {
    let list: SpdxList = serde_json::from_str(include_str!("../data/spdx.json")).expect(
        "crates/cuwheel-build/src/spec/data/spdx.json is valid (checked by the unit tests)",
    );
    let by_lower = |ids: Vec<String>| ids.into_iter().map(|id| (id.to_lowercase(), id)).collect();
    Identifiers {
        licenses: by_lower(list.licenses),
        exceptions: by_lower(list.exceptions),
    }
});

const FIX: &str = "write an SPDX license expression, like \"MIT\" or \"MIT OR Apache-2.0\" \
                   (identifiers from the SPDX license list, LicenseRef-<name> for others)";

/// The canonical form of a license expression.
pub fn canonical_expression(text: &str) -> Result<String, InvalidValue> {
    let spaced = text.replace('(', " ( ").replace(')', " ) ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    if tokens.is_empty() {
        return Err(InvalidValue::new("the license expression is empty", FIX));
    }
    let mut parser = Parser {
        text,
        tokens: &tokens,
        at: 0,
        out: Vec::new(),
    };
    parser.or()?;
    if let Some(extra) = tokens.get(parser.at) {
        return Err(parser.unexpected(extra));
    }
    Ok(parser.out.join(" ").replace("( ", "(").replace(" )", ")"))
}

struct Parser<'a> {
    text: &'a str,
    tokens: &'a [&'a str],
    at: usize,
    out: Vec<String>,
}

impl Parser<'_> {
    fn peek_operator(&self, operator: &str) -> bool {
        self.tokens
            .get(self.at)
            .is_some_and(|token| token.eq_ignore_ascii_case(operator))
    }

    fn unexpected(&self, token: &str) -> InvalidValue {
        InvalidValue::new(
            format!(
                "`{}` is not a license expression: unexpected `{token}`",
                self.text
            ),
            FIX,
        )
    }

    fn or(&mut self) -> Result<(), InvalidValue> {
        self.and()?;
        while self.peek_operator("or") {
            self.at += 1;
            self.out.push("OR".into());
            self.and()?;
        }
        Ok(())
    }

    fn and(&mut self) -> Result<(), InvalidValue> {
        self.with()?;
        while self.peek_operator("and") {
            self.at += 1;
            self.out.push("AND".into());
            self.with()?;
        }
        Ok(())
    }

    fn with(&mut self) -> Result<(), InvalidValue> {
        self.primary()?;
        if self.peek_operator("with") {
            self.at += 1;
            self.out.push("WITH".into());
            let Some(token) = self.tokens.get(self.at) else {
                return Err(self.ends_early());
            };
            let Some(id) = IDENTIFIERS.exceptions.get(&token.to_lowercase()) else {
                return Err(InvalidValue::new(
                    format!(
                        "`{}`: `{token}` is not an exception of the SPDX list",
                        self.text
                    ),
                    FIX,
                ));
            };
            self.out.push(id.clone());
            self.at += 1;
        }
        Ok(())
    }

    fn ends_early(&self) -> InvalidValue {
        InvalidValue::new(format!("`{}` ends too early", self.text), FIX)
    }

    fn primary(&mut self) -> Result<(), InvalidValue> {
        let Some(&token) = self.tokens.get(self.at) else {
            return Err(self.ends_early());
        };
        self.at += 1;
        if token == "(" {
            self.out.push("(".into());
            self.or()?;
            if self.tokens.get(self.at) != Some(&")") {
                return Err(InvalidValue::new(
                    format!("`{}` has an unclosed `(`", self.text),
                    FIX,
                ));
            }
            self.at += 1;
            self.out.push(")".into());
            return Ok(());
        }
        if [")", "and", "or", "with"].contains(&token.to_lowercase().as_str()) {
            return Err(self.unexpected(token));
        }
        let lower = token.to_lowercase();
        if let Some(name) = lower.strip_prefix("licenseref-") {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !valid {
                return Err(InvalidValue::new(
                    format!("`{}`: `{token}` is not a valid LicenseRef", self.text),
                    "write LicenseRef- followed by letters, digits, `.` and `-`",
                ));
            }
            self.out
                .push(format!("LicenseRef-{}", &token["licenseref-".len()..]));
            return Ok(());
        }
        let (base, plus) = match lower.strip_suffix('+') {
            Some(base) => (base, "+"),
            None => (lower.as_str(), ""),
        };
        match IDENTIFIERS.licenses.get(base) {
            Some(id) => {
                self.out.push(format!("{id}{plus}"));
                Ok(())
            }
            None => Err(InvalidValue::new(
                format!("`{}`: `{token}` is not on the SPDX license list", self.text),
                FIX,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_loads() {
        assert!(IDENTIFIERS.licenses.len() > 600);
        assert_eq!(IDENTIFIERS.licenses["apache-2.0"], "Apache-2.0");
        assert!(IDENTIFIERS.exceptions.contains_key("llvm-exception"));
    }

    #[test]
    fn expressions_are_canonicalised() {
        for (text, canonical) in [
            ("MIT", "MIT"),
            ("mit or apache-2.0", "MIT OR Apache-2.0"),
            (
                "mit and (apache-2.0 or bsd-2-clause)",
                "MIT AND (Apache-2.0 OR BSD-2-Clause)",
            ),
            (
                "Apache-2.0 WITH llvm-exception",
                "Apache-2.0 WITH LLVM-exception",
            ),
            ("licenseref-Proprietary", "LicenseRef-Proprietary"),
            ("gpl-2.0+", "GPL-2.0+"),
        ] {
            assert_eq!(canonical_expression(text).unwrap(), canonical, "{text}");
        }
    }

    #[test]
    fn bad_expressions_name_the_token() {
        for (text, says) in [
            ("", "empty"),
            ("Apache 2.0", "`Apache` is not on the SPDX license list"),
            ("MIT OR", "ends too early"),
            ("(MIT", "unclosed"),
            ("MIT)", "unexpected `)`"),
            ("MIT MIT", "unexpected `MIT`"),
            ("MIT WITH Foo", "`Foo` is not an exception"),
            ("LicenseRef-", "not a valid LicenseRef"),
        ] {
            let error = canonical_expression(text).unwrap_err();
            assert!(error.problem.contains(says), "{text}: {error}");
        }
    }
}
