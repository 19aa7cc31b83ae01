//! `cuwheel plan`: the derivation graph of the project's matrix — as JSON
//! for `nix/plan.nix` (`--json`), or as a summary for people: the cells and
//! their wheels, every node and which cells share it, and what the sharing
//! saves.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel::lock::format::{LOCK_FILE, Lock};
use cuwheel::plan::{Plan, sources};
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
    let (kernels, project) = sources::read(&spec, &lock_path)?;
    let plan = Plan::new(&spec.config, &kernels, &project, &cells, &lock, &lock_path)
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
        text += &format!("  {name}  {}\n", cell.wheel_file);
    }
    // Which cells use each node.
    let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, cell) in &plan.cells {
        let own = [&cell.binding, &cell.link, &cell.wheel, &cell.audit];
        for node in cell.kernels.iter().chain(own) {
            users.entry(node.as_str()).or_default().push(name.as_str());
        }
    }
    text += &format!("derivations ({}):\n", plan.nodes.len());
    for name in plan.nodes.keys() {
        let cells = users.get(name.as_str()).cloned().unwrap_or_default();
        let shared = if cells.len() > 1 {
            "shared by"
        } else {
            "used by"
        };
        text += &format!("  {name}  {shared} {}\n", cells.join(" "));
    }
    text += &format!("{}\n", plan.sharing());
    text
}
