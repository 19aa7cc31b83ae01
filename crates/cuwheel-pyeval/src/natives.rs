//! The library `setup.py` files call, modelled: Python's builtins,
//! `os`/`sys`/`platform`, `itertools`, setuptools and
//! `torch.utils.cpp_extension`.
//!
//! In: a qualified name (`os.path.join`) and evaluated arguments. Out: the
//! value Python would compute on the modelled build host ([`host`](super::host)),
//! or an unknown value saying why not. The file-system functions (paths,
//! globs, `open`, `find_packages`) are in [`files`](super::files).

use std::rc::Rc;

use super::eval::{EvalError, Interpreter};
use super::expr::Kwargs;
use super::ops;
use super::value::{Call, Value, shared};

/// Every modelled callable, by qualified name.
const NATIVES: &[&str] = &[
    // builtins
    "compile",
    "locals",
    "globals",
    "len",
    "str",
    "repr",
    "int",
    "float",
    "bool",
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "sorted",
    "reversed",
    "range",
    "enumerate",
    "iter",
    "zip",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "map",
    "filter",
    "isinstance",
    "print",
    "open",
    "exec",
    "runpy.run_path",
    "getattr",
    "hasattr",
    "abs",
    "format",
    // os, sys, platform
    "os.path.join",
    "os.path.exists",
    "os.path.isfile",
    "os.path.isdir",
    "os.path.dirname",
    "os.path.basename",
    "os.path.abspath",
    "os.path.realpath",
    "os.path.normpath",
    "os.path.splitext",
    "os.path.split",
    "os.path.relpath",
    "os.path.expanduser",
    "os.path.isabs",
    "os.getenv",
    "os.listdir",
    "os.getcwd",
    "sys.exit",
    "platform.machine",
    "platform.system",
    "warnings.warn",
    "io.open",
    "codecs.open",
    // libraries
    "glob.glob",
    "glob.iglob",
    "itertools.product",
    "itertools.chain",
    "itertools.dropwhile",
    "itertools.takewhile",
    "pathlib.Path",
    "setuptools.setup",
    "setuptools.find_packages",
    "setuptools.find_namespace_packages",
    "setuptools.Extension",
    "torch.utils.cpp_extension.CUDAExtension",
    "torch.utils.cpp_extension.CppExtension",
    "torch.utils.cpp_extension.BuildExtension",
    "torch.cuda.is_available",
    "torch.cuda.get_device_capability",
    "torch.cuda.get_arch_list",
    "torch.__config__.parallel_info",
    // the toolkit's version, asked of nvcc and compared
    "subprocess.check_output",
    "subprocess.run",
    "subprocess.getoutput",
    "packaging.version.Version",
    "packaging.version.parse",
];

/// The callables [`files`](super::files) models, besides `os.*`.
const FILE_NATIVES: &[&str] = &[
    "glob.glob",
    "glob.iglob",
    "pathlib.Path",
    "open",
    "io.open",
    "codecs.open",
    "setuptools.find_packages",
    "setuptools.find_namespace_packages",
];

/// Modules whose attributes are looked up in these tables.
const MODULES: &[&str] = &[
    "os.path",
    "torch.utils",
    "torch.utils.cpp_extension",
    "torch.cuda",
    "torch.version",
    "torch.__config__",
    "packaging.version",
    "runpy",
];

/// Other names for the same thing.
const ALIASES: &[(&str, &str)] = &[
    ("posixpath", "os.path"),
    ("distutils.core.setup", "setuptools.setup"),
    ("distutils.core.Extension", "setuptools.Extension"),
    ("distutils.extension.Extension", "setuptools.Extension"),
    ("setuptools.extension.Extension", "setuptools.Extension"),
    ("pkg_resources.parse_version", "packaging.version.parse"),
    ("pkg_resources.packaging.version", "packaging.version"),
    ("setuptools.extern.packaging.version", "packaging.version"),
    (
        "distutils.version.LooseVersion",
        "packaging.version.Version",
    ),
    (
        "torch.torch_version.TorchVersion",
        "packaging.version.Version",
    ),
];

/// Why a common name has no value here.
const UNKNOWABLE: &[(&str, &str)] = &[
    (
        "torch.__version__",
        "torch's version differs per matrix cell",
    ),
    (
        "sys.version_info",
        "the Python version differs per matrix cell",
    ),
    ("sys.version", "the Python version differs per matrix cell"),
    ("sys.executable", "the Python interpreter is the build's"),
    ("os.cpu_count", "the build host's CPU count"),
];

fn canonical(dotted: &str) -> String {
    for (alias, target) in ALIASES {
        if dotted == *alias {
            return target.to_string();
        }
        if let Some(rest) = dotted.strip_prefix(&format!("{alias}.")) {
            return format!("{target}.{rest}");
        }
    }
    dotted.to_string()
}

/// A builtin name (`len`, `open`), if modelled.
pub(super) fn builtin(name: &str) -> Option<Value> {
    NATIVES
        .iter()
        .find(|n| **n == name)
        .map(|n| Value::Native(n))
}

/// The value of a qualified name (`os.path.join`, `os.sep`,
/// `torch.version.hip`), if modelled.
pub(super) fn qualified(dotted: &str) -> Option<Value> {
    let dotted = canonical(dotted);
    if let Some(native) = NATIVES.iter().find(|n| **n == dotted) {
        return Some(Value::Native(native));
    }
    if MODULES.contains(&dotted.as_str()) {
        return Some(Value::Module(dotted));
    }
    Some(match dotted.as_str() {
        "os.sep" => Value::str("/"),
        "os.pathsep" => Value::str(":"),
        "os.linesep" => Value::str("\n"),
        "os.name" => Value::str("posix"),
        "os.environ" => Value::Environ,
        "sys.platform" => Value::str("linux"),
        "sys.argv" => Value::list(vec![Value::str("setup.py"), Value::str("bdist_wheel")]),
        "torch.utils.cpp_extension.CUDA_HOME" => Value::Host("CUDA_HOME"),
        "torch.version.cuda" => Value::Host("torch.version.cuda"),
        "torch.version.hip" | "torch.utils.cpp_extension.ROCM_HOME" => Value::None,
        "torch.utils.cpp_extension.IS_HIP_EXTENSION" | "torch.utils.cpp_extension.IS_WINDOWS" => {
            Value::Bool(false)
        }
        _ => return None,
    })
}

/// Why a qualified name that [`qualified`] does not know has no value.
pub(super) fn not_modelled(dotted: &str) -> String {
    UNKNOWABLE
        .iter()
        .find(|(name, _)| *name == dotted)
        .map_or_else(
            || format!("`{dotted}` is not modelled by cuwheel"),
            |(_, why)| format!("`{dotted}`: {why}"),
        )
}

/// `/a/b/c` → `/a/b`; `c` → ``.
pub(super) fn dirname(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => path[..i].to_string(),
        None => String::new(),
    }
}

impl Interpreter<'_> {
    pub(super) fn call_native(
        &mut self,
        name: &'static str,
        args: Vec<Value>,
        kwargs: Kwargs,
        line: usize,
    ) -> Result<Value, EvalError> {
        self.host_fact(name, line);
        let inputs: Vec<Value> = args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .cloned()
            .collect();
        let unknown = |this: &Self, why: String| Value::unknown_from(why, this.at(line), &inputs);
        // Any unknown argument makes most results unknown; keep the first
        // one's reason and the files it came from.
        let first_unknown = args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .find_map(|v| v.as_unknown().cloned());
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        let kw = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        // `iter(open("pkg/__init__.py"))`: the file's lines, which cuwheel
        // does not read as values; what is computed from them stays
        // pointed at the file.
        if let ("iter", Some(Value::File(path))) = (name, args.first()) {
            return Ok(self.file_lines(path, line));
        }
        let value = match name {
            "setuptools.setup" => {
                let call = Rc::new(Call {
                    callee: name,
                    at: self.at(line),
                    args,
                    kwargs,
                });
                if self.setup.is_some() {
                    self.note(line, "a second setup() call: cuwheel reads the last one");
                }
                self.setup = Some(call);
                Value::None
            }
            "torch.utils.cpp_extension.CUDAExtension"
            | "torch.utils.cpp_extension.CppExtension"
            | "setuptools.Extension" => Value::Extension(Rc::new(Call {
                callee: name,
                at: self.at(line),
                args,
                kwargs,
            })),
            "torch.utils.cpp_extension.BuildExtension" => {
                unknown(self, "`BuildExtension` is a build command".into())
            }
            "torch.cuda.is_available" => Value::Bool(true),
            "torch.cuda.get_device_capability" | "torch.cuda.get_arch_list" => {
                self.gpu_call(name, line, &inputs)
            }
            "torch.__config__.parallel_info" => Value::str(super::host::PARALLEL_INFO),
            "subprocess.check_output"
            | "subprocess.run"
            | "subprocess.getoutput"
            | "packaging.version.Version"
            | "packaging.version.parse" => self.toolkit_call(name, &args, &kwargs, line),
            "print" | "warnings.warn" => Value::None,
            "sys.exit" => {
                self.note(line, "sys.exit() is reached under cuwheel's assumptions");
                Value::None
            }
            "platform.machine" => Value::str("x86_64"),
            "platform.system" => Value::str("Linux"),
            "os.getenv" => {
                let default = args.get(1).cloned().or_else(|| kw("default"));
                self.environ_get(&arg(0), default, line)
            }
            "exec" | "runpy.run_path" => return self.call_file_native(name, args, kwargs, line),
            // compile(source, ...) is what exec() runs: the source itself.
            "compile" => arg(0),
            "locals" | "globals" => {
                let scopes = &self.frame().scopes;
                let scope = if name == "locals" {
                    scopes.first()
                } else {
                    scopes.last()
                };
                let mut pairs: Vec<(String, Value)> = scope
                    .map(|s| {
                        s.borrow()
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Dict(shared(
                    pairs.into_iter().map(|(k, v)| (Value::str(k), v)).collect(),
                ))
            }
            _ => {
                // `os.path.join(CUDA_HOME, "bin", "nvcc")`: a path under CUDA_HOME.
                let cuda_home = args.first().and_then(super::host::under_cuda_home);
                if let (Some(prefix), "os.path.join") = (cuda_home, name) {
                    let rest: Option<Vec<&str>> = args[1..].iter().map(Value::as_str).collect();
                    if let Some(rest) = rest {
                        let joined = rest
                            .iter()
                            .fold(prefix, |base, part| ops::join_path(&base, part));
                        return Ok(super::host::cuda_home_path(joined, self.at(line)));
                    }
                }
                if let Some(u) = first_unknown {
                    return Ok(Value::Unknown(u));
                }
                if let Some(host) = args.iter().find(|a| matches!(a, Value::Host(_))) {
                    return Ok(self.unformattable(host, line));
                }
                if name.starts_with("os.") || FILE_NATIVES.contains(&name) {
                    return self.call_file_native(name, args, kwargs, line);
                }
                match builtin_call(name, &args, &kwargs) {
                    Ok(Some(value)) => value,
                    Ok(None) => return self.call_higher_order(name, args, line),
                    Err(why) => unknown(self, why),
                }
            }
        };
        Ok(value)
    }

    /// `map`, `filter`, `sorted(key=...)`: builtins that call back.
    fn call_higher_order(
        &mut self,
        name: &str,
        args: Vec<Value>,
        line: usize,
    ) -> Result<Value, EvalError> {
        let (function, iterable) = match (args.first(), args.get(1)) {
            (Some(f), Some(i)) => (f.clone(), i.clone()),
            _ => {
                return Ok(Value::unknown(
                    format!("`{name}()` with these arguments"),
                    self.at(line),
                ));
            }
        };
        let Some(items) = self.iterate(&iterable, line) else {
            return Ok(Value::unknown(
                format!("`{name}()` over an unknown iterable"),
                self.at(line),
            ));
        };
        let mut out = Vec::new();
        for item in items {
            let result = if matches!(function, Value::None) {
                item.clone()
            } else {
                self.call(&function, vec![item.clone()], Vec::new(), line)?
            };
            match name {
                "map" => out.push(result),
                "itertools.dropwhile" | "itertools.takewhile" => {
                    let Some(holds) = result.truth() else {
                        return Ok(Value::unknown(
                            format!("`{name}()` with a test that cannot be evaluated"),
                            self.at(line),
                        ));
                    };
                    match (name, holds) {
                        ("itertools.takewhile", true) => out.push(item),
                        ("itertools.takewhile", false) => break,
                        (_, true) if out.is_empty() => {}
                        _ => out.push(item),
                    }
                }
                _ => match result.truth() {
                    Some(true) => out.push(item),
                    Some(false) => {}
                    None => {
                        return Ok(Value::unknown(
                            "`filter()` with a test that cannot be evaluated",
                            self.at(line),
                        ));
                    }
                },
            }
        }
        Ok(Value::list(out))
    }
}

/// The builtins that need no interpreter. `Ok(None)`: one that calls back.
fn builtin_call(name: &str, args: &[Value], kwargs: &Kwargs) -> Result<Option<Value>, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
    let kw = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let items = |v: &Value| v.items();
    Ok(Some(match name {
        "len" => match &arg(0) {
            Value::Str(s) => Value::Int(s.chars().count() as i64),
            other => Value::Int(items(other)?.len() as i64),
        },
        "str" => match args.first() {
            None => Value::str(""),
            Some(v) => Value::str(
                v.to_text()
                    .ok_or_else(|| format!("`str()` of a {}", v.type_name()))?,
            ),
        },
        "repr" => Value::str(arg(0).repr().ok_or("`repr()` of this value")?),
        "format" => {
            let spec = arg(1).as_str().unwrap_or("").to_string();
            Value::str(ops::format_spec(&arg(0), &spec).ok_or("`format()` with this spec")?)
        }
        "int" => match &arg(0) {
            Value::Str(s) => Value::Int(s.trim().parse().map_err(|_| format!("`int('{s}')`"))?),
            Value::Float(f) => Value::Int(f.trunc() as i64),
            Value::Int(i) => Value::Int(*i),
            Value::Bool(b) => Value::Int(i64::from(*b)),
            other => return Err(format!("`int()` of a {}", other.type_name())),
        },
        "float" => match &arg(0) {
            Value::Str(s) => Value::Float(s.trim().parse().map_err(|_| format!("`float('{s}')`"))?),
            other => Value::Float(super::value::number(other).ok_or("`float()` of this value")?),
        },
        "bool" => Value::Bool(arg(0).truth().ok_or("`bool()` of an unknown value")?),
        "abs" => match &arg(0) {
            Value::Int(i) => Value::Int(i.checked_abs().ok_or("an integer beyond 64 bits")?),
            Value::Float(f) => Value::Float(f.abs()),
            other => return Err(format!("`abs()` of a {}", other.type_name())),
        },
        "list" => Value::list(if args.is_empty() {
            Vec::new()
        } else {
            items(&arg(0))?
        }),
        "tuple" => Value::Tuple(Rc::new(if args.is_empty() {
            Vec::new()
        } else {
            items(&arg(0))?
        })),
        "set" | "frozenset" => {
            let set = Value::Set(shared(Vec::new()));
            if !args.is_empty() {
                for item in items(&arg(0))? {
                    ops::set_add(&set, item);
                }
            }
            set
        }
        "dict" => {
            let dict = Value::Dict(shared(Vec::new()));
            match args.first() {
                Some(Value::Dict(_)) => ops::update(&dict, &arg(0)),
                Some(pairs) => {
                    for pair in items(pairs)? {
                        let kv = items(&pair)?;
                        if kv.len() != 2 {
                            return Err("`dict()` of items that are not pairs".into());
                        }
                        ops::set_item(&dict, kv[0].clone(), kv[1].clone());
                    }
                }
                None => {}
            }
            for (k, v) in kwargs {
                ops::set_item(&dict, Value::str(k.clone()), v.clone());
            }
            dict
        }
        "sorted" => {
            if kw("key").is_some_and(|k| !matches!(k, Value::None)) {
                return Err("`sorted(key=...)` is not evaluated".into());
            }
            let mut list = items(&arg(0))?;
            let mut failed = false;
            list.sort_by(|a, b| {
                super::value::order(a, b).unwrap_or_else(|| {
                    failed = true;
                    std::cmp::Ordering::Equal
                })
            });
            if failed {
                return Err("`sorted()` of items that cannot be compared".into());
            }
            if kw("reverse").and_then(|r| r.truth()) == Some(true) {
                list.reverse();
            }
            Value::list(list)
        }
        "reversed" => Value::list(items(&arg(0))?.into_iter().rev().collect()),
        "range" => {
            let int = |v: &Value| match v {
                Value::Int(i) => Ok(*i),
                other => Err(format!("`range()` of a {}", other.type_name())),
            };
            let (start, stop, step) = match args.len() {
                1 => (0, int(&arg(0))?, 1),
                2 => (int(&arg(0))?, int(&arg(1))?, 1),
                _ => (int(&arg(0))?, int(&arg(1))?, int(&arg(2))?),
            };
            let count = stop.saturating_sub(start).checked_div(step).unwrap_or(0);
            if step == 0 || count > 100_000 {
                return Err("a `range()` cuwheel does not expand".into());
            }
            let mut out = Vec::new();
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                out.push(Value::Int(i));
                i += step;
            }
            Value::list(out)
        }
        "enumerate" => {
            let start = match kw("start").or_else(|| args.get(1).cloned()) {
                Some(Value::Int(i)) => i,
                _ => 0,
            };
            let list = items(&arg(0))?;
            Value::list(
                list.into_iter()
                    .enumerate()
                    .map(|(i, v)| Value::Tuple(Rc::new(vec![Value::Int(start + i as i64), v])))
                    .collect(),
            )
        }
        "zip" => {
            let lists: Vec<Vec<Value>> = args.iter().map(items).collect::<Result<_, _>>()?;
            let len = lists.iter().map(Vec::len).min().unwrap_or(0);
            Value::list(
                (0..len)
                    .map(|i| Value::Tuple(Rc::new(lists.iter().map(|l| l[i].clone()).collect())))
                    .collect(),
            )
        }
        "min" | "max" | "sum" | "any" | "all" => {
            let list = if args.len() > 1 {
                args.to_vec()
            } else {
                items(&arg(0))?
            };
            match name {
                "any" | "all" => {
                    let truths: Option<Vec<bool>> = list.iter().map(Value::truth).collect();
                    let truths = truths.ok_or("`any()`/`all()` of unknown values")?;
                    Value::Bool(if name == "any" {
                        truths.iter().any(|t| *t)
                    } else {
                        truths.iter().all(|t| *t)
                    })
                }
                "sum" => list.iter().try_fold(Value::Int(0), |acc, v| {
                    ops::binary(&acc, super::ast::BinOp::Add, v)
                })?,
                _ => {
                    let mut best: Option<Value> = None;
                    for v in list {
                        best = Some(match best {
                            None => v,
                            Some(b) => {
                                let o = super::value::order(&v, &b)
                                    .ok_or("`min()`/`max()` of values that cannot be compared")?;
                                let better = if name == "min" { o.is_lt() } else { o.is_gt() };
                                if better { v } else { b }
                            }
                        });
                    }
                    best.ok_or("`min()`/`max()` of nothing")?
                }
            }
        }
        "isinstance" => {
            let types = match arg(1) {
                Value::Tuple(t) => t.as_ref().clone(),
                other => vec![other],
            };
            let value = arg(0);
            if value.as_unknown().is_some() {
                return Err("`isinstance()` of an unknown value".into());
            }
            Value::Bool(
                types
                    .iter()
                    .any(|t| matches!(t, Value::Native(n) if *n == value.type_name())),
            )
        }
        "itertools.product" => {
            let lists: Vec<Vec<Value>> = args.iter().map(items).collect::<Result<_, _>>()?;
            super::budget::items_fit(
                lists
                    .iter()
                    .fold(1usize, |n, list| n.saturating_mul(list.len())),
            )?;
            let mut product: Vec<Vec<Value>> = vec![Vec::new()];
            for list in &lists {
                product = product
                    .into_iter()
                    .flat_map(|prefix| {
                        list.iter().map(move |item| {
                            let mut next = prefix.clone();
                            next.push(item.clone());
                            next
                        })
                    })
                    .collect();
            }
            Value::list(
                product
                    .into_iter()
                    .map(|t| Value::Tuple(Rc::new(t)))
                    .collect(),
            )
        }
        "itertools.chain" => {
            let mut out = Vec::new();
            for list in args {
                out.extend(items(list)?);
            }
            Value::list(out)
        }
        "getattr" | "hasattr" => return Err(format!("`{name}()` is not evaluated")),
        "map" | "filter" | "itertools.dropwhile" | "itertools.takewhile" => return Ok(None),
        "iter" => {
            return Err(
                "`iter()`: an iterator shares its position between the loops that read it, \
                 which cuwheel does not model"
                    .into(),
            );
        }
        _ => return Err(format!("`{name}()` is not modelled by cuwheel")),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_and_aliases() {
        assert!(matches!(
            qualified("os.path.join"),
            Some(Value::Native("os.path.join"))
        ));
        assert!(matches!(
            qualified("posixpath.join"),
            Some(Value::Native("os.path.join"))
        ));
        assert!(matches!(
            qualified("distutils.core.setup"),
            Some(Value::Native("setuptools.setup"))
        ));
        assert!(matches!(qualified("torch.version.hip"), Some(Value::None)));
        assert!(matches!(
            qualified("torch.utils.cpp_extension"),
            Some(Value::Module(_))
        ));
        assert!(qualified("numpy.get_include").is_none());
        assert!(not_modelled("sys.version_info").contains("differs per matrix cell"));
        assert_eq!(dirname("/a/b/setup.py"), "/a/b");
        assert_eq!(dirname("setup.py"), "");
    }

    #[test]
    fn builtins_compute_like_python() {
        let list = Value::list(vec![Value::str("b"), Value::str("a")]);
        let sorted = builtin_call("sorted", std::slice::from_ref(&list), &Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(sorted.repr().unwrap(), "['a', 'b']");
        let zipped = builtin_call(
            "zip",
            &[list.clone(), Value::list(vec![Value::Int(1)])],
            &Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(zipped.repr().unwrap(), "[('b', 1)]");
        let d = builtin_call("dict", &[], &vec![("cxx".into(), list)])
            .unwrap()
            .unwrap();
        assert_eq!(d.repr().unwrap(), "{'cxx': ['b', 'a']}");
        assert!(builtin_call("int", &[Value::str("x")], &Vec::new()).is_err());
        assert_eq!(
            builtin_call("len", &[Value::str("abc")], &Vec::new())
                .unwrap()
                .unwrap()
                .repr()
                .unwrap(),
            "3"
        );
    }
}
