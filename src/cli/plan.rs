//! `cuwheel plan`: the derivation graph of the project's matrix — as JSON
//! for `nix/plan.nix` (`--json`), or as a summary for people: the cells, the
//! kernel objects and which cells share each, and what the sharing saves.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::lock::format::{LOCK_FILE, Lock};
use cuwheel::plan::{KernelSource, Plan};
use cuwheel::spec::Spec;

#[derive(Args)]
pub struct PlanArgs {
    /// The project directory (holding pyproject.toml and cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// Print the plan as JSON (the input of nix/plan.nix)
    #[arg(long)]
    json: bool,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    let spec = Spec::load(&args.project)?;
    let cells = spec.cells()?;
    let lock_path = args.project.join(LOCK_FILE);
    let lock = Lock::read(&lock_path)?;
    let include_dirs: Vec<PathBuf> = spec
        .config
        .include_dirs
        .iter()
        .map(|d| d.value.clone())
        .collect();
    let kernels = spec
        .kernel_sources
        .iter()
        .map(|tu| KernelSource::scan(&args.project, tu, &include_dirs))
        .collect::<Result<Vec<_>>>()?;
    let plan = Plan::new(&spec.config, &kernels, &cells, &lock, &lock_path)
        .with_context(|| format!("cannot plan the build of {}", args.project.display()))?;
    if args.json {
        print!("{}", plan.to_json());
    } else {
        print!("{}", summary(&plan));
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(plan: &Plan) -> String {
    let mut text = format!("cells ({}):\n", plan.cells.len());
    for (name, cell) in &plan.cells {
        text += &format!("  {name}  {} kernel objects\n", cell.kernels.len());
    }
    text += &format!("kernel objects ({}):\n", plan.nodes.len());
    for name in plan.nodes.keys() {
        let users: Vec<&str> = plan
            .cells
            .iter()
            .filter(|(_, cell)| cell.kernels.contains(name))
            .map(|(cell, _)| cell.as_str())
            .collect();
        let shared = if users.len() > 1 {
            "shared by"
        } else {
            "used by"
        };
        text += &format!("  {name}  {shared} {}\n", users.join(" "));
    }
    text += &format!("{}\n", plan.sharing());
    text
}
