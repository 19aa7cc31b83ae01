//! The parser of expressions, by precedence climbing over Python 3's
//! expression grammar.
//!
//! In: the [`Parser`]'s tokens at an expression. Out: an [`Expr`], or a
//! [`SyntaxError`]. Adjacent string literals are joined; an f-string's
//! fields are parsed here from the source the tokenizer kept.

use std::rc::Rc;

use super::ast::{
    Arg, BinOp, BoolOp, CmpOp, CompKind, Const, Expr, ExprKind, FPart, FunctionDef, Generator,
    UnaryOp,
};
use super::parse::{Parser, is_keyword};
use super::source::SyntaxError;
use super::tokenize::{FormatPart, StrLit, Tok, tokenize};

impl Parser {
    /// `a, *b, c` (a tuple when there is a comma) or one test.
    pub(super) fn testlist_star(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let first = self.star_or_test()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.ends_list() {
                break;
            }
            items.push(self.star_or_test()?);
        }
        Ok(Expr::new(line, ExprKind::Tuple(items)))
    }

    fn ends_list(&self) -> bool {
        matches!(
            self.peek().tok,
            Tok::Newline | Tok::End | Tok::Op("=" | ")" | "]" | "}" | ":" | ";")
        ) || matches!(&self.peek().tok, Tok::Op(op) if BinOp::augmented(op).is_some())
    }

    fn star_or_test(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_op("*") {
            let line = self.next().line;
            return Ok(Expr::new(line, ExprKind::Starred(Box::new(self.expr()?))));
        }
        self.named_test()
    }

    /// A test, or `name := test`.
    pub(super) fn named_test(&mut self) -> Result<Expr, SyntaxError> {
        let walrus = match (&self.peek().tok, self.peek_at(1)) {
            (Tok::Name(name), Tok::Op(":=")) => Some(name.clone()),
            _ => None,
        };
        if let Some(name) = walrus {
            let line = self.next().line;
            self.next();
            let value = self.test()?;
            return Ok(Expr::new(line, ExprKind::Walrus(name, Box::new(value))));
        }
        self.test()
    }

    pub(super) fn test(&mut self) -> Result<Expr, SyntaxError> {
        self.nested(Parser::test_unguarded)
    }

    fn test_unguarded(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        if self.eat_keyword("yield") {
            if self.eat_keyword("from") {
                let from = self.test()?;
                return Ok(Expr::new(line, ExprKind::YieldFrom(Box::new(from))));
            }
            let value = if self.ends_list() || self.at_op(",") {
                None
            } else {
                Some(Box::new(self.testlist_star()?))
            };
            return Ok(Expr::new(line, ExprKind::Yield(value)));
        }
        if self.eat_keyword("lambda") {
            let params = self.params(":")?;
            self.expect_op(":")?;
            let body = self.test()?;
            let def = FunctionDef {
                name: "<lambda>".into(),
                params,
                body: vec![super::ast::Stmt {
                    line,
                    kind: super::ast::StmtKind::Return(Some(body)),
                }],
                line,
            };
            return Ok(Expr::new(line, ExprKind::Lambda(Rc::new(def))));
        }
        let body = self.or_test()?;
        if !self.at_keyword("if") {
            return Ok(body);
        }
        self.next();
        let test = self.or_test()?;
        self.expect_keyword("else")?;
        let orelse = self.test()?;
        Ok(Expr::new(
            line,
            ExprKind::IfExp {
                test: Box::new(test),
                body: Box::new(body),
                orelse: Box::new(orelse),
            },
        ))
    }

    fn or_test(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.and_test()?;
        for length in 1.. {
            self.chain(length)?;
            if !self.at_keyword("or") {
                break;
            }
            let line = self.next().line;
            let right = self.and_test()?;
            left = Expr::new(
                line,
                ExprKind::BoolOp(BoolOp::Or, Box::new(left), Box::new(right)),
            );
        }
        Ok(left)
    }

    fn and_test(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.not_test()?;
        for length in 1.. {
            self.chain(length)?;
            if !self.at_keyword("and") {
                break;
            }
            let line = self.next().line;
            let right = self.not_test()?;
            left = Expr::new(
                line,
                ExprKind::BoolOp(BoolOp::And, Box::new(left), Box::new(right)),
            );
        }
        Ok(left)
    }

    fn not_test(&mut self) -> Result<Expr, SyntaxError> {
        self.nested(Parser::not_test_unguarded)
    }

    fn not_test_unguarded(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_keyword("not") {
            let line = self.next().line;
            let operand = self.not_test()?;
            return Ok(Expr::new(
                line,
                ExprKind::Unary(UnaryOp::Not, Box::new(operand)),
            ));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let first = self.expr()?;
        let mut rest = Vec::new();
        loop {
            let op = match &self.peek().tok {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::NotEq,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::LtE,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::GtE,
                Tok::Name(n) if n == "in" => CmpOp::In,
                Tok::Name(n) if n == "is" => {
                    self.next();
                    let op = if self.eat_keyword("not") {
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    };
                    rest.push((op, self.expr()?));
                    continue;
                }
                Tok::Name(n)
                    if n == "not" && matches!(self.peek_at(1), Tok::Name(m) if m == "in") =>
                {
                    self.next();
                    CmpOp::NotIn
                }
                _ => break,
            };
            self.next();
            rest.push((op, self.expr()?));
        }
        if rest.is_empty() {
            Ok(first)
        } else {
            Ok(Expr::new(line, ExprKind::Compare(Box::new(first), rest)))
        }
    }

    /// The binary operators, loosest first.
    pub(super) fn expr(&mut self) -> Result<Expr, SyntaxError> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> Result<Expr, SyntaxError> {
        const LEVELS: [&[(&str, BinOp)]; 6] = [
            &[("|", BinOp::BitOr)],
            &[("^", BinOp::BitXor)],
            &[("&", BinOp::BitAnd)],
            &[("<<", BinOp::LShift), (">>", BinOp::RShift)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[
                ("*", BinOp::Mul),
                ("/", BinOp::Div),
                ("//", BinOp::FloorDiv),
                ("%", BinOp::Mod),
                ("@", BinOp::MatMul),
            ],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.factor();
        };
        let mut left = self.binary(level + 1)?;
        for length in 1.. {
            self.chain(length)?;
            let found = ops.iter().find(|(sym, _)| self.at_op(sym));
            let Some(&(_, op)) = found else {
                break;
            };
            let line = self.next().line;
            let right = self.binary(level + 1)?;
            left = Expr::new(line, ExprKind::BinOp(Box::new(left), op, Box::new(right)));
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Expr, SyntaxError> {
        self.nested(Parser::factor_unguarded)
    }

    fn factor_unguarded(&mut self) -> Result<Expr, SyntaxError> {
        let op = match self.peek().tok {
            Tok::Op("-") => Some(UnaryOp::Neg),
            Tok::Op("+") => Some(UnaryOp::Pos),
            Tok::Op("~") => Some(UnaryOp::Invert),
            _ => None,
        };
        if let Some(op) = op {
            let line = self.next().line;
            let operand = self.factor()?;
            return Ok(Expr::new(line, ExprKind::Unary(op, Box::new(operand))));
        }
        let base = self.atom_expr()?;
        if self.at_op("**") {
            let line = self.next().line;
            let exponent = self.factor()?;
            return Ok(Expr::new(
                line,
                ExprKind::BinOp(Box::new(base), BinOp::Pow, Box::new(exponent)),
            ));
        }
        Ok(base)
    }

    /// An atom and its trailers: calls, subscripts, attributes.
    fn atom_expr(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_keyword("await") {
            return Err(self.error_here("an expression cuwheel reads (not `await`)"));
        }
        let mut value = self.atom()?;
        for length in 1.. {
            self.chain(length)?;
            let line = self.peek().line;
            if self.eat_op("(") {
                let args = self.call_args()?;
                value = Expr::new(line, ExprKind::Call(Box::new(value), args));
            } else if self.eat_op("[") {
                let index = self.subscript_list()?;
                self.expect_op("]")?;
                value = Expr::new(line, ExprKind::Subscript(Box::new(value), Box::new(index)));
            } else if self.eat_op(".") {
                let attr = match &self.peek().tok {
                    Tok::Name(n) => n.clone(),
                    _ => return Err(self.error_here("an attribute name")),
                };
                self.next();
                value = Expr::new(line, ExprKind::Attribute(Box::new(value), attr));
            } else {
                break;
            }
        }
        Ok(value)
    }

    /// Arguments after `(`, through the closing `)`.
    pub(super) fn call_args(&mut self) -> Result<Vec<Arg>, SyntaxError> {
        let mut args = Vec::new();
        while !self.at_op(")") {
            if self.eat_op("**") {
                args.push(Arg::DoubleStar(self.test()?));
            } else if self.eat_op("*") {
                args.push(Arg::Star(self.test()?));
            } else if matches!(self.peek_at(1), Tok::Op("="))
                && matches!(&self.peek().tok, Tok::Name(n) if !is_keyword(n))
            {
                let name = self.name()?;
                self.next();
                args.push(Arg::Keyword(name, self.test()?));
            } else {
                let value = self.named_test()?;
                if self.at_keyword("for") || self.at_keyword("async") {
                    let line = value.line;
                    let generators = self.comprehension_clauses()?;
                    args.push(Arg::Positional(Expr::new(
                        line,
                        ExprKind::Comprehension {
                            kind: CompKind::Generator(Box::new(value)),
                            generators,
                        },
                    )));
                } else {
                    args.push(Arg::Positional(value));
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok(args)
    }

    fn subscript_list(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let first = self.subscript()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_op("]") {
                break;
            }
            items.push(self.subscript()?);
        }
        Ok(Expr::new(line, ExprKind::Tuple(items)))
    }

    fn subscript(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let part = |p: &mut Parser| -> Result<Option<Box<Expr>>, SyntaxError> {
            if p.at_op(":") || p.at_op("]") || p.at_op(",") {
                Ok(None)
            } else {
                Ok(Some(Box::new(p.test()?)))
            }
        };
        let lower = part(self)?;
        if !self.eat_op(":") {
            return lower.map(|e| *e).ok_or_else(|| self.error_here("an index"));
        }
        let upper = part(self)?;
        let step = if self.eat_op(":") { part(self)? } else { None };
        Ok(Expr::new(line, ExprKind::Slice(lower, upper, step)))
    }

    fn atom(&mut self) -> Result<Expr, SyntaxError> {
        let token = self.peek().clone();
        let line = token.line;
        let constant = |c| Ok(Expr::new(line, ExprKind::Const(c)));
        match token.tok {
            Tok::Int(i) => {
                self.next();
                constant(Const::Int(i))
            }
            Tok::Float(f) => {
                self.next();
                constant(Const::Float(f))
            }
            Tok::Str(_) => self.strings(),
            Tok::Op("...") => {
                self.next();
                constant(Const::Ellipsis)
            }
            Tok::Name(ref n) => match n.as_str() {
                "None" => {
                    self.next();
                    constant(Const::None)
                }
                "True" | "False" => {
                    self.next();
                    constant(Const::Bool(n == "True"))
                }
                _ if is_keyword(n) => Err(self.error_here("an expression")),
                _ => {
                    self.next();
                    Ok(Expr::new(line, ExprKind::Name(n.clone())))
                }
            },
            Tok::Op("(") => {
                self.next();
                if self.eat_op(")") {
                    return Ok(Expr::new(line, ExprKind::Tuple(Vec::new())));
                }
                let first = self.star_or_test()?;
                if self.at_keyword("for") {
                    let generators = self.comprehension_clauses()?;
                    self.expect_op(")")?;
                    return Ok(Expr::new(
                        line,
                        ExprKind::Comprehension {
                            kind: CompKind::Generator(Box::new(first)),
                            generators,
                        },
                    ));
                }
                if self.eat_op(")") {
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.at_op(")") {
                        break;
                    }
                    items.push(self.star_or_test()?);
                }
                self.expect_op(")")?;
                Ok(Expr::new(line, ExprKind::Tuple(items)))
            }
            Tok::Op("[") => {
                self.next();
                let items = self.display_items("]", |e| CompKind::List(Box::new(e)))?;
                match items {
                    Display::Items(items) => Ok(Expr::new(line, ExprKind::List(items))),
                    Display::Comprehension(kind, generators) => Ok(Expr::new(
                        line,
                        ExprKind::Comprehension { kind, generators },
                    )),
                }
            }
            Tok::Op("{") => {
                self.next();
                self.brace(line)
            }
            _ => Err(self.error_here("an expression")),
        }
    }

    /// Items of a list or set display, or a comprehension, through `close`.
    fn display_items(
        &mut self,
        close: &str,
        comp: impl Fn(Expr) -> CompKind,
    ) -> Result<Display, SyntaxError> {
        let mut items = Vec::new();
        while !self.at_op(close) {
            let item = self.star_or_test()?;
            if items.is_empty() && self.at_keyword("for") {
                let generators = self.comprehension_clauses()?;
                self.expect_op(close)?;
                return Ok(Display::Comprehension(comp(item), generators));
            }
            items.push(item);
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(close)?;
        Ok(Display::Items(items))
    }

    /// After `{`: a dict, a set, or one of their comprehensions.
    fn brace(&mut self, line: usize) -> Result<Expr, SyntaxError> {
        if self.eat_op("}") {
            return Ok(Expr::new(line, ExprKind::Dict(Vec::new())));
        }
        let is_dict = self.at_op("**") || {
            let save = self.pos;
            let first = self.star_or_test();
            let colon = first.is_ok() && self.at_op(":");
            self.pos = save;
            colon
        };
        if !is_dict {
            return match self.display_items("}", |e| CompKind::Set(Box::new(e)))? {
                Display::Items(items) => Ok(Expr::new(line, ExprKind::Set(items))),
                Display::Comprehension(kind, generators) => Ok(Expr::new(
                    line,
                    ExprKind::Comprehension { kind, generators },
                )),
            };
        }
        let mut pairs = Vec::new();
        while !self.at_op("}") {
            if self.eat_op("**") {
                pairs.push((None, self.expr()?));
            } else {
                let key = self.test()?;
                self.expect_op(":")?;
                let value = self.test()?;
                if pairs.is_empty() && self.at_keyword("for") {
                    let generators = self.comprehension_clauses()?;
                    self.expect_op("}")?;
                    return Ok(Expr::new(
                        line,
                        ExprKind::Comprehension {
                            kind: CompKind::Dict(Box::new(key), Box::new(value)),
                            generators,
                        },
                    ));
                }
                pairs.push((Some(key), value));
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op("}")?;
        Ok(Expr::new(line, ExprKind::Dict(pairs)))
    }

    /// `for x in xs if c for y in ys ...` of a comprehension.
    fn comprehension_clauses(&mut self) -> Result<Vec<Generator>, SyntaxError> {
        let mut generators = Vec::new();
        while self.eat_keyword("for") {
            let target = self.target_list()?;
            self.expect_keyword("in")?;
            let iter = self.or_test()?;
            let mut conditions = Vec::new();
            while self.eat_keyword("if") {
                conditions.push(self.or_test_no_cond()?);
            }
            generators.push(Generator {
                target,
                iter,
                conditions,
            });
        }
        Ok(generators)
    }

    /// A comprehension's condition: an `or_test` (a conditional expression
    /// there would need parentheses).
    fn or_test_no_cond(&mut self) -> Result<Expr, SyntaxError> {
        self.or_test()
    }

    /// Adjacent string literals, joined; f-strings become `FString`.
    fn strings(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let mut parts: Vec<FPart> = Vec::new();
        let mut formatted = false;
        let mut bytes = false;
        while let Tok::Str(lit) = self.peek().tok.clone() {
            let token = self.next();
            match lit {
                StrLit::Plain(s) => parts.push(FPart::Text(s)),
                StrLit::Bytes(s) => {
                    bytes = true;
                    parts.push(FPart::Text(s));
                }
                StrLit::Format(fparts) => {
                    formatted = true;
                    parts.extend(convert_format(&fparts, token.line)?);
                }
            }
        }
        if formatted {
            return Ok(Expr::new(line, ExprKind::FString(parts)));
        }
        let text: String = parts
            .into_iter()
            .map(|p| match p {
                FPart::Text(s) => s,
                FPart::Field { .. } => String::new(),
            })
            .collect();
        let value = if bytes {
            Const::Bytes(text)
        } else {
            Const::Str(text)
        };
        Ok(Expr::new(line, ExprKind::Const(value)))
    }
}

enum Display {
    Items(Vec<Expr>),
    Comprehension(CompKind, Vec<Generator>),
}

/// The tokenizer's f-string parts with each field's source parsed.
fn convert_format(parts: &[FormatPart], line: usize) -> Result<Vec<FPart>, SyntaxError> {
    parts
        .iter()
        .map(|part| match part {
            FormatPart::Text(s) => Ok(FPart::Text(s.clone())),
            FormatPart::Field {
                source,
                conversion,
                spec,
            } => {
                let at_line = |mut e: SyntaxError| {
                    e.message = format!("in the f-string field `{{{source}}}`: {}", e.message);
                    e.line = line;
                    e
                };
                let mut parser = Parser::new(tokenize(&format!("({source})")).map_err(at_line)?);
                let mut expr = parser.testlist_star().map_err(at_line)?;
                expr.walk_lines(line);
                Ok(FPart::Field {
                    expr,
                    conversion: *conversion,
                    spec: convert_format(spec, line)?,
                })
            }
        })
        .collect()
}

impl Expr {
    /// Moves an expression parsed on its own (an f-string field) to the line
    /// of the literal that holds it.
    fn walk_lines(&mut self, line: usize) {
        fn set(e: &mut Expr, line: usize) {
            e.line = line;
            match &mut e.kind {
                ExprKind::Attribute(v, _) | ExprKind::Starred(v) | ExprKind::Unary(_, v) => {
                    set(v, line)
                }
                ExprKind::Subscript(a, b)
                | ExprKind::BinOp(a, _, b)
                | ExprKind::BoolOp(_, a, b) => {
                    set(a, line);
                    set(b, line);
                }
                ExprKind::Call(f, args) => {
                    set(f, line);
                    for a in args {
                        match a {
                            Arg::Positional(x)
                            | Arg::Star(x)
                            | Arg::Keyword(_, x)
                            | Arg::DoubleStar(x) => set(x, line),
                        }
                    }
                }
                ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
                    xs.iter_mut().for_each(|x| set(x, line))
                }
                _ => {}
            }
        }
        set(self, line);
    }
}
