//! Running the registries' own clients (pip, apt, cargo). In: a command and
//! what it is for. Out: its output, or an error that quotes what it printed
//! (or, when it does not start, says what to install).

use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// Runs `cmd`, described as `what` ("pip download of torch-….whl") in the
/// error when it fails; `cannot_start` is the message when it does not start.
pub fn checked_output(
    cmd: &mut Command,
    what: &str,
    cannot_start: impl FnOnce() -> String,
) -> Result<Output> {
    let output = cmd.output().with_context(cannot_start)?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    Ok(output)
}
