//! `cuwheel cache key` and `cuwheel cache export`: a signing key pair, and a
//! signed Nix binary cache of everything the project's wheels are made from.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use cuwheel::cache::Substituter;
use cuwheel::cache::key::generate;
use cuwheel::fetch::progress::megabytes;
use cuwheel::lock::format::{LOCK_FILE, Lock};
use cuwheel::plan::sources::plan_project;
use cuwheel::publish::binary_cache::{Scope, export};
use cuwheel::registry::flake::check_builds_project;
use cuwheel::registry::flake::find_flake;
use cuwheel::registry::nix::Nix;

#[derive(Subcommand)]
pub enum CacheCommand {
    /// Generate a signing key pair: DIR/NAME.sec (secret, mode 0600) and DIR/NAME.pub; never overwrites
    Key(KeyArgs),
    /// Copy every pinned artifact, toolchain, kernel object and the driver (or, with --cell, what
    /// those cells' own derivations take as inputs) into a signed binary cache directory
    Export(ExportArgs),
}

#[derive(Args)]
pub struct KeyArgs {
    /// The key's name, which signatures carry (such as `my-cache-1`)
    name: String,
    /// The directory to write the pair into
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(Args)]
pub struct ExportArgs {
    /// The binary cache directory (created if missing; what it holds is kept)
    dir: PathBuf,
    /// The secret key to sign with (`cuwheel cache key` writes one)
    #[arg(long, value_name = "SECRET_KEY_FILE")]
    key: PathBuf,
    /// The project directory (holding cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// The flake that builds the project's toolchains, kernels and driver
    /// (default: the nearest directory holding flake.nix, from the project up)
    #[arg(long, value_name = "REF")]
    flake: Option<String>,
    /// A Nix store rooted at this directory instead of the system's
    #[arg(long)]
    store: Option<PathBuf>,
    /// Export only what this cell's binding, link, wheel and audit take as inputs (its
    /// toolchains, kernel objects, the seeds and the driver), no pinned artifact: a cache that
    /// builders substitute from. Repeat for several cells
    #[arg(long, value_name = "CELL")]
    cell: Vec<String>,
}

pub fn run(command: CacheCommand) -> Result<ExitCode> {
    match command {
        CacheCommand::Key(args) => {
            let pair = generate(&args.name, &args.out)?;
            println!("secret key: {}", pair.secret.display());
            println!("public key: {}", pair.public.display());
        }
        CacheCommand::Export(args) => {
            let lock = Lock::read(&args.project.join(LOCK_FILE))?;
            let nix = match &args.store {
                Some(root) => Nix::with_store_root(root),
                None => Nix::system(),
            };
            let flake = match args.flake {
                Some(flake) => flake,
                None => find_flake(&args.project)?.display().to_string(),
            };
            let (_, project, _) = plan_project(&args.project)?;
            check_builds_project(&nix, &flake, &args.project, project.digests.keys())?;
            let scope = if args.cell.is_empty() {
                Scope::Lock
            } else {
                Scope::Cells(args.cell)
            };
            let done = export(&lock, &nix, &flake, &args.dir, &args.key, &scope)?;
            println!(
                "exported {} store paths to {} ({} new): {}, and their closure; {} as NARs, {} \
                 compressed",
                done.paths,
                done.url,
                done.added,
                done.contents,
                megabytes(done.nar_bytes),
                megabytes(done.file_bytes)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The binary cache a command may substitute from: `--substituter` and
/// `--trusted-key`, given together (fetch and reproduce take them).
#[derive(Args)]
pub struct SubstituterArgs {
    /// A binary cache (`cuwheel cache export`) to take missing paths from before any registry: a URL or a directory
    #[arg(long, requires = "trusted_key", value_name = "URL_OR_DIR")]
    substituter: Option<String>,
    /// The public key the binary cache must be signed with: NAME:BASE64, or a file holding it (NAME.pub)
    #[arg(long, requires = "substituter", value_name = "KEY_OR_FILE")]
    trusted_key: Option<String>,
}

impl SubstituterArgs {
    pub fn substituter(&self) -> Result<Option<Substituter>> {
        match (&self.substituter, &self.trusted_key) {
            (Some(url), Some(key)) => Ok(Some(Substituter::new(url, key)?)),
            _ => Ok(None),
        }
    }
}
