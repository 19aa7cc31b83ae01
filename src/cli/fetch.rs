//! `cuwheel fetch`: put every artifact of the project's `cuwheel.lock` into
//! the Nix store, verified: from a signed binary cache where one is given,
//! else through the registries' clients.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::cache::SubstituterArgs;
use cuwheel::fetch::{FetchOptions, fetch};
use cuwheel::lock::LOCK_FILE;
use cuwheel::lock::format::Lock;
use cuwheel::store::nix::Nix;

#[derive(Args)]
pub struct FetchArgs {
    /// The project directory (holding cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// A Nix store rooted at this directory instead of the system's (needs no daemon)
    #[arg(long)]
    store: Option<PathBuf>,
    /// How many downloads run at once
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// The Python interpreter whose pip downloads wheels [default: python3]
    #[arg(long)]
    python: Option<PathBuf>,
    #[command(flatten)]
    cache: SubstituterArgs,
    /// Never run pip, apt-get or cargo: take missing paths from the binary cache and local caches only
    #[arg(long)]
    offline: bool,
    /// A directory holding archives the lock pins but no registry carries
    /// (Python headers); repeatable, searched before $CUWHEEL_ARCHIVES
    #[arg(long, value_name = "DIR")]
    archives: Vec<PathBuf>,
    /// Fetch only what these cells (and cuwheel itself) need; repeatable
    /// [default: every cell]
    #[arg(long = "cell", value_name = "CELL")]
    cells: Vec<String>,
}

pub fn run(args: FetchArgs) -> Result<ExitCode> {
    let mut lock = Lock::read(&args.project.join(LOCK_FILE))?;
    if !args.cells.is_empty() {
        lock = lock.for_cells(&args.cells)?;
    }
    let nix = match &args.store {
        Some(root) => Nix::with_store_root(root),
        None => Nix::system(),
    };
    let options = FetchOptions {
        jobs: args.jobs,
        python: args.python,
        substituter: args.cache.substituter()?,
        offline: args.offline,
        archives: args.archives,
    };
    fetch(&lock, &nix, &options)?;
    Ok(ExitCode::SUCCESS)
}
