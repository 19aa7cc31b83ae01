//! `plan --json`: the derivation graph of the project's matrix, as JSON for
//! `nix/plan.nix`. The driver prints only this; the `cuwheel` CLI's `plan`
//! adds, on the host, the forms for people and CI (a summary with what is
//! already built, the CI jobs) and prints this one through [`print_json`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::plan::sources;

#[derive(Args)]
pub struct PlanArgs {
    /// The project directory (holding pyproject.toml and cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// Print the plan as JSON (the input of nix/plan.nix)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if !args.json {
        bail!(
            "the driver prints the plan only as JSON (--json); `cuwheel plan` prints the summary"
        );
    }
    print_json(&args.project)
}

/// Prints the plan of the project in `project` as JSON.
pub fn print_json(project: &Path) -> Result<ExitCode> {
    let (_, _, plan) = sources::plan_project(project)?;
    super::output::stdout(&plan.to_json())?;
    Ok(ExitCode::SUCCESS)
}
