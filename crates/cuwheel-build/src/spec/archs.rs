//! `cuda-archs`: the GPU archs each toolkit compiles the kernels for.
//!
//! In: the `cuda-archs` value of `[tool.cuwheel]` — a list, used with every
//! toolkit, or a table keyed by `default`, a toolkit version (`"12.4"`) or a
//! toolkit major (`"13"`), the most specific key winning. Out: [`CudaArchs`],
//! whose [`CudaArchs::for_toolkit`] gives one nvcc's list. Whether that nvcc
//! supports each arch is the compatibility check's (rule `cuda-archs`),
//! once the cells and their nvcc are known.
//!
//! ```toml
//! [tool.cuwheel.cuda-archs]
//! default = ["8.0", "9.0+PTX"]
//! "13" = ["8.0", "9.0", "10.0", "12.0+PTX"]
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use toml::de::DeValue;

use crate::spec::document::{Field, Reader, Table};
use crate::spec::target::CudaArch;
use crate::spec::version::{CudaVersion, InvalidValue, canonical_number};

/// The archs of every toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaArchs {
    /// The list form, or the table's `default`.
    pub default: Option<Vec<CudaArch>>,
    /// The table's other keys.
    pub by_toolkit: BTreeMap<ToolkitKey, Vec<CudaArch>>,
}

/// A key of the `cuda-archs` table: one toolkit, or every toolkit of a major.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ToolkitKey {
    Major(u32),
    Version(CudaVersion),
}

impl ToolkitKey {
    /// The entry of `table` that nvcc `toolkit` uses: its own key's, else
    /// its major's (the most specific key wins).
    pub fn lookup<T>(table: &BTreeMap<ToolkitKey, T>, toolkit: CudaVersion) -> Option<&T> {
        table
            .get(&ToolkitKey::Version(toolkit))
            .or_else(|| table.get(&ToolkitKey::Major(toolkit.major)))
    }

    pub fn matches(&self, toolkit: CudaVersion) -> bool {
        match self {
            ToolkitKey::Major(major) => *major == toolkit.major,
            ToolkitKey::Version(version) => *version == toolkit,
        }
    }
}

impl fmt::Display for ToolkitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolkitKey::Major(major) => write!(f, "{major}"),
            ToolkitKey::Version(version) => version.fmt(f),
        }
    }
}

impl FromStr for ToolkitKey {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<ToolkitKey, InvalidValue> {
        if let Some(major) = canonical_number(text) {
            return Ok(ToolkitKey::Major(major));
        }
        text.parse().map(ToolkitKey::Version).map_err(|_| {
            InvalidValue::new(
                format!("`{text}` is neither `default`, a toolkit version nor a toolkit major"),
                "key each list by \"default\", a toolkit like \"12.4\", or a major like \"13\"",
            )
        })
    }
}

impl CudaArchs {
    /// Every toolkit compiles for `archs`.
    pub fn uniform(archs: Vec<CudaArch>) -> CudaArchs {
        CudaArchs {
            default: Some(archs),
            by_toolkit: BTreeMap::new(),
        }
    }

    /// The archs of `toolkit`: its own key, else its major's, else the
    /// default; `None` when nothing covers it.
    pub fn for_toolkit(&self, toolkit: CudaVersion) -> Option<&[CudaArch]> {
        ToolkitKey::lookup(&self.by_toolkit, toolkit)
            .or(self.default.as_ref())
            .map(Vec::as_slice)
    }

    /// `tool.cuwheel.cuda-archs` or `tool.cuwheel.cuda-archs."12.4"`: where
    /// the list `toolkit` uses is written.
    pub fn key_for(&self, toolkit: CudaVersion) -> String {
        let base = "tool.cuwheel.cuda-archs";
        let version = ToolkitKey::Version(toolkit);
        let major = ToolkitKey::Major(toolkit.major);
        match [version, major]
            .into_iter()
            .find(|key| self.by_toolkit.contains_key(key))
        {
            Some(key) => format!("{base}.\"{key}\""),
            None if self.by_toolkit.is_empty() => base.to_string(),
            None => format!("{base}.default"),
        }
    }
}

/// Read as written in a config (`"9.0+PTX"`), e.g. in the compatibility table.
impl<'de> serde::Deserialize<'de> for CudaArch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

const EXAMPLE: &str = "[\"8.0\", \"9.0+PTX\"]";

impl Reader<'_> {
    /// `cuda-archs` of `cuwheel`: a list, or a table of lists.
    pub(super) fn cuda_archs(&mut self, cuwheel: &Table<'_, '_>) -> Option<CudaArchs> {
        let field = self.required(
            cuwheel,
            "cuda-archs",
            &format!("list the GPU archs, like cuda-archs = {EXAMPLE}"),
        )?;
        if !matches!(field.value.get_ref(), DeValue::Table(_)) {
            return self.arch_list(&field).map(CudaArchs::uniform);
        }
        let table = self.table(&field, "write cuda-archs as a list or a table of lists")?;
        let (default, by_toolkit, complete) = self.toolkit_table(&table, Self::arch_list);
        let archs = CudaArchs {
            default,
            by_toolkit,
        };
        if archs.default.is_none() && archs.by_toolkit.is_empty() && complete {
            self.report(
                &field,
                "the table names no archs",
                format!("give a list per toolkit, or default = {EXAMPLE}"),
            );
            return None;
        }
        complete.then_some(archs)
    }

    /// A table keyed by `default`, toolkit majors and toolkits (`cuda-archs`,
    /// `nvcc-flags`), each entry read by `entry`: the default, the other
    /// keys, and whether every key and entry was read (each problem is
    /// reported).
    pub(super) fn toolkit_table<T>(
        &mut self,
        table: &Table<'_, '_>,
        mut entry: impl FnMut(&mut Self, &Field<'_, '_>) -> Option<T>,
    ) -> (Option<T>, BTreeMap<ToolkitKey, T>, bool) {
        let (mut default, mut by_toolkit, mut complete) = (None, BTreeMap::new(), true);
        let names: Vec<String> = table
            .entries
            .iter()
            .map(|(key, _)| key.get_ref().to_string())
            .collect();
        for name in names {
            let Some(field) = table.get(&name) else {
                continue;
            };
            let value = entry(self, &field);
            complete &= value.is_some();
            if name == "default" {
                default = value;
                continue;
            }
            match name.parse::<ToolkitKey>() {
                Ok(key) => {
                    if let Some(value) = value {
                        by_toolkit.insert(key, value);
                    }
                }
                Err(InvalidValue { problem, fix }) => {
                    self.report(&field, problem, fix);
                    complete = false;
                }
            }
        }
        (default, by_toolkit, complete)
    }

    fn arch_list(&mut self, field: &Field<'_, '_>) -> Option<Vec<CudaArch>> {
        self.list(field, EXAMPLE, true, str::parse, |a: &CudaArch, b| {
            (a.major, a.minor, a.suffix) == (b.major, b.minor, b.suffix)
        })
        .map(|archs| archs.into_iter().map(|arch| arch.value).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch_list(texts: &[&str]) -> Vec<CudaArch> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_most_specific_key_wins() {
        let archs = CudaArchs {
            default: Some(arch_list(&["8.0"])),
            by_toolkit: BTreeMap::from([
                (ToolkitKey::Major(13), arch_list(&["8.0", "12.0+PTX"])),
                (ToolkitKey::Version(cuda("13.0")), arch_list(&["9.0"])),
            ]),
        };
        let shown = |toolkit: &str| {
            archs
                .for_toolkit(cuda(toolkit))
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(shown("13.0"), ["9.0"]);
        assert_eq!(shown("13.2"), ["8.0", "12.0+PTX"]);
        assert_eq!(shown("12.4"), ["8.0"]);
        assert_eq!(
            archs.key_for(cuda("13.0")),
            "tool.cuwheel.cuda-archs.\"13.0\""
        );
        assert_eq!(
            archs.key_for(cuda("13.2")),
            "tool.cuwheel.cuda-archs.\"13\""
        );
        assert_eq!(
            archs.key_for(cuda("12.4")),
            "tool.cuwheel.cuda-archs.default"
        );
        let uniform = CudaArchs::uniform(arch_list(&["8.0"]));
        assert_eq!(uniform.key_for(cuda("12.4")), "tool.cuwheel.cuda-archs");
        let no_default = CudaArchs {
            default: None,
            ..archs
        };
        assert_eq!(no_default.for_toolkit(cuda("12.4")), None);
    }

    #[test]
    fn keys_are_versions_or_majors() {
        assert_eq!("13".parse::<ToolkitKey>().unwrap(), ToolkitKey::Major(13));
        assert_eq!(
            "12.4".parse::<ToolkitKey>().unwrap(),
            ToolkitKey::Version(cuda("12.4"))
        );
        for bad in ["cu124", "12.4.1", "x", "013"] {
            let err = bad.parse::<ToolkitKey>().unwrap_err();
            assert!(err.fix.contains("\"default\""), "{bad}: {err}");
        }
    }
}
