//! What a store (local, or a binary cache) knows about a path, read from
//! whichever form Nix gave it in. In: a binary cache's `.narinfo`
//! ([`PathInfo::from_narinfo`]), or the JSON of `nix path-info --json` in
//! any shape a Nix release has printed ([`parse_path_info_json`]). Out:
//! [`PathInfo`]s, one per path asked for, with `valid: false` for a path
//! the store lacks.
//!
//! The shapes of `nix path-info --json` (pure format code, tested against
//! outputs recorded from Nix 2.8, 2.26 and 2.34 in `tests/fixtures`):
//! - Nix ≤ 2.18 (and Lix): an array of objects, each with `"path"`, and
//!   `"valid": false` for a missing path;
//! - 2.19 – 2.32: an object keyed by full store path, `null` for a missing
//!   path;
//! - 2.33 and later without `--json-format` (format 1): the same, each entry
//!   with `"storeDir"`;
//! - `--json-format 2` and later: `{"version": N, "storeDir": …, "info":
//!   {<base name>: …}}`, with hashes and signatures possibly structured.

use serde_json::{Map, Value};

use super::narinfo::NarInfo;
use super::path::StorePath;

/// What a store knows about one path. `valid` is false for a path it
/// lacks, and then nothing else is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInfo {
    pub path: String,
    pub valid: bool,
    /// `sha256:<base32>` or SRI (`sha256-<base64>`): Nix reads both.
    pub nar_hash: String,
    pub nar_size: u64,
    /// Full store paths.
    pub references: Vec<String>,
    pub signatures: Vec<String>,
    pub ca: Option<String>,
    /// The compressed size, in a binary cache.
    pub download_size: Option<u64>,
    /// When a local store registered the path (seconds since the epoch):
    /// `registrationTime`, which a binary cache has not.
    pub registration_time: Option<u64>,
}

impl PathInfo {
    /// The entry of a path the store lacks.
    pub fn missing(path: &StorePath) -> PathInfo {
        missing_text(&path.to_absolute())
    }

    pub fn from_narinfo(info: &NarInfo) -> PathInfo {
        PathInfo {
            path: info.store_path.to_absolute(),
            valid: true,
            nar_hash: info.nar_hash.clone(),
            nar_size: info.nar_size,
            references: info.references.iter().map(StorePath::to_absolute).collect(),
            signatures: info.signatures.clone(),
            ca: info.ca.clone(),
            download_size: info.file_size,
            registration_time: None,
        }
    }
}

/// Reads `nix path-info --json` output of any released shape (see the
/// module doc). Entries come back in the order the output lists them; the
/// error says what part of the text it could not read.
pub fn parse_path_info_json(text: &str) -> Result<Vec<PathInfo>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    match value {
        Value::Array(entries) => entries
            .iter()
            .map(|entry| {
                let object = entry.as_object().ok_or("an array entry is not an object")?;
                let path = object
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or("an array entry has no \"path\"")?;
                entry_info(path, Some(entry), None)
            })
            .collect(),
        Value::Object(object) => {
            // Format 2 and later wrap the entries.
            if let Some(Value::Object(info)) = object.get("info") {
                let store_dir = object
                    .get("storeDir")
                    .and_then(Value::as_str)
                    .unwrap_or("/nix/store");
                return keyed(info, Some(store_dir));
            }
            keyed(&object, None)
        }
        _ => Err("neither an array nor an object".into()),
    }
}

/// An object keyed by store path (full, or a base name under `store_dir`).
fn keyed(entries: &Map<String, Value>, store_dir: Option<&str>) -> Result<Vec<PathInfo>, String> {
    entries
        .iter()
        .map(|(key, entry)| {
            let path = absolute(key, store_dir);
            let entry = (!entry.is_null()).then_some(entry);
            entry_info(&path, entry, store_dir)
        })
        .collect()
}

fn absolute(path: &str, store_dir: Option<&str>) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", store_dir.unwrap_or("/nix/store"))
    }
}

fn entry_info(
    path: &str,
    entry: Option<&Value>,
    store_dir: Option<&str>,
) -> Result<PathInfo, String> {
    let Some(entry) = entry else {
        return Ok(missing_text(path));
    };
    let object = entry
        .as_object()
        .ok_or_else(|| format!("the entry of {path} is not an object"))?;
    if object.get("valid").and_then(Value::as_bool) == Some(false) {
        return Ok(missing_text(path));
    }
    let store_dir = object.get("storeDir").and_then(Value::as_str).or(store_dir);
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    text_of(item).ok_or_else(|| format!("{path}: a \"{key}\" entry is not text"))
                })
                .collect(),
            Some(_) => Err(format!("{path}: \"{key}\" is not an array")),
        }
    };
    Ok(PathInfo {
        path: path.to_owned(),
        valid: true,
        nar_hash: object
            .get("narHash")
            .and_then(text_of)
            .ok_or_else(|| format!("{path}: no \"narHash\""))?,
        nar_size: object
            .get("narSize")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{path}: no \"narSize\""))?,
        references: strings("references")?
            .iter()
            .map(|r| absolute(r, store_dir))
            .collect(),
        signatures: strings("signatures")?,
        ca: object.get("ca").and_then(text_of),
        download_size: object.get("downloadSize").and_then(Value::as_u64),
        registration_time: object.get("registrationTime").and_then(Value::as_u64),
    })
}

fn missing_text(path: &str) -> PathInfo {
    PathInfo {
        path: path.to_owned(),
        valid: false,
        nar_hash: String::new(),
        nar_size: 0,
        references: Vec::new(),
        signatures: Vec::new(),
        ca: None,
        download_size: None,
        registration_time: None,
    }
}

/// A hash, signature or content address as text: a string as is; a
/// structured one (`{"algorithm", "hash"}`, `{"keyName", "sig"}`) as
/// `algorithm:hash` / `keyName:sig`, which Nix reads back.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(object) => {
            let field = |names: &[&str]| {
                names
                    .iter()
                    .find_map(|name| object.get(*name).and_then(Value::as_str))
            };
            let head = field(&["algorithm", "algo", "method", "keyName", "key"])?;
            let tail = field(&["hash", "sig", "signature"])?;
            Some(format!("{head}:{tail}"))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "path_info_tests.rs"]
mod tests;
