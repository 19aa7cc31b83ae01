//! A reader of the Python subset `setup.py` files are written in: tokens,
//! a syntax tree, and an evaluator that runs it against a model of a CUDA
//! build host without running any Python.
//!
//! In: a Python file's text (and the project tree, for globs and reads).
//! Out: its syntax tree ([`parse_module`]) and, through
//! [`evaluate_setup_py`], the `setup(...)` call it reaches with its
//! arguments evaluated, plus a note on every assumption made.
//!
//! One module per concern: `tokenize` (text → tokens), `parse` and
//! `parse_expr` (tokens → [`ast`]), `eval`, `expr` and `calls` (the evaluator and
//! its environment), `ops` and `methods` (the built-in types), `natives`
//! and `files` (the modelled libraries), `host` (the build host and the
//! toolkit an evaluation is for), `budget` (how large and deep it may go).

pub mod ast;
pub mod budget;
mod calls;
mod eval;
mod expr;
mod files;
mod host;
mod imports;
mod methods;
mod natives;
mod ops;
mod parse;
mod parse_expr;
pub mod source;
#[cfg(test)]
mod tests;
mod tokenize;
pub mod value;

pub use eval::{
    ARCH_BRANCH, EvalError, Evaluation, GpuQuestions, Note, evaluate_setup_py,
    evaluate_setup_py_for, unknown_why as value_why,
};
pub use files::{normpath, project_relative};
pub use host::Toolkit;
pub use parse::parse_module;
