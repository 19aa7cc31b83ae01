//! The `[tool.cuwheel.matrix]` init writes, from its flags or from the
//! package index when init runs.
//!
//! In: `--torch`, `--python`, `--cuda` and `--cuda-archs` (each repeatable
//! or comma-separated), whether a module has pybind11 bindings (only those
//! take a `python` list), and a lister of torch releases for one Python
//! ([`TorchIndex`]; `cuwheel lock`'s pip listing in use). Out: a
//! [`Matrix`] — the torch selectors, Pythons and CUDAs to write, the archs
//! the flags set, and a comment saying where they came from — or an error
//! naming the flag and the value it cannot read.
//!
//! Without `--torch`, the matrix is the two newest torch minors the index
//! lists; without `--python` (pybind11 bindings only), every Python
//! cuwheel has headers for (crates/cuwheel-build/src/lock/data/debian.toml `[python-suites]`)
//! for which the index has wheels of every torch written. The index is
//! asked only for what the flags leave out: with `--torch`, and
//! `--python` or no pybind11 bindings, it is not asked at all.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};

use crate::lock::data::DebianData;
use crate::registry::pip::{Pip, Target};
use crate::registry::torch::{PROBE_PYTHON, minors};
use crate::spec::{Baseline, CudaArch, CudaVersion, PythonAbi, TorchSelector, TorchVersion};

/// How many of the newest torch minors the default matrix serves.
pub const NEWEST_MINORS: usize = 2;

/// The flags, as given: each value may hold several, comma-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatrixFlags {
    pub torch: Vec<String>,
    pub python: Vec<String>,
    pub cuda: Vec<String>,
    pub cuda_archs: Vec<String>,
}

/// What `[tool.cuwheel.matrix]` says, and the archs the flags set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matrix {
    pub torch: Vec<String>,
    /// Written only when a module has pybind11 bindings.
    pub python: Vec<String>,
    pub cuda: Vec<String>,
    /// `--cuda-archs`, replacing what was inferred; empty when not given.
    pub cuda_archs: Vec<CudaArch>,
    /// Where the torch and Python lists came from, as a TOML comment.
    pub comment: String,
    /// What init reports about them (a `--python` that no binding uses).
    pub notes: Vec<String>,
}

/// Lists the torch releases with a wheel for one Python, newest first.
pub trait TorchIndex {
    fn torch_releases(&self, python: PythonAbi) -> Result<Vec<String>>;
}

/// The lister `cuwheel lock` uses: `pip index versions torch` for the
/// manylinux baseline init writes.
pub struct PipIndex<'a> {
    pub pip: &'a Pip,
    pub baseline: &'a Baseline,
}

impl TorchIndex for PipIndex<'_> {
    fn torch_releases(&self, python: PythonAbi) -> Result<Vec<String>> {
        self.pip
            .index_versions("torch", &Target::for_abi(python, self.baseline))
            .context(
                "init lists torch releases to choose the default matrix; name them instead with \
                 --torch (and --python), like --torch 2.11,2.9 --python 3.13",
            )
    }
}

/// Each flag value split at commas, parsed; an error names the flag.
fn parse_flag<T: std::str::FromStr>(flag: &str, values: &[String], example: &str) -> Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let mut out = Vec::new();
    for item in values
        .iter()
        .flat_map(|v| split_list(v))
        .collect::<Vec<_>>()
    {
        match item.parse::<T>() {
            Ok(value) => out.push(value),
            Err(e) => bail!("--{flag} `{item}`: {e}; write it like --{flag} {example}"),
        }
    }
    Ok(out)
}

/// `2.11,2.9` → `2.11`, `2.9`; a range keeps its commas (`>=2.7,<2.9`).
fn split_list(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let is_bound = part.starts_with(['<', '>', '=', '!', '~']);
        match out.last_mut() {
            Some(last) if is_bound && last.starts_with(['<', '>', '=', '!', '~']) => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// The Pythons cuwheel has headers for without an archive.
pub fn header_pythons() -> Vec<PythonAbi> {
    let sorted: BTreeSet<PythonAbi> = DebianData::embedded()
        .python_suites
        .keys()
        .filter_map(|v| v.parse().ok())
        .collect();
    sorted.into_iter().collect()
}

/// The matrix to write (see the module documentation).
pub fn choose(flags: &MatrixFlags, pybind11: bool, index: &dyn TorchIndex) -> Result<Matrix> {
    let torch: Vec<TorchSelector> = parse_flag("torch", &flags.torch, "2.11,2.9")?;
    let pythons: Vec<PythonAbi> = parse_flag("python", &flags.python, "3.12,3.13")?;
    let cuda: Vec<CudaVersion> = parse_flag("cuda", &flags.cuda, "13.0")?;
    let cuda_archs: Vec<CudaArch> = parse_flag("cuda-archs", &flags.cuda_archs, "8.0,9.0+PTX")?;
    let mut notes = Vec::new();
    let mut listed: BTreeMap<PythonAbi, Vec<String>> = BTreeMap::new();
    let mut list = |python: PythonAbi| -> Result<Vec<String>> {
        if let Some(known) = listed.get(&python) {
            return Ok(known.clone());
        }
        let releases = index.torch_releases(python)?;
        listed.insert(python, releases.clone());
        Ok(releases)
    };
    // The Pythons whose listings decide the torch default.
    let probes: Vec<PythonAbi> = match (pybind11, pythons.is_empty()) {
        (true, false) => pythons.clone(),
        (true, true) => header_pythons(),
        (false, _) => vec![PythonAbi::regular(PROBE_PYTHON)],
    };
    let any_minor: TorchSelector = ">=1.0".parse().expect("a torch range");
    let (torch_written, from_index) = if torch.is_empty() {
        let mut all: BTreeSet<TorchVersion> = BTreeSet::new();
        for python in &probes {
            all.extend(minors(&[any_minor], &list(*python)?));
        }
        if all.is_empty() {
            bail!(
                "the package index lists no torch release for Python {}; name the torch \
                 releases with --torch, like --torch 2.11,2.9",
                join(&probes)
            );
        }
        let newest: Vec<String> = all
            .iter()
            .rev()
            .take(NEWEST_MINORS)
            .map(ToString::to_string)
            .collect();
        (newest, true)
    } else {
        (split_values(&flags.torch), false)
    };
    let python_written: Vec<String> = match (pybind11, pythons.is_empty()) {
        (false, false) => {
            notes.push(format!(
                "--python {} is not written: no module has pybind11 bindings, and \
                 torch-library bindings build one cp39-abi3 wheel per torch",
                split_values(&flags.python).join(",")
            ));
            Vec::new()
        }
        (false, true) => Vec::new(),
        (true, false) => split_values(&flags.python),
        (true, true) => {
            let selectors: Vec<TorchSelector> = torch_written
                .iter()
                .map(|t| t.parse().expect("parsed above or listed"))
                .collect();
            let mut kept = Vec::new();
            for python in header_pythons() {
                let releases = list(python)?;
                let has: BTreeSet<TorchVersion> = minors(&[any_minor], &releases);
                let serves = |selector: &TorchSelector| match selector {
                    TorchSelector::Minor(minor) => has.contains(minor),
                    TorchSelector::Range(_) => {
                        !minors(std::slice::from_ref(selector), &releases).is_empty()
                    }
                };
                if selectors.iter().all(serves) {
                    kept.push(python.to_string());
                }
            }
            if kept.is_empty() {
                bail!(
                    "the package index has wheels of torch {} for none of the Pythons cuwheel \
                     has headers for ({}); name them with --python, like --python 3.13",
                    torch_written.join(", "),
                    join(&header_pythons())
                );
            }
            kept
        }
    };
    let comment = match (from_index, pybind11 && flags.python.is_empty()) {
        (false, false) => "# From `cuwheel init`'s flags.".to_string(),
        (true, true) => format!(
            "# The {NEWEST_MINORS} newest torch minors on the package index when `cuwheel init` \
             ran, and every Python cuwheel has headers for that has wheels of each."
        ),
        (true, false) => format!(
            "# The {NEWEST_MINORS} newest torch minors on the package index when `cuwheel init` ran."
        ),
        (false, true) => "# torch from `cuwheel init`'s flags; every Python cuwheel has headers \
                          for that has wheels of each."
            .to_string(),
    };
    Ok(Matrix {
        torch: torch_written,
        python: python_written,
        cuda: cuda.iter().map(ToString::to_string).collect(),
        cuda_archs,
        comment,
        notes,
    })
}

fn split_values(values: &[String]) -> Vec<String> {
    values.iter().flat_map(|v| split_list(v)).collect()
}

fn join(items: &[PythonAbi]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Matrix {
    /// The `[tool.cuwheel.matrix]` table's text.
    pub fn render(&self) -> String {
        use super::render::array;
        let mut lines = vec![
            "[tool.cuwheel.matrix]".to_string(),
            self.comment.clone(),
            format!("torch = {}", array(&self.torch)),
        ];
        if !self.python.is_empty() {
            lines.push(format!("python = {}", array(&self.python)));
        }
        if !self.cuda.is_empty() {
            lines.push(format!("cuda = {}", array(&self.cuda)));
        }
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// An index that lists `releases` for every Python in `has`, and
    /// records what it was asked.
    struct Fake {
        has: BTreeMap<String, Vec<&'static str>>,
        asked: RefCell<Vec<String>>,
    }

    impl TorchIndex for Fake {
        fn torch_releases(&self, python: PythonAbi) -> Result<Vec<String>> {
            self.asked.borrow_mut().push(python.to_string());
            Ok(self
                .has
                .get(&python.to_string())
                .map(|r| r.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default())
        }
    }

    fn fake(has: &[(&str, &[&'static str])]) -> Fake {
        Fake {
            has: has
                .iter()
                .map(|(p, r)| (p.to_string(), r.to_vec()))
                .collect(),
            asked: RefCell::new(Vec::new()),
        }
    }

    #[test]
    fn the_flags_are_the_matrix_and_the_index_is_not_asked() {
        let index = fake(&[]);
        let flags = MatrixFlags {
            torch: vec!["2.11,2.9".into(), ">=2.6,<2.8".into()],
            python: vec!["3.12".into(), "3.13,3.14".into()],
            cuda: vec!["13.0".into()],
            cuda_archs: vec!["8.0,9.0+PTX".into()],
        };
        let matrix = choose(&flags, true, &index).unwrap();
        assert_eq!(matrix.torch, ["2.11", "2.9", ">=2.6,<2.8"]);
        assert_eq!(matrix.python, ["3.12", "3.13", "3.14"]);
        assert_eq!(matrix.cuda, ["13.0"]);
        assert_eq!(
            matrix
                .cuda_archs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["8.0", "9.0+PTX"]
        );
        assert!(index.asked.borrow().is_empty());
        // Without pybind11 bindings, --torch alone asks nothing either, and
        // --python is reported, not written.
        let matrix = choose(&flags, false, &index).unwrap();
        assert!(matrix.python.is_empty());
        assert!(matrix.notes[0].contains("--python 3.12,3.13,3.14 is not written"));
        assert!(index.asked.borrow().is_empty());
    }

    #[test]
    fn the_default_is_the_newest_minors_and_the_pythons_with_wheels_of_each() {
        let newest = ["2.15.0", "2.14.1", "2.14.0", "2.13.0"];
        let index = fake(&[
            ("3.11", &["2.13.0", "2.12.0"]),
            ("3.13", &newest),
            ("3.14", &newest),
            ("3.12", &newest),
        ]);
        let matrix = choose(&MatrixFlags::default(), true, &index).unwrap();
        assert_eq!(matrix.torch, ["2.15", "2.14"]);
        // 3.11 has neither; 3.12 is not a Python cuwheel has headers for.
        assert!(!matrix.python.contains(&"3.11".to_string()));
        assert!(!matrix.python.contains(&"3.12".to_string()));
        assert!(matrix.python.contains(&"3.13".to_string()));
        assert!(matrix.comment.contains("newest torch minors"));
        // torch-library only: one probe Python.
        let index = fake(&[("3.12", &newest)]);
        let matrix = choose(&MatrixFlags::default(), false, &index).unwrap();
        assert_eq!(matrix.torch, ["2.15", "2.14"]);
        assert_eq!(*index.asked.borrow(), ["3.12"]);
        assert!(matrix.render().ends_with("torch = [\"2.15\", \"2.14\"]\n"));
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_value() {
        let flags = MatrixFlags {
            torch: vec!["2.11".into()],
            cuda: vec!["thirteen".into()],
            ..MatrixFlags::default()
        };
        let err = choose(&flags, false, &fake(&[])).unwrap_err().to_string();
        assert!(err.starts_with("--cuda `thirteen`:"), "{err}");
        let err = choose(&MatrixFlags::default(), false, &fake(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("lists no torch release"), "{err}");
    }
}
