//! A Python file as the reader sees it: its name, its text, and the quoting
//! of one of its lines in messages.
//!
//! In: a file name (relative to the project, for messages) and its text.
//! Out: `setup.py:12: x = ...` quotations and [`SyntaxError`] messages with
//! a caret under the column.

use std::fmt;

/// Where the tokenizer or parser stopped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

#[derive(Debug)]
pub struct Source {
    /// The name messages use (`setup.py`, `torch_ext/version.py`).
    pub name: String,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        Source {
            name: name.into(),
            text: text.into(),
        }
    }

    /// Line `line` (1-based), trimmed; empty past the end.
    pub fn line(&self, line: usize) -> &str {
        self.text
            .lines()
            .nth(line.saturating_sub(1))
            .unwrap_or("")
            .trim()
    }

    /// `setup.py:12: `line``: where a note comes from.
    pub fn quote(&self, line: usize) -> String {
        format!("{}:{line}: `{}`", self.name, self.line(line))
    }

    /// The error with the file, line and column, the line itself and a
    /// caret under the column.
    pub fn syntax_error(&self, error: &SyntaxError) -> SourceError {
        SourceError {
            text: format!(
                "{}:{}:{}: {}\n  {:>4} | {}\n       | {}^",
                self.name,
                error.line,
                error.col,
                error.message,
                error.line,
                self.text
                    .lines()
                    .nth(error.line.saturating_sub(1))
                    .unwrap_or(""),
                " ".repeat(error.col.saturating_sub(1)),
            ),
        }
    }
}

/// A syntax error rendered against its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SourceError {
    pub text: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_quote_the_line_with_a_caret() {
        let source = Source::new("setup.py", "a = 1\nb = (2,, 3)\n");
        let err = source.syntax_error(&SyntaxError {
            line: 2,
            col: 8,
            message: "unexpected `,`".into(),
        });
        assert_eq!(
            err.to_string(),
            "setup.py:2:8: unexpected `,`\n     2 | b = (2,, 3)\n       |        ^"
        );
        assert_eq!(source.quote(2), "setup.py:2: `b = (2,, 3)`");
    }
}
