//! The evaluator's budgets: how large a value, how deep a nesting and how
//! many steps one `setup.py` may take. Python has no such limits, but a
//! setup.py that needs more than these is not one cuwheel can read — and a
//! hostile one (`"a" * 10**12`, 100,000 nested parentheses) must end in a
//! message, not in a crash.
//!
//! In: a size about to be made. Out: `Ok`, or the reason the value is not
//! inferred (the caller makes it an unknown value, so the rest of the
//! evaluation goes on). The parser's nesting and chain checks, and the
//! evaluator's per-statement step budget, are here too.

use super::ast::{Stmt, assigned_names};
use super::eval::{EvalError, Flow, Interpreter};
use super::parse::Parser;
use super::source::SyntaxError;
use super::value::Value;

/// The most bytes one string may hold.
pub const MAX_TEXT: usize = 1 << 20;
/// The most items one list, tuple, set or dict may hold.
pub const MAX_ITEMS: usize = 1 << 20;
/// The deepest nesting of brackets, and of expressions and blocks, the
/// parser reads (CPython's own tokenizer stops at 200 brackets).
pub const MAX_NESTING: usize = 200;
/// The deepest an expression tree may be (a chain of `+` is as deep as it
/// is long).
pub const MAX_TREE_DEPTH: usize = 400;

/// The deepest expressions are evaluated, calls included.
pub const MAX_EVAL_DEPTH: usize = 2_000;
/// The most steps (statements and expressions) one top-level statement of
/// setup.py may take; beyond it that statement is not inferred.
pub const STATEMENT_STEPS: usize = 2_000_000;
/// The most steps the whole evaluation may take.
pub const TOTAL_STEPS: usize = 8_000_000;

/// Whether a string of `len` bytes may be made.
pub fn text_fits(len: usize) -> Result<(), String> {
    if len > MAX_TEXT {
        return Err(format!(
            "not inferred: a string of more than {MAX_TEXT} bytes exceeds cuwheel's budget for one value"
        ));
    }
    Ok(())
}

/// Whether a sequence of `len` items may be made.
pub fn items_fit(len: usize) -> Result<(), String> {
    if len > MAX_ITEMS {
        return Err(format!(
            "not inferred: a sequence of more than {MAX_ITEMS} items exceeds cuwheel's budget for one value"
        ));
    }
    Ok(())
}

/// `base * times` as a size, or the budget's reason when it is too large
/// (or overflows).
pub fn repeated(base: usize, times: i64, text: bool) -> Result<usize, String> {
    let times = usize::try_from(times).unwrap_or(0);
    let len = base.saturating_mul(times);
    if text { text_fits(len) } else { items_fit(len) }?;
    Ok(len)
}

impl Parser {
    /// Reads a production one level deeper, within the nesting budget.
    pub(super) fn nested<T>(
        &mut self,
        read: impl FnOnce(&mut Parser) -> Result<T, SyntaxError>,
    ) -> Result<T, SyntaxError> {
        if self.nesting >= MAX_NESTING {
            return Err(self.too_deep("expressions and blocks nested", MAX_NESTING));
        }
        self.nesting += 1;
        let read = read(self);
        self.nesting -= 1;
        read
    }

    /// The error for a nesting or chain beyond the budget.
    pub(super) fn too_deep(&self, what: &str, limit: usize) -> SyntaxError {
        let token = self.peek();
        SyntaxError {
            line: token.line,
            col: token.col,
            message: format!(
                "{what} more than {limit} deep: not inferred (cuwheel's budget for setup.py)"
            ),
        }
    }

    /// Checks the length of an operator or trailer chain (`a + b + …`,
    /// `f()()…`), which is as deep a tree as it is long.
    pub(super) fn chain(&self, length: usize) -> Result<(), SyntaxError> {
        if length > MAX_TREE_DEPTH {
            return Err(self.too_deep("an operator chain", MAX_TREE_DEPTH));
        }
        Ok(())
    }
}

impl Interpreter<'_> {
    /// setup.py's own statements: one that exceeds the step budget is not
    /// inferred (noted, and the names it assigns are unknown), and the
    /// evaluation goes on with the next.
    pub(super) fn top_level(&mut self, body: &[Stmt]) -> Result<Flow, EvalError> {
        for stmt in body {
            self.statement_start = self.steps;
            let depth = self.frames.len();
            match self.statement(stmt) {
                Ok(Flow::Next) => {}
                Ok(other) => return Ok(other),
                Err(EvalError::Steps { at, problem }) => {
                    self.frames.truncate(depth);
                    let why = format!("not inferred: {problem} at {at}");
                    self.note(
                        stmt.line,
                        format!("{why}; this statement was left out and evaluation went on"),
                    );
                    let mut names = Vec::new();
                    assigned_names(std::slice::from_ref(stmt), &mut names);
                    for name in names {
                        let value = Value::unknown(why.clone(), self.at(stmt.line));
                        self.bind(&name, value);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Flow::Next)
    }
}
