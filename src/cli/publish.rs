//! `cuwheel publish --to DIR WHEEL...`: audited wheels into a static index
//! directory in PyTorch's layout (see [`cuwheel::publish`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use cuwheel::publish::index::WheelLinks;
use cuwheel::publish::publish;

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
pub struct PublishArgs {
    /// The index directory: created if missing, or one made by an earlier publish
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
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
    let links = match &args.base_url {
        Some(url) => WheelLinks::base_url(url).map_err(anyhow::Error::msg)?,
        None => WheelLinks::Relative,
    };
    let summary = publish(&args.to, &args.wheels, &links)?;
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
        args.to.display(),
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
