//! `cuwheel lock`: resolve every toolchain of the project's matrix and write
//! `cuwheel.lock` beside its `pyproject.toml`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use cuwheel::lock::{LockOptions, lock_project};

#[derive(Args)]
pub struct LockArgs {
    /// The project directory (holding pyproject.toml)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// The Python interpreter whose pip resolves and downloads PyPI wheels [default: python3]
    #[arg(long)]
    python: Option<PathBuf>,
}

pub fn run(args: LockArgs) -> Result<ExitCode> {
    lock_and_report(&args.project, args.python)?;
    Ok(ExitCode::SUCCESS)
}

/// Locks the project in `project` and says what was written (also what
/// `cuwheel init` runs last).
pub(super) fn lock_and_report(project: &Path, python: Option<PathBuf>) -> Result<()> {
    let (lock, path) = lock_project(project, &LockOptions { python })?;
    eprintln!(
        "lock: wrote {} ({} cells, {} toolchains, {} artifacts)",
        path.display(),
        lock.cells.len(),
        lock.toolchains.len(),
        lock.artifacts.len()
    );
    Ok(())
}
