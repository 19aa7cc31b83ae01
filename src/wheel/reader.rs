//! Reading and verifying any wheel, ours or not.
//!
//! In: a `.whl` file. Out: a [`WheelArchive`] holding its parsed file name,
//! its members' bytes and modes, METADATA and WHEEL; or a [`WheelError`]
//! naming the file and what makes it unreadable (not a zip, truncated, an
//! unsafe or duplicate member path, no `.dist-info`). [`WheelArchive::verify`]
//! then lists every way the wheel disagrees with itself: RECORD against the
//! members, and the file name against METADATA, WHEEL and the `.dist-info`
//! directory name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use super::filename::{FilenameError, WheelFilename};
use super::member_path::check_member_path;
use super::metadata::{CoreMetadata, MetadataError, WheelInfo};
use super::pep440::Version;
use super::pep503::ProjectName;
use super::record::{FileHash, RecordEntry, RecordError, parse_record, write_record};
use super::tags::Tag;

/// One file inside a wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The path inside the wheel, `/`-separated.
    pub name: String,
    /// The Unix mode stored in the zip (type and permission bits), if any.
    pub unix_mode: Option<u32>,
    pub data: Vec<u8>,
}

/// A wheel read into memory.
#[derive(Debug)]
pub struct WheelArchive {
    path: PathBuf,
    filename: WheelFilename,
    dist_info_dir: String,
    members: Vec<Member>,
    index: BTreeMap<String, usize>,
    metadata: CoreMetadata,
    wheel_info: WheelInfo,
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
    #[error("{} is not a readable zip archive ({error}); it is truncated or corrupt: download or build it again", path.display())]
    Zip {
        path: PathBuf,
        error: zip::result::ZipError,
    },
    #[error("{}: member `{member}` cannot be read ({error}); the archive is corrupt: download or build it again", path.display())]
    MemberData {
        path: PathBuf,
        member: String,
        error: String,
    },
    #[error("{}: member path `{member}` is unsafe: {reason}; installing it could write outside the target directory, so the wheel is refused", path.display())]
    UnsafeMemberPath {
        path: PathBuf,
        member: String,
        reason: String,
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
    #[error("{}: `{member}` is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf, member: String },
    #[error("{}: {error}", path.display())]
    Metadata { path: PathBuf, error: MetadataError },
}

/// One way a readable wheel disagrees with itself; see [`WheelArchive::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelProblem {
    /// The wheel's path, so the message can name it.
    pub wheel: PathBuf,
    pub kind: ProblemKind,
}

/// What [`WheelArchive::verify`] found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The `.dist-info/RECORD` member does not exist.
    RecordMissing { record: String },
    /// RECORD exists but cannot be parsed.
    RecordUnreadable { record: String, error: RecordError },
    /// RECORD's row for itself is missing or carries a hash or size.
    RecordSelfRow {
        record: String,
        found: Option<String>,
    },
    /// A row names the same path as an earlier row.
    DuplicateRecordRow { path: String },
    /// A member has no row in RECORD.
    NotInRecord { member: String },
    /// A member's row has no hash or no size.
    UnhashedMember { member: String },
    /// A row's hash cannot be checked (forbidden algorithm, malformed digest).
    BadHash { member: String, reason: String },
    HashMismatch {
        member: String,
        recorded: String,
        actual: String,
    },
    SizeMismatch {
        member: String,
        recorded: u64,
        actual: u64,
    },
    /// A row names a path that is not in the archive.
    RecordedButMissing { path: String },
    /// The file name's project name differs from METADATA's `Name`.
    NameMismatch { filename: String, metadata: String },
    /// The file name's version differs from METADATA's `Version`.
    VersionMismatch { filename: String, metadata: String },
    /// The `.dist-info` directory is not named for the file name's name and version.
    DistInfoMismatch { found: String, expected: String },
    /// WHEEL's `Tag:` lines differ from the file name's expanded tags.
    TagMismatch {
        /// In the file name, not in WHEEL.
        missing: Vec<String>,
        /// In WHEEL, not in the file name.
        extra: Vec<String>,
    },
    /// WHEEL's `Build:` differs from the file name's build tag.
    BuildMismatch {
        filename: Option<String>,
        wheel: Option<String>,
    },
    /// Wheel-Version is not `1.x`.
    UnsupportedWheelVersion { version: String },
}

impl fmt::Display for WheelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.wheel.display())?;
        let rebuild = "rebuild the wheel so RECORD matches its contents";
        match &self.kind {
            ProblemKind::RecordMissing { record } => {
                write!(
                    f,
                    "`{record}` is missing; every wheel lists its files there"
                )
            }
            ProblemKind::RecordUnreadable { record, error } => write!(f, "`{record}`: {error}"),
            ProblemKind::RecordSelfRow {
                record,
                found: None,
            } => write!(
                f,
                "RECORD does not list itself; it must contain the row `{record},,`"
            ),
            ProblemKind::RecordSelfRow {
                record,
                found: Some(row),
            } => write!(
                f,
                "RECORD lists itself as `{row}`; the row must be `{record},,` (no hash, no size)"
            ),
            ProblemKind::DuplicateRecordRow { path } => {
                write!(f, "RECORD lists `{path}` more than once")
            }
            ProblemKind::NotInRecord { member } => {
                write!(f, "member `{member}` is not listed in RECORD; {rebuild}")
            }
            ProblemKind::UnhashedMember { member } => write!(
                f,
                "RECORD lists `{member}` without a hash or size; only RECORD itself may omit them"
            ),
            ProblemKind::BadHash { member, reason } => {
                write!(
                    f,
                    "RECORD's hash for `{member}` cannot be checked: {reason}"
                )
            }
            ProblemKind::HashMismatch {
                member,
                recorded,
                actual,
            } => write!(
                f,
                "member `{member}` has hash {actual} but RECORD says {recorded}; \
                 the file was changed after RECORD was written: {rebuild}"
            ),
            ProblemKind::SizeMismatch {
                member,
                recorded,
                actual,
            } => write!(
                f,
                "member `{member}` is {actual} bytes but RECORD says {recorded}; {rebuild}"
            ),
            ProblemKind::RecordedButMissing { path } => write!(
                f,
                "RECORD lists `{path}`, which is not in the archive; {rebuild}"
            ),
            ProblemKind::NameMismatch { filename, metadata } => write!(
                f,
                "the file name says project `{filename}` but METADATA's Name is `{metadata}`; \
                 installers refuse such a wheel: rename the file or fix METADATA"
            ),
            ProblemKind::VersionMismatch { filename, metadata } => write!(
                f,
                "the file name says version `{filename}` but METADATA's Version is `{metadata}` \
                 (a local label such as `+cu130` must appear in both); fix METADATA or rename the file"
            ),
            ProblemKind::DistInfoMismatch { found, expected } => write!(
                f,
                "the metadata directory is `{found}` but the file name calls for `{expected}`"
            ),
            ProblemKind::TagMismatch { missing, extra } => {
                write!(f, "WHEEL's Tag lines differ from the file name's tags:")?;
                if !missing.is_empty() {
                    write!(f, " missing from WHEEL: {};", missing.join(", "))?;
                }
                if !extra.is_empty() {
                    write!(f, " in WHEEL but not the file name: {};", extra.join(", "))?;
                }
                write!(f, " they must list the same tags")
            }
            ProblemKind::BuildMismatch { filename, wheel } => write!(
                f,
                "the file name's build tag is {} but WHEEL's Build is {}; they must agree",
                quote_or_none(filename),
                quote_or_none(wheel)
            ),
            ProblemKind::UnsupportedWheelVersion { version } => write!(
                f,
                "Wheel-Version is `{version}`; installers accept only 1.x"
            ),
        }
    }
}

fn quote_or_none(value: &Option<String>) -> String {
    match value {
        Some(v) => format!("`{v}`"),
        None => "absent".to_string(),
    }
}

/// Signature files that RECORD does not list (binary distribution format).
const UNRECORDED_SIGNATURES: [&str; 2] = ["RECORD.jws", "RECORD.p7s"];

impl WheelArchive {
    /// Reads the wheel at `path`. The file name must be a wheel file name.
    pub fn open(path: &Path) -> Result<WheelArchive, WheelError> {
        let bytes = std::fs::read(path).map_err(|error| WheelError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        WheelArchive::from_bytes(path, &bytes)
    }

    /// Reads a wheel from memory; `path` gives its file name and is used in messages.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<WheelArchive, WheelError> {
        let path = path.to_path_buf();
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let filename = WheelFilename::parse(&file_name).map_err(|error| WheelError::Filename {
            path: path.clone(),
            error,
        })?;
        let members = read_members(&path, bytes)?;
        let index: BTreeMap<String, usize> = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i))
            .collect();

        let dist_info_dirs: BTreeSet<&str> = members
            .iter()
            .filter_map(|m| m.name.split_once('/'))
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

        let text_of = |file: &str| -> Result<&str, WheelError> {
            let member = format!("{dist_info_dir}/{file}");
            let Some(&i) = index.get(&member) else {
                return Err(WheelError::MissingDistInfoFile {
                    path: path.clone(),
                    member,
                });
            };
            std::str::from_utf8(&members[i].data).map_err(|_| WheelError::NotUtf8 {
                path: path.clone(),
                member,
            })
        };
        let metadata_error = |error| WheelError::Metadata {
            path: path.clone(),
            error,
        };
        let metadata = CoreMetadata::parse(text_of("METADATA")?).map_err(metadata_error)?;
        let wheel_info = WheelInfo::parse(text_of("WHEEL")?).map_err(metadata_error)?;

        Ok(WheelArchive {
            path,
            filename,
            dist_info_dir,
            members,
            index,
            metadata,
            wheel_info,
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

    /// Every file in the archive, in archive order; directory entries are skipped.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, name: &str) -> Option<&Member> {
        self.index.get(name).map(|&i| &self.members[i])
    }

    pub fn metadata(&self) -> &CoreMetadata {
        &self.metadata
    }

    /// Every way the wheel disagrees with itself; empty when it is consistent.
    pub fn verify(&self) -> Vec<WheelProblem> {
        let mut kinds = self.check_record();
        kinds.extend(self.check_identity());
        kinds
            .into_iter()
            .map(|kind| WheelProblem {
                wheel: self.path.clone(),
                kind,
            })
            .collect()
    }

    fn check_record(&self) -> Vec<ProblemKind> {
        let record = format!("{}/RECORD", self.dist_info_dir);
        let Some(record_member) = self.member(&record) else {
            return vec![ProblemKind::RecordMissing { record }];
        };
        let entries = match std::str::from_utf8(&record_member.data) {
            Ok(text) => parse_record(text),
            Err(e) => Err(RecordError {
                line: 1 + record_member.data[..e.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count(),
                reason: "not UTF-8 text".to_string(),
            }),
        };
        let entries = match entries {
            Ok(entries) => entries,
            Err(error) => return vec![ProblemKind::RecordUnreadable { record, error }],
        };

        let mut problems = Vec::new();
        let mut rows: BTreeMap<&str, &RecordEntry> = BTreeMap::new();
        for entry in &entries {
            if rows.insert(entry.path.as_str(), entry).is_some() {
                problems.push(ProblemKind::DuplicateRecordRow {
                    path: entry.path.clone(),
                });
            }
        }
        match rows.get(record.as_str()) {
            Some(RecordEntry {
                hash: None,
                size: None,
                ..
            }) => {}
            Some(row) => problems.push(ProblemKind::RecordSelfRow {
                record: record.clone(),
                found: Some(write_record(&[(*row).clone()]).trim_end().to_string()),
            }),
            None => problems.push(ProblemKind::RecordSelfRow {
                record: record.clone(),
                found: None,
            }),
        }
        for member in &self.members {
            if member.name == record
                || UNRECORDED_SIGNATURES
                    .iter()
                    .any(|s| member.name == format!("{}/{s}", self.dist_info_dir))
            {
                continue;
            }
            let name = member.name.clone();
            let Some(row) = rows.get(member.name.as_str()) else {
                problems.push(ProblemKind::NotInRecord { member: name });
                continue;
            };
            let (Some(hash), Some(size)) = (&row.hash, row.size) else {
                problems.push(ProblemKind::UnhashedMember { member: name });
                continue;
            };
            match hash.check(&member.data) {
                Ok(true) => {}
                Ok(false) => problems.push(ProblemKind::HashMismatch {
                    member: name.clone(),
                    recorded: hash.to_string(),
                    actual: FileHash::sha256(&member.data).to_string(),
                }),
                Err(reason) => problems.push(ProblemKind::BadHash {
                    member: name.clone(),
                    reason,
                }),
            }
            let actual = member.data.len() as u64;
            if size != actual {
                problems.push(ProblemKind::SizeMismatch {
                    member: name,
                    recorded: size,
                    actual,
                });
            }
        }
        for path in rows.keys() {
            if !self.index.contains_key(*path) {
                problems.push(ProblemKind::RecordedButMissing {
                    path: path.to_string(),
                });
            }
        }
        problems
    }

    fn check_identity(&self) -> Vec<ProblemKind> {
        let mut problems = Vec::new();
        let name = &self.filename.name;
        let version = &self.filename.version;
        if *name != self.metadata.name {
            problems.push(ProblemKind::NameMismatch {
                filename: name.to_string(),
                metadata: self.metadata.name.to_string(),
            });
        }
        if *version != self.metadata.version {
            problems.push(ProblemKind::VersionMismatch {
                filename: version.to_string(),
                metadata: self.metadata.version.to_string(),
            });
        }
        if !dist_info_matches(&self.dist_info_dir, name, version) {
            problems.push(ProblemKind::DistInfoMismatch {
                found: self.dist_info_dir.clone(),
                expected: self.filename.dist_info_dir(),
            });
        }

        let expected: BTreeSet<String> = self
            .filename
            .tags
            .expand()
            .iter()
            .map(Tag::to_string)
            .collect();
        let listed: BTreeSet<String> = self.wheel_info.tags.iter().map(Tag::to_string).collect();
        if expected != listed {
            problems.push(ProblemKind::TagMismatch {
                missing: expected.difference(&listed).cloned().collect(),
                extra: listed.difference(&expected).cloned().collect(),
            });
        }
        let filename_build = self.filename.build.as_ref().map(|b| b.to_string());
        if filename_build != self.wheel_info.build {
            problems.push(ProblemKind::BuildMismatch {
                filename: filename_build,
                wheel: self.wheel_info.build.clone(),
            });
        }
        if self.wheel_info.wheel_version_major() != Some(1) {
            problems.push(ProblemKind::UnsupportedWheelVersion {
                version: self.wheel_info.wheel_version.clone(),
            });
        }
        problems
    }
}

/// Whether `{name}-{version}.dist-info` names this project and version
/// (compared normalised, so spellings that installers accept pass).
fn dist_info_matches(dir: &str, name: &ProjectName, version: &Version) -> bool {
    let Some((dir_name, dir_version)) = dir
        .strip_suffix(".dist-info")
        .and_then(|stem| stem.rsplit_once('-'))
    else {
        return false;
    };
    ProjectName::new(dir_name).is_ok_and(|n| n == *name)
        && Version::parse(dir_version).is_ok_and(|v| v == *version)
}

/// Reads every non-directory member, refusing unsafe and duplicate paths.
fn read_members(path: &Path, bytes: &[u8]) -> Result<Vec<Member>, WheelError> {
    let zip_error = |error| WheelError::Zip {
        path: path.to_path_buf(),
        error,
    };
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(zip_error)?;

    // The zip reader keeps one entry per name, so duplicates are found in
    // the central directory itself.
    let mut counts: BTreeMap<&[u8], usize> = BTreeMap::new();
    for name in central_directory_names(bytes, archive.central_directory_start()) {
        *counts.entry(name).or_default() += 1;
    }
    if let Some((name, &count)) = counts.iter().find(|(_, count)| **count > 1) {
        return Err(WheelError::DuplicateMember {
            path: path.to_path_buf(),
            member: String::from_utf8_lossy(name).into_owned(),
            count,
        });
    }

    let mut members = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).map_err(zip_error)?;
        let name = file.name().to_string();
        let checked = name.strip_suffix('/').unwrap_or(&name);
        check_member_path(checked).map_err(|reason| WheelError::UnsafeMemberPath {
            path: path.to_path_buf(),
            member: name.clone(),
            reason,
        })?;
        if file.is_dir() {
            continue;
        }
        let unix_mode = file.unix_mode();
        // The declared size is only a hint: a corrupt header must not make us
        // reserve gigabytes.
        let mut data = Vec::with_capacity(file.size().min(1 << 24) as usize);
        file.read_to_end(&mut data)
            .map_err(|error| WheelError::MemberData {
                path: path.to_path_buf(),
                member: name.clone(),
                error: error.to_string(),
            })?;
        members.push(Member {
            name,
            unix_mode,
            data,
        });
    }
    Ok(members)
}

/// The raw names of the central directory's entries, walked from `start`
/// until the first byte run that is not a central directory header.
fn central_directory_names(bytes: &[u8], start: u64) -> Vec<&[u8]> {
    const SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
    const FIXED_LEN: usize = 46;
    let u16_at =
        |header: &[u8], at: usize| usize::from(u16::from_le_bytes([header[at], header[at + 1]]));
    let mut names = Vec::new();
    let Ok(mut pos) = usize::try_from(start) else {
        return names;
    };
    while let Some(header) = bytes.get(pos..).and_then(|rest| rest.get(..FIXED_LEN)) {
        if header[..4] != SIGNATURE {
            break;
        }
        let (name_len, extra_len, comment_len) =
            (u16_at(header, 28), u16_at(header, 30), u16_at(header, 32));
        let name_start = pos + FIXED_LEN;
        let Some(name) = bytes.get(name_start..name_start + name_len) else {
            break;
        };
        names.push(name);
        pos = name_start + name_len + extra_len + comment_len;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_info_names_match_normalised() {
        let name = ProjectName::new("Demo.Ext").unwrap();
        let version = Version::parse("0.1.0+pt211cu130").unwrap();
        for dir in [
            "demo_ext-0.1.0+pt211cu130.dist-info",
            "Demo.Ext-0.1.0+pt211cu130.dist-info",
            "demo-ext-0.1.0+PT211CU130.dist-info",
        ] {
            assert!(dist_info_matches(dir, &name, &version), "{dir}");
        }
        for dir in [
            "demo_ext-0.1.0.dist-info",
            "demo_ext-0.1.0+pt211cu130.data",
            "other-0.1.0+pt211cu130.dist-info",
            "demo_ext.dist-info",
            "demo_ext-0.1.0+pt211.cu130.dist-info",
        ] {
            assert!(!dist_info_matches(dir, &name, &version), "{dir}");
        }
    }

    #[test]
    fn central_directory_names_walks_every_header_and_stops_at_garbage() {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for name in ["a", "bb/c", "a"] {
            // The zip crate refuses the duplicate, so only two entries exist.
            let _ = zip.start_file(name, zip::write::SimpleFileOptions::default());
        }
        let bytes = zip.finish().unwrap().into_inner();
        let archive = zip::ZipArchive::new(Cursor::new(&bytes[..])).unwrap();
        let start = archive.central_directory_start();
        assert_eq!(
            central_directory_names(&bytes, start),
            [b"a".as_slice(), b"bb/c".as_slice()]
        );
        assert!(central_directory_names(&bytes, bytes.len() as u64 + 9).is_empty());
        // Cut inside the second header: the first name is still read.
        assert_eq!(
            central_directory_names(&bytes[..start as usize + 50], start),
            [b"a".as_slice()]
        );
    }
}
