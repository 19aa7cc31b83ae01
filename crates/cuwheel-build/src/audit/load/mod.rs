//! The load check: would `import` of the wheel resolve every dynamic symbol,
//! with a given torch release (and CUDA runtime and baseline system)
//! installed? Static, from symbol tables, in milliseconds per release.
//!
//! In: the wheel's ELF members with their [`ElfFacts`], where each of their
//! DT_NEEDED entries resolves ([`loader::resolve_needed`]), and the
//! [`Provider`]s: [`SymbolTable`]s of what exists outside the wheel, each
//! labelled (`torch 2.11.0`, `CUDA runtime`, `baseline system`). Out: a
//! [`LoadCheck`] per environment, and for several torch releases the
//! backward-compatibility table ([`compat::compatibility`]): which releases
//! the wheel loads with, and the first symbol missing from the others.
//!
//! The model is glibc's loader (`elf/dl-lookup.c`, `elf/dl-version.c`) as
//! CPython uses it (`dlopen(RTLD_NOW | RTLD_LOCAL)`): a member's undefined,
//! non-weak symbol must be defined in its scope — the global scope (the
//! interpreter, which provides the `Py*`/`_Py*` API, and `libc.so.6` and
//! `libm.so.6`, which every CPython links) and the breadth-first closure of
//! its DT_NEEDED entries, through the wheel's own members and the
//! providers' libraries. A versioned reference binds to that version (or to
//! an unversioned definition), an unversioned one to any non-hidden
//! definition ([`ExportedSymbol::satisfies`]); every version a member needs
//! from a file must be defined by that file. Weak references never fail.
//!
//! A library in the scope with no table is reported as unchecked. A symbol
//! found nowhere fails ([`Unresolved`]) unless one of the member's own
//! DT_NEEDED libraries that could define it has no table — then it is only
//! [`LoadCheck::unverified`]. A versioned reference names its library; an
//! unversioned one cannot come from glibc or libstdc++ (they version every
//! symbol), so the manylinux system libraries do not count then.
//!
//! [`compat`] turns checks against several torch releases into the
//! backward-compatibility table and the audit's findings; [`stable`] finds
//! what a stable-ABI wheel takes from torch beyond the stable C shim.
//!
//! [`ExportedSymbol::satisfies`]: super::symbols::ExportedSymbol::satisfies
//! [`loader::resolve_needed`]: super::loader::resolve_needed

pub mod compat;
pub mod stable;
pub mod verdict;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;

use super::elf::{ElfFacts, ElfSymbol, SymbolBinding};
use super::loader::Resolution;
use super::symbols::{LibraryExports, SymbolTable};
use crate::wheel::manylinux;

pub use compat::{
    LoadFinding, ReleaseVerdict, compatibility, compatibility_summary, compatibility_text, findings,
};
pub use verdict::{Labelled, LoadInputs, LoadVerdict, judge, judge_context};

/// Libraries in every process that imports a CPython extension.
const GLOBAL_SCOPE: [&str; 2] = ["libc.so.6", "libm.so.6"];

/// A symbol table and what it stands for in messages.
#[derive(Debug, Clone, Copy)]
pub struct Provider<'a> {
    /// `torch 2.11.0`, `CUDA 13.0 runtime`, `baseline system (manylinux_2_31)`.
    pub origin: &'a str,
    pub table: &'a SymbolTable,
}

/// One ELF member of the wheel.
#[derive(Debug, Clone, Copy)]
pub struct WheelObject<'a> {
    pub member: &'a str,
    pub facts: &'a ElfFacts,
}

/// A symbol that no library in scope defines.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Unresolved {
    pub member: String,
    /// The symbol as the member references it (mangled).
    pub symbol: String,
    pub version: Option<String>,
    /// The symbol demangled (C++), or as is.
    pub demangled: String,
    /// The DT_NEEDED entries it was expected from.
    pub expected_from: Vec<String>,
    /// Where another environment defines it: `libc10_cuda.so of torch 2.11.0`
    /// (filled in by [`compatibility`]).
    pub elsewhere: Option<String>,
}

/// A symbol version a member needs that its file does not define.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct MissingVersion {
    pub member: String,
    pub file: String,
    pub version: String,
    /// Where the file's table comes from.
    pub origin: String,
}

/// The verdict of loading the wheel in one environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoadCheck {
    /// Sorted by member, then symbol.
    pub unresolved: Vec<Unresolved>,
    pub missing_versions: Vec<MissingVersion>,
    /// Symbols found nowhere, but maybe in a needed library that has no table.
    pub unverified: Vec<Unresolved>,
    /// Libraries in some member's scope that no provider has a table of.
    pub unchecked_libraries: BTreeSet<String>,
    /// References to the interpreter's C API, taken as provided.
    pub interpreter_symbols: usize,
}

impl LoadCheck {
    /// Whether importing the wheel would resolve every symbol.
    pub fn loads(&self) -> bool {
        self.unresolved.is_empty() && self.missing_versions.is_empty()
    }
}

impl Unresolved {
    /// `` `at::empty(...)` (`_ZN2at5emptyE...`) from libtorch_cpu.so ``.
    pub fn describe(&self) -> String {
        let name = match &self.version {
            Some(v) => format!("{}@{v}", self.symbol),
            None => self.symbol.clone(),
        };
        let shown = if self.demangled == self.symbol {
            format!("`{name}`")
        } else {
            format!("`{}` (`{name}`)", self.demangled)
        };
        let mut text = if self.expected_from.is_empty() {
            format!("{shown} is defined by none of the libraries it loads")
        } else {
            format!(
                "{shown} is not defined by {}",
                self.expected_from.join(" or ")
            )
        };
        if let Some(elsewhere) = &self.elsewhere {
            text += &format!(" ({elsewhere} defines it)");
        }
        text
    }
}

/// A C++ symbol of torch's own API, which the stable ABI does not offer.
pub fn is_torch_cxx(symbol: &str) -> bool {
    [
        "_ZN2at",
        "_ZN3c10",
        "_ZN5torch",
        "_ZNK2at",
        "_ZNK3c10",
        "_ZNK5torch",
    ]
    .iter()
    .any(|p| symbol.starts_with(p))
}

/// The interpreter's C API: `Py*` and `_Py*`.
fn is_interpreter_symbol(symbol: &str) -> bool {
    symbol.starts_with("Py") || symbol.starts_with("_Py")
}

/// `symbol` demangled when it is an Itanium C++ name, else as is.
pub fn demangle(symbol: &str) -> String {
    if !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| symbol.to_string())
}

/// Where a library in a scope comes from.
#[derive(Debug, Clone, Copy)]
pub struct InScope<'a> {
    pub exports: &'a LibraryExports,
    /// The provider's origin, or `the wheel`.
    pub origin: &'a str,
}

/// The libraries one member binds against, in lookup order.
#[derive(Debug, Clone, Default)]
pub struct Scope<'a> {
    pub libraries: Vec<InScope<'a>>,
    /// Sonames in the closure that no provider has a table of.
    pub unchecked: BTreeSet<String>,
}

impl<'a> Scope<'a> {
    /// The libraries whose definition of `name` a reference asking for
    /// `version` binds to, in lookup order (the loader takes the first).
    pub fn satisfying(&self, name: &str, version: Option<&str>) -> Vec<InScope<'a>> {
        self.libraries
            .iter()
            .copied()
            .filter(|l| l.exports.defines(name, version))
            .collect()
    }
}

/// The wheel's members and the providers' tables, ready to give each
/// member's scope.
pub struct Linker<'a> {
    objects: &'a [WheelObject<'a>],
    resolved: &'a BTreeMap<(String, String), Resolution>,
    providers: &'a [Provider<'a>],
    /// Each member's exports, by member path.
    members: BTreeMap<&'a str, LibraryExports>,
}

/// What a DT_NEEDED entry of a member is, for the breadth-first walk.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Node<'a> {
    Member(&'a str),
    Library(String),
}

impl<'a> Linker<'a> {
    pub fn new(
        objects: &'a [WheelObject<'a>],
        resolved: &'a BTreeMap<(String, String), Resolution>,
        providers: &'a [Provider<'a>],
    ) -> Linker<'a> {
        let members = objects
            .iter()
            .map(|o| {
                let file = o.member.rsplit('/').next().unwrap_or(o.member);
                let soname = o.facts.soname.as_deref().unwrap_or(file);
                (o.member, LibraryExports::from_facts(soname, o.facts))
            })
            .collect();
        Linker {
            objects,
            resolved,
            providers,
            members,
        }
    }

    /// The library `soname` outside the wheel: the first provider naming it.
    pub fn library(&self, soname: &str) -> Option<InScope<'a>> {
        self.providers.iter().find_map(|p| {
            p.table.library(soname).map(|exports| InScope {
                exports,
                origin: p.origin,
            })
        })
    }

    /// Whether `member`'s DT_NEEDED entry `soname` is a member of the wheel.
    fn in_wheel(&self, member: &str, soname: &str) -> bool {
        matches!(
            self.resolved.get(&(member.to_string(), soname.to_string())),
            Some(Resolution::InWheel(_))
        )
    }

    fn needed_of(&self, member: &str, facts: &ElfFacts) -> Vec<Node<'a>> {
        facts
            .needed
            .iter()
            .map(
                |soname| match self.resolved.get(&(member.to_string(), soname.clone())) {
                    Some(Resolution::InWheel(path)) => self
                        .objects
                        .iter()
                        .find(|o| o.member == path)
                        .map(|o| Node::Member(o.member))
                        .unwrap_or_else(|| Node::Library(soname.clone())),
                    _ => Node::Library(soname.clone()),
                },
            )
            .collect()
    }

    /// The libraries `object` binds against, in lookup order: the global
    /// scope, then its DT_NEEDED closure breadth-first.
    pub fn scope(&self, object: &WheelObject<'a>) -> Scope<'_> {
        let mut scope = Scope::default();
        let mut seen: BTreeSet<Node<'a>> = BTreeSet::new();
        let mut queue: VecDeque<Node<'a>> = GLOBAL_SCOPE
            .iter()
            .map(|s| Node::Library(s.to_string()))
            .collect();
        queue.extend(self.needed_of(object.member, object.facts));
        while let Some(node) = queue.pop_front() {
            if !seen.insert(node.clone()) {
                continue;
            }
            match node {
                Node::Member(path) => {
                    let facts = self
                        .objects
                        .iter()
                        .find(|o| o.member == path)
                        .map(|o| o.facts);
                    if let (Some(exports), Some(facts)) = (self.members.get(path), facts) {
                        scope.libraries.push(InScope {
                            exports,
                            origin: "the wheel",
                        });
                        queue.extend(self.needed_of(path, facts));
                    }
                }
                Node::Library(soname) => match self.library(&soname) {
                    Some(found) => {
                        scope.libraries.push(found);
                        queue.extend(found.exports.needed.iter().cloned().map(Node::Library));
                    }
                    None => {
                        scope.unchecked.insert(soname);
                    }
                },
            }
        }
        scope
    }
}

/// Checks that every member of the wheel would load with `providers`.
pub fn check(
    objects: &[WheelObject<'_>],
    resolved: &BTreeMap<(String, String), Resolution>,
    providers: &[Provider<'_>],
) -> LoadCheck {
    let linker = Linker::new(objects, resolved, providers);
    let mut result = LoadCheck::default();
    for object in objects {
        let scope = linker.scope(object);
        check_symbols(object, &linker, &scope, &mut result);
        check_versions(object, &scope, &mut result);
        result.unchecked_libraries.extend(scope.unchecked);
    }
    result.unresolved.sort();
    result.unverified.sort();
    result.missing_versions.sort();
    result
}

/// The undefined, non-weak dynamic symbols of a member.
pub fn references(facts: &ElfFacts) -> impl Iterator<Item = &ElfSymbol> {
    facts
        .dynamic_symbols
        .iter()
        .filter(|s| !s.defined && !matches!(s.binding, SymbolBinding::Weak | SymbolBinding::Local))
}

fn check_symbols(
    object: &WheelObject<'_>,
    linker: &Linker<'_>,
    scope: &Scope<'_>,
    result: &mut LoadCheck,
) {
    for symbol in references(object.facts) {
        let version = symbol.version.as_deref();
        if scope
            .libraries
            .iter()
            .any(|l| l.exports.defines(&symbol.name, version))
        {
            continue;
        }
        if is_interpreter_symbol(&symbol.name) {
            result.interpreter_symbols += 1;
            continue;
        }
        // The libraries that could have provided it.
        let candidates: Vec<&String> = match version {
            Some(v) => object
                .facts
                .version_needs
                .iter()
                .filter(|n| n.versions.iter().any(|x| x == v))
                .map(|n| &n.file)
                .collect(),
            // An unversioned reference was not linked against a library that
            // versions every symbol (glibc, libstdc++, libcudart).
            None => object
                .facts
                .needed
                .iter()
                .filter(|s| match linker.library(s) {
                    Some(l) => {
                        l.exports.versions.is_empty()
                            || l.exports.symbols.iter().any(|x| x.version.is_none())
                    }
                    None => !manylinux::is_allowed_system_library(s),
                })
                .collect(),
        };
        let untabled = candidates
            .iter()
            .any(|s| !linker.in_wheel(object.member, s) && linker.library(s).is_none());
        let unresolved = Unresolved {
            member: object.member.to_string(),
            symbol: symbol.name.clone(),
            version: symbol.version.clone(),
            demangled: demangle(&symbol.name),
            expected_from: candidates.into_iter().cloned().collect(),
            elsewhere: None,
        };
        if untabled {
            result.unverified.push(unresolved);
        } else {
            result.unresolved.push(unresolved);
        }
    }
}

fn check_versions(object: &WheelObject<'_>, scope: &Scope<'_>, result: &mut LoadCheck) {
    for need in &object.facts.version_needs {
        let Some(file) = scope
            .libraries
            .iter()
            .find(|l| l.exports.soname == need.file)
        else {
            continue;
        };
        for version in &need.versions {
            if !file.exports.versions.contains(version) {
                result.missing_versions.push(MissingVersion {
                    member: object.member.to_string(),
                    file: need.file.clone(),
                    version: version.clone(),
                    origin: format!("{}'s {}", file.origin, need.file),
                });
            }
        }
    }
}

/// Small hand-made members and tables for the unit tests of this module
/// and its submodules.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::collections::BTreeMap;

    use crate::audit::elf::{ElfFacts, ElfSymbol, SymbolBinding, SymbolKind};
    use crate::audit::loader::Resolution;
    use crate::audit::symbols::{ExportedSymbol, LibraryExports, SymbolTable};

    pub fn facts(needed: &[&str], undefined: &[(&str, Option<&str>, SymbolBinding)]) -> ElfFacts {
        ElfFacts {
            arch: crate::wheel::Arch::X86_64,
            soname: None,
            needed: needed.iter().map(|s| s.to_string()).collect(),
            rpath: vec![],
            runpath: vec![],
            interpreter: None,
            version_needs: vec![],
            dynamic_symbols: undefined
                .iter()
                .map(|(name, version, binding)| ElfSymbol {
                    name: name.to_string(),
                    version: version.map(str::to_string),
                    version_hidden: false,
                    defined: false,
                    binding: *binding,
                    kind: SymbolKind::Func,
                })
                .collect(),
            static_symbols: vec![],
            x86_isa_needed: None,
        }
    }

    pub fn library(
        soname: &str,
        needed: &[&str],
        versions: &[&str],
        symbols: &[&str],
    ) -> LibraryExports {
        let mut symbols: Vec<ExportedSymbol> = symbols
            .iter()
            .map(|s| match s.split_once("@@") {
                Some((n, v)) => ExportedSymbol {
                    name: n.into(),
                    version: Some(v.into()),
                    hidden: false,
                },
                None => ExportedSymbol {
                    name: s.to_string(),
                    version: None,
                    hidden: false,
                },
            })
            .collect();
        symbols.sort();
        LibraryExports {
            soname: soname.into(),
            needed: needed.iter().map(|s| s.to_string()).collect(),
            versions: versions.iter().map(|s| s.to_string()).collect(),
            symbols,
        }
    }

    pub fn table(libraries: Vec<LibraryExports>) -> SymbolTable {
        let mut libraries = libraries;
        libraries.sort_by(|a, b| a.soname.cmp(&b.soname));
        SymbolTable {
            sources: vec![],
            arch: Some(crate::wheel::Arch::X86_64),
            libraries,
        }
    }

    pub fn external(member: &str, facts: &ElfFacts) -> BTreeMap<(String, String), Resolution> {
        facts
            .needed
            .iter()
            .map(|s| ((member.to_string(), s.clone()), Resolution::RuntimeProvided))
            .collect()
    }
}

#[cfg(test)]
mod tests;
