//! Which cells can be built at all: the compatibility rules and their data.
//!
//! In: the matrix's [`Cell`]s, the lock's [`MatrixFacts`], the baseline and
//! the `cuda-archs`. Out: nothing, or every [`Violation`] at once — each
//! naming its [`Rule`], the cells it affects, the values involved, the
//! source of the fact it rests on and how to fix the config. Facts about
//! torch come from the lock (read from the torch wheels); what no artifact
//! states lives in `data/compatibility.toml` (compiled in): each toolkit's
//! host GCC bounds and GPU archs, and each baseline's Debian suite.
//!
//! The rules, by their stable names:
//! - `known-version`: the baseline, and every toolkit the facts offer, are
//!   in the table (an unknown one cannot be checked, so it is refused);
//! - `torch-python`: torch has a wheel for the cell's Python;
//! - `toolkit-available`: the cell's nvcc is one cuwheel can fetch — by
//!   default the newest of torch's CUDA major not newer than torch's CUDA;
//! - `toolkit-major`: the nvcc's major version is that of torch's CUDA
//!   (torch's own extension build refuses otherwise);
//! - `toolkit-minor`: the nvcc's minor version is at most torch's, so the
//!   extension needs no newer runtime than torch loads;
//! - `gcc-range`: the baseline's GCC is in the range the nvcc accepts;
//! - `cuda-archs`: the nvcc compiles for every arch its `cuda-archs` list
//!   names, arch-specific (`9.0a`) and family-specific (`10.0f`) targets
//!   included; a message names the first nvcc that compiles an arch.
//!
//! The same facts refuse what the config alone shows to be impossible
//! before `cuwheel lock` asks any registry ([`CompatTable::nvcc_lacks`],
//! used by the config reader): a list keyed by a toolkit, or the toolkit a
//! matrix pins or the served CUDA bounds, that cannot compile an arch.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::spec::archs::CudaArchs;
use crate::spec::facts::MatrixFacts;
use crate::spec::matrix::{Cell, CellName};
use crate::spec::target::{Baseline, CudaArch};
use crate::spec::version::CudaVersion;
use crate::wheel::Arch;

const EMBEDDED: &str = include_str!("data/compatibility.toml");
const DATA_FILE: &str = "crates/cuwheel-build/src/spec/data/compatibility.toml";
/// Where the facts of a lock come from, quoted by the rules that use them.
const LOCK_FACTS: &str = "the torch wheels and toolkits the package index and Debian offered at \
                          `cuwheel lock`, recorded in cuwheel.lock's `facts`";

/// The facts the rules check against.
#[derive(Debug, Clone)]
pub struct CompatTable {
    pub sources: Sources,
    toolkits: BTreeMap<CudaVersion, Toolkit>,
    /// The first nvcc of the targets introduced by toolkits with no row.
    introduced: BTreeMap<CudaArch, Introduced>,
    renamed: Vec<Renamed>,
    baselines: BTreeMap<Baseline, BaselineSuite>,
}

/// Where each kind of fact comes from, quoted in messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Sources {
    pub toolkit_gcc: String,
    pub toolkit_archs: String,
    pub baseline_suite: String,
}

/// A CUDA toolkit's accepted host GCC majors (inclusive) and GPU archs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    pub gcc_min: u32,
    pub gcc_max: u32,
    /// Every SASS target its nvcc compiles for (`9.0`, `9.0a`, `10.0f`),
    /// without `+PTX`: nvcc embeds PTX for each of the same virtual archs.
    pub archs: Vec<CudaArch>,
}

impl Toolkit {
    /// Whether its nvcc compiles for `arch`, suffix included (`9.0a` is not
    /// `9.0`); `+PTX` asks for the same target's virtual arch.
    pub fn supports(&self, arch: &CudaArch) -> bool {
        self.archs.contains(&arch.sass())
    }

    fn archs_shown(&self) -> String {
        join(&self.archs)
    }
}

/// The Debian suite that builds a baseline's wheels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineSuite {
    pub debian: String,
    pub glibc: String,
    /// The suite's default GCC major.
    pub gcc: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    sources: Sources,
    toolkit: Vec<ToolkitRow>,
    introduced: Vec<IntroducedRow>,
    renamed: Vec<Renamed>,
    baseline: Vec<BaselineRow>,
}

/// An arch nvcc renamed: `from` is written `to` from nvcc `nvcc` on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Renamed {
    pub from: CudaArch,
    pub to: CudaArch,
    pub nvcc: CudaVersion,
    pub source: String,
}

/// The first nvcc release that compiled some targets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IntroducedRow {
    nvcc: CudaVersion,
    archs: Vec<CudaArch>,
    source: String,
}

/// When nvcc first compiled a target, and where that is stated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Introduced {
    pub nvcc: CudaVersion,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolkitRow {
    version: CudaVersion,
    gcc: (u32, u32),
    archs: Vec<CudaArch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineRow {
    name: Baseline,
    debian: String,
    glibc: String,
    gcc: u32,
}

/// A compatibility rule, by its stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    KnownVersion,
    TorchPython,
    ToolkitAvailable,
    ToolkitMajor,
    ToolkitMinor,
    GccRange,
    CudaArchs,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::KnownVersion => "known-version",
            Rule::TorchPython => "torch-python",
            Rule::ToolkitAvailable => "toolkit-available",
            Rule::ToolkitMajor => "toolkit-major",
            Rule::ToolkitMinor => "toolkit-minor",
            Rule::GccRange => "gcc-range",
            Rule::CudaArchs => "cuda-archs",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken rule and the cells it rules out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    /// Sorted like the matrix.
    pub cells: Vec<CellName>,
    pub problem: String,
    pub source: String,
    pub fix: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cells: Vec<String> = self.cells.iter().map(|cell| cell.to_string()).collect();
        let noun = if cells.len() == 1 { "cell" } else { "cells" };
        write!(
            f,
            "{noun} {}: rule {}: {} (source: {})\n    fix: {}",
            cells.join(", "),
            self.rule,
            self.problem,
            self.source,
            self.fix
        )
    }
}

/// Every cell of a matrix that cannot be built, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CompatError {
    /// The `pyproject.toml` whose matrix this is.
    pub file: PathBuf,
    pub violations: Vec<Violation>,
}

impl fmt::Display for CompatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cells: Vec<&CellName> = self.violations.iter().flat_map(|v| &v.cells).collect();
        cells.sort();
        cells.dedup();
        let noun = if cells.len() == 1 { "cell" } else { "cells" };
        write!(
            f,
            "{}: {} {noun} of [tool.cuwheel.matrix] cannot be built",
            self.file.display(),
            cells.len()
        )?;
        for violation in &self.violations {
            write!(f, "\n  {}", violation.to_string().replace('\n', "\n  "))?;
        }
        Ok(())
    }
}

/// One finding for one cell, before cells with the same finding are grouped.
type Finding = (Rule, String, String, String);

/// What the rules judge a matrix's cells with.
pub struct Matrix<'a> {
    pub facts: &'a MatrixFacts,
    pub baseline: &'a Baseline,
    pub archs: &'a CudaArchs,
}

impl CompatTable {
    /// The table compiled into cuwheel.
    pub fn embedded() -> &'static CompatTable {
        static TABLE: OnceLock<CompatTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            CompatTable::parse(EMBEDDED).unwrap_or_else(|error| {
                // The unit tests parse the same text, so this cannot ship broken.
                panic!("{DATA_FILE} is invalid: {error}")
            })
        })
    }

    /// Reads and checks a table in the format of `data/compatibility.toml`.
    pub fn parse(text: &str) -> Result<CompatTable, String> {
        let file: DataFile = toml::from_str(text).map_err(|error| error.to_string())?;
        let mut toolkits = BTreeMap::new();
        for row in file.toolkit {
            let (gcc_min, gcc_max) = row.gcc;
            if gcc_min > gcc_max {
                return Err(format!("toolkit {}: gcc range is reversed", row.version));
            }
            if row.archs.is_empty() || row.archs.iter().any(|arch| arch.ptx) {
                return Err(format!(
                    "toolkit {}: archs must list SASS targets like \"8.0\"",
                    row.version
                ));
            }
            let toolkit = Toolkit {
                gcc_min,
                gcc_max,
                archs: row.archs,
            };
            if toolkits.insert(row.version, toolkit).is_some() {
                return Err(format!("toolkit {} is listed twice", row.version));
            }
        }
        let mut introduced = BTreeMap::new();
        for row in file.introduced {
            for arch in row.archs {
                if arch.ptx {
                    return Err(format!(
                        "introduced {}: archs must list SASS targets like \"9.0a\"",
                        row.nvcc
                    ));
                }
                let first = Introduced {
                    nvcc: row.nvcc,
                    source: row.source.clone(),
                };
                if introduced.insert(arch, first).is_some() {
                    return Err(format!("introduced: {arch} is listed twice"));
                }
                if let Some((version, _)) = toolkits
                    .iter()
                    .find(|(version, toolkit)| **version < row.nvcc && toolkit.supports(&arch))
                {
                    return Err(format!(
                        "introduced: {arch} is said to come with nvcc {}, but toolkit {version} \
                         lists it",
                        row.nvcc
                    ));
                }
            }
        }
        for rename in &file.renamed {
            let plain = |arch: &CudaArch| arch.suffix.kind().is_none() && !arch.ptx;
            if !plain(&rename.from) || !plain(&rename.to) {
                return Err(format!(
                    "renamed {}: name plain archs like \"10.1\"",
                    rename.from
                ));
            }
        }
        let mut baselines = BTreeMap::new();
        for row in file.baseline {
            let expected = format!("{}.{}", row.name.glibc_major, row.name.glibc_minor);
            if row.glibc != expected {
                return Err(format!(
                    "baseline {}: glibc {} is not {expected}",
                    row.name, row.glibc
                ));
            }
            let suite = BaselineSuite {
                debian: row.debian,
                glibc: row.glibc,
                gcc: row.gcc,
            };
            if baselines.insert(row.name, suite).is_some() {
                return Err(format!("baseline {} is listed twice", row.name));
            }
        }
        Ok(CompatTable {
            sources: file.sources,
            toolkits,
            introduced,
            renamed: file.renamed,
            baselines,
        })
    }

    pub fn toolkit(&self, version: &CudaVersion) -> Option<&Toolkit> {
        self.toolkits.get(version)
    }

    /// Every toolkit the table knows, oldest first.
    pub fn toolkits(&self) -> impl Iterator<Item = (&CudaVersion, &Toolkit)> {
        self.toolkits.iter()
    }

    pub fn baseline(&self, baseline: &Baseline) -> Option<&BaselineSuite> {
        self.baselines.get(baseline)
    }

    /// Every baseline the table knows, oldest first.
    pub fn baselines(&self) -> impl Iterator<Item = &Baseline> {
        self.baselines.keys()
    }

    /// Checks every cell and returns every violation, cells with the same
    /// finding grouped, ordered by rule and then by message.
    pub fn check(&self, cells: &[Cell], matrix: &Matrix<'_>) -> Result<(), Vec<Violation>> {
        let mut grouped: BTreeMap<Finding, Vec<CellName>> = BTreeMap::new();
        for cell in cells {
            for finding in self.findings(cell, matrix) {
                grouped.entry(finding).or_default().push(cell.name());
            }
        }
        if grouped.is_empty() {
            return Ok(());
        }
        Err(grouped
            .into_iter()
            .map(|((rule, problem, source, fix), mut cells)| {
                cells.dedup();
                Violation {
                    rule,
                    cells,
                    problem,
                    source,
                    fix,
                }
            })
            .collect())
    }

    fn findings(&self, cell: &Cell, matrix: &Matrix<'_>) -> Vec<Finding> {
        let mut findings = Vec::new();
        let suite = self.baseline(matrix.baseline);
        if suite.is_none() {
            findings.push((
                Rule::KnownVersion,
                format!(
                    "baseline {} is not in cuwheel's compatibility table, which knows {}",
                    matrix.baseline,
                    join(self.baselines.keys())
                ),
                DATA_FILE.to_string(),
                format!(
                    "use a known baseline in tool.cuwheel.baseline, or add it with the sources \
                     of its facts to {DATA_FILE}"
                ),
            ));
        }
        findings.extend(self.torch_python(cell, matrix.facts));
        if let Some(finding) = self.toolkit_choice(cell, matrix.facts) {
            findings.push(finding);
            return findings;
        }
        let Some(toolkit) = self.toolkit(&cell.nvcc) else {
            findings.push((
                Rule::KnownVersion,
                format!(
                    "the lock offers CUDA toolkit {}, which cuwheel's compatibility table does \
                     not know (it knows {})",
                    cell.nvcc,
                    join(self.toolkits.keys())
                ),
                DATA_FILE.to_string(),
                "run `cuwheel lock` again with this cuwheel, which offers only toolkits it knows"
                    .to_string(),
            ));
            return findings;
        };
        if let Some(suite) = suite {
            if !(toolkit.gcc_min..=toolkit.gcc_max).contains(&suite.gcc) {
                findings.push(self.gcc_range(cell.nvcc, toolkit, matrix.baseline, suite));
            }
        }
        findings.extend(self.cuda_archs(cell.nvcc, toolkit, matrix.archs));
        findings
    }

    fn torch_python(&self, cell: &Cell, facts: &MatrixFacts) -> Option<Finding> {
        let release = facts.torch.get(&cell.torch)?;
        let arch = cell.arch;
        // Shown after "Python X.Y" where the architecture is not x86_64.
        let on = match arch {
            Arch::X86_64 => String::new(),
            other => format!(" on {other}"),
        };
        let exclude_platform = match arch {
            Arch::X86_64 => String::new(),
            other => format!(", platform = \"{other}\""),
        };
        let Some(wheels) = release.for_arch(arch) else {
            return Some((
                Rule::TorchPython,
                format!(
                    "the lock did not resolve torch {}'s {arch} wheels: it was written for \
                     another list of platforms",
                    cell.torch
                ),
                LOCK_FACTS.to_string(),
                "run `cuwheel lock` again".to_string(),
            ));
        };
        let Some(python) = cell.python else {
            // An abi3 cell loads in any Python the release has a wheel for.
            if !wheels.wheels.is_empty() || arch == Arch::X86_64 {
                return None;
            }
            return Some((
                Rule::TorchPython,
                format!(
                    "torch {} ({}) has no {arch} wheel of CUDA {} for any of the matrix's \
                     Pythons",
                    cell.torch, release.version, release.cuda,
                ),
                LOCK_FACTS.to_string(),
                format!(
                    "exclude its {arch} cells with {{ {key}{exclude_platform} }} in \
                     tool.cuwheel.matrix.exclude",
                    // A torch key never matches a torch-stable cell.
                    key = if cell.is_stable() {
                        "binding = \"torch-stable\"".to_string()
                    } else {
                        format!("torch = \"{}\"", cell.torch)
                    }
                ),
            ));
        };
        if wheels.wheels.contains_key(&python) {
            return None;
        }
        if !wheels.missing.contains(&python) {
            return Some((
                Rule::TorchPython,
                format!(
                    "the lock did not resolve torch {} for Python {python}{on}: it was written \
                     for another list of Pythons",
                    cell.torch
                ),
                LOCK_FACTS.to_string(),
                "run `cuwheel lock` again".to_string(),
            ));
        }
        let supported = join(wheels.wheels.keys());
        let others: Vec<String> = facts
            .torch
            .iter()
            .filter(|(_, other)| other.has_wheel(arch, python))
            .map(|(version, _)| version.to_string())
            .collect();
        let mut fix = format!(
            "exclude the cells with {{ torch = \"{}\", python = \"{python}\"{exclude_platform} }} in \
             tool.cuwheel.matrix.exclude, or drop Python {python}",
            cell.torch
        );
        if !others.is_empty() {
            fix += &format!(
                ", or use a torch with Python {python} wheels{on}: {}",
                others.join(", ")
            );
        }
        Some((
            Rule::TorchPython,
            format!(
                "torch {} ({}) has no wheel for Python {python}{on}; of the matrix's Pythons it \
                 has wheels for {}",
                cell.torch,
                release.version,
                if supported.is_empty() {
                    "none".to_string()
                } else {
                    supported
                }
            ),
            LOCK_FACTS.to_string(),
            fix,
        ))
    }

    /// `toolkit-available`, `toolkit-major` and `toolkit-minor`.
    fn toolkit_choice(&self, cell: &Cell, facts: &MatrixFacts) -> Option<Finding> {
        let (served, nvcc, torch) = (cell.cuda, cell.nvcc, cell.torch);
        let available = || {
            join(
                facts
                    .toolkits
                    .iter()
                    .map(|(version, origin)| format!("{version} ({origin})")),
            )
        };
        let fitting: Vec<String> = facts
            .toolkits
            .keys()
            .filter(|t| t.major == served.major && t.minor <= served.minor)
            .map(ToString::to_string)
            .collect();
        let label = served.label();
        let (rule, problem) = if nvcc.major != served.major {
            (
                Rule::ToolkitMajor,
                format!(
                    "nvcc {nvcc} cannot build for torch {torch}, whose wheels use CUDA {served}: \
                     the toolkit's major version must be {}",
                    served.major
                ),
            )
        } else if nvcc.minor > served.minor {
            (
                Rule::ToolkitMinor,
                format!(
                    "nvcc {nvcc} is newer than the CUDA {served} that torch {torch}'s wheels use, \
                     so the extension could need a CUDA runtime torch does not load"
                ),
            )
        } else if !facts.toolkits.contains_key(&nvcc) {
            let problem = if fitting.is_empty() {
                format!(
                    "no CUDA toolkit cuwheel can fetch builds for torch {torch}'s CUDA {served}: \
                     that needs a {}.x toolkit no newer than {served}; the lock offers {}",
                    served.major,
                    available()
                )
            } else {
                format!(
                    "nvcc {nvcc} is not a toolkit cuwheel can fetch; the lock offers {}",
                    available()
                )
            };
            (Rule::ToolkitAvailable, problem)
        } else {
            return None;
        };
        let fix = if fitting.is_empty() {
            format!(
                "exclude the cells with {{ cuda = \"{served}\" }} in tool.cuwheel.matrix.exclude \
                 (CUDA {served}'s toolkits come from PyPI for 13.x and later, and from Debian's \
                 suites named in crates/cuwheel-build/src/lock/data/debian.toml)"
            )
        } else {
            format!(
                "name one of {} in tool.cuwheel.matrix.nvcc.{label}, or remove that entry to \
                 take the newest",
                fitting.join(", ")
            )
        };
        let source = format!("{LOCK_FACTS}; CUDA's minor-version compatibility");
        Some((rule, problem, source, fix))
    }

    fn gcc_range(
        &self,
        nvcc: CudaVersion,
        toolkit: &Toolkit,
        baseline: &Baseline,
        suite: &BaselineSuite,
    ) -> Finding {
        let fitting: Vec<String> = self
            .baselines
            .iter()
            .filter(|(_, other)| (toolkit.gcc_min..=toolkit.gcc_max).contains(&other.gcc))
            .map(|(name, other)| format!("{name} (GCC {})", other.gcc))
            .collect();
        let mut fix = "exclude the cells, or name another nvcc for them in \
                       tool.cuwheel.matrix.nvcc"
            .to_string();
        if !fitting.is_empty() {
            fix += &format!(
                ", or pick a baseline whose GCC it accepts: {}",
                fitting.join(", ")
            );
        }
        (
            Rule::GccRange,
            format!(
                "baseline {baseline} builds with GCC {} (Debian {}), but nvcc {nvcc} accepts \
                 GCC {} to {}",
                suite.gcc, suite.debian, toolkit.gcc_min, toolkit.gcc_max
            ),
            format!(
                "{}; {}",
                self.sources.toolkit_gcc, self.sources.baseline_suite
            ),
            fix,
        )
    }
}

/// `a, b, c`: how messages list the values a key may take.
pub fn join<T: fmt::Display>(values: impl IntoIterator<Item = T>) -> String {
    values
        .into_iter()
        .map(|value| value.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[path = "compat_archs.rs"]
mod archs;
pub(crate) use archs::arch_shown;

#[cfg(test)]
#[path = "compat_tests.rs"]
mod tests;
