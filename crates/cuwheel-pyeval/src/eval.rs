//! The evaluator of statements: runs a syntax tree against an environment
//! of names, a model of the build host and the project's files — never
//! Python itself.
//!
//! In: the project root, `setup.py`'s text and the host's reader of the
//! project's files ([`ProjectFiles`]). Out: an [`Evaluation`] —
//! the `setup(...)` call it reached with every argument evaluated as far as
//! statically possible, the environment variables it set, the names it
//! imported from the project, and the [`Note`]s on each assumption it made
//! (which branch of an environment-dependent `if` it took, and why).
//!
//! The build host is a CUDA build host with no variables set: see
//! [`host`](super::host). Work is bounded (a step and a depth limit), so a
//! loop that never ends in Python ends here with a message.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::ast::{Expr, ExprKind, Stmt, StmtKind, block_has_string, block_mentions};
use super::host::Toolkit;
pub(super) use super::outcome::{EvalError, Evaluation, GpuQuestions, Note};
use super::parse_module;
use super::project::ProjectFiles;
use super::source::Source;
use super::value::{Call, Function, Scope, Unknown, Value, shared};

/// The deepest call nesting.
pub(super) const DEPTH_LIMIT: usize = 64;
/// What marks the branch of an `if` that builds the CUDA module.
const CUDA_MARK: &str = "CUDAExtension";
/// What marks a branch that chooses GPU archs: nvcc's arch options and
/// torch's arch list.
const ARCH_MARKS: [&str; 3] = ["arch=", "compute_", "TORCH_CUDA_ARCH_LIST"];
/// How a note says that the branch not taken chooses archs.
pub const ARCH_BRANCH: &str = "the branch not taken chooses GPU archs";

/// What a branch of an `if` does that decides which one to take.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Branch {
    /// It builds a `CUDAExtension`.
    pub(super) cuda: bool,
    /// It chooses GPU archs.
    pub(super) archs: bool,
}

impl Branch {
    pub(super) fn of_block(body: &[Stmt]) -> Branch {
        Branch {
            cuda: block_mentions(body, CUDA_MARK),
            archs: ARCH_MARKS.iter().any(|m| block_has_string(body, m)),
        }
    }

    pub(super) fn of_expr(expr: &Expr) -> Branch {
        let stmt = Stmt {
            line: expr.line,
            kind: StmtKind::Expr(expr.clone()),
        };
        Branch::of_block(std::slice::from_ref(&stmt))
    }
}

/// How a statement ends.
pub(super) enum Flow {
    Next,
    Return(Value),
    Break,
    Continue,
    /// A `raise` (or `sys.exit`) was reached, at this quoted line.
    Raise(String),
}

/// One function's (or the module's) evaluation context.
pub(super) struct Frame {
    /// Innermost first; the module's globals last.
    pub(super) scopes: Vec<Scope>,
    pub(super) globals: HashSet<String>,
    pub(super) source: Rc<Source>,
    /// What a generator function has yielded so far (`None` elsewhere).
    pub(super) yields: Option<Vec<Value>>,
    /// A loop this call skipped because what it iterates is unknown: what
    /// the call returns is then incomplete, and says so.
    pub(super) skipped: Option<Rc<Unknown>>,
}

impl Frame {
    pub(super) fn new(scopes: Vec<Scope>, source: Rc<Source>) -> Frame {
        Frame {
            scopes,
            globals: HashSet::new(),
            source,
            yields: None,
            skipped: None,
        }
    }
}

pub struct Interpreter<'a> {
    pub(super) root: PathBuf,
    /// The host's reader of the project's files.
    pub(super) project: &'a dyn ProjectFiles,
    pub(super) notes: Vec<Note>,
    pub(super) setup: Option<Rc<Call>>,
    pub(super) environ: BTreeMap<String, String>,
    pub(super) project_values: Vec<(String, Value)>,
    pub(super) frames: Vec<Frame>,
    /// Environment variables read (that setup.py did not set itself),
    /// in order: a test that reads one is an environment branch.
    pub(super) reads: Vec<String>,
    /// Set while an import binds names: a build-host fact is noted where it
    /// is used, not where it is imported.
    pub(super) importing: bool,
    /// Project modules already loaded, by dotted name.
    pub(super) modules: HashMap<String, Scope>,
    /// The toolkit this evaluation is for; `None`: what depends on it is
    /// unknown.
    pub(super) toolkit: Option<Toolkit>,
    pub(super) steps: usize,
    /// The step count when the current top-level statement began.
    pub(super) statement_start: usize,
    /// How deep [`eval`](Interpreter::eval) is nested.
    pub(super) eval_depth: usize,
    pub(super) gpu: GpuQuestions,
}

/// Evaluates `text`, the `setup.py` at the top of `root` (an absolute
/// path: `__file__` and `os.path.abspath` answer inside it), reading and
/// globbing the project's files through `project`.
pub fn evaluate_setup_py(
    root: &Path,
    text: &str,
    project: &dyn ProjectFiles,
) -> Result<Evaluation, EvalError> {
    evaluate_setup_py_for(root, text, project, None)
}

/// Evaluates `text` as [`evaluate_setup_py`] does, with what depends on the
/// toolkit (`nvcc -V`, `torch.version.cuda`, `torch.__version__`) answered
/// for `toolkit`.
pub fn evaluate_setup_py_for(
    root: &Path,
    text: &str,
    project: &dyn ProjectFiles,
    toolkit: Option<&Toolkit>,
) -> Result<Evaluation, EvalError> {
    let source = Rc::new(Source::new("setup.py", text));
    let body = parse_module(text).map_err(|e| source.syntax_error(&e))?;
    let globals: Scope = shared(HashMap::new());
    {
        let mut g = globals.borrow_mut();
        g.insert("__name__".into(), Value::str("__main__"));
        g.insert(
            "__file__".into(),
            Value::str(root.join("setup.py").to_string_lossy()),
        );
    }
    let mut interpreter = Interpreter {
        root: root.to_path_buf(),
        project,
        notes: Vec::new(),
        setup: None,
        environ: BTreeMap::new(),
        project_values: Vec::new(),
        frames: vec![Frame::new(vec![globals], source)],
        reads: Vec::new(),
        importing: false,
        modules: HashMap::new(),
        toolkit: toolkit.cloned(),
        steps: 0,
        statement_start: 0,
        eval_depth: 0,
        gpu: GpuQuestions::default(),
    };
    let raised = match interpreter.top_level(&body)? {
        Flow::Raise(at) => Some(at),
        _ => None,
    };
    let mut notes = interpreter.notes;
    notes.dedup();
    Ok(Evaluation {
        setup: interpreter.setup,
        notes,
        environ: interpreter.environ,
        project_values: interpreter.project_values,
        raised,
        gpu: interpreter.gpu,
    })
}

impl Interpreter<'_> {
    pub(super) fn frame(&self) -> &Frame {
        self.frames.last().expect("a frame")
    }

    pub(super) fn source(&self) -> Rc<Source> {
        self.frame().source.clone()
    }

    /// `setup.py:12: `the line``.
    pub(super) fn at(&self, line: usize) -> String {
        self.frame().source.quote(line)
    }

    pub(super) fn note(&mut self, line: usize, text: impl Into<String>) {
        let note = Note {
            at: self.at(line),
            text: text.into(),
        };
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    pub(super) fn step(&mut self, line: usize) -> Result<(), EvalError> {
        use super::budget::{STATEMENT_STEPS, TOTAL_STEPS};
        self.steps += 1;
        if self.steps > TOTAL_STEPS {
            return Err(EvalError::Limit {
                at: self.at(line),
                problem: format!(
                    "more than {TOTAL_STEPS} evaluation steps in all, cuwheel's budget for setup.py"
                ),
            });
        }
        if self.steps - self.statement_start > STATEMENT_STEPS {
            return Err(EvalError::Steps {
                at: self.at(line),
                problem: format!(
                    "more than {STATEMENT_STEPS} evaluation steps (a loop that does not end?) \
                     exceed cuwheel's budget for one statement"
                ),
            });
        }
        Ok(())
    }

    pub(super) fn enter(&mut self, frame: Frame, line: usize) -> Result<(), EvalError> {
        if self.frames.len() >= DEPTH_LIMIT {
            return Err(EvalError::Limit {
                at: self.at(line),
                problem: format!("calls nested more than {DEPTH_LIMIT} deep"),
            });
        }
        self.frames.push(frame);
        Ok(())
    }

    pub(super) fn leave(&mut self) -> Option<Frame> {
        self.frames.pop()
    }

    /// The value bound to `name`, innermost scope first.
    pub(super) fn lookup(&self, name: &str) -> Option<Value> {
        self.frame()
            .scopes
            .iter()
            .find_map(|scope| scope.borrow().get(name).cloned())
    }

    /// Binds `name` in the innermost scope, or in the globals if the
    /// function declared it `global`.
    pub(super) fn bind(&mut self, name: &str, value: Value) {
        let frame = self.frame();
        let scope = if frame.globals.contains(name) {
            frame.scopes.last()
        } else {
            frame.scopes.first()
        };
        if let Some(scope) = scope {
            scope.borrow_mut().insert(name.to_string(), value);
        }
    }

    pub(super) fn block(&mut self, body: &[Stmt]) -> Result<Flow, EvalError> {
        for stmt in body {
            match self.statement(stmt)? {
                Flow::Next => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    pub(super) fn statement(&mut self, stmt: &Stmt) -> Result<Flow, EvalError> {
        self.step(stmt.line)?;
        let line = stmt.line;
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.eval(e)?;
            }
            StmtKind::Assign { targets, value } => {
                let value = self.eval(value)?;
                for target in targets {
                    self.assign(target, value.clone())?;
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                let right = self.eval(value)?;
                self.aug_assign(target, *op, right, line)?;
            }
            StmtKind::AnnAssign { target, value } => {
                if let Some(value) = value {
                    let value = self.eval(value)?;
                    self.assign(target, value)?;
                }
            }
            StmtKind::If { test, body, orelse } => {
                let taken =
                    self.decide(test, line, Branch::of_block(body), Branch::of_block(orelse))?;
                return self.block(if taken { body } else { orelse });
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => return self.for_loop(target, iter, body, orelse, line),
            StmtKind::While { test, body, orelse } => {
                return self.while_loop(test, body, orelse, line);
            }
            StmtKind::Def(def) => {
                let function = Function {
                    def: def.clone(),
                    scopes: self.frame().scopes.clone(),
                    source: self.source(),
                };
                self.bind(&def.name, Value::Function(Rc::new(function)));
            }
            StmtKind::Class { name } => {
                let value = Value::unknown(
                    format!("`{name}` is a class, which cuwheel does not evaluate"),
                    self.at(line),
                );
                self.bind(name, value);
            }
            StmtKind::Return(value) => {
                let value = match value {
                    Some(v) => self.eval(v)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(value));
            }
            StmtKind::Import(names) => {
                for (dotted, alias) in names {
                    match alias {
                        Some(alias) => {
                            let module = self.import_module(dotted, line)?;
                            self.bind(alias, module);
                        }
                        None => {
                            let top = dotted.split('.').next().unwrap_or(dotted);
                            self.import_module(dotted, line)?;
                            let module = self.import_module(top, line)?;
                            self.bind(top, module);
                        }
                    }
                }
            }
            StmtKind::ImportFrom {
                module,
                level,
                names,
            } => self.import_from(module, *level, names, line)?,
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                let flow = match self.block(body)? {
                    Flow::Raise(at) => match handlers.first() {
                        Some(handler) => {
                            self.note(
                                handler.line,
                                format!(
                                    "took this handler: {at} raises under cuwheel's assumptions"
                                ),
                            );
                            if let Some(name) = &handler.name {
                                let error = Value::unknown("an exception", at);
                                self.bind(name, error);
                            }
                            self.block(&handler.body)?
                        }
                        None => Flow::Raise(at),
                    },
                    Flow::Next => {
                        let mut imported = super::imports::unmodelled_imports(body);
                        imported.retain(|m| self.project_module_file(m).is_none());
                        if !imported.is_empty() && !handlers.is_empty() {
                            self.note(
                                line,
                                format!(
                                    "assumed that `import {}` succeeds; the except branch was not taken",
                                    imported.join("`, `")
                                ),
                            );
                        }
                        self.block(orelse)?
                    }
                    other => other,
                };
                return match self.block(finalbody)? {
                    Flow::Next => Ok(flow),
                    other => Ok(other),
                };
            }
            StmtKind::With { items, body } => {
                for (context, target) in items {
                    let value = self.eval(context)?;
                    if let Some(target) = target {
                        self.assign(target, value)?;
                    }
                }
                return self.block(body);
            }
            StmtKind::Raise(_) => return Ok(Flow::Raise(self.at(line))),
            StmtKind::Global(names) => {
                if let Some(frame) = self.frames.last_mut() {
                    frame.globals.extend(names.iter().cloned());
                }
            }
            StmtKind::Del(targets) => {
                for target in targets {
                    self.delete(target)?;
                }
            }
            StmtKind::Assert(test) => {
                if self.eval(test)?.truth() == Some(false) {
                    self.note(
                        line,
                        "this assertion fails under cuwheel's assumptions; evaluation went on",
                    );
                }
            }
            StmtKind::Pass => {}
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Next)
    }

    /// Which branch of an `if` (or a conditional expression) to take.
    ///
    /// A test that reads environment variables is evaluated with them unset,
    /// as a plain `pip install` would, unless exactly one branch builds a
    /// `CUDAExtension`: then that one (the CUDA branch). A test that cannot
    /// be evaluated takes the CUDA branch if there is one, else the `else`
    /// branch. Each such decision is noted with its line.
    pub(super) fn decide(
        &mut self,
        test: &Expr,
        line: usize,
        then: Branch,
        orelse: Branch,
    ) -> Result<bool, EvalError> {
        let (then_cuda, else_cuda) = (then.cuda, orelse.cuda);
        let mark = self.reads.len();
        let value = self.eval(test)?;
        let reads = self.reads.split_off(mark);
        let mut env: Vec<&str> = Vec::new();
        for name in &reads {
            if !env.contains(&name.as_str()) {
                env.push(name);
            }
        }
        let known = value.truth();
        let cuda_side = match (then_cuda, else_cuda) {
            (true, false) => Some(true),
            (false, true) => Some(false),
            _ => None,
        };
        let branch = |taken: bool| {
            if taken {
                "took this branch"
            } else {
                "skipped this branch"
            }
        };
        let side_taken = |taken: bool| {
            if taken {
                "took this branch"
            } else {
                "took the other branch"
            }
        };
        if env.is_empty() && known.is_some() {
            return Ok(known.unwrap_or(false));
        }
        let vars = env
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let decided = self.notes.len();
        let taken = match (known, cuda_side) {
            (_, Some(side)) => {
                let reason = if env.is_empty() {
                    format!("cannot be evaluated ({})", unknown_why(&value))
                } else {
                    format!("reads {vars} from the environment")
                };
                self.note(
                    line,
                    format!(
                        "{reason}: {} (the one that builds a CUDAExtension)",
                        side_taken(side)
                    ),
                );
                side
            }
            (Some(known), None) => {
                self.note(
                    line,
                    format!(
                        "reads {vars} from the environment: taken as unset, so {}",
                        branch(known)
                    ),
                );
                known
            }
            (None, None) => {
                self.note(
                    line,
                    format!(
                        "cannot be evaluated ({}): {} (as if false)",
                        unknown_why(&value),
                        branch(false)
                    ),
                );
                false
            }
        };
        // setup.py files choose archs by the toolkit or the GPU at hand.
        let skipped = if taken { orelse } else { then };
        if let Some(note) = self.notes.get_mut(decided).filter(|_| skipped.archs) {
            note.text.push_str(&format!("; {ARCH_BRANCH}"));
        }
        Ok(taken)
    }

    fn for_loop(
        &mut self,
        target: &Expr,
        iter: &Expr,
        body: &[Stmt],
        orelse: &[Stmt],
        line: usize,
    ) -> Result<Flow, EvalError> {
        let iterable = self.eval(iter)?;
        let items = match self.iterate(&iterable, line) {
            Some(items) => items,
            None => return Ok(Flow::Next),
        };
        for item in items {
            self.step(line)?;
            self.assign(target, item)?;
            match self.block(body)? {
                Flow::Break => return Ok(Flow::Next),
                Flow::Next | Flow::Continue => {}
                other => return Ok(other),
            }
        }
        self.block(orelse)
    }

    fn while_loop(
        &mut self,
        test: &Expr,
        body: &[Stmt],
        orelse: &[Stmt],
        line: usize,
    ) -> Result<Flow, EvalError> {
        loop {
            self.step(line)?;
            let mark = self.reads.len();
            let value = self.eval(test)?;
            let environment = self.reads.len() > mark;
            self.reads.truncate(mark);
            match value.truth() {
                Some(true) if !environment => match self.block(body)? {
                    Flow::Break => return Ok(Flow::Next),
                    Flow::Next | Flow::Continue => {}
                    other => return Ok(other),
                },
                Some(false) if !environment => return self.block(orelse),
                _ => {
                    self.note(line, "this loop's test depends on the build environment or cannot be evaluated: skipped");
                    return Ok(Flow::Next);
                }
            }
        }
    }

    /// The items to loop over, or `None` (noted) when they are unknown.
    pub(super) fn iterate(&mut self, iterable: &Value, line: usize) -> Option<Vec<Value>> {
        // `for line in f`: the lines of a project file.
        let lines;
        let iterable = match iterable {
            Value::File(path) => {
                lines = self.file_lines(path, line);
                &lines
            }
            other => other,
        };
        match iterable.items() {
            Ok(items) => Some(items),
            Err(why) => {
                let why = match iterable.as_unknown() {
                    Some(unknown) => unknown.why.clone(),
                    None => why,
                };
                let skipped = Rc::new(Unknown {
                    why: format!("a loop over something not known ({why}) was skipped"),
                    at: self.at(line),
                    files: iterable
                        .as_unknown()
                        .map(|u| u.files.clone())
                        .unwrap_or_default(),
                    text_of: None,
                    under_cuda_home: None,
                });
                if let Some(frame) = self.frames.last_mut() {
                    frame.skipped.get_or_insert(skipped);
                }
                self.note(
                    line,
                    format!("cannot loop over this ({why}): the loop was skipped"),
                );
                None
            }
        }
    }

    fn delete(&mut self, target: &Expr) -> Result<(), EvalError> {
        match &target.kind {
            ExprKind::Name(name) => {
                for scope in &self.frame().scopes {
                    if scope.borrow_mut().remove(name).is_some() {
                        break;
                    }
                }
            }
            ExprKind::Subscript(container, index) => {
                let container = self.eval(container)?;
                let index = self.eval(index)?;
                super::ops::delete_item(&container, &index);
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    self.delete(item)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The reason carried by an unknown value, for a note.
pub fn unknown_why(value: &Value) -> String {
    match value.as_unknown() {
        Some(unknown) => unknown.why.clone(),
        None => format!("a {}", value.type_name()),
    }
}
