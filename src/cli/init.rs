//! `cuwheel init [DIR]`: infer the project's `[tool.cuwheel]` and flake
//! from its sources (setup.py is read, never run), write them with the
//! matrix the flags (or the package index) give, then lock, write
//! flake.lock and stage what was written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::init::matrix::MatrixFlags;
use cuwheel::init::{InitOptions, ci, init, stage};

#[derive(Args)]
pub struct InitArgs {
    /// The extension's source tree
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The cuwheel flake the project flake names as its input [default: the cuwheel checkout or flake this binary comes from; or $CUWHEEL_FLAKE]
    #[arg(long, value_name = "FLAKE-REF")]
    cuwheel: Option<String>,
    /// Replace an existing [tool.cuwheel] table (the rest of pyproject.toml is kept) and flake.nix
    #[arg(long)]
    force: bool,
    /// Infer from the source tree alone, even where there is a setup.py
    #[arg(long)]
    ignore_setup_py: bool,
    /// Print the config that would be written; write nothing and do not lock
    #[arg(long)]
    dry_run: bool,
    /// Do not run `cuwheel lock` or `nix flake lock` after writing the config
    #[arg(long)]
    no_lock: bool,
    /// Torch releases to build for: minors or ranges (repeatable or comma-separated, like 2.11,2.9) [default: the two newest minors on the package index]
    #[arg(long, value_name = "TORCH")]
    torch: Vec<String>,
    /// Pythons to build for, when a module has pybind11 bindings (repeatable or comma-separated) [default: every Python cuwheel has headers for that the torch releases have wheels for]
    #[arg(long, value_name = "X.Y")]
    python: Vec<String>,
    /// Only the cells serving these CUDA versions (repeatable or comma-separated, like 13.0)
    #[arg(long, value_name = "X.Y")]
    cuda: Vec<String>,
    /// The archs to build kernels for, replacing what init infers (repeatable or comma-separated, like 8.0,9.0+PTX)
    #[arg(long, value_name = "ARCH")]
    cuda_archs: Vec<String>,
    /// The Python interpreter whose pip lists torch releases and `cuwheel lock` uses [default: a venv cuwheel makes in its cache]
    #[arg(long, value_name = "PATH")]
    pip_python: Option<PathBuf>,
    /// Also write a CI workflow for this service (`github`:
    /// .github/workflows/cuwheel.yml). In a project that already has
    /// [tool.cuwheel], only the workflow is written (--force replaces an
    /// existing one)
    #[arg(long, value_name = "SERVICE", value_enum)]
    ci: Option<CiService>,
    /// Where to look for the headers of a Python no Debian suite carries (like Python 3.12's); repeatable, searched before $CUWHEEL_ARCHIVES. Passed on to `cuwheel lock`
    #[arg(long, value_name = "DIR")]
    archives: Vec<PathBuf>,
}

/// A CI service `--ci` writes a workflow for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum CiService {
    Github,
}

pub fn run(args: InitArgs) -> Result<ExitCode> {
    if args.ci.is_some() && !args.dry_run && has_config(&args.dir)? {
        return write_workflow(&args.dir, args.force);
    }
    let options = InitOptions {
        cuwheel: args.cuwheel,
        force: args.force,
        ignore_setup_py: args.ignore_setup_py,
        dry_run: args.dry_run,
        matrix: MatrixFlags {
            torch: args.torch,
            python: args.python,
            cuda: args.cuda,
            cuda_archs: args.cuda_archs,
        },
        pip_python: args.pip_python.clone(),
        archives: args.archives.clone(),
        torch_archs: Default::default(),
    };
    let outcome = init(&args.dir, &options)?;
    if args.dry_run {
        println!("{}", outcome.pyproject);
    }
    eprint!("{}", outcome.report());
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let root = args
        .dir
        .canonicalize()
        .with_context(|| format!("cannot open the project directory {}", args.dir.display()))?;
    if args.no_lock {
        for line in stage::stage(&root) {
            eprintln!("{line}");
        }
        eprintln!(
            "init: --no-lock: run `cuwheel lock`, then `nix flake lock` (flake.lock pins the \
             cuwheel input) and `git add cuwheel.lock flake.lock`"
        );
        if args.ci.is_some() {
            return write_workflow(&args.dir, args.force);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let locked = super::lock::lock_and_report(
        &args.dir,
        cuwheel::registry::LockOptions {
            python: args.pip_python,
            archives: args.archives,
            ..Default::default()
        },
    )
    .context(
        "the config is written, but `cuwheel lock` failed on it: fix what the message names in \
         pyproject.toml (see what init printed as not inferred), then run `cuwheel lock`",
    );
    // The project flake sees only tracked files: stage before `nix flake
    // lock` reads it, and again for flake.lock.
    let mut lines = stage::stage(&root);
    if locked.is_ok() {
        lines = stage::lock_flake(&root);
        lines.extend(stage::stage(&root));
    }
    for line in lines {
        eprintln!("{line}");
    }
    locked?;
    if args.ci.is_some() {
        return write_workflow(&args.dir, args.force);
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the project's pyproject.toml has a [tool.cuwheel] table.
fn has_config(dir: &Path) -> Result<bool> {
    let path = dir.join("pyproject.toml");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let document: toml::Table = toml::from_str(&text)
                .with_context(|| format!("{} is not valid TOML", path.display()))?;
            Ok(document
                .get("tool")
                .and_then(|tool| tool.get("cuwheel"))
                .is_some())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// `--ci github`: writes the workflow and stages it.
fn write_workflow(dir: &Path, force: bool) -> Result<ExitCode> {
    let written = ci::write_github_workflow(dir, force)?;
    if written == ci::Written::Unchanged {
        eprintln!("init: {} is already this workflow", ci::WORKFLOW_PATH);
    } else {
        for line in ci::next_steps() {
            eprintln!("{line}");
        }
    }
    for line in stage::stage_files(dir, &[ci::WORKFLOW_PATH]) {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
