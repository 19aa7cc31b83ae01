//! The subcommands that run inside Nix builds (`plan`, `build-wheel`,
//! `audit`, `symbols`, `load-check`), one file each, and what every cuwheel
//! binary shares: writing its output ([`output`]) and ending with an exit
//! status ([`finish`], [`parse_failure`]).
//!
//! In: parsed arguments. Out: an [`ExitCode`]; errors are printed with their
//! whole context chain. The driver (`src/main.rs`) and the `cuwheel` CLI
//! both dispatch to these.

pub mod audit;
pub mod build_wheel;
pub mod output;
pub mod plan;
pub mod symbols;

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;

use output::{OutputError, Stream};

/// What `--help` says of each subcommand, in the driver and in the CLI alike.
pub mod about {
    pub const AUDIT: &str = "Judge wheels as strictly as auditwheel and further: manylinux tag, libraries, RPATHs, build paths, abi3, CUDA archs";
    pub const BUILD_WHEEL: &str =
        "Assemble a cell's wheel inside its Nix build (written into the plan)";
    pub const LOAD_CHECK: &str = "Would a wheel load: every undefined symbol of its ELF files against symbol tables of torch releases, the CUDA runtime and the baseline system";
    pub const PLAN: &str =
        "The derivation graph of the matrix: cells, kernel objects and which cells share them";
    pub const SYMBOLS: &str = "The symbol table of shared libraries (a torch wheel, a sysroot, ELF files): a small canonical file the load check reads";
}

/// Exit status for a command that could not do its work (bad input, a tool
/// that failed). Verdicts such as a failed audit use their own codes.
pub const EXIT_ERROR: u8 = 1;

/// What every cuwheel binary says under `--help` about its output.
pub const AFTER_HELP: &str = "Output: when stdout or stderr cannot be written (a full device), \
    cuwheel ends with a one-line error on stderr (if stderr works) and exit status 1; a closed \
    pipe (`cuwheel audit … | head -1`) ends it quietly, as any Unix filter.";

/// The JSON object a `--json` command prints on stdout when it fails:
/// `{"error": "<message with its context chain>"}`.
pub fn json_error(message: &str) -> String {
    let object = serde_json::json!({ "error": message });
    serde_json::to_string_pretty(&object).expect("a string encodes")
}

/// Ends a command: flushes stdout, then gives the command's exit status, or
/// prints its error (on stderr, and as [`json_error`] on stdout when `json`)
/// and gives [`EXIT_ERROR`].
pub fn finish(result: Result<ExitCode>, json: bool) -> ExitCode {
    // What `print!` left in stdout's buffer fails here, not unseen at exit.
    let result = result.and_then(|code| Ok(output::flush_stdout().map(|()| code)?));
    match result {
        Ok(code) => code,
        Err(err) => {
            if let Some(failed) = err.chain().find_map(|e| e.downcast_ref::<OutputError>()) {
                return output::report_output_failure(failed);
            }
            output::stderr_line(&format!("error: {err:#}"));
            if json {
                let _ = output::stdout_line(&json_error(&format!("{err:#}")));
            }
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Prints what clap has to say about the arguments (the help, the version,
/// or a usage error) and gives its exit status; help that cannot be written
/// is an output error, not a success.
pub fn parse_failure(error: &clap::Error) -> ExitCode {
    let printed = error.print().and_then(|()| io::stdout().flush());
    match printed {
        Err(source) if !error.use_stderr() => output::report_output_failure(&OutputError {
            stream: Stream::Stdout,
            source,
        }),
        _ => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(EXIT_ERROR)),
    }
}

/// A closed output pipe ends cuwheel quietly, as it ends any Unix filter
/// (`cuwheel audit … | head -1`): SIGPIPE goes back to its default action.
///
/// Rust's runtime ignores SIGPIPE before `main`, so a write into a closed
/// pipe returns EPIPE, on which `print!` and `eprint!` panic. cuwheel never
/// writes into a pipe of its own children (they are connected to each other
/// or to files), so the only pipes this affects are its own stdout and
/// stderr; its children get the default action from `Command` anyway.
pub fn quiet_on_closed_pipe() {
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
