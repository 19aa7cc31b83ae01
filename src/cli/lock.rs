//! `cuwheel lock`: resolve every toolchain of the project's matrix and write
//! `cuwheel.lock` beside its `pyproject.toml`; with `--refresh`, re-pin only
//! the Debian files the mirror has dropped and print each version change;
//! with `--driver`, write cuwheel's own lock (the Rust toolchain and seeds
//! that build the driver).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use cuwheel::registry::net::NetLimits;
use cuwheel::registry::refresh_project;
use cuwheel::registry::{LockOptions, lock_driver, lock_project};

#[derive(Args)]
pub struct LockArgs {
    /// The project directory (holding pyproject.toml)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// The Python interpreter whose pip resolves and downloads PyPI wheels [default: a venv cuwheel makes in its cache]
    #[arg(long)]
    python: Option<PathBuf>,
    /// Re-pin only the Debian packages their suite no longer carries (what `cuwheel fetch` exits 3 for): re-read their suites and resolve again only the toolchains that lost a pin; every other pin stays byte-identical. Prints one line per version change on stdout
    #[arg(long)]
    refresh: bool,
    /// Lock what builds cuwheel itself instead of a project, into this file
    /// (`nix/driver.lock` of a cuwheel checkout)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["project", "refresh"])]
    driver: Option<PathBuf>,
    /// A directory holding the Python header archives the config names by
    /// `file` (no registry carries them); repeatable, searched before
    /// $CUWHEEL_ARCHIVES
    #[arg(long, value_name = "DIR")]
    archives: Vec<PathBuf>,
    /// Ask the registries about every toolchain again. By default a relock
    /// reuses what the existing cuwheel.lock resolved for the same question
    /// (a torch minor's wheels for the same Pythons, the toolkits listing,
    /// each toolchain whose suite, version or pinned file is unchanged), so
    /// that a matrix edit asks only about what is new
    #[arg(long, conflicts_with = "refresh")]
    fresh: bool,
    #[command(flatten)]
    net: NetArgs,
}

/// The limits of the registries' clients (pip, apt-get, curl, cargo).
#[derive(Args)]
pub struct NetArgs {
    /// Seconds pip, apt-get, curl and cargo wait for a connection or for
    /// progress on one before they retry or fail (pip --timeout, apt-get
    /// Acquire::http(s)::Timeout, curl --connect-timeout and --speed-time,
    /// CARGO_HTTP_TIMEOUT) [default: $CUWHEEL_NET_TIMEOUT, else 30]
    #[arg(long, value_name = "SECONDS")]
    net_timeout: Option<u32>,
    /// How many times each of them tries again after a failed connection
    /// (pip --retries, apt-get Acquire::Retries, curl --retry,
    /// CARGO_NET_RETRY) [default: $CUWHEEL_NET_RETRIES, else 2]
    #[arg(long, value_name = "N")]
    net_retries: Option<u32>,
}

impl NetArgs {
    /// Makes these the limits of every client this process runs.
    pub fn install(&self) -> Result<()> {
        NetLimits::resolve(self.net_timeout, self.net_retries)?.install();
        Ok(())
    }
}

pub fn run(args: LockArgs) -> Result<ExitCode> {
    args.net.install()?;
    let options = LockOptions {
        python: args.python,
        archives: args.archives,
        fresh: args.fresh,
    };
    if let Some(path) = &args.driver {
        let lock = lock_driver(path, &options)?;
        eprintln!(
            "lock: wrote {} (the driver's {} toolchain, {} artifacts)",
            path.display(),
            lock.driver.rust,
            lock.artifacts.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.refresh {
        let refreshed = refresh_project(&args.project, &options)?;
        if refreshed.vanished.is_empty() {
            eprintln!(
                "lock: nothing to refresh: every pinned Debian file of {} is still in its suite",
                refreshed.path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        for change in &refreshed.changes {
            super::output::stdout_line(&change.to_string())?;
        }
        eprintln!(
            "lock: re-pinned {} files the mirror no longer carries ({} version changes) in {}; \
             every other pin is unchanged",
            refreshed.vanished.len(),
            refreshed.changes.len(),
            refreshed.path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    lock_and_report(&args.project, options)?;
    Ok(ExitCode::SUCCESS)
}

/// Locks the project in `project` and says what was written (also what
/// `cuwheel init` runs last).
pub(super) fn lock_and_report(project: &Path, options: LockOptions) -> Result<()> {
    let (lock, path) = lock_project(project, &options)?;
    eprintln!(
        "lock: wrote {} ({} cells, {} toolchains, {} artifacts)",
        path.display(),
        lock.cells.len(),
        lock.toolchains.len(),
        lock.artifacts.len()
    );
    Ok(())
}
