//! Methods of the built-in types `setup.py` files use: `str`, `list`,
//! `dict`, `set`, open files, `pathlib.Path` and `os.environ`.
//!
//! In: a receiver, a method name and evaluated arguments. Out: the result;
//! lists, dicts and sets are changed in place, as in Python (a list stored
//! in a dict and extended later is extended there too).

use std::rc::Rc;

use super::eval::{EvalError, Interpreter};
use super::expr::Kwargs;
use super::ops;
use super::value::{Value, equal};

impl Interpreter<'_> {
    pub(super) fn call_method(
        &mut self,
        receiver: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Kwargs,
        line: usize,
    ) -> Result<Value, EvalError> {
        if let Value::TorchVersion(_) = receiver {
            return self.call_method(&receiver.plain(), name, args, kwargs, line);
        }
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        let inputs: Vec<Value> = std::iter::once(receiver.clone())
            .chain(args.iter().cloned())
            .collect();
        let unknown = |this: &Self, why: String| Value::unknown_from(why, this.at(line), &inputs);
        let not_modelled = |this: &Self| {
            unknown(
                this,
                format!(
                    "`{}.{name}()` is not modelled by cuwheel",
                    receiver.type_name()
                ),
            )
        };
        let mutable_receiver = matches!(
            receiver,
            Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Environ
        );
        let unknown_arg = args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .find_map(|v| v.as_unknown());
        if let Some(u) = unknown_arg.filter(|_| !mutable_receiver) {
            return Ok(Value::Unknown(u.clone()));
        }
        Ok(match receiver {
            Value::Str(s) => match string_method(s, name, &args) {
                Some(Ok(v)) => v,
                Some(Err(why)) => unknown(self, why),
                None if name == "format" => match str_format(s, &args, &kwargs) {
                    Some(text) => Value::str(text),
                    None => unknown(
                        self,
                        format!("`{s:?}.format(...)` with arguments that are not known"),
                    ),
                },
                None => not_modelled(self),
            },
            Value::List(items) => match name {
                "append" => {
                    items.borrow_mut().push(arg(0));
                    Value::None
                }
                "extend" => match arg(0).items() {
                    Ok(more) => {
                        let len = items.borrow().len().saturating_add(more.len());
                        match super::budget::items_fit(len) {
                            Ok(()) => items.borrow_mut().extend(more),
                            Err(why) => {
                                self.note(line, why.clone());
                                items.borrow_mut().push(unknown(self, why));
                            }
                        }
                        Value::None
                    }
                    Err(_) => {
                        let why = super::eval::unknown_why(&arg(0));
                        self.note(
                            line,
                            format!("a list is extended by something that is not known ({why})"),
                        );
                        items.borrow_mut().push(arg(0));
                        Value::None
                    }
                },
                "insert" => {
                    let mut list = items.borrow_mut();
                    let at = match arg(0) {
                        Value::Int(i) if i < 0 => (list.len() as i64 + i).max(0) as usize,
                        Value::Int(i) => (i as usize).min(list.len()),
                        _ => list.len(),
                    };
                    list.insert(at, arg(1));
                    Value::None
                }
                "remove" => {
                    let mut list = items.borrow_mut();
                    if let Some(p) = list.iter().position(|v| equal(v, &arg(0)) == Some(true)) {
                        list.remove(p);
                    }
                    Value::None
                }
                "pop" => {
                    let mut list = items.borrow_mut();
                    let at = match arg(0) {
                        Value::Int(i) if i < 0 => list.len().checked_sub(i.unsigned_abs() as usize),
                        Value::Int(i) => Some(i as usize),
                        _ => list.len().checked_sub(1),
                    };
                    match at.filter(|a| *a < list.len()) {
                        Some(a) => list.remove(a),
                        None => return Ok(unknown(self, "`pop()` from an empty list".into())),
                    }
                }
                "copy" => ops::copy(receiver),
                "index" | "count" => {
                    let list = items.borrow();
                    let matching = list
                        .iter()
                        .enumerate()
                        .filter(|(_, v)| equal(v, &arg(0)) == Some(true));
                    if name == "count" {
                        Value::Int(matching.count() as i64)
                    } else {
                        match matching.map(|(i, _)| i).next() {
                            Some(i) => Value::Int(i as i64),
                            None => unknown(self, "`index()` of an item not in the list".into()),
                        }
                    }
                }
                "reverse" => {
                    items.borrow_mut().reverse();
                    Value::None
                }
                "sort" => {
                    let sorted = ops::copy(receiver);
                    if let Value::List(s) = &sorted {
                        let mut s = s.borrow_mut();
                        s.sort_by(|a, b| {
                            super::value::order(a, b).unwrap_or(std::cmp::Ordering::Equal)
                        });
                        *items.borrow_mut() = s.clone();
                    }
                    Value::None
                }
                _ => not_modelled(self),
            },
            Value::Tuple(items) => match name {
                "count" => Value::Int(
                    items
                        .iter()
                        .filter(|v| equal(v, &arg(0)) == Some(true))
                        .count() as i64,
                ),
                _ => not_modelled(self),
            },
            Value::Dict(pairs) => match name {
                "get" => ops::index(receiver, &arg(0)).unwrap_or_else(|_| arg(1)),
                "keys" => Value::list(pairs.borrow().iter().map(|(k, _)| k.clone()).collect()),
                "values" => Value::list(pairs.borrow().iter().map(|(_, v)| v.clone()).collect()),
                "items" => Value::list(
                    pairs
                        .borrow()
                        .iter()
                        .map(|(k, v)| Value::Tuple(Rc::new(vec![k.clone(), v.clone()])))
                        .collect(),
                ),
                "update" => {
                    ops::update(receiver, &arg(0));
                    for (k, v) in kwargs {
                        ops::set_item(receiver, Value::str(k), v);
                    }
                    Value::None
                }
                "setdefault" => match ops::index(receiver, &arg(0)) {
                    Ok(existing) => existing,
                    Err(_) => {
                        ops::set_item(receiver, arg(0), arg(1));
                        arg(1)
                    }
                },
                "pop" => {
                    let found = ops::index(receiver, &arg(0));
                    ops::delete_item(receiver, &arg(0));
                    found.unwrap_or_else(|_| arg(1))
                }
                "copy" => ops::copy(receiver),
                _ => not_modelled(self),
            },
            Value::Set(_) => match name {
                "add" => {
                    ops::set_add(receiver, arg(0));
                    Value::None
                }
                "update" => {
                    ops::update(receiver, &arg(0));
                    Value::None
                }
                "union" => {
                    let copy = ops::copy(receiver);
                    for other in &args {
                        ops::update(&copy, other);
                    }
                    copy
                }
                "copy" => ops::copy(receiver),
                _ => not_modelled(self),
            },
            Value::Environ => match name {
                "get" => self.environ_get(&arg(0), Some(arg(1)), line),
                "setdefault" => {
                    let current = self.environ_get(&arg(0), None, line);
                    if matches!(current, Value::None) {
                        self.environ_set(&arg(0), &arg(1), line);
                        arg(1)
                    } else {
                        current
                    }
                }
                "copy" => unknown(self, "a copy of the environment".into()),
                _ => not_modelled(self),
            },
            Value::File(path) => match name {
                "read" | "readlines" | "readline" => self.file_text(path, line),
                "close" | "__enter__" => Value::None,
                _ => not_modelled(self),
            },
            Value::Path(path) => match name {
                "read_text" => match self.project_relative(path) {
                    Some(rel) if self.root.join(&rel).is_file() => self.file_text(&rel, line),
                    _ => unknown(self, format!("`{path}` is not a project file")),
                },
                "resolve" | "absolute" => {
                    Value::Path(super::files::normpath(&if path.starts_with('/') {
                        path.clone()
                    } else {
                        ops::join_path(&self.root.to_string_lossy(), path)
                    }))
                }
                "joinpath" => {
                    let mut joined = path.clone();
                    for part in &args {
                        match part.as_str() {
                            Some(p) => joined = ops::join_path(&joined, p),
                            None => {
                                return Ok(unknown(
                                    self,
                                    "`joinpath()` of something that is not a path".into(),
                                ));
                            }
                        }
                    }
                    Value::Path(joined)
                }
                "as_posix" | "__str__" => Value::str(path.clone()),
                "exists" | "is_file" | "is_dir" => {
                    let native = match name {
                        "is_file" => "os.path.isfile",
                        "is_dir" => "os.path.isdir",
                        _ => "os.path.exists",
                    };
                    return self.call_file_native(
                        native,
                        vec![Value::str(path.clone())],
                        Vec::new(),
                        line,
                    );
                }
                "glob" | "rglob" => {
                    let pattern = match arg(0).as_str() {
                        Some(p) if name == "rglob" => format!("**/{p}"),
                        Some(p) => p.to_string(),
                        None => return Ok(not_modelled(self)),
                    };
                    let found = self.call_file_native(
                        "glob.glob",
                        vec![Value::str(ops::join_path(path, &pattern))],
                        vec![("recursive".into(), Value::Bool(true))],
                        line,
                    )?;
                    match found {
                        Value::List(items) => Value::list(
                            items
                                .borrow()
                                .iter()
                                .map(|v| Value::Path(v.as_str().unwrap_or_default().to_string()))
                                .collect(),
                        ),
                        other => other,
                    }
                }
                _ => not_modelled(self),
            },
            _ => not_modelled(self),
        })
    }
}

/// `str` methods that need nothing but the arguments; `None` if not one.
fn string_method(s: &str, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    let text = |i: usize| args.get(i).and_then(|a| a.as_str().map(str::to_string));
    let strings = |parts: Vec<&str>| Value::list(parts.into_iter().map(Value::str).collect());
    let chars_arg = text(0);
    let strip_set = |c: char| match &chars_arg {
        Some(set) => set.contains(c),
        None => c.is_whitespace(),
    };
    Some(Ok(match name {
        "split" | "rsplit" => {
            let max = match args.get(1) {
                Some(Value::Int(n)) if *n >= 0 => Some(*n as usize),
                _ => None,
            };
            match (text(0), max) {
                (None, None) => strings(s.split_whitespace().collect()),
                (Some(sep), None) if !sep.is_empty() => strings(s.split(sep.as_str()).collect()),
                (Some(sep), Some(n)) if !sep.is_empty() && name == "split" => {
                    strings(s.splitn(n + 1, sep.as_str()).collect())
                }
                (Some(sep), Some(n)) if !sep.is_empty() => {
                    let mut parts: Vec<&str> = s.rsplitn(n + 1, sep.as_str()).collect();
                    parts.reverse();
                    strings(parts)
                }
                _ => return Some(Err(format!("`{name}()` with these arguments"))),
            }
        }
        "splitlines" => strings(s.lines().collect()),
        "strip" => Value::str(s.trim_matches(strip_set)),
        "lstrip" => Value::str(s.trim_start_matches(strip_set)),
        "rstrip" => Value::str(s.trim_end_matches(strip_set)),
        "lower" => Value::str(s.to_lowercase()),
        "upper" => Value::str(s.to_uppercase()),
        "replace" => match (text(0), text(1)) {
            (Some(from), Some(to)) => {
                let count = if from.is_empty() {
                    s.chars().count() + 1
                } else {
                    s.matches(from.as_str()).count()
                };
                let len = s.len().saturating_add(count.saturating_mul(to.len()));
                if let Err(why) = super::budget::text_fits(len) {
                    return Some(Err(why));
                }
                Value::str(s.replace(&from, &to))
            }
            _ => return Some(Err("`replace()` with arguments that are not strings".into())),
        },
        "startswith" | "endswith" => {
            let candidates: Vec<String> = match args.first() {
                Some(Value::Tuple(t)) => t
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                Some(v) => v.as_str().map(|x| vec![x.to_string()]).unwrap_or_default(),
                None => Vec::new(),
            };
            Value::Bool(candidates.iter().any(|c| {
                if name == "startswith" {
                    s.starts_with(c.as_str())
                } else {
                    s.ends_with(c.as_str())
                }
            }))
        }
        "join" => {
            let Some(items) = args.first().and_then(|a| a.items().ok()) else {
                return Some(Err("`join()` of something that is not known".into()));
            };
            let parts: Option<Vec<String>> = items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect();
            let len = parts.as_ref().map_or(0, |parts| {
                parts
                    .iter()
                    .fold(s.len().saturating_mul(parts.len()), |n, p| {
                        n.saturating_add(p.len())
                    })
            });
            if let Err(why) = super::budget::text_fits(len) {
                return Some(Err(why));
            }
            match parts {
                Some(parts) => Value::str(parts.join(s)),
                None => {
                    return Some(Err(
                        "`join()` of items that are not all known strings".into()
                    ));
                }
            }
        }
        "find" => Value::Int(
            text(0)
                .and_then(|n| s.find(n.as_str()))
                .map_or(-1, |i| s[..i].chars().count() as i64),
        ),
        "count" => Value::Int(text(0).map_or(0, |n| s.matches(n.as_str()).count() as i64)),
        "isdigit" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
        "encode" | "decode" => Value::str(s),
        "partition" | "rpartition" => {
            let Some(sep) = text(0) else {
                return Some(Err("`partition()` without a separator".into()));
            };
            let found = if name == "partition" {
                s.split_once(sep.as_str())
            } else {
                s.rsplit_once(sep.as_str())
            };
            let (a, b, c) = match found {
                Some((a, c)) => (a, sep.as_str(), c),
                None if name == "partition" => (s, "", ""),
                None => ("", "", s),
            };
            Value::Tuple(Rc::new(vec![Value::str(a), Value::str(b), Value::str(c)]))
        }
        _ => return None,
    }))
}

/// `"{}-{name}".format(a, name=b)`: automatic, numbered and named fields.
fn str_format(format: &str, args: &[Value], kwargs: &Kwargs) -> Option<String> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut auto = 0;
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    field.push(d);
                }
                let (key, spec) = field.split_once(':').unwrap_or((&field, ""));
                let value = if key.is_empty() {
                    auto += 1;
                    args.get(auto - 1)?
                } else if let Ok(i) = key.parse::<usize>() {
                    args.get(i)?
                } else {
                    &kwargs.iter().find(|(k, _)| k == key)?.1
                };
                out.push_str(&if spec.is_empty() {
                    value.to_text()?
                } else {
                    ops::format_spec(value, spec)?
                });
            }
            _ => out.push(c),
        }
        super::budget::text_fits(out.len()).ok()?;
    }
    Some(out)
}

/// `version.major`, `.minor`, `.micro`, `.release`, `.base_version`, …
/// of a `packaging.version.Version`.
pub(super) fn version_attribute(version: &pep440_rs::Version, name: &str) -> Option<Value> {
    let release = version.release();
    let part = |i: usize| Value::Int(release.get(i).map_or(0, |n| *n as i64));
    let base = || {
        let numbers: Vec<String> = release.iter().map(u64::to_string).collect();
        match version.epoch() {
            0 => numbers.join("."),
            epoch => format!("{epoch}!{}", numbers.join(".")),
        }
    };
    Some(match name {
        "major" => part(0),
        "minor" => part(1),
        "micro" => part(2),
        "epoch" => Value::Int(version.epoch() as i64),
        "release" => Value::Tuple(Rc::new(
            release.iter().map(|n| Value::Int(*n as i64)).collect(),
        )),
        "base_version" => Value::str(base()),
        "public" => Value::str(version.clone().without_local().to_string()),
        "local" => match version.local() {
            [] => Value::None,
            parts => Value::str(
                parts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("."),
            ),
        },
        "is_prerelease" => Value::Bool(version.pre().is_some() || version.dev().is_some()),
        "is_devrelease" => Value::Bool(version.dev().is_some()),
        "is_postrelease" => Value::Bool(version.post().is_some()),
        "post" => version.post().map_or(Value::None, |n| Value::Int(n as i64)),
        "dev" => version.dev().map_or(Value::None, |n| Value::Int(n as i64)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_methods_follow_python() {
        let call =
            |s: &str, name: &str, args: &[Value]| string_method(s, name, args).unwrap().unwrap();
        assert_eq!(
            call("csrc/fps.cpp", "split", &[Value::str("/")])
                .repr()
                .unwrap(),
            "['csrc', 'fps.cpp']"
        );
        assert_eq!(
            call("a b  c", "split", &[]).repr().unwrap(),
            "['a', 'b', 'c']"
        );
        assert_eq!(
            call("1.2.3", "rsplit", &[Value::str("."), Value::Int(1)])
                .repr()
                .unwrap(),
            "['1.2', '3']"
        );
        assert_eq!(call("  v1 \n", "strip", &[]).as_str(), Some("v1"));
        assert_eq!(
            call(
                " ",
                "join",
                &[Value::list(vec![Value::str("a"), Value::str("b")])]
            )
            .as_str(),
            Some("a b")
        );
        assert!(string_method("x", "zfill", &[]).is_none());
        assert_eq!(
            str_format(
                "{}_{n}_{0}",
                &[Value::str("a")],
                &vec![("n".into(), Value::Int(2))]
            )
            .unwrap(),
            "a_2_a"
        );
    }
}
