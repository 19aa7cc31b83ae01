//! The parser over small Python texts: trees, precedence, syntax errors.

use cuwheel_pyeval::parse_module;
use cuwheel_pyeval::{
    Arg, BinOp, BoolOp, CmpOp, CompKind, Const, Expr, ExprKind, FPart, Stmt, StmtKind, UnaryOp,
};

fn expr(text: &str) -> Expr {
    let body = parse_module(text).unwrap();
    match body.into_iter().next().map(|s| s.kind) {
        Some(StmtKind::Expr(e)) => e,
        other => panic!("not an expression: {other:?}"),
    }
}

fn name(n: &str) -> Expr {
    Expr::new(1, ExprKind::Name(n.into()))
}

#[test]
fn precedence_and_comparison_chains() {
    let e = expr("a + b * c == d and not e in f\n");
    let ExprKind::BoolOp(BoolOp::And, left, right) = e.kind else {
        panic!("{e:?}")
    };
    let ExprKind::Compare(sum, ops) = left.kind else {
        panic!()
    };
    assert_eq!(ops, vec![(CmpOp::Eq, name("d"))]);
    let ExprKind::BinOp(a, BinOp::Add, product) = sum.kind else {
        panic!()
    };
    assert_eq!(*a, name("a"));
    assert!(matches!(product.kind, ExprKind::BinOp(_, BinOp::Mul, _)));
    assert!(matches!(right.kind, ExprKind::Unary(UnaryOp::Not, _)));
}

#[test]
fn displays_comprehensions_and_calls() {
    assert!(matches!(expr("{}\n").kind, ExprKind::Dict(ref p) if p.is_empty()));
    assert!(matches!(expr("{1, 2}\n").kind, ExprKind::Set(ref p) if p.len() == 2));
    assert!(matches!(expr("{'a': 1, **b}\n").kind, ExprKind::Dict(ref p) if p.len() == 2));
    assert!(matches!(expr("(1,)\n").kind, ExprKind::Tuple(ref p) if p.len() == 1));
    let e = expr("[p for p in files if 'hip' not in p]\n");
    let ExprKind::Comprehension {
        kind: CompKind::List(_),
        generators,
    } = e.kind
    else {
        panic!()
    };
    assert_eq!(generators[0].conditions.len(), 1);
    let e = expr("set(d for ds in x.values() for d in ds)\n");
    let ExprKind::Call(_, args) = e.kind else {
        panic!()
    };
    assert!(
        matches!(&args[0], Arg::Positional(Expr { kind: ExprKind::Comprehension { generators, .. }, .. }) if generators.len() == 2)
    );
    let e = expr("f(a, *b, c=1, **d)\n");
    let ExprKind::Call(_, args) = e.kind else {
        panic!()
    };
    assert_eq!(args.len(), 4);
    assert!(
        matches!(expr("x[1:-4]\n").kind, ExprKind::Subscript(_, ref s) if matches!(s.kind, ExprKind::Slice(..)))
    );
    assert!(matches!(
        expr("a if b else c\n").kind,
        ExprKind::IfExp { .. }
    ));
    assert!(
        matches!(expr("lambda x, y=2: x\n").kind, ExprKind::Lambda(ref d) if d.params.len() == 2)
    );
}

#[test]
fn strings_join_and_f_string_fields_parse() {
    assert_eq!(
        expr("('a' 'b'\n 'c')\n").kind,
        ExprKind::Const(Const::Str("abc".into()))
    );
    let e = expr("f'{URL}/archive/{v[0]}.tar.gz'\n");
    let ExprKind::FString(parts) = e.kind else {
        panic!()
    };
    assert_eq!(parts.len(), 4);
    assert!(
        matches!(&parts[2], FPart::Field { expr, .. } if matches!(expr.kind, ExprKind::Subscript(..)))
    );
}

#[test]
fn statements_and_blocks() {
    let text = "import os.path as osp\nfrom .x import (a,\n  b as c,)\n\
                def f(a, b=1, *args, k=2, **kw) -> int:\n    '''doc'''\n    return a\n\
                @decorator(1)\nclass C(Base):\n    x = 1\n\
                try:\n    import torch\nexcept ImportError as e:\n    raise RuntimeError('x') from e\n\
                with open('f') as f, open('g') as g: pass\n\
                for i, (a, b) in enumerate(x):\n    if a: continue\n    elif b: break\n    else: pass\n\
                x = y = [1]; x += [2]\n";
    let body: Vec<Stmt> = parse_module(text).unwrap();
    let kinds: Vec<&str> = body
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Import(_) => "import",
            StmtKind::ImportFrom {
                level: 1, names, ..
            } if names.len() == 2 => "from",
            StmtKind::Def(d) if d.params.len() == 5 => "def",
            StmtKind::Class { .. } => "class",
            StmtKind::Try { handlers, .. } if handlers.len() == 1 => "try",
            StmtKind::With { items, .. } if items.len() == 2 => "with",
            StmtKind::For { .. } => "for",
            StmtKind::Assign { targets, .. } if targets.len() == 2 => "assign",
            StmtKind::AugAssign { op: BinOp::Add, .. } => "augassign",
            _ => "?",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "import",
            "from",
            "def",
            "class",
            "try",
            "with",
            "for",
            "assign",
            "augassign"
        ]
    );
    assert_eq!(body[6].line, 15);
}

#[test]
fn syntax_errors_point_at_the_token() {
    let err = parse_module("x = (1,, 2)\n").unwrap_err();
    assert_eq!((err.line, err.col), (1, 8));
    assert!(err.message.contains("expected an expression"), "{err:?}");
    let err = parse_module("if x\n    y\n").unwrap_err();
    assert!(err.message.contains("`:`"), "{err:?}");
    assert!(parse_module("1 = x\n").is_err());
    assert!(parse_module("async def f(): pass\n").is_err());
}
