//! `cuwheel init`: a project's cuwheel config and flake, inferred from its
//! sources without running any of its code.
//!
//! In: an extension's source tree, with or without a setup.py that uses
//! `CUDAExtension`/`CppExtension`, and the cuwheel flake to name. Out:
//! `pyproject.toml` with `[project]` completed and a `[tool.cuwheel]` table
//! (the v2 schema), a project `flake.nix`, and an [`Outcome`] that says
//! what was inferred, what was assumed and what could not be inferred
//! (with what to write there). setup.py is read statically by
//! [`python`] (crates/cuwheel-pyeval) — a tokenizer, parser and evaluator
//! of the subset setup.py files use, reading the project's files through
//! `ProjectTree` — never executed; [`extract`] turns its `setup(...)` call into
//! modules, [`classify`] splits their sources by includes, [`layout`] does
//! the same without a setup.py, [`render`] and [`pyproject`] write the
//! config, [`flake`] the flake. Nothing is written unless everything was
//! read, and each file is replaced atomically.

pub mod abi_suffix;
pub mod archs;
pub mod ci;
pub mod classify;
pub mod extract;
pub mod flake;
pub mod headers;
pub mod layout;
pub mod license;
pub mod license_files;
pub mod matrix;
pub mod metadata;
pub mod model;
pub mod package_data;
pub mod pyproject;
pub mod render;
pub mod requirements;
pub mod sdist_record;
pub mod setup_cfg;
pub mod stage;
pub mod toolkits;
pub mod torch_archs;

/// The setup.py evaluator, in its own crate (crates/cuwheel-pyeval).
pub use cuwheel_pyeval as python;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use self::flake::CuwheelRef;
use self::model::Inferred;
use crate::safe_io::write_atomically;

#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// `--cuwheel`: the flake reference to name instead of the one found.
    pub cuwheel: Option<String>,
    /// Replace an existing `[tool.cuwheel]` table and `flake.nix`.
    pub force: bool,
    /// Infer from the source tree even when there is a setup.py.
    pub ignore_setup_py: bool,
    /// Compute and report, write nothing.
    pub dry_run: bool,
    /// `--torch`, `--python`, `--cuda`, `--cuda-archs`.
    pub matrix: matrix::MatrixFlags,
    /// The interpreter whose pip lists torch releases (default `python3`).
    pub pip_python: Option<PathBuf>,
    /// Where the archs torch was built for come from, when setup.py asks.
    pub torch_archs: torch_archs::Origin,
    /// `--archives`: where to look for the headers of a Python no Debian
    /// suite carries (besides `$CUWHEEL_ARCHIVES`).
    pub archives: Vec<PathBuf>,
}

/// What `init` inferred and wrote.
#[derive(Debug)]
pub struct Outcome {
    pub inferred: Inferred,
    /// `setup.py (read statically, not run)` or `the source tree`.
    pub origin: &'static str,
    /// The whole new pyproject.toml.
    pub pyproject: String,
    /// `[project]` keys the file already had and kept.
    pub kept: Vec<String>,
    pub cuwheel: CuwheelRef,
    pub flake: String,
    /// Whether flake.nix was (or, in a dry run, would be) written.
    pub flake_written: bool,
    pub written: Vec<PathBuf>,
    /// The matrix written, and where it came from.
    pub matrix: matrix::Matrix,
    /// What merging pyproject.toml dropped from the file, said once each.
    pub notes: Vec<String>,
}

/// Infers the config of the project at `root` (absolute), setup.py
/// evaluated for each toolkit of the default matrix.
pub fn infer(root: &Path, ignore_setup_py: bool) -> Result<(Inferred, &'static str)> {
    infer_for(root, ignore_setup_py, &toolkits::default_toolkits())
}

/// [`infer`], setup.py evaluated once per toolkit of `toolkits` (see
/// [`toolkits::toolkits_for`]: one per cell of the matrix written).
pub fn infer_for(
    root: &Path,
    ignore_setup_py: bool,
    toolkits: &[python::Toolkit],
) -> Result<(Inferred, &'static str)> {
    let setup_py = root.join("setup.py");
    if ignore_setup_py || !setup_py.is_file() {
        return Ok((layout::from_tree(root)?, "the source tree"));
    }
    let text = read_setup_py(root, &setup_py)?;
    // Once per toolkit of the matrix: what setup.py computes from it.
    let mut inferred = toolkits::infer_setup_py(root, &text, toolkits)?;
    abi_suffix::infer(&text, &mut inferred);
    inferred
        .assumptions
        .sort_by(|a, b| a.position().cmp(&b.position()).then_with(|| a.cmp(b)));
    Ok((inferred, "setup.py (read statically, not run)"))
}

/// The text of the project file `rel` (relative to `root`) when it is a
/// regular file inside the project once symlinks are resolved, else why
/// not: the evaluator quotes the lines of what it runs (`exec(open(…))`),
/// and no line of a file outside the project may be shown.
pub(crate) fn project_text(root: &Path, rel: &Path) -> Result<String, String> {
    let outside = || {
        format!(
            "{} links to a file outside the project: not read (cuwheel reads only files inside \
             the project)",
            rel.display()
        )
    };
    let (Ok(root), Ok(real)) = (root.canonicalize(), root.join(rel).canonicalize()) else {
        return Err(format!("{} cannot be read", rel.display()));
    };
    if !real.starts_with(&root) {
        return Err(outside());
    }
    crate::safe_io::read_regular_to_string(&real).map_err(|e| format!("{e:#}"))
}

/// The project's files as the evaluator reads them: only what is inside
/// the project ([`project_text`]), globs in the config's dialect.
pub(crate) struct ProjectTree;

impl python::ProjectFiles for ProjectTree {
    fn read_text(&self, root: &Path, rel: &Path) -> Result<String, String> {
        project_text(root, rel)
    }

    fn glob(&self, root: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
        let parsed = crate::spec::glob::Pattern::parse(pattern).map_err(|e| e.to_string())?;
        parsed.files(root).map_err(|e| e.to_string())
    }
}

/// The text of `setup_py`, if it is a file inside the project at `root`:
/// the evaluator's errors quote its lines, and no line of a file outside
/// the project (a setup.py that is a symlink to `/etc/…`) may be shown.
fn read_setup_py(root: &Path, setup_py: &Path) -> Result<String> {
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open the project directory {}", root.display()))?;
    let real = setup_py
        .canonicalize()
        .with_context(|| format!("cannot read {}", setup_py.display()))?;
    if !real.starts_with(&root) {
        anyhow::bail!(
            "{} is a symbolic link to a file outside the project ({}): cuwheel reads setup.py \
             only inside the project and shows no line of a file outside it; copy the file into \
             the project, or run `cuwheel init --ignore-setup-py` to infer from the source tree",
            setup_py.display(),
            real.display()
        );
    }
    crate::safe_io::read_regular_to_string(&real)
}

pub fn init(dir: &Path, options: &InitOptions) -> Result<Outcome> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot open the project directory {}", dir.display()))?;
    let cuwheel = flake::locate(options.cuwheel.as_deref())?;
    let (mut inferred, origin) = infer(&root, options.ignore_setup_py)?;
    let pyproject_path = root.join("pyproject.toml");
    let existing = match fs::read_to_string(&pyproject_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", pyproject_path.display()));
        }
    };
    let dir_name = root
        .file_name()
        .map_or("project".into(), |n| n.to_string_lossy().to_string());
    // The existing `[project]` table, read once.
    let project = existing
        .as_deref()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("project")?.as_table().cloned());
    let has = |key: &str| project.as_ref().is_some_and(|p| p.contains_key(key));
    // A version pyproject.toml declares dynamic is read from where it says
    // (`[tool.setuptools.dynamic]`), not from setup.py.
    let dynamic_version = project
        .as_ref()
        .and_then(|p| p.get("dynamic")?.as_array())
        .is_some_and(|d| d.iter().any(|v| v.as_str() == Some("version")));
    let pybind11 = inferred
        .modules
        .iter()
        .any(|m| m.bindings.contains_key(&classify::Flavour::Pybind11));
    let pip = crate::registry::pip::Pip::new(options.pip_python.as_deref());
    let baseline: crate::spec::Baseline = render::DEFAULT_BASELINE
        .parse()
        .expect("init's baseline is a known manylinux tag");
    let index = matrix::PipIndex {
        pip: &pip,
        baseline: &baseline,
    };
    let mut matrix = matrix::choose(&options.matrix, pybind11, &index)?;
    let from_setup_py = origin.starts_with("setup.py");
    let mut toolkits = matrix_toolkits(&matrix);
    // What setup.py asks of the GPU is answered from the archs torch was
    // built for, read from its wheel: only where it asks, and where
    // `--cuda-archs` does not replace the answer anyway.
    let mut unread_archs = None;
    if from_setup_py && inferred.gpu.any() && matrix.cuda_archs.is_empty() {
        let bound = toolkits.get_or_insert_with(toolkits::default_toolkits);
        let python = matrix
            .python
            .first()
            .and_then(|p| p.parse().ok())
            .unwrap_or(crate::spec::PythonAbi::regular(
                crate::registry::torch::PROBE_PYTHON,
            ));
        let read = match &options.torch_archs {
            torch_archs::Origin::Wheels => {
                crate::registry::downloads::Cache::locate().and_then(|cache| {
                    torch_archs::for_toolkits(bound, &pip, &cache, python, &baseline, &|line| {
                        eprintln!("{line}")
                    })
                })
            }
            torch_archs::Origin::Given(given) => torch_archs::given(bound, given),
        };
        match read {
            Ok(lines) => matrix.notes.extend(lines),
            Err(e) => {
                unread_archs = Some(e);
                toolkits = matrix_toolkits(&matrix);
            }
        }
    }
    // setup.py was evaluated for the default matrix's toolkits; where the
    // matrix written serves others, or torch's archs are now known, what
    // depends on them is evaluated again for exactly those.
    if let Some(toolkits) = toolkits {
        if toolkits != toolkits::default_toolkits() && from_setup_py {
            inferred = infer_for(&root, options.ignore_setup_py, &toolkits)?.0;
        }
    }
    if let Some(e) = unread_archs {
        inferred.find(
            "tool.cuwheel.cuda-archs",
            format!(
                "setup.py asks torch for the GPU it runs on (`torch.cuda.get_device_capability()` \
                 or `get_arch_list()`), which init answers with the archs torch was built for, \
                 read from torch's wheel; they could not be read: {e:#}"
            ),
            "write cuda-archs = [...] with the archs your users' GPUs have, or run `cuwheel \
             init --cuda-archs ...` (or again once pip reaches the index)",
        );
    }
    let reported = |inferred: &Inferred, key: &str| inferred.findings.iter().any(|f| f.key == key);
    if inferred.meta.name.is_none() && !has("name") && !reported(&inferred, "project.name") {
        inferred.find(
            "project.name",
            "no name in setup.py or pyproject.toml; the directory's name was written",
            "write the distribution name, like name = \"my-ext\"",
        );
    }
    if inferred.meta.version.is_none()
        && !has("version")
        && !dynamic_version
        && !reported(&inferred, "project.version")
    {
        inferred.find("project.version", "no version was found; 0.0.0 was written", "write version = \"1.2.3\", or version = { file = \"VERSION\" } in [tool.cuwheel] with dynamic = [\"version\"]");
    }
    if !matrix.cuda_archs.is_empty() {
        inferred.archs = matrix.cuda_archs.clone();
        inferred.toolkit_archs.clear();
        inferred
            .findings
            .retain(|f| f.key != "tool.cuwheel.cuda-archs");
    }
    if let Some(torch) = build_requires_torch(existing.as_deref()) {
        inferred.find(
            "tool.cuwheel.matrix.torch",
            format!("pyproject.toml's [build-system] requires `{torch}`: the project is built against that torch, and matrix.torch = [{}] was written", matrix.torch.join(", ")),
            "set matrix.torch to the torch versions the project supports (a list, or a range like \">=2.7,<2.8\")",
        );
    }
    if dynamic_version {
        inferred.findings.retain(|f| f.key != "project.version");
    }
    // What pyproject.toml already states is kept as it is: setup.py's
    // silence about it is no finding (torch-harmonics names itself there).
    for key in ["name", "description", "requires-python", "urls"] {
        if has(key) {
            let key = format!("project.{key}");
            inferred.findings.retain(|f| f.key != key);
        }
    }
    let mut table = render::render(
        &inferred,
        &root,
        if origin.starts_with("setup.py") {
            "setup.py"
        } else {
            "the source tree"
        },
    );
    table.push('\n');
    table.push_str(&matrix.render());
    let found = headers::find(&matrix.python, &options.archives);
    table.push_str(&headers::render(&found.found));
    for f in &found.found {
        matrix.notes.push(format!(
            "Python {}'s headers: {} (sha256 {}), found in {}",
            f.python,
            f.file,
            f.sha256,
            f.path
                .parent()
                .map_or(String::new(), |p| p.display().to_string())
        ));
    }
    matrix.notes.extend(found.notes);
    let merged = pyproject::merge(
        existing.as_deref(),
        &inferred,
        &table,
        options.force,
        &dir_name,
    )?;
    let name = inferred.meta.name.clone().unwrap_or(dir_name);
    let flake = flake::flake_text(&cuwheel, &name);
    let flake_path = root.join("flake.nix");
    let old_flake = fs::read_to_string(&flake_path).ok();
    let flake_written =
        old_flake.is_none() || (options.force && old_flake.as_deref() != Some(flake.as_str()));
    let mut written = Vec::new();
    if !options.dry_run {
        write_atomically(&pyproject_path, merged.text.as_bytes())?;
        written.push(pyproject_path);
        if flake_written {
            write_atomically(&flake_path, flake.as_bytes())?;
            written.push(flake_path);
        }
    }
    Ok(Outcome {
        inferred,
        origin,
        pyproject: merged.text,
        kept: merged.kept,
        cuwheel,
        flake,
        flake_written,
        written,
        matrix,
        notes: merged.notes,
    })
}

/// The toolkits of the matrix's cells when the flags name them all: every
/// torch a minor and the CUDA versions given; `None` otherwise (a torch
/// range, or CUDA left to the lock), when the default matrix's stand in.
fn matrix_toolkits(matrix: &matrix::Matrix) -> Option<Vec<python::Toolkit>> {
    use crate::spec::{CudaVersion, TorchVersion};
    let torch: Vec<TorchVersion> = matrix
        .torch
        .iter()
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let cuda: Vec<CudaVersion> = matrix
        .cuda
        .iter()
        .map(|c| c.parse().ok())
        .collect::<Option<_>>()?;
    if torch.is_empty() || cuda.is_empty() {
        return None;
    }
    let cells: Vec<_> = torch
        .iter()
        .flat_map(|t| cuda.iter().map(move |c| (*t, *c)))
        .collect();
    Some(toolkits::toolkits_for(&cells))
}

/// The torch requirement of `[build-system] requires`, if it constrains one.
fn build_requires_torch(pyproject: Option<&str>) -> Option<String> {
    let table: toml::Table = pyproject?.parse().ok()?;
    let requires = table.get("build-system")?.get("requires")?.as_array()?;
    requires
        .iter()
        .filter_map(|r| r.as_str())
        .find(|r| {
            let name: String = r
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            name.eq_ignore_ascii_case("torch") && r.len() > name.len()
        })
        .map(str::to_string)
}

impl Outcome {
    /// What a user reads: the modules found, each assumption, each thing not
    /// inferred with what to write, and what was written.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let inferred = &self.inferred;
        let _ = writeln!(out, "init: inferred from {}", self.origin);
        // Why each binding is one, said once per TU.
        let mut shown = std::collections::BTreeSet::new();
        for module in &inferred.modules {
            let bindings: Vec<String> = module
                .bindings
                .iter()
                .map(|(f, files)| format!("{} {f}", files.len()))
                .collect();
            let _ = writeln!(
                out,
                "  {}{}: {} kernel TU(s), bindings: {}",
                module.name,
                if module.cuda { "" } else { " (no CUDA)" },
                module.kernels.len(),
                if bindings.is_empty() {
                    "none".into()
                } else {
                    bindings.join(", ")
                },
            );
            for reason in &module.reasons {
                if shown.insert(reason) {
                    let _ = writeln!(out, "    binding: {reason}");
                }
            }
        }
        if !inferred.assumptions.is_empty() {
            let _ = writeln!(
                out,
                "init: assumed (setup.py was evaluated for a CUDA build host, no environment variables set):"
            );
            // Each note once, however many evaluations or lists gave it.
            let mut said = std::collections::BTreeSet::new();
            for note in inferred.assumptions.iter().filter(|n| said.insert(*n)) {
                let _ = writeln!(out, "  {}\n    {}", note.at, note.text);
            }
        }
        if !inferred.findings.is_empty() {
            let _ = writeln!(out, "init: not inferred — review these in pyproject.toml:");
            for finding in &inferred.findings {
                let _ = writeln!(out, "  {finding}");
            }
        }
        for kept in &self.kept {
            let _ = writeln!(out, "init: kept pyproject.toml's {kept}");
        }
        for note in self.notes.iter().chain(&self.matrix.notes) {
            let _ = writeln!(out, "init: {note}");
        }
        let _ = writeln!(
            out,
            "init: matrix: torch {}{}{}",
            self.matrix.torch.join(", "),
            if self.matrix.python.is_empty() {
                String::new()
            } else {
                format!("; python {}", self.matrix.python.join(", "))
            },
            if self.matrix.cuda.is_empty() {
                String::new()
            } else {
                format!("; cuda {}", self.matrix.cuda.join(", "))
            },
        );
        if self.written.is_empty() {
            let _ = writeln!(out, "init: dry run: nothing written");
        }
        for path in &self.written {
            let _ = writeln!(out, "init: wrote {}", path.display());
        }
        let _ = writeln!(
            out,
            "init: the project flake's cuwheel input is {} ({})",
            self.cuwheel.url, self.cuwheel.how
        );
        if !self.flake_written {
            let _ = writeln!(
                out,
                "init: flake.nix exists and was left as it is (--force replaces it)"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::ProjectTree;
    use super::python::ProjectFiles;
    use cuwheel_pyeval::test_support::write_tree;

    #[test]
    fn the_evaluator_reads_only_inside_the_project_and_globs_in_the_config_dialect() {
        let (_dir, root) = write_tree(&[
            ("setup.py", "from setuptools import setup\n"),
            ("csrc/a.cu", ""),
            ("csrc/deep/b.cu", ""),
            ("csrc/c.cpp", ""),
        ]);
        let (_outside, elsewhere) = write_tree(&[("secret.txt", "not the project's")]);
        std::os::unix::fs::symlink(elsewhere.join("secret.txt"), root.join("link.txt")).unwrap();
        let tree = ProjectTree;
        assert_eq!(
            tree.read_text(&root, Path::new("setup.py")).unwrap(),
            "from setuptools import setup\n"
        );
        let refused = tree.read_text(&root, Path::new("link.txt")).unwrap_err();
        assert!(refused.contains("outside the project"), "{refused}");
        assert_eq!(
            tree.glob(&root, "csrc/**/*.cu").unwrap(),
            [PathBuf::from("csrc/a.cu"), PathBuf::from("csrc/deep/b.cu")]
        );
        assert!(tree.glob(&root, "csrc/[ab].cu").is_err());
    }
}
