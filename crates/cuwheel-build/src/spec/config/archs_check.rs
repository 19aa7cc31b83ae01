//! `cuda-archs` against the toolkits the config itself names, before any
//! registry is asked: what the compatibility table already rules out.
//!
//! In: the parsed [`CudaArchs`], the [`MatrixConfig`] and the `cuda-archs`
//! field (for locations). Out: problems reported on the [`Reader`], each at
//! the key that fixes the toolkit — a list keyed by a toolkit
//! (`cuda-archs."12.8"`), a toolkit pinned for a served CUDA
//! (`matrix.nvcc.cu128`), or a served CUDA that bounds the nvcc
//! (`matrix.cuda[0]`: a cu128 cell compiles with a 12.x nvcc no newer than
//! 12.8). What only the lock's facts decide (which nvcc each cell gets) is
//! the compatibility check's, rule `cuda-archs`, still before any download.

use toml::de::DeValue;

use crate::spec::archs::{CudaArchs, ToolkitKey};
use crate::spec::compat::{CompatTable, arch_shown};
use crate::spec::config::MatrixConfig;
use crate::spec::document::{Field, Location, Reader};
use crate::spec::target::CudaArch;
use crate::spec::version::CudaVersion;

impl Reader<'_> {
    /// Reports every arch a toolkit the config names cannot compile.
    pub(super) fn archs_against_toolkits(
        &mut self,
        field: Option<Field<'_, '_>>,
        archs: &CudaArchs,
        matrix: &MatrixConfig,
    ) {
        let table = CompatTable::embedded();
        // Lists keyed by one toolkit.
        if let Some(field) = field {
            if let DeValue::Table(entries) = field.value.get_ref() {
                for (name, value) in entries.iter() {
                    let Ok(ToolkitKey::Version(nvcc)) = name.get_ref().parse::<ToolkitKey>() else {
                        continue;
                    };
                    let key = format!("{}.\"{}\"", field.key, name.get_ref());
                    let at = self.location(&value.span(), &key);
                    for arch in archs
                        .by_toolkit
                        .get(&ToolkitKey::Version(nvcc))
                        .into_iter()
                        .flatten()
                    {
                        if let Some((problem, source)) = table.nvcc_lacks(nvcc, arch) {
                            self.report_location(
                                at.clone(),
                                format!(
                                    "{problem}, but this list is for nvcc {nvcc} (source: {source})"
                                ),
                                format!(
                                    "remove {arch} from this list, or key the list by a toolkit \
                                     that compiles it"
                                ),
                            );
                        }
                    }
                }
            }
        }
        // Toolkits pinned for a served CUDA.
        for (served, pinned) in &matrix.nvcc {
            let nvcc = pinned.value;
            if archs.by_toolkit.contains_key(&ToolkitKey::Version(nvcc)) {
                continue; // reported at its own list above
            }
            let Some(list) = archs.for_toolkit(nvcc) else {
                continue;
            };
            let list_key = archs.key_for(nvcc);
            for arch in list {
                if let Some((problem, source)) = table.nvcc_lacks(nvcc, arch) {
                    self.report_location(
                        pinned.at.clone(),
                        format!(
                            "{problem}; this matrix compiles {} with nvcc {nvcc}, and {list_key} \
                             lists {arch} (source: {source})",
                            served.label()
                        ),
                        fix_for(
                            table,
                            arch,
                            &format!("name another nvcc for {}", served.label()),
                            &format!("give nvcc {nvcc} its own list without {arch}"),
                            nvcc.to_string(),
                        ),
                    );
                }
            }
        }
        // Served CUDAs, which bound their cells' nvcc from above.
        for served in &matrix.cuda {
            let bound = served.value;
            self.served_bound(table, archs, matrix, bound, &served.at);
        }
    }

    /// The cells serving `bound` compile with a `bound.major` nvcc no newer
    /// than `bound`: an arch first compiled by a newer nvcc cannot be built,
    /// whichever the lock picks, when one list covers all those toolkits.
    fn served_bound(
        &mut self,
        table: &CompatTable,
        archs: &CudaArchs,
        matrix: &MatrixConfig,
        bound: CudaVersion,
        at: &Location,
    ) {
        let own_list = archs.by_toolkit.keys().any(|key| match key {
            ToolkitKey::Version(version) => version.major == bound.major && *version <= bound,
            ToolkitKey::Major(_) => false,
        });
        if own_list || matrix.nvcc.contains_key(&bound) {
            return;
        }
        let Some(list) = archs.for_toolkit(bound) else {
            return;
        };
        let list_key = archs.key_for(bound);
        for arch in list {
            let Some((first, source)) = table.first_nvcc(arch) else {
                continue;
            };
            if first <= bound {
                continue;
            }
            self.report_location(
                at.clone(),
                format!(
                    "{} needs nvcc ≥ {first}; this matrix serves {}, whose nvcc is at most \
                     {bound}, and {list_key} lists {arch} (source: {source})",
                    arch_shown(arch),
                    bound.label()
                ),
                fix_for(
                    table,
                    arch,
                    &format!("serve a CUDA of {first} or newer in tool.cuwheel.matrix.cuda"),
                    &format!(
                        "give the CUDA {} toolkits their own list without {arch}",
                        bound.major
                    ),
                    bound.major.to_string(),
                ),
            );
        }
    }
}

/// How to get `arch` built: a newer toolkit (`newer`), or a list of its own
/// (`own`, keyed by `key`) without the arch.
fn fix_for(table: &CompatTable, arch: &CudaArch, newer: &str, own: &str, key: String) -> String {
    let first = table
        .first_nvcc(arch)
        .map(|(version, _)| format!(" (nvcc {version} or newer compiles {arch})"))
        .unwrap_or_default();
    format!("{newer}{first}, or {own} in [tool.cuwheel.cuda-archs] (\"{key}\" = [...])")
}
