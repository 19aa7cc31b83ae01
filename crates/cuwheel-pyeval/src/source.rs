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

    /// `setup.py:12: `line``: where a note comes from (a long line is cut
    /// after [`QUOTED_CHARS`] characters).
    pub fn quote(&self, line: usize) -> String {
        format!(
            "{}:{line}: `{}`",
            self.name,
            shortened(self.line(line), 0).0
        )
    }

    /// The error with the file, line and column, the line itself and a
    /// caret under the column.
    pub fn syntax_error(&self, error: &SyntaxError) -> SourceError {
        let line = self
            .text
            .lines()
            .nth(error.line.saturating_sub(1))
            .unwrap_or("");
        let (shown, caret) = shortened(line, error.col.saturating_sub(1));
        SourceError {
            text: format!(
                "{}:{}:{}: {}\n  {:>4} | {}\n       | {}^",
                self.name,
                error.line,
                error.col,
                error.message,
                error.line,
                shown,
                " ".repeat(caret),
            ),
        }
    }
}

/// How much of a line a message quotes.
pub const QUOTED_CHARS: usize = 160;

/// `line` cut to [`QUOTED_CHARS`] characters around 0-based column `col`
/// (`…` where cut), and where `col` lands in it.
fn shortened(line: &str, col: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= QUOTED_CHARS {
        return (line.to_string(), col);
    }
    let start = col
        .saturating_sub(QUOTED_CHARS / 2)
        .min(chars.len() - QUOTED_CHARS);
    let end = start + QUOTED_CHARS;
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    (shown, col - start + usize::from(start > 0))
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
