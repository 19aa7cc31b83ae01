//! `cuwheel publish --to DIR WHEEL...`: audited wheels into a static index
//! directory in PyTorch's layout (see [`cuwheel::publish`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::audit::PypiRules;
use cuwheel::publish::index::WheelLinks;
use cuwheel::publish::publish;
use cuwheel::publish::pypi::publish_pypi;
use cuwheel::spec::Config;
use cuwheel::spec::config::PYPI_MAX_FILE_SIZE;

use super::output::stdout_line;

#[derive(Args)]
#[command(after_help = "\
Layout of DIR (serve it with any static file server, e.g. `python3 -m http.server -d DIR`):
  DIR/index.html, DIR/<project>/index.html         the combined index (every wheel)
  DIR/cu130/index.html, DIR/cu130/<project>/...    one index per CUDA variant of the local label
  DIR/<wheel>.whl, DIR/<wheel>.whl.metadata        each wheel once, with its METADATA
Every index.html has an index.json beside it (PEP 691); a server that negotiates content
serves it for `Accept: application/vnd.pypi.simple.v1+json`.

Publishes into one DIR take turns (an exclusive lock on DIR/.lock, taken before DIR is judged,
so concurrent first publishes into a new DIR all land; one that waits says so on stderr, naming
the process holding the lock), so every wheel of every publish ends up listed. The current index is trusted only after it verifies (its pages hash to
their generation's name and list wheels present with their recorded sha256); publish never
follows a symlink out of DIR and removes only what it made.

Exit status:
  0  published (or already published: nothing changed)
  1  refused (a wheel is unreadable, fails the audit or conflicts) or an I/O error; the index served is unchanged")]
#[command(group(clap::ArgGroup::new("target").required(true).args(["to", "pypi"])))]
pub struct PublishArgs {
    /// The index directory: created if missing, or one made by an earlier publish
    #[arg(long, value_name = "DIR")]
    to: Option<PathBuf>,
    /// Instead of an index, a directory to upload to PyPI from (`twine upload
    /// DIR/*.whl`): the PyPI variant's wheels, each audited with PyPI's rules
    /// first (no local version, --max-file-size, platform tag, long
    /// description)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["to", "base_url"])]
    pypi: Option<PathBuf>,
    /// With --pypi: the largest file PyPI takes for the project, in bytes or
    /// like `400 MiB` (PyPI's default: 100 MiB)
    #[arg(long, value_name = "SIZE", requires = "pypi", value_parser = super::audit::parse_size)]
    max_file_size: Option<u64>,
    /// With --pypi: the project whose [tool.cuwheel.pypi] max-file-size is
    /// the limit (unless --max-file-size is given)
    #[arg(long, value_name = "DIR", requires = "pypi")]
    project: Option<PathBuf>,
    /// Link the wheels as URL/<wheel> instead of relatively, e.g. when the
    /// wheels are served from another host than the index pages (an http://,
    /// https:// or file:// URL without query or fragment)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The wheels to publish; each is audited first
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
}

pub fn run(args: PublishArgs) -> Result<ExitCode> {
    let Some(to) = &args.to else {
        let dir = args.pypi.as_deref().expect("clap requires --to or --pypi");
        let configured = match &args.project {
            Some(project) => Some(pypi_limit(project)?),
            None => None,
        };
        let rules = PypiRules {
            max_file_size: args
                .max_file_size
                .or(configured)
                .unwrap_or(PYPI_MAX_FILE_SIZE),
        };
        let summary = publish_pypi(dir, &args.wheels, rules)?;
        for file in &summary.added {
            stdout_line(&format!("ready for PyPI {file}"))?;
        }
        for file in &summary.already_there {
            stdout_line(&format!("already there {file}"))?;
        }
        stdout_line(&format!(
            "{}: {} wheel{} checked against PyPI's rules; upload them with `twine upload {}/*.whl` \
             (or `uv publish`)",
            dir.display(),
            args.wheels.len(),
            if args.wheels.len() == 1 { "" } else { "s" },
            dir.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    };
    let links = match &args.base_url {
        Some(url) => WheelLinks::base_url(url).map_err(anyhow::Error::msg)?,
        None => WheelLinks::Relative,
    };
    let summary = publish(to, &args.wheels, &links)?;
    for path in &summary.left_alone {
        eprintln!(
            "note: left alone {}: publish did not make it, so it neither serves nor removes it",
            path.display()
        );
    }
    for file in &summary.added {
        stdout_line(&format!("published {file}"))?;
    }
    for file in &summary.already_published {
        stdout_line(&format!("already published {file}"))?;
    }
    let variants = if summary.variants.is_empty() {
        "no variant indexes".to_string()
    } else {
        summary
            .variants
            .iter()
            .map(|v| format!("{v}/"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    stdout_line(&format!(
        "{}: {} wheel{} listed in the combined index and {variants}{}",
        to.display(),
        summary.listed,
        if summary.listed == 1 { "" } else { "s" },
        if summary.index_changed {
            ""
        } else {
            " (unchanged)"
        }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The `max-file-size` of the project's `[tool.cuwheel.pypi]`.
fn pypi_limit(project: &Path) -> Result<u64> {
    let path = project.join("pyproject.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let config = Config::parse(&text, &path).map_err(anyhow::Error::new)?;
    match config.pypi {
        Some(pypi) => Ok(pypi.max_file_size),
        None => anyhow::bail!(
            "{} has no [tool.cuwheel.pypi]: name the variant that goes to PyPI there (its cuda, \
             and torch where that CUDA serves several), or drop --project",
            path.display()
        ),
    }
}
