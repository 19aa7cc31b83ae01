//! Which cells can be built at all: the compatibility rules and their data.
//!
//! In: the matrix's [`Cell`]s and the baseline. Out: nothing, or every
//! [`Violation`] at once — each naming its [`Rule`], the cells it affects,
//! the values involved, the source of the fact it rests on and how to fix
//! the config. The facts live in `data/compatibility.toml` (compiled in),
//! one table per kind with its sources, read by a small engine here.
//!
//! The rules, by their stable names:
//! - `known-version`: every torch, CUDA toolkit, Python and baseline named is
//!   in the table (an unknown one cannot be checked, so it is refused);
//! - `torch-python`: the cell's Python is one torch has wheels for;
//! - `toolkit-major`: the toolkit's major version is that of the CUDA runtime
//!   torch's PyPI wheels use (torch's own extension build refuses otherwise);
//! - `toolkit-minor`: the toolkit's minor version is at most torch's, so the
//!   extension needs no newer runtime than torch loads;
//! - `gcc-range`: the baseline's GCC is in the range the toolkit's nvcc accepts.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::spec::matrix::{Cell, CellName};
use crate::spec::target::Baseline;
use crate::spec::version::{CudaVersion, PythonVersion, TorchVersion};

const EMBEDDED: &str = include_str!("data/compatibility.toml");
const DATA_FILE: &str = "src/spec/data/compatibility.toml";

/// The facts the rules check against.
#[derive(Debug, Clone)]
pub struct CompatTable {
    pub sources: Sources,
    torch: BTreeMap<TorchVersion, TorchRelease>,
    toolkits: BTreeMap<CudaVersion, Toolkit>,
    baselines: BTreeMap<Baseline, BaselineSuite>,
}

/// Where each kind of fact comes from, quoted in messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Sources {
    pub torch_python: String,
    pub torch_cuda: String,
    pub toolkit_gcc: String,
    pub baseline_suite: String,
}

/// A torch release series as published on PyPI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchRelease {
    /// The CPython versions it has wheels for, ascending.
    pub python: Vec<PythonVersion>,
    /// The CUDA runtime its default Linux wheel is built for.
    pub cuda: CudaVersion,
}

/// A CUDA toolkit's accepted host GCC majors, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolkit {
    pub gcc_min: u32,
    pub gcc_max: u32,
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
    torch: Vec<TorchRow>,
    toolkit: Vec<ToolkitRow>,
    baseline: Vec<BaselineRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TorchRow {
    version: TorchVersion,
    python: Vec<PythonVersion>,
    cuda: CudaVersion,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolkitRow {
    version: CudaVersion,
    gcc: (u32, u32),
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
    ToolkitMajor,
    ToolkitMinor,
    GccRange,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::KnownVersion => "known-version",
            Rule::TorchPython => "torch-python",
            Rule::ToolkitMajor => "toolkit-major",
            Rule::ToolkitMinor => "toolkit-minor",
            Rule::GccRange => "gcc-range",
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
        let mut torch = BTreeMap::new();
        for row in file.torch {
            let mut python = row.python;
            python.sort();
            if python.is_empty() || python.windows(2).any(|pair| pair[0] == pair[1]) {
                return Err(format!(
                    "torch {}: python must list distinct versions",
                    row.version
                ));
            }
            let release = TorchRelease {
                python,
                cuda: row.cuda,
            };
            if torch.insert(row.version, release).is_some() {
                return Err(format!("torch {} is listed twice", row.version));
            }
        }
        let mut toolkits = BTreeMap::new();
        for row in file.toolkit {
            let (gcc_min, gcc_max) = row.gcc;
            if gcc_min > gcc_max {
                return Err(format!("toolkit {}: gcc range is reversed", row.version));
            }
            if toolkits
                .insert(row.version, Toolkit { gcc_min, gcc_max })
                .is_some()
            {
                return Err(format!("toolkit {} is listed twice", row.version));
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
            torch,
            toolkits,
            baselines,
        })
    }

    pub fn torch(&self, version: &TorchVersion) -> Option<&TorchRelease> {
        self.torch.get(version)
    }

    pub fn toolkit(&self, version: &CudaVersion) -> Option<&Toolkit> {
        self.toolkits.get(version)
    }

    pub fn baseline(&self, baseline: &Baseline) -> Option<&BaselineSuite> {
        self.baselines.get(baseline)
    }

    /// Checks every cell and returns every violation, cells with the same
    /// finding grouped, ordered by rule and then by message.
    pub fn check(&self, cells: &[Cell], baseline: &Baseline) -> Result<(), Vec<Violation>> {
        let mut grouped: BTreeMap<Finding, Vec<CellName>> = BTreeMap::new();
        for cell in cells {
            for finding in self.findings(cell, baseline) {
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

    fn findings(&self, cell: &Cell, baseline: &Baseline) -> Vec<Finding> {
        let mut findings = Vec::new();
        let torch = self.torch(&cell.torch);
        let toolkit = self.toolkit(&cell.cuda);
        let suite = self.baseline(baseline);
        if torch.is_none() {
            let known = join(self.torch.keys());
            findings.push(unknown(
                "torch",
                &cell.torch,
                &known,
                "tool.cuwheel.matrix.torch",
            ));
        }
        if toolkit.is_none() {
            let known = join(self.toolkits.keys());
            findings.push(unknown(
                "CUDA toolkit",
                &cell.cuda,
                &known,
                "tool.cuwheel.matrix.cuda",
            ));
        }
        if suite.is_none() {
            let known = join(self.baselines.keys());
            findings.push(unknown(
                "baseline",
                baseline,
                &known,
                "tool.cuwheel.baseline",
            ));
        }
        if let Some(python) = cell.python {
            let pythons = self.all_pythons();
            if !pythons.contains(&python) {
                findings.push(unknown(
                    "Python",
                    &python,
                    &join(&pythons),
                    "tool.cuwheel.matrix.python",
                ));
            } else if let Some(release) = torch.filter(|release| !release.python.contains(&python))
            {
                findings.push(self.torch_python(cell.torch, release, python));
            }
        }
        if let Some(release) = torch {
            findings.extend(self.toolkit_version(cell.cuda, cell.torch, release.cuda));
        }
        if let (Some(toolkit), Some(suite)) = (toolkit, suite) {
            if !(toolkit.gcc_min..=toolkit.gcc_max).contains(&suite.gcc) {
                findings.push(self.gcc_range(cell.cuda, toolkit, baseline, suite));
            }
        }
        findings
    }

    fn all_pythons(&self) -> Vec<PythonVersion> {
        let mut pythons: Vec<PythonVersion> = self
            .torch
            .values()
            .flat_map(|release| release.python.iter().copied())
            .collect();
        pythons.sort();
        pythons.dedup();
        pythons
    }

    fn torch_python(
        &self,
        version: TorchVersion,
        release: &TorchRelease,
        python: PythonVersion,
    ) -> Finding {
        let supported = join(&release.python);
        let other_torches: Vec<TorchVersion> = self
            .torch
            .iter()
            .filter(|(_, other)| other.python.contains(&python))
            .map(|(version, _)| *version)
            .collect();
        let mut fix = format!(
            "exclude the cells with {{ python = \"{python}\", torch = \"{version}\" }} in \
             tool.cuwheel.matrix.exclude, or drop Python {python}"
        );
        if !other_torches.is_empty() {
            fix += &format!(
                ", or use a torch with Python {python} wheels: {}",
                join(&other_torches)
            );
        }
        (
            Rule::TorchPython,
            format!(
                "torch {version} has no wheels for Python {python}; it supports Python {supported}"
            ),
            self.sources.torch_python.clone(),
            fix,
        )
    }

    /// `toolkit-major` and `toolkit-minor`.
    fn toolkit_version(
        &self,
        toolkit: CudaVersion,
        torch: TorchVersion,
        runtime: CudaVersion,
    ) -> Option<Finding> {
        let (rule, problem) = if toolkit.major != runtime.major {
            (
                Rule::ToolkitMajor,
                format!(
                    "CUDA toolkit {toolkit} cannot build for torch {torch}, whose PyPI wheels use \
                     CUDA {runtime}: the toolkit's major version must be {}",
                    runtime.major
                ),
            )
        } else if toolkit.minor > runtime.minor {
            (
                Rule::ToolkitMinor,
                format!(
                    "CUDA toolkit {toolkit} is newer than the CUDA {runtime} that torch {torch}'s \
                     PyPI wheels use, so the extension could need a CUDA runtime torch does not load"
                ),
            )
        } else {
            return None;
        };
        let torches: Vec<TorchVersion> = self
            .torch
            .iter()
            .filter(|(_, release)| {
                release.cuda.major == toolkit.major && release.cuda.minor >= toolkit.minor
            })
            .map(|(version, _)| *version)
            .collect();
        let toolkits: Vec<CudaVersion> = self
            .toolkits
            .keys()
            .filter(|candidate| {
                candidate.major == runtime.major && candidate.minor <= runtime.minor
            })
            .copied()
            .collect();
        let mut fix = format!(
            "exclude the cells with {{ cuda = \"{toolkit}\", torch = \"{torch}\" }} in tool.cuwheel.matrix.exclude"
        );
        if !torches.is_empty() {
            fix += &format!(", pair CUDA {toolkit} with torch {}", join(&torches));
        }
        if !toolkits.is_empty() {
            fix += &format!(", or build torch {torch} with CUDA {}", join(&toolkits));
        }
        Some((rule, problem, self.sources.torch_cuda.clone(), fix))
    }

    fn gcc_range(
        &self,
        cuda: CudaVersion,
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
        let mut fix = format!(
            "exclude CUDA {cuda} with {{ cuda = \"{cuda}\" }} in tool.cuwheel.matrix.exclude"
        );
        if !fitting.is_empty() {
            fix += &format!(
                ", or pick a baseline whose GCC it accepts: {}",
                fitting.join(", ")
            );
        }
        (
            Rule::GccRange,
            format!(
                "baseline {baseline} builds with GCC {} (Debian {}), but CUDA toolkit {cuda} accepts \
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

/// A `known-version` finding for `value`, one of `what`, named at `key`.
fn unknown(what: &str, value: &dyn fmt::Display, known: &str, key: &str) -> Finding {
    (
        Rule::KnownVersion,
        format!("{what} {value} is not in cuwheel's compatibility table, which knows {known}"),
        DATA_FILE.to_string(),
        format!(
            "use a known {what} in {key}, or add {what} {value} with the sources of its facts to {DATA_FILE}"
        ),
    )
}

/// `a, b, c`: how messages list the values a key may take.
pub(crate) fn join<T: fmt::Display>(values: impl IntoIterator<Item = T>) -> String {
    values
        .into_iter()
        .map(|value| value.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::matrix::test_cell as cell;

    fn baseline(name: &str) -> Baseline {
        name.parse().unwrap()
    }

    fn violations(cells: &[Cell], baseline_name: &str) -> Vec<Violation> {
        CompatTable::embedded()
            .check(cells, &baseline(baseline_name))
            .expect_err("the cells should be refused")
    }

    fn only_violation(cells: &[Cell], baseline_name: &str) -> Violation {
        let mut found = violations(cells, baseline_name);
        assert_eq!(found.len(), 1, "{found:#?}");
        found.remove(0)
    }

    #[test]
    fn embedded_table_holds_the_sourced_facts() {
        let table = CompatTable::embedded();
        let torch = |v: &str| table.torch(&v.parse().unwrap()).unwrap().clone();
        let cuda = |v: &str| v.parse::<CudaVersion>().unwrap();
        let python = |v: &str| v.parse::<PythonVersion>().unwrap();
        assert_eq!(torch("2.6").cuda, cuda("12.4"));
        assert_eq!(torch("2.7").cuda, cuda("12.6"));
        assert_eq!(torch("2.9").cuda, cuda("12.8"));
        assert_eq!(torch("2.10").cuda, cuda("12.8"));
        assert_eq!(torch("2.11").cuda, cuda("13.0"));
        assert_eq!(torch("2.8").python.first(), Some(&python("3.9")));
        assert_eq!(torch("2.11").python.first(), Some(&python("3.10")));
        assert_eq!(torch("2.11").python.last(), Some(&python("3.14")));
        let gcc = |v: &str| {
            let toolkit = table.toolkit(&v.parse().unwrap()).unwrap();
            (toolkit.gcc_min, toolkit.gcc_max)
        };
        assert_eq!(gcc("12.4"), (6, 13));
        assert_eq!(gcc("12.6"), (6, 13));
        assert_eq!(gcc("12.8"), (6, 14));
        assert_eq!(gcc("12.9"), (6, 14));
        assert_eq!(gcc("13.0"), (6, 15));
        let suite = |name: &str| table.baseline(&baseline(name)).unwrap().clone();
        assert_eq!(
            (
                suite("manylinux_2_31").debian.as_str(),
                suite("manylinux_2_31").gcc
            ),
            ("bullseye", 10)
        );
        assert_eq!(
            (
                suite("manylinux_2_36").debian.as_str(),
                suite("manylinux_2_36").gcc
            ),
            ("bookworm", 12)
        );
        assert_eq!(
            (
                suite("manylinux_2_41").debian.as_str(),
                suite("manylinux_2_41").gcc
            ),
            ("trixie", 14)
        );
        assert!(table.sources.torch_python.contains("RELEASE.md"));
        assert!(table.sources.toolkit_gcc.contains("nvcc.nix"));
    }

    #[test]
    fn issue_5_demo_cells_are_compatible() {
        let cells = [
            cell("12.4", None, "2.9"),
            cell("12.4", Some("3.11"), "2.9"),
            cell("12.4", Some("3.13"), "2.9"),
            cell("12.4", Some("3.14"), "2.9"),
            cell("13.0", None, "2.11"),
            cell("13.0", Some("3.11"), "2.11"),
            cell("13.0", Some("3.13"), "2.11"),
            cell("13.0", Some("3.14"), "2.11"),
        ];
        assert_eq!(
            CompatTable::embedded().check(&cells, &baseline("manylinux_2_31")),
            Ok(())
        );
    }

    #[test]
    fn torch_python_refuses_torch_2_11_with_python_3_9() {
        let violation = only_violation(&[cell("13.0", Some("3.9"), "2.11")], "manylinux_2_31");
        assert_eq!(violation.rule, Rule::TorchPython);
        assert_eq!(
            violation.to_string(),
            "cell cu130-py39: rule torch-python: torch 2.11 has no wheels for Python 3.9; it supports \
             Python 3.10, 3.11, 3.12, 3.13, 3.14 (source: pytorch/pytorch RELEASE.md, release \
             compatibility matrix; Python support changed in PRs #143538, #164471, #182849)\n    \
             fix: exclude the cells with { python = \"3.9\", torch = \"2.11\" } in \
             tool.cuwheel.matrix.exclude, or drop Python 3.9, or use a torch with Python 3.9 wheels: \
             2.6, 2.7, 2.8"
        );
    }

    #[test]
    fn toolkit_major_refuses_a_cuda_12_toolkit_for_a_cu130_torch() {
        let violation = only_violation(&[cell("12.4", Some("3.13"), "2.11")], "manylinux_2_31");
        assert_eq!(violation.rule, Rule::ToolkitMajor);
        let shown = violation.to_string();
        assert!(
            shown.starts_with(
                "cell cu124-py313: rule toolkit-major: CUDA toolkit 12.4 cannot build for torch 2.11, \
                 whose PyPI wheels use CUDA 13.0: the toolkit's major version must be 13 (source: the \
                 CUDA runtime that torch's Linux x86_64 wheels on PyPI are built for"
            ),
            "{shown}"
        );
        assert!(
            violation
                .fix
                .contains("{ cuda = \"12.4\", torch = \"2.11\" } in tool.cuwheel.matrix.exclude"),
            "{shown}"
        );
        assert!(
            violation
                .fix
                .contains("pair CUDA 12.4 with torch 2.6, 2.7, 2.8, 2.9, 2.10"),
            "{shown}"
        );
        assert!(
            violation.fix.contains("or build torch 2.11 with CUDA 13.0"),
            "{shown}"
        );
        // The other way round: a 13.0 toolkit for torch 2.9 (cu128).
        let violation = only_violation(&[cell("13.0", None, "2.9")], "manylinux_2_31");
        assert_eq!(violation.rule, Rule::ToolkitMajor);
        assert!(
            violation
                .fix
                .contains("or build torch 2.9 with CUDA 12.4, 12.6, 12.8"),
            "{violation}"
        );
    }

    #[test]
    fn toolkit_minor_refuses_a_toolkit_newer_than_torchs_runtime() {
        let violation = only_violation(&[cell("12.8", Some("3.11"), "2.6")], "manylinux_2_31");
        assert_eq!(violation.rule, Rule::ToolkitMinor);
        assert!(
            violation
                .problem
                .starts_with("CUDA toolkit 12.8 is newer than the CUDA 12.4 that torch 2.6's"),
            "{violation}"
        );
        assert!(
            violation
                .fix
                .contains("pair CUDA 12.8 with torch 2.8, 2.9, 2.10"),
            "{violation}"
        );
        assert!(
            violation.fix.contains("or build torch 2.6 with CUDA 12.4"),
            "{violation}"
        );
        // Older toolkits are fine: 12.4 builds for torch 2.9's 12.8.
        assert_eq!(
            CompatTable::embedded().check(
                &[cell("12.4", Some("3.11"), "2.9")],
                &baseline("manylinux_2_31")
            ),
            Ok(())
        );
    }

    #[test]
    fn gcc_range_refuses_gcc_14_with_cuda_12_4() {
        let violation = only_violation(&[cell("12.4", Some("3.13"), "2.9")], "manylinux_2_41");
        assert_eq!(violation.rule, Rule::GccRange);
        assert_eq!(
            violation.problem,
            "baseline manylinux_2_41 builds with GCC 14 (Debian trixie), but CUDA toolkit 12.4 accepts GCC 6 to 13"
        );
        assert!(violation.source.contains("nvcc.nix"), "{violation}");
        assert!(violation.source.contains("release notes"), "{violation}");
        assert_eq!(
            violation.fix,
            "exclude CUDA 12.4 with { cuda = \"12.4\" } in tool.cuwheel.matrix.exclude, or pick a baseline \
             whose GCC it accepts: manylinux_2_28 (GCC 8), manylinux_2_31 (GCC 10), manylinux_2_36 (GCC 12)"
        );
        // GCC 14 is within CUDA 12.8's range.
        assert_eq!(
            CompatTable::embedded().check(
                &[cell("12.8", Some("3.13"), "2.9")],
                &baseline("manylinux_2_41")
            ),
            Ok(())
        );
    }

    #[test]
    fn known_version_refuses_what_the_table_does_not_know() {
        let found = violations(&[cell("11.8", Some("3.8"), "2.12")], "manylinux_2_17");
        let problems: Vec<(Rule, &str)> =
            found.iter().map(|v| (v.rule, v.problem.as_str())).collect();
        assert_eq!(
            problems,
            [
                (
                    Rule::KnownVersion,
                    "CUDA toolkit 11.8 is not in cuwheel's compatibility table, which knows 12.4, 12.6, 12.8, 12.9, 13.0"
                ),
                (
                    Rule::KnownVersion,
                    "Python 3.8 is not in cuwheel's compatibility table, which knows 3.9, 3.10, 3.11, 3.12, 3.13, 3.14"
                ),
                (
                    Rule::KnownVersion,
                    "baseline manylinux_2_17 is not in cuwheel's compatibility table, which knows manylinux_2_28, manylinux_2_31, manylinux_2_36, manylinux_2_41"
                ),
                (
                    Rule::KnownVersion,
                    "torch 2.12 is not in cuwheel's compatibility table, which knows 2.6, 2.7, 2.8, 2.9, 2.10, 2.11"
                ),
            ]
        );
        assert!(found.iter().all(|v| v.source == DATA_FILE));
        assert!(
            found[3].fix.contains("tool.cuwheel.matrix.torch"),
            "{}",
            found[3]
        );
    }

    #[test]
    fn collects_every_impossible_cell_and_groups_equal_findings() {
        let mut cells = Vec::new();
        for cuda in ["12.4", "13.0"] {
            for python in ["3.9", "3.13"] {
                cells.push(cell(cuda, Some(python), "2.11"));
            }
        }
        let found = violations(&cells, "manylinux_2_31");
        let summary: Vec<(Rule, Vec<String>)> = found
            .iter()
            .map(|v| (v.rule, v.cells.iter().map(|c| c.to_string()).collect()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    Rule::TorchPython,
                    vec!["cu124-py39".to_string(), "cu130-py39".to_string()]
                ),
                (
                    Rule::ToolkitMajor,
                    vec!["cu124-py39".to_string(), "cu124-py313".to_string()]
                ),
            ]
        );
        let error = CompatError {
            file: PathBuf::from("demo/pyproject.toml"),
            violations: found,
        };
        let shown = error.to_string();
        assert!(
            shown.starts_with("demo/pyproject.toml: 3 cells of [tool.cuwheel.matrix] cannot be built\n  cells cu124-py39, cu130-py39: rule torch-python:"),
            "{shown}"
        );
        assert!(
            shown.contains("\n  cells cu124-py39, cu124-py313: rule toolkit-major:"),
            "{shown}"
        );
        assert!(shown.contains("\n      fix: exclude"), "{shown}");
    }

    #[test]
    fn abi3_cells_skip_the_python_rule() {
        assert_eq!(
            CompatTable::embedded()
                .check(&[cell("13.0", None, "2.11")], &baseline("manylinux_2_31")),
            Ok(())
        );
    }

    #[test]
    fn inconsistent_tables_are_refused() {
        let base = EMBEDDED;
        let twice = format!("{base}\n[[toolkit]]\nversion = \"12.4\"\ngcc = [6, 13]\n");
        assert_eq!(
            CompatTable::parse(&twice).unwrap_err(),
            "toolkit 12.4 is listed twice"
        );
        let reversed = base.replace("gcc = [6, 15]", "gcc = [15, 6]");
        assert_eq!(
            CompatTable::parse(&reversed).unwrap_err(),
            "toolkit 13.0: gcc range is reversed"
        );
        let glibc = base.replace("glibc = \"2.31\"", "glibc = \"2.30\"");
        assert_eq!(
            CompatTable::parse(&glibc).unwrap_err(),
            "baseline manylinux_2_31: glibc 2.30 is not 2.31"
        );
        let unknown = base.replace("[sources]", "[sources]\nextra = \"x\"");
        assert!(
            CompatTable::parse(&unknown)
                .unwrap_err()
                .contains("unknown field `extra`")
        );
    }
}
