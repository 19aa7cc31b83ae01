//! The evaluator of expressions: names, displays, comprehensions, calls,
//! attributes and assignment targets.
//!
//! In: an [`Expr`] and the [`Interpreter`]'s scopes. Out: its [`Value`] —
//! an [`Unknown`](super::value::Unknown) saying why where Python would
//! need what cuwheel does not model. Operators are in [`ops`](super::ops),
//! the modelled libraries in [`natives`](super::natives).

use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{Arg, BinOp, BoolOp, CompKind, Const, Expr, ExprKind, FPart, Generator, UnaryOp};
use super::eval::{Branch, EvalError, Frame, Interpreter};
use super::ops;
use super::value::{Function, Value, shared};

/// Keyword arguments, in call order.
pub(super) type Kwargs = Vec<(String, Value)>;

impl Interpreter<'_> {
    pub(super) fn eval(&mut self, expr: &Expr) -> Result<Value, EvalError> {
        use super::budget::MAX_EVAL_DEPTH;
        if self.eval_depth >= MAX_EVAL_DEPTH {
            return Ok(Value::unknown(
                format!(
                    "not inferred: expressions and calls nested more than {MAX_EVAL_DEPTH} deep \
                     exceed cuwheel's budget"
                ),
                self.at(expr.line),
            ));
        }
        self.eval_depth += 1;
        let value = self.eval_unguarded(expr);
        self.eval_depth -= 1;
        value
    }

    fn eval_unguarded(&mut self, expr: &Expr) -> Result<Value, EvalError> {
        self.step(expr.line)?;
        let line = expr.line;
        Ok(match &expr.kind {
            ExprKind::Name(name) => match self.lookup(name) {
                Some(value) => {
                    if let Value::Host(fact) = value {
                        self.host_fact(fact, line);
                    }
                    value
                }
                None => match super::natives::builtin(name) {
                    Some(value) => value,
                    None => Value::unknown(
                        format!("`{name}` is not bound by anything cuwheel evaluates"),
                        self.at(line),
                    ),
                },
            },
            ExprKind::Const(c) => match c {
                Const::None => Value::None,
                Const::Bool(b) => Value::Bool(*b),
                Const::Int(i) => Value::Int(*i),
                Const::Float(f) => Value::Float(*f),
                Const::Str(s) | Const::Bytes(s) => Value::str(s.clone()),
                Const::Ellipsis => Value::unknown("`...`", self.at(line)),
            },
            ExprKind::FString(parts) => self.fstring(parts, line)?,
            ExprKind::List(items) => Value::list(self.items(items)?),
            ExprKind::Tuple(items) => Value::Tuple(Rc::new(self.items(items)?)),
            ExprKind::Set(items) => {
                let set = Value::Set(shared(Vec::new()));
                for item in self.items(items)? {
                    ops::set_add(&set, item);
                }
                set
            }
            ExprKind::Dict(pairs) => {
                let dict = Value::Dict(shared(Vec::new()));
                for (key, value) in pairs {
                    let value = self.eval(value)?;
                    match key {
                        Some(key) => {
                            let key = self.eval(key)?;
                            ops::set_item(&dict, key, value);
                        }
                        None => match &value {
                            Value::Dict(spread) => {
                                for (k, v) in spread.borrow().iter() {
                                    ops::set_item(&dict, k.clone(), v.clone());
                                }
                            }
                            other => {
                                return Ok(Value::unknown(
                                    format!("`**` of a {}", other.type_name()),
                                    self.at(line),
                                ));
                            }
                        },
                    }
                }
                dict
            }
            ExprKind::Attribute(value, name) => {
                let value = self.eval(value)?;
                self.attribute(&value, name, line)?
            }
            ExprKind::Subscript(value, index) => {
                let value = self.eval(value)?;
                let index = match &index.kind {
                    ExprKind::Slice(lower, upper, step) => {
                        let mut part = |e: &Option<Box<Expr>>| -> Result<Value, EvalError> {
                            match e {
                                Some(e) => self.eval(e),
                                None => Ok(Value::None),
                            }
                        };
                        let (l, u, s) = (part(lower)?, part(upper)?, part(step)?);
                        return Ok(ops::slice(&value.plain(), &l, &u, &s)
                            .unwrap_or_else(|why| Value::unknown(why, self.at(line))));
                    }
                    _ => self.eval(index)?,
                };
                if matches!(value, Value::Environ) {
                    return Ok(self.environ_get(&index, None, line));
                }
                ops::index(&value.plain(), &index)
                    .unwrap_or_else(|why| Value::unknown(why, self.at(line)))
            }
            ExprKind::Slice(..) => Value::unknown("a slice outside `[...]`", self.at(line)),
            ExprKind::Call(func, args) => {
                let callee = self.eval(func)?;
                let (args, kwargs) = self.arguments(args, line)?;
                self.call(&callee, args, kwargs, line)?
            }
            ExprKind::BinOp(left, op, right) => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                self.binary(&left, *op, &right, line)
            }
            ExprKind::Unary(op, operand) => {
                let value = self.eval(operand)?;
                match op {
                    UnaryOp::Not => match value.truth() {
                        Some(t) => Value::Bool(!t),
                        None => value,
                    },
                    UnaryOp::Neg | UnaryOp::Pos | UnaryOp::Invert => ops::unary(*op, &value)
                        .unwrap_or_else(|why| Value::unknown(why, self.at(line))),
                }
            }
            ExprKind::BoolOp(op, left, right) => {
                let left = self.eval(left)?;
                match (op, left.truth()) {
                    (BoolOp::And, Some(false)) | (BoolOp::Or, Some(true)) => left,
                    (_, None) => left,
                    _ => self.eval(right)?,
                }
            }
            ExprKind::Compare(first, rest) => {
                let mut left = self.eval(first)?;
                let mut result = Value::Bool(true);
                for (op, right) in rest {
                    let right = self.eval(right)?;
                    let outcome = match (op, &right) {
                        (super::ast::CmpOp::In, Value::Environ) => self.environ_has(&left),
                        (super::ast::CmpOp::NotIn, Value::Environ) => {
                            self.environ_has(&left).map(|has| !has)
                        }
                        _ => ops::compare(&left, *op, &right),
                    };
                    match outcome {
                        Some(true) => {}
                        Some(false) => return Ok(Value::Bool(false)),
                        None => {
                            result = Value::unknown(
                                format!(
                                    "a comparison with {}",
                                    super::eval::unknown_why(if left.truth().is_none() {
                                        &left
                                    } else {
                                        &right
                                    })
                                ),
                                self.at(line),
                            )
                        }
                    }
                    left = right;
                }
                result
            }
            ExprKind::IfExp { test, body, orelse } => {
                let taken =
                    self.decide(test, line, Branch::of_expr(body), Branch::of_expr(orelse))?;
                self.eval(if taken { body } else { orelse })?
            }
            ExprKind::Lambda(def) => Value::Function(Rc::new(Function {
                def: def.clone(),
                scopes: self.frame().scopes.clone(),
                source: self.source(),
            })),
            ExprKind::Comprehension { kind, generators } => {
                self.comprehension(kind, generators, line)?
            }
            ExprKind::Starred(_) => Value::unknown("`*` outside a list or call", self.at(line)),
            ExprKind::Yield(value) => {
                let value = match value {
                    Some(v) => self.eval(v)?,
                    None => Value::None,
                };
                self.yielded(vec![value], line);
                Value::None
            }
            ExprKind::YieldFrom(iterable) => {
                let iterable = self.eval(iterable)?;
                let items = match iterable.items() {
                    Ok(items) => items,
                    Err(_) => vec![iterable],
                };
                self.yielded(items, line);
                Value::None
            }
            ExprKind::Walrus(name, value) => {
                let value = self.eval(value)?;
                self.bind(name, value.clone());
                value
            }
        })
    }

    /// Adds what a generator yields to its frame's list.
    fn yielded(&mut self, values: Vec<Value>, line: usize) {
        match self.frames.last_mut().and_then(|f| f.yields.as_mut()) {
            Some(yields) => yields.extend(values),
            None => self.note(line, "a yield outside a function: ignored"),
        }
    }

    /// The items of a display, with `*iterable` spread.
    fn items(&mut self, exprs: &[Expr]) -> Result<Vec<Value>, EvalError> {
        let mut items = Vec::new();
        for expr in exprs {
            match &expr.kind {
                ExprKind::Starred(inner) => {
                    let value = self.eval(inner)?;
                    match value.items() {
                        Ok(spread) => items.extend(spread),
                        Err(why) => items.push(Value::unknown(why, self.at(expr.line))),
                    }
                }
                _ => items.push(self.eval(expr)?),
            }
        }
        Ok(items)
    }

    fn arguments(&mut self, args: &[Arg], line: usize) -> Result<(Vec<Value>, Kwargs), EvalError> {
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        for arg in args {
            match arg {
                Arg::Positional(e) => positional.push(self.eval(e)?),
                Arg::Star(e) => {
                    let value = self.eval(e)?;
                    match value.items() {
                        Ok(items) => positional.extend(items),
                        Err(why) => positional.push(Value::unknown(why, self.at(line))),
                    }
                }
                Arg::Keyword(name, e) => keywords.push((name.clone(), self.eval(e)?)),
                Arg::DoubleStar(e) => match self.eval(e)? {
                    Value::Dict(pairs) => {
                        for (k, v) in pairs.borrow().iter() {
                            if let Some(k) = k.as_str() {
                                keywords.push((k.to_string(), v.clone()));
                            }
                        }
                    }
                    other => {
                        let why = format!("`**` of {}", super::eval::unknown_why(&other));
                        keywords.push(("**".into(), Value::unknown(why, self.at(line))));
                    }
                },
            }
        }
        Ok((positional, keywords))
    }

    fn fstring(&mut self, parts: &[FPart], line: usize) -> Result<Value, EvalError> {
        let mut text = String::new();
        // `f"{CUDA_HOME}/bin/nvcc"`: a path under CUDA_HOME.
        let mut cuda_home = false;
        for (i, part) in parts.iter().enumerate() {
            match part {
                FPart::Text(s) => text.push_str(s),
                FPart::Field {
                    expr,
                    conversion,
                    spec,
                } => {
                    let value = self.eval(expr)?;
                    if let (0, None, true) = (i, conversion, spec.is_empty()) {
                        if let Some(prefix) = super::host::under_cuda_home(&value) {
                            text.push_str(&prefix);
                            cuda_home = true;
                            continue;
                        }
                    }
                    let spec = match self.fstring(spec, line)? {
                        Value::Str(s) => s,
                        other => return Ok(other),
                    };
                    let formatted = match conversion {
                        Some('r') | Some('a') => value.repr(),
                        _ if spec.is_empty() => value.to_text(),
                        _ => ops::format_spec(&value, &spec),
                    };
                    match formatted {
                        Some(s) => text.push_str(&s),
                        None => return Ok(self.unformattable(&value, line)),
                    }
                }
            }
            if let Err(why) = super::budget::text_fits(text.len()) {
                return Ok(Value::unknown(why, self.at(line)));
            }
        }
        if cuda_home {
            return Ok(super::host::cuda_home_path(text, self.at(line)));
        }
        Ok(Value::Str(text))
    }

    /// The unknown result of formatting `value` into a string.
    pub(super) fn unformattable(&self, value: &Value, line: usize) -> Value {
        match value {
            Value::Unknown(u) => Value::Unknown(u.clone()),
            Value::Host(fact) => Value::unknown(
                format!("depends on {fact}, which is only known on the build host"),
                self.at(line),
            ),
            other => Value::unknown(
                format!("cannot format a {} as text", other.type_name()),
                self.at(line),
            ),
        }
    }

    fn comprehension(
        &mut self,
        kind: &CompKind,
        generators: &[Generator],
        line: usize,
    ) -> Result<Value, EvalError> {
        // A comprehension's targets live in their own scope.
        let scope = shared(HashMap::new());
        let mut frame_scopes = self.frame().scopes.clone();
        frame_scopes.insert(0, scope);
        let source = self.source();
        self.enter(Frame::new(frame_scopes, source), line)?;
        let mut out: Vec<Value> = Vec::new();
        let mut pairs: Vec<(Value, Value)> = Vec::new();
        let result = self.generate(kind, generators, &mut out, &mut pairs, line);
        self.leave();
        result?;
        Ok(match kind {
            CompKind::List(_) | CompKind::Generator(_) => Value::list(out),
            CompKind::Set(_) => {
                let set = Value::Set(shared(Vec::new()));
                for item in out {
                    ops::set_add(&set, item);
                }
                set
            }
            CompKind::Dict(..) => {
                let dict = Value::Dict(shared(Vec::new()));
                for (k, v) in pairs {
                    ops::set_item(&dict, k, v);
                }
                dict
            }
        })
    }

    fn generate(
        &mut self,
        kind: &CompKind,
        generators: &[Generator],
        out: &mut Vec<Value>,
        pairs: &mut Vec<(Value, Value)>,
        line: usize,
    ) -> Result<(), EvalError> {
        let Some((first, rest)) = generators.split_first() else {
            match kind {
                CompKind::List(e) | CompKind::Set(e) | CompKind::Generator(e) => {
                    out.push(self.eval(e)?)
                }
                CompKind::Dict(k, v) => {
                    let key = self.eval(k)?;
                    pairs.push((key, self.eval(v)?));
                }
            }
            return Ok(());
        };
        let iterable = self.eval(&first.iter)?;
        let Some(items) = self.iterate(&iterable, line) else {
            out.push(Value::unknown(
                format!(
                    "a comprehension over {}",
                    super::eval::unknown_why(&iterable)
                ),
                self.at(line),
            ));
            return Ok(());
        };
        'items: for item in items {
            self.step(line)?;
            self.assign(&first.target, item)?;
            for condition in &first.conditions {
                match self.eval(condition)?.truth() {
                    Some(true) => {}
                    Some(false) => continue 'items,
                    None => {
                        self.note(
                            line,
                            "a comprehension's condition cannot be evaluated: the item is kept",
                        );
                    }
                }
            }
            self.generate(kind, rest, out, pairs, line)?;
        }
        Ok(())
    }

    pub(super) fn binary(&mut self, left: &Value, op: BinOp, right: &Value, line: usize) -> Value {
        // A list joined with an unknown one keeps what is known; the unknown
        // part stays an item, to be reported where the list is read.
        if op == BinOp::Add {
            match (left, right) {
                (Value::List(items), Value::Unknown(_)) => {
                    let mut joined = items.borrow().clone();
                    joined.push(right.clone());
                    return Value::list(joined);
                }
                (Value::Unknown(_), Value::List(items)) => {
                    let mut joined = vec![left.clone()];
                    joined.extend(items.borrow().iter().cloned());
                    return Value::list(joined);
                }
                _ => {}
            }
        }
        // `CUDA_HOME + "/bin/nvcc"`: still unknown as text, but runnable.
        if let (BinOp::Add, Some(prefix), Value::Str(tail)) =
            (op, super::host::under_cuda_home(left), right)
        {
            return super::host::cuda_home_path(format!("{prefix}{tail}"), self.at(line));
        }
        if let (Value::Host(_), _) | (_, Value::Host(_)) = (left, right) {
            let host = if let Value::Host(_) = left {
                left
            } else {
                right
            };
            return self.unformattable(host, line);
        }
        ops::binary(&left.plain(), op, &right.plain()).unwrap_or_else(|why| match (left, right) {
            (Value::Unknown(u), _) | (_, Value::Unknown(u)) => Value::Unknown(u.clone()),
            _ => Value::unknown(why, self.at(line)),
        })
    }

    /// Assigns `value` to a target: a name, a subscript, an attribute, or
    /// a tuple of them.
    pub(super) fn assign(&mut self, target: &Expr, value: Value) -> Result<(), EvalError> {
        match &target.kind {
            ExprKind::Name(name) => self.bind(name, value),
            ExprKind::Tuple(targets) | ExprKind::List(targets) => {
                let items = match value.items() {
                    Ok(items) if items.len() == targets.len() => items,
                    _ => {
                        let why = format!(
                            "cannot unpack {} into {} names",
                            super::eval::unknown_why(&value),
                            targets.len()
                        );
                        let unknown = Value::unknown(why, self.at(target.line));
                        vec![unknown; targets.len()]
                    }
                };
                for (t, v) in targets.iter().zip(items) {
                    self.assign(t, v)?;
                }
            }
            ExprKind::Subscript(container, index) => {
                let container = self.eval(container)?;
                let index = self.eval(index)?;
                if matches!(container, Value::Environ) {
                    self.environ_set(&index, &value, target.line);
                } else if !ops::store_item(&container, index, value) {
                    self.note(
                        target.line,
                        format!("cannot assign into a {}: ignored", container.type_name()),
                    );
                }
            }
            ExprKind::Attribute(..) => {
                self.note(target.line, "an attribute assignment: ignored");
            }
            ExprKind::Starred(inner) => self.assign(inner, value)?,
            _ => {}
        }
        Ok(())
    }

    /// `target op= value`: lists, sets and dicts in place, as Python does.
    pub(super) fn aug_assign(
        &mut self,
        target: &Expr,
        op: BinOp,
        right: Value,
        line: usize,
    ) -> Result<(), EvalError> {
        let current = self.eval(target)?;
        if op == BinOp::Add {
            if let (Value::List(items), Ok(more)) = (&current, right.items()) {
                let len = items.borrow().len().saturating_add(more.len());
                if let Err(why) = super::budget::items_fit(len) {
                    let value = Value::unknown(why, self.at(line));
                    return self.assign(target, value);
                }
                items.borrow_mut().extend(more);
                return Ok(());
            }
        }
        let sets_or_dicts = matches!(
            (&current, &right),
            (
                Value::Dict(_) | Value::Set(_),
                Value::Dict(_) | Value::Set(_)
            )
        );
        if op == BinOp::BitOr && sets_or_dicts {
            ops::update(&current, &right);
            return Ok(());
        }
        let value = self.binary(&current, op, &right, line);
        self.assign(target, value)
    }

    /// `value.name`.
    pub(super) fn attribute(
        &mut self,
        value: &Value,
        name: &str,
        line: usize,
    ) -> Result<Value, EvalError> {
        Ok(match value {
            Value::Module(module) => {
                let dotted = format!("{module}.{name}");
                if let Some(scope) = self.load_project_module(module, line)? {
                    let found = scope.borrow().get(name).cloned();
                    if let Some(v) = found {
                        self.project_values.push((dotted, v.clone()));
                        return Ok(v);
                    }
                    if self.project_module_file(&dotted).is_some() {
                        return Ok(Value::Module(dotted));
                    }
                    return Ok(Value::unknown(
                        format!("`{dotted}` is not defined by anything cuwheel evaluates"),
                        self.at(line),
                    ));
                }
                if let Some(value) = self.toolkit_value(&dotted, line) {
                    return Ok(value);
                }
                match super::natives::qualified(&dotted) {
                    Some(found) => {
                        self.host_fact(&dotted, line);
                        found
                    }
                    None => Value::unknown(super::natives::not_modelled(&dotted), self.at(line)),
                }
            }
            Value::Unknown(u) => Value::Unknown(u.clone()),
            Value::Version(version) => super::methods::version_attribute(version, name)
                .unwrap_or_else(|| {
                    Value::unknown(
                        format!("`Version.{name}` is not modelled by cuwheel"),
                        self.at(line),
                    )
                }),
            // `subprocess.run(...)`'s CompletedProcess.
            Value::Dict(pairs) if matches!(name, "stdout" | "stderr" | "returncode") => pairs
                .borrow()
                .iter()
                .find(|(k, _)| k.as_str() == Some(name))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| Value::Method(Box::new(value.clone()), name.to_string())),
            Value::Host(fact) => Value::unknown(
                format!("`.{name}` of {fact}, which is only known on the build host"),
                self.at(line),
            ),
            Value::Path(path) => match name {
                "parent" => Value::Path(super::natives::dirname(path)),
                "name" => Value::str(path.rsplit('/').next().unwrap_or(path)),
                "stem" | "suffix" => {
                    let file = path.rsplit('/').next().unwrap_or(path);
                    let (stem, suffix) = match file.rfind('.').filter(|i| *i > 0) {
                        Some(i) => (&file[..i], &file[i..]),
                        None => (file, ""),
                    };
                    Value::str(if name == "stem" { stem } else { suffix })
                }
                _ => Value::Method(Box::new(value.clone()), name.to_string()),
            },
            Value::Native(native) => match super::natives::qualified(&format!("{native}.{name}")) {
                Some(found) => found,
                None => Value::unknown(
                    format!("`{native}.{name}` is not modelled by cuwheel"),
                    self.at(line),
                ),
            },
            _ => Value::Method(Box::new(value.clone()), name.to_string()),
        })
    }
}
