//! The CUDA fat binary nvcc embeds in a host object's `.nv_fatbin` section:
//! which SASS (`sm_80`) and PTX (`compute_90`) images it holds, and whether
//! each is compressed.
//!
//! In: the section's bytes, in memory or as a range of any [`ReadRef`] (a
//! file read on demand: only the headers are read, never the images). Out:
//! [`Fatbin`], or a [`FatbinError`] saying at which offset the bytes stop
//! making sense. Never panics on input.
//!
//! NVIDIA does not document the container. The layout below follows the
//! reverse-engineered descriptions in n-eiling/cuda-fatbin-decompression
//! (`fatbin-decompress.h`: header and entry fields, flag bits 0x1 64-bit,
//! 0x2 debug, 0x10 Linux host, 0x2000 compressed), jiegec/fatbinary
//! (`fatbinary.ksy`) and GrigoryEvko/nvopen-tools (`fatbin/FORMAT_SPECIFICATION.md`:
//! several containers per section, 0x8000 for zstd compression). The
//! arch-specific (`sm_90a`, flag 0x10_0000) and family-specific (`sm_100f`,
//! flag 0x20_0000) bits were measured on nvcc 13.0.88 output.
//!
//! A section is a sequence of containers, each 8-byte aligned:
//!
//! ```text
//! container: u32 magic 0xBA55ED50 | u16 version 1 | u16 header size (16) | u64 size of the entries
//! entry:     u16 kind (1 PTX, 2 ELF cubin, 8 LTO IR) | u16 | u32 entry header size (>= 64)
//!            | u64 payload size | u32 compressed size (the LZ4 block's exact length, checked
//!              on 400 images of torch 2.9.1's libtorch_cuda_linalg.so) | u32 options offset
//!            | u16 minor | u16 major | u32 arch (80 = sm_80) | u32 name offset | u32 name size
//!            | u64 flags | u64 | u64 uncompressed size | ... | payload
//! ```

use std::collections::BTreeSet;
use std::fmt;

use object::read::ReadRef;
use serde::Serialize;

const MAGIC: u32 = 0xBA55_ED50;
/// A container header's bytes: magic, version, header size, body size.
pub const CONTAINER_HEADER_SIZE: usize = 16;
const ENTRY_HEADER_MIN_SIZE: usize = 64;

const KIND_PTX: u16 = 1;
const KIND_CUBIN: u16 = 2;
const KIND_LTO_IR: u16 = 8;

const FLAG_COMPRESSED_LZ4: u64 = 0x2000;
const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;

/// What an image of the fat binary holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageKind {
    /// Machine code for one GPU architecture (a cubin).
    Sass,
    /// PTX, JIT-compiled by the driver for its GPU and newer ones.
    Ptx,
    /// NVVM IR for link-time optimisation (`code=lto_80`).
    LtoIr,
    /// A kind this version of cuwheel does not know.
    Other(u16),
}

/// A GPU architecture as nvcc names it: 80 and no suffix is `sm_80`;
/// `a` (arch-specific) and `f` (family-specific) variants carry a suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuArch {
    pub number: u32,
    pub suffix: ArchSuffix,
}

/// The suffix is the config's own type: one grammar of archs.
pub use crate::spec::target::ArchSuffix;

impl fmt::Display for GpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.number, self.suffix.letter())
    }
}

/// One image of a fat binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinImage {
    pub kind: ImageKind,
    pub arch: GpuArch,
    pub compressed: bool,
}

impl FatbinImage {
    /// nvcc's name for the image: `sm_90a`, `compute_90`, `lto_80`.
    pub fn name(&self) -> String {
        match self.kind {
            ImageKind::Sass => format!("sm_{}", self.arch),
            ImageKind::Ptx => format!("compute_{}", self.arch),
            ImageKind::LtoIr => format!("lto_{}", self.arch),
            ImageKind::Other(kind) => format!("kind{kind}_{}", self.arch),
        }
    }
}

impl Serialize for FatbinImage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("FatbinImage", 3)?;
        s.serialize_field("image", &self.name())?;
        s.serialize_field("kind", &self.kind)?;
        s.serialize_field("compressed", &self.compressed)?;
        s.end()
    }
}

/// Every image of every container in a `.nv_fatbin` section, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fatbin {
    pub containers: usize,
    pub images: Vec<FatbinImage>,
}

impl Fatbin {
    /// The architectures with SASS, in numeric order.
    pub fn sass(&self) -> BTreeSet<GpuArch> {
        self.archs_of(ImageKind::Sass)
    }

    /// The architectures with PTX, in numeric order.
    pub fn ptx(&self) -> BTreeSet<GpuArch> {
        self.archs_of(ImageKind::Ptx)
    }

    /// SASS then PTX image names: `sm_80 sm_90 compute_90`.
    pub fn image_names(&self) -> Vec<String> {
        image_names(&self.sass(), &self.ptx())
    }

    fn archs_of(&self, kind: ImageKind) -> BTreeSet<GpuArch> {
        self.images
            .iter()
            .filter(|i| i.kind == kind)
            .map(|i| i.arch)
            .collect()
    }
}

/// `sm_XY` for each SASS arch, then `compute_XY` for each PTX arch.
pub fn image_names<'a>(
    sass: impl IntoIterator<Item = &'a GpuArch>,
    ptx: impl IntoIterator<Item = &'a GpuArch>,
) -> Vec<String> {
    sass.into_iter()
        .map(|a| format!("sm_{a}"))
        .chain(ptx.into_iter().map(|a| format!("compute_{a}")))
        .collect()
}

/// Where and why a fat binary section could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CUDA fat binary is malformed at byte {offset} of the section: {problem}")]
pub struct FatbinError {
    pub offset: usize,
    pub problem: String,
}

/// Parses a whole `.nv_fatbin` section.
pub fn parse(section: &[u8]) -> Result<Fatbin, FatbinError> {
    parse_at(section, 0, section.len() as u64)
}

/// Parses the `.nv_fatbin` section at `offset`, `size` bytes long, of `data`.
pub fn parse_at<'d, R: ReadRef<'d>>(
    data: R,
    offset: u64,
    size: u64,
) -> Result<Fatbin, FatbinError> {
    let section = Section {
        data,
        offset,
        len: usize::try_from(size).map_err(|_| error(0, "the section is too large"))?,
    };
    let mut images = Vec::new();
    let containers = walk(&section, &mut |entry: Entry| images.push(entry.image))?;
    if containers == 0 {
        return Err(error(0, "the section holds no container, only zeros"));
    }
    Ok(Fatbin { containers, images })
}

/// What one image of a fat binary weighs: its payload as stored in the
/// section, and, when the audit was asked (`--sizes`), that payload deflated
/// as the wheel writer deflates members (about what the image adds to the
/// wheel's file size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBytes {
    pub image: FatbinImage,
    pub stored: u64,
    pub deflated: Option<u64>,
}

/// One image of a fat binary and where its payload lies in the data the
/// section was read from, as [`entries`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEntry {
    pub image: FatbinImage,
    /// The payload's offset in the data, and its length.
    pub payload_offset: u64,
    pub payload_len: u64,
    pub compression: Compression,
    /// The payload's size once decompressed, as the entry header claims it.
    pub uncompressed_size: u64,
    /// The compressed data's length within the payload (which nvcc pads),
    /// as the entry header gives it; 0 when it does not.
    pub compressed_len: u32,
}

/// Every image of the `.nv_fatbin` section at `offset`, `size` bytes long,
/// of `data`, with where its payload lies; the payloads are not read.
pub fn entries<'d, R: ReadRef<'d>>(
    data: R,
    offset: u64,
    size: u64,
) -> Result<Vec<ImageEntry>, FatbinError> {
    let section = Section {
        data,
        offset,
        len: usize::try_from(size).map_err(|_| error(0, "the section is too large"))?,
    };
    let mut entries = Vec::new();
    walk(&section, &mut |entry: Entry| {
        entries.push(ImageEntry {
            image: entry.image,
            payload_offset: offset + entry.payload.start as u64,
            payload_len: entry.payload.len() as u64,
            compression: entry.compression,
            uncompressed_size: entry.uncompressed_size,
            compressed_len: entry.compressed_len,
        })
    })?;
    Ok(entries)
}

/// The four bytes every container starts with, as they lie in a file: what
/// the scan looks for to find containers outside `.nv_fatbin`.
pub const MAGIC_BYTES: [u8; 4] = MAGIC.to_le_bytes();

/// How long the container at `at` of `data` is (header and entries), when
/// a plausible container header starts there and the container fits in
/// `data`: how a fat binary embedded outside `.nv_fatbin` (in `.rodata`,
/// for the driver's `cuModuleLoadData`) is found. Its entries are then
/// read with [`entries`].
pub fn container_extent<'d, R: ReadRef<'d>>(data: R, at: u64) -> Option<u64> {
    let header = data.read_bytes_at(at, CONTAINER_HEADER_SIZE as u64).ok()?;
    let len = container_len(header)?;
    let end = at.checked_add(len)?;
    (end <= data.len().ok()?).then_some(len)
}

/// How many bytes a container claims (its header and entries), when
/// `header` (its first [`CONTAINER_HEADER_SIZE`] bytes or more) is a
/// plausible container header; whether the data holds that many is the
/// caller's to check.
pub fn container_len(header: &[u8]) -> Option<u64> {
    let field = |range: std::ops::Range<usize>| header.get(range);
    let version = u16::from_le_bytes(field(4..6)?.try_into().ok()?);
    let header_size = u16::from_le_bytes(field(6..8)?.try_into().ok()?);
    let body = u64::from_le_bytes(field(8..16)?.try_into().ok()?);
    if field(0..4)? != MAGIC_BYTES
        || version != 1
        || usize::from(header_size) < CONTAINER_HEADER_SIZE
    {
        return None;
    }
    u64::from(header_size).checked_add(body)
}

/// Calls `found` with every image of the `.nv_fatbin` section at `offset`,
/// `size` bytes long, of `data`, payload included, in file order.
pub fn for_each_member<'d, R: ReadRef<'d>>(
    data: R,
    offset: u64,
    size: u64,
    found: &mut dyn FnMut(FatbinMember<'d>),
) -> Result<(), FatbinError> {
    let section = Section {
        data,
        offset,
        len: usize::try_from(size).map_err(|_| error(0, "the section is too large"))?,
    };
    let mut entries = Vec::new();
    walk(&section, &mut |entry: Entry| entries.push(entry))?;
    for entry in entries {
        found(FatbinMember {
            payload: section.bytes(entry.payload.start, entry.payload.len())?,
            image: entry.image,
            compression: entry.compression,
            uncompressed_size: entry.uncompressed_size,
        });
    }
    Ok(())
}

/// Calls `found` for each entry of each container of `section`, in file
/// order; returns the number of containers.
fn walk<'d, R: ReadRef<'d>>(
    section: &Section<R>,
    found: &mut dyn FnMut(Entry),
) -> Result<usize, FatbinError> {
    let mut containers = 0;
    let mut at = 0;
    while at < section.len {
        // The linker pads each object's container with zeros to the
        // section's alignment (8 bytes for nvcc's output).
        let chunk_end = (at + 1).next_multiple_of(8).min(section.len);
        if section.bytes(at, chunk_end - at)?.iter().all(|&b| b == 0) {
            at = chunk_end;
            continue;
        }
        if at % 8 != 0 {
            return Err(error(at, "non-zero bytes between containers"));
        }
        at = parse_container(section, at, found)?;
        containers += 1;
    }
    Ok(containers)
}

pub use super::images::Compression;
use super::images::{MAX_IMAGE_BYTES, inflate_to_vec};

/// One entry of a container: its image and where its payload is.
struct Entry {
    image: FatbinImage,
    payload: std::ops::Range<usize>,
    compression: Compression,
    uncompressed_size: u64,
    compressed_len: u32,
}

/// An image with its payload, as [`members`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinMember<'a> {
    pub image: FatbinImage,
    /// The payload as stored (compressed when `compression` says so).
    pub payload: &'a [u8],
    pub compression: Compression,
    /// The payload's size once decompressed, as the entry header gives it.
    pub uncompressed_size: u64,
}

impl FatbinMember<'_> {
    /// The payload, decompressed; `None` when it does not decompress to
    /// exactly the size its header claims, or to more than
    /// [`MAX_IMAGE_BYTES`]. Nothing is allocated from the header: the bytes
    /// are gathered as they decompress ([`super::images`]).
    pub fn decompressed(&self) -> Option<Vec<u8>> {
        match self.compression {
            Compression::None => Some(self.payload.to_vec()),
            compression => inflate_to_vec(
                compression,
                self.payload,
                self.uncompressed_size,
                MAX_IMAGE_BYTES,
            ),
        }
    }
}

/// Every image of a whole `.nv_fatbin` section with its payload, in file
/// order (what `cuwheel reproduce` compares member by member).
pub fn members(section: &[u8]) -> Result<Vec<FatbinMember<'_>>, FatbinError> {
    let mut members = Vec::new();
    for_each_member(section, 0, section.len() as u64, &mut |member| {
        members.push(member)
    })?;
    Ok(members)
}

/// The section's bytes, read where they are needed.
struct Section<R> {
    data: R,
    offset: u64,
    len: usize,
}

impl<'d, R: ReadRef<'d>> Section<R> {
    fn bytes(&self, at: usize, n: usize) -> Result<&'d [u8], FatbinError> {
        at.checked_add(n)
            .filter(|&end| end <= self.len)
            .and_then(|_| {
                self.data
                    .read_bytes_at(self.offset + at as u64, n as u64)
                    .ok()
            })
            .ok_or_else(|| error(at, format!("the section ends inside a {n}-byte field")))
    }

    fn field<const N: usize>(&self, at: usize) -> Result<[u8; N], FatbinError> {
        Ok(self.bytes(at, N)?.try_into().expect("N bytes"))
    }

    fn u16(&self, at: usize) -> Result<u16, FatbinError> {
        self.field(at).map(u16::from_le_bytes)
    }

    fn u32(&self, at: usize) -> Result<u32, FatbinError> {
        self.field(at).map(u32::from_le_bytes)
    }

    fn u64(&self, at: usize) -> Result<u64, FatbinError> {
        self.field(at).map(u64::from_le_bytes)
    }
}

/// Parses the container at `start`; returns the offset just past it.
fn parse_container<'d, R: ReadRef<'d>>(
    section: &Section<R>,
    start: usize,
    found: &mut dyn FnMut(Entry),
) -> Result<usize, FatbinError> {
    let magic = section.u32(start)?;
    if magic != MAGIC {
        return Err(error(
            start,
            format!("expected the container magic 0x{MAGIC:08X}, found 0x{magic:08X}"),
        ));
    }
    let version = section.u16(start + 4)?;
    if version != 1 {
        return Err(error(
            start + 4,
            format!("unknown container version {version}"),
        ));
    }
    let header_size = usize::from(section.u16(start + 6)?);
    if header_size < CONTAINER_HEADER_SIZE {
        return Err(error(
            start + 6,
            format!("container header size {header_size} is below 16"),
        ));
    }
    let body_size = section.u64(start + 8)?;
    let end = offset_add(start, header_size as u64)
        .and_then(|body| offset_add(body, body_size))
        .filter(|&end| end <= section.len)
        .ok_or_else(|| {
            error(
                start + 8,
                format!(
                    "the container claims {body_size} bytes but the section has {} left",
                    section.len - start
                ),
            )
        })?;

    let mut at = start + header_size;
    while at < end {
        let kind = section.u16(at)?;
        let entry_header_size = section.u32(at + 4)? as usize;
        if entry_header_size < ENTRY_HEADER_MIN_SIZE {
            return Err(error(
                at + 4,
                format!("entry header size {entry_header_size} is below {ENTRY_HEADER_MIN_SIZE}"),
            ));
        }
        let payload_size = section.u64(at + 8)?;
        let arch_number = section.u32(at + 28)?;
        let flags = section.u64(at + 40)?;
        let next = offset_add(at, entry_header_size as u64)
            .and_then(|payload| offset_add(payload, payload_size))
            .filter(|&next| next <= end)
            .ok_or_else(|| {
                error(
                    at + 8,
                    format!("an entry of {payload_size} payload bytes runs past its container"),
                )
            })?;
        let kind = match kind {
            KIND_PTX => ImageKind::Ptx,
            KIND_CUBIN => ImageKind::Sass,
            KIND_LTO_IR => ImageKind::LtoIr,
            other => ImageKind::Other(other),
        };
        let suffix = if flags & FLAG_ARCH_SPECIFIC != 0 {
            ArchSuffix::ArchSpecific
        } else if flags & FLAG_FAMILY_SPECIFIC != 0 {
            ArchSuffix::FamilySpecific
        } else {
            ArchSuffix::None
        };
        let compression = if flags & FLAG_COMPRESSED_ZSTD != 0 {
            Compression::Zstd
        } else if flags & FLAG_COMPRESSED_LZ4 != 0 {
            Compression::Lz4
        } else {
            Compression::None
        };
        found(Entry {
            image: FatbinImage {
                kind,
                arch: GpuArch {
                    number: arch_number,
                    suffix,
                },
                compressed: compression != Compression::None,
            },
            payload: at + entry_header_size..next,
            compression,
            uncompressed_size: section.u64(at + 56)?,
            compressed_len: section.u32(at + 16)?,
        });
        at = next;
    }
    Ok(end)
}

fn offset_add(offset: usize, size: u64) -> Option<usize> {
    usize::try_from(size)
        .ok()
        .and_then(|s| offset.checked_add(s))
}

fn error(offset: usize, problem: impl Into<String>) -> FatbinError {
    FatbinError {
        offset,
        problem: problem.into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A container holding one entry per `(kind, arch, flags, payload size)`.
    pub(crate) fn container(entries: &[(u16, u32, u64, usize)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, arch, flags, payload) in entries {
            let mut entry = vec![0u8; ENTRY_HEADER_MIN_SIZE];
            entry[0..2].copy_from_slice(&kind.to_le_bytes());
            entry[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            entry[4..8].copy_from_slice(&(ENTRY_HEADER_MIN_SIZE as u32).to_le_bytes());
            entry[8..16].copy_from_slice(&(payload as u64).to_le_bytes());
            entry[28..32].copy_from_slice(&arch.to_le_bytes());
            entry[40..48].copy_from_slice(&flags.to_le_bytes());
            body.extend(entry);
            body.extend(std::iter::repeat_n(0xAB, payload));
        }
        let mut out = Vec::new();
        out.extend(MAGIC.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn reads_sass_and_ptx_of_several_containers() {
        let mut section = container(&[(2, 80, 0x11, 24), (1, 90, 0x8011, 5)]);
        section.extend([0, 0, 0]); // padding to the next 8-byte boundary
        section.extend(container(&[(2, 90, 0x10_0011, 8), (2, 100, 0x120_0011, 8)]));
        let fatbin = parse(&section).unwrap();
        assert_eq!(fatbin.containers, 2);
        assert_eq!(
            fatbin.image_names(),
            ["sm_80", "sm_90a", "sm_100f", "compute_90"]
        );
        let compressed: Vec<_> = fatbin.images.iter().map(|i| i.compressed).collect();
        assert_eq!(compressed, [false, true, false, false]);
    }

    #[test]
    fn garbage_is_an_error_with_an_offset() {
        let err = parse(b"this is not a fat binary").unwrap_err();
        assert_eq!(err.offset, 0);
        assert!(err.problem.contains("magic"), "{err}");
        assert!(parse(&[]).is_err());

        let mut truncated = container(&[(2, 80, 0x11, 64)]);
        truncated.truncate(truncated.len() - 1);
        let err = parse(&truncated).unwrap_err();
        assert!(err.problem.contains("claims"), "{err}");

        let mut trailing = container(&[(2, 80, 0x11, 8)]);
        trailing.extend([0, 0, 0, 0, 1, 2, 3, 4]);
        assert!(parse(&trailing).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn never_panics_on_corrupted_containers(
            entries in proptest::collection::vec((0u16..10, 50u32..130, any::<u64>(), 0usize..40), 0..4),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        ) {
            let mut section = container(&entries);
            for (index, byte) in flips {
                let i = index.index(section.len());
                section[i] = byte;
            }
            let _ = parse(&section);
        }
    }
}
