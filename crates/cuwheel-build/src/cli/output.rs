//! Writing cuwheel's own output without panicking.
//!
//! In: text for stdout or a message for stderr. Out: the text written, or an
//! [`OutputError`] naming the stream and why (a full device, an I/O error),
//! which `main` reports in one line on stderr with a non-zero exit
//! ([`report_output_failure`]). `print!` panics on such errors (exit 101);
//! these functions return them. A closed pipe never gets here: SIGPIPE has
//! its default action (see `main.rs`), so the process ends quietly at its
//! first write, as a Unix filter does.
//!
//! What still prints through `print!` (commands not moved to these
//! functions) is covered by [`install_panic_hook`]: a panic whose message
//! is the standard library's "failed printing to stdout/stderr" ends the
//! same way, with the same message and exit status.

use std::fmt;
use std::io::{self, Write};
use std::panic;
use std::process;

/// Exit status of a command whose output could not be written.
pub const EXIT_OUTPUT: u8 = 1;

/// Which of cuwheel's own streams failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "standard output",
            Stream::Stderr => "standard error",
        })
    }
}

/// Writing to stdout or stderr failed.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot write to {stream}: {source}; free space on the device it goes to, or send it \
     elsewhere"
)]
pub struct OutputError {
    pub stream: Stream,
    #[source]
    pub source: io::Error,
}

/// Writes `text` to stdout and flushes it.
pub fn stdout(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| OutputError {
            stream: Stream::Stdout,
            source,
        })
}

/// Writes `line` and a newline to stdout.
pub fn stdout_line(line: &str) -> Result<(), OutputError> {
    stdout(&format!("{line}\n"))
}

/// Flushes stdout (what `print!` left buffered).
pub fn flush_stdout() -> Result<(), OutputError> {
    io::stdout().flush().map_err(|source| OutputError {
        stream: Stream::Stdout,
        source,
    })
}

/// Writes `line` and a newline to stderr; a failure is ignored, as there
/// is nowhere left to report it.
pub fn stderr_line(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// The one-line report of an output failure, on stderr if it works; the
/// exit status to end with.
pub fn report_output_failure(error: &OutputError) -> process::ExitCode {
    if error.stream == Stream::Stdout {
        stderr_line(&format!("error: {error}"));
    }
    process::ExitCode::from(EXIT_OUTPUT)
}

/// The standard library's panic message for a failed `print!`.
pub fn print_failure(message: &str) -> Option<Stream> {
    if message.starts_with("failed printing to stdout") {
        Some(Stream::Stdout)
    } else if message.starts_with("failed printing to stderr") {
        Some(Stream::Stderr)
    } else {
        None
    }
}

/// Turns a `print!` that panicked on a failed write into the same one-line
/// error and exit status as [`OutputError`]; every other panic is reported
/// as before.
pub fn install_panic_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        match print_failure(message) {
            Some(stream) => {
                let reason = message.split_once(": ").map_or("", |(_, why)| why);
                if stream == Stream::Stdout {
                    stderr_line(&format!(
                        "error: cannot write to {stream}: {reason}; free space on the device it \
                         goes to, or send it elsewhere"
                    ));
                }
                process::exit(i32::from(EXIT_OUTPUT));
            }
            None => default(info),
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_failures_are_told_from_other_panics() {
        assert_eq!(
            print_failure("failed printing to stdout: No space left on device (os error 28)"),
            Some(Stream::Stdout)
        );
        assert_eq!(
            print_failure("failed printing to stderr: Broken pipe (os error 32)"),
            Some(Stream::Stderr)
        );
        assert_eq!(print_failure("index out of bounds"), None);
    }
}
