//! The wheel format: names, versions, tags, METADATA/WHEEL/RECORD, a deterministic writer and a verifying reader.
//!
//! One file per specification: [`pep503`] project names, [`pep440`] versions,
//! [`tags`] compatibility tags, [`filename`] wheel file names, [`metadata`]
//! METADATA and WHEEL (and [`metadata_fields`] its fields as installers check
//! them), [`record`] RECORD; [`writer`] writes a wheel
//! deterministically and [`reader`] opens and verifies any wheel;
//! [`member_path`] is the path rule both share; [`arch`] names the
//! architectures; [`platform`] chooses the
//! platform tag of a wheel cuwheel builds.

pub mod arch;
pub mod file_kind;
pub mod filename;
pub mod known_tags;
pub mod manylinux;
pub mod member_path;
pub mod metadata;
pub mod metadata_fields;
pub mod pep440;
pub mod pep503;
pub mod pep508;
pub mod platform;
pub mod problems;
pub mod reader;
pub mod record;
pub mod runtime_provided;
pub mod specifier;
pub mod tags;
pub mod terminal;
pub mod writer;
pub mod zip;

pub use arch::Arch;
pub use filename::{BuildTag, FilenameError, WheelFilename};
pub use member_path::check_member_path;
pub use metadata::{CoreMetadata, MetadataError, MetadataFile, WheelInfo};
pub use pep440::{LocalSegment, PreRelease, PreReleaseKind, Version, VersionError};
pub use pep503::{NameError, ProjectName, normalize_name, wheel_name_form};
pub use platform::PlatformRule;
pub use problems::{MemberDigest, ProblemKind, Record, WheelProblem};
pub use reader::{Member, WheelArchive, WheelError, WheelFile};
pub use record::{FileHash, RecordEntry, RecordError, RecordHasher, parse_record, write_record};
pub use specifier::{Specifier, SpecifierError, parse_specifiers};
pub use tags::{Tag, TagError, TagSet};
pub use writer::{DEFLATE_LEVEL, SOURCE_DATE_EPOCH, WheelBuilder, WriteError, ZipTimestamp};
