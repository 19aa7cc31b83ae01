//! Calls: a value called with evaluated arguments — a function of
//! setup.py (its parameters bound, its body run in a new frame, within the
//! call-depth budget), a modelled native, a method, or an unknown value.
//!
//! In: the callee and its evaluated arguments. Out: what the call returns,
//! or an unknown value saying why it is not known.

use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{ParamKind, block_yields};
use super::eval::{EvalError, Flow, Frame, Interpreter};
use super::expr::Kwargs;
use super::ops;
use super::value::{Function, Value, shared};

impl Interpreter<'_> {
    /// Calls a value with evaluated arguments.
    pub(super) fn call(
        &mut self,
        callee: &Value,
        args: Vec<Value>,
        kwargs: Kwargs,
        line: usize,
    ) -> Result<Value, EvalError> {
        match callee {
            Value::Function(function) => self.call_function(function, args, kwargs, line),
            Value::Native(name) => self.call_native(name, args, kwargs, line),
            Value::Method(receiver, name) => self.call_method(receiver, name, args, kwargs, line),
            Value::Unknown(u) => {
                // What is computed from project files stays pointed at them
                // (`re.search(..., open("pkg/__init__.py").read())`).
                let mut files = u.files.clone();
                for arg in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
                    if let Some(a) = arg.as_unknown() {
                        files.extend(a.files.iter().cloned());
                    }
                }
                if files == u.files {
                    return Ok(Value::Unknown(u.clone()));
                }
                Ok(Value::Unknown(Rc::new(super::value::Unknown {
                    files,
                    text_of: None,
                    ..u.as_ref().clone()
                })))
            }
            other => Ok(Value::unknown(
                format!("a {} is not callable", other.type_name()),
                self.at(line),
            )),
        }
    }

    fn call_function(
        &mut self,
        function: &Rc<Function>,
        args: Vec<Value>,
        kwargs: Kwargs,
        line: usize,
    ) -> Result<Value, EvalError> {
        let locals = shared(HashMap::new());
        let mut scopes = vec![locals.clone()];
        scopes.extend(function.scopes.iter().cloned());
        let mut args = args.into_iter();
        let mut kwargs: Vec<(String, Value)> = kwargs;
        let mut frame_values: Vec<(String, Value)> = Vec::new();
        // Defaults are evaluated in the caller here (Python evaluates them
        // once, at `def`); setup.py defaults are literals in practice.
        for param in &function.def.params {
            let value = match param.kind {
                ParamKind::Normal => match args.next() {
                    Some(v) => v,
                    None => match kwargs.iter().position(|(k, _)| *k == param.name) {
                        Some(i) => kwargs.remove(i).1,
                        None => match &param.default {
                            Some(default) => self.eval(default)?,
                            None => Value::unknown(
                                format!(
                                    "`{}()` is called without `{}`",
                                    function.def.name, param.name
                                ),
                                self.at(line),
                            ),
                        },
                    },
                },
                ParamKind::Star => Value::Tuple(Rc::new(args.by_ref().collect())),
                ParamKind::DoubleStar => {
                    let dict = Value::Dict(shared(Vec::new()));
                    for (k, v) in kwargs.drain(..) {
                        ops::set_item(&dict, Value::str(k), v);
                    }
                    dict
                }
            };
            frame_values.push((param.name.clone(), value));
        }
        locals.borrow_mut().extend(frame_values);
        let generator = block_yields(&function.def.body);
        let frame = Frame {
            yields: generator.then(Vec::new),
            ..Frame::new(scopes, function.source.clone())
        };
        if self.frames.len() >= super::eval::DEPTH_LIMIT {
            return Ok(Value::unknown(
                format!(
                    "not inferred: calls nested more than {} deep exceed cuwheel's budget",
                    super::eval::DEPTH_LIMIT
                ),
                self.at(line),
            ));
        }
        self.enter(frame, line)?;
        let flow = self.block(&function.def.body);
        let frame = self.leave();
        let mut result = match flow? {
            Flow::Return(value) => value,
            Flow::Raise(at) => Value::unknown(
                format!("`{}()` raises at {at}", function.def.name),
                self.at(line),
            ),
            _ => Value::None,
        };
        if let Some(frame) = frame {
            if let Some(yielded) = frame.yields {
                result = Value::list(yielded);
            }
            // A loop it skipped leaves what it returns incomplete: say so
            // inside the list, where its reader reports it.
            // A dict gets it as a key that stands for the keys the loop
            // would have added; a string is computed wrongly without it.
            match (frame.skipped, &result) {
                (Some(skipped), Value::List(items)) => {
                    let mut items = items.borrow().clone();
                    items.push(Value::Unknown(skipped));
                    result = Value::list(items);
                }
                (Some(skipped), Value::Dict(pairs)) => {
                    let mut pairs = pairs.borrow().clone();
                    pairs.push((Value::Unknown(skipped.clone()), Value::Unknown(skipped)));
                    result = Value::Dict(shared(pairs));
                }
                (Some(skipped), Value::Str(_)) => result = Value::Unknown(skipped),
                _ => {}
            }
        }
        Ok(result)
    }
}
