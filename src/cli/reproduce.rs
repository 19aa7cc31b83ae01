//! `cuwheel reproduce WHEEL|URL`: [`cuwheel::reproduce`] from the command
//! line, as text or JSON, with an exit status scripts can branch on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;

use cuwheel::reproduce::download::{CONNECT_TIMEOUT, STALL_TIMEOUT, TOTAL_TIMEOUT, Timeouts};
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
was built

A URL is downloaded with curl, within the timeouts above; each flag's environment variable
(CUWHEEL_CONNECT_TIMEOUT, CUWHEEL_DOWNLOAD_TIMEOUT, CUWHEEL_STALL_TIMEOUT) sets it when the flag
is not given. A URL holding white space or a control character is refused, and no message shows
a URL's user, password, query or fragment.")]
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
    /// Build at most N derivations at once (default: one per core). Where
    /// `cuwheel plan` warns that the default would not fit in memory, use
    /// the `--max-jobs` it gives
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_jobs: Option<u32>,
    #[command(flatten)]
    cache: SubstituterArgs,
    /// Give up connecting to a URL's server after SECONDS (default 30; or
    /// the environment variable CUWHEEL_CONNECT_TIMEOUT)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    connect_timeout: Option<u64>,
    /// Give up a download that has not finished after SECONDS (default
    /// 7200; or the environment variable CUWHEEL_DOWNLOAD_TIMEOUT)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    download_timeout: Option<u64>,
    /// Give up a download when no byte has come for SECONDS, e.g. from a
    /// server that accepts the connection and never answers (default 60;
    /// or the environment variable CUWHEEL_STALL_TIMEOUT)
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    stall_timeout: Option<u64>,
    /// Print the verdict as JSON
    #[arg(long)]
    pub json: bool,
}

/// A timeout: the flag's value, else the environment variable's, else the default.
fn timeout(flag: Option<u64>, (var, flag_name): (&str, &str), default: u64) -> Result<u64> {
    if let Some(seconds) = flag {
        return Ok(seconds);
    }
    match std::env::var(var) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(seconds) if seconds > 0 => Ok(seconds),
            _ => bail!(
                "the environment variable {var} is `{}`, not a whole number of seconds above 0: \
                 set it to e.g. 120, unset it, or pass {flag_name} SECONDS",
                text.escape_debug()
            ),
        },
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => bail!(
            "the environment variable {var} is not UTF-8: set it to a whole number of seconds, \
             or unset it"
        ),
    }
}

pub fn run(args: ReproduceArgs) -> Result<ExitCode> {
    let defaults = Timeouts::default();
    let timeouts = Timeouts {
        connect: timeout(args.connect_timeout, CONNECT_TIMEOUT, defaults.connect)?,
        total: timeout(args.download_timeout, TOTAL_TIMEOUT, defaults.total)?,
        stall: timeout(args.stall_timeout, STALL_TIMEOUT, defaults.stall)?,
    };
    let options = ReproduceOptions {
        timeouts,
        project: args.project,
        flake: args.flake,
        check: !args.no_check,
        store: args.store,
        substituter: args.cache.substituter()?,
        max_jobs: args.max_jobs,
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
