//! The `cuwheel` command line: parses arguments and hands each subcommand to
//! the library stage that does the work.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    cli::main()
}

/// A closed output pipe ends cuwheel quietly, as it ends any Unix filter
/// (`cuwheel audit … | head -1`): SIGPIPE goes back to its default action.
///
/// Rust's runtime ignores SIGPIPE before `main`, so a write into a closed
/// pipe returns EPIPE, on which `print!` and `eprint!` panic. cuwheel never
/// writes into a pipe of its own children (they are connected to each other
/// or to files), so the only pipes this affects are its own stdout and
/// stderr; its children get the default action from `Command` anyway.
fn quiet_on_closed_pipe() {
    // <signal.h> on Linux: SIGPIPE is 13, SIG_DFL is the null handler.
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SAFETY: signal(2) with a valid signal number and SIG_DFL, before any
    // other thread exists; the previous handler it returns is not needed.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}
