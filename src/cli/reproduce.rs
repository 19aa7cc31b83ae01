//! `cuwheel reproduce WHEEL|URL`: [`cuwheel::reproduce`] from the command
//! line, as text or JSON, with an exit status scripts can branch on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::reproduce::{ReproduceOptions, Verdict, reproduce};

use super::cache::SubstituterArgs;

/// Exit status when the rebuilt wheel differs, or a derivation does.
const EXIT_DIFFERENT: u8 = 3;
/// Exit status when the checkout is not the wheel's (nothing was built).
const EXIT_OTHER_CHECKOUT: u8 = 4;

#[derive(Args)]
#[command(after_help = "\
Exit status:
  0  the rebuilt wheel is identical, byte for byte
  1  it could not be tried (unreadable wheel, not a cuwheel wheel, a failed build or download)
  2  the command line is wrong
  3  not reproduced: the rebuilt wheel differs (the report says where), or a derivation gave \
other bytes when built again
  4  the checkout is not the one the wheel was built from (the report lists each file); nothing \
was built")]
pub struct ReproduceArgs {
    /// The wheel: a path, or an http:// or https:// URL (downloaded with curl)
    #[arg(value_name = "WHEEL|URL")]
    wheel: String,
    /// The project directory (holding pyproject.toml and cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// The flake that builds the project (default: the nearest directory
    /// holding flake.nix, from the project directory up)
    #[arg(long, value_name = "REF")]
    flake: Option<String>,
    /// Trust the outputs the store already holds instead of building every
    /// derivation of the cell again (`nix-store --check`): faster, but a
    /// wheel built on this machine is then only compared with itself
    #[arg(long)]
    no_check: bool,
    /// Build in a Nix store rooted at this directory instead of the system's
    #[arg(long, value_name = "ROOT")]
    store: Option<PathBuf>,
    #[command(flatten)]
    cache: SubstituterArgs,
    /// Print the verdict as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ReproduceArgs) -> Result<ExitCode> {
    let options = ReproduceOptions {
        project: args.project,
        flake: args.flake,
        check: !args.no_check,
        store: args.store,
        substituter: args.cache.substituter()?,
    };
    let verdict = reproduce(&args.wheel, &options, &|message| {
        eprintln!("reproduce: {message}")
    })?;
    if args.json {
        let json = serde_json::to_string_pretty(&verdict).context("cannot encode the verdict")?;
        println!("{json}");
    } else {
        print!("{}", verdict.render());
    }
    Ok(match verdict {
        Verdict::Identical { .. } => ExitCode::SUCCESS,
        Verdict::Different { .. } | Verdict::NotDeterministic { .. } => {
            ExitCode::from(EXIT_DIFFERENT)
        }
        Verdict::OtherCheckout { .. } => ExitCode::from(EXIT_OTHER_CHECKOUT),
    })
}
