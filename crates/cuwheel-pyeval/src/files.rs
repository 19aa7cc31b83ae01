//! The file-system side of the modelled library: `os.path`, `glob`,
//! `pathlib.Path`, `open`, `exec(open(...).read())` and `find_packages`,
//! answered from the project tree (the working directory is the project
//! root, where `setup.py` is).
//!
//! In: path strings as `setup.py` computes them (relative, or absolute
//! under the root through `__file__`). Out: their values; a path outside
//! the project is unknown (it names the build host, not the project).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::eval::{EvalError, Interpreter};
use super::expr::Kwargs;
use super::natives::dirname;
use super::ops::join_path;
use super::value::{Unknown, Value};

/// `a/./b/../c` → `a/c` (lexically, as `os.path.normpath`).
pub fn normpath(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// A path `setup.py` computed (relative to `root`, the working directory,
/// or absolute), relative to `root` and normalised; `None` if it leaves
/// the project. The root itself is the empty path.
pub fn project_relative(root: &Path, path: &str) -> Option<PathBuf> {
    let absolute = if path.starts_with('/') {
        normpath(path)
    } else {
        normpath(&join_path(&root.to_string_lossy(), path))
    };
    let rel = Path::new(&absolute).strip_prefix(root).ok()?;
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| rel.to_path_buf())
}

impl Interpreter<'_> {
    pub(super) fn project_relative(&self, path: &str) -> Option<PathBuf> {
        project_relative(&self.root, path)
    }

    fn outside(&self, path: &str, line: usize) -> Value {
        Value::unknown(
            format!("`{path}` is outside the project (a path of the build host)"),
            self.at(line),
        )
    }

    pub(super) fn call_file_native(
        &mut self,
        name: &'static str,
        args: Vec<Value>,
        kwargs: Kwargs,
        line: usize,
    ) -> Result<Value, EvalError> {
        let kw = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let text_args: Option<Vec<String>> = args
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect();
        let first = text_args.as_ref().and_then(|a| a.first().cloned());
        let wrong =
            |this: &Self| Value::unknown(format!("`{name}()` with these arguments"), this.at(line));
        Ok(match name {
            "os.path.join" => match text_args {
                Some(parts) if !parts.is_empty() => Value::str(
                    parts
                        .iter()
                        .skip(1)
                        .fold(parts[0].clone(), |acc, p| join_path(&acc, p)),
                ),
                _ => wrong(self),
            },
            "os.getcwd" => Value::str(self.root.to_string_lossy()),
            "exec" => return self.exec(args.first(), line),
            "runpy.run_path" => return self.run_path(first.as_deref(), line),
            "setuptools.find_packages" | "setuptools.find_namespace_packages" => {
                self.find_packages(&args, &kwargs, line)
            }
            _ => {
                let Some(path) = first
                    .or_else(|| kw("pathname").and_then(|p| p.as_str().map(str::to_string)))
                    .or_else(|| {
                        if name == "pathlib.Path" && args.is_empty() {
                            Some(".".into())
                        } else {
                            None
                        }
                    })
                else {
                    return Ok(wrong(self));
                };
                match name {
                    "os.path.exists" | "os.path.isfile" | "os.path.isdir" => {
                        match self.project_relative(&path) {
                            Some(rel) => {
                                let full = self.root.join(rel);
                                Value::Bool(match name {
                                    "os.path.isfile" => full.is_file(),
                                    "os.path.isdir" => full.is_dir(),
                                    _ => full.exists(),
                                })
                            }
                            None => self.outside(&path, line),
                        }
                    }
                    "os.path.dirname" => Value::str(dirname(&path)),
                    "os.path.basename" => Value::str(path.rsplit('/').next().unwrap_or(&path)),
                    "os.path.abspath" | "os.path.realpath" => {
                        Value::str(if path.starts_with('/') {
                            normpath(&path)
                        } else {
                            normpath(&join_path(&self.root.to_string_lossy(), &path))
                        })
                    }
                    "os.path.normpath" => Value::str(normpath(&path)),
                    "os.path.expanduser" => Value::str(path),
                    "os.path.isabs" => Value::Bool(path.starts_with('/')),
                    "os.path.relpath" => {
                        let start = text_args
                            .as_ref()
                            .and_then(|a| a.get(1).cloned())
                            .unwrap_or_else(|| ".".into());
                        match (self.project_relative(&path), self.project_relative(&start)) {
                            (Some(p), Some(s)) if p.starts_with(&s) => {
                                let rel = p
                                    .strip_prefix(&s)
                                    .unwrap_or(&p)
                                    .to_string_lossy()
                                    .to_string();
                                Value::str(if rel.is_empty() { ".".to_string() } else { rel })
                            }
                            _ => wrong(self),
                        }
                    }
                    "os.path.splitext" | "os.path.split" => {
                        let (a, b) = if name == "os.path.split" {
                            match path.rfind('/') {
                                Some(i) => (path[..i].to_string(), path[i + 1..].to_string()),
                                None => (String::new(), path.clone()),
                            }
                        } else {
                            let file_start = path.rfind('/').map_or(0, |i| i + 1);
                            match path[file_start..].rfind('.').filter(|i| *i > 0) {
                                Some(i) => (
                                    path[..file_start + i].to_string(),
                                    path[file_start + i..].to_string(),
                                ),
                                None => (path.clone(), String::new()),
                            }
                        };
                        Value::Tuple(Rc::new(vec![Value::str(a), Value::str(b)]))
                    }
                    "os.listdir" => match self
                        .project_relative(&path)
                        .map(|rel| fs::read_dir(self.root.join(rel)))
                    {
                        Some(Ok(entries)) => {
                            let names: BTreeSet<String> = entries
                                .filter_map(|e| e.ok())
                                .map(|e| e.file_name().to_string_lossy().to_string())
                                .collect();
                            Value::list(names.into_iter().map(Value::str).collect())
                        }
                        Some(Err(e)) => {
                            Value::unknown(format!("cannot list `{path}`: {e}"), self.at(line))
                        }
                        None => self.outside(&path, line),
                    },
                    "glob.glob" | "glob.iglob" => {
                        let recursive = kw("recursive").and_then(|r| r.truth()) == Some(true);
                        self.glob(&path, recursive, line)
                    }
                    "pathlib.Path" => {
                        let joined = text_args
                            .unwrap_or_default()
                            .iter()
                            .fold(String::new(), |acc, p| join_path(&acc, p));
                        Value::Path(if joined.is_empty() { path } else { joined })
                    }
                    "open" | "io.open" | "codecs.open" => match self.project_relative(&path) {
                        Some(rel) if self.root.join(&rel).is_file() => Value::File(rel),
                        Some(rel) => Value::unknown(
                            format!("{} does not exist in the project", rel.display()),
                            self.at(line),
                        ),
                        None => self.outside(&path, line),
                    },
                    _ => Value::unknown(super::natives::not_modelled(name), self.at(line)),
                }
            }
        })
    }

    /// The text of a project file as an unknown that remembers the file:
    /// what is computed from it (a version by regex, a requirements list)
    /// is pointed at the file rather than guessed.
    pub(super) fn file_text(&self, rel: &Path, line: usize) -> Value {
        self.computed_from_file(rel, line, "contents", Some(rel))
    }

    /// The lines of a project file (`iter(f)`, `for line in f`): not read
    /// as values; what is computed from them points at the file.
    pub(super) fn file_lines(&self, rel: &Path, line: usize) -> Value {
        self.computed_from_file(rel, line, "lines", None)
    }

    fn computed_from_file(
        &self,
        rel: &Path,
        line: usize,
        what: &str,
        text_of: Option<&Path>,
    ) -> Value {
        Value::Unknown(Rc::new(Unknown {
            why: format!("computed from the {what} of {}", rel.display()),
            at: self.at(line),
            files: BTreeSet::from([rel.to_path_buf()]),
            text_of: text_of.map(Path::to_path_buf),
            under_cuda_home: None,
        }))
    }

    /// `exec(open("pkg/version.py").read())`: evaluates that project file
    /// in the current globals.
    fn exec(&mut self, code: Option<&Value>, line: usize) -> Result<Value, EvalError> {
        let file = code
            .and_then(|c| c.as_unknown())
            .and_then(|u| u.text_of.clone());
        match file {
            Some(file) if file.extension().is_some_and(|e| e == "py") => {
                let text = match self.project.read_text(&self.root, &file) {
                    Ok(text) => text,
                    Err(why) => {
                        self.note(line, why);
                        return Ok(Value::None);
                    }
                };
                // As in Python, into the calling function's locals (what
                // `locals()` then shows) or, at the top, the globals.
                let scope = self.frame().scopes.first().cloned().expect("a scope");
                self.run_file(&file, &text, scope, line)?;
            }
            _ => self.note(
                line,
                "exec() of code that is not a project .py file: not evaluated",
            ),
        }
        Ok(Value::None)
    }

    /// `runpy.run_path("pkg/version.py")`: evaluates that project file in
    /// fresh globals and gives them as a dict, as Python does.
    fn run_path(&mut self, path: Option<&str>, line: usize) -> Result<Value, EvalError> {
        let Some(rel) = path.and_then(|p| self.project_relative(p)) else {
            return Ok(Value::unknown(
                "`runpy.run_path()` of a path that is not a project .py file".to_string(),
                self.at(line),
            ));
        };
        let text = match self.project.read_text(&self.root, &rel) {
            Ok(text) => text,
            Err(why) => return Ok(Value::unknown(why, self.at(line))),
        };
        let globals: super::value::Scope = super::value::shared(std::collections::HashMap::new());
        self.run_file(&rel, &text, globals.clone(), line)?;
        let mut pairs: Vec<(String, Value)> = globals
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Value::Dict(super::value::shared(
            pairs.into_iter().map(|(k, v)| (Value::str(k), v)).collect(),
        )))
    }

    /// `glob.glob(pattern)` against the project tree, sorted.
    fn glob(&mut self, pattern: &str, recursive: bool, line: usize) -> Value {
        let Some(rel) = self.project_relative(pattern) else {
            return self.outside(pattern, line);
        };
        let rel = rel.to_string_lossy().to_string();
        let rel = if recursive {
            rel
        } else {
            rel.replace("**", "*")
        };
        let files = match self.project.glob(&self.root, &rel) {
            Ok(files) => files,
            Err(e) => return Value::unknown(format!("the glob `{pattern}`: {e}"), self.at(line)),
        };
        // Results keep the pattern's form: absolute, `./`-prefixed or plain.
        let prefix = if pattern.starts_with('/') {
            format!("{}/", self.root.to_string_lossy())
        } else if pattern.starts_with("./") {
            "./".into()
        } else {
            String::new()
        };
        Value::list(
            files
                .into_iter()
                .map(|f| Value::str(format!("{prefix}{}", f.to_string_lossy())))
                .collect(),
        )
    }

    /// setuptools' `find_packages(where=".", exclude=(), include=("*",))`:
    /// every directory with an `__init__.py` reached through such
    /// directories, as dotted names, sorted.
    fn find_packages(&mut self, args: &[Value], kwargs: &Kwargs, line: usize) -> Value {
        let kw = |k: &str, i: usize| {
            kwargs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .or_else(|| args.get(i).cloned())
        };
        let patterns = |v: Option<Value>| -> Option<Vec<String>> {
            match v {
                None => Some(Vec::new()),
                Some(v) => v
                    .items()
                    .ok()?
                    .iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect(),
            }
        };
        let where_ = kw("where", 0)
            .and_then(|w| w.as_str().map(str::to_string))
            .unwrap_or_else(|| ".".into());
        let (Some(exclude), Some(include)) =
            (patterns(kw("exclude", 1)), patterns(kw("include", 2)))
        else {
            return Value::unknown(
                "`find_packages()` with patterns that are not known",
                self.at(line),
            );
        };
        let Some(base) = self.project_relative(&where_) else {
            return self.outside(&where_, line);
        };
        if base != Path::new("") {
            self.note(
                line,
                format!(
                    "find_packages(where=\"{where_}\"): packages live under {where_}/ (package_dir)"
                ),
            );
        }
        let mut found = Vec::new();
        let mut pending = vec![(self.root.join(&base), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(|e| e.ok()) {
                let name = entry.file_name().to_string_lossy().to_string();
                let path = entry.path();
                if name.contains('.') || !path.is_dir() || !path.join("__init__.py").is_file() {
                    continue;
                }
                let package = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let included = include.is_empty() || include.iter().any(|p| fnmatch(p, &package));
                if included && !exclude.iter().any(|p| fnmatch(p, &package)) {
                    found.push(package.clone());
                }
                pending.push((path, package));
            }
        }
        found.sort();
        Value::list(found.into_iter().map(Value::str).collect())
    }
}

/// `fnmatch` for `*` and `?` (setuptools' package patterns).
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) => a == b && go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_like_os_path() {
        assert_eq!(normpath("./csrc/../csrc/x.cu"), "csrc/x.cu");
        assert_eq!(normpath("/a/b/../c/"), "/a/c");
        assert_eq!(normpath("../x"), "../x");
        assert_eq!(normpath("."), ".");
    }

    #[test]
    fn package_patterns_match_like_fnmatch() {
        assert!(fnmatch("tests*", "tests.unit"));
        assert!(fnmatch("*.tests", "pkg.tests"));
        assert!(!fnmatch("tests", "tests.unit"));
        assert!(fnmatch("p?g", "pkg"));
    }
}
