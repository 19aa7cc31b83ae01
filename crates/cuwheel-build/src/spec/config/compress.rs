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

/// What `cuwheel lock` says when the config sets `key = mode` and some
/// cells compile with an nvcc that has no `--compress-mode` (`cells`: each
/// cell's name and nvcc): those keep their nvcc's own compression. `None`
/// when every cell's nvcc takes the option.
pub fn unsupported_note(
    key: &str,
    mode: CompressMode,
    cells: &[(String, CudaVersion)],
) -> Option<String> {
    let mut by_nvcc: std::collections::BTreeMap<CudaVersion, Vec<&str>> = Default::default();
    for (cell, nvcc) in cells {
        if !CompressMode::nvcc_has_it(*nvcc) {
            by_nvcc.entry(*nvcc).or_default().push(cell);
        }
    }
    if by_nvcc.is_empty() {
        return None;
    }
    let (major, minor) = CompressMode::FIRST_NVCC;
    let groups: Vec<String> = by_nvcc
        .iter()
        .map(|(nvcc, cells)| format!("{} (nvcc {nvcc})", cells.join(", ")))
        .collect();
    Some(format!(
        "{key} = \"{mode}\" applies where nvcc has --compress-mode ({major}.{minor} and newer; \
         source: CUDA 12.8 release notes); these cells compile with an older nvcc and keep its \
         own compression: {}",
        groups.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_of_an_older_nvcc_are_named_in_a_note() {
        let v = |s: &str| s.parse::<CudaVersion>().unwrap();
        let cells = [
            ("cu126-py313".to_string(), v("12.5")),
            ("cu128-py313".to_string(), v("12.5")),
            ("cu118-py311".to_string(), v("11.8")),
            ("cu130-py313-torch211".to_string(), v("13.0")),
        ];
        assert_eq!(
            unsupported_note(
                "tool.cuwheel.cuda-compress-mode",
                CompressMode::Size,
                &cells
            )
            .unwrap(),
            "tool.cuwheel.cuda-compress-mode = \"size\" applies where nvcc has --compress-mode \
             (12.8 and newer; source: CUDA 12.8 release notes); these cells compile with an older \
             nvcc and keep its own compression: cu118-py311 (nvcc 11.8); cu126-py313, \
             cu128-py313 (nvcc 12.5)"
        );
        assert_eq!(unsupported_note("k", CompressMode::Size, &cells[3..]), None);
    }

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
