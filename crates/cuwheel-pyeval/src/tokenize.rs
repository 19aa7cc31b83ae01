//! The tokenizer of the Python subset `setup.py` files are read in.
//!
//! In: the text of a Python file. Out: its [`Token`]s — names, numbers,
//! strings (escapes decoded, f-strings split into literal text and the
//! source of each replacement field), operators, and the `NEWLINE`,
//! `INDENT` and `DEDENT` tokens that carry Python's block structure — or a
//! [`SyntaxError`] at the offending line and column.
//!
//! Lines are joined inside brackets and after a backslash, as Python does;
//! comments and blank lines produce nothing.

use super::source::SyntaxError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Name(String),
    Int(i64),
    Float(f64),
    Str(StrLit),
    /// An operator or delimiter: `(`, `+=`, `**`, `->`, `...`.
    Op(&'static str),
    Newline,
    Indent,
    Dedent,
    End,
}

/// A string literal with its escapes decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum StrLit {
    Plain(String),
    Bytes(String),
    /// An f-string: literal text and replacement fields, in order.
    Format(Vec<FormatPart>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FormatPart {
    Text(String),
    /// The expression's source (`name`, `cfg["x"]`), its conversion (`r`,
    /// `s`, `a`) and its format spec, which may itself hold fields.
    Field {
        source: String,
        conversion: Option<char>,
        spec: Vec<FormatPart>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    /// 1-based line and column (in characters) where the token starts.
    pub line: usize,
    pub col: usize,
}

/// Longest first, so that `**=` wins over `**` and `*`.
const OPERATORS: [&str; 47] = [
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "+", "-", "*", "/", "%", "@", "&", "|",
    "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=",
];

pub fn tokenize(text: &str) -> Result<Vec<Token>, SyntaxError> {
    Lexer {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        tokens: Vec::new(),
        indents: vec![0],
        depth: 0,
        at_line_start: true,
    }
    .run()
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    tokens: Vec<Token>,
    indents: Vec<usize>,
    /// Open brackets: inside them, newlines and indentation mean nothing.
    depth: usize,
    at_line_start: bool,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn error(&self, line: usize, col: usize, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            line,
            col,
            message: message.into(),
        }
    }

    fn push(&mut self, tok: Tok, line: usize, col: usize) {
        self.tokens.push(Token { tok, line, col });
    }

    fn run(mut self) -> Result<Vec<Token>, SyntaxError> {
        while self.pos < self.chars.len() {
            if self.at_line_start && self.depth == 0 {
                self.indentation()?;
                continue;
            }
            let (line, col) = (self.line, self.col);
            let c = self.peek(0).unwrap_or('\n');
            match c {
                ' ' | '\t' | '\x0c' | '\r' => {
                    self.bump();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                '\n' => {
                    self.bump();
                    if self.depth == 0 {
                        self.push(Tok::Newline, line, col);
                        self.at_line_start = true;
                    }
                }
                '\\' if self.peek(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                '\\' if self.peek(1) == Some('\r') && self.peek(2) == Some('\n') => {
                    self.bump();
                    self.bump();
                    self.bump();
                }
                _ if c.is_ascii_digit()
                    || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) =>
                {
                    let tok = self.number()?;
                    self.push(tok, line, col);
                }
                _ if c == '_' || c.is_alphabetic() => {
                    let mut name = String::new();
                    while let Some(c) = self.peek(0).filter(|c| *c == '_' || c.is_alphanumeric()) {
                        name.push(c);
                        self.bump();
                    }
                    if matches!(self.peek(0), Some('\'' | '"')) && is_string_prefix(&name) {
                        let tok = self.string(&name.to_ascii_lowercase(), line, col)?;
                        self.push(tok, line, col);
                    } else {
                        self.push(Tok::Name(name), line, col);
                    }
                }
                '\'' | '"' => {
                    let tok = self.string("", line, col)?;
                    self.push(tok, line, col);
                }
                _ => {
                    let op = OPERATORS
                        .iter()
                        .find(|op| op.chars().enumerate().all(|(i, o)| self.peek(i) == Some(o)))
                        .ok_or_else(|| {
                            self.error(line, col, format!("unexpected character `{c}`"))
                        })?;
                    for _ in 0..op.len() {
                        self.bump();
                    }
                    match *op {
                        "(" | "[" | "{" => {
                            self.depth += 1;
                            if self.depth > super::budget::MAX_NESTING {
                                return Err(self.error(
                                    line,
                                    col,
                                    format!(
                                        "brackets nested more than {} deep: not inferred (cuwheel's budget, \
                                         and CPython's own limit)",
                                        super::budget::MAX_NESTING
                                    ),
                                ));
                            }
                        }
                        ")" | "]" | "}" => {
                            if self.depth == 0 {
                                return Err(self.error(line, col, format!("unmatched `{op}`")));
                            }
                            self.depth -= 1;
                        }
                        _ => {}
                    }
                    self.push(Tok::Op(op), line, col);
                }
            }
        }
        if self.depth > 0 {
            return Err(self.error(self.line, self.col, "the file ends inside brackets"));
        }
        let (line, col) = (self.line, self.col);
        if !matches!(
            self.tokens.last().map(|t| &t.tok),
            None | Some(Tok::Newline)
        ) {
            self.push(Tok::Newline, line, col);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent, line, col);
        }
        self.push(Tok::End, line, col);
        Ok(self.tokens)
    }

    /// At the start of a logical line: measures its indentation and emits
    /// `INDENT`/`DEDENT`; blank and comment-only lines are skipped whole.
    fn indentation(&mut self) -> Result<(), SyntaxError> {
        let mut width = 0;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' => width += 1,
                '\t' => width = (width / 8 + 1) * 8,
                '\x0c' | '\r' => {}
                _ => break,
            }
            self.bump();
        }
        match self.peek(0) {
            None => return Ok(()),
            Some('\n') => {
                self.bump();
                return Ok(());
            }
            Some('#') => {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.bump();
                }
                return Ok(());
            }
            Some(_) => {}
        }
        self.at_line_start = false;
        let (line, col) = (self.line, self.col);
        let current = *self.indents.last().unwrap_or(&0);
        if width > current {
            self.indents.push(width);
            self.push(Tok::Indent, line, col);
        } else {
            while width < *self.indents.last().unwrap_or(&0) {
                self.indents.pop();
                self.push(Tok::Dedent, line, col);
            }
            if width != *self.indents.last().unwrap_or(&0) {
                return Err(self.error(
                    line,
                    col,
                    "this line's indentation matches no outer block",
                ));
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Tok, SyntaxError> {
        let (line, col) = (self.line, self.col);
        let mut text = String::new();
        let radix = match (self.peek(0), self.peek(1).map(|c| c.to_ascii_lowercase())) {
            (Some('0'), Some('x')) => 16,
            (Some('0'), Some('o')) => 8,
            (Some('0'), Some('b')) => 2,
            _ => 10,
        };
        if radix != 10 {
            self.bump();
            self.bump();
        }
        let mut float = false;
        while let Some(c) = self.peek(0) {
            let exponent_sign = radix == 10 && matches!(c, '+' | '-') && text.ends_with(['e', 'E']);
            if c == '_' {
                self.bump();
            } else if c.is_ascii_alphanumeric() && (radix == 16 || !matches!(c, 'j' | 'J'))
                || exponent_sign
            {
                float |= radix == 10 && matches!(c, 'e' | 'E');
                text.push(c);
                self.bump();
            } else if c == '.' && radix == 10 && !float {
                float = true;
                text.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if matches!(self.peek(0), Some('j' | 'J')) {
            return Err(self.error(
                line,
                col,
                "complex numbers are not part of what cuwheel reads",
            ));
        }
        let bad = || self.error(line, col, format!("`{text}` is not a number"));
        if float {
            text.parse().map(Tok::Float).map_err(|_| bad())
        } else {
            i64::from_str_radix(&text, radix)
                .map(Tok::Int)
                .map_err(|_| bad())
        }
    }

    /// A string literal after its prefix (`r`, `b`, `f`, `rb`, `fr`, ...).
    fn string(&mut self, prefix: &str, line: usize, col: usize) -> Result<Tok, SyntaxError> {
        let quote = self.bump().unwrap_or('"');
        let triple = self.peek(0) == Some(quote) && self.peek(1) == Some(quote);
        if triple {
            self.bump();
            self.bump();
        }
        let raw = prefix.contains('r');
        let mut body = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, col, "this string is never closed"));
            };
            if c == quote {
                if !triple {
                    break;
                }
                if self.peek(0) == Some(quote) && self.peek(1) == Some(quote) {
                    self.bump();
                    self.bump();
                    break;
                }
                body.push(c);
            } else if c == '\n' && !triple {
                return Err(self.error(line, col, "this string is never closed on its line"));
            } else if c == '\\' {
                let Some(next) = self.bump() else {
                    return Err(self.error(line, col, "this string is never closed"));
                };
                if raw {
                    body.push('\\');
                    body.push(next);
                } else {
                    self.escape(next, &mut body, line, col)?;
                }
            } else {
                body.push(c);
            }
        }
        if prefix.contains('b') {
            Ok(Tok::Str(StrLit::Bytes(body)))
        } else if prefix.contains('f') {
            split_format(&body)
                .map(|parts| Tok::Str(StrLit::Format(parts)))
                .map_err(|message| self.error(line, col, message))
        } else {
            Ok(Tok::Str(StrLit::Plain(body)))
        }
    }

    fn escape(
        &mut self,
        c: char,
        out: &mut String,
        line: usize,
        col: usize,
    ) -> Result<(), SyntaxError> {
        let simple = match c {
            '\n' => return Ok(()),
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'v' => '\x0b',
            '\\' | '\'' | '"' => c,
            'x' | 'u' | 'U' => {
                let digits = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..digits).filter_map(|_| self.bump()).collect();
                let decoded = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                return match decoded {
                    Some(d) => {
                        out.push(d);
                        Ok(())
                    }
                    None => {
                        Err(self.error(line, col, format!("`\\{c}{hex}` is not a valid escape")))
                    }
                };
            }
            _ => {
                out.push('\\');
                c
            }
        };
        out.push(simple);
        Ok(())
    }
}

fn is_string_prefix(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["r", "u", "b", "f", "rb", "br", "fr", "rf"].contains(&lower.as_str())
}

/// Splits an f-string's body (escapes already decoded) into text and fields.
fn split_format(body: &str) -> Result<Vec<FormatPart>, String> {
    let chars: Vec<char> = body.chars().collect();
    let (parts, end) = format_parts(&chars, 0, false)?;
    debug_assert_eq!(end, chars.len());
    Ok(parts)
}

/// Parses text and fields from `start` up to the end, or (inside a format
/// spec) up to the `}` that closes the field; returns the parts and where
/// it stopped.
fn format_parts(
    chars: &[char],
    start: usize,
    in_spec: bool,
) -> Result<(Vec<FormatPart>, usize), String> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' && chars.get(i + 1) == Some(&'{') && !in_spec {
            text.push('{');
            i += 2;
        } else if c == '}' && in_spec {
            break;
        } else if c == '}' {
            if chars.get(i + 1) != Some(&'}') {
                return Err("a single `}` in an f-string: write `}}`".into());
            }
            text.push('}');
            i += 2;
        } else if c == '{' {
            if !text.is_empty() {
                parts.push(FormatPart::Text(std::mem::take(&mut text)));
            }
            let (field, next) = format_field(chars, i + 1)?;
            parts.push(field);
            i = next;
        } else {
            text.push(c);
            i += 1;
        }
    }
    if !text.is_empty() {
        parts.push(FormatPart::Text(text));
    }
    Ok((parts, i))
}

/// One `{expr!c:spec}` field from just after its `{`; returns the field and
/// the index after its `}`.
fn format_field(chars: &[char], start: usize) -> Result<(FormatPart, usize), String> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut i = start;
    let mut source = String::new();
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' if depth > 0 => depth -= 1,
                '}' | ':' if depth == 0 => break,
                '!' if depth == 0 && chars.get(i + 1) != Some(&'=') => break,
                _ => {}
            },
        }
        source.push(c);
        i += 1;
    }
    let source = source.trim_end_matches('=').trim().to_string();
    if source.is_empty() {
        return Err("an empty `{}` field in an f-string".into());
    }
    let mut conversion = None;
    if chars.get(i) == Some(&'!') {
        conversion = chars.get(i + 1).copied();
        i += 2;
    }
    let mut spec = Vec::new();
    if chars.get(i) == Some(&':') {
        let (parts, next) = format_parts(chars, i + 1, true)?;
        spec = parts;
        i = next;
    }
    if chars.get(i) != Some(&'}') {
        return Err("an f-string field is never closed with `}`".into());
    }
    Ok((
        FormatPart::Field {
            source,
            conversion,
            spec,
        },
        i + 1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        tokenize(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn blocks_become_indent_and_dedent_and_brackets_join_lines() {
        let text = "if x:\n    y = [1,\n  2]  # c\n\n    # only a comment\nz\n";
        assert_eq!(
            toks(text),
            [
                Tok::Name("if".into()),
                Tok::Name("x".into()),
                Tok::Op(":"),
                Tok::Newline,
                Tok::Indent,
                Tok::Name("y".into()),
                Tok::Op("="),
                Tok::Op("["),
                Tok::Int(1),
                Tok::Op(","),
                Tok::Int(2),
                Tok::Op("]"),
                Tok::Newline,
                Tok::Dedent,
                Tok::Name("z".into()),
                Tok::Newline,
                Tok::End,
            ]
        );
    }

    #[test]
    fn strings_decode_escapes_unless_raw() {
        let lit = |s: &str| Tok::Str(StrLit::Plain(s.into()));
        assert_eq!(
            toks(r#"'a\tb' r'a\tb' """x"y""" b'z'"#)[..4],
            [
                lit("a\tb"),
                lit("a\\tb"),
                lit("x\"y"),
                Tok::Str(StrLit::Bytes("z".into())),
            ]
        );
    }

    #[test]
    fn f_strings_split_into_text_and_fields() {
        let [Tok::Str(StrLit::Format(parts)), ..] = &toks("f'{a}_x{{}}{b[\"k\"]!r:>{w}}'")[..]
        else {
            panic!("not an f-string");
        };
        assert_eq!(
            parts,
            &[
                FormatPart::Field {
                    source: "a".into(),
                    conversion: None,
                    spec: vec![]
                },
                FormatPart::Text("_x{}".into()),
                FormatPart::Field {
                    source: "b[\"k\"]".into(),
                    conversion: Some('r'),
                    spec: vec![
                        FormatPart::Text(">".into()),
                        FormatPart::Field {
                            source: "w".into(),
                            conversion: None,
                            spec: vec![]
                        }
                    ]
                },
            ]
        );
    }

    #[test]
    fn numbers_and_operators() {
        assert_eq!(
            toks("x **= 0x1f + 1_000 - 2.5e-1"),
            [
                Tok::Name("x".into()),
                Tok::Op("**="),
                Tok::Int(31),
                Tok::Op("+"),
                Tok::Int(1000),
                Tok::Op("-"),
                Tok::Float(0.25),
                Tok::Newline,
                Tok::End
            ]
        );
    }

    #[test]
    fn errors_say_where() {
        let err = tokenize("x = 'abc\n").unwrap_err();
        assert_eq!((err.line, err.col), (1, 5));
        let err = tokenize("if x:\n        a\n    b\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(tokenize("x = (1,\n").is_err());
        assert!(tokenize("x = $\n").unwrap_err().message.contains('$'));
    }
}
