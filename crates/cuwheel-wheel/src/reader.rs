//! Reading and verifying any wheel, ours or not.
//!
//! In: a `.whl` path. Out: a [`WheelFile`] — its parsed file name,
//! METADATA, WHEEL and RECORD, and every member as a [`ZipEntry`] to stream
//! — or a [`WheelError`] naming the file and what makes it unreadable (not a
//! regular file, not a zip, truncated, a zip bomb, an unsafe or duplicate
//! member path, a symlink or device member, no `.dist-info`). Members are
//! streamed one at a time ([`WheelFile::stream`]), so a reader holds the
//! central directory and the `.dist-info` texts, never a whole member;
//! [`WheelFile::verify`] then lists every way the wheel disagrees with
//! itself, from the sizes and digests seen while streaming
//! ([`MemberDigest`]).
//!
//! [`WheelArchive`] is the same wheel with every member read into memory,
//! for wheels known to be small (cuwheel's own, in tests and `reproduce`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::filename::{FilenameError, WheelFilename};
use super::member_path::check_member_path;
use super::metadata::{CoreMetadata, MetadataError, WheelInfo};
use super::problems::{MemberDigest, Record, WheelProblem, identity_problems};
use super::terminal::terminal_safe;
use super::zip::{EntryKind, EntryReader, ZipArchive, ZipEntry, ZipError, unwrap_zip_error};

/// The largest METADATA or WHEEL read; no honest one comes near.
pub const MAX_METADATA_SIZE: u64 = 16 << 20;
/// The largest RECORD read (torch's is about 1.5 MB).
pub const MAX_RECORD_SIZE: u64 = 256 << 20;

/// One file inside a wheel, read into memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The path inside the wheel, `/`-separated.
    pub name: String,
    /// The Unix mode stored in the zip (type and permission bits), if any.
    pub unix_mode: Option<u32>,
    pub data: Vec<u8>,
}

/// Why a wheel cannot be read at all. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}; a wheel must be named {{name}}-{{version}}(-{{build}})?-{{python}}-{{abi}}-{{platform}}.whl", path.display())]
    Filename { path: PathBuf, error: FilenameError },
    #[error("{}: {error}", path.display())]
    Zip { path: PathBuf, error: ZipError },
    #[error("{}: {error}", path.display())]
    MemberData { path: PathBuf, error: ZipError },
    #[error("{}: member path `{member}` is unsafe: {reason}; installing it could write outside the target directory, so the wheel is refused", path.display())]
    UnsafeMemberPath {
        path: PathBuf,
        member: String,
        reason: String,
    },
    #[error("{}: member `{member}` is {kind} (by its zip mode bits), not a regular file; installers could create it as a link or device that points outside the install, so the wheel is refused: store the file itself", path.display())]
    UnsafeMemberType {
        path: PathBuf,
        member: String,
        kind: &'static str,
    },
    #[error("{}: member `{member}` appears {count} times; installers would keep only one of them, so the wheel is refused", path.display())]
    DuplicateMember {
        path: PathBuf,
        member: String,
        count: usize,
    },
    #[error("{}: no `.dist-info` directory at the top level (expected `{expected}/`); this is not a wheel", path.display())]
    MissingDistInfo { path: PathBuf, expected: String },
    #[error("{}: more than one `.dist-info` directory ({}); a wheel holds exactly one", path.display(), dirs.join(", "))]
    MultipleDistInfo { path: PathBuf, dirs: Vec<String> },
    #[error("{}: `{member}` is missing; every wheel needs METADATA and WHEEL in its `.dist-info` directory", path.display())]
    MissingDistInfoFile { path: PathBuf, member: String },
    #[error("{}: `{member}` is {size} bytes, more than the {limit} a wheel reader accepts for it", path.display())]
    TooLarge {
        path: PathBuf,
        member: String,
        size: u64,
        limit: u64,
    },
    #[error("{}: `{member}` is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf, member: String },
    #[error("{}: {error}", path.display())]
    Metadata { path: PathBuf, error: MetadataError },
}

/// A wheel whose central directory and `.dist-info` texts are read, and
/// whose members stream on demand.
#[derive(Debug)]
pub struct WheelFile {
    path: PathBuf,
    filename: WheelFilename,
    zip: ZipArchive,
    /// Indexes into the archive's entries of the members that are files.
    files: Vec<usize>,
    /// Member name to archive entry index.
    index: BTreeMap<String, usize>,
    dist_info_dir: String,
    metadata_bytes: Vec<u8>,
    metadata: CoreMetadata,
    wheel_info: WheelInfo,
    record: Record,
}

impl WheelFile {
    /// Opens the wheel at `path`: refuses a path that is not a regular file
    /// without reading it, then a bad file name, then anything wrong with
    /// the archive or its `.dist-info`.
    pub fn open(path: &Path) -> Result<WheelFile, WheelError> {
        let read_error = |error| WheelError::Read {
            path: path.to_path_buf(),
            error,
        };
        let zip_error = |error| WheelError::Zip {
            path: path.to_path_buf(),
            error,
        };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        if !metadata.is_file() {
            return Err(zip_error(
                super::zip::check_regular(&metadata.file_type()).unwrap_err(),
            ));
        }
        let filename = parse_filename(path)?;
        let zip = ZipArchive::open(path).map_err(|error| match error {
            ZipError::Io(error) => read_error(error),
            error => zip_error(error),
        })?;
        WheelFile::from_zip(path, filename, zip)
    }

    /// Reads a wheel from memory through an unlinked temporary file; `path`
    /// gives its file name and is used in messages.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<WheelFile, WheelError> {
        let filename = parse_filename(path)?;
        let read_error = |error| WheelError::Read {
            path: path.to_path_buf(),
            error,
        };
        let mut file = tempfile::tempfile().map_err(read_error)?;
        std::io::Write::write_all(&mut file, bytes).map_err(read_error)?;
        let zip = ZipArchive::from_file(file).map_err(|error| WheelError::Zip {
            path: path.to_path_buf(),
            error,
        })?;
        WheelFile::from_zip(path, filename, zip)
    }

    fn from_zip(
        path: &Path,
        filename: WheelFilename,
        zip: ZipArchive,
    ) -> Result<WheelFile, WheelError> {
        let path = path.to_path_buf();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for entry in zip.entries() {
            *counts.entry(entry.name.as_str()).or_default() += 1;
        }
        if let Some((name, &count)) = counts.iter().find(|(_, count)| **count > 1) {
            return Err(WheelError::DuplicateMember {
                path,
                member: terminal_safe(name).into_owned(),
                count,
            });
        }
        let mut files = Vec::new();
        let mut index = BTreeMap::new();
        for (i, entry) in zip.entries().iter().enumerate() {
            let checked = entry.name.strip_suffix('/').unwrap_or(&entry.name);
            check_member_path(checked).map_err(|reason| WheelError::UnsafeMemberPath {
                path: path.clone(),
                member: terminal_safe(&entry.name).into_owned(),
                reason,
            })?;
            match entry.kind {
                EntryKind::Directory => {}
                EntryKind::File => {
                    files.push(i);
                    index.insert(entry.name.clone(), i);
                }
                kind => {
                    return Err(WheelError::UnsafeMemberType {
                        path,
                        member: terminal_safe(&entry.name).into_owned(),
                        kind: kind.describe(),
                    });
                }
            }
        }

        let dist_info_dirs: BTreeSet<&str> = index
            .keys()
            .filter_map(|name| name.split_once('/'))
            .map(|(top, _)| top)
            .filter(|top| top.ends_with(".dist-info"))
            .collect();
        let dist_info_dir = match dist_info_dirs.len() {
            0 => {
                return Err(WheelError::MissingDistInfo {
                    path,
                    expected: filename.dist_info_dir(),
                });
            }
            1 => dist_info_dirs.first().expect("one").to_string(),
            _ => {
                return Err(WheelError::MultipleDistInfo {
                    dirs: dist_info_dirs.iter().map(|d| d.to_string()).collect(),
                    path,
                });
            }
        };

        let read = |file: &str, limit: u64| {
            read_entry(
                &zip,
                &index,
                &path,
                &format!("{dist_info_dir}/{file}"),
                limit,
            )
        };
        let required = |file: &str| -> Result<String, WheelError> {
            let member = format!("{dist_info_dir}/{file}");
            let bytes =
                read(file, MAX_METADATA_SIZE)?.ok_or_else(|| WheelError::MissingDistInfoFile {
                    path: path.clone(),
                    member: member.clone(),
                })?;
            String::from_utf8(bytes).map_err(|_| WheelError::NotUtf8 {
                path: path.clone(),
                member,
            })
        };
        let metadata_error = |error| WheelError::Metadata {
            path: path.clone(),
            error,
        };
        let metadata_text = required("METADATA")?;
        let metadata = CoreMetadata::parse(&metadata_text).map_err(metadata_error)?;
        let wheel_info = WheelInfo::parse(&required("WHEEL")?).map_err(metadata_error)?;
        let record = Record::parse(&dist_info_dir, read("RECORD", MAX_RECORD_SIZE)?.as_deref());
        Ok(WheelFile {
            path,
            filename,
            zip,
            files,
            index,
            dist_info_dir,
            metadata_bytes: metadata_text.into_bytes(),
            metadata,
            wheel_info,
            record,
        })
    }

    /// The path the wheel was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn filename(&self) -> &WheelFilename {
        &self.filename
    }

    /// The `.dist-info` directory found in the archive (no trailing `/`);
    /// [`verify`](Self::verify) checks it matches the file name.
    pub fn dist_info_dir(&self) -> &str {
        &self.dist_info_dir
    }

    pub fn metadata(&self) -> &CoreMetadata {
        &self.metadata
    }

    /// METADATA's bytes, as published beside the wheel (PEP 658).
    pub fn metadata_bytes(&self) -> &[u8] {
        &self.metadata_bytes
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The archive file's size in bytes.
    pub fn archive_len(&self) -> u64 {
        self.zip.len()
    }

    /// Every file member (directories left out), in archive order.
    pub fn members(&self) -> impl ExactSizeIterator<Item = &ZipEntry> + '_ {
        self.files.iter().map(|&i| &self.zip.entries()[i])
    }

    pub fn member(&self, name: &str) -> Option<&ZipEntry> {
        self.index.get(name).map(|&i| &self.zip.entries()[i])
    }

    /// A reader of `member`'s bytes (one of [`members`](Self::members)),
    /// checked as they stream; its errors are [`WheelError`]s through
    /// [`stream_error`](Self::stream_error).
    pub fn stream(&self, member: &ZipEntry) -> EntryReader<'_> {
        let i = self.index[&member.name];
        self.zip.reader(i)
    }

    /// The error to report for a failed read from [`stream`](Self::stream).
    pub fn stream_error(&self, error: std::io::Error) -> WheelError {
        WheelError::MemberData {
            path: self.path.clone(),
            error: unwrap_zip_error(error),
        }
    }

    /// `name`'s bytes; `None` when there is no such member, an error when it
    /// is larger than `limit` or does not inflate.
    pub fn read_member(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, WheelError> {
        read_entry(&self.zip, &self.index, &self.path, name, limit)
    }

    /// Every way the wheel disagrees with itself, given what was seen of
    /// each member while streaming it (`digests`, by name, one for every
    /// member); empty when it is consistent.
    pub fn verify(&self, digests: &BTreeMap<String, MemberDigest>) -> Vec<WheelProblem> {
        let mut kinds = self.record.problems(digests);
        kinds.extend(identity_problems(
            &self.filename,
            &self.dist_info_dir,
            &self.metadata,
            &self.wheel_info,
        ));
        kinds
            .into_iter()
            .map(|kind| WheelProblem {
                wheel: self.path.clone(),
                kind,
            })
            .collect()
    }
}

/// Member `name`'s bytes, at most `limit` of them.
fn read_entry(
    zip: &ZipArchive,
    index: &BTreeMap<String, usize>,
    path: &Path,
    name: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, WheelError> {
    let Some(&i) = index.get(name) else {
        return Ok(None);
    };
    match zip.read_all(i, limit) {
        Ok(Some(data)) => Ok(Some(data)),
        Ok(None) => Err(WheelError::TooLarge {
            path: path.to_path_buf(),
            member: name.to_string(),
            size: zip.entries()[i].size,
            limit,
        }),
        Err(error) => Err(WheelError::MemberData {
            path: path.to_path_buf(),
            error,
        }),
    }
}

fn parse_filename(path: &Path) -> Result<WheelFilename, WheelError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    WheelFilename::parse(&file_name).map_err(|error| WheelError::Filename {
        path: path.to_path_buf(),
        error,
    })
}

/// A wheel read into memory: every member's bytes at hand.
#[derive(Debug)]
pub struct WheelArchive {
    wheel: WheelFile,
    members: Vec<Member>,
    index: BTreeMap<String, usize>,
}

impl WheelArchive {
    /// Reads the wheel at `path`. The file name must be a wheel file name.
    pub fn open(path: &Path) -> Result<WheelArchive, WheelError> {
        WheelArchive::read(WheelFile::open(path)?)
    }

    /// Reads a wheel from memory; `path` gives its file name and is used in messages.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<WheelArchive, WheelError> {
        WheelArchive::read(WheelFile::from_bytes(path, bytes)?)
    }

    fn read(wheel: WheelFile) -> Result<WheelArchive, WheelError> {
        let mut members = Vec::with_capacity(wheel.files.len());
        for entry in wheel.members() {
            let mut data = Vec::with_capacity(entry.size.min(1 << 24) as usize);
            wheel
                .stream(entry)
                .read_to_end(&mut data)
                .map_err(|e| wheel.stream_error(e))?;
            members.push(Member {
                name: entry.name.clone(),
                unix_mode: entry.unix_mode,
                data,
            });
        }
        let index = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i))
            .collect();
        Ok(WheelArchive {
            wheel,
            members,
            index,
        })
    }

    /// The streaming view of the same wheel.
    pub fn file(&self) -> &WheelFile {
        &self.wheel
    }

    /// The path the wheel was read from.
    pub fn path(&self) -> &Path {
        self.wheel.path()
    }

    pub fn filename(&self) -> &WheelFilename {
        self.wheel.filename()
    }

    /// The `.dist-info` directory found in the archive (no trailing `/`).
    pub fn dist_info_dir(&self) -> &str {
        self.wheel.dist_info_dir()
    }

    /// Every file in the archive, in archive order; directory entries are skipped.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, name: &str) -> Option<&Member> {
        self.index.get(name).map(|&i| &self.members[i])
    }

    pub fn metadata(&self) -> &CoreMetadata {
        self.wheel.metadata()
    }

    /// Every way the wheel disagrees with itself; empty when it is consistent.
    pub fn verify(&self) -> Vec<WheelProblem> {
        let digests = self
            .members
            .iter()
            .map(|m| {
                let digest = self.wheel.record().hasher_for(&m.name).map(|mut h| {
                    h.update(&m.data);
                    h.finish()
                });
                let seen = MemberDigest {
                    size: m.data.len() as u64,
                    digest,
                };
                (m.name.clone(), seen)
            })
            .collect();
        self.wheel.verify(&digests)
    }
}
