//! The deterministic wheel writer.
//!
//! In: the wheel's [`CoreMetadata`] (name, version with its local label),
//! its [`TagSet`] and optional [`BuildTag`], and members (path inside the
//! wheel → bytes and an executable flag), added from memory or from a
//! directory tree. Out: the `.whl` bytes, or the file written atomically into
//! a directory.
//!
//! The bytes depend on nothing but those inputs and the timestamp:
//! - entries in byte order of their path, the `.dist-info/` directory's
//!   members after all others and RECORD last; no directory entries;
//! - every timestamp is [`ZipTimestamp`], from `SOURCE_DATE_EPOCH`
//!   (default and floor 1980-01-01 00:00:00 UTC);
//! - modes 0644, or 0755 for executables; no extra fields, no data
//!   descriptors (the zip crate seeks back to write sizes);
//! - DEFLATE at level [`DEFLATE_LEVEL`] by miniz_oxide, the one deflate
//!   implementation Cargo.lock pins (through flate2's `rust_backend`).

use std::collections::BTreeMap;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::filename::{BuildTag, WheelFilename};
use super::member_path::check_member_path;
use super::metadata::{CoreMetadata, MetadataError, WheelInfo};
use super::record::{RecordEntry, write_record};
use super::tags::TagSet;

/// The DEFLATE level of every entry: zlib's default, a fair trade of size
/// for time; fixed because another level gives other bytes.
pub const DEFLATE_LEVEL: i64 = 6;

/// The environment variable that fixes timestamps in reproducible builds.
pub const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";

/// Files cuwheel writes itself into `.dist-info/`; members may not use these names.
const GENERATED: [&str; 3] = ["METADATA", "WHEEL", "RECORD"];

/// A wheel to write: identity, metadata and members.
#[derive(Debug, Clone)]
pub struct WheelBuilder {
    metadata: CoreMetadata,
    tags: TagSet,
    build: Option<BuildTag>,
    members: BTreeMap<String, MemberContent>,
}

#[derive(Debug, Clone)]
struct MemberContent {
    data: Vec<u8>,
    executable: bool,
}

/// The UTC date and time stored in every zip entry, at the 2-second
/// resolution of the zip format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ZipTimestamp {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

/// Why a wheel cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot add `{member}` to the wheel: {reason}")]
    BadMemberPath { member: String, reason: String },
    #[error("`{member}` is added to the wheel twice; add each path once")]
    DuplicateMember { member: String },
    #[error(
        "`{member}` would replace the file cuwheel generates at that path; \
         leave METADATA, WHEEL and RECORD to the writer"
    )]
    GeneratedMember { member: String },
    #[error(
        "`{member}` is inside `{dir}`, a second `.dist-info` directory; a wheel has exactly one \
         (`{ours}`), put extra metadata files there"
    )]
    ForeignDistInfo {
        member: String,
        dir: String,
        ours: String,
    },
    #[error("{SOURCE_DATE_EPOCH}={value:?} is not usable: {reason}")]
    SourceDateEpoch { value: String, reason: String },
    #[error("cannot write the wheel's {error}")]
    Metadata { error: MetadataError },
    #[error("cannot write zip entry `{member}`: {error}")]
    Zip { member: String, error: String },
}

impl ZipTimestamp {
    /// 1980-01-01 00:00:00, the earliest time a zip entry can hold.
    pub const EARLIEST: ZipTimestamp = ZipTimestamp {
        year: 1980,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
    };

    /// `1980-01-01T00:00:00Z`: the same instant as an RFC 3339 UTC time.
    pub fn to_rfc3339(self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// The time `seconds` after 1970-01-01 00:00:00 UTC, raised to
    /// [`EARLIEST`](Self::EARLIEST) if before it and rounded down to an even
    /// second. Fails after 2107, the last year a zip entry can hold.
    pub fn from_unix_seconds(seconds: u64) -> Result<ZipTimestamp, String> {
        let days = seconds / 86_400;
        let in_day = seconds % 86_400;
        let (year, month, day) = civil_from_days(days);
        if year < 1980 {
            return Ok(ZipTimestamp::EARLIEST);
        }
        if year > 2107 {
            return Err(format!(
                "it is in the year {year}; zip timestamps end in 2107"
            ));
        }
        Ok(ZipTimestamp {
            year: year as u16,
            month,
            day,
            hour: (in_day / 3600) as u8,
            minute: (in_day % 3600 / 60) as u8,
            second: (in_day % 60 / 2 * 2) as u8,
        })
    }

    /// The timestamp for a `SOURCE_DATE_EPOCH` value: [`EARLIEST`](Self::EARLIEST)
    /// when unset, otherwise the value as whole seconds since 1970 UTC.
    pub fn from_source_date_epoch(value: Option<&str>) -> Result<ZipTimestamp, WriteError> {
        let Some(value) = value else {
            return Ok(ZipTimestamp::EARLIEST);
        };
        let fail = |reason: String| WriteError::SourceDateEpoch {
            value: value.to_string(),
            reason,
        };
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail(
                "it must be a whole number of seconds since 1970-01-01 00:00:00 UTC, \
                 e.g. `315532800`; unset it to use 1980-01-01"
                    .to_string(),
            ));
        }
        let seconds = value
            .parse::<u64>()
            .map_err(|_| fail("the number is too large".to_string()))?;
        ZipTimestamp::from_unix_seconds(seconds).map_err(fail)
    }

    /// The timestamp for this process's `SOURCE_DATE_EPOCH`.
    pub fn from_env() -> Result<ZipTimestamp, WriteError> {
        match std::env::var_os(SOURCE_DATE_EPOCH) {
            None => ZipTimestamp::from_source_date_epoch(None),
            Some(value) => {
                let value = value.to_string_lossy();
                ZipTimestamp::from_source_date_epoch(Some(&value))
            }
        }
    }

    fn to_zip(self) -> DateTime {
        DateTime::from_date_and_time(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
        )
        .expect("ZipTimestamp holds only dates between 1980 and 2107")
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01, by the well-known
/// era/day-of-era arithmetic (400-year eras of 146097 days, years starting
/// in March so the leap day comes last).
fn civil_from_days(days: u64) -> (u64, u8, u8) {
    let days = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u8;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u8;
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

impl WheelBuilder {
    /// A wheel with no members yet. Its name and version come from `metadata`.
    pub fn new(metadata: CoreMetadata, tags: TagSet, build: Option<BuildTag>) -> WheelBuilder {
        WheelBuilder {
            metadata,
            tags,
            build,
            members: BTreeMap::new(),
        }
    }

    /// The file name the wheel will have.
    pub fn filename(&self) -> WheelFilename {
        WheelFilename {
            name: self.metadata.name.clone(),
            version: self.metadata.version.clone(),
            build: self.build.clone(),
            tags: self.tags.clone(),
        }
    }

    /// Replaces the tags (the file name's and WHEEL's): for a platform tag
    /// computed from the members themselves.
    pub fn set_tags(&mut self, tags: TagSet) {
        self.tags = tags;
    }

    /// Adds one member. Extra metadata files (licences, provenance) go
    /// under the wheel's `.dist-info/` directory.
    pub fn add_member(
        &mut self,
        path: &str,
        data: Vec<u8>,
        executable: bool,
    ) -> Result<(), WriteError> {
        check_member_path(path).map_err(|reason| WriteError::BadMemberPath {
            member: path.to_string(),
            reason,
        })?;
        let dist_info = self.filename().dist_info_dir();
        let (top, rest) = path.split_once('/').unwrap_or((path, ""));
        if top == dist_info && GENERATED.contains(&rest) {
            return Err(WriteError::GeneratedMember {
                member: path.to_string(),
            });
        }
        if top != dist_info && top.ends_with(".dist-info") {
            return Err(WriteError::ForeignDistInfo {
                member: path.to_string(),
                dir: top.to_string(),
                ours: dist_info,
            });
        }
        if self.members.contains_key(path) {
            return Err(WriteError::DuplicateMember {
                member: path.to_string(),
            });
        }
        self.members
            .insert(path.to_string(), MemberContent { data, executable });
        Ok(())
    }

    /// Adds every regular file under `dir`, at `prefix/<path relative to
    /// dir>` (or just the relative path when `prefix` is empty). A file is
    /// executable when any of its x bits is set. Directories themselves are
    /// not recorded, so empty ones are dropped; symbolic links and other
    /// special files are refused, because a wheel cannot hold them.
    pub fn add_tree(&mut self, dir: &Path, prefix: &str) -> anyhow::Result<()> {
        let mut pending = vec![dir.to_path_buf()];
        while let Some(current) = pending.pop() {
            let entries = std::fs::read_dir(&current)
                .with_context(|| format!("cannot list {}", current.display()))?;
            for entry in entries {
                let entry = entry.with_context(|| format!("cannot list {}", current.display()))?;
                let path = entry.path();
                let file_type = entry
                    .file_type()
                    .with_context(|| format!("cannot stat {}", path.display()))?;
                if file_type.is_dir() {
                    pending.push(path);
                    continue;
                }
                if !file_type.is_file() {
                    bail!(
                        "{} is a symbolic link or special file, which a wheel cannot hold; \
                         replace it with a copy of the file it stands for",
                        path.display()
                    );
                }
                let member = member_name(dir, &path, prefix)?;
                let data = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let executable = is_executable(&entry)
                    .with_context(|| format!("cannot stat {}", path.display()))?;
                self.add_member(&member, data, executable)
                    .with_context(|| format!("cannot add {}", path.display()))?;
            }
        }
        Ok(())
    }

    /// The `.whl` bytes.
    pub fn to_bytes(&self, timestamp: ZipTimestamp) -> Result<Vec<u8>, WriteError> {
        let filename = self.filename();
        let dist_info = format!("{}/", filename.dist_info_dir());
        let metadata_error = |error| WriteError::Metadata { error };
        let metadata = self.metadata.render().map_err(metadata_error)?;
        let wheel = WheelInfo::for_tags(&self.tags, self.build.as_ref())
            .render()
            .map_err(metadata_error)?;

        // Members outside .dist-info in path order (the BTreeMap's), then
        // .dist-info's members with METADATA and WHEEL in path order.
        let mut dist_info_entries: BTreeMap<String, (&[u8], bool)> = BTreeMap::new();
        dist_info_entries.insert(format!("{dist_info}METADATA"), (metadata.as_bytes(), false));
        dist_info_entries.insert(format!("{dist_info}WHEEL"), (wheel.as_bytes(), false));
        let mut ordered: Vec<(&str, &[u8], bool)> = Vec::new();
        for (path, content) in &self.members {
            if path.starts_with(&dist_info) {
                dist_info_entries.insert(path.clone(), (&content.data, content.executable));
            } else {
                ordered.push((path, &content.data, content.executable));
            }
        }
        ordered.extend(
            dist_info_entries
                .iter()
                .map(|(path, &(data, executable))| (path.as_str(), data, executable)),
        );

        let record_path = format!("{dist_info}RECORD");
        let mut rows: Vec<RecordEntry> = ordered
            .iter()
            .map(|&(path, data, _)| RecordEntry::for_data(path, data))
            .collect();
        rows.push(RecordEntry::unhashed(&record_path));
        let record = write_record(&rows).into_bytes();
        ordered.push((&record_path, &record, false));

        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        let modified = timestamp.to_zip();
        for (path, data, executable) in ordered {
            let zip_error = |error: &dyn std::fmt::Display| WriteError::Zip {
                member: path.to_string(),
                error: error.to_string(),
            };
            let options = SimpleFileOptions::default()
                .compression_method(CompressionMethod::Deflated)
                .compression_level(Some(DEFLATE_LEVEL))
                .last_modified_time(modified)
                .unix_permissions(if executable { 0o755 } else { 0o644 })
                // Zip64 only where the size needs it (a pure function of the
                // size, so still deterministic); deflate can grow a
                // member slightly, hence the margin.
                .large_file(data.len() as u64 >= 0xF000_0000);
            zip.start_file(path, options).map_err(|e| zip_error(&e))?;
            zip.write_all(data).map_err(|e| zip_error(&e))?;
        }
        let cursor = zip.finish().map_err(|e| WriteError::Zip {
            member: "(central directory)".to_string(),
            error: e.to_string(),
        })?;
        Ok(cursor.into_inner())
    }

    /// Writes the wheel into `dest_dir` under its file name and returns the
    /// path. The bytes go to a temporary file in `dest_dir` that is renamed
    /// into place, so a failure never leaves a partial wheel at that name.
    pub fn write_into(&self, dest_dir: &Path, timestamp: ZipTimestamp) -> anyhow::Result<PathBuf> {
        let destination = dest_dir.join(self.filename().to_string());
        let bytes = self
            .to_bytes(timestamp)
            .with_context(|| format!("cannot build {}", destination.display()))?;
        let mut temp = tempfile::Builder::new()
            .prefix(".cuwheel-")
            .suffix(".whl.tmp")
            .tempfile_in(dest_dir)
            .with_context(|| format!("cannot create a temporary file in {}", dest_dir.display()))?;
        temp.write_all(&bytes)
            .and_then(|()| set_readable_by_all(temp.as_file()))
            .and_then(|()| temp.as_file().sync_all())
            .with_context(|| format!("cannot write {}", temp.path().display()))?;
        temp.persist(&destination)
            .with_context(|| format!("cannot move the new wheel to {}", destination.display()))?;
        Ok(destination)
    }
}

/// `prefix/relative/path` with `/` separators, for a file under `dir`.
fn member_name(dir: &Path, path: &Path, prefix: &str) -> anyhow::Result<String> {
    let relative = path
        .strip_prefix(dir)
        .expect("walked paths are under the walked directory");
    let mut parts: Vec<&str> = Vec::new();
    if !prefix.is_empty() {
        parts.push(prefix);
    }
    for component in relative.components() {
        let part = component.as_os_str().to_str().with_context(|| {
            format!(
                "{} has a name that is not UTF-8, which a wheel cannot hold; rename it",
                path.display()
            )
        })?;
        parts.push(part);
    }
    Ok(parts.join("/"))
}

#[cfg(unix)]
fn is_executable(entry: &std::fs::DirEntry) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    Ok(entry.metadata()?.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_entry: &std::fs::DirEntry) -> std::io::Result<bool> {
    Ok(false)
}

/// The temporary file is created 0600; a finished wheel is 0644 whatever the umask.
#[cfg(unix)]
fn set_readable_by_all(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_readable_by_all(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProjectName, Version, WheelArchive};

    fn builder() -> WheelBuilder {
        let metadata = CoreMetadata::new(
            ProjectName::new("Demo-Ext").unwrap(),
            Version::parse("0.1.0+pt211cu130").unwrap(),
        );
        let tags = TagSet::parse("cp311-cp311-manylinux_2_31_x86_64").unwrap();
        WheelBuilder::new(metadata, tags, None)
    }

    #[test]
    fn unix_seconds_to_zip_time() {
        let at = |s| ZipTimestamp::from_unix_seconds(s).unwrap();
        assert_eq!(at(0), ZipTimestamp::EARLIEST, "floored at 1980");
        assert_eq!(at(315_532_800), ZipTimestamp::EARLIEST);
        // `date -u -d @1700000001` = 2023-11-14 22:13:21; zip keeps even seconds.
        assert_eq!(
            at(1_700_000_001),
            ZipTimestamp {
                year: 2023,
                month: 11,
                day: 14,
                hour: 22,
                minute: 13,
                second: 20
            }
        );
        // 2000-02-29 (a leap day in a year divisible by 400) 12:00:00.
        assert_eq!((at(951_825_600).month, at(951_825_600).day), (2, 29));
        // 2107-12-31 23:59:59 is the last; one second later is refused.
        assert_eq!(at(4_354_819_199).year, 2107);
        assert!(ZipTimestamp::from_unix_seconds(4_354_819_200).is_err());
    }

    #[test]
    fn source_date_epoch_values() {
        assert_eq!(
            ZipTimestamp::from_source_date_epoch(None).unwrap(),
            ZipTimestamp::EARLIEST
        );
        assert_eq!(
            ZipTimestamp::from_source_date_epoch(Some("1700000000"))
                .unwrap()
                .year,
            2023
        );
        for bad in ["", "-1", "1.5", "soon", " 1", "99999999999999999999999"] {
            let err = ZipTimestamp::from_source_date_epoch(Some(bad))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("SOURCE_DATE_EPOCH="), "{bad:?}: {err}");
        }
    }

    #[test]
    fn refuses_bad_and_colliding_members() {
        let mut wheel = builder();
        wheel
            .add_member("demo_ext/__init__.py", vec![], false)
            .unwrap();
        for (path, words) in [
            ("../evil", "`..`"),
            ("/abs", "absolute"),
            ("a\\b", "`\\`"),
            ("a//b", "empty component"),
            ("demo_ext/__init__.py", "twice"),
            ("demo_ext-0.1.0+pt211cu130.dist-info/RECORD", "generates"),
            ("demo_ext-0.1.0+pt211cu130.dist-info/METADATA", "generates"),
            ("other-1.0.dist-info/METADATA", "second `.dist-info`"),
        ] {
            let err = wheel
                .add_member(path, vec![], false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(path), "{err}");
            assert!(err.contains(words), "{path}: {err}");
        }
    }

    #[test]
    fn bad_metadata_is_an_error_not_a_broken_wheel() {
        let mut wheel = builder();
        wheel.metadata.summary = Some("line one\nline two".to_string());
        let err = wheel
            .to_bytes(ZipTimestamp::EARLIEST)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot write the wheel's METADATA: the `Summary` value"),
            "{err}"
        );
    }

    #[test]
    fn add_tree_prefixes_paths_and_refuses_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/empty")).unwrap();
        std::fs::write(dir.path().join("sub/tool"), b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            dir.path().join("sub/tool"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        std::fs::write(dir.path().join("top.py"), b"").unwrap();
        let mut wheel = builder();
        wheel.add_tree(dir.path(), "demo_ext").unwrap();
        let added: Vec<(&str, bool)> = wheel
            .members
            .iter()
            .map(|(path, content)| (path.as_str(), content.executable))
            .collect();
        assert_eq!(
            added,
            [("demo_ext/sub/tool", true), ("demo_ext/top.py", false)]
        );

        std::os::unix::fs::symlink("top.py", dir.path().join("link.py")).unwrap();
        let err = format!("{:#}", builder().add_tree(dir.path(), "").unwrap_err());
        assert!(
            err.contains("link.py") && err.contains("symbolic link"),
            "{err}"
        );
    }

    #[test]
    fn written_wheel_reads_back_consistent_and_in_order() {
        let mut wheel = builder();
        wheel
            .add_member("demo_ext/z.py", b"z".to_vec(), false)
            .unwrap();
        wheel
            .add_member("demo_ext/_C.so", b"\x7fELF".to_vec(), true)
            .unwrap();
        wheel
            .add_member(
                "demo_ext-0.1.0+pt211cu130.dist-info/provenance.json",
                b"{}".to_vec(),
                false,
            )
            .unwrap();
        wheel
            .add_member(
                "demo_ext-0.1.0+pt211cu130.data/data/share/x",
                b"x".to_vec(),
                false,
            )
            .unwrap();
        wheel.add_member("a.pth", b"".to_vec(), false).unwrap();
        let bytes = wheel.to_bytes(ZipTimestamp::EARLIEST).unwrap();
        assert_eq!(bytes, wheel.to_bytes(ZipTimestamp::EARLIEST).unwrap());

        let name = wheel.filename().to_string();
        assert_eq!(
            name,
            "demo_ext-0.1.0+pt211cu130-cp311-cp311-manylinux_2_31_x86_64.whl"
        );
        let archive = WheelArchive::from_bytes(Path::new(&name), &bytes).unwrap();
        assert_eq!(archive.verify(), vec![]);
        let names: Vec<&str> = archive.members().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a.pth",
                "demo_ext-0.1.0+pt211cu130.data/data/share/x",
                "demo_ext/_C.so",
                "demo_ext/z.py",
                "demo_ext-0.1.0+pt211cu130.dist-info/METADATA",
                "demo_ext-0.1.0+pt211cu130.dist-info/WHEEL",
                "demo_ext-0.1.0+pt211cu130.dist-info/provenance.json",
                "demo_ext-0.1.0+pt211cu130.dist-info/RECORD",
            ]
        );
        let mode = |n: &str| archive.member(n).unwrap().unix_mode;
        assert_eq!(mode("demo_ext/_C.so"), Some(0o100755));
        assert_eq!(mode("demo_ext/z.py"), Some(0o100644));
        assert_eq!(archive.metadata().version.to_string(), "0.1.0+pt211cu130");
        assert_eq!(archive.metadata().name.as_str(), "Demo-Ext");
    }
}
