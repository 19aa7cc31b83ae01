//! A sandboxed reader of the Python subset `setup.py` files are written
//! in: tokens, a syntax tree, and an evaluator that runs it against a
//! model of a CUDA build host without running any Python, within budgets
//! (how large a value, how deep a nesting, how many steps).
//!
//! In: a Python file's text; for an evaluation, also the project root,
//! the host's reader of the project's files (a [`ProjectFiles`]: reading
//! one, matching a glob) and, optionally, the [`Toolkit`] the evaluation
//! is for. Out: its syntax tree ([`parse_module`]) and, through
//! [`evaluate_setup_py`], the `setup(...)` call it reaches with its
//! arguments evaluated, plus a [`Note`] on every assumption made; or an
//! [`EvalError`] quoting the line that stopped it.
//!
//! One module per concern: `tokenize` (text → tokens), `parse` and
//! `parse_expr` (tokens → the syntax tree, `ast`), `eval`, `expr` and
//! `calls` (the evaluator and its environment), `outcome` (what it gives),
//! `keywords` (keyword arguments found in the tokens, for options of build
//! commands the evaluator does not run),
//! `ops` and `methods` (the built-in types), `natives` and `files` (the
//! modelled libraries), `host` (the build host and the toolkit an
//! evaluation is for), `project` (what the host answers about the
//! project's files), `budget` (how large and deep it may go), `source` (the
//! text errors quote). PEP 440 versions, as `packaging.version` compares
//! them, are uv's `pep440_rs`.
//!
//! It depends on nothing of cuwheel: `cuwheel init` (the root crate's
//! `src/init/`) implements [`ProjectFiles`] over a checkout and reads the
//! evaluation.

mod ast;
mod budget;
mod calls;
mod eval;
mod expr;
mod files;
mod host;
mod imports;
mod keywords;
mod methods;
mod natives;
mod ops;
mod outcome;
mod parse;
mod parse_expr;
mod project;
mod source;
#[cfg(feature = "test-support")]
pub mod test_support;
mod tokenize;
mod value;

pub use ast::{
    Arg, BinOp, BoolOp, CmpOp, CompKind, Const, Expr, ExprKind, FPart, FunctionDef, Generator,
    Handler, Param, ParamKind, Stmt, StmtKind, UnaryOp,
};
pub use eval::{ARCH_BRANCH, evaluate_setup_py, evaluate_setup_py_for, unknown_why as value_why};
pub use files::{normpath, project_relative};
pub use host::{Toolkit, TorchArchs, dotted};
pub use keywords::{KeywordUse, keyword_uses};
pub use outcome::{EvalError, Evaluation, GpuQuestions, Note};
pub use parse::parse_module;
pub use project::ProjectFiles;
pub use source::{SourceError, SyntaxError};
pub use value::{Call, Function, Unknown, Value};
