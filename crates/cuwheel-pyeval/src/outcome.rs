//! What an evaluation of `setup.py` gives: the [`Evaluation`] with its
//! [`Note`]s, or the [`EvalError`] that stopped it.
//!
//! In: what the evaluator (`eval`) gathered. Out: plain data for the host.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::source::SourceError;
use super::value::{Call, Value};

/// What evaluating `setup.py` gave.
#[derive(Debug)]
pub struct Evaluation {
    /// The last `setup(...)` call reached, if any.
    pub setup: Option<Rc<Call>>,
    pub notes: Vec<Note>,
    /// Variables `setup.py` itself put into `os.environ`.
    pub environ: BTreeMap<String, String>,
    /// Values read from project modules (`from pkg.version import
    /// __version__`, `pkg.__version__`), by their dotted path.
    pub project_values: Vec<(String, Value)>,
    /// Where evaluation stopped at a `raise`, if it did.
    pub raised: Option<String>,
    /// What setup.py asked of the GPU torch runs on.
    pub gpu: GpuQuestions,
}

/// Whether setup.py asked `torch.cuda.get_arch_list()` (the archs torch
/// was built for) or `torch.cuda.get_device_capability()` (the GPU at
/// hand, which a wheel's build has none of: init answers it once per arch
/// torch was built for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuQuestions {
    pub arch_list: bool,
    pub device: bool,
}

impl GpuQuestions {
    pub fn any(self) -> bool {
        self.arch_list || self.device
    }

    /// What either asked.
    pub fn or(self, other: GpuQuestions) -> GpuQuestions {
        GpuQuestions {
            arch_list: self.arch_list || other.arch_list,
            device: self.device || other.device,
        }
    }
}

/// An assumption the evaluator made, or something it could not evaluate,
/// with the quoted source line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    pub at: String,
    pub text: String,
}

impl Note {
    /// The file and line it quotes (`setup.py:12: ...`), for ordering.
    pub fn position(&self) -> (&str, usize) {
        let mut parts = self.at.splitn(3, ':');
        let file = parts.next().unwrap_or("");
        let line = parts.next().and_then(|l| l.parse().ok()).unwrap_or(0);
        (file, line)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Syntax(#[from] SourceError),
    #[error("{at}: {problem}; cuwheel evaluates setup.py statically and stops here")]
    Limit { at: String, problem: String },
    /// One statement took more steps than its budget: caught where
    /// setup.py's statement began (`Interpreter::top_level`).
    #[error("{at}: {problem}; cuwheel evaluates setup.py statically and stops here")]
    Steps { at: String, problem: String },
}
