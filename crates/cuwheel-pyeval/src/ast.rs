//! The syntax tree of the Python subset: what [`parse`](super::parse)
//! builds and [`eval`](super::eval) walks.
//!
//! In: nothing (types only). Out: statements and expressions, each with the
//! line it starts on, so that every note can quote its source.

use std::rc::Rc;

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub line: usize,
    pub kind: StmtKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value`: every target gets the value.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    /// `x: int = 3` (the annotation is dropped).
    AnnAssign {
        target: Expr,
        value: Option<Expr>,
    },
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Def(Rc<FunctionDef>),
    Class {
        name: String,
    },
    Return(Option<Expr>),
    /// `import a.b as c`: (dotted name, alias).
    Import(Vec<(String, Option<String>)>),
    /// `from ..a import b as c`; `names` is empty for `import *`.
    ImportFrom {
        module: String,
        level: usize,
        names: Vec<(String, Option<String>)>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<Handler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    With {
        items: Vec<(Expr, Option<Expr>)>,
        body: Vec<Stmt>,
    },
    Raise(Option<Expr>),
    Global(Vec<String>),
    Del(Vec<Expr>),
    Assert(Expr),
    Pass,
    Break,
    Continue,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    pub line: usize,
    pub kind: Option<Expr>,
    pub name: Option<String>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FunctionDef {
    pub name: String,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub default: Option<Expr>,
    pub kind: ParamKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Normal,
    /// `*args`
    Star,
    /// `**kwargs`
    DoubleStar,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub line: usize,
    pub kind: ExprKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Name(String),
    Const(Const),
    FString(Vec<FPart>),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    Set(Vec<Expr>),
    /// `None` as a key is a `**mapping` spread.
    Dict(Vec<(Option<Expr>, Expr)>),
    Attribute(Box<Expr>, String),
    Subscript(Box<Expr>, Box<Expr>),
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    Call(Box<Expr>, Vec<Arg>),
    BinOp(Box<Expr>, BinOp, Box<Expr>),
    Unary(UnaryOp, Box<Expr>),
    BoolOp(BoolOp, Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Lambda(Rc<FunctionDef>),
    Comprehension {
        kind: CompKind,
        generators: Vec<Generator>,
    },
    Starred(Box<Expr>),
    /// `name := value`
    Walrus(String, Box<Expr>),
    /// `yield value` (a generator is evaluated eagerly into a list).
    Yield(Option<Box<Expr>>),
    /// `yield from iterable`
    YieldFrom(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(String),
    Ellipsis,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FPart {
    Text(String),
    Field {
        expr: Expr,
        conversion: Option<char>,
        spec: Vec<FPart>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Star(Expr),
    Keyword(String, Expr),
    DoubleStar(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CompKind {
    List(Box<Expr>),
    Set(Box<Expr>),
    Generator(Box<Expr>),
    Dict(Box<Expr>, Box<Expr>),
}

/// `for target in iter if cond...`
#[derive(Debug, Clone, PartialEq)]
pub struct Generator {
    pub target: Expr,
    pub iter: Expr,
    pub conditions: Vec<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitOr,
    BitAnd,
    BitXor,
    LShift,
    RShift,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitOr => "|",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }

    /// The operator of `op=` (`+=` → `+`).
    pub fn augmented(op: &str) -> Option<BinOp> {
        let base = op.strip_suffix('=')?;
        BinOp::ALL.into_iter().find(|b| b.symbol() == base)
    }

    const ALL: [BinOp; 13] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::FloorDiv,
        BinOp::Mod,
        BinOp::Pow,
        BinOp::MatMul,
        BinOp::BitOr,
        BinOp::BitAnd,
        BinOp::BitXor,
        BinOp::LShift,
        BinOp::RShift,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Pos,
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    In,
    NotIn,
    Is,
    IsNot,
}

impl Expr {
    pub fn new(line: usize, kind: ExprKind) -> Expr {
        Expr { line, kind }
    }

    /// Whether a name or attribute spelled `name` occurs anywhere inside:
    /// how a branch is recognised as the one that builds a `CUDAExtension`.
    pub fn mentions(&self, name: &str) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            found |= matches!(&e.kind, ExprKind::Name(n) | ExprKind::Attribute(_, n) if n == name);
        });
        found
    }

    /// Calls `visit` on this expression and every one inside it.
    pub fn walk(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        let mut each = |exprs: &mut dyn Iterator<Item = &Expr>| {
            for e in exprs {
                e.walk(visit);
            }
        };
        match &self.kind {
            ExprKind::Name(_) | ExprKind::Const(_) => {}
            ExprKind::FString(parts) => each(&mut fparts_exprs(parts).into_iter()),
            ExprKind::List(items) | ExprKind::Tuple(items) | ExprKind::Set(items) => {
                each(&mut items.iter())
            }
            ExprKind::Dict(pairs) => each(
                &mut pairs
                    .iter()
                    .flat_map(|(k, v)| k.iter().chain(std::iter::once(v))),
            ),
            ExprKind::Attribute(value, _)
            | ExprKind::Starred(value)
            | ExprKind::Unary(_, value) => each(&mut std::iter::once(&**value)),
            ExprKind::Walrus(_, value) | ExprKind::YieldFrom(value) => {
                each(&mut std::iter::once(&**value))
            }
            ExprKind::Yield(value) => each(&mut value.iter().map(|v| &**v)),
            ExprKind::Subscript(a, b) | ExprKind::BinOp(a, _, b) | ExprKind::BoolOp(_, a, b) => {
                each(&mut [&**a, &**b].into_iter())
            }
            ExprKind::Slice(a, b, c) => each(&mut [a, b, c].into_iter().flatten().map(|e| &**e)),
            ExprKind::Call(func, args) => {
                each(&mut std::iter::once(&**func));
                each(&mut args.iter().map(|a| match a {
                    Arg::Positional(e) | Arg::Star(e) | Arg::Keyword(_, e) | Arg::DoubleStar(e) => {
                        e
                    }
                }));
            }
            ExprKind::Compare(first, rest) => {
                each(&mut std::iter::once(&**first).chain(rest.iter().map(|(_, e)| e)))
            }
            ExprKind::IfExp { test, body, orelse } => {
                each(&mut [&**test, &**body, &**orelse].into_iter())
            }
            ExprKind::Lambda(def) => {
                each(&mut def.params.iter().filter_map(|p| p.default.as_ref()))
            }
            ExprKind::Comprehension { kind, generators } => {
                match kind {
                    CompKind::List(e) | CompKind::Set(e) | CompKind::Generator(e) => {
                        each(&mut std::iter::once(&**e))
                    }
                    CompKind::Dict(k, v) => each(&mut [&**k, &**v].into_iter()),
                }
                for g in generators {
                    each(
                        &mut std::iter::once(&g.target)
                            .chain([&g.iter])
                            .chain(&g.conditions),
                    );
                }
            }
        }
    }
}

fn fparts_exprs(parts: &[FPart]) -> Vec<&Expr> {
    parts
        .iter()
        .flat_map(|p| match p {
            FPart::Text(_) => Vec::new(),
            FPart::Field { expr, spec, .. } => {
                let mut v = vec![expr];
                v.extend(fparts_exprs(spec));
                v
            }
        })
        .collect()
}

/// Whether `name` occurs anywhere in these statements (see [`Expr::mentions`]).
pub fn block_mentions(body: &[Stmt], name: &str) -> bool {
    block_any(
        body,
        &|e: &Expr| matches!(&e.kind, ExprKind::Name(n) | ExprKind::Attribute(_, n) if n == name),
    )
}

/// Whether a string literal in these statements contains `text`.
pub fn block_has_string(body: &[Stmt], text: &str) -> bool {
    block_any(body, &|e: &Expr| match &e.kind {
        ExprKind::Const(Const::Str(s)) => s.contains(text),
        ExprKind::FString(parts) => parts
            .iter()
            .any(|p| matches!(p, FPart::Text(s) if s.contains(text))),
        _ => false,
    })
}

/// Whether any expression in these statements (imported names included,
/// as names) satisfies `pred`.
pub fn block_any(body: &[Stmt], pred: &dyn Fn(&Expr) -> bool) -> bool {
    body.iter().any(|stmt| stmt_any(stmt, pred, true))
}

/// Whether a function with this body is a generator: it yields, outside
/// the functions defined inside it.
pub fn block_yields(body: &[Stmt]) -> bool {
    let pred = |e: &Expr| matches!(e.kind, ExprKind::Yield(_) | ExprKind::YieldFrom(_));
    body.iter().any(|stmt| stmt_any(stmt, &pred, false))
}

fn expr_any(expr: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    let mut found = false;
    expr.walk(&mut |e| found |= pred(e));
    found
}

fn stmt_any(stmt: &Stmt, pred: &dyn Fn(&Expr) -> bool, into_defs: bool) -> bool {
    let e = |x: &Expr| expr_any(x, pred);
    let b = |x: &[Stmt]| x.iter().any(|s| stmt_any(s, pred, into_defs));
    match &stmt.kind {
        StmtKind::Expr(x) | StmtKind::Assert(x) => e(x),
        StmtKind::Assign { targets, value } => targets.iter().any(e) || e(value),
        StmtKind::AugAssign { target, value, .. } => e(target) || e(value),
        StmtKind::AnnAssign { target, value } => e(target) || value.as_ref().is_some_and(e),
        StmtKind::If { test, body, orelse } | StmtKind::While { test, body, orelse } => {
            e(test) || b(body) || b(orelse)
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => e(target) || e(iter) || b(body) || b(orelse),
        StmtKind::Def(def) => into_defs && b(&def.body),
        StmtKind::Return(x) | StmtKind::Raise(x) => x.as_ref().is_some_and(e),
        StmtKind::Import(names) | StmtKind::ImportFrom { names, .. } => {
            names.iter().any(|(n, alias)| {
                let bound = alias
                    .as_deref()
                    .unwrap_or_else(|| n.rsplit('.').next().unwrap_or(n));
                pred(&Expr::new(stmt.line, ExprKind::Name(bound.to_string())))
            })
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => b(body) || handlers.iter().any(|h| b(&h.body)) || b(orelse) || b(finalbody),
        StmtKind::With { items, body } => {
            items.iter().any(|(x, t)| e(x) || t.as_ref().is_some_and(e)) || b(body)
        }
        StmtKind::Del(xs) => xs.iter().any(e),
        StmtKind::Class { .. }
        | StmtKind::Global(_)
        | StmtKind::Pass
        | StmtKind::Break
        | StmtKind::Continue => false,
    }
}

/// The names these statements bind by assignment (targets of `=`, `+=`,
/// `for` and `with`, in every branch and loop body, not inside functions).
pub fn assigned_names(body: &[Stmt], names: &mut Vec<String>) {
    fn target(expr: &Expr, names: &mut Vec<String>) {
        match &expr.kind {
            ExprKind::Name(n) if !names.contains(n) => names.push(n.clone()),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter().for_each(|i| target(i, names))
            }
            ExprKind::Starred(inner) => target(inner, names),
            _ => {}
        }
    }
    for stmt in body {
        match &stmt.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target(t, names)),
            StmtKind::AugAssign { target: t, .. } | StmtKind::AnnAssign { target: t, .. } => {
                target(t, names)
            }
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
                assigned_names(body, names);
                assigned_names(orelse, names);
            }
            StmtKind::For {
                target: t,
                body,
                orelse,
                ..
            } => {
                target(t, names);
                assigned_names(body, names);
                assigned_names(orelse, names);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                assigned_names(body, names);
                for handler in handlers {
                    assigned_names(&handler.body, names);
                }
                assigned_names(orelse, names);
                assigned_names(finalbody, names);
            }
            StmtKind::With { items, body } => {
                for (_, t) in items {
                    if let Some(t) = t {
                        target(t, names);
                    }
                }
                assigned_names(body, names);
            }
            _ => {}
        }
    }
}
