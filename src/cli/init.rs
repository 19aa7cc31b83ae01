//! `cuwheel init [DIR]`: infer the project's `[tool.cuwheel]` and flake
//! from its sources (setup.py is read, never run), write them, then lock.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::init::{InitOptions, init};

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
    /// Do not run `cuwheel lock` after writing the config
    #[arg(long)]
    no_lock: bool,
    /// The Python interpreter whose pip `cuwheel lock` uses [default: python3]
    #[arg(long)]
    python: Option<PathBuf>,
}

pub fn run(args: InitArgs) -> Result<ExitCode> {
    let options = InitOptions {
        cuwheel: args.cuwheel,
        force: args.force,
        ignore_setup_py: args.ignore_setup_py,
        dry_run: args.dry_run,
    };
    let outcome = init(&args.dir, &options)?;
    if args.dry_run {
        println!("{}", outcome.pyproject);
    }
    eprint!("{}", outcome.report());
    if args.dry_run || args.no_lock {
        return Ok(ExitCode::SUCCESS);
    }
    super::lock::lock_and_report(
        &args.dir,
        cuwheel::lock::LockOptions {
            python: args.python,
            ..Default::default()
        },
    )
    .context(
        "the config is written, but `cuwheel lock` failed on it: fix what the message names in \
         pyproject.toml (see what init printed as not inferred), then run `cuwheel lock`",
    )?;
    Ok(ExitCode::SUCCESS)
}
