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
//! Where those times bracket no one build, or the output has since been
//! collected, a compile node's log still says what its compiles took: the
//! wall time each one's `time` recorded (`plan::compile::WALL_TIME_MARK`),
//! the last build's, `--check` builds included.
//! What has no usable log (never built here, substituted, a node that
//! compiles nothing checked since or built again after a collection, or
//! its log collected) is guessed, and
//! marked: from a build of the same source (this plan's, or another
//! project's named by `--durations-from`), per device target (`-gencode`)
//! since nvcc's work grows with them; else the median of its kind, per
//! target likewise; else cuwheel's guess.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result, bail};

use cuwheel::estimate::{self, DRIVER, Duration, Job, Sample};
use cuwheel::plan::compile::wall_seconds;
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

/// Which slot counts to show beside 1 and 2, and from where.
pub struct Fleet {
    pub builders: usize,
    pub cores: usize,
    /// What the store holds is not built again (`--remaining`).
    pub remaining: bool,
    /// Only what `cuwheel reproduce` builds again: the toolchains and the
    /// driver count as built (`--reproduce`).
    pub reproduce: bool,
    /// Only what these cells' wheels need (`--cell`); empty: the matrix.
    pub cells: Vec<String>,
}

pub fn report(plan: &Plan, flake: &str, fleet: &Fleet, lenders: &[PathBuf]) -> Result<String> {
    let nix = Nix::system();
    let mut jobs = estimate::jobs(plan);
    if !fleet.cells.is_empty() {
        let mut roots = Vec::new();
        for cell in &fleet.cells {
            let Some(c) = plan.cells.get(cell) else {
                let known: Vec<&str> = plan.cells.keys().map(String::as_str).take(6).collect();
                bail!(
                    "--cell `{cell}`: the plan has no such cell; it has {}{}",
                    known.join(", "),
                    if plan.cells.len() > known.len() {
                        ", …"
                    } else {
                        ""
                    }
                );
            };
            roots.push(c.audit.clone());
        }
        jobs = estimate::needed_by(jobs, &roots);
    }
    let (own, built) = measured(&nix, &jobs, flake)?;
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
        let (seconds, _) = measured(&nix, &other_jobs, &other_flake.display().to_string())?;
        lent.extend(
            other_jobs
                .iter()
                .filter_map(|j| seconds.get(&j.name).map(|s| Sample::of(j, *s))),
        );
    }
    let built = if fleet.remaining {
        built
    } else if fleet.reproduce {
        jobs.iter()
            .filter(|j| matches!(estimate::kind(&j.name), "toolchain" | "driver"))
            .map(|j| j.name.clone())
            .collect()
    } else {
        BTreeSet::new()
    };
    Ok(table(plan, &jobs, &own, &lent, &built, fleet))
}

/// The jobs of `flake`'s plan whose last build here can be timed, and
/// those whose output the store holds.
fn measured(
    nix: &Nix,
    jobs: &[Job],
    flake: &str,
) -> Result<(BTreeMap<String, f64>, BTreeSet<String>)> {
    let derivations = derivations(nix, flake)?;
    let outs: Vec<StorePath> = derivations
        .values()
        .map(|d| d.out.parse())
        .collect::<Result<_, _>>()
        .context("the flake gave an output that is not a store path")?;
    // What each build read: it cannot have started before the last of
    // these was registered.
    let mut outputs = BTreeMap::new();
    let inputs: BTreeMap<&str, Vec<StorePath>> = jobs
        .iter()
        .filter_map(|job| derivations.get(&job.name))
        .filter_map(|d| Some((d.drv.as_str(), inputs_of(nix, &d.drv, &mut outputs)?)))
        .collect();
    let mut asked: Vec<StorePath> = outs;
    asked.extend(inputs.values().flatten().cloned());
    asked.sort_by_key(StorePath::to_absolute);
    asked.dedup();
    let registered: BTreeMap<String, u64> = nix
        .local_path_infos(&asked)?
        .into_iter()
        .filter_map(|i| Some((i.path, i.registration_time?)))
        .collect();
    let logs = log_dir();
    let mut measured = BTreeMap::new();
    let mut built = BTreeSet::new();
    for job in jobs {
        let Some(d) = derivations.get(&job.name) else {
            continue;
        };
        let end = registered.get(&d.out).copied();
        if end.is_some() {
            built.insert(job.name.clone());
        }
        let from_file = end.and_then(|end| {
            // An input registered after the output was made again since (it
            // was collected and fetched or built anew): it bounds nothing.
            let ready = inputs.get(d.drv.as_str()).and_then(|paths| {
                paths
                    .iter()
                    .filter_map(|p| registered.get(&p.to_absolute()).copied())
                    .filter(|&at| at <= end)
                    .max()
            });
            build_seconds(&logs, &d.drv, end, ready)
        });
        let seconds = match from_file {
            Some(seconds) => Some(seconds),
            // Only where Nix kept a log: a matrix's nodes never built here
            // cost no process each.
            None if matches!(estimate::kind(&job.name), "kernel" | "binding")
                && log_file(&logs, &d.drv).is_some_and(|f| f.is_file()) =>
            {
                marked_seconds(nix, &d.drv)
            }
            None => None,
        };
        if let Some(seconds) = seconds {
            measured.insert(job.name.clone(), seconds);
        }
    }
    Ok((measured, built))
}

/// The seconds the last build of a compile node took by its own count
/// (`WALL_TIME_MARK` in its log): its compiles' wall times, without the
/// sandbox's setup. Taken where the log file's times bracket no one build,
/// and where the output has since been collected; `None` where Nix keeps no
/// log of it, or the log has no mark (built by an earlier cuwheel).
fn marked_seconds(nix: &Nix, drv: &str) -> Option<f64> {
    let log = nix.read_log(&drv.parse().ok()?).ok()??;
    wall_seconds(&log)
}

/// The store paths the build of the derivation at `drv` reads: its input
/// sources and the outputs it uses of its input derivations, read from the
/// `.drv` files (each input derivation's once, through `outputs`); `None`
/// where one cannot be read.
fn inputs_of(
    nix: &Nix,
    drv: &str,
    outputs: &mut BTreeMap<StorePath, BTreeMap<String, StorePath>>,
) -> Option<Vec<StorePath>> {
    let derivation = nix.read_derivation(&drv.parse().ok()?).ok()?;
    let mut paths: Vec<StorePath> = derivation.input_srcs.iter().cloned().collect();
    for (input, used) in &derivation.input_drvs {
        if !outputs.contains_key(input) {
            let made = nix.read_derivation(input).ok()?.output_paths().ok()?;
            outputs.insert(input.clone(), made);
        }
        for output in used {
            paths.push(outputs[input].get(output)?.clone());
        }
    }
    Some(paths)
}

/// The table, from the durations measured (pure, for the tests).
pub fn table(
    plan: &Plan,
    jobs: &[Job],
    measured: &BTreeMap<String, f64>,
    lent: &[Sample],
    built: &BTreeSet<String>,
    fleet: &Fleet,
) -> String {
    let mut durations = estimate::complete(jobs, measured, lent, &guess);
    for name in built {
        if let Some(duration) = durations.get_mut(name) {
            *duration = Duration::Measured(0.0);
        }
    }
    let e = estimate::analyse(jobs, &durations);
    let guessed: Vec<(&String, &Duration)> = durations
        .iter()
        .filter(|(_, d)| matches!(d, Duration::Guessed(..)))
        .collect();
    let to_build = jobs.len() - built.len();
    let what = if fleet.remaining {
        format!(
            "{to_build} of {} derivations left to build ({} built, counted as no time)",
            jobs.len(),
            built.len()
        )
    } else if fleet.reproduce {
        format!(
            "{to_build} of {} derivations built again by `cuwheel reproduce` \
             ({} kept, the toolchains and the driver: counted as no time)",
            jobs.len(),
            built.len()
        )
    } else {
        format!("{} derivations from nothing", jobs.len())
    };
    let mut text = format!(
        "estimate: {what}: {} with a duration measured on this machine \
         (its last build's, from Nix's log), {} guessed{}\n",
        to_build - guessed.len(),
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
    let mut rows: Vec<(&String, &Duration)> = durations
        .iter()
        .filter(|(name, _)| !built.contains(*name))
        .collect();
    rows.sort_by(|a, b| b.1.seconds().total_cmp(&a.1.seconds()).then(a.0.cmp(b.0)));
    for (name, duration) in rows {
        let mark = if matches!(duration, Duration::Guessed(..)) {
            "~"
        } else {
            " "
        };
        text += &format!("  {mark}{:>7.0}  {name}\n", duration.seconds());
    }
    if fleet.remaining || fleet.reproduce || !fleet.cells.is_empty() {
        return text;
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

/// Where Nix keeps the log of `drv`'s build: `drvs/xx/<rest>.bz2`.
fn log_file(logs: &Path, drv: &str) -> Option<PathBuf> {
    let base = Path::new(drv).file_name()?.to_str()?;
    if base.len() < 3 {
        return None;
    }
    Some(
        logs.join("drvs")
            .join(&base[..2])
            .join(format!("{}.bz2", &base[2..])),
    )
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
/// figure is not taken. A build after the output was collected writes it
/// again too, and then its end is the output's new registration but its
/// start is unknown: a log created before `ready`, when the last of the
/// build's inputs was registered, was begun by an earlier build, and is not
/// taken either (timed from `ready`, a rebuilt toolchain counted 873 s of
/// waiting behind fetches; timed from the log's birth, it counted the hours
/// since its first build).
fn build_seconds(logs: &Path, drv: &str, registered: u64, ready: Option<u64>) -> Option<f64> {
    let meta = std::fs::metadata(log_file(logs, drv)?).ok()?;
    let (start, end): (SystemTime, SystemTime) = (meta.created().ok()?, meta.modified().ok()?);
    let end_secs = end.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    if end_secs.abs_diff(registered) > 60 {
        return None;
    }
    let start_secs = start.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    // Registration times are whole seconds: a second's slack.
    if ready.is_some_and(|ready| start_secs + 1 < ready) {
        return None;
    }
    let seconds = end.duration_since(start).ok()?.as_secs_f64();
    (seconds <= 86_400.0).then_some(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration as Span, UNIX_EPOCH};

    #[test]
    fn a_build_is_timed_from_its_log_unless_the_log_is_older_than_its_inputs() {
        let logs = tempfile::tempdir().unwrap();
        let drv = "/nix/store/ab12cdefghijklmnopqrstuvwxyz0123-kernel.drv";
        let dir = logs.path().join("drvs/ab");
        std::fs::create_dir_all(&dir).unwrap();
        let file = std::fs::File::create(dir.join("12cdefghijklmnopqrstuvwxyz0123-kernel.drv.bz2"))
            .unwrap();
        let Ok(born) = file.metadata().unwrap().created() else {
            eprintln!("this file system records no creation time; nothing to check");
            return;
        };
        let born = born.duration_since(UNIX_EPOCH).unwrap().as_secs();
        // The log was last written 100 s after it was created (a log
        // written again keeps its creation time).
        file.set_modified(UNIX_EPOCH + Span::from_secs(born + 100))
            .unwrap();
        let end = born + 100;
        let near = |got: Option<f64>, want: f64| got.is_some_and(|s| (s - want).abs() <= 1.0);
        let seconds = build_seconds(logs.path(), drv, end, None);
        assert!(near(seconds, 100.0), "{seconds:?}");
        // Its last input was registered 60 s after the log's creation: an
        // earlier build began the log, and this one's start is unknown.
        assert_eq!(build_seconds(logs.path(), drv, end, Some(born + 60)), None);
        // An input registered in the log's own second is no sign of that.
        let seconds = build_seconds(logs.path(), drv, end, Some(born + 1));
        assert!(near(seconds, 100.0), "{seconds:?}");
        // Inputs older than the log change nothing.
        let seconds = build_seconds(logs.path(), drv, end, Some(born - 500));
        assert!(near(seconds, 100.0), "{seconds:?}");
        // An output registered long after the log's last write: another build.
        assert_eq!(build_seconds(logs.path(), drv, end + 600, None), None);
    }
}
