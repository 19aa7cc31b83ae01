//! `nvcc-flags`, per toolkit where they differ: what setup.py passes nvcc
//! may depend on the toolkit (`-DCUDA13` only where `nvcc -V` says 13).
//!
//! In: the `nvcc-flags` value of a module or of the top of
//! `[tool.cuwheel]`: a list every toolkit uses, or a table keyed as
//! `cuda-archs` is (`default`, a toolkit major `"13"`, a toolkit `"12.5"`),
//! the most specific key winning. Out: [`ToolkitFlags`], whose
//! [`ToolkitFlags::for_toolkit`] gives one nvcc's flags; a module's come
//! after the top's for the same nvcc ([`ToolkitFlags::then`]).
//!
//! Only nvcc's flags take the table: kernel objects are built per toolkit
//! anyway, while C++ objects of a CPU-only module are shared by every
//! toolkit, so their flags cannot differ by it.
//!
//! ```toml
//! [tool.cuwheel.nvcc-flags]
//! default = ["-O3"]
//! "13" = ["-O3", "-DCUDA13"]
//! ```

use std::collections::{BTreeMap, BTreeSet};

use toml::de::DeValue;

use crate::spec::archs::ToolkitKey;
use crate::spec::config::flags::nvcc_flag;
use crate::spec::document::{Field, Reader, Table};
use crate::spec::version::CudaVersion;

const EXAMPLE: &str = "[\"--use_fast_math\"]";

/// The nvcc flags of every toolkit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolkitFlags {
    /// The list form, or the table's `default`.
    pub default: Vec<String>,
    /// The table's other keys.
    pub by_toolkit: BTreeMap<ToolkitKey, Vec<String>>,
}

impl ToolkitFlags {
    /// Every toolkit passes `flags`.
    pub fn uniform(flags: Vec<String>) -> ToolkitFlags {
        ToolkitFlags {
            default: flags,
            by_toolkit: BTreeMap::new(),
        }
    }

    /// The flags nvcc `toolkit` gets: its own key's, else its major's, else
    /// the default.
    pub fn for_toolkit(&self, toolkit: CudaVersion) -> &[String] {
        ToolkitKey::lookup(&self.by_toolkit, toolkit).unwrap_or(&self.default)
    }

    /// The list a key of another table resolves to here: a toolkit's as
    /// [`Self::for_toolkit`] gives it; a major's own entry, else the default.
    fn for_key(&self, key: ToolkitKey) -> &[String] {
        match key {
            ToolkitKey::Version(version) => self.for_toolkit(version),
            ToolkitKey::Major(_) => self.by_toolkit.get(&key).unwrap_or(&self.default),
        }
    }

    /// These flags, then `own`'s, for every toolkit: what a module's table
    /// gives on top of the top-level one.
    pub fn then(&self, own: &ToolkitFlags) -> ToolkitFlags {
        let keys: BTreeSet<ToolkitKey> = self
            .by_toolkit
            .keys()
            .chain(own.by_toolkit.keys())
            .copied()
            .collect();
        let joined = |a: &[String], b: &[String]| [a, b].concat();
        ToolkitFlags {
            default: joined(&self.default, &own.default),
            by_toolkit: keys
                .into_iter()
                .map(|key| (key, joined(self.for_key(key), own.for_key(key))))
                .collect(),
        }
    }

    /// Whether some toolkit's list holds a flag `wanted` accepts.
    pub fn any(&self, wanted: impl Fn(&str) -> bool) -> bool {
        std::iter::once(&self.default)
            .chain(self.by_toolkit.values())
            .flatten()
            .any(|flag| wanted(flag))
    }

    /// No toolkit gets any flag.
    pub fn is_empty(&self) -> bool {
        !self.any(|_| true)
    }
}

impl Reader<'_> {
    /// `nvcc-flags` of `table` (a module or the top): absent is none.
    pub(super) fn nvcc_flags(&mut self, table: &Table<'_, '_>) -> Option<ToolkitFlags> {
        let Some(field) = table.get("nvcc-flags") else {
            return Some(ToolkitFlags::default());
        };
        if !matches!(field.value.get_ref(), DeValue::Table(_)) {
            return self.nvcc_flag_list(&field).map(ToolkitFlags::uniform);
        }
        let entries = self.table(
            &field,
            "write nvcc-flags as a list, or a table of lists keyed by toolkit",
        )?;
        let (default, by_toolkit, complete) = self.toolkit_table(&entries, Self::nvcc_flag_list);
        let flags = ToolkitFlags {
            default: default.unwrap_or_default(),
            by_toolkit,
        };
        complete.then_some(flags)
    }

    fn nvcc_flag_list(&mut self, field: &Field<'_, '_>) -> Option<Vec<String>> {
        // Flags may repeat: `-Xcompiler` precedes each host option it passes.
        self.list(field, EXAMPLE, false, nvcc_flag, |_, _| false)
            .map(|flags| flags.into_iter().map(|f| f.value).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(list: &[&str]) -> Vec<String> {
        list.iter().map(|f| f.to_string()).collect()
    }

    fn cuda(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_most_specific_key_wins() {
        let table = ToolkitFlags {
            default: flags(&["-O3"]),
            by_toolkit: BTreeMap::from([
                (ToolkitKey::Major(13), flags(&["-O3", "-DCUDA13"])),
                (ToolkitKey::Version(cuda("12.4")), flags(&["-O2"])),
            ]),
        };
        assert_eq!(table.for_toolkit(cuda("13.0")), ["-O3", "-DCUDA13"]);
        assert_eq!(table.for_toolkit(cuda("12.4")), ["-O2"]);
        assert_eq!(table.for_toolkit(cuda("12.5")), ["-O3"]);
    }

    #[test]
    fn a_modules_flags_follow_the_tops_for_each_toolkit() {
        let top = ToolkitFlags {
            default: flags(&["-O3"]),
            by_toolkit: BTreeMap::from([(ToolkitKey::Major(12), flags(&["-O2"]))]),
        };
        let own = ToolkitFlags {
            default: flags(&["-lineinfo"]),
            by_toolkit: BTreeMap::from([(ToolkitKey::Version(cuda("12.5")), flags(&["-g"]))]),
        };
        let joined = top.then(&own);
        for (nvcc, expected) in [
            ("13.0", &["-O3", "-lineinfo"][..]),
            ("12.4", &["-O2", "-lineinfo"]),
            ("12.5", &["-O2", "-g"]),
        ] {
            let direct = [top.for_toolkit(cuda(nvcc)), own.for_toolkit(cuda(nvcc))].concat();
            assert_eq!(direct, expected, "nvcc {nvcc}");
            assert_eq!(joined.for_toolkit(cuda(nvcc)), expected, "nvcc {nvcc}");
        }
        assert!(joined.any(|f| f == "-g") && !joined.any(|f| f == "-G"));
        assert!(ToolkitFlags::default().is_empty());
    }

    fn config(flags: &str) -> Result<crate::spec::Config, crate::spec::ConfigError> {
        let text = format!(
            "[project]\nname = \"t\"\nversion = \"1\"\n\n[tool.cuwheel]\nmodule = \"t._C\"\n\
             kernels = [\"k.cu\"]\ncuda-archs = [\"8.0\"]\nbaseline = \"manylinux_2_31\"\n{flags}\n\
             [tool.cuwheel.bindings]\ntorch-library = [\"b.cpp\"]\n\n\
             [tool.cuwheel.matrix]\ntorch = [\"2.11\"]\n"
        );
        crate::spec::Config::parse(&text, std::path::Path::new("/p/pyproject.toml"))
    }

    #[test]
    fn a_config_keys_nvcc_flags_by_toolkit() {
        let parsed =
            config("nvcc-flags = { default = [\"-O3\"], \"13\" = [\"-O3\", \"-DCUDA13\"] }")
                .unwrap();
        let flags = &parsed.modules[0].compile.nvcc_flags;
        assert_eq!(flags.for_toolkit(cuda("13.0")), ["-O3", "-DCUDA13"]);
        assert_eq!(flags.for_toolkit(cuda("12.5")), ["-O3"]);
    }

    #[test]
    fn a_bad_key_or_flag_of_the_table_is_refused_where_it_is() {
        let error = config("nvcc-flags = { default = [\"-O3\"], cuda13 = [\"-DX\"] }").unwrap_err();
        let said = error.to_string();
        assert!(
            said.contains("tool.cuwheel.nvcc-flags.cuda13")
                && said.contains(
                    "`cuda13` is neither `default`, a toolkit version nor a toolkit major"
                ),
            "{said}"
        );
        let error =
            config("nvcc-flags = { \"12\" = [\"-gencode\", \"arch=compute_80,code=sm_80\"] }")
                .unwrap_err();
        let said = error.to_string();
        assert!(
            said.contains("tool.cuwheel.nvcc-flags.\"12\"")
                || said.contains("tool.cuwheel.nvcc-flags.12"),
            "{said}"
        );
        assert!(
            said.contains("cuwheel chooses the GPU code (-gencode) from cuda-archs"),
            "{said}"
        );
    }
}
