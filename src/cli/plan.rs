//! `cuwheel plan`: the derivation graph of the project's matrix — as JSON
//! for `nix/plan.nix` (`--json`, as the driver prints it), as CI jobs
//! (`--jobs`), or as a summary for people: the cells and their wheels, every
//! node, which cells share it and whether it is already built (asked of the
//! flake that builds the project, after checking that it builds this
//! project as it is), and what the sharing saves; or, with `--estimate`,
//! how long the matrix takes to build (`plan_estimate`). All but the JSON
//! is the host's alone, so it is here rather than in the driver.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use cuwheel_build::cli::output;

use cuwheel::memory::{self, Peak};
use cuwheel::plan::compile::peak_rss_kib;
use cuwheel::plan::{Plan, sources};
use cuwheel::registry::flake::check_builds_project;
use cuwheel::registry::nix::Nix;
use cuwheel::spec::config::pypi::show_size;
use cuwheel::store::StorePath;

#[derive(Args)]
pub struct PlanArgs {
    /// The project directory (holding pyproject.toml and cuwheel.lock)
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// Print the plan as JSON (the input of nix/plan.nix)
    #[arg(long)]
    pub json: bool,
    /// Print the CI jobs as one line of JSON, GitHub Actions' `strategy.matrix`
    /// form: one job per nvcc toolkit with its cells and its PyPI cells
    #[arg(long, conflicts_with = "json")]
    jobs: bool,
    /// The flake that builds the project, asked which derivations are built
    /// (default: the nearest directory holding flake.nix, from the project up)
    #[arg(long, value_name = "DIR")]
    flake: Option<PathBuf>,
    /// Do not ask Nix which derivations are already built
    #[arg(long, conflicts_with = "flake")]
    no_store: bool,
    /// Predict the wall time of building the whole matrix from nothing: the
    /// work, the critical path and a list schedule at 1, 2 and
    /// builders × cores slots, from this machine's build logs
    #[arg(long, conflicts_with_all = ["json", "jobs", "no_store"])]
    estimate: bool,
    /// With --estimate: how many machines build (Nix remote builders)
    #[arg(long, default_value_t = 1, requires = "estimate", value_name = "N")]
    builders: usize,
    /// With --estimate: derivations each builder runs at once (its
    /// --max-jobs; default: this machine's cores)
    #[arg(long, requires = "estimate", value_name = "C")]
    cores: Option<usize>,
    /// With --estimate: another project (built on this machine) whose
    /// builds of the same sources stand in for what this one never built;
    /// repeatable
    #[arg(long, requires = "estimate", value_name = "DIR")]
    durations_from: Vec<PathBuf>,
    /// With --estimate: only what the store lacks, what is built taking no
    /// time: how long the rest of the matrix takes from here
    #[arg(long, requires = "estimate")]
    remaining: bool,
    /// With --estimate: what `cuwheel reproduce` (its full check) builds
    /// again: every node, with the toolchains and the driver as built
    #[arg(long, requires = "estimate", conflicts_with = "remaining")]
    reproduce: bool,
    /// With --estimate: only what building this cell's wheel builds
    /// (`nix build .#wheels.CELL`); repeatable
    #[arg(long = "cell", requires = "estimate", value_name = "CELL")]
    cells: Vec<String>,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.json {
        return cuwheel_build::cli::plan::print_json(&args.project);
    }
    let (_, project, plan) = sources::plan_project(&args.project)?;
    if args.jobs {
        let jobs = serde_json::to_string(&cuwheel::jobs::ci_jobs(&plan))
            .context("cannot encode the jobs")?;
        output::stdout_line(&jobs)?;
        return Ok(ExitCode::SUCCESS);
    }
    let flake = match args.flake {
        Some(flake) => Some(flake),
        None if args.no_store => None,
        None => cuwheel::registry::flake::nearest_flake(&args.project)?,
    };
    if args.estimate {
        let Some(flake) = flake else {
            anyhow::bail!(
                "plan --estimate needs the flake that builds {} (no flake.nix above it); \
                 pass --flake DIR",
                args.project.display()
            );
        };
        let nix = Nix::system();
        let flake = flake.display().to_string();
        check_builds_project(&nix, &flake, &args.project, project.digests.keys())?;
        let cores = args.cores.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let fleet = super::plan_estimate::Fleet {
            builders: args.builders,
            cores,
            remaining: args.remaining,
            reproduce: args.reproduce,
            cells: args.cells,
        };
        let report = super::plan_estimate::report(&plan, &flake, &fleet, &args.durations_from)?;
        output::stdout(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let nix = Nix::system();
    let built = match &flake {
        Some(flake) => {
            let flake = flake.display().to_string();
            check_builds_project(&nix, &flake, &args.project, project.digests.keys())?;
            eprintln!("plan: asking Nix which derivations of {flake}#nodes are built");
            Some(built_nodes(&nix, &flake)?)
        }
        None => None,
    };
    output::stdout(&summary(&plan, built.as_ref()))?;
    if let Some(built) = &built {
        output::stdout(&memory_check(&nix, &plan, built)?)?;
    }
    for line in project.whole_include_dirs() {
        output::stdout_line(&format!("note: {line}"))?;
    }
    if flake.is_none() && !args.no_store {
        output::stdout_line(
            "(no flake.nix above the project: whether each derivation is built is not shown)",
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A node's derivation and its output, as the flake gives them.
#[derive(serde::Deserialize)]
struct NodePaths {
    drv: String,
    out: String,
}

/// The flake's plan nodes whose outputs are valid in the store, each with
/// its `.drv`.
fn built_nodes(nix: &Nix, flake: &str) -> Result<BTreeMap<String, StorePath>> {
    let installable = format!("{flake}#nodes");
    let nodes: BTreeMap<String, NodePaths> = nix
        .eval_json(
            &installable,
            Some("builtins.mapAttrs (name: node: { drv = node.drvPath; out = node.outPath; })"),
        )
        .with_context(|| {
            format!(
                "cannot ask {installable} for its derivations; pass --no-store to plan without \
                 Nix, or --flake for the flake that builds this project"
            )
        })?;
    let mut by_path = BTreeMap::new();
    for (name, NodePaths { drv, out }) in nodes {
        let parse = |path: &str| -> Result<StorePath> {
            path.parse()
                .with_context(|| format!("{installable}.{name}: `{path}` is not a store path"))
        };
        by_path.insert(parse(&out)?, (name.clone(), parse(&drv)?));
    }
    let paths: Vec<StorePath> = by_path.keys().cloned().collect();
    let valid = nix.valid_paths(&paths)?;
    Ok(valid.iter().map(|p| by_path[p].clone()).collect())
}

/// Whether the builds `nix build` runs at once (cuwheel's `--max-jobs
/// auto`, every core each) fit this machine's memory, from the peaks the
/// built compile nodes' logs record (`cuwheel::memory`).
fn memory_check(nix: &Nix, plan: &Plan, built: &BTreeMap<String, StorePath>) -> Result<String> {
    let mut peaks = Vec::new();
    for job in cuwheel::estimate::jobs(plan) {
        if !matches!(cuwheel::estimate::kind(&job.name), "kernel" | "binding") {
            continue;
        }
        let Some(drv) = built.get(&job.name) else {
            continue;
        };
        let log = nix
            .read_log(drv)
            .with_context(|| format!("cannot read the build log of {}", job.name))?;
        if let Some(kib) = log.as_deref().and_then(peak_rss_kib) {
            let threads_per_core = plan
                .nodes
                .get(&job.name)
                .is_some_and(|node| node.script.contains("--threads \"${NIX_BUILD_CORES:-1}\""));
            peaks.push(Peak {
                node: job.name,
                kib,
                targets: job.targets,
                threads_per_core,
            });
        }
    }
    let memory = machine_memory_kib()?;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    Ok(match memory::check(&peaks, cores, cores, memory) {
        Some(check) => check.text,
        None => "memory: no compile of this plan built here records its peak (none built yet, \
                 or built before cuwheel measured it)\n"
            .to_string(),
    })
}

/// `MemTotal` of /proc/meminfo, in KiB.
fn machine_memory_kib() -> Result<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("cannot read /proc/meminfo")?;
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse().ok())
        .context("/proc/meminfo has no `MemTotal: N kB` line")
}

/// The summary; `built` (when known) names the nodes already in the store.
fn summary(plan: &Plan, built: Option<&BTreeMap<String, StorePath>>) -> String {
    let mut text = format!("cells ({}):\n", plan.cells.len());
    for (name, cell) in &plan.cells {
        text += &format!(
            "  {name}  {}  (torch {}, nvcc {})\n",
            cell.predicted_wheel_file, cell.torch, cell.nvcc
        );
    }
    if let Some(pypi) = &plan.pypi {
        text += &format!(
            "PyPI wheels ({}, from the same links; checked against PyPI's rules, files up to {}):\n",
            pypi.cells.len(),
            show_size(pypi.max_file_size)
        );
        for (name, cell) in &pypi.cells {
            text += &format!("  {name}  {}\n", cell.predicted_wheel_file);
        }
    }
    text += "  (wheel names are predicted: each wheel's platform tag is computed from its linked \
             module by the audit's rule — the most compatible tag its symbols prove, never more \
             than its torch wheel's nor less than the baseline's)\n";
    // Which cells use each node.
    let mut users: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, cell) in &plan.cells {
        for node in cell.nodes() {
            users.entry(node).or_default().push(name.clone());
        }
    }
    // What `compat.<cell>` builds beyond the cell's wheel.
    for (name, cell) in &plan.cells {
        for node in cell.compat_symbols.iter().chain([&cell.compat]) {
            users
                .entry(node)
                .or_default()
                .push(format!("{name} (compat)"));
        }
    }
    for (name, cell) in plan.pypi.iter().flat_map(|p| &p.cells) {
        for node in [&cell.wheel, &cell.audit] {
            users
                .entry(node)
                .or_default()
                .push(format!("{name} (PyPI)"));
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
        let state = match built {
            Some(built) if built.contains_key(name) => "built     ",
            Some(_) => "to build  ",
            None => "",
        };
        text += &format!("  {state}{name}  {shared} {}\n", cells.join(" "));
    }
    if let Some(built) = built {
        let count = plan.nodes.keys().filter(|n| built.contains_key(*n)).count();
        text += &format!(
            "{count} of {} derivations are built; `nix build` builds the others\n",
            plan.nodes.len()
        );
    }
    text += &format!("{}\n", plan.sharing());
    text
}
