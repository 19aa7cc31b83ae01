//! Text from a wheel made safe to print on a terminal: member names and
//! anything quoting them may hold NUL, newlines, escape sequences or
//! bidirectional overrides, which could forge output lines (`RESULT:
//! PASSED`) or drive the terminal (clear the screen).
//!
//! In: any text. Out: the same text with every such character written as a
//! visible escape (`\n`, `\0`, `\u{1b}`); other text, backslashes included,
//! is unchanged, so escaping twice changes nothing more. The one function
//! every message that shows a name goes through before it is printed.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` can move the cursor, end a line, or change how the terminal
/// reads what follows: C0 and C1 controls, DEL, and the Unicode
/// bidirectional controls and line separators.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every terminal-unsafe character escaped.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(terminal_safe("pkg/mod.py"), "pkg/mod.py");
        assert!(matches!(terminal_safe("pkg/ok"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("a\nRESULT: PASSED\u{1b}[2J\0\u{202e}b\\x"),
            "a\\nRESULT: PASSED\\u{1b}[2J\\0\\u{202e}b\\x"
        );
        assert_eq!(terminal_safe("caf\u{e9} \u{85}"), "caf\u{e9} \\u{85}");
        let once = terminal_safe("x\ny").into_owned();
        assert_eq!(terminal_safe(&once), once);
    }
}
