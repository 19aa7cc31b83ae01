//! The `cuda-archs` rule and the facts behind it: which targets each nvcc
//! compiles, suffix included (`9.0a`, `10.0f`), and the first nvcc of
//! each, for messages and for the config's own check before the lock.
//!
//! In: the [`CompatTable`]'s toolkit and `introduced` rows and a
//! configured arch. Out: the first nvcc and its source, why an nvcc cannot
//! compile an arch, and the rule's finding for one cell's list.

use super::*;

impl CompatTable {
    /// The first nvcc known to compile `arch` (its suffix counts, `+PTX`
    /// does not), and the source of that fact: the `introduced` rows for
    /// toolkits cuwheel has no row for (12.0, 12.8, 12.9), else the oldest
    /// toolkit row listing it.
    pub fn first_nvcc(&self, arch: &CudaArch) -> Option<(CudaVersion, &str)> {
        let listed = self
            .toolkits
            .iter()
            .find(|(_, toolkit)| toolkit.supports(arch))
            .map(|(version, _)| (*version, self.sources.toolkit_archs.as_str()));
        let introduced = self
            .introduced
            .get(&arch.sass())
            .map(|first| (first.nvcc, first.source.as_str()));
        match (listed, introduced) {
            (Some(listed), Some(introduced)) => Some(std::cmp::min(listed, introduced)),
            (listed, introduced) => listed.or(introduced),
        }
    }

    /// The name `arch` has from nvcc `nvcc` on, where nvcc renamed it
    /// (`10.1a` is `11.0a` from 13.0), with the rename's source.
    pub fn renamed(&self, nvcc: CudaVersion, arch: &CudaArch) -> Option<(CudaArch, &str)> {
        self.renamed
            .iter()
            .find(|r| nvcc >= r.nvcc && (r.from.major, r.from.minor) == (arch.major, arch.minor))
            .map(|r| {
                let to = CudaArch {
                    major: r.to.major,
                    minor: r.to.minor,
                    ..*arch
                };
                (to, r.source.as_str())
            })
    }

    /// Why nvcc `nvcc` cannot compile for `arch`, from the facts alone:
    /// `10.0f (family-specific) needs nvcc ≥ 12.9`, or, for a toolkit with
    /// a row, that it does not list the arch. `None` when it can, or when
    /// the table does not know.
    pub fn nvcc_lacks(&self, nvcc: CudaVersion, arch: &CudaArch) -> Option<(String, String)> {
        let shown = arch_shown(arch);
        if let Some((first, source)) = self.first_nvcc(arch) {
            if first > nvcc {
                return Some((format!("{shown} needs nvcc ≥ {first}"), source.to_string()));
            }
        }
        if let Some((to, source)) = self.renamed(nvcc, arch) {
            return Some((
                format!("nvcc {nvcc} names {shown} {to}"),
                source.to_string(),
            ));
        }
        let toolkit = self.toolkit(&nvcc)?;
        (!toolkit.supports(arch)).then(|| {
            (
                format!(
                    "nvcc {nvcc} does not compile for {shown}; it compiles for {}",
                    toolkit.archs_shown()
                ),
                self.sources.toolkit_archs.clone(),
            )
        })
    }

    pub(super) fn cuda_archs(
        &self,
        nvcc: CudaVersion,
        toolkit: &Toolkit,
        archs: &CudaArchs,
    ) -> Option<Finding> {
        let key = archs.key_for(nvcc);
        let Some(list) = archs.for_toolkit(nvcc) else {
            return Some((
                Rule::CudaArchs,
                format!("no cuda-archs list covers nvcc {nvcc}"),
                DATA_FILE.to_string(),
                format!(
                    "add \"{nvcc}\" = [...] or \"{}\" = [...] or default = [...] to \
                     [tool.cuwheel.cuda-archs]; nvcc {nvcc} compiles for {}",
                    nvcc.major,
                    toolkit.archs_shown()
                ),
            ));
        };
        let unsupported: Vec<String> = list
            .iter()
            .filter(|arch| !toolkit.supports(arch))
            .map(ToString::to_string)
            .collect();
        if unsupported.is_empty() {
            return None;
        }
        let newer: Vec<String> = self
            .toolkits
            .iter()
            .filter(|(_, other)| list.iter().all(|arch| other.supports(arch)))
            .map(|(version, _)| version.to_string())
            .collect();
        let mut fix = format!(
            "remove {} from {key}, or give nvcc {nvcc} its own list in [tool.cuwheel.cuda-archs] \
             (\"{nvcc}\" = [...])",
            unsupported.join(", ")
        );
        if !newer.is_empty() {
            fix += &format!("; the whole list builds with nvcc {}", newer.join(", "));
        }
        let mut problem = format!(
            "nvcc {nvcc} cannot compile for {} ({key}); it supports {}",
            unsupported.join(", "),
            toolkit.archs_shown()
        );
        let mut source = self.sources.toolkit_archs.clone();
        for arch in list.iter().filter(|arch| !toolkit.supports(arch)) {
            if let Some((to, from)) = self.renamed(nvcc, arch) {
                problem += &format!("; nvcc {nvcc} names {} {to}", arch_shown(arch));
                fix += &format!("; write {to} for nvcc {nvcc}");
                if !source.contains(from) {
                    source += &format!("; {from}");
                }
                continue;
            }
            if let Some((first, from)) = self.first_nvcc(arch).filter(|(first, _)| *first > nvcc) {
                problem += &format!("; {} needs nvcc ≥ {first}", arch_shown(arch));
                if !source.contains(from) {
                    source += &format!("; {from}");
                }
            }
        }
        Some((Rule::CudaArchs, problem, source, fix))
    }
}

/// `9.0a (arch-specific)`, `10.0f (family-specific)`, `8.0`: an arch as
/// messages name it.
pub(crate) fn arch_shown(arch: &CudaArch) -> String {
    match arch.suffix.kind() {
        Some(kind) => format!("{arch} ({kind})"),
        None => arch.to_string(),
    }
}
