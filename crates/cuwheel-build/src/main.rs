//! `cuwheel-build`, the driver: the subcommands cuwheel's Nix builds run
//! (`plan --json` for the plan, `build-wheel`, `audit`, `load-check` and
//! `symbols` for a cell's derivations). `nix/driver.nix` compiles this
//! crate alone; the `cuwheel` CLI offers the same subcommands.
//!
//! In: the arguments. Out: the subcommand's output and exit status.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cuwheel_build::cli::{self, audit, build_wheel, output, plan, symbols};

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

// Each as the CLI describes it (src/cli/mod.rs), which tests/driver_nix.rs checks.
#[derive(Subcommand)]
enum Command {
    /// Judge wheels as strictly as auditwheel and further: manylinux tag, libraries, RPATHs, build paths, abi3, CUDA archs
    Audit(audit::AuditArgs),
    /// Assemble a cell's wheel inside its Nix build (written into the plan)
    BuildWheel(build_wheel::BuildWheelArgs),
    /// Would a wheel load: every undefined symbol of its ELF files against symbol tables of torch releases, the CUDA runtime and the baseline system
    LoadCheck(symbols::LoadCheckArgs),
    /// The derivation graph of the matrix: cells, kernel objects and which cells share them
    Plan(plan::PlanArgs),
    /// The symbol table of shared libraries (a torch wheel, a sysroot, ELF files): a small canonical file the load check reads
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
