//! `[tool.cuwheel.pypi]`: the one variant that also goes to PyPI.
//!
//! In: the table. Out: a [`PypiConfig`] — the CUDA (and the torch, where the
//! matrix builds several of that CUDA) whose cells also make a wheel with no
//! local label, the binding flavours among them (all by default), and the
//! largest file PyPI will take, checked before anything is published or
//! uploaded. PyPI refuses local versions (`0.1.0+pt211cu130`), so, as torch
//! itself does, one variant goes there and every variant to the per-CUDA
//! index. Which cells match is judged by the plan, which knows the matrix.

use crate::spec::config::BindingFlavour;
use crate::spec::document::{Located, Reader, Table};
use crate::spec::version::{CudaVersion, InvalidValue, TorchVersion};

/// PyPI's default upload limit per file: 100 MiB (warehouse's `MAX_FILESIZE`;
/// a project may ask PyPI for more, then say so in `max-file-size`).
pub const PYPI_MAX_FILE_SIZE: u64 = 100 << 20;

const KEYS: [&str; 4] = ["cuda", "torch", "flavours", "max-file-size"];

/// What `[tool.cuwheel.pypi]` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PypiConfig {
    /// The CUDA of the torch build the PyPI wheels serve (the cells' `cuXYZ`).
    pub cuda: Located<CudaVersion>,
    /// The torch minor, needed where that CUDA serves several in the matrix.
    pub torch: Option<Located<TorchVersion>>,
    /// The flavours whose cells go to PyPI; empty means every flavour.
    pub flavours: Vec<Located<BindingFlavour>>,
    /// The largest wheel file, in bytes.
    pub max_file_size: u64,
}

/// `"100 MiB"`, `"1 GiB"`, `"400 MB"`: a file size in bytes.
pub fn parse_size(text: &str) -> Result<u64, InvalidValue> {
    let fix = "write a whole number and a unit, like \"100 MiB\", \"1 GiB\" or \"400 MB\"";
    let bad = || InvalidValue::new(format!("`{text}` is not a file size"), fix);
    let (number, unit) = text.trim().split_once(' ').ok_or_else(bad)?;
    let number: u64 = number.parse().map_err(|_| bad())?;
    let scale: u64 = match unit.trim() {
        "B" => 1,
        "kB" | "KB" => 1000,
        "KiB" => 1 << 10,
        "MB" => 1000 * 1000,
        "MiB" => 1 << 20,
        "GB" => 1000 * 1000 * 1000,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    match number.checked_mul(scale) {
        Some(0) => Err(InvalidValue::new(
            format!("`{text}` allows no file at all"),
            fix,
        )),
        Some(bytes) => Ok(bytes),
        None => Err(bad()),
    }
}

/// `104857600` → `100 MiB`, `1500000` → `1.4 MiB`, for messages.
pub fn show_size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

impl Reader<'_> {
    pub(super) fn pypi(&mut self, table: &Table<'_, '_>) -> Option<PypiConfig> {
        self.known_keys(table, &KEYS);
        let cuda = self
            .required(
                table,
                "cuda",
                "name the CUDA variant that goes to PyPI, like cuda = \"13.0\" (torch's own \
                 PyPI wheels are one CUDA build)",
            )
            .and_then(|field| {
                let value = self.parsed(&field, "\"13.0\"")?;
                let at = self.location(&field.value.span(), &field.key);
                Some(Located { value, at })
            });
        let torch = match table.get("torch") {
            None => Some(None),
            Some(field) => self.parsed(&field, "\"2.11\"").map(|value| {
                let at = self.location(&field.value.span(), &field.key);
                Some(Located { value, at })
            }),
        };
        let flavours = match table.get("flavours") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"pybind11\", \"torch-stable\"]",
                true,
                str::parse,
                |a, b| a == b,
            ),
        };
        let max_file_size = match table.get("max-file-size") {
            None => Some(PYPI_MAX_FILE_SIZE),
            Some(field) => {
                let text = self.string(&field, "\"100 MiB\"")?;
                match parse_size(text) {
                    Ok(bytes) => Some(bytes),
                    Err(InvalidValue { problem, fix }) => {
                        self.report(&field, problem, fix);
                        None
                    }
                }
            }
        };
        Some(PypiConfig {
            cuda: cuda?,
            torch: torch?,
            flavours: flavours?,
            max_file_size: max_file_size?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_both_kinds_of_unit_and_print_in_mebibytes() {
        assert_eq!(parse_size("100 MiB"), Ok(PYPI_MAX_FILE_SIZE));
        assert_eq!(parse_size("400 MB"), Ok(400_000_000));
        assert_eq!(parse_size("1 GiB"), Ok(1 << 30));
        for bad in [
            "100",
            "100MiB",
            "1.5 GiB",
            "-1 MiB",
            "0 MiB",
            "1 PiB",
            "99999999999 GiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(show_size(PYPI_MAX_FILE_SIZE), "100 MiB");
        assert_eq!(show_size(1_500_000), "1.4 MiB");
    }
}
