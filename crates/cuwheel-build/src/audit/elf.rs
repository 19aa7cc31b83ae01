//! Facts of one x86_64 or aarch64 ELF shared object, read from its bytes
//! with `object`: its architecture, DT_NEEDED, SONAME, RPATH/RUNPATH, PT_INTERP, the symbol versions it
//! requires (`.gnu.version_r`), its dynamic symbols with their versions, its
//! `.symtab` symbols (absent when stripped), the x86 ISA level an x86_64
//! file declares needing, and the bytes of its CUDA fat binary section.
//!
//! In: a member name (for messages) and its bytes — in memory, or any
//! [`ReadRef`] such as a [`object::read::ReadCache`] over a file, so a
//! gigabyte library is read only where its tables are. Out: [`ElfFacts`], or
//! a typed [`ElfError`] naming the member for anything that is not a
//! well-formed 64-bit little-endian x86_64 or aarch64 ELF file, a `.dynamic` section of
//! garbage included (every entry's tag must be one the ELF and GNU
//! specifications define, and a `DT_NULL` must end it). Never panics on
//! input.

use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{
    Dyn, FileHeader, NoteIterator, ProgramHeader, SectionHeader, SectionTable, Sym,
};
use object::read::{ReadRef, StringTable, SymbolIndex};
use serde::Serialize;

use crate::wheel::Arch;

type Header = elf::FileHeader64<LE>;

/// The ELF section that nvcc's host object carries the CUDA fat binary in.
/// Relocatable device code (`-rdc`) sits in `__nv_relfatbin` until the device
/// link; only `.nv_fatbin` is what the CUDA runtime loads.
pub const NV_FATBIN_SECTION: &str = ".nv_fatbin";

/// Why a member could not be read as an x86_64 or aarch64 ELF file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{member}: {kind}")]
pub struct ElfError {
    pub member: String,
    pub kind: ElfErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfErrorKind {
    #[error("not an ELF file (it starts with bytes {0})")]
    NotElf(String),
    #[error("a 32-bit ELF file; only 64-bit x86_64 and aarch64 objects are audited")]
    WrongClass,
    #[error("a big-endian ELF file; only little-endian x86_64 and aarch64 objects are audited")]
    WrongEndian,
    #[error("an ELF file for machine number {0}, neither x86_64 (62) nor aarch64 (183)")]
    WrongMachine(u16),
    #[error("a truncated or malformed ELF file: {0}")]
    Malformed(String),
}

/// The x86-64 micro-architecture level from `GNU_PROPERTY_X86_ISA_1_NEEDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum X86IsaLevel {
    Baseline,
    V2,
    V3,
    V4,
    /// Bits beyond v4 that this version of cuwheel does not know.
    Unknown(u32),
}

impl X86IsaLevel {
    fn from_needed_bits(bits: u32) -> X86IsaLevel {
        if bits & elf::GNU_PROPERTY_X86_ISA_1_V4 != 0 {
            X86IsaLevel::V4
        } else if bits & elf::GNU_PROPERTY_X86_ISA_1_V3 != 0 {
            X86IsaLevel::V3
        } else if bits & elf::GNU_PROPERTY_X86_ISA_1_V2 != 0 {
            X86IsaLevel::V2
        } else if bits & !elf::GNU_PROPERTY_X86_ISA_1_BASELINE == 0 {
            X86IsaLevel::Baseline
        } else {
            X86IsaLevel::Unknown(bits)
        }
    }

    /// The name `readelf -n` and the psABI use: `x86-64-v3`.
    pub fn name(self) -> String {
        match self {
            X86IsaLevel::Baseline => "x86-64-baseline".to_string(),
            X86IsaLevel::V2 => "x86-64-v2".to_string(),
            X86IsaLevel::V3 => "x86-64-v3".to_string(),
            X86IsaLevel::V4 => "x86-64-v4".to_string(),
            X86IsaLevel::Unknown(bits) => format!("unknown x86 ISA bits {bits:#x}"),
        }
    }
}

/// The versions one needed file must provide (one `Elf64_Verneed` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionNeed {
    /// The needed file, e.g. `libc.so.6`.
    pub file: String,
    /// Version names in file order, e.g. `GLIBC_2.14`.
    pub versions: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SymbolBinding {
    Local,
    Global,
    Weak,
    GnuUnique,
    Other(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SymbolKind {
    NoType,
    Object,
    Func,
    Section,
    File,
    Common,
    Tls,
    GnuIfunc,
    Other(u8),
}

/// One symbol table entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfSymbol {
    pub name: String,
    /// The version from `.gnu.version` (dynamic symbols only), e.g. `GLIBC_2.2.5`.
    pub version: Option<String>,
    /// The version is hidden (`name@V` rather than the default `name@@V`).
    pub version_hidden: bool,
    pub defined: bool,
    pub binding: SymbolBinding,
    pub kind: SymbolKind,
}

/// What the dynamic loader and the audit need to know about one ELF file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfFacts {
    /// The architecture of its ELF header's machine.
    pub arch: Arch,
    pub soname: Option<String>,
    /// DT_NEEDED entries in file order.
    pub needed: Vec<String>,
    /// DT_RPATH entries, split at `:`.
    pub rpath: Vec<String>,
    /// DT_RUNPATH entries, split at `:`.
    pub runpath: Vec<String>,
    /// PT_INTERP, e.g. `/lib64/ld-linux-x86-64.so.2`.
    pub interpreter: Option<String>,
    pub version_needs: Vec<VersionNeed>,
    /// `.dynsym` without its null entry, in table order.
    pub dynamic_symbols: Vec<ElfSymbol>,
    /// Non-local `.symtab` entries; empty when the file is stripped.
    pub static_symbols: Vec<ElfSymbol>,
    /// `None` when the file carries no `GNU_PROPERTY_X86_ISA_1_NEEDED` note
    /// (always for aarch64, whose property notes mean other things).
    pub x86_isa_needed: Option<X86IsaLevel>,
}

impl ElfFacts {
    /// Reads the facts of `data`; `member` names it in errors.
    pub fn parse(member: &str, data: &[u8]) -> Result<ElfFacts, ElfError> {
        ElfFacts::parse_from(member, data)
    }

    /// [`parse`](Self::parse) of bytes read on demand (a file through a
    /// [`object::read::ReadCache`]): only the headers and tables are read.
    pub fn parse_from<'d, R: ReadRef<'d>>(member: &str, data: R) -> Result<ElfFacts, ElfError> {
        let fail = |kind| ElfError {
            member: member.to_string(),
            kind,
        };
        let malformed = |e: object::read::Error| fail(ElfErrorKind::Malformed(e.to_string()));
        let (header, sections, arch) = parse_header(data).map_err(fail)?;
        let endian = LE;

        let mut facts = ElfFacts {
            arch,
            soname: None,
            needed: Vec::new(),
            rpath: Vec::new(),
            runpath: Vec::new(),
            interpreter: None,
            version_needs: Vec::new(),
            dynamic_symbols: Vec::new(),
            static_symbols: Vec::new(),
            x86_isa_needed: None,
        };

        let file_len = data.len().unwrap_or(u64::MAX);
        let phnum = header.phnum(endian, data).map_err(malformed)?;
        let table_end = (phnum as u64)
            .checked_mul(u64::from(header.e_phentsize(endian)))
            .and_then(|size| size.checked_add(header.e_phoff(endian)));
        if table_end.is_none_or(|end| end > file_len) {
            return Err(fail(ElfErrorKind::Malformed(format!(
                "its program header table ({} entries from byte {}) runs past the end of the \
                 {file_len}-byte file; the dynamic loader refuses it (dlopen: \"cannot read file \
                 data\")",
                phnum,
                header.e_phoff(endian),
            ))));
        }
        for (i, segment) in header
            .program_headers(endian, data)
            .map_err(malformed)?
            .iter()
            .enumerate()
        {
            let (start, size) = (segment.p_offset(endian), segment.p_filesz(endian));
            if size > 0 && start.checked_add(size).is_none_or(|end| end > file_len) {
                return Err(fail(ElfErrorKind::Malformed(format!(
                    "program header {i} ({}) covers bytes {start}..{} of a {file_len}-byte file, \
                     past its end; the dynamic loader would map bytes the file does not have \
                     (loading it fails, or crashes with SIGBUS)",
                    segment_type(segment.p_type(endian)),
                    start.saturating_add(size),
                ))));
            }
            if let Some(interp) = segment.interpreter(endian, data).map_err(malformed)? {
                facts.interpreter = Some(lossy(interp));
            }
        }

        if let Some((entries, link)) = sections.dynamic(endian, data).map_err(malformed)? {
            check_dynamic(entries).map_err(|problem| fail(ElfErrorKind::Malformed(problem)))?;
            let strings = sections.strings(endian, data, link).map_err(malformed)?;
            for entry in entries {
                let Some(tag) = entry.tag32(endian) else {
                    continue;
                };
                if !matches!(
                    tag,
                    elf::DT_NEEDED | elf::DT_SONAME | elf::DT_RPATH | elf::DT_RUNPATH
                ) {
                    continue;
                }
                let value = u32::try_from(entry.d_val.get(endian))
                    .ok()
                    .and_then(|at| strings.get(at).ok())
                    .ok_or_else(|| {
                        fail(ElfErrorKind::Malformed(
                            "a .dynamic entry names a string outside .dynstr".to_string(),
                        ))
                    })?;
                let value = lossy(value);
                match tag {
                    elf::DT_NEEDED => facts.needed.push(value),
                    elf::DT_SONAME => facts.soname = Some(value),
                    elf::DT_RPATH => facts.rpath.extend(split_search_path(&value)),
                    _ => facts.runpath.extend(split_search_path(&value)),
                }
            }
        }

        if let Some((mut needs, link)) = sections.gnu_verneed(endian, data).map_err(malformed)? {
            let strings = sections.strings(endian, data, link).map_err(malformed)?;
            while let Some((need, mut auxes)) = needs.next().map_err(malformed)? {
                let mut versions = Vec::new();
                while let Some(aux) = auxes.next().map_err(malformed)? {
                    versions.push(lossy(aux.name(endian, strings).map_err(malformed)?));
                }
                facts.version_needs.push(VersionNeed {
                    file: lossy(need.file(endian, strings).map_err(malformed)?),
                    versions,
                });
            }
        }

        let versions = sections.versions(endian, data).map_err(malformed)?;
        let dynsym = sections
            .symbols(endian, data, elf::SHT_DYNSYM)
            .map_err(malformed)?;
        for (index, sym) in dynsym.enumerate().skip(1) {
            let mut symbol = read_symbol(sym, dynsym.strings()).map_err(malformed)?;
            if let Some(versions) = &versions {
                let version_index = versions.version_index(endian, SymbolIndex(index.0));
                if let Some(version) = versions.version(version_index).map_err(malformed)? {
                    symbol.version = Some(lossy(version.name()));
                    symbol.version_hidden = version_index.is_hidden();
                }
            }
            facts.dynamic_symbols.push(symbol);
        }

        let symtab = sections
            .symbols(endian, data, elf::SHT_SYMTAB)
            .map_err(malformed)?;
        for sym in symtab.iter().skip(1) {
            if sym.st_bind() == elf::STB_LOCAL {
                continue;
            }
            facts
                .static_symbols
                .push(read_symbol(sym, symtab.strings()).map_err(malformed)?);
        }

        // The GNU property types from 0xc0000000 on are processor-specific:
        // an aarch64 file's same numbers mean its BTI/PAC features.
        for section in sections.iter().filter(|_| arch == Arch::X86_64) {
            if let Some(notes) = section.notes(endian, data).map_err(malformed)? {
                if let Some(bits) = isa_needed_bits(notes).map_err(malformed)? {
                    facts.x86_isa_needed = Some(X86IsaLevel::from_needed_bits(bits));
                }
            }
        }
        Ok(facts)
    }

    /// True when the file defines the function `name` in `.dynsym`.
    pub fn defines_function(&self, name: &str) -> bool {
        self.dynamic_symbols
            .iter()
            .any(|s| s.defined && s.kind == SymbolKind::Func && s.name == name)
    }

    /// True when the file is the CPython extension module its file name says
    /// (`foo.cpython-311-x86_64-linux-gnu.so` defines `PyInit_foo`), the
    /// test auditwheel uses.
    pub fn is_extension_module(&self, file_name: &str) -> bool {
        let module = file_name.split('.').next().unwrap_or_default();
        self.defines_function(&format!("PyInit_{module}"))
    }
}

/// True when `data` starts with the ELF magic.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(&elf::ELFMAG)
}

/// The bytes of the `.nv_fatbin` section, if the file has one.
pub fn nv_fatbin_section<'a>(member: &str, data: &'a [u8]) -> Result<Option<&'a [u8]>, ElfError> {
    let Some((offset, size)) = nv_fatbin_range(member, data)? else {
        return Ok(None);
    };
    Ok(data.get(offset as usize..(offset + size) as usize))
}

/// Where the `.nv_fatbin` section's bytes are in the file, `(offset, size)`,
/// if it has one; checked to lie inside the file.
pub fn nv_fatbin_range<'d, R: ReadRef<'d>>(
    member: &str,
    data: R,
) -> Result<Option<(u64, u64)>, ElfError> {
    let fail = |kind| ElfError {
        member: member.to_string(),
        kind,
    };
    let (_, sections, _) = parse_header(data).map_err(fail)?;
    let Some((_, section)) = sections.section_by_name(LE, NV_FATBIN_SECTION.as_bytes()) else {
        return Ok(None);
    };
    let Some((offset, size)) = section.file_range(LE) else {
        return Ok(None);
    };
    let len = data.len().unwrap_or(0);
    if offset.checked_add(size).is_none_or(|end| end > len) {
        return Err(fail(ElfErrorKind::Malformed(format!(
            "section {NV_FATBIN_SECTION} runs past the end of the file"
        ))));
    }
    Ok(Some((offset, size)))
}

/// A `.dynamic` section must hold known tags up to a `DT_NULL`.
fn check_dynamic(entries: &[elf::Dyn64<LE>]) -> Result<(), String> {
    for (i, entry) in entries.iter().enumerate() {
        let tag = entry.d_tag.get(LE);
        if tag == 0 {
            return Ok(());
        }
        let known = (0..=37).contains(&tag) // DT_NULL .. DT_RELRENT
            || (0x6000_000d..=0x6fff_ffff).contains(&tag) // OS-specific, GNU's among them
            || (0x7000_0000..=0x7fff_ffff).contains(&tag); // processor-specific
        if !known {
            return Err(format!(
                "its .dynamic section is corrupt: entry {i} has the tag {tag:#x}, which no ELF \
                 or GNU specification defines"
            ));
        }
    }
    Err("its .dynamic section is corrupt: no DT_NULL entry ends it".to_string())
}

/// A program header type as `readelf -l` names it.
fn segment_type(p_type: u32) -> String {
    match p_type {
        elf::PT_LOAD => "LOAD".to_string(),
        elf::PT_DYNAMIC => "DYNAMIC".to_string(),
        elf::PT_INTERP => "INTERP".to_string(),
        elf::PT_NOTE => "NOTE".to_string(),
        elf::PT_PHDR => "PHDR".to_string(),
        elf::PT_TLS => "TLS".to_string(),
        elf::PT_GNU_EH_FRAME => "GNU_EH_FRAME".to_string(),
        elf::PT_GNU_RELRO => "GNU_RELRO".to_string(),
        elf::PT_GNU_PROPERTY => "GNU_PROPERTY".to_string(),
        other => format!("type {other:#x}"),
    }
}

fn parse_header<'d, R: ReadRef<'d>>(
    data: R,
) -> Result<(&'d Header, SectionTable<'d, Header, R>, Arch), ElfErrorKind> {
    let ident_len = data.len().unwrap_or(0).min(6);
    let ident = data.read_bytes_at(0, ident_len).unwrap_or_default();
    if !is_elf(ident) {
        let start: Vec<String> = ident.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Err(ElfErrorKind::NotElf(start.join(" ")));
    }
    // e_ident[EI_CLASS] and e_ident[EI_DATA]
    match ident.get(4) {
        Some(&elf::ELFCLASS64) => {}
        Some(&elf::ELFCLASS32) => return Err(ElfErrorKind::WrongClass),
        _ => return Err(ElfErrorKind::Malformed("unknown ELF class".into())),
    }
    match ident.get(5) {
        Some(&elf::ELFDATA2LSB) => {}
        Some(&elf::ELFDATA2MSB) => return Err(ElfErrorKind::WrongEndian),
        _ => return Err(ElfErrorKind::Malformed("unknown ELF data encoding".into())),
    }
    let malformed = |e: object::read::Error| ElfErrorKind::Malformed(e.to_string());
    let header = Header::parse(data).map_err(malformed)?;
    let machine = header.e_machine(LE);
    let arch = Arch::of_elf_machine(machine).ok_or(ElfErrorKind::WrongMachine(machine))?;
    let sections = header.sections(LE, data).map_err(malformed)?;
    Ok((header, sections, arch))
}

fn read_symbol<'d, R: ReadRef<'d>>(
    sym: &elf::Sym64<LE>,
    strings: StringTable<'d, R>,
) -> Result<ElfSymbol, object::read::Error> {
    let binding = match sym.st_bind() {
        elf::STB_LOCAL => SymbolBinding::Local,
        elf::STB_GLOBAL => SymbolBinding::Global,
        elf::STB_WEAK => SymbolBinding::Weak,
        elf::STB_GNU_UNIQUE => SymbolBinding::GnuUnique,
        other => SymbolBinding::Other(other),
    };
    let kind = match sym.st_type() {
        elf::STT_NOTYPE => SymbolKind::NoType,
        elf::STT_OBJECT => SymbolKind::Object,
        elf::STT_FUNC => SymbolKind::Func,
        elf::STT_SECTION => SymbolKind::Section,
        elf::STT_FILE => SymbolKind::File,
        elf::STT_COMMON => SymbolKind::Common,
        elf::STT_TLS => SymbolKind::Tls,
        elf::STT_GNU_IFUNC => SymbolKind::GnuIfunc,
        other => SymbolKind::Other(other),
    };
    Ok(ElfSymbol {
        name: lossy(sym.name(LE, strings)?),
        version: None,
        version_hidden: false,
        defined: !sym.is_undefined(LE),
        binding,
        kind,
    })
}

/// The `GNU_PROPERTY_X86_ISA_1_NEEDED` bits of an `NT_GNU_PROPERTY_TYPE_0` note.
fn isa_needed_bits(
    mut notes: NoteIterator<'_, Header>,
) -> Result<Option<u32>, object::read::Error> {
    while let Some(note) = notes.next()? {
        let Some(mut properties) = note.gnu_properties(LE) else {
            continue;
        };
        while let Some(property) = properties.next()? {
            if property.pr_type() == elf::GNU_PROPERTY_X86_ISA_1_NEEDED {
                return property.data_u32(LE).map(Some);
            }
        }
    }
    Ok(None)
}

fn split_search_path(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(':')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_elf_is_a_typed_error_naming_the_member() {
        let err = ElfFacts::parse("pkg/_ext.so", b"#!/bin/sh\n").unwrap_err();
        assert_eq!(err.member, "pkg/_ext.so");
        assert_eq!(err.kind, ElfErrorKind::NotElf("23 21 2f 62".into()));
        assert!(err.to_string().starts_with("pkg/_ext.so: not an ELF file"));
    }

    #[test]
    fn class_endianness_and_truncation_are_told_apart() {
        let mut ident = elf::ELFMAG.to_vec();
        ident.extend([elf::ELFCLASS32, elf::ELFDATA2LSB]);
        assert_eq!(
            ElfFacts::parse("a", &ident).unwrap_err().kind,
            ElfErrorKind::WrongClass
        );
        ident[4] = elf::ELFCLASS64;
        ident[5] = elf::ELFDATA2MSB;
        assert_eq!(
            ElfFacts::parse("a", &ident).unwrap_err().kind,
            ElfErrorKind::WrongEndian
        );
        ident[5] = elf::ELFDATA2LSB;
        assert!(matches!(
            ElfFacts::parse("a", &ident).unwrap_err().kind,
            ElfErrorKind::Malformed(_)
        ));
    }

    #[test]
    fn isa_levels_take_the_highest_bit() {
        assert_eq!(X86IsaLevel::from_needed_bits(0), X86IsaLevel::Baseline);
        assert_eq!(X86IsaLevel::from_needed_bits(1), X86IsaLevel::Baseline);
        assert_eq!(X86IsaLevel::from_needed_bits(0b11), X86IsaLevel::V2);
        assert_eq!(X86IsaLevel::from_needed_bits(0b111), X86IsaLevel::V3);
        assert_eq!(X86IsaLevel::from_needed_bits(0b1001), X86IsaLevel::V4);
        assert_eq!(
            X86IsaLevel::from_needed_bits(0x11),
            X86IsaLevel::Unknown(0x11)
        );
    }

    #[test]
    fn search_paths_split_at_colons() {
        let parts: Vec<String> = split_search_path("$ORIGIN::/opt/lib").collect();
        assert_eq!(parts, ["$ORIGIN", "/opt/lib"]);
    }
}
