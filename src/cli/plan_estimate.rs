//! `cuwheel plan --estimate`: how long the project's matrix takes to build
//! from nothing, on this machine's slots or a fleet's.
//!
//! In: the plan, the flake that builds it (asked for each derivation's
//! `.drv`) and Nix's build logs on this machine. Out: a table of the
//! work, the critical path and the list-scheduled wall time at 1, 2 and N ×
//! C slots, beside what a per-cell build would do (`crate::estimate` does
//! the arithmetic).
//!
//! A derivation's duration is its build's here: Nix writes its log
//! (`/nix/var/log/nix/drvs/xx/<drv>.bz2`) from the build's start to its
//! end, so the file's birth and modification times bracket the build, when
//! the last write is also when the output was registered (a `--check`
//! rewrites the log later, keeping its birth time: such a figure is not
//! taken). They are read beside the store, never as an input of a build.
//! What has no usable log (never built here, substituted, checked since,
//! or its log collected) is guessed, and marked: from a build of the same
//! source (this plan's, or another project's named by `--durations-from`),
//! per device target (`-gencode`) since nvcc's work grows with them; else
//! the median of its kind, per target likewise; else cuwheel's guess.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};

use cuwheel::estimate::{self, DRIVER, Duration, Job, Sample};
use cuwheel::plan::{Plan, sources};
use cuwheel::registry::flake::nearest_flake;
use cuwheel::registry::nix::Nix;
use cuwheel::store::StorePath;

/// Seconds cuwheel assumes for a kind nothing measured: a kernel at one
/// arch, a binding, the driver's compile on 2 cores, and the small steps.
fn guess(kind: &str) -> f64 {
    match kind {
        "kernel" | "binding" | "toolchain" => 60.0,
        "driver" => 240.0,
        "audit" => 30.0,
        _ => 10.0,
    }
}

/// Which slot counts to show beside 1 and 2.
pub struct Fleet {
    pub builders: usize,
    pub cores: usize,
}

pub fn report(plan: &Plan, flake: &str, fleet: &Fleet, lenders: &[PathBuf]) -> Result<String> {
    let nix = Nix::system();
    let jobs = estimate::jobs(plan);
    let own = measured(&nix, &jobs, flake)?;
    let mut lent = Vec::new();
    for project in lenders {
        let (_, _, other) = sources::plan_project(project)
            .with_context(|| format!("--durations-from {}", project.display()))?;
        let other_flake = nearest_flake(project)?.with_context(|| {
            format!(
                "--durations-from {}: no flake.nix above it builds it",
                project.display()
            )
        })?;
        let other_jobs = estimate::jobs(&other);
        let seconds = measured(&nix, &other_jobs, &other_flake.display().to_string())?;
        lent.extend(
            other_jobs
                .iter()
                .filter_map(|j| seconds.get(&j.name).map(|s| Sample::of(j, *s))),
        );
    }
    Ok(table(plan, &jobs, &own, &lent, fleet))
}

/// The jobs of `flake`'s plan whose last build here can be timed.
fn measured(nix: &Nix, jobs: &[Job], flake: &str) -> Result<BTreeMap<String, f64>> {
    let derivations = derivations(nix, flake)?;
    let outs: Vec<StorePath> = derivations
        .values()
        .map(|d| d.out.parse())
        .collect::<Result<_, _>>()
        .context("the flake gave an output that is not a store path")?;
    let registered: BTreeMap<String, u64> = nix
        .local_path_infos(&outs)?
        .into_iter()
        .filter_map(|i| Some((i.path, i.registration_time?)))
        .collect();
    let logs = log_dir();
    let mut measured = BTreeMap::new();
    for job in jobs {
        let Some(d) = derivations.get(&job.name) else {
            continue;
        };
        let Some(&registered) = registered.get(&d.out) else {
            continue;
        };
        if let Some(seconds) = build_seconds(&logs, &d.drv, registered) {
            measured.insert(job.name.clone(), seconds);
        }
    }
    Ok(measured)
}

/// The table, from the durations measured (pure, for the tests).
pub fn table(
    plan: &Plan,
    jobs: &[Job],
    measured: &BTreeMap<String, f64>,
    lent: &[Sample],
    fleet: &Fleet,
) -> String {
    let durations = estimate::complete(jobs, measured, lent, &guess);
    let e = estimate::analyse(jobs, &durations);
    let guessed: Vec<(&String, &Duration)> = durations
        .iter()
        .filter(|(_, d)| matches!(d, Duration::Guessed(..)))
        .collect();
    let mut text = format!(
        "estimate: {} derivations from nothing: {} with a duration measured on this machine \
         (its last build's, from Nix's log), {} guessed{}\n",
        jobs.len(),
        jobs.len() - guessed.len(),
        guessed.len(),
        if lent.is_empty() {
            String::new()
        } else {
            format!(" (with {} builds of other projects to go by)", lent.len())
        }
    );
    let mut reasons: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, duration) in &guessed {
        if let Duration::Guessed(_, why) = duration {
            reasons.entry(why.as_str()).or_default().push(name.as_str());
        }
    }
    for (why, names) in reasons {
        let shown: Vec<&str> = names.iter().take(3).copied().collect();
        let more = if names.len() > 3 {
            format!(" and {} more", names.len() - 3)
        } else {
            String::new()
        };
        text += &format!("  guessed ({why}): {}{more}\n", shown.join(", "));
    }
    text += &format!("work: {} of builds, one after another\n", hours(e.work));
    text += &format!(
        "critical path: {} ({} derivations: {})\n",
        hours(e.critical_seconds),
        e.critical_path.len(),
        e.critical_path.join(" → ")
    );
    text += "wall time, list-scheduled (a slot builds one derivation at a time, as --max-jobs counts):\n";
    let fleet_slots = fleet.builders.max(1) * fleet.cores.max(1);
    let mut rows = vec![(1, "1 slot".to_string()), (2, "2 slots".to_string())];
    if fleet_slots > 2 {
        rows.push((
            fleet_slots,
            format!(
                "{fleet_slots} slots ({} builder(s) × {})",
                fleet.builders, fleet.cores
            ),
        ));
    }
    for (slots, label) in rows {
        text += &format!(
            "  {label}: {}\n",
            hours(estimate::schedule(jobs, &durations, slots))
        );
    }
    text += "durations, longest first (s; `~` guessed):\n";
    let mut rows: Vec<(&String, &Duration)> = durations.iter().collect();
    rows.sort_by(|a, b| b.1.seconds().total_cmp(&a.1.seconds()).then(a.0.cmp(b.0)));
    for (name, duration) in rows {
        let mark = if matches!(duration, Duration::Guessed(..)) {
            "~"
        } else {
            " "
        };
        text += &format!("  {mark}{:>7.0}  {name}\n", duration.seconds());
    }
    let (count, work) = estimate::per_cell_work(plan, jobs, &durations);
    text += &format!(
        "the same matrix built cell by cell, nothing shared: {count} derivations, {} of work \
         (against {} derivations, {} here)\n",
        hours(work),
        jobs.len(),
        hours(e.work)
    );
    text
}

/// `1 h 05 min (3900 s)`, `4 min 10 s (250 s)`, `12 s`.
fn hours(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        s if s >= 3600 => format!("{} h {:02} min ({s} s)", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{} min {:02} s ({s} s)", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// A job's derivation and its output.
#[derive(serde::Deserialize)]
struct Derivation {
    drv: String,
    out: String,
}

/// Each job's derivation: the flake's nodes, toolchains and driver.
fn derivations(nix: &Nix, flake: &str) -> Result<BTreeMap<String, Derivation>> {
    let both = "d: { drv = d.drvPath; out = d.outPath; }";
    let ask = |attr: &str| -> Result<BTreeMap<String, Derivation>> {
        nix.eval_json(
            &format!("{flake}#{attr}"),
            Some(&format!("builtins.mapAttrs (name: {both})")),
        )
        .with_context(|| format!("cannot ask {flake}#{attr} for its derivations"))
    };
    let mut out = ask("nodes")?;
    for (name, d) in ask("toolchains")? {
        out.insert(estimate::toolchain_job(&name), d);
    }
    let driver: Derivation = nix
        .eval_json(&format!("{flake}#driver"), Some(both))
        .with_context(|| format!("cannot ask {flake}#driver for its derivation"))?;
    out.insert(DRIVER.to_string(), driver);
    Ok(out)
}

fn log_dir() -> PathBuf {
    std::env::var_os("NIX_LOG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/nix/var/log/nix"))
}

/// The seconds between the creation and the last write of the log of
/// `drv`'s build, where the file system records both and the log ends when
/// the output was registered (`registered`, seconds since the epoch). A
/// later rebuild (`--check`, `--rebuild`) writes the same file again, its
/// creation time kept: then the two times bracket no one build, and the
/// figure is not taken.
fn build_seconds(logs: &Path, drv: &str, registered: u64) -> Option<f64> {
    let base = Path::new(drv).file_name()?.to_str()?;
    if base.len() < 3 {
        return None;
    }
    let file = logs
        .join("drvs")
        .join(&base[..2])
        .join(format!("{}.bz2", &base[2..]));
    let meta = std::fs::metadata(file).ok()?;
    let (start, end): (SystemTime, SystemTime) = (meta.created().ok()?, meta.modified().ok()?);
    let end_secs = end.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    if end_secs.abs_diff(registered) > 60 {
        return None;
    }
    let seconds = end.duration_since(start).ok()?.as_secs_f64();
    (seconds <= 86_400.0).then_some(seconds)
}
