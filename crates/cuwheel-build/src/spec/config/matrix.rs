//! `[tool.cuwheel.matrix]`: which torch builds and Pythons to serve, read
//! from the config's text (the cells themselves need the torch facts of the
//! lock: [`matrix`](super::matrix)).
//!
//! In: the matrix table. Out: a [`MatrixConfig`], or problems naming the key.
//!
//! ```toml
//! [tool.cuwheel.matrix]
//! torch = ["2.7", "2.11", ">=2.13,<=2.15"]   # minors, or ranges of released minors
//! python = ["3.11", "3.12", "3.13", "3.13t"] # 3.13t: free-threaded
//! cuda = ["12.6", "13.0", "13.2"]            # optional: only cells serving these CUDAs
//! exclude = [{ torch = "2.7", python = "3.14" }]
//! nvcc = { cu126 = "12.4" }                  # optional: the toolkit of the cu126 cells
//! platforms = ["x86_64", "aarch64"]          # optional: aarch64 cells too (cross-built)
//!
//! [tool.cuwheel.matrix.python-headers."3.12"] # headers no Debian suite carries
//! file = "python3.12-headers.tar"             # supplied with --archives DIR, or:
//! # url = "https://…/cpython-3.12.12+…-x86_64-unknown-linux-gnu-install_only.tar.gz"
//! sha256 = "bcf0c1e6…"                        # optional: checked at lock, pinned in the lock
//! ```
//!
//! `cuda` names the CUDA of the torch build a cell serves — its `cuXYZ` —
//! not the nvcc that compiles it; each torch release on the package index is
//! built for one CUDA, read from its wheels at lock time.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::spec::config::BindingFlavour;
use crate::spec::document::{Field, Located, Reader, Table};
use crate::spec::matrix::Cell;
use crate::spec::python::PythonAbi;
use crate::spec::selector::TorchSelector;
use crate::spec::target::Platform;
use crate::spec::version::{CudaVersion, InvalidValue, TorchVersion};
use crate::wheel::Arch;

/// `[tool.cuwheel.matrix]`.
#[derive(Debug, Clone, Default)]
pub struct MatrixConfig {
    /// The torch minors and ranges to serve.
    pub torch: Vec<Located<TorchSelector>>,
    /// Empty when the project has no pybind11 bindings.
    pub python: Vec<PythonAbi>,
    /// When given, only the cells serving one of these CUDAs.
    pub cuda: Vec<Located<CudaVersion>>,
    pub exclude: Vec<Located<Exclude>>,
    /// The served CUDA → the toolkit whose nvcc builds its cells instead of
    /// the default one.
    pub nvcc: BTreeMap<CudaVersion, Located<CudaVersion>>,
    /// Python headers from archives, for Pythons no Debian suite carries.
    pub python_headers: BTreeMap<PythonAbi, Located<HeaderArchive>>,
    /// The architectures to build cells for, in the config's order: x86_64
    /// unless `platforms` says otherwise. aarch64 cells are cross-built.
    pub platforms: Vec<Located<Arch>>,
}

impl MatrixConfig {
    /// Whether some cell of the matrix may be for `arch`.
    pub fn builds_for(&self, arch: Arch) -> bool {
        self.platforms.iter().any(|platform| platform.value == arch)
    }
}

/// One `exclude` entry: removes every cell that matches all the keys it gives
/// (GitHub Actions' rule). Python-less abi3 cells never match a `python` key;
/// a torch-stable cell, which serves a range of torches, never matches a
/// `torch` key, and matches a `cuda` key of its CUDA major.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclude {
    /// The served CUDA (the cell's `cuXYZ`).
    pub cuda: Option<CudaVersion>,
    pub python: Option<PythonAbi>,
    pub torch: Option<TorchVersion>,
    pub binding: Option<BindingFlavour>,
    pub platform: Option<Arch>,
}

impl Exclude {
    pub fn matches(&self, cell: &Cell) -> bool {
        let stable = cell.is_stable();
        self.cuda
            .is_none_or(|cuda| cuda == cell.cuda || (stable && cuda.major == cell.cuda.major))
            && self.python.is_none_or(|python| Some(python) == cell.python)
            && self
                .torch
                .is_none_or(|torch| !stable && torch == cell.torch)
            && self.binding.is_none_or(|binding| binding == cell.flavour)
            && self.platform.is_none_or(|platform| platform == cell.arch)
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
        if let Some(platform) = self.platform {
            keys.push(format!("platform = \"{platform}\""));
        }
        write!(f, "{{ {} }}", keys.join(", "))
    }
}

/// Where one Python's headers come from: a file the user supplies (Nix's
/// requireFile model), or a URL; `cuwheel lock` pins its sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderArchive {
    /// The file's name: what `cuwheel fetch --archives DIR` looks for, and
    /// the last part of `url`.
    pub file: String,
    pub url: Option<String>,
    /// Hex; when given, the file must have it.
    pub sha256: Option<String>,
}

/// Archive formats busybox unpacks in the sandbox.
pub const ARCHIVE_SUFFIXES: [&str; 5] = [".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz"];

pub(super) const MATRIX_KEYS: [&str; 7] = [
    "torch",
    "python",
    "cuda",
    "exclude",
    "nvcc",
    "python-headers",
    "platforms",
];
pub(super) const EXCLUDE_KEYS: [&str; 5] = ["cuda", "python", "torch", "binding", "platform"];
const ARCHIVE_KEYS: [&str; 3] = ["file", "url", "sha256"];

impl Reader<'_> {
    pub(super) fn matrix(
        &mut self,
        matrix: &Table<'_, '_>,
        flavours: Option<&[BindingFlavour]>,
    ) -> Option<MatrixConfig> {
        self.known_keys(matrix, &MATRIX_KEYS);
        let torch = self.required(
            matrix,
            "torch",
            "list the torch releases to build for, like torch = [\"2.11\", \">=2.13,<=2.15\"]",
        );
        let torch = torch.and_then(|field| {
            self.list(
                &field,
                "[\"2.11\", \">=2.13,<=2.15\"]",
                true,
                str::parse,
                |a: &TorchSelector, b| a == b,
            )
        });
        let cuda = match matrix.get("cuda") {
            None => Some(Vec::new()),
            Some(field) => self.list(&field, "[\"12.6\", \"13.0\"]", true, str::parse, |a, b| {
                a == b
            }),
        };
        let has_pybind11 = flavours.map(|flavours| flavours.contains(&BindingFlavour::Pybind11));
        let python = match (matrix.get("python"), has_pybind11) {
            (_, None) => None,
            (None, Some(false)) => Some(Vec::new()),
            (Some(field), Some(false)) => {
                self.report(
                    &field,
                    "`python` is given but no pybind11 bindings use it",
                    "remove it; torch-library bindings build one cp39-abi3 wheel per torch",
                );
                None
            }
            (None, Some(true)) => {
                self.required(
                    matrix,
                    "python",
                    "list the Pythons to build for, like python = [\"3.11\", \"3.13\"]",
                );
                None
            }
            (Some(field), Some(true)) => self
                .list(&field, "[\"3.11\", \"3.13\"]", true, str::parse, |a, b| {
                    a == b
                })
                .map(|items| items.into_iter().map(|item| item.value).collect()),
        };
        let nvcc = match matrix.get("nvcc") {
            None => Some(BTreeMap::new()),
            Some(field) => self.nvcc_overrides(&field),
        };
        let python_headers = match matrix.get("python-headers") {
            None => Some(BTreeMap::new()),
            Some(field) => self.header_archives(&field, python.as_deref()),
        };
        let platforms = match matrix.get("platforms") {
            None => Some(vec![Located {
                value: Arch::X86_64,
                at: self.location(&matrix.span, &matrix.key),
            }]),
            Some(field) => self
                .list(
                    &field,
                    "[\"x86_64\", \"aarch64\"]",
                    true,
                    str::parse::<Platform>,
                    |a, b| a == b,
                )
                .map(|items| {
                    items
                        .into_iter()
                        .map(|item| Located {
                            value: item.value.0,
                            at: item.at,
                        })
                        .collect()
                }),
        };
        let exclude = match (matrix.get("exclude"), &torch, &python, &cuda, &platforms) {
            (None, _, _, _, _) => Some(Vec::new()),
            (Some(field), Some(torch), Some(python), Some(cuda), Some(platforms)) => {
                self.excludes(&field, torch, python, cuda, platforms)
            }
            _ => None,
        };
        Some(MatrixConfig {
            torch: torch?,
            python: python?,
            cuda: cuda?,
            exclude: exclude?,
            nvcc: nvcc?,
            python_headers: python_headers?,
            platforms: platforms?,
        })
    }

    /// `nvcc = { cu126 = "12.4" }`: keys are served CUDAs as cell names
    /// write them, values toolkit versions.
    fn nvcc_overrides(
        &mut self,
        field: &Field<'_, '_>,
    ) -> Option<BTreeMap<CudaVersion, Located<CudaVersion>>> {
        const FIX: &str = "write nvcc = { cu126 = \"12.4\" }: the cells serving CUDA 12.6 \
                           (named cu126-…) build with nvcc 12.4";
        let table = self.table(field, FIX)?;
        let mut overrides = BTreeMap::new();
        let mut complete = true;
        for name in key_names(&table) {
            let Some(entry) = table.get(&name) else {
                continue;
            };
            let served = name.strip_prefix("cu").and_then(CudaVersion::from_compact);
            let Some(served) = served else {
                self.report(
                    &entry,
                    format!("`{name}` is not a CUDA label like cu126"),
                    FIX,
                );
                complete = false;
                continue;
            };
            match self.parsed::<CudaVersion>(&entry, "\"12.4\"") {
                Some(toolkit) => {
                    let at = self.location(&entry.value.span(), &entry.key);
                    overrides.insert(served, Located { value: toolkit, at });
                }
                None => complete = false,
            }
        }
        complete.then_some(overrides)
    }

    /// `[tool.cuwheel.matrix.python-headers."3.12"]` tables.
    fn header_archives(
        &mut self,
        field: &Field<'_, '_>,
        python: Option<&[PythonAbi]>,
    ) -> Option<BTreeMap<PythonAbi, Located<HeaderArchive>>> {
        const FIX: &str = "write [tool.cuwheel.matrix.python-headers.\"3.12\"] with file = \
                           \"<archive name>\" (supplied with `cuwheel fetch --archives DIR`) or \
                           url = \"<https URL>\", and optionally sha256 = \"<hex>\"";
        let table = self.table(field, FIX)?;
        let mut archives = BTreeMap::new();
        let mut complete = true;
        for name in key_names(&table) {
            let Some(entry) = table.get(&name) else {
                continue;
            };
            let version = match name.parse::<PythonAbi>() {
                Ok(version) => version,
                Err(InvalidValue { problem, fix }) => {
                    self.report(&entry, problem, fix);
                    complete = false;
                    continue;
                }
            };
            if let Some(python) = python {
                if !python.contains(&version) {
                    self.report(
                        &entry,
                        format!("Python {version} is not in tool.cuwheel.matrix.python"),
                        format!(
                            "add \"{version}\" to the matrix's python list, or remove this table"
                        ),
                    );
                    complete = false;
                    continue;
                }
            }
            match self.header_archive(&entry, FIX) {
                Some(archive) => {
                    let at = self.location(&entry.value.span(), &entry.key);
                    archives.insert(version, Located { value: archive, at });
                }
                None => complete = false,
            }
        }
        complete.then_some(archives)
    }

    fn header_archive(&mut self, field: &Field<'_, '_>, fix: &str) -> Option<HeaderArchive> {
        let table = self.table(field, fix)?;
        self.known_keys(&table, &ARCHIVE_KEYS);
        let text = |reader: &mut Self, key: &str, example: &str| {
            let field = table.get(key)?;
            reader
                .string(&field, example)
                .map(|text| (field, text.to_string()))
        };
        let file = text(self, "file", "\"python3.12-headers.tar\"");
        let url = text(self, "url", "\"https://example.org/python-3.12.tar.gz\"");
        let sha256 = text(self, "sha256", "\"<64 hex digits>\"");
        let name = match (&file, &url) {
            (Some((field, file)), None) => {
                if file.contains('/') || file.is_empty() || file.starts_with('.') {
                    self.report(
                        field,
                        format!("`{file}` is not a file name"),
                        "write only the archive's name; `cuwheel fetch --archives DIR` finds it \
                         in the directory you name",
                    );
                    return None;
                }
                file.clone()
            }
            (None, Some((field, url))) => {
                let last = url.rsplit('/').next().unwrap_or_default();
                if !(url.starts_with("https://") || url.starts_with("http://")) || last.is_empty() {
                    self.report(
                        field,
                        format!(
                            "`{}` is not an http(s) URL of a file",
                            crate::url::redact(url)
                        ),
                        "write the archive's full URL, ending in its file name",
                    );
                    return None;
                }
                last.to_string()
            }
            (Some((field, _)), Some(_)) => {
                self.report(field, "both `file` and `url` are given", "keep one of them");
                return None;
            }
            (None, None) => {
                self.report(field, "the archive has neither `file` nor `url`", fix);
                return None;
            }
        };
        if !ARCHIVE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) {
            let at = file.as_ref().or(url.as_ref()).map(|(field, _)| field);
            let problem = if name.ends_with(".zst") {
                format!("`{name}` is zstd-compressed, which the sandbox's busybox cannot unpack")
            } else {
                format!("`{name}` is not an archive cuwheel unpacks")
            };
            let fix = format!(
                "use a {} archive (python-build-standalone publishes its install_only builds \
                 as .tar.gz), or recompress it: `zstd -d x.tar.zst` gives x.tar",
                ARCHIVE_SUFFIXES.join(", ")
            );
            match at {
                Some(at) => self.report(at, problem, fix),
                None => self.report(field, problem, fix),
            }
            return None;
        }
        let sha256 = match sha256 {
            None => None,
            Some((field, hex)) => {
                if hex.len() != 64
                    || !hex
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                {
                    self.report(
                        &field,
                        format!("`{hex}` is not a sha256 in lowercase hex"),
                        "write the 64 hex digits `sha256sum` prints",
                    );
                    return None;
                }
                Some(hex)
            }
        };
        Some(HeaderArchive {
            file: name,
            url: url.map(|(_, url)| url),
            sha256,
        })
    }

    fn excludes(
        &mut self,
        field: &Field<'_, '_>,
        torch: &[Located<TorchSelector>],
        python: &[PythonAbi],
        cuda: &[Located<CudaVersion>],
        platforms: &[Located<Arch>],
    ) -> Option<Vec<Located<Exclude>>> {
        const EXAMPLE: &str = "[{ torch = \"2.7\", python = \"3.14\" }]";
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
                    "give at least one of cuda, python, torch, binding, platform",
                );
                complete = false;
                continue;
            }
            let before = self.problems.len();
            self.known_keys(&table, &EXCLUDE_KEYS);
            let torch_listed =
                |value: &TorchVersion| torch.iter().any(|s| s.value.contains(*value));
            let torch_shown: Vec<String> =
                torch.iter().map(|s| format!("\"{}\"", s.value)).collect();
            let python_shown: Vec<String> = python.iter().map(|p| format!("\"{p}\"")).collect();
            let cuda_shown: Vec<String> = cuda.iter().map(|c| format!("\"{}\"", c.value)).collect();
            // Without a `cuda` list, which CUDAs the torches serve is known
            // only from the lock: the expansion checks those excludes.
            let cuda_listed =
                |value: &CudaVersion| cuda.is_empty() || cuda.iter().any(|c| c.value == *value);
            let exclude = Exclude {
                cuda: self.exclude_key(
                    &table,
                    "cuda",
                    "\"12.6\"",
                    cuda_listed,
                    &cuda_shown.join(", "),
                ),
                python: self.exclude_key(
                    &table,
                    "python",
                    "\"3.11\"",
                    |value| python.contains(value),
                    &python_shown.join(", "),
                ),
                torch: self.exclude_key(
                    &table,
                    "torch",
                    "\"2.11\"",
                    torch_listed,
                    &torch_shown.join(", "),
                ),
                binding: self.exclude_key(&table, "binding", "\"pybind11\"", |_| true, ""),
                platform: self
                    .exclude_key(
                        &table,
                        "platform",
                        "\"aarch64\"",
                        |value: &Platform| platforms.iter().any(|p| p.value == value.0),
                        &platforms
                            .iter()
                            .map(|p| format!("\"{}\"", p.value))
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                    .map(|platform| platform.0),
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

    /// One key of an exclude entry; a value outside the matrix's list
    /// (`listed`) would match no cell.
    fn exclude_key<T: FromStr<Err = InvalidValue> + fmt::Display>(
        &mut self,
        table: &Table<'_, '_>,
        name: &str,
        example: &str,
        allowed: impl Fn(&T) -> bool,
        listed: &str,
    ) -> Option<T> {
        let field = table.get(name)?;
        let value: T = self.parsed(&field, example)?;
        if allowed(&value) {
            return Some(value);
        }
        // Each key's list in the matrix is named like it, but `platforms`.
        let list = if name == "platform" {
            "platforms"
        } else {
            name
        };
        self.report(
            &field,
            format!(
                "this exclude matches no cell: {value} is not in tool.cuwheel.matrix.{list} = [{listed}]"
            ),
            format!("use one of {listed}, or remove the entry"),
        );
        None
    }
}

/// A table's keys, in document order.
fn key_names(table: &Table<'_, '_>) -> Vec<String> {
    table
        .entries
        .iter()
        .map(|(key, _)| key.get_ref().to_string())
        .collect()
}
