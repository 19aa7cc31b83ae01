//! Keyword arguments a file passes anywhere, without evaluating it.
//!
//! In: a Python file's text and a keyword's name. Out: every call argument
//! `name=value` in the file, in class and function bodies too, with its
//! line and the value when it is the literal `True` or `False`; or the
//! [`SyntaxError`] that stops the tokenizer.
//!
//! For options that setup.py hands to a build command setuptools runs
//! later (`BuildExtension.with_options(no_python_abi_suffix=True)`, or a
//! subclass passing it to `super().__init__`): the evaluator does not run
//! build commands, so it never sees them.

use super::source::SyntaxError;
use super::tokenize::{Tok, tokenize};

/// One `name=value` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordUse {
    /// 1-based line of the keyword.
    pub line: usize,
    /// `Some` when the value is the literal `True` or `False` alone.
    pub value: Option<bool>,
}

/// Every argument `name=…` in `text`: a keyword right after `(` or `,`
/// (an assignment `name = …` starts a statement, a default `name=…` in a
/// `def` is a parameter, not an argument: both are left out).
pub fn keyword_uses(text: &str, name: &str) -> Result<Vec<KeywordUse>, SyntaxError> {
    let tokens = tokenize(text)?;
    let mut uses = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if token.tok != Tok::Name(name.to_string()) || i == 0 {
            continue;
        }
        let after_open = matches!(tokens[i - 1].tok, Tok::Op("(") | Tok::Op(","));
        let assigned = matches!(tokens.get(i + 1).map(|t| &t.tok), Some(Tok::Op("=")));
        if !(after_open && assigned) || in_def_signature(&tokens[..i]) {
            continue;
        }
        let literal = match tokens.get(i + 2).map(|t| &t.tok) {
            Some(Tok::Name(v)) if v == "True" => Some(true),
            Some(Tok::Name(v)) if v == "False" => Some(false),
            _ => None,
        };
        let alone = matches!(
            tokens.get(i + 3).map(|t| &t.tok),
            Some(Tok::Op(",")) | Some(Tok::Op(")"))
        );
        uses.push(KeywordUse {
            line: token.line,
            value: literal.filter(|_| alone),
        });
    }
    Ok(uses)
}

/// True when the tokens before a keyword end inside an open `def f(`.
fn in_def_signature(before: &[super::tokenize::Token]) -> bool {
    let mut depth = 0usize;
    for (i, token) in before.iter().enumerate().rev() {
        match token.tok {
            Tok::Op(")") | Tok::Op("]") | Tok::Op("}") => depth += 1,
            Tok::Op("(") | Tok::Op("[") | Tok::Op("{") if depth > 0 => depth -= 1,
            Tok::Op("(") => {
                return i >= 2 && before[i - 2].tok == Tok::Name("def".to_string());
            }
            Tok::Op("[") | Tok::Op("{") | Tok::Newline | Tok::Indent | Tok::Dedent => {
                return false;
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses(text: &str) -> Vec<(usize, Option<bool>)> {
        keyword_uses(text, "no_python_abi_suffix")
            .unwrap()
            .into_iter()
            .map(|u| (u.line, u.value))
            .collect()
    }

    #[test]
    fn arguments_anywhere_are_found_with_their_literal() {
        let text = "\
from torch.utils.cpp_extension import BuildExtension
def get_ext():
    return BuildExtension.with_options(
        no_python_abi_suffix=True, use_ninja=False
    )
class Custom(BuildExtension):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, no_python_abi_suffix=True, **kwargs)
x = f(a, no_python_abi_suffix=flag)
y = f(no_python_abi_suffix=False)
z = f(no_python_abi_suffix=True if a else False)
";
        assert_eq!(
            uses(text),
            vec![
                (4, Some(true)),
                (8, Some(true)),
                (9, None),
                (10, Some(false)),
                (11, None)
            ]
        );
    }

    #[test]
    fn assignments_parameters_comments_and_strings_are_not_arguments() {
        let text = "\
no_python_abi_suffix = True
def f(a, no_python_abi_suffix=True):
    pass
# BuildExtension.with_options(no_python_abi_suffix=True)
s = 'f(no_python_abi_suffix=True)'
";
        assert_eq!(uses(text), vec![]);
    }
}
