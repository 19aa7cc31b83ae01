//! `cuwheel fetch`: put every artifact of the project's `cuwheel.lock` (or
//! those some cells need), and of cuwheel's own `nix/driver.lock` (compiled
//! in: what the flake builds this driver with), into the Nix store,
//! verified: from a signed binary cache where one is given, else through
//! the registries' clients, and for a `.deb` the mirror dropped, from
//! another suite or Debian's snapshot archive.
//!
//! Exit status: 0 when every path is in the store; 3 when the only failure
//! is pinned Debian files that no source serves any more (their store names
//! on stdout, one a line; `cuwheel lock --refresh` re-pins a project's,
//! `cuwheel lock --driver nix/driver.lock` in a cuwheel checkout the
//! driver's); 1 for anything else.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::cache::SubstituterArgs;
use cuwheel::fetch::select::artifacts_for_cells;
use cuwheel::fetch::{FetchOptions, Vanished, fetch};
use cuwheel::lock::LOCK_FILE;
use cuwheel::lock::format::Lock;
use cuwheel::registry::driver::{DRIVER_LOCK_FILE, DriverLock};
use cuwheel::registry::nix::Nix;

/// The exit status for pinned Debian files gone from every source.
const EXIT_VANISHED: u8 = 3;

#[derive(Args)]
#[command(
    after_help = "Exit status: 0 when every pinned path is in the store; 3 when the only \
    failure is pinned Debian files that neither their suite, another suite nor the snapshot \
    archive serves any more (their store names are printed on stdout, one a line; `cuwheel lock \
    --refresh` re-pins them); 1 for any other failure."
)]
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
    /// The Python interpreter whose pip downloads wheels [default: a venv cuwheel makes in its cache]
    #[arg(long)]
    python: Option<PathBuf>,
    /// Fetch only what this cell (and the driver) needs; repeat for several [default: every cell]
    #[arg(long = "cell", value_name = "CELL")]
    cells: Vec<String>,
    /// With --cell: also what `compat.<cell>` needs, the other torch releases of the cell's CUDA major its compatibility table compares
    #[arg(long, requires = "cells")]
    compat: bool,
    #[command(flatten)]
    cache: SubstituterArgs,
    /// Never run pip, apt-get or cargo: take missing paths from the binary cache and local caches only
    #[arg(long)]
    offline: bool,
    /// Base URL of Debian's snapshot archive, where a .deb the mirror dropped is looked for last (`<URL>/<timestamp>/` is the archive at that moment) [default: $CUWHEEL_DEBIAN_SNAPSHOT, else the public snapshot service]
    #[arg(long, value_name = "URL")]
    debian_snapshot: Option<String>,
    /// Fetch only the project's lock, not what builds the driver (cuwheel's nix/driver.lock)
    #[arg(long)]
    no_driver: bool,
    /// Fetch only what builds the driver (cuwheel's nix/driver.lock), not the project's lock: its Nix build (`nix build .#driver`) can then run while the project's artifacts download
    #[arg(long, conflicts_with_all = ["no_driver", "cells"])]
    driver_only: bool,
    /// A directory holding archives the lock pins but no registry carries
    /// (Python headers); repeatable, searched before $CUWHEEL_ARCHIVES
    #[arg(long, value_name = "DIR")]
    archives: Vec<PathBuf>,
    #[command(flatten)]
    net: super::lock::NetArgs,
}

pub fn run(args: FetchArgs) -> Result<ExitCode> {
    args.net.install()?;
    // No project is read for the driver alone.
    let lock = if args.driver_only {
        None
    } else {
        Some(Lock::read(&args.project.join(LOCK_FILE))?)
    };
    // An unknown cell is refused before anything is downloaded (the
    // driver's paths included), naming the lock's cells.
    if let Some(lock) = lock.as_ref().filter(|_| !args.cells.is_empty()) {
        artifacts_for_cells(lock, &args.cells, args.compat)?;
    }
    let nix = match &args.store {
        Some(root) => Nix::with_store_root(root),
        None => Nix::system(),
    };
    let substituter = args.cache.substituter()?;
    if let Some(substituter) = &substituter {
        nix.check_cache(&substituter.nix_options())?;
    }
    let options = FetchOptions {
        jobs: args.jobs,
        python: args.python,
        substituter,
        offline: args.offline,
        cells: args.cells,
        compat: args.compat,
        debian_snapshot: args.debian_snapshot,
        project: Some(args.project),
        archives: args.archives,
    };
    let driver_options = FetchOptions {
        cells: Vec::new(),
        project: None,
        ..options.clone()
    };
    let project = match &lock {
        Some(lock) => fetch(lock, &nix, &options).map(drop),
        None => Ok(()),
    };
    // Both, even when the first fails: each error names what is missing.
    let driver = if args.no_driver {
        Ok(())
    } else {
        eprintln!("fetch: what builds the driver (cuwheel's {DRIVER_LOCK_FILE})");
        DriverLock::embedded().and_then(|driver| {
            fetch(&driver.pins(), &nix, &driver_options)
                .map(drop)
                .map_err(|error| {
                    match error.downcast_ref::<Vanished>() {
                        // The project's re-pin command would not help here.
                        Some(vanished) => {
                            anyhow::Error::new(DriverVanished(vanished.files.clone()))
                        }
                        None => error.context(format!(
                            "cannot fetch what builds the driver (cuwheel's {DRIVER_LOCK_FILE})"
                        )),
                    }
                })
        })
    };
    let mut vanished = Vec::new();
    for result in [project, driver] {
        let Err(error) = result else { continue };
        if let Some(gone) = error.downcast_ref::<Vanished>() {
            vanished.extend(gone.files.iter().map(|f| f.name.clone()));
        } else if let Some(DriverVanished(files)) = error.downcast_ref::<DriverVanished>() {
            vanished.extend(files.iter().map(|f| f.name.clone()));
        } else {
            return Err(error);
        }
        eprintln!("error: {error:#}");
    }
    if vanished.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for name in vanished {
        super::output::stdout_line(&name)?;
    }
    Ok(ExitCode::from(EXIT_VANISHED))
}

/// Files of the driver's lock that no source serves any more.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} pinned Debian files of what builds the driver (cuwheel's {DRIVER_LOCK_FILE}) are gone \
     from their suite, the mirror's other suites and Debian's snapshot archive: {}. Re-pin them \
     in a cuwheel checkout with `cuwheel lock --driver {DRIVER_LOCK_FILE}` and build cuwheel \
     again, or fetch them from a binary cache that holds them (--substituter, --trusted-key)",
    .0.len(),
    .0.iter().map(|f| format!("{} {} of Debian {}", f.package, f.version, f.suite)).collect::<Vec<_>>().join(", ")
)]
struct DriverVanished(Vec<cuwheel::fetch::debian_fallback::VanishedFile>);
