//! The `cuwheel` command line: parses arguments and hands each subcommand to
//! the library stage that does the work.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
