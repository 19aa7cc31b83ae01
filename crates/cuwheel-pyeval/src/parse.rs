//! The parser of statements: tokens to a syntax tree.
//!
//! In: the [`Token`]s of a Python file. Out: its statements ([`Stmt`]), or
//! a [`SyntaxError`] naming what was expected where. Expressions are parsed
//! by [`parse_expr`](super::parse_expr).
//!
//! The grammar is Python 3's statement grammar without `async`, `match` and
//! type statements; decorators are parsed and dropped, and a class body is
//! checked for syntax and dropped (a `setup.py` class is a build command,
//! never a value cuwheel reads).

use std::rc::Rc;

use super::ast::{BinOp, Expr, ExprKind, FunctionDef, Handler, Param, ParamKind, Stmt, StmtKind};
use super::source::SyntaxError;
use super::tokenize::{Tok, Token, tokenize};

/// Parses a whole file.
pub fn parse_module(text: &str) -> Result<Vec<Stmt>, SyntaxError> {
    let mut parser = Parser::new(tokenize(text)?);
    let mut body = Vec::new();
    while !parser.at(&Tok::End) {
        body.extend(parser.statement()?);
    }
    Ok(body)
}

pub(super) struct Parser {
    pub(super) tokens: Vec<Token>,
    pub(super) pos: usize,
    /// How deep the productions being read are nested.
    pub(super) nesting: usize,
}

impl Parser {
    pub(super) fn new(tokens: Vec<Token>) -> Parser {
        Parser {
            tokens,
            pos: 0,
            nesting: 0,
        }
    }

    pub(super) fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    pub(super) fn peek_at(&self, ahead: usize) -> &Tok {
        &self.tokens[(self.pos + ahead).min(self.tokens.len() - 1)].tok
    }

    pub(super) fn next(&mut self) -> Token {
        let token = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        token
    }

    pub(super) fn at(&self, tok: &Tok) -> bool {
        &self.peek().tok == tok
    }

    pub(super) fn at_op(&self, op: &str) -> bool {
        matches!(self.peek().tok, Tok::Op(o) if o == op)
    }

    pub(super) fn at_keyword(&self, word: &str) -> bool {
        matches!(&self.peek().tok, Tok::Name(n) if n == word)
    }

    pub(super) fn eat_op(&mut self, op: &str) -> bool {
        let found = self.at_op(op);
        if found {
            self.next();
        }
        found
    }

    pub(super) fn eat_keyword(&mut self, word: &str) -> bool {
        let found = self.at_keyword(word);
        if found {
            self.next();
        }
        found
    }

    pub(super) fn error_here(&self, expected: &str) -> SyntaxError {
        let token = self.peek();
        SyntaxError {
            line: token.line,
            col: token.col,
            message: format!("expected {expected}, found {}", describe(&token.tok)),
        }
    }

    pub(super) fn expect_op(&mut self, op: &str) -> Result<(), SyntaxError> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.error_here(&format!("`{op}`")))
        }
    }

    pub(super) fn expect_keyword(&mut self, word: &str) -> Result<(), SyntaxError> {
        if self.eat_keyword(word) {
            Ok(())
        } else {
            Err(self.error_here(&format!("`{word}`")))
        }
    }

    pub(super) fn name(&mut self) -> Result<String, SyntaxError> {
        match &self.peek().tok {
            Tok::Name(n) if !is_keyword(n) => {
                let n = n.clone();
                self.next();
                Ok(n)
            }
            _ => Err(self.error_here("a name")),
        }
    }

    fn end_of_statement(&mut self) -> Result<(), SyntaxError> {
        if self.at(&Tok::Newline) {
            self.next();
            Ok(())
        } else if self.at(&Tok::End) {
            Ok(())
        } else {
            Err(self.error_here("the end of the line"))
        }
    }

    /// One line's statements (`a = 1; b = 2`) or one compound statement.
    fn statement(&mut self) -> Result<Vec<Stmt>, SyntaxError> {
        let line = self.peek().line;
        let compound = |kind| Ok(vec![Stmt { line, kind }]);
        match &self.peek().tok {
            Tok::Name(n) => match n.as_str() {
                "if" => {
                    self.next();
                    return compound(self.if_rest()?);
                }
                "for" => return compound(self.for_statement()?),
                "while" => {
                    self.next();
                    let test = self.named_test()?;
                    let body = self.block()?;
                    let orelse = self.else_block()?;
                    return compound(StmtKind::While { test, body, orelse });
                }
                "def" => return compound(self.def()?),
                "class" => return compound(self.class()?),
                "try" => return compound(self.try_statement()?),
                "with" => return compound(self.with_statement()?),
                "async" => return Err(self.error_here("a statement cuwheel reads (not `async`)")),
                _ => {}
            },
            Tok::Op("@") => {
                // Decorators: parsed, then the function or class alone.
                while self.eat_op("@") {
                    self.test()?;
                    self.end_of_statement()?;
                }
                if !self.at_keyword("def") && !self.at_keyword("class") {
                    return Err(self.error_here("`def` or `class` after a decorator"));
                }
                return self.statement();
            }
            Tok::Indent => return Err(self.error_here("a statement at this block's indentation")),
            _ => {}
        }
        let mut stmts = vec![self.simple_statement()?];
        while self.eat_op(";") {
            if self.at(&Tok::Newline) || self.at(&Tok::End) {
                break;
            }
            stmts.push(self.simple_statement()?);
        }
        self.end_of_statement()?;
        Ok(stmts)
    }

    fn simple_statement(&mut self) -> Result<Stmt, SyntaxError> {
        let line = self.peek().line;
        let keyword = match &self.peek().tok {
            Tok::Name(n) => n.clone(),
            _ => String::new(),
        };
        let kind = match keyword.as_str() {
            "pass" => {
                self.next();
                StmtKind::Pass
            }
            "break" => {
                self.next();
                StmtKind::Break
            }
            "continue" => {
                self.next();
                StmtKind::Continue
            }
            "return" => {
                self.next();
                StmtKind::Return(self.optional_testlist()?)
            }
            "raise" => {
                self.next();
                let value = self.optional_testlist()?;
                if self.eat_keyword("from") {
                    self.test()?;
                }
                StmtKind::Raise(value)
            }
            "global" | "nonlocal" => {
                self.next();
                let mut names = vec![self.name()?];
                while self.eat_op(",") {
                    names.push(self.name()?);
                }
                StmtKind::Global(names)
            }
            "del" => {
                self.next();
                let mut targets = vec![self.expr()?];
                while self.eat_op(",") {
                    targets.push(self.expr()?);
                }
                StmtKind::Del(targets)
            }
            "assert" => {
                self.next();
                let test = self.test()?;
                if self.eat_op(",") {
                    self.test()?;
                }
                StmtKind::Assert(test)
            }
            "import" => {
                self.next();
                let mut names = Vec::new();
                loop {
                    let dotted = self.dotted_name()?;
                    let alias = if self.eat_keyword("as") {
                        Some(self.name()?)
                    } else {
                        None
                    };
                    names.push((dotted, alias));
                    if !self.eat_op(",") {
                        break;
                    }
                }
                StmtKind::Import(names)
            }
            "from" => self.import_from()?,
            _ => self.expression_statement()?,
        };
        Ok(Stmt { line, kind })
    }

    fn dotted_name(&mut self) -> Result<String, SyntaxError> {
        let mut dotted = self.name()?;
        while self.eat_op(".") {
            dotted.push('.');
            dotted.push_str(&self.name()?);
        }
        Ok(dotted)
    }

    fn import_from(&mut self) -> Result<StmtKind, SyntaxError> {
        self.expect_keyword("from")?;
        let mut level = 0;
        loop {
            if self.eat_op(".") {
                level += 1;
            } else if self.eat_op("...") {
                level += 3;
            } else {
                break;
            }
        }
        let module = if self.at_keyword("import") {
            String::new()
        } else {
            self.dotted_name()?
        };
        self.expect_keyword("import")?;
        let mut names = Vec::new();
        if self.eat_op("*") {
            return Ok(StmtKind::ImportFrom {
                module,
                level,
                names,
            });
        }
        let parenthesised = self.eat_op("(");
        loop {
            let name = self.name()?;
            let alias = if self.eat_keyword("as") {
                Some(self.name()?)
            } else {
                None
            };
            names.push((name, alias));
            if !self.eat_op(",") || (parenthesised && self.at_op(")")) {
                break;
            }
        }
        if parenthesised {
            self.expect_op(")")?;
        }
        Ok(StmtKind::ImportFrom {
            module,
            level,
            names,
        })
    }

    fn optional_testlist(&mut self) -> Result<Option<Expr>, SyntaxError> {
        if self.at(&Tok::Newline) || self.at(&Tok::End) || self.at_op(";") {
            Ok(None)
        } else {
            Ok(Some(self.testlist_star()?))
        }
    }

    fn expression_statement(&mut self) -> Result<StmtKind, SyntaxError> {
        let first = self.testlist_star()?;
        if self.eat_op(":") {
            self.test()?;
            let value = if self.eat_op("=") {
                Some(self.testlist_star()?)
            } else {
                None
            };
            return Ok(StmtKind::AnnAssign {
                target: first,
                value,
            });
        }
        let augmented = match self.peek().tok {
            Tok::Op(op) => BinOp::augmented(op),
            _ => None,
        };
        if let Some(bin) = augmented {
            self.next();
            check_target(&first)?;
            let value = self.testlist_star()?;
            return Ok(StmtKind::AugAssign {
                target: first,
                op: bin,
                value,
            });
        }
        if !self.at_op("=") {
            return Ok(StmtKind::Expr(first));
        }
        let mut targets = vec![first];
        while self.eat_op("=") {
            targets.push(self.testlist_star()?);
        }
        let value = targets.pop().expect("a value after `=`");
        for target in &targets {
            check_target(target)?;
        }
        Ok(StmtKind::Assign { targets, value })
    }

    /// `:` then an indented block, or simple statements on the same line.
    pub(super) fn block(&mut self) -> Result<Vec<Stmt>, SyntaxError> {
        self.nested(Parser::block_unguarded)
    }

    fn block_unguarded(&mut self) -> Result<Vec<Stmt>, SyntaxError> {
        self.expect_op(":")?;
        if !self.at(&Tok::Newline) {
            let mut stmts = vec![self.simple_statement()?];
            while self.eat_op(";") {
                if self.at(&Tok::Newline) {
                    break;
                }
                stmts.push(self.simple_statement()?);
            }
            self.end_of_statement()?;
            return Ok(stmts);
        }
        self.next();
        if !self.at(&Tok::Indent) {
            return Err(self.error_here("an indented block"));
        }
        self.next();
        let mut body = Vec::new();
        while !self.at(&Tok::Dedent) && !self.at(&Tok::End) {
            body.extend(self.statement()?);
        }
        if self.at(&Tok::Dedent) {
            self.next();
        }
        Ok(body)
    }

    fn else_block(&mut self) -> Result<Vec<Stmt>, SyntaxError> {
        if self.eat_keyword("else") {
            self.block()
        } else {
            Ok(Vec::new())
        }
    }

    /// After `if` (or `elif`): test, body, and the `elif`/`else` chain.
    fn if_rest(&mut self) -> Result<StmtKind, SyntaxError> {
        let test = self.named_test()?;
        let body = self.block()?;
        let orelse = if self.at_keyword("elif") {
            let line = self.next().line;
            vec![Stmt {
                line,
                kind: self.if_rest()?,
            }]
        } else {
            self.else_block()?
        };
        Ok(StmtKind::If { test, body, orelse })
    }

    fn for_statement(&mut self) -> Result<StmtKind, SyntaxError> {
        self.expect_keyword("for")?;
        let target = self.target_list()?;
        self.expect_keyword("in")?;
        let iter = self.testlist_star()?;
        let body = self.block()?;
        let orelse = self.else_block()?;
        Ok(StmtKind::For {
            target,
            iter,
            body,
            orelse,
        })
    }

    fn def(&mut self) -> Result<StmtKind, SyntaxError> {
        let line = self.peek().line;
        self.expect_keyword("def")?;
        let name = self.name()?;
        self.expect_op("(")?;
        let params = self.params(")")?;
        self.expect_op(")")?;
        if self.eat_op("->") {
            self.test()?;
        }
        let body = self.block()?;
        Ok(StmtKind::Def(Rc::new(FunctionDef {
            name,
            params,
            body,
            line,
        })))
    }

    /// Parameters up to `close` (`)` for `def`, `:` for `lambda`).
    pub(super) fn params(&mut self, close: &str) -> Result<Vec<Param>, SyntaxError> {
        let mut params = Vec::new();
        while !self.at_op(close) {
            let kind = if self.eat_op("**") {
                ParamKind::DoubleStar
            } else if self.eat_op("*") {
                ParamKind::Star
            } else if self.eat_op("/") {
                if !self.eat_op(",") {
                    break;
                }
                continue;
            } else {
                ParamKind::Normal
            };
            if kind == ParamKind::Star && (self.at_op(",") || self.at_op(close)) {
                // A bare `*`: keyword-only parameters follow.
                if !self.eat_op(",") {
                    break;
                }
                continue;
            }
            let name = self.name()?;
            if close == ")" && self.eat_op(":") {
                self.test()?;
            }
            let default = if self.eat_op("=") {
                Some(self.test()?)
            } else {
                None
            };
            params.push(Param {
                name,
                default,
                kind,
            });
            if !self.eat_op(",") {
                break;
            }
        }
        Ok(params)
    }

    fn class(&mut self) -> Result<StmtKind, SyntaxError> {
        self.expect_keyword("class")?;
        let name = self.name()?;
        if self.eat_op("(") {
            self.call_args()?;
        }
        self.block()?;
        Ok(StmtKind::Class { name })
    }

    fn try_statement(&mut self) -> Result<StmtKind, SyntaxError> {
        self.expect_keyword("try")?;
        let body = self.block()?;
        let mut handlers = Vec::new();
        while self.at_keyword("except") {
            let line = self.next().line;
            self.eat_op("*");
            let (kind, name) = if self.at_op(":") {
                (None, None)
            } else {
                let kind = self.test()?;
                let name = if self.eat_keyword("as") {
                    Some(self.name()?)
                } else {
                    None
                };
                (Some(kind), name)
            };
            let body = self.block()?;
            handlers.push(Handler {
                line,
                kind,
                name,
                body,
            });
        }
        let orelse = self.else_block()?;
        let finalbody = if self.eat_keyword("finally") {
            self.block()?
        } else {
            Vec::new()
        };
        if handlers.is_empty() && finalbody.is_empty() {
            return Err(self.error_here("`except` or `finally`"));
        }
        Ok(StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        })
    }

    fn with_statement(&mut self) -> Result<StmtKind, SyntaxError> {
        self.expect_keyword("with")?;
        let parenthesised = self.at_op("(") && self.with_items_are_parenthesised();
        if parenthesised {
            self.next();
        }
        let mut items = Vec::new();
        loop {
            let context = self.test()?;
            let target = if self.eat_keyword("as") {
                Some(self.target()?)
            } else {
                None
            };
            items.push((context, target));
            if !self.eat_op(",") || (parenthesised && self.at_op(")")) {
                break;
            }
        }
        if parenthesised {
            self.expect_op(")")?;
        }
        let body = self.block()?;
        Ok(StmtKind::With { items, body })
    }

    /// `with (open(a) as f, open(b) as g):` rather than `with (a):`: the
    /// matching `)` is followed by `:` and an `as` is inside.
    fn with_items_are_parenthesised(&self) -> bool {
        let mut depth = 0;
        let mut has_as = false;
        for token in &self.tokens[self.pos..] {
            match &token.tok {
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]" | "}") => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Name(n) if n == "as" && depth == 1 => has_as = true,
                Tok::Newline | Tok::End => break,
                _ => {}
            }
        }
        has_as
    }

    /// A `for` target: `x`, `a, b`, `(a, b)`.
    pub(super) fn target_list(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.peek().line;
        let first = self.target()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_keyword("in") || self.at_op("=") {
                break;
            }
            items.push(self.target()?);
        }
        Ok(Expr::new(line, ExprKind::Tuple(items)))
    }

    fn target(&mut self) -> Result<Expr, SyntaxError> {
        let target = if self.at_op("*") {
            let line = self.next().line;
            Expr::new(line, ExprKind::Starred(Box::new(self.expr()?)))
        } else {
            self.expr()?
        };
        check_target(&target)?;
        Ok(target)
    }
}

/// Whether an expression can be assigned to.
fn check_target(target: &Expr) -> Result<(), SyntaxError> {
    match &target.kind {
        ExprKind::Name(_) | ExprKind::Attribute(..) | ExprKind::Subscript(..) => Ok(()),
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().try_for_each(check_target),
        ExprKind::Starred(inner) => check_target(inner),
        _ => Err(SyntaxError {
            line: target.line,
            col: 1,
            message: "this cannot be assigned to".into(),
        }),
    }
}

pub(super) fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "False"
            | "None"
            | "True"
            | "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
    )
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Name(n) => format!("`{n}`"),
        Tok::Int(i) => format!("`{i}`"),
        Tok::Float(f) => format!("`{f}`"),
        Tok::Str(_) => "a string".into(),
        Tok::Op(op) => format!("`{op}`"),
        Tok::Newline => "the end of the line".into(),
        Tok::Indent => "an indented line".into(),
        Tok::Dedent => "the end of the block".into(),
        Tok::End => "the end of the file".into(),
    }
}
