//! Every way a readable wheel can disagree with itself, and the checks
//! that find them: RECORD against what the members hold, and the file name
//! against METADATA, WHEEL and the `.dist-info` directory name.
//!
//! In: RECORD's bytes, what the reader saw of each member while streaming
//! it ([`MemberDigest`]: size and, when RECORD hashes it, its digest), and
//! the parsed file name and metadata. Out: [`ProblemKind`]s, each displayed
//! with the fix.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use super::filename::WheelFilename;
use super::metadata::{CoreMetadata, WheelInfo};
use super::pep440::Version;
use super::pep503::ProjectName;
use super::record::{RecordEntry, RecordError, RecordHasher, parse_record, write_record};
use super::tags::Tag;

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

/// What a reader saw of one member while streaming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDigest {
    pub size: u64,
    /// With the algorithm of the member's RECORD row; `None` when RECORD
    /// gives no usable hash for it.
    pub digest: Option<Vec<u8>>,
}

/// A wheel's RECORD, parsed once; it says how to hash each member.
#[derive(Debug, Clone)]
pub struct Record {
    /// `{dist-info}/RECORD`.
    pub path: String,
    dist_info_dir: String,
    rows: Result<Vec<RecordEntry>, ProblemKind>,
    index: BTreeMap<String, usize>,
}

impl Record {
    /// RECORD from its bytes; `None` when the wheel has none.
    pub fn parse(dist_info_dir: &str, bytes: Option<&[u8]>) -> Record {
        let path = format!("{dist_info_dir}/RECORD");
        let rows = match bytes {
            None => Err(ProblemKind::RecordMissing {
                record: path.clone(),
            }),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => parse_record(text),
                Err(e) => Err(RecordError {
                    line: 1 + bytes[..e.valid_up_to()]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count(),
                    reason: "not UTF-8 text".to_string(),
                }),
            }
            .map_err(|error| ProblemKind::RecordUnreadable {
                record: path.clone(),
                error,
            }),
        };
        let mut index = BTreeMap::new();
        if let Ok(rows) = &rows {
            for (i, row) in rows.iter().enumerate() {
                index.entry(row.path.clone()).or_insert(i);
            }
        }
        Record {
            path,
            dist_info_dir: dist_info_dir.to_string(),
            rows,
            index,
        }
    }

    /// The row for `member`, if RECORD has one.
    pub fn row(&self, member: &str) -> Option<&RecordEntry> {
        let rows = self.rows.as_ref().ok()?;
        self.index.get(member).map(|&i| &rows[i])
    }

    /// A hasher for `member` with its row's algorithm; `None` when there is
    /// nothing to check it against.
    pub fn hasher_for(&self, member: &str) -> Option<RecordHasher> {
        self.row(member)?.hash.as_ref()?.hasher().ok()
    }

    /// Every disagreement between RECORD and the members, given what was
    /// seen of each (`digests`, by member name, one for every member).
    pub fn problems(&self, digests: &BTreeMap<String, MemberDigest>) -> Vec<ProblemKind> {
        let record = &self.path;
        let rows = match &self.rows {
            Ok(rows) => rows,
            Err(problem) => return vec![problem.clone()],
        };
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for entry in rows {
            if !seen.insert(entry.path.as_str()) {
                problems.push(ProblemKind::DuplicateRecordRow {
                    path: entry.path.clone(),
                });
            }
        }
        match self.row(record) {
            Some(RecordEntry {
                hash: None,
                size: None,
                ..
            }) => {}
            Some(row) => problems.push(ProblemKind::RecordSelfRow {
                record: record.clone(),
                found: Some(
                    write_record(std::slice::from_ref(row))
                        .trim_end()
                        .to_string(),
                ),
            }),
            None => problems.push(ProblemKind::RecordSelfRow {
                record: record.clone(),
                found: None,
            }),
        }
        for (name, seen) in digests {
            if name == record
                || UNRECORDED_SIGNATURES
                    .iter()
                    .any(|s| *name == format!("{}/{s}", self.dist_info_dir))
            {
                continue;
            }
            let Some(row) = self.row(name) else {
                problems.push(ProblemKind::NotInRecord {
                    member: name.clone(),
                });
                continue;
            };
            let (Some(hash), Some(size)) = (&row.hash, row.size) else {
                problems.push(ProblemKind::UnhashedMember {
                    member: name.clone(),
                });
                continue;
            };
            let checked = hash.hasher().and_then(|_| match &seen.digest {
                Some(digest) => hash.matches(digest).map(|ok| (ok, digest)),
                None => Err("the member's digest was not computed".to_string()),
            });
            match checked {
                Ok((true, _)) => {}
                Ok((false, digest)) => problems.push(ProblemKind::HashMismatch {
                    member: name.clone(),
                    recorded: hash.to_string(),
                    actual: hash.with_digest(digest).to_string(),
                }),
                Err(reason) => problems.push(ProblemKind::BadHash {
                    member: name.clone(),
                    reason,
                }),
            }
            if size != seen.size {
                problems.push(ProblemKind::SizeMismatch {
                    member: name.clone(),
                    recorded: size,
                    actual: seen.size,
                });
            }
        }
        for path in self.index.keys() {
            if !digests.contains_key(path) {
                problems.push(ProblemKind::RecordedButMissing { path: path.clone() });
            }
        }
        problems
    }
}

/// How the file name disagrees with METADATA, WHEEL and the `.dist-info`
/// directory's name.
pub fn identity_problems(
    filename: &WheelFilename,
    dist_info_dir: &str,
    metadata: &CoreMetadata,
    wheel_info: &WheelInfo,
) -> Vec<ProblemKind> {
    let mut problems = Vec::new();
    let name = &filename.name;
    let version = &filename.version;
    if *name != metadata.name {
        problems.push(ProblemKind::NameMismatch {
            filename: name.to_string(),
            metadata: metadata.name.to_string(),
        });
    }
    if *version != metadata.version {
        problems.push(ProblemKind::VersionMismatch {
            filename: version.to_string(),
            metadata: metadata.version.to_string(),
        });
    }
    if !dist_info_matches(dist_info_dir, name, version) {
        problems.push(ProblemKind::DistInfoMismatch {
            found: dist_info_dir.to_string(),
            expected: filename.dist_info_dir(),
        });
    }

    let expected: BTreeSet<String> = filename.tags.expand().iter().map(Tag::to_string).collect();
    let listed: BTreeSet<String> = wheel_info.tags.iter().map(Tag::to_string).collect();
    if expected != listed {
        problems.push(ProblemKind::TagMismatch {
            missing: expected.difference(&listed).cloned().collect(),
            extra: listed.difference(&expected).cloned().collect(),
        });
    }
    let filename_build = filename.build.as_ref().map(|b| b.to_string());
    if filename_build != wheel_info.build {
        problems.push(ProblemKind::BuildMismatch {
            filename: filename_build,
            wheel: wheel_info.build.clone(),
        });
    }
    if wheel_info.wheel_version_major() != Some(1) {
        problems.push(ProblemKind::UnsupportedWheelVersion {
            version: wheel_info.wheel_version.clone(),
        });
    }
    problems
}

/// Whether `{name}-{version}.dist-info` names this project and version
/// (compared normalised, so spellings that installers accept pass).
pub fn dist_info_matches(dir: &str, name: &ProjectName, version: &Version) -> bool {
    let Some((dir_name, dir_version)) = dir
        .strip_suffix(".dist-info")
        .and_then(|stem| stem.rsplit_once('-'))
    else {
        return false;
    };
    ProjectName::new(dir_name).is_ok_and(|n| n == *name)
        && Version::parse(dir_version).is_ok_and(|v| v == *version)
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
    fn record_checks_streamed_digests() {
        let data = b"x = 1\n";
        let row = RecordEntry::for_data("a/x.py", data);
        let text = write_record(&[row, RecordEntry::unhashed("a-1.dist-info/RECORD")]);
        let record = Record::parse("a-1.dist-info", Some(text.as_bytes()));
        let digest = |bytes: &[u8]| {
            let mut h = record.hasher_for("a/x.py").unwrap();
            h.update(bytes);
            MemberDigest {
                size: bytes.len() as u64,
                digest: Some(h.finish()),
            }
        };
        let mut seen = BTreeMap::from([
            ("a/x.py".to_string(), digest(data)),
            (
                "a-1.dist-info/RECORD".to_string(),
                MemberDigest {
                    size: 0,
                    digest: None,
                },
            ),
        ]);
        assert_eq!(record.problems(&seen), vec![]);
        seen.insert("a/x.py".to_string(), digest(b"x = 2\n!"));
        let found = record.problems(&seen);
        assert!(
            matches!(found[0], ProblemKind::HashMismatch { .. }),
            "{found:?}"
        );
        assert!(
            matches!(found[1], ProblemKind::SizeMismatch { .. }),
            "{found:?}"
        );
        assert!(record.hasher_for("a/other.py").is_none());
    }
}
