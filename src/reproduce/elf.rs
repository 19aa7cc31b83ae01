//! What differs between two ELF files: their sections and their symbols.
//!
//! In: the bytes of the given and the rebuilt file. Out: an [`ElfDiff`] —
//! each section whose size or bytes differ (with the sha256 of each side),
//! or that only one has; each dynamic (`.dynsym`) and static (`.symtab`)
//! symbol added, removed or changed in value, size, kind, binding or
//! section; and, when every section agrees, the first differing byte of the
//! rest of the file (headers, padding). `None` when either side is not an
//! ELF file `object` can read.

use std::collections::BTreeMap;

use object::LittleEndian as LE;
use object::read::elf::ElfFile64;
use object::read::{Object, ObjectSection, ObjectSymbol, SymbolSection};
use serde::Serialize;

use crate::store::Hash;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfDiff {
    pub sections: Vec<SectionChange>,
    pub symbols: Vec<SymbolChange>,
    /// The first differing file offset when no section differs: the
    /// difference is in the headers or between sections.
    pub outside_sections_at: Option<u64>,
}

/// One side of a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionFacts {
    pub size: u64,
    pub address: u64,
    /// Of its bytes in the file (none for `.bss`-like sections).
    pub sha256: String,
}

/// A section that differs; `None` on the side that lacks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionChange {
    pub name: String,
    pub given: Option<SectionFacts>,
    pub built: Option<SectionFacts>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SymbolTable {
    Dynamic,
    Static,
}

/// One side of a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolFacts {
    pub value: u64,
    pub size: u64,
    pub kind: String,
    pub binding: String,
    /// The section it is defined in, or `UND`/`ABS`/`COM`.
    pub section: String,
}

/// A symbol that differs; `None` on the side that lacks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolChange {
    pub table: SymbolTable,
    pub name: String,
    pub given: Option<SymbolFacts>,
    pub built: Option<SymbolFacts>,
}

/// The differences between `given` and `built`, or `None` when either is
/// not a readable 64-bit little-endian ELF file.
pub fn diff(given: &[u8], built: &[u8]) -> Option<ElfDiff> {
    let a = ElfFile64::<LE>::parse(given).ok()?;
    let b = ElfFile64::<LE>::parse(built).ok()?;
    let sections = changes(&sections_of(&a), &sections_of(&b))
        .into_iter()
        .map(|(name, given, built)| SectionChange { name, given, built })
        .collect::<Vec<_>>();
    let mut symbols = Vec::new();
    for table in [SymbolTable::Dynamic, SymbolTable::Static] {
        let changed = changes(&symbols_of(&a, table), &symbols_of(&b, table));
        symbols.extend(
            changed
                .into_iter()
                .map(|(name, given, built)| SymbolChange {
                    table,
                    name,
                    given,
                    built,
                }),
        );
    }
    let outside_sections_at = if sections.is_empty() {
        first_difference(given, built)
    } else {
        None
    };
    Some(ElfDiff {
        sections,
        symbols,
        outside_sections_at,
    })
}

/// The first offset where `a` and `b` differ, counting a length difference.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<u64> {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => Some(i as u64),
        None if a.len() != b.len() => Some(a.len().min(b.len()) as u64),
        None => None,
    }
}

/// Entries of two keyed tables that differ: `(key, given, built)`.
fn changes<T: Clone + PartialEq>(
    given: &BTreeMap<String, T>,
    built: &BTreeMap<String, T>,
) -> Vec<(String, Option<T>, Option<T>)> {
    let mut keys: Vec<&String> = given.keys().chain(built.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| given.get(*k) != built.get(*k))
        .map(|k| (k.clone(), given.get(k).cloned(), built.get(k).cloned()))
        .collect()
}

/// Inserts under `name`, or `name (2)`, `name (3)`… when it repeats.
fn insert_unique<T>(table: &mut BTreeMap<String, T>, name: &str, value: T) {
    let mut key = name.to_string();
    let mut n = 1;
    while table.contains_key(&key) {
        n += 1;
        key = format!("{name} ({n})");
    }
    table.insert(key, value);
}

fn sections_of(file: &ElfFile64<'_, LE>) -> BTreeMap<String, SectionFacts> {
    let mut table = BTreeMap::new();
    for section in file.sections() {
        let name = section.name().unwrap_or("(unnamed)");
        if name.is_empty() {
            continue; // the null section
        }
        let data = section.data().unwrap_or_default();
        let facts = SectionFacts {
            size: section.size(),
            address: section.address(),
            sha256: Hash::sha256(data).to_hex(),
        };
        insert_unique(&mut table, name, facts);
    }
    table
}

fn symbols_of(file: &ElfFile64<'_, LE>, table: SymbolTable) -> BTreeMap<String, SymbolFacts> {
    let symbols = match table {
        SymbolTable::Dynamic => file.dynamic_symbols(),
        SymbolTable::Static => file.symbols(),
    };
    let mut facts = BTreeMap::new();
    for symbol in symbols {
        let name = symbol.name().unwrap_or("(unreadable name)");
        if name.is_empty() {
            continue; // the null entry and unnamed section symbols
        }
        let section = match symbol.section() {
            SymbolSection::Section(index) => file
                .section_by_index(index)
                .ok()
                .and_then(|s| s.name().ok().map(str::to_string))
                .unwrap_or_else(|| format!("section {}", index.0)),
            SymbolSection::Undefined => "UND".into(),
            SymbolSection::Absolute => "ABS".into(),
            SymbolSection::Common => "COM".into(),
            other => format!("{other:?}"),
        };
        let binding = if symbol.is_weak() {
            "weak"
        } else if symbol.is_global() {
            "global"
        } else {
            "local"
        };
        let value = SymbolFacts {
            value: symbol.address(),
            size: symbol.size(),
            kind: format!("{:?}", symbol.kind()).to_lowercase(),
            binding: binding.into(),
            section,
        };
        insert_unique(&mut facts, name, value);
    }
    facts
}

impl std::fmt::Display for SectionFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes at {:#x}, sha256 {}",
            self.size, self.address, self.sha256
        )
    }
}

impl std::fmt::Display for SymbolFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} in {} at {:#x}, {} bytes",
            self.binding, self.kind, self.section, self.value, self.size
        )
    }
}

/// Lines of changes listed per table before the rest is counted.
const LISTED: usize = 40;

impl ElfDiff {
    /// The report's lines, indented by `indent`.
    pub fn render(&self, indent: &str) -> String {
        let mut text = String::new();
        for s in &self.sections {
            text += &match (&s.given, &s.built) {
                (Some(g), Some(b)) => {
                    format!(
                        "{indent}section {}:\n{indent}  given {g}\n{indent}  built {b}\n",
                        s.name
                    )
                }
                (Some(g), None) => {
                    format!("{indent}section {}: only in the given file ({g})\n", s.name)
                }
                (None, Some(b)) => {
                    format!("{indent}section {}: only in the built file ({b})\n", s.name)
                }
                (None, None) => unreachable!("a change has at least one side"),
            };
        }
        for table in [SymbolTable::Dynamic, SymbolTable::Static] {
            let changes: Vec<&SymbolChange> =
                self.symbols.iter().filter(|s| s.table == table).collect();
            let label = match table {
                SymbolTable::Dynamic => "dynamic symbol",
                SymbolTable::Static => "static symbol",
            };
            for s in changes.iter().take(LISTED) {
                text += &match (&s.given, &s.built) {
                    (Some(g), Some(b)) => {
                        format!("{indent}{label} {} changed: given {g}; built {b}\n", s.name)
                    }
                    (Some(g), None) => {
                        format!("{indent}{label} {} removed (given: {g})\n", s.name)
                    }
                    (None, Some(b)) => format!("{indent}{label} {} added (built: {b})\n", s.name),
                    (None, None) => unreachable!("a change has at least one side"),
                };
            }
            if changes.len() > LISTED {
                text += &format!(
                    "{indent}… and {} more {label}s (--json lists them all)\n",
                    changes.len() - LISTED
                );
            }
        }
        if self.sections.is_empty() && self.symbols.is_empty() {
            text += &format!("{indent}no symbol differs\n");
        }
        if let Some(at) = self.outside_sections_at {
            text += &format!(
                "{indent}every section is the same; the files first differ at byte {at} \
                 (headers or padding)\n"
            );
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_counts_a_shorter_side() {
        assert_eq!(first_difference(b"abc", b"abc"), None);
        assert_eq!(first_difference(b"abc", b"abd"), Some(2));
        assert_eq!(first_difference(b"ab", b"abc"), Some(2));
    }

    #[test]
    fn repeated_names_are_kept_apart() {
        let mut table = BTreeMap::new();
        insert_unique(&mut table, "x", 1);
        insert_unique(&mut table, "x", 2);
        insert_unique(&mut table, "x", 3);
        assert_eq!(
            table.into_iter().collect::<Vec<_>>(),
            [("x".into(), 1), ("x (2)".into(), 2), ("x (3)".into(), 3)]
        );
    }

    #[test]
    fn changes_pair_up_keys_and_skip_equal_entries() {
        let a = BTreeMap::from([("k".to_string(), 1), ("same".into(), 5), ("gone".into(), 2)]);
        let b = BTreeMap::from([("k".to_string(), 9), ("same".into(), 5), ("new".into(), 3)]);
        assert_eq!(
            changes(&a, &b),
            [
                ("gone".into(), Some(2), None),
                ("k".into(), Some(1), Some(9)),
                ("new".into(), None, Some(3)),
            ]
        );
    }

    #[test]
    fn a_changed_symbol_size_is_named_with_both_sides() {
        // This test binary is a real ELF file with a .symtab: change the
        // st_size of its `main` entry (Elf64_Sym: st_size at byte 16 of 24).
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let file = ElfFile64::<LE>::parse(&*exe).unwrap();
        let main = file.symbols().find(|s| s.name() == Ok("main")).unwrap();
        let (symtab, _) = file
            .section_by_name(".symtab")
            .unwrap()
            .file_range()
            .unwrap();
        let at = symtab as usize + main.index().0 * 24 + 16;
        let mut changed = exe.clone();
        changed[at] ^= 0x01;
        let d = diff(&exe, &changed).unwrap();
        let names: Vec<&str> = d.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".symtab"]);
        assert_eq!(d.symbols.len(), 1, "{:?}", d.symbols);
        let s = &d.symbols[0];
        assert_eq!((s.table, s.name.as_str()), (SymbolTable::Static, "main"));
        let (given, built) = (s.given.as_ref().unwrap(), s.built.as_ref().unwrap());
        assert_eq!(given.size ^ built.size, 1);
        assert!(
            d.render("")
                .contains("static symbol main changed: given global text in .text"),
            "{}",
            d.render("")
        );
        assert_eq!(diff(&exe, &exe).unwrap().symbols, []);
    }

    #[test]
    fn non_elf_bytes_are_not_diffed_as_elf() {
        assert_eq!(diff(b"not an elf", b"\x7fELF short"), None);
    }
}
