//! `cuwheel-build`, the driver: the subcommands cuwheel's Nix builds run
//! (`plan --json` for the plan, `build-wheel`, `audit`, `load-check` and
//! `symbols` for a cell's derivations). `nix/driver.nix` compiles this
//! crate alone; the `cuwheel` CLI offers the same subcommands.
//!
//! In: the arguments. Out: the subcommand's output and exit status.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cuwheel_build::cli::{self, about, audit, build_wheel, output, plan, symbols};

#[derive(Parser)]
#[command(
    name = "cuwheel-build",
    version,
    about = "cuwheel's driver: the subcommands its Nix builds run",
    propagate_version = true,
    after_help = cli::AFTER_HELP
)]
struct Driver {
    #[command(subcommand)]
    command: Command,
}

// Described by the same words as in the CLI (`cli::about`).
#[derive(Subcommand)]
enum Command {
    #[command(about = about::AUDIT)]
    Audit(audit::AuditArgs),
    #[command(about = about::BUILD_WHEEL)]
    BuildWheel(build_wheel::BuildWheelArgs),
    #[command(about = about::LOAD_CHECK)]
    LoadCheck(symbols::LoadCheckArgs),
    #[command(about = about::PLAN)]
    Plan(plan::PlanArgs),
    #[command(about = about::SYMBOLS)]
    Symbols(symbols::SymbolsArgs),
}

fn main() -> ExitCode {
    cli::quiet_on_closed_pipe();
    output::install_panic_hook();
    let driver = match Driver::try_parse() {
        Ok(driver) => driver,
        Err(error) => return cli::parse_failure(&error),
    };
    let (result, json) = match driver.command {
        Command::Audit(args) => {
            let json = args.json;
            (audit::run(args), json)
        }
        Command::BuildWheel(args) => (build_wheel::run(args), false),
        Command::LoadCheck(args) => (symbols::run_load_check(args), false),
        Command::Plan(args) => {
            let json = args.json;
            (plan::run(args), json)
        }
        Command::Symbols(args) => (symbols::run_symbols(args), false),
    };
    cli::finish(result, json)
}
