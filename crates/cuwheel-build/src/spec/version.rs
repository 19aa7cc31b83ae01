//! The `major.minor` versions a matrix is made of: CUDA toolkits, Pythons and
//! torch releases.
//!
//! In: a string as written in `pyproject.toml` (`"13.0"`, `"3.13"`, `"2.11"`)
//! or the compact digits of a cell name (`130`, `313`, `211`). Out: a
//! [`CudaVersion`], [`PythonVersion`] or [`TorchVersion`] that orders
//! numerically (3.9 < 3.11) and prints both ways, or an [`InvalidValue`]
//! saying how to write it.
//!
//! The compact form drops the dot, so one part has to be a single digit for
//! it to read back: CUDA minors (`cu124` is 12.4), Python and torch majors
//! (`py313` is 3.13, `pt211` is 2.11). Versions that break this are refused
//! when parsed rather than named ambiguously later.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::str::FromStr;

/// A value in `pyproject.toml` (or a cell name) that cannot be read, with how
/// to write it instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}; {fix}")]
pub struct InvalidValue {
    /// What is wrong, naming the value (`` `8` is not a CUDA arch ``).
    pub problem: String,
    /// What to write instead.
    pub fix: String,
}

impl InvalidValue {
    pub fn new(problem: impl Into<String>, fix: impl Into<String>) -> InvalidValue {
        InvalidValue {
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// Which part of a version must be one digit for its compact form to be
/// unambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneDigit {
    Major,
    Minor,
}

/// What a [`MajorMinor`] is the version of.
pub trait VersionKind: Copy + Eq + Ord + Hash + Default {
    /// The name used in messages: "CUDA", "Python", "torch".
    const WHAT: &'static str;
    /// A valid example for messages.
    const EXAMPLE: &'static str;
    const ONE_DIGIT: OneDigit;

    /// A kind-specific reason to refuse a spelling, checked before the
    /// generic `major.minor` rule (e.g. free-threaded `3.13t`).
    fn refuse(_text: &str) -> Option<InvalidValue> {
        None
    }
}

/// A `major.minor` version of one [`VersionKind`]; ordered numerically.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MajorMinor<K: VersionKind> {
    pub major: u32,
    pub minor: u32,
    kind: PhantomData<K>,
}

/// Marker for CUDA toolkit and runtime versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Cuda;
/// Marker for CPython versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Python;
/// Marker for torch release series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Torch;

/// A CUDA toolkit or runtime version (`13.0`); `cuwheel lock` picks the patch.
pub type CudaVersion = MajorMinor<Cuda>;
/// A CPython version (`3.13`); [`PythonAbi`] adds the free-threaded builds.
pub type PythonVersion = MajorMinor<Python>;
/// A torch release series (`2.11`); `cuwheel lock` picks the patch.
pub type TorchVersion = MajorMinor<Torch>;

impl VersionKind for Cuda {
    const WHAT: &'static str = "CUDA";
    const EXAMPLE: &'static str = "13.0";
    const ONE_DIGIT: OneDigit = OneDigit::Minor;
}

impl VersionKind for Python {
    const WHAT: &'static str = "Python";
    const EXAMPLE: &'static str = "3.13";
    const ONE_DIGIT: OneDigit = OneDigit::Major;

    fn refuse(text: &str) -> Option<InvalidValue> {
        let plain = text.strip_suffix('t')?;
        plain.parse::<PythonVersion>().ok()?;
        Some(InvalidValue::new(
            format!("`{text}` is a free-threaded Python, which is not a plain version"),
            format!("write \"{plain}\" here"),
        ))
    }
}

impl VersionKind for Torch {
    const WHAT: &'static str = "torch";
    const EXAMPLE: &'static str = "2.11";
    const ONE_DIGIT: OneDigit = OneDigit::Major;
}

impl<K: VersionKind> MajorMinor<K> {
    /// A version from its parts. The caller keeps the one-digit part below 10
    /// (parsing checks it; constants in the code are written by hand).
    pub const fn new(major: u32, minor: u32) -> MajorMinor<K> {
        MajorMinor {
            major,
            minor,
            kind: PhantomData,
        }
    }

    /// The digits without the dot, as used in labels: `130`, `313`, `211`.
    pub fn compact(&self) -> String {
        format!("{}{}", self.major, self.minor)
    }

    /// Reads the compact form back (`130` → 13.0 for CUDA, `313` → 3.13 for
    /// Python); `None` when the digits cannot be split unambiguously.
    pub fn from_compact(digits: &str) -> Option<MajorMinor<K>> {
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = match K::ONE_DIGIT {
            OneDigit::Major => digits.split_at(1),
            OneDigit::Minor => digits.split_at(digits.len() - 1),
        };
        Some(MajorMinor::new(
            canonical_number(major)?,
            canonical_number(minor)?,
        ))
    }
}

/// A decimal number without leading zeros (so every number has one spelling).
pub(super) fn canonical_number(digits: &str) -> Option<u32> {
    let canonical = digits == "0" || !digits.starts_with('0');
    if digits.is_empty() || !canonical || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl<K: VersionKind> FromStr for MajorMinor<K> {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<MajorMinor<K>, InvalidValue> {
        if let Some(refusal) = K::refuse(text) {
            return Err(refusal);
        }
        let what = K::WHAT;
        let example = K::EXAMPLE;
        let parts: Vec<&str> = text.split('.').collect();
        let numbers: Option<Vec<u32>> = parts.iter().map(|part| canonical_number(part)).collect();
        let Some(numbers) = numbers else {
            let problem = format!("`{text}` is not a {what} version");
            return Err(match leading_zero_fix(&parts) {
                Some(fixed) => InvalidValue::new(problem, format!("write \"{fixed}\"")),
                None => {
                    InvalidValue::new(problem, format!("write major.minor, like \"{example}\""))
                }
            });
        };
        let (major, minor) = match numbers[..] {
            [major, minor] => (major, minor),
            [major] => {
                return Err(InvalidValue::new(
                    format!("{what} version `{text}` has no minor version"),
                    format!("write major.minor, like \"{major}.0\""),
                ));
            }
            [major, minor, ..] => {
                return Err(InvalidValue::new(
                    format!("{what} version `{text}` names a patch release"),
                    format!(
                        "write only major.minor, \"{major}.{minor}\"; `cuwheel lock` picks the patch release"
                    ),
                ));
            }
            [] => unreachable!("split always yields at least one part"),
        };
        let (part, value) = match K::ONE_DIGIT {
            OneDigit::Major => ("major", major),
            OneDigit::Minor => ("minor", minor),
        };
        if value > 9 {
            return Err(InvalidValue::new(
                format!(
                    "{what} version `{text}` has a two-digit {part} version, which cuwheel's \
                     compact labels (cu124, py313, pt211) cannot spell unambiguously"
                ),
                format!(
                    "use a {what} version cuwheel knows, like \"{example}\"; \
                     {what} {text} needs a change to cuwheel's labels"
                ),
            ));
        }
        Ok(MajorMinor::new(major, minor))
    }
}

/// `12.04` → `12.4`, when leading zeros are the only problem.
fn leading_zero_fix(parts: &[&str]) -> Option<String> {
    let trimmed: Vec<String> = parts
        .iter()
        .map(|part| {
            let digits = part.trim_start_matches('0');
            if digits.is_empty() && !part.is_empty() {
                "0"
            } else {
                digits
            }
            .to_string()
        })
        .collect();
    trimmed
        .iter()
        .all(|part| canonical_number(part).is_some())
        .then(|| trimmed.join("."))
}

impl<K: VersionKind> fmt::Display for MajorMinor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl<K: VersionKind> fmt::Debug for MajorMinor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}.{}", K::WHAT, self.major, self.minor)
    }
}

impl<K: VersionKind> serde::Serialize for MajorMinor<K> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, K: VersionKind> serde::Deserialize<'de> for MajorMinor<K> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl CudaVersion {
    /// `cu130`: the CUDA part of cell names, local versions and index names.
    pub fn label(&self) -> String {
        format!("cu{}", self.compact())
    }
}

impl PythonVersion {
    /// `py313`: the Python part of a cell name.
    pub fn label(&self) -> String {
        format!("py{}", self.compact())
    }

    /// `cp313`: the CPython interpreter and ABI tag of a wheel.
    pub fn cpython_tag(&self) -> String {
        format!("cp{}", self.compact())
    }
}

impl TorchVersion {
    /// `torch211`: the torch part of a cell name.
    pub fn label(&self) -> String {
        format!("torch{}", self.compact())
    }

    /// `pt211`: the torch part of a wheel's local version label, as PyTorch's
    /// own extension wheels spell it.
    pub fn local_label(&self) -> String {
        format!("pt{}", self.compact())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem<K: VersionKind>(text: &str) -> InvalidValue {
        text.parse::<MajorMinor<K>>().unwrap_err()
    }

    #[test]
    fn parses_and_prints_major_minor() {
        let cuda: CudaVersion = "13.0".parse().unwrap();
        assert_eq!((cuda.major, cuda.minor), (13, 0));
        assert_eq!(cuda.to_string(), "13.0");
        assert_eq!(cuda.label(), "cu130");
        let python: PythonVersion = "3.13".parse().unwrap();
        assert_eq!(
            (python.label(), python.cpython_tag()),
            ("py313".into(), "cp313".into())
        );
        let torch: TorchVersion = "2.11".parse().unwrap();
        assert_eq!(
            (torch.label(), torch.local_label()),
            ("torch211".into(), "pt211".into())
        );
    }

    #[test]
    fn orders_numerically_not_as_text() {
        let mut pythons: Vec<PythonVersion> = ["3.14", "3.9", "3.11"]
            .iter()
            .map(|v| v.parse().unwrap())
            .collect();
        pythons.sort();
        let shown: Vec<String> = pythons.iter().map(|v| v.to_string()).collect();
        assert_eq!(shown, ["3.9", "3.11", "3.14"]);
        assert!("2.9".parse::<TorchVersion>().unwrap() < "2.10".parse().unwrap());
    }

    #[test]
    fn compact_form_reads_back() {
        assert_eq!(
            CudaVersion::from_compact("124"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(
            CudaVersion::from_compact("92"),
            Some(CudaVersion::new(9, 2))
        );
        assert_eq!(
            PythonVersion::from_compact("39"),
            Some(PythonVersion::new(3, 9))
        );
        assert_eq!(
            TorchVersion::from_compact("210"),
            Some(TorchVersion::new(2, 10))
        );
        for bad in ["", "1", "1a", "3013", "+12", "3 1"] {
            assert_eq!(PythonVersion::from_compact(bad), None, "{bad}");
        }
    }

    #[test]
    fn refuses_missing_minor_with_the_right_form() {
        let err = problem::<Cuda>("13");
        assert!(err.problem.contains("no minor"), "{err}");
        assert!(err.fix.contains("\"13.0\""), "{err}");
    }

    #[test]
    fn refuses_patch_releases() {
        let err = problem::<Torch>("2.11.0");
        assert!(err.problem.contains("patch"), "{err}");
        assert!(err.fix.contains("\"2.11\""), "{err}");
    }

    #[test]
    fn refuses_leading_zeros_with_the_canonical_spelling() {
        assert_eq!(problem::<Cuda>("12.04").fix, "write \"12.4\"");
    }

    #[test]
    fn refuses_junk() {
        for junk in ["", ".", "cu130", "13.x", " 13.0", "13.0 ", "-1.0", "13..0"] {
            let err = problem::<Cuda>(junk);
            assert!(
                err.fix.contains("major.minor") || err.fix.contains("write"),
                "{junk}: {err}"
            );
        }
    }

    #[test]
    fn refuses_two_digit_parts_that_labels_cannot_spell() {
        assert!(problem::<Cuda>("12.10").problem.contains("two-digit minor"));
        assert!(
            problem::<Python>("10.0")
                .problem
                .contains("two-digit major")
        );
    }

    #[test]
    fn refuses_free_threaded_python_by_name() {
        let err = problem::<Python>("3.13t");
        assert!(err.problem.contains("free-threaded"), "{err}");
        assert!(err.fix.contains("\"3.13\""), "{err}");
        assert!(!problem::<Python>("t").problem.contains("free-threaded"));
    }
}
