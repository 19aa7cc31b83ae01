//! The CPython builds a matrix targets: a version, and whether the build is
//! free-threaded (PEP 703).
//!
//! In: `"3.13"` or `"3.13t"` as `tool.cuwheel.matrix.python` writes it, or
//! the compact form of a cell name (`313`, `313t`). Out: a [`PythonAbi`]
//! that names its wheel tags (`cp313-cp313`, `cp313-cp313t`), its header
//! directory (`python3.13t`) and its extension suffix
//! (`cpython-313t-x86_64-linux-gnu`), ordered 3.13 < 3.13t < 3.14.
//!
//! A free-threaded build has its own ABI: its wheels carry the `t` ABI tag
//! and cannot be loaded by the regular interpreter, nor the regular ones by
//! it; abi3 wheels do not exist for it (its limited API comes with 3.15,
//! PEP 803). Free-threaded builds exist from CPython 3.13 on.

use std::fmt;
use std::str::FromStr;

use crate::spec::version::{InvalidValue, PythonVersion};

/// The first CPython with a free-threaded build.
pub const FIRST_FREE_THREADED: PythonVersion = PythonVersion::new(3, 13);

/// A CPython build: `3.13` or free-threaded `3.13t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonAbi {
    pub version: PythonVersion,
    pub free_threaded: bool,
}

impl PythonAbi {
    /// The regular (GIL) build of `version`.
    pub const fn regular(version: PythonVersion) -> PythonAbi {
        PythonAbi {
            version,
            free_threaded: false,
        }
    }

    /// `313` or `313t`: the digits of labels and tags.
    pub fn compact(&self) -> String {
        format!("{}{}", self.version.compact(), self.suffix())
    }

    fn suffix(&self) -> &'static str {
        if self.free_threaded { "t" } else { "" }
    }

    /// Reads [`PythonAbi::compact`] back.
    pub fn from_compact(text: &str) -> Option<PythonAbi> {
        let (digits, free_threaded) = match text.strip_suffix('t') {
            Some(digits) => (digits, true),
            None => (text, false),
        };
        let version = PythonVersion::from_compact(digits)?;
        (!free_threaded || version >= FIRST_FREE_THREADED).then_some(PythonAbi {
            version,
            free_threaded,
        })
    }

    /// `py313t`: the Python part of a cell name.
    pub fn label(&self) -> String {
        format!("py{}", self.compact())
    }

    /// `cp313`: the interpreter tag of its wheels (the same for both builds).
    pub fn interpreter_tag(&self) -> String {
        self.version.cpython_tag()
    }

    /// `cp313t`: the ABI tag of its wheels.
    pub fn abi_tag(&self) -> String {
        format!("cp{}", self.compact())
    }

    /// `python3.13t`: the directory under `include/` holding `Python.h`.
    pub fn include_dir(&self) -> String {
        format!("python{self}")
    }

    /// `cpython-313t-x86_64-linux-gnu`: the middle of its extension modules'
    /// file names (`_C.cpython-313t-x86_64-linux-gnu.so`).
    pub fn extension_tag(&self) -> String {
        self.extension_tag_on(crate::wheel::Arch::X86_64)
    }

    /// [`extension_tag`](Self::extension_tag) on `arch`:
    /// `cpython-313-aarch64-linux-gnu`.
    pub fn extension_tag_on(&self, arch: crate::wheel::Arch) -> String {
        format!("cpython-{}-{}", self.compact(), arch.multiarch())
    }
}

impl fmt::Display for PythonAbi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.version, self.suffix())
    }
}

impl FromStr for PythonAbi {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<PythonAbi, InvalidValue> {
        let Some(plain) = text.strip_suffix('t') else {
            return Ok(PythonAbi::regular(text.parse()?));
        };
        let version: PythonVersion = plain.parse()?;
        if version < FIRST_FREE_THREADED {
            return Err(InvalidValue::new(
                format!(
                    "`{text}` names a free-threaded Python {version}, but free-threaded builds \
                     exist from Python {FIRST_FREE_THREADED} on"
                ),
                format!("write \"{version}\", or a free-threaded 3.13 or later like \"3.13t\""),
            ));
        }
        Ok(PythonAbi {
            version,
            free_threaded: true,
        })
    }
}

impl serde::Serialize for PythonAbi {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for PythonAbi {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abi(text: &str) -> PythonAbi {
        text.parse().unwrap()
    }

    #[test]
    fn regular_and_free_threaded_builds_name_their_tags() {
        let regular = abi("3.13");
        assert!(!regular.free_threaded);
        assert_eq!(
            (
                regular.label(),
                regular.interpreter_tag(),
                regular.abi_tag()
            ),
            ("py313".into(), "cp313".into(), "cp313".into())
        );
        let threaded = abi("3.13t");
        assert!(threaded.free_threaded);
        assert_eq!(threaded.to_string(), "3.13t");
        assert_eq!(
            (
                threaded.label(),
                threaded.interpreter_tag(),
                threaded.abi_tag()
            ),
            ("py313t".into(), "cp313".into(), "cp313t".into())
        );
        assert_eq!(threaded.include_dir(), "python3.13t");
        assert_eq!(threaded.extension_tag(), "cpython-313t-x86_64-linux-gnu");
        assert_eq!(regular.extension_tag(), "cpython-313-x86_64-linux-gnu");
    }

    #[test]
    fn orders_each_version_before_its_free_threaded_build() {
        let mut all: Vec<PythonAbi> = ["3.14", "3.13t", "3.13", "3.9"]
            .iter()
            .map(|t| abi(t))
            .collect();
        all.sort();
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["3.9", "3.13", "3.13t", "3.14"]);
    }

    #[test]
    fn compact_form_reads_back() {
        for text in ["3.9", "3.13", "3.13t", "3.14t"] {
            let value = abi(text);
            assert_eq!(PythonAbi::from_compact(&value.compact()), Some(value));
        }
        assert_eq!(PythonAbi::from_compact("312t"), None);
        assert_eq!(PythonAbi::from_compact("t"), None);
    }

    #[test]
    fn refuses_free_threaded_builds_before_3_13() {
        let err = "3.12t".parse::<PythonAbi>().unwrap_err();
        assert!(err.problem.contains("from Python 3.13 on"), "{err}");
        assert!(err.fix.contains("\"3.12\""), "{err}");
        assert!("3.13.1t".parse::<PythonAbi>().is_err());
        assert!("t".parse::<PythonAbi>().is_err());
    }

    #[test]
    fn round_trips_through_serde() {
        let value = abi("3.14t");
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(json, "\"3.14t\"");
        assert_eq!(serde_json::from_str::<PythonAbi>(&json).unwrap(), value);
    }
}
