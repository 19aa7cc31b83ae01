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

/// `value` as Nix's `builtins.toJSON` writes it: compact, object keys in
/// byte order, strings escaped as Nix escapes them (`"`, `\`, `\n`, `\r`,
/// `\t`, and every other control character as `\u00XX`, where serde_json
/// writes `\b` and `\f`). So a digest of a TOML table taken here equals
/// `builtins.hashString "sha256" (builtins.toJSON (builtins.fromTOML …))`
/// in the flake, for every value a `[tool.cuwheel]` table can hold (floats
/// excepted: Nix prints six significant digits, and the config has none).
pub fn nix_compact(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_nix(value, &mut out);
    out
}

/// The sha256, in hex, of `value` as [`nix_compact`] writes it: Nix's
/// `builtins.hashString "sha256" (builtins.toJSON …)` of the same value.
/// What the lock's config digest and a wheel's provenance digest are.
pub fn nix_sha256(value: &serde_json::Value) -> String {
    crate::store::Hash::sha256(nix_compact(value)).to_hex()
}

fn write_nix(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            out.push('"');
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_nix(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_nix(&Value::String(key.clone()), out);
                out.push(':');
                write_nix(&map[key], out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nix_compact_escapes_as_nix_does_and_sorts_keys() {
        let value = serde_json::json!({
            "b": ["x\"y\\z", "\n\r\t\u{8}\u{c}\u{1}\u{7f}é"],
            "a": { "d": true, "c": 10 },
        });
        assert_eq!(
            nix_compact(&value),
            "{\"a\":{\"c\":10,\"d\":true},\"b\":[\"x\\\"y\\\\z\",\"\\n\\r\\t\\u0008\\u000c\\u0001\u{7f}é\"]}"
        );
    }
}
