//! The JSON files cuwheel writes (the lock, the plan, a wheel's recipe and
//! provenance). In: a serialisable value. Out: its canonical text — keys
//! sorted (through `serde_json::Value`, whose maps are ordered), two-space
//! indent, a final newline — so that equal values give equal bytes.

use serde::Serialize;

/// The canonical text of `value`. Panics only for a value JSON cannot hold
/// (a map with non-string keys), which none of cuwheel's types is.
pub fn canonical(value: &impl Serialize) -> String {
    let value = serde_json::to_value(value).expect("cuwheel's files serialise to JSON");
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value always prints");
    text.push('\n');
    text
}
