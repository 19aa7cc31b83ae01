//! The evaluator's tests through its public surface: the parser over
//! small texts, and evaluations of `setup.py` files in temporary trees.

mod evaluator;
mod parser;
