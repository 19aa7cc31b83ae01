//! The two email-header files of `.dist-info/`: METADATA (the "Core metadata
//! specifications") and WHEEL (binary distribution format).
//!
//! In: a [`CoreMetadata`] or [`WheelInfo`] value, or the file's text. Out: the
//! file's text, or the fields a verifier and a publisher need, or a
//! [`MetadataError`] naming the file, the line and the problem.
//!
//! METADATA's fields are those of core metadata 2.4 a wheel built from
//! `[project]` can have (PEP 621's mapping, PEP 639's license fields). The
//! `Metadata-Version` written is the lowest that has every field written:
//! 2.4 with `License-Expression` or `License-File`, else 2.1, which every
//! pip, uv and twine still in use reads (2.2–2.4 add only `Dynamic`, for
//! sdists, and the license fields).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::filename::BuildTag;
use super::pep440::Version;
use super::pep503::ProjectName;
use super::tags::{Tag, TagSet};

/// The Metadata-Version of METADATA without PEP 639's license fields; see
/// the module documentation for why.
pub const METADATA_VERSION: &str = "2.1";
/// The Metadata-Version of METADATA with `License-Expression` or
/// `License-File` (PEP 639).
pub const METADATA_VERSION_LICENSES: &str = "2.4";

/// The WHEEL `Generator:` value.
pub const GENERATOR: &str = concat!("cuwheel ", env!("CARGO_PKG_VERSION"));

/// Core metadata: what we write into METADATA and what we read back.
/// Serialised (kebab-case, empty fields left out) in the recipe the plan
/// hands the wheel build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CoreMetadata {
    pub name: ProjectName,
    /// Written in normalised form, local label included (`0.1.0+pt211cu130`):
    /// installers compare it with the file name's version.
    pub version: Version,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// `Keywords`: written comma-separated in one field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// `Author` (names without an address) and `Author-email`
    /// (`Name <address>` entries), comma-separated, as PEP 621 maps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainer_email: Option<String>,
    /// The older free-text `License` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// A PEP 639 SPDX expression, canonical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license_expression: Option<String>,
    /// Paths under `.dist-info/licenses/`, one `License-File` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub license_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classifiers: Vec<String>,
    /// A PEP 440 specifier set such as `>=3.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<String>,
    /// PEP 508 requirements, one `Requires-Dist:` line each, in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_dist: Vec<String>,
    /// `Project-URL`: (label, URL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_urls: Vec<(String, String)>,
    /// Normalised extra names, one `Provides-Extra` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provides_extra: Vec<String>,
    /// The long description, written as the message body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// e.g. `text/markdown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_content_type: Option<String>,
}

/// The WHEEL file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelInfo {
    /// `major.minor`; installers refuse a major above 1.
    pub wheel_version: String,
    pub generator: Option<String>,
    pub root_is_purelib: bool,
    /// One per `Tag:` line, in file order.
    pub tags: Vec<Tag>,
    pub build: Option<String>,
}

/// Which file a [`MetadataError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataFile {
    Metadata,
    Wheel,
}

/// Why METADATA or WHEEL cannot be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MetadataError {
    pub file: MetadataFile,
    /// 1-based, where the problem is on one line.
    pub line: Option<usize>,
    pub reason: String,
}

impl fmt::Display for MetadataFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MetadataFile::Metadata => "METADATA",
            MetadataFile::Wheel => "WHEEL",
        })
    }
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{} line {line}: {}", self.file, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}

/// The header fields of an email-style file, in order, with folded lines
/// joined, and the body after the first blank line.
struct Headers {
    file: MetadataFile,
    fields: Vec<(String, String, usize)>,
    body: String,
}

impl Headers {
    fn parse(file: MetadataFile, text: &str) -> Result<Headers, MetadataError> {
        let mut fields: Vec<(String, String, usize)> = Vec::new();
        let mut lines = text.split_inclusive('\n').enumerate();
        let mut body = String::new();
        for (index, raw) in lines.by_ref() {
            let line = raw.trim_end_matches(['\n', '\r']);
            let number = index + 1;
            if line.is_empty() {
                break;
            }
            if line.starts_with([' ', '\t']) {
                let Some(last) = fields.last_mut() else {
                    return Err(MetadataError {
                        file,
                        line: Some(number),
                        reason: "a continuation line (starting with whitespace) before any field"
                            .to_string(),
                    });
                };
                last.1.push('\n');
                last.1.push_str(line.trim_start());
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(MetadataError {
                    file,
                    line: Some(number),
                    reason: format!("`{line}` is not a `Field: value` line"),
                });
            };
            if key.is_empty() || key.contains(|c: char| c.is_whitespace()) {
                return Err(MetadataError {
                    file,
                    line: Some(number),
                    reason: format!("`{key}` is not a field name"),
                });
            }
            fields.push((key.to_string(), value.trim().to_string(), number));
        }
        for (_, raw) in lines {
            body.push_str(raw);
        }
        Ok(Headers { file, fields, body })
    }

    fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(k, _, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v, _)| v.as_str())
    }

    /// A field that may appear at most once.
    fn single(&self, key: &str) -> Result<Option<(&str, usize)>, MetadataError> {
        let mut found = self
            .fields
            .iter()
            .filter(|(k, _, _)| k.eq_ignore_ascii_case(key));
        let first = found.next();
        if let Some((_, _, line)) = found.next() {
            return Err(MetadataError {
                file: self.file,
                line: Some(*line),
                reason: format!("`{key}` appears more than once"),
            });
        }
        Ok(first.map(|(_, v, line)| (v.as_str(), *line)))
    }

    fn required(&self, key: &str) -> Result<(&str, usize), MetadataError> {
        self.single(key)?.ok_or_else(|| MetadataError {
            file: self.file,
            line: None,
            reason: format!("the required field `{key}` is missing"),
        })
    }
}

/// Appends `Key: value`, refusing values that would break the header format.
fn push_field(
    out: &mut String,
    file: MetadataFile,
    key: &str,
    value: &str,
) -> Result<(), MetadataError> {
    if value.contains(['\n', '\r']) {
        return Err(MetadataError {
            file,
            line: None,
            reason: format!(
                "the `{key}` value {value:?} contains a line break; keep it on one line"
            ),
        });
    }
    out.push_str(key);
    out.push_str(": ");
    out.push_str(value);
    out.push('\n');
    Ok(())
}

impl CoreMetadata {
    /// Metadata with only the required fields.
    pub fn new(name: ProjectName, version: Version) -> CoreMetadata {
        CoreMetadata {
            name,
            version,
            summary: None,
            keywords: Vec::new(),
            author: None,
            author_email: None,
            maintainer: None,
            maintainer_email: None,
            license: None,
            license_expression: None,
            license_files: Vec::new(),
            classifiers: Vec::new(),
            requires_python: None,
            requires_dist: Vec::new(),
            project_urls: Vec::new(),
            provides_extra: Vec::new(),
            description: None,
            description_content_type: None,
        }
    }

    /// The Metadata-Version this metadata needs.
    pub fn metadata_version(&self) -> &'static str {
        if self.license_expression.is_some() || !self.license_files.is_empty() {
            METADATA_VERSION_LICENSES
        } else {
            METADATA_VERSION
        }
    }

    /// METADATA's text, fields in the order of the core metadata
    /// specification.
    pub fn render(&self) -> Result<String, MetadataError> {
        let file = MetadataFile::Metadata;
        let mut out = String::new();
        let mut field = |key: &str, value: &str| push_field(&mut out, file, key, value);
        field("Metadata-Version", self.metadata_version())?;
        field("Name", self.name.as_str())?;
        field("Version", &self.version.to_string())?;
        let optional = [
            ("Summary", &self.summary),
            ("Description-Content-Type", &self.description_content_type),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                field(key, value)?;
            }
        }
        if !self.keywords.is_empty() {
            field("Keywords", &self.keywords.join(","))?;
        }
        let people = [
            ("Author", &self.author),
            ("Author-email", &self.author_email),
            ("Maintainer", &self.maintainer),
            ("Maintainer-email", &self.maintainer_email),
            ("License", &self.license),
            ("License-Expression", &self.license_expression),
        ];
        for (key, value) in people {
            if let Some(value) = value {
                field(key, value)?;
            }
        }
        for license_file in &self.license_files {
            field("License-File", license_file)?;
        }
        for classifier in &self.classifiers {
            field("Classifier", classifier)?;
        }
        for requirement in &self.requires_dist {
            field("Requires-Dist", requirement)?;
        }
        if let Some(requires_python) = &self.requires_python {
            field("Requires-Python", requires_python)?;
        }
        for (label, url) in &self.project_urls {
            field("Project-URL", &format!("{label}, {url}"))?;
        }
        for extra in &self.provides_extra {
            field("Provides-Extra", extra)?;
        }
        if let Some(description) = &self.description {
            out.push('\n');
            out.push_str(description);
        }
        Ok(out)
    }

    /// Reads the fields this type holds from METADATA's text; other fields
    /// are ignored. The description comes from the body or, in older files,
    /// a `Description:` field.
    pub fn parse(text: &str) -> Result<CoreMetadata, MetadataError> {
        let headers = Headers::parse(MetadataFile::Metadata, text)?;
        let fail = |line: usize, reason: String| MetadataError {
            file: MetadataFile::Metadata,
            line: Some(line),
            reason,
        };
        let (metadata_version, line) = headers.required("Metadata-Version")?;
        if !matches!(metadata_version.split('.').next(), Some("1" | "2")) {
            return Err(fail(
                line,
                format!("Metadata-Version `{metadata_version}` is not 1.x or 2.x"),
            ));
        }
        let (name, line) = headers.required("Name")?;
        let name = ProjectName::new(name).map_err(|e| fail(line, e.to_string()))?;
        let (version, line) = headers.required("Version")?;
        let version = Version::parse(version).map_err(|e| fail(line, e.to_string()))?;
        let text_field = |key: &str| -> Result<Option<String>, MetadataError> {
            Ok(headers.single(key)?.map(|(v, _)| v.to_string()))
        };
        let all = |key: &str| -> Vec<String> { headers.all(key).map(str::to_string).collect() };
        let description = if headers.body.is_empty() {
            text_field("Description")?
        } else {
            Some(headers.body.clone())
        };
        let project_urls = headers
            .all("Project-URL")
            .map(|entry| match entry.split_once(',') {
                Some((label, url)) => (label.trim().to_string(), url.trim().to_string()),
                None => (String::new(), entry.trim().to_string()),
            })
            .collect();
        let keywords = text_field("Keywords")?
            .map(|k| k.split(',').map(|w| w.trim().to_string()).collect())
            .unwrap_or_default();
        Ok(CoreMetadata {
            name,
            version,
            summary: text_field("Summary")?,
            keywords,
            author: text_field("Author")?,
            author_email: text_field("Author-email")?,
            maintainer: text_field("Maintainer")?,
            maintainer_email: text_field("Maintainer-email")?,
            license: text_field("License")?,
            license_expression: text_field("License-Expression")?,
            license_files: all("License-File"),
            classifiers: all("Classifier"),
            requires_python: text_field("Requires-Python")?,
            requires_dist: all("Requires-Dist"),
            project_urls,
            provides_extra: all("Provides-Extra"),
            description,
            description_content_type: text_field("Description-Content-Type")?,
        })
    }
}

impl WheelInfo {
    /// The WHEEL of a wheel cuwheel writes: version 1.0, not purelib (it
    /// holds compiled code), one `Tag:` per expanded tag, `Build:` only with
    /// a build tag.
    pub fn for_tags(tags: &TagSet, build: Option<&BuildTag>) -> WheelInfo {
        WheelInfo {
            wheel_version: "1.0".to_string(),
            generator: Some(GENERATOR.to_string()),
            root_is_purelib: false,
            tags: tags.expand(),
            build: build.map(|b| b.to_string()),
        }
    }

    /// WHEEL's text.
    pub fn render(&self) -> Result<String, MetadataError> {
        let file = MetadataFile::Wheel;
        let mut out = String::new();
        push_field(&mut out, file, "Wheel-Version", &self.wheel_version)?;
        if let Some(generator) = &self.generator {
            push_field(&mut out, file, "Generator", generator)?;
        }
        let purelib = if self.root_is_purelib {
            "true"
        } else {
            "false"
        };
        push_field(&mut out, file, "Root-Is-Purelib", purelib)?;
        for tag in &self.tags {
            push_field(&mut out, file, "Tag", &tag.to_string())?;
        }
        if let Some(build) = &self.build {
            push_field(&mut out, file, "Build", build)?;
        }
        Ok(out)
    }

    pub fn parse(text: &str) -> Result<WheelInfo, MetadataError> {
        let headers = Headers::parse(MetadataFile::Wheel, text)?;
        let fail = |line: usize, reason: String| MetadataError {
            file: MetadataFile::Wheel,
            line: Some(line),
            reason,
        };
        let (wheel_version, _) = headers.required("Wheel-Version")?;
        let (purelib, line) = headers.required("Root-Is-Purelib")?;
        let root_is_purelib = match purelib.to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            _ => {
                return Err(fail(
                    line,
                    format!("Root-Is-Purelib is `{purelib}`, expected `true` or `false`"),
                ));
            }
        };
        let tags = headers
            .fields
            .iter()
            .filter(|(k, _, _)| k.eq_ignore_ascii_case("Tag"))
            .map(|(_, v, line)| Tag::parse(v).map_err(|e| fail(*line, e.to_string())))
            .collect::<Result<Vec<Tag>, MetadataError>>()?;
        Ok(WheelInfo {
            wheel_version: wheel_version.to_string(),
            generator: headers.single("Generator")?.map(|(v, _)| v.to_string()),
            root_is_purelib,
            tags,
            build: headers.single("Build")?.map(|(v, _)| v.to_string()),
        })
    }

    /// The major part of Wheel-Version, if it is `<number>.<number>`.
    pub fn wheel_version_major(&self) -> Option<u64> {
        let (major, minor) = self.wheel_version.split_once('.')?;
        minor.parse::<u64>().ok()?;
        major.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> CoreMetadata {
        let mut metadata = CoreMetadata::new(
            ProjectName::new("demo-ext").unwrap(),
            Version::parse("0.1.0+pt211cu130").unwrap(),
        );
        metadata.summary = Some("A demo".to_string());
        metadata.requires_python = Some(">=3.9".to_string());
        metadata.requires_dist = vec![
            "torch==2.11.0".to_string(),
            "numpy; extra == \"np\"".to_string(),
        ];
        metadata
    }

    #[test]
    fn metadata_text_is_exactly_this() {
        let mut metadata = demo();
        metadata.description = Some("# Demo\n\nbody\n".to_string());
        metadata.description_content_type = Some("text/markdown".to_string());
        let text = metadata.render().unwrap();
        assert_eq!(
            text,
            "Metadata-Version: 2.1\nName: demo-ext\nVersion: 0.1.0+pt211cu130\nSummary: A demo\n\
             Description-Content-Type: text/markdown\nRequires-Dist: torch==2.11.0\n\
             Requires-Dist: numpy; extra == \"np\"\nRequires-Python: >=3.9\n\n# Demo\n\nbody\n"
        );
        assert_eq!(CoreMetadata::parse(&text).unwrap(), metadata);
    }

    #[test]
    fn every_field_is_written_in_order_and_parses_back() {
        let mut metadata = demo();
        metadata.keywords = vec!["cuda".into(), "pytorch".into()];
        metadata.author = Some("Ada".into());
        metadata.author_email = Some("Bob <bob@example.org>, carol@example.org".into());
        metadata.maintainer_email = Some("dan@example.org".into());
        metadata.license_expression = Some("MIT OR Apache-2.0".into());
        metadata.license_files = vec!["LICENSE".into(), "licenses/NOTICE.txt".into()];
        metadata.classifiers = vec!["Programming Language :: Python :: 3".into()];
        metadata.project_urls = vec![("Source".into(), "https://example.org/src".into())];
        metadata.provides_extra = vec!["np".into()];
        let text = metadata.render().unwrap();
        assert_eq!(
            text,
            "Metadata-Version: 2.4\nName: demo-ext\nVersion: 0.1.0+pt211cu130\nSummary: A demo\n\
             Keywords: cuda,pytorch\nAuthor: Ada\nAuthor-email: Bob <bob@example.org>, carol@example.org\n\
             Maintainer-email: dan@example.org\nLicense-Expression: MIT OR Apache-2.0\n\
             License-File: LICENSE\nLicense-File: licenses/NOTICE.txt\n\
             Classifier: Programming Language :: Python :: 3\nRequires-Dist: torch==2.11.0\n\
             Requires-Dist: numpy; extra == \"np\"\nRequires-Python: >=3.9\n\
             Project-URL: Source, https://example.org/src\nProvides-Extra: np\n"
        );
        assert_eq!(CoreMetadata::parse(&text).unwrap(), metadata);
        let json = serde_json::to_string(&metadata).unwrap();
        assert!(
            json.contains("\"license-expression\":\"MIT OR Apache-2.0\""),
            "{json}"
        );
        assert_eq!(
            serde_json::from_str::<CoreMetadata>(&json).unwrap(),
            metadata
        );
    }

    #[test]
    fn metadata_round_trips_without_optional_fields() {
        let metadata =
            CoreMetadata::new(ProjectName::new("x").unwrap(), Version::parse("1").unwrap());
        assert_eq!(
            CoreMetadata::parse(&metadata.render().unwrap()).unwrap(),
            metadata
        );
    }

    #[test]
    fn metadata_refuses_line_breaks_and_reports_bad_files() {
        let mut metadata = demo();
        metadata.summary = Some("two\nlines".to_string());
        let err = metadata.render().unwrap_err().to_string();
        assert!(
            err.contains("METADATA") && err.contains("Summary") && err.contains("line break"),
            "{err}"
        );

        for (text, words) in [
            ("Name: x\nVersion: 1\n", "`Metadata-Version` is missing"),
            ("Metadata-Version: 2.1\nName: x\n", "`Version` is missing"),
            (
                "Metadata-Version: 2.1\nName: x\nVersion: 1.0+\n",
                "line 3: invalid version",
            ),
            (
                "Metadata-Version: 2.1\nName: x\nName: y\nVersion: 1\n",
                "line 3: `Name` appears more than once",
            ),
            (
                "Metadata-Version: 2.1\nno colon\n",
                "line 2: `no colon` is not",
            ),
            (" folded\n", "line 1: a continuation line"),
            (
                "Metadata-Version: 3.0\nName: x\nVersion: 1\n",
                "not 1.x or 2.x",
            ),
        ] {
            let err = CoreMetadata::parse(text).unwrap_err().to_string();
            assert!(err.starts_with("METADATA"), "{err}");
            assert!(err.contains(words), "{text:?}: {err}");
        }
    }

    #[test]
    fn wheel_file_is_exactly_this_and_parses_back() {
        let tags = TagSet::parse("cp39.cp310-abi3-manylinux_2_31_x86_64").unwrap();
        let info = WheelInfo::for_tags(&tags, None);
        let text = info.render().unwrap();
        assert_eq!(
            text,
            format!(
                "Wheel-Version: 1.0\nGenerator: cuwheel {}\nRoot-Is-Purelib: false\n\
                 Tag: cp310-abi3-manylinux_2_31_x86_64\nTag: cp39-abi3-manylinux_2_31_x86_64\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(WheelInfo::parse(&text).unwrap(), info);
        assert_eq!(info.wheel_version_major(), Some(1));

        let build = BuildTag::parse("7").unwrap();
        let text = WheelInfo::for_tags(&tags, Some(&build)).render().unwrap();
        assert!(text.ends_with("Build: 7\n"), "{text}");
    }

    #[test]
    fn wheel_file_errors() {
        let err = WheelInfo::parse("Wheel-Version: 1.0\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "WHEEL: the required field `Root-Is-Purelib` is missing"
        );
        let err = WheelInfo::parse("Wheel-Version: 1.0\nRoot-Is-Purelib: yes\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("`yes`"), "{err}");
        let err = WheelInfo::parse("Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3: invalid tag `py3-none`"), "{err}");
        let info = WheelInfo::parse("Wheel-Version: two\nRoot-Is-Purelib: false\n").unwrap();
        assert_eq!(info.wheel_version_major(), None);
    }
}
