//! Argument parsing and dispatch. Each subcommand lives in its own file and
//! returns an [`ExitCode`]; errors are printed with their whole context chain.

mod cache;
mod fetch;
#[cfg(feature = "init")]
mod init;
mod lock;
mod plan;
mod plan_estimate;
mod publish;
mod reproduce;
mod store;
mod upload;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// The subcommands the driver runs inside builds, which the CLI offers too.
use cuwheel_build::cli::{
    AFTER_HELP, about, audit, build_wheel, finish, output, parse_failure, symbols,
};

#[derive(Parser)]
#[command(
    name = "cuwheel",
    version,
    about,
    propagate_version = true,
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(about = about::AUDIT)]
    Audit(audit::AuditArgs),
    #[command(about = about::BUILD_WHEEL)]
    #[command(hide = true)]
    BuildWheel(build_wheel::BuildWheelArgs),
    /// A signed Nix binary cache of the pinned artifacts and what is built from them: the archive that outlives the registries
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Put every artifact of cuwheel.lock into the Nix store, verified by its hash
    Fetch(fetch::FetchArgs),
    /// Write a project's [tool.cuwheel] and flake.nix, inferred from its sources and setup.py (read, never run), then lock
    #[cfg(feature = "init")]
    Init(init::InitArgs),
    #[command(about = about::LOAD_CHECK)]
    LoadCheck(symbols::LoadCheckArgs),
    /// Pin every toolchain of the project's matrix by hash in cuwheel.lock
    Lock(lock::LockArgs),
    #[command(about = about::PLAN)]
    Plan(plan::PlanArgs),
    /// Publish audited wheels into a static package index directory: one index per CUDA variant plus a combined one
    Publish(publish::PublishArgs),
    /// Rebuild a wheel from this checkout and compare: identical, or exactly which files, sections, symbols and lines differ
    Reproduce(reproduce::ReproduceArgs),
    /// Nix store formats, computed without asking Nix: NAR hashes, store paths, `.drv` files
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Upload the PyPI variant's wheels with twine, after checking each against PyPI's rules (nothing is sent if one fails)
    Upload(upload::UploadArgs),
    #[command(about = about::SYMBOLS)]
    Symbols(symbols::SymbolsArgs),
}

impl Command {
    /// Whether the command was asked for JSON on stdout (`--json`).
    fn wants_json(&self) -> bool {
        match self {
            Command::Audit(args) => args.json,
            Command::Plan(args) => args.json,
            Command::Reproduce(args) => args.json,
            _ => false,
        }
    }
}

pub fn main() -> ExitCode {
    output::install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return parse_failure(&error),
    };
    let json = cli.command.wants_json();
    let result = match cli.command {
        Command::Audit(args) => audit::run(args),
        Command::BuildWheel(args) => build_wheel::run(args),
        Command::Cache(command) => cache::run(command),
        Command::Fetch(args) => fetch::run(args),
        #[cfg(feature = "init")]
        Command::Init(args) => init::run(args),
        Command::LoadCheck(args) => symbols::run_load_check(args),
        Command::Lock(args) => lock::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Publish(args) => publish::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Store(command) => store::run(command),
        Command::Symbols(args) => symbols::run_symbols(args),
        Command::Upload(args) => upload::run(args),
    };
    finish(result, json)
}
