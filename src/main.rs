//! The `cuwheel` command line: parses arguments and hands each subcommand to
//! the library stage that does the work.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cuwheel_build::cli::quiet_on_closed_pipe();
    cli::main()
}
