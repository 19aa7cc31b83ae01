//! The build host `setup.py` is evaluated against: a Linux x86-64 CUDA
//! build host with no environment variables set.
//!
//! In: the names a `setup.py` asks about. Out: their modelled values, and
//! a note wherever one of these assumptions is used:
//! `torch.cuda.is_available()` is true, `CUDA_HOME` is set (to a path that
//! is not known), `torch.version.hip` is `None`, torch's parallel backend
//! is OpenMP (as in torch's Linux wheels), `sys.platform` is `linux`, and
//! every environment variable `setup.py` does not set itself is unset.

use super::eval::Interpreter;
use super::value::Value;

/// The build-host facts, by qualified name (or the name a
/// [`Value::Host`](super::value::Value::Host) carries), and how a note
/// states each.
const FACTS: [(&str, &str); 5] = [
    ("CUDA_HOME", "CUDA_HOME is set"),
    ("torch.version.cuda", "torch.version.cuda is set"),
    (
        "torch.version.hip",
        "torch.version.hip is None (CUDA, not ROCm)",
    ),
    (
        "torch.cuda.is_available",
        "torch.cuda.is_available() is True",
    ),
    (
        "torch.__config__.parallel_info",
        "torch's parallel backend is OpenMP (as in torch's Linux wheels)",
    ),
];

/// How a note states the fact `dotted` names, if it is one
/// (`torch.utils.cpp_extension.CUDA_HOME` → "CUDA_HOME is set").
fn describe(dotted: &str) -> Option<&'static str> {
    let fact = if dotted.ends_with(".CUDA_HOME") {
        "CUDA_HOME"
    } else {
        dotted
    };
    FACTS
        .iter()
        .find(|(name, _)| *name == fact)
        .map(|(_, text)| *text)
}

/// What `torch.__config__.parallel_info()` reports on the modelled host.
pub(super) const PARALLEL_INFO: &str =
    "ATen/Parallel:\n\tat::get_num_threads() : 1\nATen parallel backend: OpenMP\n";

impl Interpreter {
    /// Notes the assumption behind `dotted` at `line`, if it is a build-host fact.
    pub(super) fn host_fact(&mut self, dotted: &str, line: usize) {
        if let Some(fact) = describe(dotted).filter(|_| !self.importing) {
            self.note(line, format!("assumed a CUDA build host: {fact}"));
        }
    }

    /// `os.environ[name]`, `os.environ.get(name, default)`, `os.getenv`:
    /// a variable `setup.py` set, or the default (a noted read).
    pub(super) fn environ_get(
        &mut self,
        name: &Value,
        default: Option<Value>,
        line: usize,
    ) -> Value {
        let Some(name) = name.as_str() else {
            return Value::unknown(
                "an environment variable whose name is not known",
                self.at(line),
            );
        };
        if let Some(value) = self.environ.get(name) {
            return Value::str(value.clone());
        }
        self.reads.push(name.to_string());
        match default {
            Some(default) => default,
            None => Value::None,
        }
    }

    /// Whether `name in os.environ`.
    pub(super) fn environ_has(&mut self, name: &Value) -> Option<bool> {
        let name = name.as_str()?;
        if self.environ.contains_key(name) {
            return Some(true);
        }
        self.reads.push(name.to_string());
        Some(false)
    }

    /// `os.environ[name] = value` in setup.py: later reads see it, and the
    /// extraction reads `TORCH_CUDA_ARCH_LIST` from it.
    pub(super) fn environ_set(&mut self, name: &Value, value: &Value, line: usize) {
        match (name.as_str(), value.as_str()) {
            (Some(name), Some(value)) => {
                self.environ.insert(name.to_string(), value.to_string());
            }
            _ => self.note(
                line,
                "sets an environment variable to a value that is not known: ignored",
            ),
        }
    }
}
