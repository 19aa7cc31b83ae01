//! The build matrix: which cells a config asks for, and what each is called.
//!
//! In: a [`Config`]. Out: its [`Cell`]s — the product of `cuda` × `torch` ×
//! (each `python` for pybind11 bindings, one abi3 build for torch-library
//! bindings), minus the excludes, sorted by CUDA, torch, then abi3 before the
//! Pythons in numeric order — and each cell's names: the cell name
//! (`cu130-py313`), the wheel's local version label (`+pt211cu130`) and tags
//! (`cp313-cp313-manylinux_2_31_x86_64`, `cp39-abi3-…`). [`CellName`] parses
//! a cell name back.
//!
//! The torch suffix (`cu124-py311-torch29`) is added to every cell of a CUDA
//! version that is paired with more than one torch after the excludes, and
//! only there: counting per CUDA rather than over the whole matrix keeps the
//! usual layout — one torch per toolkit, as in the demo (13.0 with 2.11, 12.4
//! with 2.9) — at the short names `cu130-py313`, `cu124-abi3`, while names
//! that would collide always carry it. Adding or removing an exclude can
//! therefore rename the cells of one CUDA version.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::spec::config::{BindingFlavour, Config};
use crate::spec::target::Baseline;
use crate::spec::version::{CudaVersion, PythonVersion, TorchVersion};
use crate::wheel::{Tag, Version};

/// The oldest Python an abi3 cell's wheel is tagged for (`cp39-abi3`), as
/// torch's `py_limited_api` builds use (`Py_LIMITED_API=0x03090000`).
pub const ABI3_PYTHON: PythonVersion = PythonVersion::new(3, 9);

/// One wheel to build. Field order is the sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub cuda: CudaVersion,
    pub torch: TorchVersion,
    /// `None` for the torch-library flavour's abi3 wheel.
    pub python: Option<PythonVersion>,
    pub flavour: BindingFlavour,
    /// Whether the name ends in `-torch…` (see the module documentation).
    pub torch_in_name: bool,
}

impl Cell {
    pub fn name(&self) -> CellName {
        CellName {
            cuda: self.cuda,
            python: self.python,
            torch: self.torch_in_name.then_some(self.torch),
        }
    }

    /// `pt211cu130`: the local version label of the cell's wheel, as
    /// PyTorch's own extension wheels write it.
    pub fn local_label(&self) -> String {
        format!("{}{}", self.torch.local_label(), self.cuda.label())
    }

    /// The project's version with the cell's local label: `0.1.0+pt211cu130`.
    pub fn wheel_version(&self, project: &Version) -> Version {
        let text = format!("{}+{}", project.without_local(), self.local_label());
        // A public version plus an alphanumeric label is always a version.
        Version::parse(&text).expect("a public version with an alphanumeric local label parses")
    }

    /// `cp313`, or `cp39` for abi3.
    pub fn python_tag(&self) -> String {
        self.python.unwrap_or(ABI3_PYTHON).cpython_tag()
    }

    /// `cp313`, or `abi3`.
    pub fn abi_tag(&self) -> String {
        match self.python {
            Some(python) => python.cpython_tag(),
            None => "abi3".to_string(),
        }
    }

    /// The wheel's one tag: `cp313-cp313-manylinux_2_31_x86_64`.
    pub fn wheel_tag(&self, baseline: &Baseline) -> Tag {
        Tag {
            python: self.python_tag(),
            abi: self.abi_tag(),
            platform: baseline.platform_tag(),
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.name().fmt(f)
    }
}

/// A cell for unit tests: pybind11 when it has a Python, torch-library (abi3)
/// when not; never carrying the torch suffix.
#[cfg(test)]
pub(crate) fn test_cell(cuda: &str, python: Option<&str>, torch: &str) -> Cell {
    Cell {
        cuda: cuda.parse().unwrap(),
        torch: torch.parse().unwrap(),
        python: python.map(|python| python.parse().unwrap()),
        flavour: match python {
            Some(_) => BindingFlavour::Pybind11,
            None => BindingFlavour::TorchLibrary,
        },
        torch_in_name: false,
    }
}

/// A cell's name: `cu130-py313`, `cu130-abi3`, `cu124-py311-torch29`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellName {
    pub cuda: CudaVersion,
    /// `None` for `abi3`.
    pub python: Option<PythonVersion>,
    /// Present only when the name carries `-torch…`.
    pub torch: Option<TorchVersion>,
}

impl fmt::Display for CellName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.cuda.label())?;
        match self.python {
            Some(python) => write!(f, "-{}", python.label())?,
            None => f.write_str("-abi3")?,
        }
        if let Some(torch) = self.torch {
            write!(f, "-{}", torch.label())?;
        }
        Ok(())
    }
}

/// Why a string is not a cell name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a cell name: {reason}; cell names look like cu130-py313, cu130-abi3 \
     or cu124-py311-torch29 (`cuwheel plan` lists them)"
)]
pub struct CellNameError {
    pub input: String,
    pub reason: String,
}

impl FromStr for CellName {
    type Err = CellNameError;

    fn from_str(input: &str) -> Result<CellName, CellNameError> {
        let fail = |reason: String| CellNameError {
            input: input.to_string(),
            reason,
        };
        let parts: Vec<&str> = input.split('-').collect();
        let (cuda, target, torch) = match parts[..] {
            [cuda, target] => (cuda, target, None),
            [cuda, target, torch] => (cuda, target, Some(torch)),
            _ => {
                return Err(fail(format!(
                    "it has {} `-`-separated parts, not 2 or 3",
                    parts.len()
                )));
            }
        };
        let cuda = cuda
            .strip_prefix("cu")
            .and_then(CudaVersion::from_compact)
            .ok_or_else(|| {
                fail(format!(
                    "`{cuda}` is not a CUDA label like cu130 (cu, the major version, one minor digit)"
                ))
            })?;
        let python = match target {
            "abi3" => None,
            _ => Some(
                target
                    .strip_prefix("py")
                    .and_then(PythonVersion::from_compact)
                    .ok_or_else(|| {
                        fail(format!(
                            "`{target}` is neither abi3 nor a Python label like py313"
                        ))
                    })?,
            ),
        };
        let torch = match torch {
            None => None,
            Some(torch) => Some(
                torch
                    .strip_prefix("torch")
                    .and_then(TorchVersion::from_compact)
                    .ok_or_else(|| fail(format!("`{torch}` is not a torch label like torch211")))?,
            ),
        };
        Ok(CellName {
            cuda,
            python,
            torch,
        })
    }
}

/// The cells of a config, and the excludes that removed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// Sorted.
    pub cells: Vec<Cell>,
    /// Indices into `config.matrix.exclude`.
    pub unmatched_excludes: Vec<usize>,
}

/// Expands the matrix and applies the excludes; the compatibility rules are
/// checked separately ([`compat`](super::compat)), so that an impossible
/// cell is reported rather than silently dropped.
pub fn expand(config: &Config) -> Expansion {
    let matrix = &config.matrix;
    let mut product = Vec::new();
    for &cuda in &matrix.cuda {
        for &torch in &matrix.torch {
            for flavour in config.flavours() {
                let pythons: Vec<Option<PythonVersion>> = match flavour {
                    BindingFlavour::Pybind11 => matrix.python.iter().copied().map(Some).collect(),
                    BindingFlavour::TorchLibrary => vec![None],
                };
                product.extend(pythons.into_iter().map(|python| Cell {
                    cuda,
                    torch,
                    python,
                    flavour,
                    torch_in_name: false,
                }));
            }
        }
    }
    let mut matched = vec![false; matrix.exclude.len()];
    product.retain(|cell| {
        let mut keep = true;
        for (index, exclude) in matrix.exclude.iter().enumerate() {
            if exclude.value.matches(cell) {
                matched[index] = true;
                keep = false;
            }
        }
        keep
    });
    let mut torches_per_cuda: BTreeMap<CudaVersion, BTreeSet<TorchVersion>> = BTreeMap::new();
    for cell in &product {
        torches_per_cuda
            .entry(cell.cuda)
            .or_default()
            .insert(cell.torch);
    }
    for cell in &mut product {
        cell.torch_in_name = torches_per_cuda[&cell.cuda].len() > 1;
    }
    product.sort();
    Expansion {
        cells: product,
        unmatched_excludes: (0..matched.len())
            .filter(|&index| !matched[index])
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec::config::Exclude;

    fn config(matrix: &str, bindings: &str) -> Config {
        let text = format!(
            r#"
[project]
name = "demo-ext"
version = "0.1.0"

[tool.cuwheel]
module = "demo_ext._C"
kernels = ["csrc/kernels/*.cu"]
cuda-archs = ["8.0", "9.0+PTX"]
baseline = "manylinux_2_31"

[tool.cuwheel.bindings]
{bindings}

[tool.cuwheel.matrix]
{matrix}
"#
        );
        Config::parse(&text, Path::new("pyproject.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    const BOTH: &str = "pybind11 = [\"csrc/bindings.cpp\"]\ntorch-library = [\"csrc/ops.cpp\"]";

    fn names(config: &Config) -> Vec<String> {
        expand(config)
            .cells
            .iter()
            .map(|cell| cell.to_string())
            .collect()
    }

    #[test]
    fn demo_matrix_of_issue_5_has_the_short_names() {
        let demo = config(
            r#"cuda = ["13.0", "12.4"]
python = ["3.11", "3.13", "3.14"]
torch = ["2.11", "2.9"]
exclude = [{ cuda = "13.0", torch = "2.9" }, { cuda = "12.4", torch = "2.11" }]"#,
            BOTH,
        );
        assert_eq!(
            names(&demo),
            [
                "cu124-abi3",
                "cu124-py311",
                "cu124-py313",
                "cu124-py314",
                "cu130-abi3",
                "cu130-py311",
                "cu130-py313",
                "cu130-py314"
            ]
        );
        let cells = expand(&demo).cells;
        let cu124 = cells[0];
        assert_eq!(cu124.torch, "2.9".parse().unwrap());
        assert_eq!(cu124.flavour, BindingFlavour::TorchLibrary);
        assert_eq!(cells[7].torch, "2.11".parse().unwrap());
    }

    #[test]
    fn torch_suffix_appears_where_a_cuda_has_two_torches() {
        let matrix = config(
            r#"cuda = ["13.0", "12.4"]
python = ["3.11"]
torch = ["2.11", "2.9"]
exclude = [{ cuda = "13.0", torch = "2.9" }]"#,
            "pybind11 = [\"csrc/bindings.cpp\"]",
        );
        assert_eq!(
            names(&matrix),
            ["cu124-py311-torch29", "cu124-py311-torch211", "cu130-py311"]
        );
    }

    #[test]
    fn pythons_sort_numerically_and_abi3_first() {
        let matrix = config(
            "cuda = [\"13.0\"]\npython = [\"3.14\", \"3.10\", \"3.9\"]\ntorch = [\"2.11\"]",
            BOTH,
        );
        assert_eq!(
            names(&matrix),
            ["cu130-abi3", "cu130-py39", "cu130-py310", "cu130-py314"]
        );
    }

    #[test]
    fn excludes_match_on_all_given_keys_and_report_unused_ones() {
        let mut matrix = config(
            r#"cuda = ["13.0", "12.8"]
python = ["3.11", "3.13"]
torch = ["2.11"]
exclude = [
  { cuda = "12.8", python = "3.13" },
  { binding = "torch-library", cuda = "13.0" },
]"#,
            BOTH,
        );
        assert_eq!(
            names(&matrix),
            ["cu128-abi3", "cu128-py311", "cu130-py311", "cu130-py313"]
        );
        assert!(expand(&matrix).unmatched_excludes.is_empty());
        // A python key never matches an abi3 cell, so this removes nothing.
        let mut unused = matrix.matrix.exclude[0].clone();
        unused.value = Exclude {
            python: Some("3.11".parse().unwrap()),
            binding: Some(BindingFlavour::TorchLibrary),
            ..Exclude::default()
        };
        matrix.matrix.exclude.push(unused);
        assert_eq!(expand(&matrix).unmatched_excludes, [2]);
    }

    #[test]
    fn cell_identity_for_wheels() {
        let cell = Cell {
            cuda: "13.0".parse().unwrap(),
            torch: "2.11".parse().unwrap(),
            python: Some("3.13".parse().unwrap()),
            flavour: BindingFlavour::Pybind11,
            torch_in_name: false,
        };
        let baseline: Baseline = "manylinux_2_31".parse().unwrap();
        assert_eq!(cell.local_label(), "pt211cu130");
        let version = cell.wheel_version(&Version::parse("0.1.0").unwrap());
        assert_eq!(version.to_string(), "0.1.0+pt211cu130");
        assert_eq!(
            cell.wheel_tag(&baseline).to_string(),
            "cp313-cp313-manylinux_2_31_x86_64"
        );
        let abi3 = Cell {
            python: None,
            flavour: BindingFlavour::TorchLibrary,
            torch_in_name: true,
            ..cell
        };
        assert_eq!(
            abi3.wheel_tag(&baseline).to_string(),
            "cp39-abi3-manylinux_2_31_x86_64"
        );
        assert_eq!(abi3.to_string(), "cu130-abi3-torch211");
    }

    #[test]
    fn cell_names_parse_back() {
        for name in [
            "cu130-py313",
            "cu130-abi3",
            "cu124-py311-torch29",
            "cu124-abi3-torch211",
            "cu92-py39",
        ] {
            assert_eq!(name.parse::<CellName>().unwrap().to_string(), name);
        }
        let parsed: CellName = "cu124-py311-torch29".parse().unwrap();
        assert_eq!(parsed.cuda, "12.4".parse().unwrap());
        assert_eq!(parsed.python, Some("3.11".parse().unwrap()));
        assert_eq!(parsed.torch, Some("2.9".parse().unwrap()));
    }

    #[test]
    fn bad_cell_names_say_which_part_is_wrong() {
        for (name, says) in [
            ("cu130", "1 `-`-separated parts"),
            ("cu1-py313", "`cu1` is not a CUDA label"),
            ("cuda130-py313", "`cuda130` is not a CUDA label"),
            ("cu130-cp313", "`cp313` is neither abi3"),
            ("cu130-py3", "`py3` is neither abi3"),
            ("cu130-py313-pt211", "`pt211` is not a torch label"),
            ("cu130-py313-torch211-x", "4 `-`-separated parts"),
            ("cu0130-py313", "`cu0130`"),
        ] {
            let err = name.parse::<CellName>().unwrap_err();
            let shown = err.to_string();
            assert!(shown.contains(says), "{name}: {shown}");
            assert!(shown.contains("cuwheel plan"), "{shown}");
        }
    }
}
