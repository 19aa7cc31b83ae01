//! The stable ABI check for `abi3` wheels: every `Py*`/`_Py*` symbol an ELF
//! file imports (or, as abi3audit also counts, defines non-locally) must be
//! in CPython's stable ABI and no newer than the wheel's baseline Python.
//!
//! In: the ELF facts and the wheel's tags. Out: [`Abi3Violation`]s.
//! Baseline: the highest `cpXY` among the wheel's `abi3` tags, as abi3audit
//! takes it. Data: `data/stable-abi.json` (its `"source"` key says where it
//! comes from), each symbol with the Python version that added it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::elf::{ElfFacts, ElfSymbol, SymbolBinding};
use crate::spec::PythonVersion;

#[derive(Debug, Deserialize)]
struct StableAbiFile {
    source: String,
    symbols: Vec<StableAbiEntry>,
}

#[derive(Debug, Deserialize)]
struct StableAbiEntry {
    name: String,
    kind: String,
    added: String,
}

/// A symbol of the stable ABI.
#[derive(Debug)]
pub struct StableSymbol {
    /// `function` or `data`.
    pub kind: String,
    pub added: PythonVersion,
}

/// CPython's stable ABI: symbol name to when it was added.
#[derive(Debug)]
pub struct StableAbi {
    pub source: String,
    pub symbols: BTreeMap<String, StableSymbol>,
}

static STABLE_ABI: LazyLock<StableAbi> = LazyLock::new(|| {
    let file: StableAbiFile = serde_json::from_str(include_str!("data/stable-abi.json")).expect(
        "crates/cuwheel-build/src/audit/data/stable-abi.json is valid (checked by a unit test)",
    );
    let symbols = file
        .symbols
        .into_iter()
        .map(|e| {
            let added = e
                .added
                .parse::<PythonVersion>()
                .expect("stable-abi.json versions are major.minor (checked by a unit test)");
            (
                e.name,
                StableSymbol {
                    kind: e.kind,
                    added,
                },
            )
        })
        .collect();
    StableAbi {
        source: file.source,
        symbols,
    }
});

/// The stable ABI shipped with cuwheel.
pub fn stable_abi() -> &'static StableAbi {
    &STABLE_ABI
}

/// The baseline of an abi3 wheel: the highest `cpXY` interpreter among its
/// `(python, abi)` tag pairs whose ABI is `abi3`. `None` for non-abi3 wheels.
pub fn baseline<'a>(tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<PythonVersion> {
    tags.into_iter()
        .filter(|(_, abi)| *abi == "abi3")
        .filter_map(|(python, _)| PythonVersion::from_compact(python.strip_prefix("cp")?))
        .max()
}

/// Why one symbol breaks the abi3 promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum Abi3Violation {
    /// Not part of the stable ABI at all.
    NotInStableAbi { symbol: String },
    /// In the stable ABI, but only from a Python newer than the baseline.
    NewerThanBaseline {
        symbol: String,
        added: PythonVersion,
    },
}

impl fmt::Display for Abi3Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abi3Violation::NotInStableAbi { symbol } => {
                write!(f, "{symbol} is not part of the stable ABI (limited API)")
            }
            Abi3Violation::NewerThanBaseline { symbol, added } => {
                write!(f, "{symbol} entered the stable ABI only in Python {added}")
            }
        }
    }
}

/// The stable-ABI violations of one ELF file against `baseline`, sorted by symbol.
pub fn check(facts: &ElfFacts, baseline: PythonVersion) -> Vec<Abi3Violation> {
    let abi = stable_abi();
    let mut found = BTreeMap::new();
    let symbols = facts.dynamic_symbols.iter().chain(&facts.static_symbols);
    for symbol in symbols.filter(|s| is_python_api(s)) {
        let violation = match abi.symbols.get(&symbol.name) {
            None => Abi3Violation::NotInStableAbi {
                symbol: symbol.name.clone(),
            },
            Some(stable) if stable.added > baseline => Abi3Violation::NewerThanBaseline {
                symbol: symbol.name.clone(),
                added: stable.added,
            },
            Some(_) => continue,
        };
        found.insert(symbol.name.clone(), violation);
    }
    found.into_values().collect()
}

/// A CPython API symbol that the check counts: imported, or defined and
/// visible outside the file; the module's own `PyInit_*` excepted.
fn is_python_api(symbol: &ElfSymbol) -> bool {
    let visible = !symbol.defined
        || !matches!(
            symbol.binding,
            SymbolBinding::Local | SymbolBinding::GnuUnique
        );
    visible
        && (symbol.name.starts_with("Py") || symbol.name.starts_with("_Py"))
        && !symbol.name.starts_with("PyInit_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::elf::SymbolKind;

    fn import(name: &str) -> ElfSymbol {
        ElfSymbol {
            name: name.into(),
            version: None,
            version_hidden: false,
            defined: false,
            binding: SymbolBinding::Global,
            kind: SymbolKind::Func,
        }
    }

    fn facts(symbols: Vec<ElfSymbol>) -> ElfFacts {
        ElfFacts {
            arch: crate::wheel::Arch::X86_64,
            soname: None,
            needed: vec![],
            rpath: vec![],
            runpath: vec![],
            interpreter: None,
            version_needs: vec![],
            dynamic_symbols: symbols,
            static_symbols: vec![],
            x86_isa_needed: None,
        }
    }

    #[test]
    fn the_data_loads_with_versions_and_source() {
        let abi = stable_abi();
        assert!(abi.source.contains("stable_abi.toml"));
        assert!(abi.symbols.len() > 900, "{}", abi.symbols.len());
        let v = |s: &str| abi.symbols[s].added.to_string();
        assert_eq!(v("PyObject_GetAttr"), "3.2");
        assert_eq!(v("PyType_FromSpec"), "3.2");
        assert_eq!(v("PyModule_AddType"), "3.10");
        assert_eq!(abi.symbols["_Py_NoneStruct"].kind, "data");
    }

    #[test]
    fn baseline_is_the_highest_cpython_of_the_abi3_tags() {
        let tags = [("cp39", "abi3"), ("cp311", "abi3"), ("cp312", "cp312")];
        assert_eq!(baseline(tags).unwrap().to_string(), "3.11");
        assert_eq!(baseline([("cp311", "cp311")]), None);
        assert_eq!(baseline([("py3", "none")]), None);
    }

    #[test]
    fn reports_non_limited_and_too_new_symbols() {
        let f = facts(vec![
            import("PyObject_GetAttr"),
            import("PyModule_AddType"),
            import("_PyObject_GC_New_private"),
            import("PyInit_foo"),
            import("memcpy"),
            import("PyModule_AddType"),
        ]);
        let found = check(&f, PythonVersion::new(3, 9));
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "PyModule_AddType entered the stable ABI only in Python 3.10",
                "_PyObject_GC_New_private is not part of the stable ABI (limited API)",
            ]
        );
        assert_eq!(check(&f, PythonVersion::new(3, 10)).len(), 1);
    }

    #[test]
    fn local_and_unique_definitions_do_not_count() {
        let mut defined = import("Py_Something_private");
        defined.defined = true;
        defined.binding = SymbolBinding::Local;
        assert!(check(&facts(vec![defined.clone()]), PythonVersion::new(3, 9)).is_empty());
        defined.binding = SymbolBinding::Global;
        assert_eq!(
            check(&facts(vec![defined]), PythonVersion::new(3, 9)).len(),
            1
        );
    }
}
