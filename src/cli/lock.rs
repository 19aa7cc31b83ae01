//! `cuwheel lock`: resolve every toolchain of the project's matrix and write
//! `cuwheel.lock` beside its `pyproject.toml`.

use std::path::PathBuf;
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
    /// A directory holding the Python header archives the config names by
    /// `file` (no registry carries them); repeatable, searched before
    /// $CUWHEEL_ARCHIVES
    #[arg(long, value_name = "DIR")]
    archives: Vec<PathBuf>,
}

pub fn run(args: LockArgs) -> Result<ExitCode> {
    let options = LockOptions {
        python: args.python,
        archives: args.archives,
    };
    let (lock, path) = lock_project(&args.project, &options)?;
    eprintln!(
        "lock: wrote {} ({} cells, {} toolchains, {} artifacts)",
        path.display(),
        lock.cells.len(),
        lock.toolchains.len(),
        lock.artifacts.len()
    );
    Ok(ExitCode::SUCCESS)
}
