//! `cuwheel upload WHEEL...`: the PyPI variant's wheels to PyPI (or any
//! index that speaks its upload protocol), through twine, the ecosystem's
//! uploader — after every wheel passed the audit with PyPI's rules, so a
//! wheel PyPI would refuse (a local version, too large) is refused here,
//! before anything is sent.
//!
//! Credentials never pass through cuwheel's arguments: twine reads them
//! from `TWINE_USERNAME`/`TWINE_PASSWORD` (or a keyring, or PyPI's trusted
//! publishing in CI), and a repository URL carrying a user or password —
//! as the `url` crate parses it, whatever the scheme — is refused, showing
//! the URL with its user information replaced by `***@`.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::Args;

use cuwheel::audit::PypiRules;
use cuwheel::publish::pypi::check_for_pypi;
use cuwheel::spec::config::PYPI_MAX_FILE_SIZE;
use cuwheel::url::{Url, has_credentials, parse, redact};

use super::output::stdout_line;

#[derive(Args)]
#[command(after_help = "\
Credentials: set TWINE_USERNAME and TWINE_PASSWORD (for PyPI: `__token__` and an API token),
or let twine read a keyring; in GitHub Actions, PyPI's trusted publishing needs none.

Exit status:
  0  uploaded
  1  refused before anything was sent (a wheel fails PyPI's rules or cannot be read), or twine
     failed (its own message is above)")]
pub struct UploadArgs {
    /// The wheels to upload: the PyPI variant's (`cuwheel publish --pypi DIR`
    /// writes them; `nix run .#publish -- --pypi DIR` builds them first)
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
    /// The upload URL of another index than PyPI (a test server, a
    /// company index), like http://127.0.0.1:8080/ ; without it, twine's
    /// default, PyPI
    #[arg(long, value_name = "URL")]
    repository_url: Option<String>,
    /// The largest file the index takes for the project, in bytes or like
    /// `400 MiB` (PyPI's default: 100 MiB)
    #[arg(long, value_name = "SIZE", value_parser = super::audit::parse_size)]
    max_file_size: Option<u64>,
    /// The twine program to run
    #[arg(long, value_name = "PROGRAM", default_value = "twine")]
    twine: PathBuf,
}

pub fn run(args: UploadArgs) -> Result<ExitCode> {
    // Parsed by a URL parser before anything else; every message shows it
    // redacted, and one carrying a user or password is refused, so none
    // reaches twine's command line (where process lists show it).
    let repository = match &args.repository_url {
        Some(text) => Some(repository_url(text)?),
        None => None,
    };
    let rules = PypiRules {
        max_file_size: args.max_file_size.unwrap_or(PYPI_MAX_FILE_SIZE),
    };
    let target = repository
        .as_ref()
        .map_or_else(|| "PyPI".to_string(), |url| redact(url.as_str()));
    check_for_pypi(&args.wheels, rules, &format!("upload to {target}"))?;
    stdout_line(&format!(
        "{} wheel{} passed PyPI's rules; uploading with {}",
        args.wheels.len(),
        if args.wheels.len() == 1 { "" } else { "s" },
        args.twine.display()
    ))?;
    let mut twine = Command::new(&args.twine);
    twine.args(["upload", "--non-interactive", "--disable-progress-bar"]);
    if let Some(url) = &repository {
        twine.args(["--repository-url", url.as_str()]);
    }
    twine.args(&args.wheels);
    let status = twine.status().with_context(|| {
        format!(
            "cannot run {}: install twine (`pip install twine`) or name it with --twine",
            args.twine.display()
        )
    })?;
    if !status.success() {
        bail!(
            "{} upload failed ({status}); its message is above. A wheel it uploaded before \
             failing stays uploaded (an index never takes a file name twice): once fixed, \
             upload the others by name",
            args.twine.display()
        );
    }
    stdout_line(&format!("uploaded to {target}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `--repository-url`, parsed ([`parse`]): an `http://` or `https://` URL
/// without user or password.
fn repository_url(text: &str) -> Result<Url> {
    let url = parse("--repository-url", text).map_err(anyhow::Error::msg)?;
    let shown = redact(text);
    if has_credentials(&url) {
        bail!(
            "--repository-url {shown} carries credentials (user@ or user:password@ before the \
             host), which would show in process lists and logs; give the URL without them and \
             set TWINE_USERNAME and TWINE_PASSWORD instead"
        );
    }
    if !matches!(url.scheme(), "http" | "https") {
        bail!(
            "--repository-url {shown} is not an http:// or https:// URL; give the index's upload URL"
        );
    }
    Ok(url)
}
