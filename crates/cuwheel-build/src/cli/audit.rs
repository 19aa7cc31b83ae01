//! `cuwheel audit WHEEL...`: the audit of [`crate::audit`] from the command
//! line, as text or JSON, with an exit status scripts can branch on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use crate::audit::archs::ExpectedArchs;
use crate::audit::{AuditOptions, AuditReport, PypiRules, audit_wheel};
use crate::spec::config::PYPI_MAX_FILE_SIZE;
use crate::wheel::terminal::terminal_safe;

/// Exit status when every wheel was read but at least one failed the audit.
const EXIT_AUDIT_FAILED: u8 = 3;

#[derive(Args)]
#[command(after_help = "\
Exit status:
  0  every wheel passed
  1  a wheel could not be read (missing, not a zip, no .dist-info, ...); the others are still audited
  2  the command line is wrong
  3  every wheel was read and at least one failed the audit")]
pub struct AuditArgs {
    /// The wheels to audit
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
    /// Print a JSON array with one report per wheel instead of text; a wheel
    /// that cannot be read is an object `{"wheel", "path", "error"}` there
    #[arg(long)]
    pub json: bool,
    /// The CUDA archs each fat binary must hold exactly, like TORCH_CUDA_ARCH_LIST:
    /// `8.0,9.0,10.0+PTX` (SASS for each, PTX too for +PTX). Overrides the
    /// `cuda_archs` of the wheel's .dist-info/cuwheel-provenance.json
    #[arg(long, value_name = "LIST", value_parser = parse_archs)]
    cuda_archs: Option<ExpectedArchs>,
    /// Treat SONAME as provided at run time, like torch's and CUDA's libraries
    /// (repeat the flag or separate with commas)
    #[arg(long, value_name = "SONAME", value_delimiter = ',')]
    runtime_provided: Vec<String>,
    /// Do not assume torch's and CUDA's libraries exist at run time: judge
    /// DT_NEEDED entries as auditwheel does
    #[arg(long)]
    no_runtime_provided: bool,
    /// Also check what PyPI refuses at upload: a local version, a file over
    /// --max-file-size, a platform tag PyPI does not take, a long
    /// description PyPI would not render
    #[arg(long)]
    pypi: bool,
    /// With --pypi: the largest file PyPI takes for the project, in bytes or
    /// like `400 MiB` (PyPI's default: 100 MiB)
    #[arg(long, value_name = "SIZE", requires = "pypi", value_parser = parse_size)]
    max_file_size: Option<u64>,
    /// Also weigh each CUDA arch's images deflated, as the wheel's zip
    /// deflates them (about what each arch adds to the wheel): as costly as
    /// deflating the wheel's device code once more, so off by default
    #[arg(long)]
    sizes: bool,
    // The load check's symbol tables (as `cuwheel load-check` takes them);
    // without --torch the load check is not run.
    #[command(flatten)]
    load: super::symbols::LoadTables,
}

/// A size in bytes (`104857600`) or with a unit (`100 MiB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("a size of 0 allows no file at all".to_string()),
        Ok(bytes) => Ok(bytes),
        Err(_) => crate::spec::config::pypi::parse_size(text).map_err(|e| e.to_string()),
    }
}

fn parse_archs(list: &str) -> Result<ExpectedArchs, String> {
    ExpectedArchs::parse(&[list])
}

pub fn run(args: AuditArgs) -> Result<ExitCode> {
    let mut options = AuditOptions {
        cuda_archs: args.cuda_archs,
        sizes: args.sizes,
        ..AuditOptions::default()
    };
    options.extra.load = args.load.inputs()?;
    options.pypi = args.pypi.then(|| PypiRules {
        max_file_size: args.max_file_size.unwrap_or(PYPI_MAX_FILE_SIZE),
    });
    if args.no_runtime_provided {
        options.runtime_provided.clear();
    }
    options.runtime_provided.extend(args.runtime_provided);

    let mut reports: Vec<AuditReport> = Vec::new();
    let mut entries: Vec<serde_json::Value> = Vec::new();
    let mut unreadable = false;
    for wheel in &args.wheels {
        match audit_wheel(wheel, &options) {
            Ok(report) => {
                if !args.json {
                    super::output::stdout_line(&report.render())?;
                }
                entries.push(serde_json::to_value(&report).context("cannot encode a report")?);
                reports.push(report);
            }
            Err(err) => {
                eprintln!("error: {}", terminal_safe(&format!("{err:#}")));
                entries.push(serde_json::json!({
                    "wheel": wheel
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    "path": wheel.to_string_lossy(),
                    "error": format!("{err:#}"),
                }));
                unreadable = true;
            }
        }
    }
    if args.json {
        let json = serde_json::to_string_pretty(&entries).context("cannot encode the reports")?;
        super::output::stdout_line(&json)?;
    }
    Ok(if unreadable {
        ExitCode::from(super::EXIT_ERROR)
    } else if reports.iter().any(|r| !r.passed) {
        ExitCode::from(EXIT_AUDIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
