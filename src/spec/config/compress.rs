//! `cuda-compress-mode`: how nvcc compresses the images of a fat binary
//! (`--compress-mode`, in nvcc from CUDA 12.8).
//!
//! In: the key's string. Out: a [`CompressMode`], or an [`InvalidValue`]
//! listing the modes nvcc takes. Unset, cuwheel pins [`CompressMode::DEFAULT`]
//! where nvcc has the option, since nvcc's own `default` may change between
//! releases and the fat binary's bytes with it.

use std::fmt;
use std::str::FromStr;

use crate::spec::version::{CudaVersion, InvalidValue};

/// A value of nvcc's `--compress-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompressMode {
    /// nvcc's own choice, which may change between releases.
    Default,
    /// The smallest fat binary, slower to load.
    Size,
    /// Fast loading, larger.
    Speed,
    /// Between the two.
    Balance,
    /// No compression: the images are stored as they are.
    None,
}

const MODES: [(&str, CompressMode); 5] = [
    ("default", CompressMode::Default),
    ("size", CompressMode::Size),
    ("speed", CompressMode::Speed),
    ("balance", CompressMode::Balance),
    ("none", CompressMode::None),
];

impl CompressMode {
    /// What cuwheel passes when the config does not say.
    pub const DEFAULT: CompressMode = CompressMode::Balance;

    /// The oldest nvcc with `--compress-mode` (CUDA 12.8's release notes).
    pub const FIRST_NVCC: (u32, u32) = (12, 8);

    /// Whether nvcc `version` takes `--compress-mode`.
    pub fn nvcc_has_it(version: CudaVersion) -> bool {
        (version.major, version.minor) >= Self::FIRST_NVCC
    }

    pub fn as_str(self) -> &'static str {
        MODES
            .iter()
            .find(|(_, mode)| *mode == self)
            .map(|(name, _)| *name)
            .expect("every mode is listed")
    }
}

impl fmt::Display for CompressMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CompressMode {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<CompressMode, InvalidValue> {
        MODES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| {
                InvalidValue::new(
                    format!("`{text}` is not a compression mode nvcc knows"),
                    "write one of \"size\", \"balance\" (cuwheel's default), \"speed\", \"none\" \
                     or \"default\" (nvcc's own, which may change between releases)",
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_others_are_refused_with_the_list() {
        for (name, mode) in MODES {
            assert_eq!(name.parse::<CompressMode>().unwrap(), mode);
            assert_eq!(mode.to_string(), name);
        }
        let error = "small".parse::<CompressMode>().unwrap_err();
        assert_eq!(
            error.problem,
            "`small` is not a compression mode nvcc knows"
        );
        assert!(error.fix.contains("\"size\""), "{}", error.fix);
    }

    #[test]
    fn nvcc_has_it_from_12_8() {
        let v = |s: &str| s.parse::<CudaVersion>().unwrap();
        assert!(!CompressMode::nvcc_has_it(v("12.6")));
        assert!(CompressMode::nvcc_has_it(v("12.8")));
        assert!(CompressMode::nvcc_has_it(v("13.0")));
    }
}
