//! Symbol tables: what a set of shared libraries exports, in a small
//! canonical text file, so a load check can judge a wheel against torch's
//! gigabytes of libraries without them.
//!
//! In: ELF shared objects — in wheels, directories or plain files, read by
//! [`extract_paths`] in bounded memory — or an already-parsed wheel member's
//! [`ElfFacts`]. Out: a [`SymbolTable`]: per soname its DT_NEEDED, the
//! symbol versions it defines, and its defined dynamic symbols with their
//! versions; [`SymbolTable::write`] and [`SymbolTable::parse`] are its file
//! format, byte-for-byte deterministic:
//!
//! ```text
//! cuwheel-symbols 1
//! source torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl
//! arch x86_64
//! library libc10.so
//! needed libstdc++.so.6
//! needed libc.so.6
//! version-defined LIBFOO_1.0
//! symbols 3
//! _ZN3c1011SymbolicIntD1Ev
//! memcpy@@GLIBC_2.14
//! memcpy@GLIBC_2.2.5
//! ```
//!
//! Libraries are sorted by soname, DT_NEEDED kept in file order (the
//! loader's breadth-first order), versions and symbols sorted. A symbol is
//! `name` (unversioned), `name@@VERSION` (the default version) or
//! `name@VERSION` (a hidden, non-default version), as `nm -D` writes them.
//! `source` lines name the inputs by file name only. The `arch` line names
//! the architecture every library is for (`x86_64`, `aarch64`); a table of
//! no libraries has none.

pub mod extract;

use std::fmt::Write as _;

use super::elf::{ElfFacts, SymbolBinding};
use crate::wheel::Arch;

pub use extract::{extract_paths, extract_paths_of};

/// The first line of every symbol table file.
pub const HEADER: &str = "cuwheel-symbols 1";

/// The exports of a set of libraries (one torch release, a CUDA runtime, a
/// baseline system).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolTable {
    /// The inputs it was extracted from, by file name.
    pub sources: Vec<String>,
    /// The architecture of every library; `None` when there are none.
    pub arch: Option<Arch>,
    /// Sorted by soname, sonames unique.
    pub libraries: Vec<LibraryExports>,
}

/// What one shared library offers the dynamic loader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryExports {
    /// DT_SONAME, or the file name when it has none.
    pub soname: String,
    /// DT_NEEDED entries in file order.
    pub needed: Vec<String>,
    /// The symbol versions it defines (`.gnu.version_d` less the base
    /// entry), sorted.
    pub versions: Vec<String>,
    /// Its defined dynamic symbols, sorted.
    pub symbols: Vec<ExportedSymbol>,
}

/// One defined dynamic symbol.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExportedSymbol {
    pub name: String,
    /// Its version, `None` when unversioned.
    pub version: Option<String>,
    /// A non-default version (`name@V`): only a reference asking for V binds to it.
    pub hidden: bool,
}

impl ExportedSymbol {
    /// Whether a reference to this symbol's name, asking for `version`
    /// (none for an unversioned reference), binds to this definition. As
    /// glibc's `check_match`: a versioned reference takes the same version,
    /// or an unversioned definition; an unversioned reference takes any
    /// definition that is not hidden.
    pub fn satisfies(&self, version: Option<&str>) -> bool {
        match version {
            Some(wanted) => self.version.as_deref().is_none_or(|v| v == wanted),
            None => !self.hidden,
        }
    }

    fn write(&self, out: &mut String) {
        out.push_str(&self.name);
        if let Some(version) = &self.version {
            out.push_str(if self.hidden { "@" } else { "@@" });
            out.push_str(version);
        }
        out.push('\n');
    }

    fn parse(line: &str) -> Result<ExportedSymbol, String> {
        let (name, version, hidden) = match line.split_once('@') {
            None => (line, None, false),
            Some((name, rest)) => match rest.strip_prefix('@') {
                Some(version) => (name, Some(version), false),
                None => (name, Some(rest), true),
            },
        };
        check_token("symbol name", name)?;
        if let Some(version) = version {
            check_token("symbol version", version)?;
        }
        Ok(ExportedSymbol {
            name: name.to_string(),
            version: version.map(str::to_string),
            hidden,
        })
    }
}

impl LibraryExports {
    /// The definitions of `name`, every version.
    pub fn definitions(&self, name: &str) -> &[ExportedSymbol] {
        let start = self.symbols.partition_point(|s| s.name.as_str() < name);
        let end = start + self.symbols[start..].partition_point(|s| s.name == name);
        &self.symbols[start..end]
    }

    /// Whether it defines `name` in a way a reference asking for `version` binds to.
    pub fn defines(&self, name: &str, version: Option<&str>) -> bool {
        self.definitions(name).iter().any(|s| s.satisfies(version))
    }

    /// The exports of a wheel member already parsed. Its defined versions
    /// are those its symbols carry (the facts keep no `.gnu.version_d`).
    pub fn from_facts(soname: &str, facts: &ElfFacts) -> LibraryExports {
        let mut symbols: Vec<ExportedSymbol> = facts
            .dynamic_symbols
            .iter()
            .filter(|s| s.defined && s.binding != SymbolBinding::Local)
            .filter(|s| s.version.as_ref() != Some(&s.name))
            .map(|s| ExportedSymbol {
                name: s.name.clone(),
                version: s.version.clone(),
                hidden: s.version_hidden,
            })
            .collect();
        symbols.sort();
        symbols.dedup();
        let mut versions: Vec<String> = symbols.iter().filter_map(|s| s.version.clone()).collect();
        versions.sort();
        versions.dedup();
        LibraryExports {
            soname: soname.to_string(),
            needed: facts.needed.clone(),
            versions,
            symbols,
        }
    }
}

/// Why a symbol table file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct TableError {
    pub line: usize,
    pub problem: String,
}

impl SymbolTable {
    /// The library named `soname`, if the table has it.
    pub fn library(&self, soname: &str) -> Option<&LibraryExports> {
        self.libraries
            .binary_search_by(|l| l.soname.as_str().cmp(soname))
            .ok()
            .map(|i| &self.libraries[i])
    }

    /// The canonical text of the table (see the module documentation).
    pub fn write(&self) -> String {
        let mut out = String::new();
        out.push_str(HEADER);
        out.push('\n');
        for source in &self.sources {
            let _ = writeln!(out, "source {source}");
        }
        if let Some(arch) = self.arch {
            let _ = writeln!(out, "arch {arch}");
        }
        for library in &self.libraries {
            let _ = writeln!(out, "library {}", library.soname);
            for needed in &library.needed {
                let _ = writeln!(out, "needed {needed}");
            }
            for version in &library.versions {
                let _ = writeln!(out, "version-defined {version}");
            }
            let _ = writeln!(out, "symbols {}", library.symbols.len());
            for symbol in &library.symbols {
                symbol.write(&mut out);
            }
        }
        out
    }

    /// Reads the text [`write`](Self::write) makes; anything else is an
    /// error naming the line.
    pub fn parse(text: &str) -> Result<SymbolTable, TableError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).peekable();
        let fail = |line: usize, problem: String| TableError { line, problem };
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((n, other)) => {
                return Err(fail(
                    n,
                    format!("starts with `{other}`, not `{HEADER}`: not a cuwheel symbol table"),
                ));
            }
            None => return Err(fail(1, "the file is empty".to_string())),
        }
        let mut table = SymbolTable::default();
        while let Some((n, line)) = lines.next() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "source" if table.libraries.is_empty() && table.arch.is_none() => {
                    table.sources.push(value.to_string())
                }
                "arch" if table.libraries.is_empty() && table.arch.is_none() => {
                    table.arch = Some(value.parse().map_err(|p| fail(n, p))?);
                }
                "library" => {
                    check_token("soname", value).map_err(|p| fail(n, p))?;
                    if table
                        .libraries
                        .last()
                        .is_some_and(|l| l.soname.as_str() >= value)
                    {
                        return Err(fail(
                            n,
                            format!("library `{value}` is out of order or repeated"),
                        ));
                    }
                    table.libraries.push(LibraryExports {
                        soname: value.to_string(),
                        needed: Vec::new(),
                        versions: Vec::new(),
                        symbols: Vec::new(),
                    });
                }
                "needed" | "version-defined" | "symbols" => {
                    let Some(library) = table.libraries.last_mut() else {
                        return Err(fail(n, format!("`{key}` before any `library` line")));
                    };
                    match key {
                        "needed" => {
                            check_token("soname", value).map_err(|p| fail(n, p))?;
                            library.needed.push(value.to_string());
                        }
                        "version-defined" => {
                            check_token("version", value).map_err(|p| fail(n, p))?;
                            library.versions.push(value.to_string());
                        }
                        _ => {
                            let count: usize = value.parse().map_err(|_| {
                                fail(n, format!("`symbols {value}`: the count is not a number"))
                            })?;
                            for _ in 0..count {
                                let Some((n, line)) = lines.next() else {
                                    return Err(fail(
                                        n,
                                        format!(
                                            "`{}` announces {count} symbols, the file ends first",
                                            library.soname
                                        ),
                                    ));
                                };
                                library
                                    .symbols
                                    .push(ExportedSymbol::parse(line).map_err(|p| fail(n, p))?);
                            }
                            if !library.symbols.is_sorted_by(|a, b| a < b) {
                                return Err(fail(
                                    n,
                                    format!(
                                        "the symbols of `{}` are not sorted and unique",
                                        library.soname
                                    ),
                                ));
                            }
                        }
                    }
                }
                _ => return Err(fail(n, format!("unknown line `{line}`"))),
            }
        }
        Ok(table)
    }
}

/// Names, versions and sonames are single printable tokens; `@` only
/// separates a name from its version.
fn check_token(what: &str, token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err(format!("an empty {what}"));
    }
    if let Some(bad) = token
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == '@')
    {
        return Err(format!(
            "the {what} `{}` holds {bad:?}",
            token.escape_default()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, version: Option<&str>, hidden: bool) -> ExportedSymbol {
        ExportedSymbol {
            name: name.into(),
            version: version.map(Into::into),
            hidden,
        }
    }

    fn table() -> SymbolTable {
        SymbolTable {
            sources: vec!["x.whl".into()],
            arch: Some(Arch::Aarch64),
            libraries: vec![
                LibraryExports {
                    soname: "liba.so".into(),
                    needed: vec!["libz.so.1".into(), "libc.so.6".into()],
                    versions: vec!["A_1".into(), "A_2".into()],
                    symbols: vec![
                        sym("f", Some("A_1"), true),
                        sym("f", Some("A_2"), false),
                        sym("g", None, false),
                    ],
                },
                LibraryExports {
                    soname: "libb.so".into(),
                    needed: vec![],
                    versions: vec![],
                    symbols: vec![],
                },
            ],
        }
    }

    #[test]
    fn the_text_round_trips_and_is_canonical() {
        let text = table().write();
        assert_eq!(
            text,
            "cuwheel-symbols 1\nsource x.whl\narch aarch64\nlibrary liba.so\nneeded libz.so.1\nneeded libc.so.6\n\
             version-defined A_1\nversion-defined A_2\nsymbols 3\nf@A_1\nf@@A_2\ng\n\
             library libb.so\nsymbols 0\n"
        );
        assert_eq!(SymbolTable::parse(&text).unwrap(), table());
    }

    #[test]
    fn versions_bind_as_glibc_binds_them() {
        let t = table();
        let a = t.library("liba.so").unwrap();
        assert!(
            a.defines("f", Some("A_1")),
            "a hidden version binds when asked for"
        );
        assert!(a.defines("f", Some("A_2")));
        assert!(!a.defines("f", Some("A_3")));
        assert!(
            a.defines("f", None),
            "an unversioned reference takes the default"
        );
        assert!(
            a.defines("g", Some("A_9")),
            "an unversioned definition takes any version"
        );
        assert!(!a.defines("h", None));
        let only_hidden = sym("f", Some("A_1"), true);
        assert!(!only_hidden.satisfies(None));
        assert!(t.library("libc.so").is_none());
    }

    #[test]
    fn bad_tables_name_the_line() {
        let err = SymbolTable::parse("hello\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.problem.contains("not a cuwheel symbol table"), "{err}");
        let err = SymbolTable::parse("cuwheel-symbols 1\nlibrary b\nlibrary a\n").unwrap_err();
        assert_eq!((err.line, err.problem.contains("out of order")), (3, true));
        let err = SymbolTable::parse("cuwheel-symbols 1\nlibrary a\nsymbols 2\nf\n").unwrap_err();
        assert!(err.problem.contains("announces 2 symbols"), "{err}");
        let err =
            SymbolTable::parse("cuwheel-symbols 1\nlibrary a\nsymbols 2\ng\nf\n").unwrap_err();
        assert!(err.problem.contains("not sorted"), "{err}");
        let err = SymbolTable::parse("cuwheel-symbols 1\nneeded a\n").unwrap_err();
        assert!(err.problem.contains("before any `library`"), "{err}");
        let err = SymbolTable::parse("cuwheel-symbols 1\nlibrary a b\n").unwrap_err();
        assert!(err.problem.contains("holds ' '"), "{err}");
        let err = SymbolTable::parse("cuwheel-symbols 1\narch arm64\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: `arm64` is not an architecture cuwheel builds for: use `x86_64` or `aarch64`"
        );
        let err = SymbolTable::parse("cuwheel-symbols 1\nlibrary a\narch x86_64\n").unwrap_err();
        assert_eq!(err.to_string(), "line 3: unknown line `arch x86_64`");
    }
}
