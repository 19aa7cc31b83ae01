//! Extracts the [`SymbolTable`] of shared libraries from wheels,
//! directories and plain ELF files, in bounded memory.
//!
//! In: paths. Out: one table of every ELF shared object found (`ET_DYN`,
//! executables built as PIE included; symlinks, linker scripts, CPython
//! extension modules and other files skipped).
//!
//! Only the ELF header, the section headers and the sections the loader
//! reads for symbols (`.dynsym`, `.dynamic`, `.gnu.version*` and their
//! string tables) are read: a plain file at those offsets; a wheel member
//! (deflated, so not seekable; read with [`crate::wheel::zip`], which
//! refuses zip bombs) in two streaming passes — one to the section
//! headers near its end, one that keeps only those sections. A gigabyte
//! `libtorch_cuda.so` costs its symbol tables in memory, a few megabytes.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{Dyn, FileHeader, SectionHeader, Sym};
use object::read::{ReadRef, SymbolIndex};

use super::{ExportedSymbol, LibraryExports, SymbolTable, check_token};
use crate::wheel::Arch;
use crate::wheel::zip::{EntryKind, ZipArchive};

type Header = elf::FileHeader64<LE>;

/// The most bytes of symbol sections one library may need; far above
/// torch's largest (about 10 MB), far below what would hurt.
const MAX_SECTION_BYTES: u64 = 1 << 30;
const ELF_HEADER_SIZE: u64 = std::mem::size_of::<Header>() as u64;
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// The table of every shared library in `inputs`, each a wheel, a
/// directory (searched recursively) or an ELF file.
pub fn extract_paths(inputs: &[PathBuf]) -> Result<SymbolTable> {
    extract_paths_of(inputs, None)
}

/// [`extract_paths`] keeping only `arch`'s libraries when given: a cross
/// toolkit holds the libraries of the programs that run here (nvcc's
/// NVVM) beside the target's runtime.
pub fn extract_paths_of(inputs: &[PathBuf], arch: Option<Arch>) -> Result<SymbolTable> {
    let mut found: Vec<Found> = Vec::new();
    let mut sources = Vec::new();
    for input in inputs {
        sources.push(
            input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| input.display().to_string()),
        );
        add_libraries(input, &mut found)?;
    }
    if let Some(arch) = arch {
        found.retain(|(_, this, _)| *this == arch);
    }
    merge(sources, found)
}

/// Adds `(where, exports)` for every shared library in `input` to `found`.
fn add_libraries(input: &Path, found: &mut Vec<Found>) -> Result<()> {
    let meta = std::fs::metadata(input).with_context(|| format!("reading {}", input.display()))?;
    if meta.is_dir() {
        return walk(input, found);
    }
    let file = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let mut magic = [0u8; 4];
    let n = file.read_at(&mut magic, 0)?;
    if magic[..n] == *ZIP_MAGIC {
        extract_wheel(input, found)
    } else if magic[..n] == elf::ELFMAG {
        add_file(input, file, meta.len(), found)
    } else {
        bail!(
            "{} is neither a wheel, an ELF shared library nor a directory: give torch's wheel, \
             a directory of libraries (such as a sysroot) or the libraries themselves",
            input.display()
        )
    }
}

/// The regular ELF files under `dir`, in sorted order; symlinks are left
/// out (their targets are found under their own names).
fn walk(dir: &Path, found: &mut Vec<Found>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()
        .with_context(|| format!("listing {}", dir.display()))?;
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            walk(&path, found)?;
        } else if meta.is_file() {
            let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
            let mut magic = [0u8; 4];
            if file.read_at(&mut magic, 0)? == 4 && magic == elf::ELFMAG {
                add_file(&path, file, meta.len(), found)?;
            }
        }
    }
    Ok(())
}

/// Adds the exports of the ELF file `file` (at `path`, `len` bytes) if it is a shared object.
fn add_file(path: &Path, file: File, len: u64, found: &mut Vec<Found>) -> Result<()> {
    let name = path.display().to_string();
    if let Some((arch, exports)) = exports_of(&name, &mut PlainFile { file, len })? {
        found.push((name, arch, exports));
    }
    Ok(())
}

fn extract_wheel(path: &Path, found: &mut Vec<Found>) -> Result<()> {
    let archive = ZipArchive::open(path).with_context(|| format!("reading {}", path.display()))?;
    for (index, entry) in archive.entries().iter().enumerate() {
        if entry.kind != EntryKind::File || entry.size < ELF_HEADER_SIZE {
            continue;
        }
        let mut source = ZipMember {
            archive: &archive,
            index,
            len: entry.size,
        };
        let where_ = format!("{}:{}", path.display(), entry.name);
        let magic = source
            .read_spans(std::slice::from_ref(&(0..4)))
            .with_context(|| format!("reading {where_}"))?;
        if magic[0] != elf::ELFMAG {
            continue;
        }
        if let Some((arch, exports)) = exports_of(&where_, &mut source)? {
            found.push((where_, arch, exports));
        }
    }
    Ok(())
}

/// A shared library found: where, its architecture, its exports.
type Found = (String, Arch, LibraryExports);

/// One table of `found`, sorted by soname; two different libraries with one
/// soname are an error naming both, and so are libraries of two
/// architectures.
fn merge(sources: Vec<String>, mut found: Vec<Found>) -> Result<SymbolTable> {
    found.sort_by(|a, b| (&a.2.soname, &a.0).cmp(&(&b.2.soname, &b.0)));
    let mut arch: Option<(Arch, String)> = None;
    for (at, this, _) in &found {
        match &arch {
            None => arch = Some((*this, at.clone())),
            Some((first, first_at)) if first != this => bail!(
                "{first_at} is an {first} library but {at} is an {this} one: one table holds \
                 one architecture's libraries; extract each architecture's into its own"
            ),
            Some(_) => {}
        }
    }
    let mut libraries: Vec<LibraryExports> = Vec::new();
    let mut first_at: Vec<String> = Vec::new();
    for (at, _, exports) in found {
        if let Some(last) = libraries.last() {
            if last.soname == exports.soname {
                if *last != exports {
                    bail!(
                        "two different libraries are named {}: {} and {}; extract them into \
                         separate tables, or give only the one the wheel loads",
                        exports.soname,
                        first_at.last().map(String::as_str).unwrap_or_default(),
                        at
                    );
                }
                continue;
            }
        }
        first_at.push(at);
        libraries.push(exports);
    }
    Ok(SymbolTable {
        sources,
        arch: arch.map(|(arch, _)| arch),
        libraries,
    })
}

/// Somewhere the bytes of one file can be read at given offsets.
trait Spans {
    fn len(&self) -> u64;
    /// The bytes of each range, which are sorted, disjoint and inside the file.
    fn read_spans(&mut self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>>;
}

struct PlainFile {
    file: File,
    len: u64,
}

impl Spans for PlainFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_spans(&mut self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        ranges
            .iter()
            .map(|r| {
                let mut bytes = vec![0u8; (r.end - r.start) as usize];
                self.file.read_exact_at(&mut bytes, r.start)?;
                Ok(bytes)
            })
            .collect()
    }
}

/// A deflated wheel member: each read is one pass over its stream.
struct ZipMember<'a> {
    archive: &'a ZipArchive,
    index: usize,
    len: u64,
}

impl Spans for ZipMember<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_spans(&mut self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        let mut stream = self.archive.reader(self.index);
        let mut at = 0u64;
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            io::copy(&mut (&mut stream).take(r.start - at), &mut io::sink())?;
            let mut bytes = vec![0u8; (r.end - r.start) as usize];
            stream.read_exact(&mut bytes)?;
            at = r.end;
            out.push(bytes);
        }
        Ok(out)
    }
}

/// The parts of a file that were read, 8-byte aligned so that `object` can
/// view its tables in place; every other byte reads as missing.
struct Sparse {
    len: u64,
    /// (file offset, bytes), sorted and disjoint.
    spans: Vec<(u64, Vec<u64>, usize)>,
}

impl Sparse {
    fn read(source: &mut dyn Spans, wanted: &[Range<u64>]) -> io::Result<Sparse> {
        let len = source.len();
        let mut ranges: Vec<Range<u64>> = wanted
            .iter()
            .map(|r| (r.start & !7)..(r.end.div_ceil(8) * 8).min(len))
            .filter(|r| r.start < r.end)
            .collect();
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        let bytes = source.read_spans(&merged)?;
        let spans = merged
            .iter()
            .zip(bytes)
            .map(|(r, b)| {
                let mut words = vec![0u64; b.len().div_ceil(8)];
                object::pod::bytes_of_slice_mut(&mut words)[..b.len()].copy_from_slice(&b);
                (r.start, words, b.len())
            })
            .collect();
        Ok(Sparse { len, spans })
    }

    /// The span holding `offset`, as (its start, its bytes).
    fn span_at(&self, offset: u64) -> Option<(u64, &[u8])> {
        let i = self.spans.partition_point(|(start, _, _)| *start <= offset);
        let (start, words, n) = self.spans.get(i.checked_sub(1)?)?;
        let bytes = &object::pod::bytes_of_slice(words)[..*n];
        (offset < start + *n as u64).then_some((*start, bytes))
    }
}

impl<'a> ReadRef<'a> for &'a Sparse {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if size == 0 {
            return Ok(&[]);
        }
        let (start, bytes) = self.span_at(offset).ok_or(())?;
        let from = (offset - start) as usize;
        let to = from
            .checked_add(usize::try_from(size).map_err(|_| ())?)
            .ok_or(())?;
        bytes.get(from..to).ok_or(())
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let (start, bytes) = self.span_at(range.start).ok_or(())?;
        let from = (range.start - start) as usize;
        let to = ((range.end - start) as usize).min(bytes.len());
        let rest = bytes.get(from..to).ok_or(())?;
        let end = rest.iter().position(|&b| b == delimiter).ok_or(())?;
        Ok(&rest[..end])
    }
}

/// The exports of the ELF file in `source` (named `name` in errors), or
/// `None` if it is not a shared object.
fn exports_of(name: &str, source: &mut dyn Spans) -> Result<Option<(Arch, LibraryExports)>> {
    let head = Sparse::read(source, std::slice::from_ref(&(0..ELF_HEADER_SIZE)))
        .with_context(|| format!("reading the ELF header of {name}"))?;
    let header = Header::parse(&head).map_err(|e| malformed(name, e))?;
    if header.e_type(LE) != elf::ET_DYN {
        return Ok(None);
    }
    let Some(arch) = Arch::of_elf_machine(header.e_machine(LE)) else {
        bail!(
            "{name} is neither an x86_64 nor an aarch64 library (machine {})",
            header.e_machine(LE)
        );
    };
    // The section headers, then the sections the symbols live in.
    let shoff: u64 = header.e_shoff(LE);
    let shsize = u64::from(header.e_shentsize(LE)) * u64::from(header.e_shnum(LE));
    if shoff == 0 || header.e_shnum(LE) == 0 {
        bail!("{name} has no section headers, so its symbols cannot be read");
    }
    let heads = Sparse::read(source, &[0..ELF_HEADER_SIZE, shoff..shoff + shsize])
        .with_context(|| format!("reading the section headers of {name}"))?;
    let header = Header::parse(&heads).map_err(|e| malformed(name, e))?;
    let sections = header
        .sections(LE, &heads)
        .map_err(|e| malformed(name, e))?;
    let wanted_types = [
        elf::SHT_DYNSYM,
        elf::SHT_DYNAMIC,
        elf::SHT_GNU_VERSYM,
        elf::SHT_GNU_VERDEF,
        elf::SHT_GNU_VERNEED,
    ];
    let mut wanted = vec![0..ELF_HEADER_SIZE, shoff..shoff + shsize];
    let mut total = 0u64;
    for section in sections.iter() {
        if !wanted_types.contains(&section.sh_type(LE)) {
            continue;
        }
        let linked = sections.section(object::SectionIndex(section.sh_link(LE) as usize));
        for s in std::iter::once(section).chain(linked.ok()) {
            if let Some((offset, size)) = s.file_range(LE) {
                if offset
                    .checked_add(size)
                    .is_none_or(|end| end > source.len())
                {
                    bail!("{name} is malformed: a section runs past the end of the file");
                }
                total += size;
                wanted.push(offset..offset + size);
            }
        }
    }
    if total > MAX_SECTION_BYTES {
        bail!("{name} claims {total} bytes of symbol sections, more than cuwheel reads");
    }
    let data = Sparse::read(source, &wanted).with_context(|| format!("reading {name}"))?;
    Ok(read_exports(name, &data)?.map(|exports| (arch, exports)))
}

fn read_exports(name: &str, data: &Sparse) -> Result<Option<LibraryExports>> {
    let m = |e| malformed(name, e);
    let header = Header::parse(data).map_err(m)?;
    let sections = header.sections(LE, data).map_err(m)?;
    let mut soname = None;
    let mut needed = Vec::new();
    if let Some((entries, link)) = sections.dynamic(LE, data).map_err(m)? {
        let strings = sections.strings(LE, data, link).map_err(m)?;
        let string = |entry: &elf::Dyn64<LE>| {
            u32::try_from(entry.d_val(LE))
                .ok()
                .and_then(|at| strings.get(at).ok())
                .map(text)
                .ok_or_else(|| {
                    anyhow::anyhow!("{name}: a .dynamic entry names no string of .dynstr")
                })
        };
        for entry in entries {
            match entry.tag32(LE) {
                Some(elf::DT_NEEDED) => needed.push(string(entry)?),
                Some(elf::DT_SONAME) => soname = Some(string(entry)?),
                Some(elf::DT_NULL) => break,
                _ => {}
            }
        }
    }
    let has_soname = soname.is_some();
    let soname =
        soname.unwrap_or_else(|| name.rsplit(['/', ':']).next().unwrap_or(name).to_string());

    let mut versions = Vec::new();
    if let Some((mut defs, link)) = sections.gnu_verdef(LE, data).map_err(m)? {
        let strings = sections.strings(LE, data, link).map_err(m)?;
        while let Some((def, mut auxes)) = defs.next().map_err(m)? {
            if def.vd_flags.get(LE) & elf::VER_FLG_BASE != 0 {
                continue;
            }
            if let Some(aux) = auxes.next().map_err(m)? {
                versions.push(text(aux.name(LE, strings).map_err(m)?));
            }
        }
    }
    versions.sort();
    versions.dedup();

    let table = sections.versions(LE, data).map_err(m)?;
    let dynsym = sections.symbols(LE, data, elf::SHT_DYNSYM).map_err(m)?;
    let mut symbols = Vec::new();
    for (index, sym) in dynsym.enumerate().skip(1) {
        if sym.is_undefined(LE) || sym.st_bind() == elf::STB_LOCAL {
            continue;
        }
        let symbol_name = text(sym.name(LE, dynsym.strings()).map_err(m)?);
        let (version, hidden) = match &table {
            Some(table) => {
                let at = table.version_index(LE, SymbolIndex(index.0));
                let version = table.version(at).map_err(m)?.map(|v| text(v.name()));
                (version, at.is_hidden())
            }
            None => (None, false),
        };
        // The absolute symbols naming each version definition are no exports.
        if version.as_ref() == Some(&symbol_name) {
            continue;
        }
        symbols.push(ExportedSymbol {
            name: symbol_name,
            version,
            hidden,
        });
    }
    symbols.sort();
    symbols.dedup();
    // A CPython extension module (no SONAME, a `PyInit_` function) is imported,
    // never needed by another file: it provides nothing to the loader.
    if !has_soname && symbols.iter().any(|s| s.name.starts_with("PyInit_")) {
        return Ok(None);
    }
    for token in std::iter::once(&soname).chain(&needed).chain(&versions) {
        check_token("name", token).map_err(|p| anyhow::anyhow!("{name}: {p}"))?;
    }
    for s in &symbols {
        check_token("symbol", &s.name).map_err(|p| anyhow::anyhow!("{name}: {p}"))?;
    }
    Ok(Some(LibraryExports {
        soname,
        needed,
        versions,
        symbols,
    }))
}

fn malformed(name: &str, error: object::read::Error) -> anyhow::Error {
    anyhow::anyhow!("{name} is not a well-formed ELF library: {error}")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source of bytes in memory that counts what it was asked for.
    struct Memory(Vec<u8>);

    impl Spans for Memory {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_spans(&mut self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
            Ok(ranges
                .iter()
                .map(|r| self.0[r.start as usize..r.end as usize].to_vec())
                .collect())
        }
    }

    #[test]
    fn sparse_reads_only_inside_what_was_read() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let sparse = Sparse::read(&mut Memory(bytes.clone()), &[10..20, 500..503]).unwrap();
        // aligned outwards to 8 bytes
        assert_eq!(sparse.read_bytes_at(8, 16).unwrap(), &bytes[8..24]);
        assert!(sparse.read_bytes_at(20, 8).is_err(), "past the span");
        assert_eq!(sparse.read_bytes_at(500, 3).unwrap(), &bytes[500..503]);
        assert!(sparse.read_bytes_at(300, 1).is_err(), "never read");
        assert_eq!(
            sparse.read_bytes_at_until(500..504, 245).unwrap(),
            &bytes[500..501]
        );
        assert!(
            sparse.read_bytes_at_until(8..24, 250).is_err(),
            "no delimiter"
        );
    }

    #[test]
    fn not_elf_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "hello").unwrap();
        let err = extract_paths(&[path]).unwrap_err().to_string();
        assert!(err.contains("neither a wheel"), "{err}");
    }
}
