//! Python's operators on known values: arithmetic and concatenation,
//! comparison, indexing and slicing, and container updates.
//!
//! In: evaluated operands. Out: the result, or why it cannot be computed
//! (a string the caller turns into an unknown value with its location).

use std::cmp::Ordering;
use std::rc::Rc;

use super::ast::{BinOp, CmpOp, UnaryOp};
use super::value::{Value, contains, equal, number, order, shared};

pub fn binary(left: &Value, op: BinOp, right: &Value) -> Result<Value, String> {
    use Value::{Float, Int, List, Str, Tuple};
    let unsupported = || {
        format!(
            "`{}` between a {} and a {}",
            op.symbol(),
            left.type_name(),
            right.type_name()
        )
    };
    use super::budget::{items_fit, repeated, text_fits};
    let too_large =
        || "not inferred: an integer beyond 64 bits exceeds cuwheel's budget".to_string();
    Ok(match (op, left, right) {
        (BinOp::Add, Str(a), Str(b)) => {
            text_fits(a.len().saturating_add(b.len()))?;
            Str(format!("{a}{b}"))
        }
        (BinOp::Add, List(a), List(b)) => {
            items_fit(a.borrow().len().saturating_add(b.borrow().len()))?;
            let mut items = a.borrow().clone();
            items.extend(b.borrow().iter().cloned());
            Value::list(items)
        }
        (BinOp::Add, Tuple(a), Tuple(b)) => {
            items_fit(a.len().saturating_add(b.len()))?;
            Tuple(Rc::new(a.iter().chain(b.iter()).cloned().collect()))
        }
        (BinOp::Mul, List(a), Int(n)) | (BinOp::Mul, Int(n), List(a)) => {
            let items = a.borrow();
            repeated(items.len(), *n, false)?;
            Value::list(repeat(&items, *n))
        }
        (BinOp::Mul, Str(s), Int(n)) | (BinOp::Mul, Int(n), Str(s)) => {
            repeated(s.len(), *n, true)?;
            Str(s.repeat(usize::try_from(*n).unwrap_or(0)))
        }
        (BinOp::Div, Value::Path(a), Str(b) | Value::Path(b)) => Value::Path(join_path(a, b)),
        (BinOp::Mod, Str(format), args) => {
            Str(percent_format(format, args).ok_or_else(unsupported)?)
        }
        (BinOp::Sub | BinOp::BitAnd, Value::Set(a), Value::Set(b)) => {
            let keep_common = op == BinOp::BitAnd;
            let b = b.borrow();
            let kept: Vec<Value> = a
                .borrow()
                .iter()
                .filter(|item| {
                    b.iter().any(|other| equal(item, other) == Some(true)) == keep_common
                })
                .cloned()
                .collect();
            Value::Set(shared(kept))
        }
        (BinOp::BitOr, Value::Dict(_), Value::Dict(_))
        | (BinOp::BitOr, Value::Set(_), Value::Set(_)) => {
            let copy = copy(left);
            update(&copy, right);
            copy
        }
        (_, Int(a), Int(b)) => match op {
            BinOp::Add => Int(a.checked_add(*b).ok_or_else(too_large)?),
            BinOp::Sub => Int(a.checked_sub(*b).ok_or_else(too_large)?),
            BinOp::Mul => Int(a.checked_mul(*b).ok_or_else(too_large)?),
            BinOp::FloorDiv if *b != 0 => Int(a.checked_div_euclid(*b).ok_or_else(too_large)?),
            BinOp::Mod if *b != 0 => Int(a.checked_rem_euclid(*b).ok_or_else(too_large)?),
            BinOp::Div if *b != 0 => Float(*a as f64 / *b as f64),
            BinOp::Pow if *b >= 0 => match u32::try_from(*b).ok().and_then(|b| a.checked_pow(b)) {
                Some(power) => Int(power),
                None => return Err(too_large()),
            },
            BinOp::BitOr => Int(a | b),
            BinOp::BitAnd => Int(a & b),
            BinOp::BitXor => Int(a ^ b),
            BinOp::LShift if (0..63).contains(b) => Int(a << b),
            BinOp::RShift if (0..63).contains(b) => Int(a >> b),
            _ => return Err(unsupported()),
        },
        _ => match (number(left), number(right)) {
            (Some(a), Some(b)) => match op {
                BinOp::Add => Float(a + b),
                BinOp::Sub => Float(a - b),
                BinOp::Mul => Float(a * b),
                BinOp::Div if b != 0.0 => Float(a / b),
                BinOp::Pow => Float(a.powf(b)),
                _ => return Err(unsupported()),
            },
            _ => return Err(unsupported()),
        },
    })
}

fn repeat(items: &[Value], n: i64) -> Vec<Value> {
    let times = usize::try_from(n).unwrap_or(0);
    let mut out = Vec::with_capacity(items.len() * times);
    for _ in 0..times {
        out.extend(items.iter().cloned());
    }
    out
}

/// `Path / "x"` and `os.path.join`'s rule: an absolute part restarts.
pub fn join_path(base: &str, part: &str) -> String {
    if part.starts_with('/') || base.is_empty() {
        part.to_string()
    } else if base.ends_with('/') {
        format!("{base}{part}")
    } else {
        format!("{base}/{part}")
    }
}

/// `"%s-%d" % (a, b)`, for `%s`, `%d`, `%r` and `%%`.
fn percent_format(format: &str, args: &Value) -> Option<String> {
    let values: Vec<Value> = match args {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let mut values = values.into_iter();
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '%' => out.push('%'),
            's' | 'd' | 'i' => out.push_str(&values.next()?.to_text()?),
            'r' => out.push_str(&values.next()?.repr()?),
            _ => return None,
        }
        super::budget::text_fits(out.len()).ok()?;
    }
    values.next().is_none().then_some(out)
}

pub fn unary(op: UnaryOp, value: &Value) -> Result<Value, String> {
    match (op, value) {
        (UnaryOp::Neg, Value::Int(i)) => i.checked_neg().map(Value::Int).ok_or_else(|| {
            "not inferred: an integer beyond 64 bits exceeds cuwheel's budget".to_string()
        }),
        (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Ok(value.clone()),
        (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
        _ => Err(format!("a unary operator on a {}", value.type_name())),
    }
}

/// One comparison; `None` when it cannot be known.
pub fn compare(left: &Value, op: CmpOp, right: &Value) -> Option<bool> {
    let ordered = |want: fn(Ordering) -> bool| order(left, right).map(want);
    match op {
        CmpOp::Eq => equal(left, right),
        CmpOp::NotEq => equal(left, right).map(|e| !e),
        CmpOp::Lt => ordered(|o| o == Ordering::Less),
        CmpOp::LtE => ordered(|o| o != Ordering::Greater),
        CmpOp::Gt => ordered(|o| o == Ordering::Greater),
        CmpOp::GtE => ordered(|o| o != Ordering::Less),
        CmpOp::In => contains(right, left),
        CmpOp::NotIn => contains(right, left).map(|c| !c),
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (left, right) {
                (Value::Unknown(_), _) | (_, Value::Unknown(_)) => return None,
                (Value::None, Value::None) => true,
                (Value::None, _) | (_, Value::None) => false,
                (Value::Bool(a), Value::Bool(b)) => a == b,
                // CPython's small ints and interned strings: `is` as `==`.
                (Value::Int(a), Value::Int(b)) => a == b,
                (Value::Str(a), Value::Str(b)) => a == b,
                _ => return None,
            };
            Some(same == (op == CmpOp::Is))
        }
    }
}

fn position(len: usize, index: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if index < 0 { len + index } else { index };
    (0..len).contains(&at).then_some(at as usize)
}

/// `value[index]`.
pub fn index(value: &Value, index: &Value) -> Result<Value, String> {
    let out_of_range = || format!("index {} is out of range", index.repr().unwrap_or_default());
    match (value, index) {
        (Value::List(items), Value::Int(i)) => {
            let items = items.borrow();
            position(items.len(), *i)
                .map(|p| items[p].clone())
                .ok_or_else(out_of_range)
        }
        (Value::Tuple(items), Value::Int(i)) => position(items.len(), *i)
            .map(|p| items[p].clone())
            .ok_or_else(out_of_range),
        (Value::Str(s), Value::Int(i)) => {
            let chars: Vec<char> = s.chars().collect();
            position(chars.len(), *i)
                .map(|p| Value::str(chars[p].to_string()))
                .ok_or_else(out_of_range)
        }
        (Value::Dict(pairs), key) => {
            let pairs = pairs.borrow();
            pairs
                .iter()
                .find(|(k, _)| equal(k, key) == Some(true))
                // A dict a skipped loop would have filled: a missing key
                // is one that loop may have added.
                .or_else(|| pairs.iter().find(|(k, _)| matches!(k, Value::Unknown(_))))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    format!(
                        "the key {} is not in the dict",
                        key.repr().unwrap_or_default()
                    )
                })
        }
        (Value::Unknown(u), _) | (_, Value::Unknown(u)) => Ok(Value::Unknown(u.clone())),
        _ => Err(format!(
            "cannot index a {} with a {}",
            value.type_name(),
            index.type_name()
        )),
    }
}

/// `value[lower:upper:step]` for lists, tuples and strings.
pub fn slice(value: &Value, lower: &Value, upper: &Value, step: &Value) -> Result<Value, String> {
    let bound = |v: &Value| -> Result<Option<i64>, String> {
        match v {
            Value::None => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            other => Err(format!("a slice bound that is a {}", other.type_name())),
        }
    };
    let step = bound(step)?.unwrap_or(1);
    if step == 0 {
        return Err("a slice step of 0".into());
    }
    let pick = |len: usize| -> Result<Vec<usize>, String> {
        let len = len as i64;
        let clamp = |i: i64, low: i64, high: i64| {
            if i < 0 {
                (i + len).max(low)
            } else {
                i.min(high)
            }
        };
        let (lo, hi) = if step > 0 {
            (
                bound(lower)?.map_or(0, |i| clamp(i, 0, len)),
                bound(upper)?.map_or(len, |i| clamp(i, 0, len)),
            )
        } else {
            (
                bound(lower)?.map_or(len - 1, |i| clamp(i, -1, len - 1)),
                bound(upper)?.map_or(-1, |i| clamp(i, -1, len - 1)),
            )
        };
        let mut out = Vec::new();
        let mut i = lo;
        while (step > 0 && i < hi) || (step < 0 && i > hi) {
            out.push(i as usize);
            i += step;
        }
        Ok(out)
    };
    match value {
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(Value::str(
                pick(chars.len())?
                    .into_iter()
                    .map(|i| chars[i])
                    .collect::<String>(),
            ))
        }
        Value::List(items) => {
            let items = items.borrow();
            Ok(Value::list(
                pick(items.len())?
                    .into_iter()
                    .map(|i| items[i].clone())
                    .collect(),
            ))
        }
        Value::Tuple(items) => Ok(Value::Tuple(Rc::new(
            pick(items.len())?
                .into_iter()
                .map(|i| items[i].clone())
                .collect(),
        ))),
        Value::Unknown(u) => Ok(Value::Unknown(u.clone())),
        other => Err(format!("cannot slice a {}", other.type_name())),
    }
}

/// `dict[key] = value` on a dict.
pub fn set_item(dict: &Value, key: Value, value: Value) {
    if let Value::Dict(pairs) = dict {
        let mut pairs = pairs.borrow_mut();
        match pairs.iter_mut().find(|(k, _)| equal(k, &key) == Some(true)) {
            Some(pair) => pair.1 = value,
            None => pairs.push((key, value)),
        }
    }
}

/// `container[index] = value`; false when the container takes no items.
pub fn store_item(container: &Value, index: Value, value: Value) -> bool {
    match (container, &index) {
        (Value::Dict(_), _) => {
            set_item(container, index, value);
            true
        }
        (Value::List(items), Value::Int(i)) => {
            let mut items = items.borrow_mut();
            match position(items.len(), *i) {
                Some(p) => {
                    items[p] = value;
                    true
                }
                None => false,
            }
        }
        _ => false,
    }
}

pub fn delete_item(container: &Value, index: &Value) {
    match (container, index) {
        (Value::Dict(pairs), key) => pairs
            .borrow_mut()
            .retain(|(k, _)| equal(k, key) != Some(true)),
        (Value::List(items), Value::Int(i)) => {
            let mut items = items.borrow_mut();
            if let Some(p) = position(items.len(), *i) {
                items.remove(p);
            }
        }
        _ => {}
    }
}

/// Adds to a set unless an equal item is there.
pub fn set_add(set: &Value, item: Value) {
    if let Value::Set(items) = set {
        let mut items = items.borrow_mut();
        if !items.iter().any(|i| equal(i, &item) == Some(true)) {
            items.push(item);
        }
    }
}

/// `a.update(b)` for dicts and sets (also `|=`).
pub fn update(target: &Value, other: &Value) {
    match (target, other) {
        (Value::Dict(_), Value::Dict(pairs)) => {
            let pairs = pairs.borrow().clone();
            for (k, v) in pairs {
                set_item(target, k, v);
            }
        }
        (Value::Set(_), other) => {
            for item in other.items().unwrap_or_default() {
                set_add(target, item);
            }
        }
        _ => {}
    }
}

/// A shallow copy of a container (`list(x)`, `dict(x)`, `x.copy()`).
pub fn copy(value: &Value) -> Value {
    match value {
        Value::List(items) => Value::List(shared(items.borrow().clone())),
        Value::Set(items) => Value::Set(shared(items.borrow().clone())),
        Value::Dict(pairs) => Value::Dict(shared(pairs.borrow().clone())),
        other => other.clone(),
    }
}

/// `format(value, spec)` for the specs setup.py files use: widths,
/// alignment and zero padding of numbers and strings.
pub fn format_spec(value: &Value, spec: &str) -> Option<String> {
    let text = value.to_text()?;
    let (fill_zero, rest) = match spec.strip_prefix('0') {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let (align, width) = match rest.chars().next() {
        Some(c @ ('<' | '>' | '^')) => (Some(c), &rest[1..]),
        _ => (None, rest),
    };
    let width = width.trim_end_matches(['d', 's']);
    let width: usize = if width.is_empty() {
        0
    } else {
        width.parse().ok()?
    };
    super::budget::text_fits(width).ok()?;
    let pad = width.saturating_sub(text.chars().count());
    Some(match (align, fill_zero) {
        (None, true) => format!("{}{text}", "0".repeat(pad)),
        (Some('<'), _) => format!("{text}{}", " ".repeat(pad)),
        (Some('^'), _) => format!("{}{text}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2)),
        (None, false) if !matches!(value, Value::Int(_) | Value::Float(_)) => {
            format!("{text}{}", " ".repeat(pad))
        }
        _ => format!("{}{text}", " ".repeat(pad)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    #[test]
    fn arithmetic_concatenation_and_formatting() {
        let joined = binary(
            &Value::list(vec![s("a")]),
            BinOp::Add,
            &Value::list(vec![s("b")]),
        )
        .unwrap();
        assert_eq!(joined.repr().unwrap(), "['a', 'b']");
        assert_eq!(
            binary(
                &s("%s-%d"),
                BinOp::Mod,
                &Value::Tuple(Rc::new(vec![s("x"), Value::Int(3)]))
            )
            .unwrap()
            .as_str(),
            Some("x-3")
        );
        assert_eq!(
            binary(&Value::Path("/p".into()), BinOp::Div, &s("csrc"))
                .unwrap()
                .as_str(),
            Some("/p/csrc")
        );
        assert!(binary(&s("a"), BinOp::Sub, &s("b")).is_err());
        assert_eq!(format_spec(&Value::Int(7), "03").unwrap(), "007");
    }

    #[test]
    fn indexing_and_slicing_follow_python() {
        let path = s("csrc/fps.cpp");
        assert_eq!(
            slice(&path, &Value::None, &Value::Int(-4), &Value::None)
                .unwrap()
                .as_str(),
            Some("csrc/fps")
        );
        assert_eq!(
            slice(&path, &Value::None, &Value::None, &Value::Int(-1))
                .unwrap()
                .as_str(),
            Some("ppc.spf/crsc")
        );
        let list = Value::list(vec![s("a"), s("b"), s("c")]);
        assert_eq!(index(&list, &Value::Int(-1)).unwrap().as_str(), Some("c"));
        assert!(index(&list, &Value::Int(3)).is_err());
        assert_eq!(
            compare(&Value::None, CmpOp::IsNot, &Value::Host("CUDA_HOME")),
            Some(true)
        );
        assert_eq!(
            compare(&s("hip"), CmpOp::NotIn, &s("csrc/fps.cpp")),
            Some(true)
        );
    }
}
