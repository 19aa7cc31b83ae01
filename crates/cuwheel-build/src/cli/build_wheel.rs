//! `cuwheel build-wheel`: the wheel assembly step of a cell's build, run by
//! the Nix-built driver inside the wheel derivation (hidden from `--help`:
//! the plan writes its arguments).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use crate::build::WheelRecipe;
use crate::wheel::ZipTimestamp;

#[derive(Args)]
pub struct BuildWheelArgs {
    /// The recipe JSON the plan wrote
    #[arg(long)]
    recipe: PathBuf,
    /// The wheel's members, laid out at their paths
    #[arg(long)]
    tree: PathBuf,
    /// The directory to write the wheel into
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: BuildWheelArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&args.recipe)
        .with_context(|| format!("cannot read {}", args.recipe.display()))?;
    let recipe: WheelRecipe = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a wheel recipe; it is written by `cuwheel plan`, whose version must match \
             this driver's",
            args.recipe.display()
        )
    })?;
    let path = recipe.build(&args.tree, &args.out, ZipTimestamp::from_env()?)?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}
