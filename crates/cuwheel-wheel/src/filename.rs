//! Wheel file names (binary distribution format, "File name convention").
//!
//! In: `{name}-{ver}(-{build})?-{py}-{abi}-{plat}.whl`. Out: a
//! [`WheelFilename`] whose `Display` is the canonical form (escaped name,
//! normalised version, sorted tag parts), or a [`FilenameError`] saying which
//! part is wrong.

use std::cmp::Ordering;
use std::fmt;

use super::pep440::Version;
use super::pep503::ProjectName;
use super::tags::TagSet;

/// The parts of a wheel's file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFilename {
    pub name: ProjectName,
    pub version: Version,
    pub build: Option<BuildTag>,
    pub tags: TagSet,
}

/// The optional build tag: starts with a digit; sorts by that number, then by
/// the rest as a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BuildTag {
    text: String,
    number: u64,
}

/// Why a string is not a wheel file name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid wheel file name `{filename}`: {reason}")]
pub struct FilenameError {
    pub filename: String,
    pub reason: String,
}

impl BuildTag {
    pub fn parse(text: &str) -> Result<BuildTag, String> {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "the build tag `{text}` must start with a digit (e.g. `1` or `1local`)"
            ));
        }
        if let Some(bad) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.')))
        {
            return Err(format!(
                "the build tag `{text}` contains {bad:?}; use ASCII letters, digits, `_` and `.`"
            ));
        }
        let number = text[..digits]
            .parse()
            .map_err(|_| format!("the build number in `{text}` is too large"))?;
        Ok(BuildTag {
            text: text.to_string(),
            number,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn number(&self) -> u64 {
        self.number
    }
}

impl Ord for BuildTag {
    fn cmp(&self, other: &BuildTag) -> Ordering {
        self.number
            .cmp(&other.number)
            .then_with(|| self.text.cmp(&other.text))
    }
}

impl PartialOrd for BuildTag {
    fn partial_cmp(&self, other: &BuildTag) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for BuildTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl WheelFilename {
    /// Parses a file name (not a path: no directory part).
    pub fn parse(filename: &str) -> Result<WheelFilename, FilenameError> {
        let fail = |reason: String| FilenameError {
            filename: filename.to_string(),
            reason,
        };
        let stem = filename
            .strip_suffix(".whl")
            .ok_or_else(|| fail("it does not end in `.whl`".to_string()))?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, tags) = match parts[..] {
            [name, version, python, abi, platform] => {
                (name, version, None, [python, abi, platform])
            }
            [name, version, build, python, abi, platform] => {
                (name, version, Some(build), [python, abi, platform])
            }
            _ => {
                return Err(fail(format!(
                    "expected 5 or 6 `-`-separated parts \
                     {{name}}-{{version}}(-{{build}})?-{{python}}-{{abi}}-{{platform}}, found {}",
                    parts.len()
                )));
            }
        };
        Ok(WheelFilename {
            name: ProjectName::new(name).map_err(|e| fail(e.to_string()))?,
            version: Version::parse(version).map_err(|e| fail(e.to_string()))?,
            build: build.map(BuildTag::parse).transpose().map_err(fail)?,
            tags: TagSet::parse(&tags.join("-")).map_err(|e| fail(e.to_string()))?,
        })
    }

    /// `{name}-{version}.dist-info`, the directory holding METADATA, WHEEL and RECORD.
    pub fn dist_info_dir(&self) -> String {
        format!("{}-{}.dist-info", self.name.wheel_form(), self.version)
    }

    /// `{name}-{version}.data`, the directory for scripts, headers and data.
    pub fn data_dir(&self) -> String {
        format!("{}-{}.data", self.name.wheel_form(), self.version)
    }
}

impl fmt::Display for WheelFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name.wheel_form(), self.version)?;
        if let Some(build) = &self.build {
            write!(f, "-{build}")?;
        }
        write!(f, "-{}.whl", self.tags)
    }
}

impl std::str::FromStr for WheelFilename {
    type Err = FilenameError;
    fn from_str(s: &str) -> Result<WheelFilename, FilenameError> {
        WheelFilename::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_our_wheel_names() {
        let text = "demo_ext-0.1.0+pt211cu130-cp313-cp313-manylinux_2_31_x86_64.whl";
        let name = WheelFilename::parse(text).unwrap();
        assert_eq!(name.name.as_str(), "demo_ext");
        assert_eq!(name.version.to_string(), "0.1.0+pt211cu130");
        assert_eq!(name.build, None);
        assert_eq!(name.tags.expand().len(), 1);
        assert_eq!(name.to_string(), text);
        assert_eq!(name.dist_info_dir(), "demo_ext-0.1.0+pt211cu130.dist-info");
        assert_eq!(name.data_dir(), "demo_ext-0.1.0+pt211cu130.data");
    }

    #[test]
    fn build_tag_and_canonical_form() {
        let name = WheelFilename::parse("Zope.Interface-05.0-12b-py2.py3-none-any.whl").unwrap();
        assert_eq!(name.build.as_ref().unwrap().number(), 12);
        assert_eq!(
            name.to_string(),
            "zope_interface-5.0-12b-py2.py3-none-any.whl"
        );
        assert_eq!(name.dist_info_dir(), "zope_interface-5.0.dist-info");
        assert!(BuildTag::parse("2").unwrap() < BuildTag::parse("10").unwrap());
        assert!(BuildTag::parse("1a").unwrap() < BuildTag::parse("1b").unwrap());
    }

    #[test]
    fn errors_name_the_file_and_the_part() {
        for (bad, words) in [
            ("demo-0.1.0-py3-none-any.zip", "does not end in `.whl`"),
            ("demo-0.1.0-none-any.whl", "found 4"),
            ("demo-0.1.0-x-py3-none-any.whl", "must start with a digit"),
            ("demo-0.1.x-py3-none-any.whl", "invalid version `0.1.x`"),
            ("-0.1.0-py3-none-any.whl", "name is empty"),
            ("demo-0.1.0-py3-none-any-x-y.whl", "found 7"),
            ("demo-0.1.0-py3..py4-none-any.whl", "python tag is empty"),
        ] {
            let err = WheelFilename::parse(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
            assert!(err.contains(words), "{bad}: {err}");
        }
    }
}
