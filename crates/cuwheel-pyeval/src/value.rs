//! The values the evaluator computes, and the operations every value has:
//! truth, equality, order, `str()`, `repr()` and iteration.
//!
//! In: nothing (types and pure functions). Out: [`Value`], including the
//! values that stand for what cannot be known statically — [`Unknown`],
//! which says why and where — and for facts of the build host
//! ([`Value::Host`]).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::rc::Rc;

use super::ast::FunctionDef;
use super::source::Source;

pub type Shared<T> = Rc<RefCell<T>>;
pub type Scope = Shared<HashMap<String, Value>>;

pub fn shared<T>(value: T) -> Shared<T> {
    Rc::new(RefCell::new(value))
}

#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Shared<Vec<Value>>),
    Tuple(Rc<Vec<Value>>),
    /// Kept in insertion order; what reads it sorts it.
    Set(Shared<Vec<Value>>),
    Dict(Shared<Vec<(Value, Value)>>),
    /// A `pathlib.Path`.
    Path(String),
    Function(Rc<Function>),
    /// A function or class of the modelled libraries (`os.path.join`,
    /// `CUDAExtension`), by its qualified name.
    Native(&'static str),
    /// A method bound to its receiver (`flags.append`).
    Method(Box<Value>, String),
    /// An imported module, by its dotted name.
    Module(String),
    /// `os.environ`.
    Environ,
    /// An open project file (`open("VERSION")`), relative to the project.
    File(PathBuf),
    /// A `CUDAExtension(...)` or `CppExtension(...)` call's arguments.
    Extension(Rc<Call>),
    /// A fact of the build host that is set but has no usable value
    /// (`CUDA_HOME`, `torch.version.cuda`): true, not `None`.
    Host(&'static str),
    /// A `packaging.version.Version` (also what `packaging.version.parse`
    /// returns): ordered as PEP 440 orders versions.
    Version(Rc<pep440_rs::Version>),
    /// `torch.__version__`: a string that compares as a version (torch's
    /// `TorchVersion`), with strings, tuples and versions alike.
    TorchVersion(String),
    Unknown(Rc<Unknown>),
}

/// A user function and the scopes it closes over (innermost first, the
/// module's globals last).
#[derive(Debug)]
pub struct Function {
    pub def: Rc<FunctionDef>,
    pub scopes: Vec<Scope>,
    pub source: Rc<Source>,
}

/// A call the extraction reads: `CUDAExtension(...)` or `setup(...)`.
#[derive(Debug)]
pub struct Call {
    /// The qualified name of what was called.
    pub callee: &'static str,
    /// `setup.py:88: `extension = Extension(``: where it was called.
    pub at: String,
    pub args: Vec<Value>,
    pub kwargs: Vec<(String, Value)>,
}

impl Call {
    /// The argument given by keyword `name` or at `position`.
    pub fn arg(&self, name: &str, position: Option<usize>) -> Option<&Value> {
        self.kwargs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .or_else(|| position.and_then(|p| self.args.get(p)))
    }
}

/// What could not be evaluated, why, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// Why (`` `torch.cuda.get_device_capability()` is the building machine's GPU ``).
    pub why: String,
    /// The quoted source line where it arose.
    pub at: String,
    /// The project files its value was computed from (a `VERSION` read,
    /// `requirements.txt`): the extraction can point the config at them.
    pub files: BTreeSet<PathBuf>,
    /// Set when the value is exactly a project file's whole text.
    pub text_of: Option<PathBuf>,
    /// Set when the value is a path under `CUDA_HOME` (`/bin/nvcc`, what
    /// follows it): a subprocess that runs it is the toolkit's.
    pub under_cuda_home: Option<String>,
}

impl Value {
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(shared(items))
    }

    pub fn unknown(why: impl Into<String>, at: impl Into<String>) -> Value {
        Value::Unknown(Rc::new(Unknown {
            why: why.into(),
            at: at.into(),
            files: BTreeSet::new(),
            text_of: None,
            under_cuda_home: None,
        }))
    }

    /// An unknown computed from `inputs`: it keeps the project files they
    /// were computed from (theirs, and their items').
    pub fn unknown_from<'a>(
        why: impl Into<String>,
        at: impl Into<String>,
        inputs: impl IntoIterator<Item = &'a Value>,
    ) -> Value {
        let mut files = BTreeSet::new();
        for input in inputs {
            let items = match input {
                Value::List(items) | Value::Set(items) => items.borrow().clone(),
                Value::Tuple(items) => items.as_ref().clone(),
                other => vec![other.clone()],
            };
            for item in items {
                if let Value::Unknown(u) = item {
                    files.extend(u.files.iter().cloned());
                }
            }
        }
        Value::Unknown(Rc::new(Unknown {
            why: why.into(),
            at: at.into(),
            files,
            text_of: None,
            under_cuda_home: None,
        }))
    }

    pub fn as_unknown(&self) -> Option<&Rc<Unknown>> {
        match self {
            Value::Unknown(u) => Some(u),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Path(s) | Value::TorchVersion(s) => Some(s),
            _ => None,
        }
    }

    /// A `torch.__version__` as the plain string it also is; any other
    /// value as it is.
    pub fn plain(&self) -> Value {
        match self {
            Value::TorchVersion(s) => Value::Str(s.clone()),
            other => other.clone(),
        }
    }

    /// The Python type's name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Set(_) => "set",
            Value::Dict(_) => "dict",
            Value::Path(_) => "Path",
            Value::Function(_) | Value::Native(_) | Value::Method(..) => "function",
            Value::Module(_) => "module",
            Value::Environ => "os.environ",
            Value::File(_) => "file",
            Value::Extension(_) => "Extension",
            Value::Host(_) => "build-host value",
            Value::Version(_) => "Version",
            Value::TorchVersion(_) => "str",
            Value::Unknown(_) => "unknown",
        }
    }

    /// Python's truth value; `None` when it cannot be known.
    pub fn truth(&self) -> Option<bool> {
        Some(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) | Value::TorchVersion(s) => !s.is_empty(),
            Value::List(items) | Value::Set(items) => !items.borrow().is_empty(),
            Value::Tuple(items) => !items.is_empty(),
            Value::Dict(pairs) => !pairs.borrow().is_empty(),
            Value::Unknown(_) => return None,
            _ => true,
        })
    }

    /// The items of an iterable, or why it cannot be iterated.
    pub fn items(&self) -> Result<Vec<Value>, String> {
        match self {
            Value::List(items) | Value::Set(items) => Ok(items.borrow().clone()),
            Value::Tuple(items) => Ok(items.as_ref().clone()),
            Value::Dict(pairs) => Ok(pairs.borrow().iter().map(|(k, _)| k.clone()).collect()),
            Value::Str(s) | Value::TorchVersion(s) => {
                Ok(s.chars().map(|c| Value::Str(c.to_string())).collect())
            }
            Value::Environ => Ok(Vec::new()),
            other => Err(format!("a {} is not iterable", other.type_name())),
        }
    }

    /// `str(value)`, where it is known.
    pub fn to_text(&self) -> Option<String> {
        match self {
            Value::Str(s) | Value::Path(s) | Value::TorchVersion(s) => Some(s.clone()),
            Value::Version(v) => Some(v.to_string()),
            _ => self.repr(),
        }
    }

    /// `repr(value)`, where it is known.
    pub fn repr(&self) -> Option<String> {
        let seq = |items: &[Value], open: &str, close: &str| -> Option<String> {
            let parts: Option<Vec<String>> = items.iter().map(Value::repr).collect();
            let mut text = parts?.join(", ");
            if open == "(" && items.len() == 1 {
                text.push(',');
            }
            Some(format!("{open}{text}{close}"))
        };
        Some(match self {
            Value::None => "None".into(),
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 1e16 {
                    format!("{f:.1}")
                } else {
                    f.to_string()
                }
            }
            Value::Str(s) => {
                let quote = if s.contains('\'') && !s.contains('"') {
                    '"'
                } else {
                    '\''
                };
                let escaped = s.replace('\\', "\\\\").replace('\n', "\\n");
                let escaped = if quote == '\'' {
                    escaped.replace('\'', "\\'")
                } else {
                    escaped
                };
                format!("{quote}{escaped}{quote}")
            }
            Value::Path(p) => format!("PosixPath('{p}')"),
            Value::Version(v) => format!("<Version('{v}')>"),
            Value::TorchVersion(s) => return Value::Str(s.clone()).repr(),
            Value::List(items) => seq(&items.borrow(), "[", "]")?,
            Value::Tuple(items) => seq(items, "(", ")")?,
            Value::Set(items) if items.borrow().is_empty() => "set()".into(),
            Value::Set(items) => seq(&items.borrow(), "{", "}")?,
            Value::Dict(pairs) => {
                let parts: Option<Vec<String>> = pairs
                    .borrow()
                    .iter()
                    .map(|(k, v)| Some(format!("{}: {}", k.repr()?, v.repr()?)))
                    .collect();
                format!("{{{}}}", parts?.join(", "))
            }
            _ => return None,
        })
    }
}

/// `a == b`; `None` when either side is unknown.
pub fn equal(a: &Value, b: &Value) -> Option<bool> {
    if let Some(ordering) = torch_version_order(a, b) {
        return Some(ordering == Ordering::Equal);
    }
    Some(match (a, b) {
        (Value::Unknown(_), _) | (_, Value::Unknown(_)) => return None,
        (Value::Host(_), _) | (_, Value::Host(_)) => return None,
        (Value::None, Value::None) => true,
        (Value::Str(x), Value::Str(y)) | (Value::Path(x), Value::Path(y)) => x == y,
        (Value::List(x), Value::List(y)) | (Value::Set(x), Value::Set(y)) => {
            all_equal(&x.borrow(), &y.borrow())?
        }
        (Value::Tuple(x), Value::Tuple(y)) => all_equal(x, y)?,
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .any(|(k2, v2)| equal(k, k2) == Some(true) && equal(v, v2) == Some(true))
                })
        }
        (Value::Version(x), Value::Version(y)) => x == y,
        (Value::Module(x), Value::Module(y)) => x == y,
        (Value::Native(x), Value::Native(y)) => x == y,
        (Value::Environ, Value::Environ) => true,
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    })
}

fn all_equal(x: &[Value], y: &[Value]) -> Option<bool> {
    if x.len() != y.len() {
        return Some(false);
    }
    for (a, b) in x.iter().zip(y) {
        if !equal(a, b)? {
            return Some(false);
        }
    }
    Some(true)
}

pub fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// `a < b` and friends for numbers, strings and sequences of them.
pub fn order(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Value::TorchVersion(_), _) | (_, Value::TorchVersion(_)) = (a, b) {
        return torch_version_order(a, b);
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Version(x), Value::Version(y)) => Some(x.as_ref().cmp(y)),
        (Value::List(x), Value::List(y)) => seq_order(&x.borrow(), &y.borrow()),
        (Value::Tuple(x), Value::Tuple(y)) => seq_order(x, y),
        _ => number(a)?.partial_cmp(&number(b)?),
    }
}

/// `torch.__version__` against a string, a tuple of numbers or a version,
/// as torch's `TorchVersion` compares them; `None` when neither side is a
/// `torch.__version__` or the other cannot be read as a version.
fn torch_version_order(a: &Value, b: &Value) -> Option<Ordering> {
    let as_version = |v: &Value| -> Option<pep440_rs::Version> {
        match v {
            Value::TorchVersion(s) | Value::Str(s) => s.parse::<pep440_rs::Version>().ok(),
            Value::Version(v) => Some(v.as_ref().clone()),
            Value::Tuple(items) => {
                let parts: Option<Vec<String>> = items
                    .iter()
                    .map(|i| match i {
                        Value::Int(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect();
                parts?.join(".").parse::<pep440_rs::Version>().ok()
            }
            _ => None,
        }
    };
    match (a, b) {
        (Value::TorchVersion(_), _) | (_, Value::TorchVersion(_)) => {
            Some(as_version(a)?.cmp(&as_version(b)?))
        }
        _ => None,
    }
}

fn seq_order(x: &[Value], y: &[Value]) -> Option<Ordering> {
    for (a, b) in x.iter().zip(y) {
        match order(a, b)? {
            Ordering::Equal => {}
            other => return Some(other),
        }
    }
    Some(x.len().cmp(&y.len()))
}

/// `needle in haystack`; `None` when it cannot be known.
pub fn contains(haystack: &Value, needle: &Value) -> Option<bool> {
    match (haystack, needle) {
        (Value::Str(h), Value::Str(n)) => Some(h.contains(n.as_str())),
        (Value::Unknown(_) | Value::Host(_), _) => None,
        (Value::Dict(pairs), _) => any_equal(pairs.borrow().iter().map(|(k, _)| k), needle),
        (Value::List(items) | Value::Set(items), _) => any_equal(items.borrow().iter(), needle),
        (Value::Tuple(items), _) => any_equal(items.iter(), needle),
        _ => None,
    }
}

fn any_equal<'a>(mut items: impl Iterator<Item = &'a Value>, needle: &Value) -> Option<bool> {
    let mut unsure = false;
    let found = items.any(|item| match equal(item, needle) {
        Some(found) => found,
        None => {
            unsure = true;
            false
        }
    });
    if found {
        Some(true)
    } else if unsure {
        None
    } else {
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_and_str_match_python() {
        let v = Value::list(vec![
            Value::str("a'b"),
            Value::Tuple(Rc::new(vec![Value::Int(1)])),
            Value::None,
            Value::Float(2.0),
        ]);
        assert_eq!(v.repr().unwrap(), "[\"a'b\", (1,), None, 2.0]");
        assert_eq!(Value::str("x").to_text().unwrap(), "x");
        assert_eq!(Value::unknown("why", "at").repr(), None);
    }

    #[test]
    fn truth_equality_order_and_membership() {
        assert_eq!(Value::list(vec![]).truth(), Some(false));
        assert_eq!(Value::Host("CUDA_HOME").truth(), Some(true));
        assert_eq!(Value::unknown("w", "a").truth(), None);
        assert_eq!(equal(&Value::Int(1), &Value::Float(1.0)), Some(true));
        assert_eq!(equal(&Value::str("1"), &Value::Int(1)), Some(false));
        let t = |a, b| Value::Tuple(Rc::new(vec![Value::Int(a), Value::Int(b)]));
        assert_eq!(order(&t(3, 8), &t(3, 10)), Some(Ordering::Less));
        let l = Value::list(vec![Value::str("a"), Value::unknown("w", "a")]);
        assert_eq!(contains(&l, &Value::str("a")), Some(true));
        assert_eq!(contains(&l, &Value::str("b")), None);
        assert_eq!(
            contains(&Value::str("backend: OpenMP"), &Value::str("OpenMP")),
            Some(true)
        );
    }
}
