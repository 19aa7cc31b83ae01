//! A streaming zip reader for wheels: the central directory in memory, each
//! member inflated from disk on demand, nothing else held.
//!
//! In: a path. Out: a [`ZipArchive`] listing every entry (name, kind, mode,
//! sizes), and for any entry an [`EntryReader`] that yields its bytes while
//! checking them; or a [`ZipError`] that says what is wrong and why it
//! matters. Peak memory is the central directory plus two buffers, whatever
//! the archive holds.
//!
//! Refused before any member is inflated:
//! - an input that is not a regular file (a FIFO, a device, a directory),
//!   checked on its metadata, so `/dev/zero` or a FIFO is never read;
//! - a central directory that is not where the end record says, has more
//!   entries than [`MAX_ENTRIES`], or spans more than one disk;
//! - a member whose local header names another path than its central
//!   directory entry (extractors disagree on which name to write), whose
//!   data overlaps another member's or the central directory (the
//!   overlapping-file zip bomb), or that is encrypted or compressed with
//!   anything but stored or DEFLATE;
//! - a member declared larger than [`RATIO_FREE_SIZE`] that inflates more
//!   than [`MAX_RATIO`] times, and an archive whose members add up to more
//!   than [`MAX_RATIO`] times its size beyond [`RATIO_FREE_TOTAL`] (zip
//!   bombs: honest DEFLATE of code and data stays far below).
//!
//! While a member streams, its output may never exceed its declared size,
//! must reach it exactly, and must match the CRC-32 the central directory
//! records; the compressed stream must end exactly at its declared length.
//! Sizes use ZIP64 where the 32-bit fields overflow.

mod entry;

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::terminal::terminal_safe;

pub use entry::EntryReader;

/// Most entries a central directory may list.
pub const MAX_ENTRIES: usize = 1 << 20;
/// Largest central directory read into memory.
pub const MAX_CENTRAL_DIRECTORY: u64 = 256 << 20;
/// How many times its compressed size a large member may inflate to.
pub const MAX_RATIO: u64 = 100;
/// A member up to this size may have any ratio (ELF padding compresses
/// hundreds of times: pillow's `libXau` is 2 MB at 224:1).
pub const RATIO_FREE_SIZE: u64 = 16 << 20;
/// Members may add up to this much whatever the archive's size.
pub const RATIO_FREE_TOTAL: u64 = 1 << 30;

const EOCD_SIGNATURE: u32 = 0x0605_4b50;
const EOCD_LEN: usize = 22;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_EOCD_SIGNATURE: u32 = 0x0606_4b50;
const ZIP64_EOCD_LEN: usize = 56;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const CENTRAL_LEN: usize = 46;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const LOCAL_LEN: usize = 30;
const ZIP64_EXTRA_ID: u16 = 0x0001;
const FLAG_ENCRYPTED: u16 = 0x0001;
const FLAG_DATA_DESCRIPTOR: u16 = 0x0008;
const METHOD_STORED: u16 = 0;
pub(crate) const METHOD_DEFLATE: u16 = 8;

/// What an archive entry is, from its name and the Unix file type in its
/// external attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
}

impl EntryKind {
    /// `a symbolic link`, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "a regular file",
            EntryKind::Directory => "a directory",
            EntryKind::Symlink => "a symbolic link",
            EntryKind::Fifo => "a FIFO",
            EntryKind::CharDevice => "a character device",
            EntryKind::BlockDevice => "a block device",
            EntryKind::Socket => "a socket",
        }
    }
}

/// One entry of the central directory, checked against its local header.
#[derive(Debug, Clone)]
pub struct ZipEntry {
    /// The path inside the archive, as stored (UTF-8).
    pub name: String,
    pub kind: EntryKind,
    /// The Unix mode stored in the external attributes, if any.
    pub unix_mode: Option<u32>,
    /// Declared uncompressed size.
    pub size: u64,
    pub compressed_size: u64,
    pub(crate) method: u16,
    pub(crate) crc32: u32,
    /// Where the local header starts in the file.
    header_offset: u64,
    /// Where the compressed bytes start in the file.
    pub(crate) data_offset: u64,
}

/// Why an archive or one of its members cannot be read. Each message says
/// what is wrong; the caller adds the file's path.
#[derive(Debug, thiserror::Error)]
pub enum ZipError {
    #[error("cannot read it: {0}")]
    Io(#[from] io::Error),
    #[error(
        "it is {0}, not a regular file; give the path of a .whl file (nothing was read from it)"
    )]
    NotAFile(&'static str),
    #[error(
        "not a readable zip archive (no end-of-central-directory record in its last 64 KiB); it \
         is truncated or corrupt: download or build it again"
    )]
    NoEndRecord,
    #[error(
        "not a readable zip archive: {trailing} trailing bytes follow its \
         end-of-central-directory record (at byte {record}, ending at byte {ends}), and a zip \
         archive must end with that record; something appended data to the file: download or \
         build it again, or cut the extra bytes off (truncate -s {ends})"
    )]
    TrailingBytes {
        record: u64,
        ends: u64,
        trailing: u64,
    },
    #[error(
        "not a readable zip archive (its central directory is damaged: {0}); it is truncated or \
         corrupt: download or build it again"
    )]
    CentralDirectory(String),
    #[error("the zip archive spans several disks; wheels are single-file zip archives")]
    MultiDisk,
    #[error(
        "the zip archive lists {0} entries, more than the {MAX_ENTRIES} a wheel reader accepts; \
         this is not an honest wheel"
    )]
    TooManyEntries(u64),
    #[error(
        "member name {0} is not UTF-8; wheel member names must be UTF-8 (RECORD lists them so)"
    )]
    NameNotUtf8(String),
    #[error(
        "member `{central}`: its local header names it {local}; zip tools disagree on which name \
         to extract (pip refuses such an archive, some extractors write the other path), so the \
         wheel is refused: rebuild it with a zip writer that writes one name"
    )]
    NameMismatch { central: String, local: String },
    #[error("member `{member}`: {problem}; the archive is corrupt: download or build it again")]
    LocalHeader { member: String, problem: String },
    #[error(
        "member `{member}`'s data overlaps {other}; overlapping members are a zip-bomb \
         technique, so the wheel is refused"
    )]
    Overlap { member: String, other: String },
    #[error("member `{0}` is encrypted; wheels cannot be encrypted")]
    Encrypted(String),
    #[error(
        "member `{member}` uses compression method {method}; wheels use stored (0) or DEFLATE \
         (8): rebuild it with a standard wheel writer"
    )]
    Method { member: String, method: u16 },
    #[error(
        "member `{member}` declares {size} bytes from {compressed} compressed ({ratio}:1), more \
         than {MAX_RATIO}:1 for a member over {} MiB: a zip bomb, refused before inflating it",
        RATIO_FREE_SIZE >> 20
    )]
    MemberRatio {
        member: String,
        size: u64,
        compressed: u64,
        ratio: u64,
    },
    #[error(
        "its members declare {total} bytes in all from a {archive}-byte archive, more than \
         {MAX_RATIO} times its size (and more than {} MiB): a zip bomb, refused before inflating \
         it", RATIO_FREE_TOTAL >> 20
    )]
    TotalRatio { total: u64, archive: u64 },
    #[error(
        "member `{member}` is stored uncompressed but declares {size} bytes with {compressed} \
         stored; the archive is corrupt"
    )]
    StoredSize {
        member: String,
        size: u64,
        compressed: u64,
    },
    #[error(
        "member `{member}` inflates to {actual} bytes where the archive declares {declared}; \
         declared and actual sizes must agree (a zip bomb lies about them), so the wheel is refused"
    )]
    SizeMismatch {
        member: String,
        declared: u64,
        actual: String,
    },
    #[error(
        "member `{member}`: its DEFLATE data is corrupt ({problem}); download or build it again"
    )]
    Inflate { member: String, problem: String },
    #[error(
        "member `{0}` fails its CRC-32 check; the archive is corrupt: download or build it again"
    )]
    Crc(String),
}

/// An open archive: its entries, and the file to stream them from.
#[derive(Debug)]
pub struct ZipArchive {
    file: File,
    len: u64,
    entries: Vec<ZipEntry>,
}

impl ZipArchive {
    /// Opens `path`, refusing anything but a regular file before reading a
    /// byte of it, then reads and checks the central directory and every
    /// local header.
    pub fn open(path: &Path) -> Result<ZipArchive, ZipError> {
        let metadata = std::fs::metadata(path)?;
        check_regular(&metadata.file_type())?;
        // O_NONBLOCK: if the path was swapped for a FIFO since, opening it
        // does not wait for a writer; the check below then refuses it.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        ZipArchive::from_file(file)
    }

    /// Reads an archive from an open file, which must be a regular file.
    pub fn from_file(file: File) -> Result<ZipArchive, ZipError> {
        let metadata = file.metadata()?;
        check_regular(&metadata.file_type())?;
        let len = metadata.len();
        let entries = read_entries(&file, len)?;
        Ok(ZipArchive { file, len, entries })
    }

    /// Every entry, in central-directory order.
    pub fn entries(&self) -> &[ZipEntry] {
        &self.entries
    }

    /// The archive file's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Always false: an archive has at least its end record.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// A reader of entry `index`'s bytes, checked as they stream.
    pub fn reader(&self, index: usize) -> EntryReader<'_> {
        EntryReader::new(&self.file, &self.entries[index])
    }

    /// Entry `index`'s bytes, when it is at most `limit` bytes.
    pub fn read_all(&self, index: usize, limit: u64) -> Result<Option<Vec<u8>>, ZipError> {
        let entry = &self.entries[index];
        if entry.size > limit {
            return Ok(None);
        }
        let mut data = Vec::with_capacity(entry.size as usize);
        self.reader(index)
            .read_to_end(&mut data)
            .map_err(unwrap_zip_error)?;
        Ok(Some(data))
    }
}

/// The [`ZipError`] an [`EntryReader`] wrapped in an `io::Error`.
pub fn unwrap_zip_error(error: io::Error) -> ZipError {
    if error.get_ref().is_some_and(|inner| inner.is::<ZipError>()) {
        let inner = error.into_inner().expect("checked above");
        *inner.downcast::<ZipError>().expect("checked above")
    } else {
        ZipError::Io(error)
    }
}

/// `Ok` for a regular file; what else it is, as an error.
pub fn check_regular(file_type: &std::fs::FileType) -> Result<(), ZipError> {
    if file_type.is_file() {
        return Ok(());
    }
    Err(ZipError::NotAFile(crate::file_kind::kind(*file_type)))
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn read_exact_at(file: &File, len: usize, offset: u64) -> Result<Vec<u8>, ZipError> {
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// Where the central directory is and how many entries it claims.
struct Directory {
    offset: u64,
    size: u64,
    entries: u64,
    /// Where the central directory must end: the end record (or its ZIP64 form).
    end: u64,
}

fn find_directory(file: &File, len: u64) -> Result<Directory, ZipError> {
    if len < EOCD_LEN as u64 {
        return Err(ZipError::NoEndRecord);
    }
    let tail_len = len.min(EOCD_LEN as u64 + u64::from(u16::MAX));
    let tail = read_exact_at(file, tail_len as usize, len - tail_len)?;
    // The last record whose comment runs exactly to the end of the file.
    let at = (0..=tail.len() - EOCD_LEN)
        .rev()
        .find(|&at| {
            u32_at(&tail, at) == EOCD_SIGNATURE
                && at + EOCD_LEN + usize::from(u16_at(&tail, at + 20)) == tail.len()
        })
        .ok_or_else(|| trailing_bytes(&tail, len - tail_len))?;
    let eocd_pos = len - tail_len + at as u64;
    let record = &tail[at..at + EOCD_LEN];
    if u16_at(record, 4) != 0 || u16_at(record, 6) != 0 || u16_at(record, 8) != u16_at(record, 10) {
        return Err(ZipError::MultiDisk);
    }
    let mut dir = Directory {
        entries: u64::from(u16_at(record, 10)),
        size: u64::from(u32_at(record, 12)),
        offset: u64::from(u32_at(record, 16)),
        end: eocd_pos,
    };
    let zip64 = dir.entries == 0xFFFF || dir.size == 0xFFFF_FFFF || dir.offset == 0xFFFF_FFFF;
    if eocd_pos >= ZIP64_LOCATOR_LEN {
        let locator = read_exact_at(
            file,
            ZIP64_LOCATOR_LEN as usize,
            eocd_pos - ZIP64_LOCATOR_LEN,
        )?;
        if u32_at(&locator, 0) == ZIP64_LOCATOR_SIGNATURE {
            let record_pos = u64_at(&locator, 8);
            if u32_at(&locator, 4) != 0 || u32_at(&locator, 16) > 1 {
                return Err(ZipError::MultiDisk);
            }
            if record_pos + ZIP64_EOCD_LEN as u64 > eocd_pos - ZIP64_LOCATOR_LEN {
                return Err(ZipError::CentralDirectory(format!(
                    "the ZIP64 end record at byte {record_pos} runs past its locator"
                )));
            }
            let record = read_exact_at(file, ZIP64_EOCD_LEN, record_pos)?;
            if u32_at(&record, 0) != ZIP64_EOCD_SIGNATURE {
                return Err(ZipError::CentralDirectory(format!(
                    "no ZIP64 end record at byte {record_pos}, where its locator points"
                )));
            }
            if u32_at(&record, 16) != 0 || u32_at(&record, 20) != 0 {
                return Err(ZipError::MultiDisk);
            }
            dir = Directory {
                entries: u64_at(&record, 32),
                size: u64_at(&record, 40),
                offset: u64_at(&record, 48),
                end: record_pos,
            };
        } else if zip64 {
            return Err(ZipError::CentralDirectory(
                "the end record calls for ZIP64, but there is no ZIP64 locator".to_string(),
            ));
        }
    }
    if dir.offset.checked_add(dir.size) != Some(dir.end) {
        return Err(ZipError::CentralDirectory(format!(
            "it is declared at bytes {}..{}+{}, but the end record is at byte {}; the archive \
             is truncated, or has bytes before or inside it",
            dir.offset, dir.offset, dir.size, dir.end
        )));
    }
    if dir.entries > MAX_ENTRIES as u64 {
        return Err(ZipError::TooManyEntries(dir.entries));
    }
    if dir.size > MAX_CENTRAL_DIRECTORY {
        return Err(ZipError::CentralDirectory(format!(
            "it is {} bytes, more than the {MAX_CENTRAL_DIRECTORY} a wheel reader accepts",
            dir.size
        )));
    }
    Ok(dir)
}

/// Why no end record ends the file: [`ZipError::TrailingBytes`] when one
/// is followed by bytes its comment does not account for (`tail` starts at
/// byte `tail_start` of the file), else [`ZipError::NoEndRecord`].
fn trailing_bytes(tail: &[u8], tail_start: u64) -> ZipError {
    (0..=tail.len() - EOCD_LEN)
        .rev()
        .find(|&at| {
            u32_at(tail, at) == EOCD_SIGNATURE
                && at + EOCD_LEN + usize::from(u16_at(tail, at + 20)) < tail.len()
        })
        .map_or(ZipError::NoEndRecord, |at| {
            let ends = tail_start + (at + EOCD_LEN + usize::from(u16_at(tail, at + 20))) as u64;
            ZipError::TrailingBytes {
                record: tail_start + at as u64,
                ends,
                trailing: tail_start + tail.len() as u64 - ends,
            }
        })
}

/// A central-directory entry before its local header is read.
struct RawEntry {
    name: String,
    flags: u16,
    method: u16,
    crc32: u32,
    compressed_size: u64,
    size: u64,
    header_offset: u64,
    external: u32,
}

/// A name's bytes as a reader can see them: `caf\xe9.py`.
pub fn escape_name(bytes: &[u8]) -> String {
    format!("`{}`", bytes.escape_ascii())
}

fn parse_central(cd: &[u8], count: u64) -> Result<Vec<RawEntry>, ZipError> {
    let damaged = |at: usize, what: &str| {
        ZipError::CentralDirectory(format!("{what} at byte {at} of the central directory"))
    };
    let mut entries = Vec::with_capacity(count.min(1 << 16) as usize);
    let mut at = 0;
    for _ in 0..count {
        let header = cd
            .get(at..at + CENTRAL_LEN)
            .ok_or_else(|| damaged(at, "an entry is cut off"))?;
        if u32_at(header, 0) != CENTRAL_SIGNATURE {
            return Err(damaged(at, "an entry has no signature"));
        }
        let (name_len, extra_len, comment_len) = (
            usize::from(u16_at(header, 28)),
            usize::from(u16_at(header, 30)),
            usize::from(u16_at(header, 32)),
        );
        let name_at = at + CENTRAL_LEN;
        let extra_at = name_at + name_len;
        let next = extra_at + extra_len + comment_len;
        if next > cd.len() {
            return Err(damaged(at, "an entry's name or extra field is cut off"));
        }
        let name_bytes = &cd[name_at..extra_at];
        let name = String::from_utf8(name_bytes.to_vec())
            .map_err(|_| ZipError::NameNotUtf8(escape_name(name_bytes)))?;
        let mut entry = RawEntry {
            name,
            flags: u16_at(header, 8),
            method: u16_at(header, 10),
            crc32: u32_at(header, 16),
            compressed_size: u64::from(u32_at(header, 20)),
            size: u64::from(u32_at(header, 24)),
            header_offset: u64::from(u32_at(header, 42)),
            external: u32_at(header, 38),
        };
        if u16_at(header, 34) != 0 && u16_at(header, 34) != 0xFFFF {
            return Err(ZipError::MultiDisk);
        }
        apply_zip64(&mut entry, &cd[extra_at..extra_at + extra_len])
            .map_err(|what| damaged(at, &format!("`{}`: {what}", entry.name)))?;
        entries.push(entry);
        at = next;
    }
    if at != cd.len() {
        return Err(damaged(at, "bytes follow the last entry"));
    }
    Ok(entries)
}

/// Replaces the saturated 32-bit fields by those of the ZIP64 extra field.
fn apply_zip64(entry: &mut RawEntry, mut extra: &[u8]) -> Result<(), &'static str> {
    let wanted = [
        entry.size == 0xFFFF_FFFF,
        entry.compressed_size == 0xFFFF_FFFF,
        entry.header_offset == 0xFFFF_FFFF,
    ];
    if !wanted.contains(&true) {
        return Ok(());
    }
    while extra.len() >= 4 {
        let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
        let body = extra.get(4..4 + len).ok_or("an extra field is cut off")?;
        if id == ZIP64_EXTRA_ID {
            let mut fields = body.chunks_exact(8).map(|c| u64_at(c, 0));
            let mut next = |want: bool, value: &mut u64| -> Result<(), &'static str> {
                if want {
                    *value = fields.next().ok_or("its ZIP64 extra field is too short")?;
                }
                Ok(())
            };
            next(wanted[0], &mut entry.size)?;
            next(wanted[1], &mut entry.compressed_size)?;
            next(wanted[2], &mut entry.header_offset)?;
            return Ok(());
        }
        extra = &extra[4 + len..];
    }
    Err("its sizes call for a ZIP64 extra field, and it has none")
}

fn kind_of(name: &str, unix_mode: Option<u32>) -> EntryKind {
    let file_type = unix_mode.unwrap_or(0) & 0o170_000;
    match file_type {
        0o120_000 => EntryKind::Symlink,
        0o010_000 => EntryKind::Fifo,
        0o020_000 => EntryKind::CharDevice,
        0o060_000 => EntryKind::BlockDevice,
        0o140_000 => EntryKind::Socket,
        _ if name.ends_with('/') => EntryKind::Directory,
        _ => EntryKind::File,
    }
}

fn read_entries(file: &File, len: u64) -> Result<Vec<ZipEntry>, ZipError> {
    let dir = find_directory(file, len)?;
    let cd = read_exact_at(file, dir.size as usize, dir.offset)?;
    let raw = parse_central(&cd, dir.entries)?;
    drop(cd);

    let mut total: u64 = 0;
    let mut entries = Vec::with_capacity(raw.len());
    for entry in raw {
        entries.push(check_entry(file, entry, dir.offset)?);
    }
    // Each member's data must end before the next one starts, and the last
    // before the central directory.
    let mut by_offset: Vec<(u64, u64, &str)> = entries
        .iter()
        .map(|e| {
            (
                e.header_offset,
                e.data_offset + e.compressed_size,
                e.name.as_str(),
            )
        })
        .collect();
    by_offset.sort();
    for pair in by_offset.windows(2) {
        let ((_, end, name), (start, _, other)) = (pair[0], pair[1]);
        if end > start {
            return Err(ZipError::Overlap {
                member: terminal_safe(name).into_owned(),
                other: format!("member `{}`", terminal_safe(other)),
            });
        }
    }
    for entry in &entries {
        total = total.saturating_add(entry.size);
    }
    if total > RATIO_FREE_TOTAL && total / MAX_RATIO > len {
        return Err(ZipError::TotalRatio {
            total,
            archive: len,
        });
    }
    Ok(entries)
}

fn check_entry(file: &File, raw: RawEntry, cd_offset: u64) -> Result<ZipEntry, ZipError> {
    // names in messages are escaped: a name may hold a newline or ESC
    let member = || terminal_safe(&raw.name).into_owned();
    let local_error = |problem: String| ZipError::LocalHeader {
        member: member(),
        problem,
    };
    if raw.flags & FLAG_ENCRYPTED != 0 {
        return Err(ZipError::Encrypted(member()));
    }
    if raw.method != METHOD_STORED && raw.method != METHOD_DEFLATE {
        return Err(ZipError::Method {
            member: member(),
            method: raw.method,
        });
    }
    if raw.method == METHOD_STORED && raw.size != raw.compressed_size {
        return Err(ZipError::StoredSize {
            member: member(),
            size: raw.size,
            compressed: raw.compressed_size,
        });
    }
    if raw.size > RATIO_FREE_SIZE && raw.size / MAX_RATIO > raw.compressed_size {
        return Err(ZipError::MemberRatio {
            member: member(),
            size: raw.size,
            compressed: raw.compressed_size,
            ratio: raw.size / raw.compressed_size.max(1),
        });
    }
    if raw.header_offset + LOCAL_LEN as u64 > cd_offset {
        return Err(local_error(format!(
            "its local header at byte {} lies past the start of the central directory",
            raw.header_offset
        )));
    }
    let header = read_exact_at(file, LOCAL_LEN, raw.header_offset)?;
    if u32_at(&header, 0) != LOCAL_SIGNATURE {
        return Err(local_error(format!(
            "no local header at byte {}, where the central directory points",
            raw.header_offset
        )));
    }
    let (name_len, extra_len) = (u16_at(&header, 26), u16_at(&header, 28));
    let local_len = (LOCAL_LEN + usize::from(name_len) + usize::from(extra_len)) as u64;
    let data_offset = raw.header_offset + local_len;
    if data_offset
        .checked_add(raw.compressed_size)
        .is_none_or(|end| end > cd_offset)
    {
        return Err(ZipError::Overlap {
            member: member(),
            other: "the central directory (or runs past the end of the file)".to_string(),
        });
    }
    let local_name = read_exact_at(
        file,
        usize::from(name_len),
        raw.header_offset + LOCAL_LEN as u64,
    )?;
    if local_name != raw.name.as_bytes() {
        return Err(ZipError::NameMismatch {
            central: member(),
            local: escape_name(&local_name),
        });
    }
    let local_flags = u16_at(&header, 6);
    if local_flags & FLAG_DATA_DESCRIPTOR == 0 {
        let (crc, csize, size) = (
            u32_at(&header, 14),
            u32_at(&header, 18),
            u32_at(&header, 22),
        );
        let agrees = |local: u32, central: u64| local == 0xFFFF_FFFF || u64::from(local) == central;
        if crc != raw.crc32 || !agrees(csize, raw.compressed_size) || !agrees(size, raw.size) {
            return Err(local_error(
                "its local header's CRC-32 or sizes differ from the central directory's"
                    .to_string(),
            ));
        }
    }
    let unix_mode = Some(raw.external >> 16).filter(|&mode| mode != 0);
    Ok(ZipEntry {
        kind: kind_of(&raw.name, unix_mode),
        name: raw.name,
        unix_mode,
        size: raw.size,
        compressed_size: raw.compressed_size,
        method: raw.method,
        crc32: raw.crc32,
        header_offset: raw.header_offset,
        data_offset,
    })
}
