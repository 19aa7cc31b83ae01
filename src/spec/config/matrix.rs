//! `[tool.cuwheel.matrix]`: the lists whose product gives the cells, and
//! the excludes that remove some.
//!
//! In: the matrix table and the wheel flavours the modules allow. Out: a
//! [`MatrixConfig`] — CUDA, Python and torch lists, excludes with their
//! locations — and, once the whole config is read, the excludes that match
//! no cell and a matrix the excludes empty, reported as problems.

use std::fmt;
use std::str::FromStr;

use crate::spec::config::Config;
use crate::spec::config::flavour::BindingFlavour;
use crate::spec::document::{Field, Located, Location, Reader, Table};
use crate::spec::matrix::{self, Cell};
use crate::spec::version::{CudaVersion, InvalidValue, PythonVersion, TorchVersion};

pub(super) const MATRIX_KEYS: [&str; 4] = ["cuda", "python", "torch", "exclude"];
pub(super) const EXCLUDE_KEYS: [&str; 4] = ["cuda", "python", "torch", "binding"];

/// `[tool.cuwheel.matrix]`: the lists whose product gives the cells.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    pub cuda: Vec<CudaVersion>,
    /// Empty when the project has no pybind11 bindings.
    pub python: Vec<PythonVersion>,
    pub torch: Vec<TorchVersion>,
    pub exclude: Vec<Located<Exclude>>,
}

/// One `exclude` entry: removes every cell that matches all the keys it gives
/// (GitHub Actions' rule). Python-less abi3 cells never match a `python` key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclude {
    pub cuda: Option<CudaVersion>,
    pub python: Option<PythonVersion>,
    pub torch: Option<TorchVersion>,
    pub binding: Option<BindingFlavour>,
}

impl Exclude {
    pub fn matches(&self, cell: &Cell) -> bool {
        self.cuda.is_none_or(|cuda| cuda == cell.cuda)
            && self.python.is_none_or(|python| Some(python) == cell.python)
            && self.torch.is_none_or(|torch| torch == cell.torch)
            && self.binding.is_none_or(|binding| binding == cell.flavour)
    }
}

/// Written as the inline table a user would put in `exclude`.
impl fmt::Display for Exclude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys = Vec::new();
        if let Some(cuda) = self.cuda {
            keys.push(format!("cuda = \"{cuda}\""));
        }
        if let Some(python) = self.python {
            keys.push(format!("python = \"{python}\""));
        }
        if let Some(torch) = self.torch {
            keys.push(format!("torch = \"{torch}\""));
        }
        if let Some(binding) = self.binding {
            keys.push(format!("binding = \"{binding}\""));
        }
        write!(f, "{{ {} }}", keys.join(", "))
    }
}

impl Reader<'_> {
    /// `flavours`: the wheel flavours the modules allow (`None` when the
    /// modules could not be read); `python` is needed exactly when one is
    /// per-Python.
    pub(super) fn matrix(
        &mut self,
        matrix: &Table<'_, '_>,
        flavours: Option<&[BindingFlavour]>,
    ) -> Option<MatrixConfig> {
        self.known_keys(matrix, &MATRIX_KEYS);
        let cuda = self.version_list::<CudaVersion>(matrix, "cuda", "[\"13.0\", \"12.4\"]");
        let torch = self.version_list::<TorchVersion>(matrix, "torch", "[\"2.11\"]");
        let has_pybind11 = flavours.map(|flavours| flavours.contains(&BindingFlavour::Pybind11));
        let python = match (matrix.get("python"), has_pybind11) {
            (_, None) => None,
            (None, Some(false)) => Some(Vec::new()),
            (Some(field), Some(false)) => {
                self.report(
                    &field,
                    "`python` is given but no pybind11 bindings use it",
                    "remove it; torch-library bindings build one cp39-abi3 wheel per CUDA × torch",
                );
                None
            }
            (_, Some(true)) => {
                self.version_list::<PythonVersion>(matrix, "python", "[\"3.11\", \"3.13\"]")
            }
        };
        let exclude = match matrix.get("exclude") {
            None => Some(Vec::new()),
            Some(field) => {
                let lists = (cuda.as_deref(), python.as_deref(), torch.as_deref());
                match lists {
                    (Some(cuda), Some(python), Some(torch)) => {
                        self.excludes(&field, cuda, python, torch)
                    }
                    _ => None,
                }
            }
        };
        Some(MatrixConfig {
            cuda: cuda?,
            python: python?,
            torch: torch?,
            exclude: exclude?,
        })
    }

    fn version_list<T: FromStr<Err = InvalidValue> + PartialEq>(
        &mut self,
        matrix: &Table<'_, '_>,
        name: &str,
        example: &str,
    ) -> Option<Vec<T>> {
        let field = self.required(
            matrix,
            name,
            &format!("list the versions to build for, like {name} = {example}"),
        )?;
        let items = self.list(&field, example, true, str::parse, |a, b| a == b)?;
        Some(items.into_iter().map(|item| item.value).collect())
    }

    fn excludes(
        &mut self,
        field: &Field<'_, '_>,
        cuda: &[CudaVersion],
        python: &[PythonVersion],
        torch: &[TorchVersion],
    ) -> Option<Vec<Located<Exclude>>> {
        const EXAMPLE: &str = "[{ cuda = \"12.4\", torch = \"2.11\" }]";
        let entries = self.array(field, EXAMPLE)?;
        let mut excludes = Vec::new();
        let mut complete = true;
        for entry in &entries {
            let Some(table) = self.table(
                entry,
                &format!("write each entry as a table, like {EXAMPLE}"),
            ) else {
                complete = false;
                continue;
            };
            if table.entries.is_empty() {
                self.report(
                    entry,
                    "the entry names no key, so it would remove every cell",
                    "give at least one of cuda, python, torch, binding",
                );
                complete = false;
                continue;
            }
            let before = self.problems.len();
            self.known_keys(&table, &EXCLUDE_KEYS);
            let exclude = Exclude {
                cuda: self.exclude_key(&table, "cuda", cuda, "\"12.4\""),
                python: self.exclude_key(&table, "python", python, "\"3.11\""),
                torch: self.exclude_key(&table, "torch", torch, "\"2.11\""),
                binding: self.exclude_key(&table, "binding", &BindingFlavour::ALL, "\"pybind11\""),
            };
            if self.problems.len() != before {
                complete = false;
                continue;
            }
            let at = self.location(&entry.value.span(), &entry.key);
            excludes.push(Located { value: exclude, at });
        }
        complete.then_some(excludes)
    }

    /// One key of an exclude entry, which must name a value of the matrix's
    /// list (anything else would match no cell).
    fn exclude_key<T: FromStr<Err = InvalidValue> + PartialEq + fmt::Display>(
        &mut self,
        table: &Table<'_, '_>,
        name: &str,
        allowed: &[T],
        example: &str,
    ) -> Option<T> {
        let field = table.get(name)?;
        let value: T = self.parsed(&field, example)?;
        if allowed.contains(&value) {
            return Some(value);
        }
        let listed: Vec<String> = allowed.iter().map(|value| format!("\"{value}\"")).collect();
        let listed = listed.join(", ");
        self.report(
            &field,
            format!("this exclude matches no cell: {value} is not in tool.cuwheel.matrix.{name} = [{listed}]"),
            format!("use one of {listed}, or remove the entry"),
        );
        None
    }

    /// Excludes that match no cell, and a matrix left empty by them.
    pub(super) fn check_expansion(&mut self, config: &Config) {
        let expansion = matrix::expand(config);
        for index in expansion.unmatched_excludes {
            let exclude = &config.matrix.exclude[index];
            self.report_location(
                exclude.at.clone(),
                format!("the exclude {} matches no cell of the matrix", exclude.value),
                "check it for typos (a python key never matches the Python-less torch-library cells), \
                 or remove it",
            );
        }
        if expansion.cells.is_empty() && self.problems.is_empty() {
            let at = config.matrix.exclude.last().map_or_else(
                || Location::of(self.text, 0, "tool.cuwheel.matrix"),
                |last| last.at.clone(),
            );
            self.report_location(
                at,
                "the excludes remove every cell of the matrix",
                "remove or narrow them",
            );
        }
    }
}
