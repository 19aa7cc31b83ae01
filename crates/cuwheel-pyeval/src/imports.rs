//! Imports: the project's own modules are evaluated (once each) so that
//! `from pkg.version import __version__` and `exec(open(...).read())` give
//! their values; any other module is a name whose attributes the modelled
//! libraries answer.
//!
//! In: dotted module names and the project root. Out: module values and
//! bindings in the importing scope; the values read from project modules
//! are recorded for the extraction (a version read from `pkg.__version__`
//! stays pointed at it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::ast::{Stmt, StmtKind};
use super::eval::{EvalError, Flow, Frame, Interpreter};
use super::parse_module;
use super::source::Source;
use super::value::{Scope, Value, shared};

impl Interpreter<'_> {
    pub(super) fn import_module(&mut self, dotted: &str, line: usize) -> Result<Value, EvalError> {
        if self.project_module_file(dotted).is_some() {
            self.load_project_module(dotted, line)?;
        }
        Ok(Value::Module(dotted.to_string()))
    }

    pub(super) fn import_from(
        &mut self,
        module: &str,
        level: usize,
        names: &[(String, Option<String>)],
        line: usize,
    ) -> Result<(), EvalError> {
        if level > 0 {
            self.note(line, "a relative import in setup.py: its names are unknown");
            for (name, alias) in names {
                let value = Value::unknown(
                    format!("`{name}` comes from a relative import"),
                    self.at(line),
                );
                self.bind(alias.as_ref().unwrap_or(name), value);
            }
            return Ok(());
        }
        if self.project_module_file(module).is_some() {
            self.load_project_module(module, line)?;
        }
        if names.is_empty() {
            if let Some(scope) = self.modules.get(module).cloned() {
                let bindings: Vec<(String, Value)> = scope
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (name, value) in bindings {
                    self.project_values
                        .push((format!("{module}.{name}"), value.clone()));
                    self.bind(&name, value);
                }
            }
            return Ok(());
        }
        for (name, alias) in names {
            self.importing = true;
            let value = self.attribute(&Value::Module(module.to_string()), name, line);
            self.importing = false;
            let value = value?;
            self.bind(alias.as_ref().unwrap_or(name), value);
        }
        Ok(())
    }

    /// The project file of a dotted module name (`pkg/version.py`,
    /// `pkg/__init__.py`), relative to the root, if there is one.
    pub(super) fn project_module_file(&self, dotted: &str) -> Option<PathBuf> {
        let base: PathBuf = dotted.split('.').collect();
        [base.with_extension("py"), base.join("__init__.py")]
            .into_iter()
            .find(|candidate| self.root.join(candidate).is_file())
    }

    /// Evaluates a project module (its own globals), once.
    pub(super) fn load_project_module(
        &mut self,
        dotted: &str,
        line: usize,
    ) -> Result<Option<Scope>, EvalError> {
        if let Some(scope) = self.modules.get(dotted) {
            return Ok(Some(scope.clone()));
        }
        let Some(file) = self.project_module_file(dotted) else {
            return Ok(None);
        };
        let globals: Scope = shared(HashMap::new());
        self.modules.insert(dotted.to_string(), globals.clone());
        let text = match std::fs::read_to_string(self.root.join(&file)) {
            Ok(text) => text,
            Err(e) => {
                self.note(line, format!("cannot read {}: {e}", file.display()));
                return Ok(Some(globals));
            }
        };
        self.run_file(&file, &text, globals.clone(), line)?;
        Ok(Some(globals))
    }

    /// Evaluates a project file's text in `globals` (for an import or an
    /// `exec(open(...).read())`); a syntax error there is noted, not fatal.
    pub(super) fn run_file(
        &mut self,
        file: &Path,
        text: &str,
        globals: Scope,
        line: usize,
    ) -> Result<(), EvalError> {
        let source = Rc::new(Source::new(file.to_string_lossy(), text));
        let body = match parse_module(text) {
            Ok(body) => body,
            Err(e) => {
                let error = source.syntax_error(&e);
                self.note(line, format!("{} is not read: {error}", file.display()));
                return Ok(());
            }
        };
        globals
            .borrow_mut()
            .entry("__file__".into())
            .or_insert_with(|| Value::str(self.root.join(file).to_string_lossy()));
        self.enter(Frame::new(vec![globals], source), line)?;
        let flow = self.block(&body);
        self.leave();
        if let Flow::Raise(at) = flow? {
            self.note(
                line,
                format!("{} stops at a `raise` ({at})", file.display()),
            );
        }
        Ok(())
    }
}

/// Modules a build of a torch extension has, whose attributes are
/// modelled or irrelevant: importing them is not an assumption.
const BUILD_MODULES: [&str; 22] = [
    "os",
    "sys",
    "glob",
    "re",
    "platform",
    "subprocess",
    "setuptools",
    "distutils",
    "torch",
    "pathlib",
    "itertools",
    "io",
    "codecs",
    "warnings",
    "ast",
    "json",
    "shutil",
    "packaging",
    "pkg_resources",
    "wheel",
    "typing",
    "runpy",
];

/// The top-level modules a try body imports that are neither build
/// modules nor the project's.
pub(super) fn unmodelled_imports(body: &[Stmt]) -> Vec<String> {
    let mut found = Vec::new();
    for stmt in body {
        let modules: Vec<&str> = match &stmt.kind {
            StmtKind::Import(names) => names.iter().map(|(n, _)| n.as_str()).collect(),
            StmtKind::ImportFrom {
                module, level: 0, ..
            } => vec![module.as_str()],
            _ => Vec::new(),
        };
        for module in modules {
            let top = module.split('.').next().unwrap_or(module).to_string();
            if !BUILD_MODULES.contains(&top.as_str()) && !found.contains(&top) {
                found.push(top);
            }
        }
    }
    found
}
