//! One streaming pass over every member of a wheel: what the checks need to
//! know about each, gathered while its bytes go by once.
//!
//! In: a [`WheelFile`]. Out: a [`MemberScan`] per member, in archive order —
//! its size, its digest with the algorithm its RECORD row names, the build
//! paths it leaks ([`leaks`]), and, for a member that starts with the ELF
//! magic or is named like a shared object, its [`ElfFacts`] and CUDA fat
//! binary — or the [`WheelError`] of the first member (in archive order) that
//! does not inflate.
//!
//! Every image nvcc compressed in an ELF member's fat binary is
//! decompressed and scanned too ([`CompressedImage`]), whatever its header
//! claims ([`images`]), and so are those of any fat-binary container the
//! member embeds outside `.nv_fatbin` (found by its magic as the bytes
//! stream) and those of a standalone fat binary (a member that starts with
//! the magic or is named `*.fatbin`); with [`ScanOptions::sizes`], every
//! image is deflated for the size report.
//!
//! Memory stays bounded whatever the wheel holds: a member streams through
//! one buffer; an ELF member up to [`ELF_IN_MEMORY`] is kept whole to be
//! parsed, a larger one is written to an unlinked temporary file and parsed
//! from there, reading only its headers and tables, then its compressed
//! image payloads, one per thread on up to [`MAX_WORKERS`] threads (never
//! its code); a compressed image streams out of its decoder in bounded
//! chunks. A large member's containers are decompressed while it still
//! streams, on idle CPU time (the private module `ahead`). Members are
//! scanned on up to [`MAX_WORKERS`] threads, the largest first.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use object::read::{ReadCache, ReadRef};

use super::ahead::{Ahead, MagicHits, Taken};
use super::elf::{self, ElfError, ElfErrorKind, ElfFacts};
use super::fatbin::{self, Compression, Fatbin, ImageBytes, ImageEntry};
use super::images::{self, ImageProblem, Inflated, deflated_size};
use super::leaks::{LeakScan, LeakStream, ScanKind};
use crate::wheel::writer::DEFLATE_LEVEL;
use crate::wheel::zip::ZipEntry;
use crate::wheel::{RecordHasher, WheelError, WheelFile};

/// The largest ELF member parsed in memory; larger ones are parsed from a
/// temporary file.
pub const ELF_IN_MEMORY: u64 = 32 << 20;
/// How many members are scanned at once at most.
pub const MAX_WORKERS: usize = 4;
/// Bytes inflated per read.
const CHUNK: usize = 1 << 20;
/// A member at least this large is inflated on a thread of its own while
/// this one hashes and scans it.
const PIPELINE_MIN: u64 = 16 << 20;
/// Chunks in flight between the two.
const PIPELINE_DEPTH: usize = 2;
/// The most places an ELF member's bytes may hold the fat-binary magic
/// (torch's libraries: some 3,000, one per container of `.nv_fatbin`);
/// past it the rest are not checked, and the audit says so.
pub const MAX_CONTAINER_HITS: usize = 1 << 20;

/// What one streaming pass learnt about a member.
#[derive(Debug)]
pub struct MemberScan {
    pub name: String,
    pub size: u64,
    pub unix_mode: Option<u32>,
    /// With the algorithm of its RECORD row; `None` when RECORD has no
    /// usable hash for it.
    pub digest: Option<Vec<u8>>,
    /// Build-machine paths in its bytes.
    pub leaks: Option<LeakScan>,
    /// Present when it was read as an ELF file.
    pub elf: Option<Result<ElfScan, ElfError>>,
    /// Every image nvcc compressed (`--compress-mode`) in the member's fat
    /// binaries, whose bytes the scan of the member cannot see: what
    /// decompressing it gave. For an ELF member, those of `.nv_fatbin` and
    /// of every container found elsewhere in its bytes (named with where it
    /// lies), which a loader may hand the driver as well; for a standalone
    /// fat binary (a `.fatbin` file, for `cuModuleLoad`), its own.
    pub images: Vec<CompressedImage>,
    /// Container headers were sought in the member's bytes, and there were
    /// more than [`MAX_CONTAINER_HITS`]: those past it were not checked.
    pub containers_unchecked: bool,
}

/// An ELF member's facts and its CUDA fat binary.
#[derive(Debug)]
pub struct ElfScan {
    pub facts: ElfFacts,
    /// `None` without a `.nv_fatbin` section; `Err` says why it does not parse.
    pub fatbin: Option<Result<Fatbin, String>>,
    /// What each image of that fat binary weighs; empty when it has none
    /// or it does not parse.
    pub fatbin_bytes: Vec<ImageBytes>,
}

/// One compressed image of a fat binary, decompressed and scanned.
#[derive(Debug, Clone)]
pub struct CompressedImage {
    /// nvcc's name for it: `sm_90`.
    pub name: String,
    pub compression: Compression,
    /// Its payload's bytes as stored, and the size its header claims.
    pub stored: u64,
    pub claimed: u64,
    /// How many bytes it gave, and what is wrong with it.
    pub inflated: Inflated,
    /// Build-machine paths in the bytes it gave.
    pub leaks: Option<LeakScan>,
}

/// What the scan computes beyond what every check needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Deflate every image for the size report's "deflated" column
    /// (`--sizes`): as costly as deflating the fat binaries once more.
    pub sizes: bool,
}

/// Scans every member of `wheel`.
pub fn scan_members(wheel: &WheelFile) -> Result<Vec<MemberScan>, WheelError> {
    scan_members_with(wheel, ScanOptions::default())
}

/// [`scan_members`], computing what `options` asks for besides.
pub fn scan_members_with(
    wheel: &WheelFile,
    options: ScanOptions,
) -> Result<Vec<MemberScan>, WheelError> {
    let members: Vec<&ZipEntry> = wheel.members().collect();
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(members[i].compressed_size));
    let scanned = in_parallel(
        &order,
        || vec![0u8; CHUNK],
        |buffer, &i| (i, scan_member(wheel, members[i], buffer, options)),
    );
    let mut slots: Vec<Option<Result<MemberScan, WheelError>>> =
        members.iter().map(|_| None).collect();
    for (i, scan) in scanned {
        slots[i] = Some(scan);
    }
    slots
        .into_iter()
        .map(|slot| slot.expect("every member was scanned"))
        .collect()
}

/// Where an ELF candidate's bytes go while it streams.
enum Capture {
    /// Not an ELF candidate.
    None,
    Memory(Vec<u8>),
    File(File),
}

fn scan_member(
    wheel: &WheelFile,
    entry: &ZipEntry,
    buffer: &mut [u8],
    options: ScanOptions,
) -> Result<MemberScan, WheelError> {
    let mut sink = Sink::new(wheel, entry, options);
    let mut reader = wheel.stream(entry);
    if entry.size < PIPELINE_MIN {
        loop {
            let n = reader
                .read(&mut buffer[..CHUNK])
                .map_err(|e| wheel.stream_error(e))?;
            if n == 0 {
                break;
            }
            sink.consume(&buffer[..n])?;
        }
        return sink.finish();
    }
    // A large member: one thread inflates, this one hashes, scans and keeps,
    // with at most PIPELINE_DEPTH chunks in flight.
    let (full_tx, full_rx) =
        mpsc::sync_channel::<std::io::Result<(Vec<u8>, usize)>>(PIPELINE_DEPTH);
    let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(PIPELINE_DEPTH + 1);
    for _ in 0..=PIPELINE_DEPTH {
        free_tx
            .send(vec![0u8; CHUNK])
            .expect("room for every buffer");
    }
    let consumer = &mut sink;
    // `move`: the receiving ends live in this closure, so an error returned
    // from it drops them and the inflating thread stops instead of waiting.
    std::thread::scope(move |scope| {
        scope.spawn(move || {
            while let Ok(mut chunk) = free_rx.recv() {
                let read = reader.read(&mut chunk).map(|n| (chunk, n));
                let end = !matches!(&read, Ok((_, n)) if *n > 0);
                if full_tx.send(read).is_err() || end {
                    break;
                }
            }
        });
        loop {
            let (chunk, n) = full_rx
                .recv()
                .expect("the inflating thread ends with an empty chunk or an error")
                .map_err(|e| wheel.stream_error(e))?;
            if n == 0 {
                break;
            }
            consumer.consume(&chunk[..n])?;
            // The inflating thread may have stopped on an error already.
            let _ = free_tx.send(chunk);
        }
        Ok(())
    })?;
    sink.finish()
}

/// Where a member's bytes go as they stream: the RECORD hasher, the leak
/// scanner, and, for an ELF candidate, memory or a temporary file.
struct Sink<'a> {
    wheel: &'a WheelFile,
    entry: &'a ZipEntry,
    options: ScanOptions,
    hasher: Option<RecordHasher>,
    leaks: LeakStream,
    capture: Capture,
    /// Where a captured member's bytes hold the fat-binary magic.
    magic: MagicHits,
    /// A large captured member's compressed images, done while it streams.
    ahead: Option<Ahead>,
    /// It starts with the ELF magic or is named like a shared object.
    elf_candidate: bool,
    first: bool,
}

impl<'a> Sink<'a> {
    fn new(wheel: &'a WheelFile, entry: &'a ZipEntry, options: ScanOptions) -> Sink<'a> {
        Sink {
            wheel,
            entry,
            options,
            hasher: wheel.record().hasher_for(&entry.name),
            leaks: LeakStream::new(ScanKind::of(&entry.name)),
            capture: Capture::None,
            magic: MagicHits::default(),
            ahead: None,
            elf_candidate: false,
            first: true,
        }
    }

    fn temp_error(&self, error: std::io::Error) -> WheelError {
        temp_error(self.wheel, self.entry, error)
    }

    fn consume(&mut self, new: &[u8]) -> Result<(), WheelError> {
        let name = self.entry.name.as_str();
        if self.first {
            self.first = false;
            self.elf_candidate = elf::is_elf(new) || named_like_shared_object(name);
            let fat_binary = new.starts_with(&fatbin::MAGIC_BYTES) || name.ends_with(".fatbin");
            if self.elf_candidate || fat_binary {
                self.capture = if self.entry.size <= ELF_IN_MEMORY {
                    Capture::Memory(Vec::with_capacity(self.entry.size as usize))
                } else {
                    let file = tempfile::tempfile().map_err(|e| self.temp_error(e))?;
                    self.ahead = Ahead::start(&file);
                    Capture::File(file)
                };
            }
        }
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(new);
        }
        match &mut self.capture {
            Capture::None => {}
            Capture::Memory(data) => data.extend_from_slice(new),
            Capture::File(file) => {
                if let Err(error) = file.write_all(new) {
                    return Err(self.temp_error(error));
                }
            }
        }
        if !matches!(self.capture, Capture::None) {
            self.magic.feed(new);
        }
        if let Some(ahead) = self.ahead.as_mut() {
            ahead.advance(&self.magic.hits, self.magic.seen);
        }
        self.leaks.feed(new);
        Ok(())
    }

    fn finish(self) -> Result<MemberScan, WheelError> {
        let (wheel, entry) = (self.wheel, self.entry);
        let name = entry.name.as_str();
        let sizes = self.options.sizes;
        let ahead = self.ahead.map(Ahead::take).unwrap_or_default();
        let candidate = self.elf_candidate;
        let magic = &self.magic;
        let (elf, images) = match self.capture {
            Capture::None if named_like_shared_object(name) => {
                let parsed = parse_elf(name, &[][..], Payloads::Memory(&[]), sizes, &ahead);
                (Some(parsed.scan), Vec::new())
            }
            Capture::None => (None, Vec::new()),
            Capture::Memory(data) => {
                let payloads = Payloads::Memory(&data);
                parse_captured(name, &data[..], payloads, candidate, sizes, magic, &ahead)
            }
            Capture::File(file) => {
                let payloads = file.try_clone().map_err(|e| temp_error(wheel, entry, e))?;
                let cache = ReadCache::new(file);
                let payloads = Payloads::File(&payloads);
                parse_captured(name, &cache, payloads, candidate, sizes, magic, &ahead)
            }
        };
        Ok(MemberScan {
            name: name.to_string(),
            size: entry.size,
            unix_mode: entry.unix_mode,
            digest: self.hasher.map(RecordHasher::finish),
            leaks: self.leaks.finish(),
            elf,
            images,
            containers_unchecked: self.magic.overflow,
        })
    }
}

fn temp_error(wheel: &WheelFile, entry: &ZipEntry, error: std::io::Error) -> WheelError {
    WheelError::Read {
        path: wheel.path().to_path_buf(),
        error: std::io::Error::new(
            error.kind(),
            format!(
                "cannot write a temporary copy of member `{}` to parse it: {error}",
                entry.name
            ),
        ),
    }
}

/// Where the payloads of a fat binary's images are read from: the ELF
/// file's bytes in memory, or its temporary copy (read directly, one
/// payload at a time, not through the parser's cache, which keeps every
/// range it reads).
#[derive(Clone, Copy)]
enum Payloads<'a> {
    Memory(&'a [u8]),
    File(&'a File),
}

impl<'a> Payloads<'a> {
    fn read(self, offset: u64, len: u64) -> std::io::Result<Cow<'a, [u8]>> {
        let bad = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the end");
        match self {
            Payloads::Memory(data) => {
                let start = usize::try_from(offset).map_err(|_| bad())?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|n| start.checked_add(n))
                    .ok_or_else(bad)?;
                data.get(start..end).map(Cow::Borrowed).ok_or_else(bad)
            }
            Payloads::File(file) => {
                let mut buffer = vec![0u8; usize::try_from(len).map_err(|_| bad())?];
                file.read_exact_at(&mut buffer, offset)?;
                Ok(Cow::Owned(buffer))
            }
        }
    }
}

/// What a member's captured bytes give: its ELF facts when it is an ELF
/// candidate, and the compressed images of every fat binary in it.
fn parse_captured<'d, R: ReadRef<'d>>(
    name: &str,
    data: R,
    payloads: Payloads<'_>,
    elf_candidate: bool,
    sizes: bool,
    magic: &MagicHits,
    ahead: &Taken,
) -> (Option<Result<ElfScan, ElfError>>, Vec<CompressedImage>) {
    let (elf, mut images, section, place) = if elf_candidate {
        let parsed = parse_elf(name, data, payloads, sizes, ahead);
        let place = format!(", outside {}", elf::NV_FATBIN_SECTION);
        (Some(parsed.scan), parsed.images, parsed.section, place)
    } else {
        (None, Vec::new(), None, String::new())
    };
    images.extend(outside_containers(
        data,
        payloads,
        section,
        &magic.hits,
        ahead,
        &place,
    ));
    (elf, images)
}

/// What [`parse_elf`] gives.
struct ParsedElf {
    scan: Result<ElfScan, ElfError>,
    /// The compressed images of its `.nv_fatbin`.
    images: Vec<CompressedImage>,
    /// Where that section lies: offset and size.
    section: Option<(u64, u64)>,
}

/// An ELF file's facts, the compressed images of its `.nv_fatbin`, and
/// where that section lies.
fn parse_elf<'d, R: ReadRef<'d>>(
    name: &str,
    data: R,
    payloads: Payloads<'_>,
    sizes: bool,
    ahead: &Taken,
) -> ParsedElf {
    let facts = match ElfFacts::parse_from(name, data) {
        Ok(facts) => facts,
        Err(error) => {
            return ParsedElf {
                scan: Err(error),
                images: Vec::new(),
                section: None,
            };
        }
    };
    let range = elf::nv_fatbin_range(name, data);
    let fatbin = match &range {
        Ok(None) => None,
        Ok(Some((offset, size))) => Some(
            fatbin::parse_at(data, *offset, *size)
                .map_err(|error| format!("section {}: {error}", elf::NV_FATBIN_SECTION)),
        ),
        Err(ElfError {
            kind: ElfErrorKind::Malformed(problem),
            ..
        }) => Some(Err(format!("is a malformed ELF file: {problem}"))),
        Err(error) => Some(Err(format!("is {}", error.kind))),
    };
    let mut fatbin_bytes = Vec::new();
    let mut images = Vec::new();
    if let (Some(Ok(_)), Ok(Some((offset, size)))) = (&fatbin, &range) {
        let (offset, size) = (*offset, *size);
        // The section parsed above, so the walk does not fail.
        let entries = fatbin::entries(data, offset, size).unwrap_or_default();
        for (bytes, image) in in_parallel(
            &entries,
            || (),
            |_, entry| image_of(entry, payloads, sizes, ahead),
        ) {
            fatbin_bytes.push(bytes);
            images.extend(image);
        }
    }
    let scan = ElfScan {
        facts,
        fatbin,
        fatbin_bytes,
    };
    ParsedElf {
        scan: Ok(scan),
        images,
        section: range.ok().flatten(),
    }
}

/// The compressed images of every fat-binary container that starts at one
/// of `hits` outside `section` (`.nv_fatbin`'s offset and size): nvcc puts
/// its fat binary in that section, but a library may embed one anywhere
/// (`.rodata`, for `cuModuleLoadData`), and the leak check must see what
/// the driver would; a standalone fat binary is all containers. A hit that
/// is not a plausible container (the four bytes by chance) is passed over.
/// Each image is named with where its container lies and `place`
/// (`, outside .nv_fatbin`).
fn outside_containers<'d, R: ReadRef<'d>>(
    data: R,
    payloads: Payloads<'_>,
    section: Option<(u64, u64)>,
    hits: &[u64],
    ahead: &Taken,
    place: &str,
) -> Vec<CompressedImage> {
    let mut images = Vec::new();
    let mut past = 0;
    for &at in hits {
        let in_section = section.is_some_and(|(offset, size)| at >= offset && at - offset < size);
        if at < past || in_section {
            continue;
        }
        let Some(len) = fatbin::container_extent(data, at) else {
            continue;
        };
        let Ok(entries) = fatbin::entries(data, at, len) else {
            continue;
        };
        past = at + len;
        for entry in entries
            .iter()
            .filter(|e| e.compression != Compression::None)
        {
            let mut image = match ahead.get(entry) {
                Some(image) => image.clone(),
                None => check_image(
                    entry,
                    payloads.read(entry.payload_offset, entry.payload_len),
                ),
            };
            image.name = format!("{} (in a fat binary at byte {at}{place})", image.name);
            images.push(image);
        }
    }
    images
}

/// What one image weighs and, when nvcc compressed it, what decompressing
/// and scanning it gave.
fn image_of(
    entry: &ImageEntry,
    payloads: Payloads<'_>,
    sizes: bool,
    ahead: &Taken,
) -> (ImageBytes, Option<CompressedImage>) {
    let mut bytes = ImageBytes {
        image: entry.image.clone(),
        stored: entry.payload_len,
        deflated: None,
    };
    if entry.compression == Compression::None && !sizes {
        return (bytes, None);
    }
    if let (Some(image), false) = (ahead.get(entry), sizes) {
        return (bytes, Some(image.clone()));
    }
    let payload = payloads.read(entry.payload_offset, entry.payload_len);
    if let (Ok(payload), true) = (&payload, sizes) {
        bytes.deflated = Some(deflated_size(payload, DEFLATE_LEVEL as u8));
    }
    if entry.compression == Compression::None {
        return (bytes, None);
    }
    (bytes, Some(check_image(entry, payload)))
}

/// `f` of every item, in order, on up to [`MAX_WORKERS`] threads that take
/// the items in turn, each with its own `state` (a buffer), made once: the
/// members of a wheel, largest first, and the images of one big library
/// (torch's hold thousands), one payload per thread at a time.
fn in_parallel<T: Sync, S, R: Send>(
    items: &[T],
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_WORKERS)
        .min(items.len());
    if threads <= 1 {
        let mut state = state();
        return items.iter().map(|item| f(&mut state, item)).collect();
    }
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut state = state();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else {
                        break;
                    };
                    let result = f(&mut state, item);
                    *slots[i].lock().expect("no worker panics") = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("no worker panics")
                .expect("every item was done")
        })
        .collect()
}

/// Decompresses one compressed image, scanning every byte it gives for
/// leaked paths, whatever its header claims.
pub(super) fn check_image(
    entry: &ImageEntry,
    payload: std::io::Result<Cow<'_, [u8]>>,
) -> CompressedImage {
    let mut leaks = LeakStream::new(ScanKind::Everything);
    let inflated = match payload {
        Ok(payload) if entry.compression == Compression::Lz4 => images::inflate_lz4(
            &payload,
            u64::from(entry.compressed_len),
            entry.uncompressed_size,
            &mut |chunk| leaks.feed(chunk),
        ),
        Ok(payload) => images::inflate(
            entry.compression,
            &payload,
            entry.uncompressed_size,
            &mut |chunk| leaks.feed(chunk),
        ),
        Err(error) => Inflated {
            bytes: 0,
            problem: Some(ImageProblem::Corrupt {
                after: 0,
                error: format!("cannot read its payload: {error}"),
            }),
        },
    };
    CompressedImage {
        name: entry.image.name(),
        compression: entry.compression,
        stored: entry.payload_len,
        claimed: entry.uncompressed_size,
        inflated,
        leaks: leaks.finish(),
    }
}

/// `libfoo.so`, `libfoo.so.1.2`, `_ext.cpython-311-x86_64-linux-gnu.so`.
pub fn named_like_shared_object(member: &str) -> bool {
    let file_name = member.rsplit('/').next().unwrap_or(member);
    let Some(at) = file_name.rfind(".so") else {
        return false;
    };
    file_name[at + 3..]
        .split('.')
        .skip(1)
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && (file_name.len() == at + 3 || file_name.as_bytes()[at + 3] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_object_names() {
        for yes in [
            "a/libfoo.so",
            "libfoo.so.1",
            "libfoo.so.1.2.3",
            "pkg/_ext.cpython-311-x86_64-linux-gnu.so",
            "pkg/_C.abi3.so",
        ] {
            assert!(named_like_shared_object(yes), "{yes}");
        }
        for no in [
            "a/foo.so.py",
            "libfoo.so.x",
            "README",
            "a.sofa",
            "pkg/so/x.py",
            "x.so.",
        ] {
            assert!(!named_like_shared_object(no), "{no}");
        }
    }
}
