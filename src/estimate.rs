//! How long a plan takes to build: the arithmetic of `cuwheel plan
//! --estimate`.
//!
//! In: a [`Plan`] and a duration for each derivation it builds (the plan's
//! nodes, the toolchains and the driver they use), measured or guessed.
//! Out: an [`Estimate`] — the total work, the critical path, and the wall
//! time of a list schedule over a number of build slots — and the work a
//! per-cell build of the same matrix would do. Pure: the durations come
//! from the caller (`src/cli/plan_estimate.rs` reads Nix's build logs).
//!
//! The schedule is the classic list scheduling: whenever a slot is free,
//! it takes the ready derivation with the longest path to the end of the
//! graph (its "bottom level"). A slot is one derivation at a time, as
//! `--max-jobs` counts them: N builders of C slots each are N × C slots.
//! Durations are taken as they were measured, so a derivation that ran
//! beside others is as slow here as it was then.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use cuwheel_build::plan::{Input, Plan};

/// The driver's name in the graph.
pub const DRIVER: &str = "driver";

/// Where a duration came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Duration {
    /// Seconds from this machine's build of that derivation.
    Measured(f64),
    /// Seconds guessed, and how: `the median of 70 measured kernels`.
    Guessed(f64, String),
}

impl Duration {
    pub fn seconds(&self) -> f64 {
        match self {
            Duration::Measured(s) | Duration::Guessed(s, _) => *s,
        }
    }
}

/// One derivation to build: its name and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub name: String,
    pub after: BTreeSet<String>,
    /// The project file a kernel or binding compiles (its `source` input).
    pub source: Option<String>,
    /// How many device targets it compiles (its `-gencode`s), at least 1:
    /// nvcc's device work grows with them, so a duration is carried from
    /// one build of a source to another per target.
    pub targets: usize,
}

/// The derivations a plan builds, each with what it needs: its input
/// nodes, the toolchains (`toolchain:<name>`) and the driver.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let mut out: BTreeMap<String, Job> = BTreeMap::new();
    for (name, node) in &plan.nodes {
        let mut after = BTreeSet::new();
        for input in node.inputs.values() {
            let needed = match input {
                Input::Node { node } => node.clone(),
                Input::Toolchain { toolchain, .. } => toolchain_job(toolchain),
                Input::Driver { .. } => DRIVER.to_string(),
                Input::Source { .. } => continue,
            };
            if !out.contains_key(&needed) && !plan.nodes.contains_key(&needed) {
                out.insert(
                    needed.clone(),
                    Job {
                        name: needed.clone(),
                        after: BTreeSet::new(),
                        source: None,
                        targets: 1,
                    },
                );
            }
            after.insert(needed);
        }
        out.insert(
            name.clone(),
            Job {
                name: name.clone(),
                after,
                source: match node.inputs.get("source") {
                    Some(Input::Source { source }) => Some(source.clone()),
                    _ => None,
                },
                targets: node.script.matches("-gencode=").count().max(1),
            },
        );
    }
    out.into_values().collect()
}

/// The jobs that building `roots` builds: those and what they wait for,
/// in `jobs`' order.
pub fn needed_by(jobs: Vec<Job>, roots: &[String]) -> Vec<Job> {
    let by_name: BTreeMap<&str, &Job> = jobs.iter().map(|j| (j.name.as_str(), j)).collect();
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = roots.to_vec();
    while let Some(name) = todo.pop() {
        if let Some(job) = by_name.get(name.as_str()) {
            if needed.insert(name) {
                todo.extend(job.after.iter().cloned());
            }
        }
    }
    jobs.into_iter()
        .filter(|j| needed.contains(&j.name))
        .collect()
}

/// A toolchain's name in the graph: `toolchain:torch211`.
pub fn toolchain_job(toolchain: &str) -> String {
    format!("toolchain:{toolchain}")
}

/// What kind of derivation a job is, for guessing what was never built:
/// a node's name up to its first `-` (`kernel`, `binding`, `link`,
/// `wheel`, `audit`, `compat`, `symbols`), `toolchain` or `driver`.
pub fn kind(name: &str) -> &str {
    if name.starts_with("toolchain:") {
        return "toolchain";
    }
    name.split('-').next().unwrap_or(name)
}

/// A measured build that lends its duration to jobs not built here: of
/// this plan, or of another project's (`plan --estimate --durations-from`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub kind: String,
    pub source: Option<String>,
    pub targets: usize,
    pub seconds: f64,
}

impl Sample {
    pub fn of(job: &Job, seconds: f64) -> Sample {
        Sample {
            kind: kind(&job.name).to_string(),
            source: job.source.clone(),
            targets: job.targets,
            seconds,
        }
    }

    fn per_target(&self) -> f64 {
        self.seconds / self.targets as f64
    }
}

/// Fills in what was not measured, from `lent` (measured builds of another
/// project) and this plan's own measured jobs: a build of the same source
/// (per device target, times the job's targets), else the median of the
/// same kind (per target likewise), else `fallback`'s figure for the kind;
/// each guess says which.
pub fn complete(
    jobs: &[Job],
    measured: &BTreeMap<String, f64>,
    lent: &[Sample],
    fallback: &dyn Fn(&str) -> f64,
) -> BTreeMap<String, Duration> {
    let mut samples: Vec<Sample> = lent.to_vec();
    for job in jobs {
        if let Some(seconds) = measured.get(&job.name) {
            samples.push(Sample::of(job, *seconds));
        }
    }
    let mut out = BTreeMap::new();
    for job in jobs {
        let k = kind(&job.name);
        let scaled = |of: Vec<&Sample>| {
            let per: Vec<f64> = of.iter().map(|s| s.per_target()).collect();
            median(&per).map(|m| (m * job.targets as f64, per.len()))
        };
        let same_source = job.source.as_ref().and_then(|source| {
            scaled(
                samples
                    .iter()
                    .filter(|s| s.kind == k && s.source.as_ref() == Some(source))
                    .collect(),
            )
        });
        let duration = if let Some(seconds) = measured.get(&job.name) {
            Duration::Measured(*seconds)
        } else if let Some((seconds, n)) = same_source {
            Duration::Guessed(
                seconds,
                format!("{n} build(s) of its source, per device target"),
            )
        } else if let Some((seconds, n)) = scaled(samples.iter().filter(|s| s.kind == k).collect())
        {
            Duration::Guessed(
                seconds,
                format!("the median of {n} measured {k}, per device target"),
            )
        } else {
            Duration::Guessed(fallback(k), format!("cuwheel's guess for a {k}"))
        };
        out.insert(job.name.clone(), duration);
    }
    out
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// The arithmetic of one graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Seconds of builds, all added up: what one slot would take.
    pub work: f64,
    /// The longest chain of derivations, first to last, and its seconds:
    /// no number of slots builds the graph faster.
    pub critical_path: Vec<String>,
    pub critical_seconds: f64,
}

/// The work and the critical path of `jobs` under `durations` (every job
/// must have one). Jobs form a DAG, as a plan's nodes do.
pub fn analyse(jobs: &[Job], durations: &BTreeMap<String, Duration>) -> Estimate {
    let levels = bottom_levels(jobs, durations);
    let work = jobs.iter().map(|j| durations[&j.name].seconds()).sum();
    // The critical path: from the job with the greatest bottom level, each
    // step to the successor with the greatest one.
    let successors = successors(jobs);
    let mut path = Vec::new();
    let mut at = jobs
        .iter()
        .filter(|j| j.after.is_empty())
        .max_by(|a, b| by_level(&levels, &a.name, &b.name));
    while let Some(job) = at {
        path.push(job.name.clone());
        at = successors
            .get(job.name.as_str())
            .and_then(|next| next.iter().max_by(|a, b| by_level(&levels, a, b)))
            .and_then(|name| jobs.iter().find(|j| j.name == *name));
    }
    let critical_seconds = path.first().map_or(0.0, |first| levels[first]);
    Estimate {
        work,
        critical_path: path,
        critical_seconds,
    }
}

fn by_level(levels: &BTreeMap<String, f64>, a: &str, b: &str) -> Ordering {
    levels[a]
        .total_cmp(&levels[b])
        // Equal levels: the name first in order, so the path is stable.
        .then_with(|| b.cmp(a))
}

/// Each job's bottom level: its own seconds plus the longest chain after it.
fn bottom_levels(jobs: &[Job], durations: &BTreeMap<String, Duration>) -> BTreeMap<String, f64> {
    let successors = successors(jobs);
    let mut levels: BTreeMap<String, f64> = BTreeMap::new();
    // Reverse topological order: a job after all its successors.
    for name in topological(jobs).iter().rev() {
        let after = successors
            .get(name.as_str())
            .map(|next| next.iter().map(|n| levels[*n]).fold(0.0, f64::max))
            .unwrap_or(0.0);
        levels.insert(name.clone(), durations[name].seconds() + after);
    }
    levels
}

/// Each job's successors: the jobs that wait for it.
fn successors(jobs: &[Job]) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for job in jobs {
        for before in &job.after {
            out.entry(before.as_str()).or_default().push(&job.name);
        }
    }
    out
}

fn topological(jobs: &[Job]) -> Vec<String> {
    let mut waiting: BTreeMap<&str, usize> = jobs
        .iter()
        .map(|j| (j.name.as_str(), j.after.len()))
        .collect();
    let successors = successors(jobs);
    let mut ready: Vec<&str> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(name, _)| *name)
        .collect();
    let mut order = Vec::new();
    while let Some(name) = ready.pop() {
        order.push(name.to_string());
        for next in successors.get(name).into_iter().flatten() {
            let n = waiting.get_mut(next).expect("a job's successor is a job");
            *n -= 1;
            if *n == 0 {
                ready.push(next);
            }
        }
    }
    order
}

/// The wall time of a list schedule of `jobs` on `slots` slots.
pub fn schedule(jobs: &[Job], durations: &BTreeMap<String, Duration>, slots: usize) -> f64 {
    let slots = slots.max(1);
    let levels = bottom_levels(jobs, durations);
    let mut waiting: BTreeMap<&str, usize> = jobs
        .iter()
        .map(|j| (j.name.as_str(), j.after.len()))
        .collect();
    let successors = successors(jobs);
    let ready_one = |name: &str| Keyed {
        key: levels[name],
        name: name.to_string(),
    };
    // Ready jobs, the longest bottom level first.
    let mut ready: BinaryHeap<Keyed> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(name, _)| ready_one(name))
        .collect();
    // Running jobs, the first to finish first: keyed by the negated time.
    let mut running: BinaryHeap<Keyed> = BinaryHeap::new();
    let mut now = 0.0;
    loop {
        while running.len() < slots {
            let Some(job) = ready.pop() else { break };
            let end = now + durations[&job.name].seconds();
            running.push(Keyed {
                key: -end,
                name: job.name,
            });
        }
        let Some(done) = running.pop() else {
            break;
        };
        now = -done.key;
        for next in successors.get(done.name.as_str()).into_iter().flatten() {
            let n = waiting.get_mut(next).expect("a job's successor is a job");
            *n -= 1;
            if *n == 0 {
                ready.push(ready_one(next));
            }
        }
    }
    now
}

/// A job in a max-heap, by a figure (a bottom level; a finishing time
/// negated, so the first to finish comes first), then by name, the first
/// in order first, so that equal figures are taken in a stable order.
#[derive(Debug, PartialEq)]
struct Keyed {
    key: f64,
    name: String,
}

impl Eq for Keyed {}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then_with(|| other.name.cmp(&self.name))
    }
}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What building each cell on its own would do: every cell builds all its
/// nodes (and the toolchains and driver once per cell), nothing shared.
/// Returns (derivations, seconds of work).
pub fn per_cell_work(
    plan: &Plan,
    jobs: &[Job],
    durations: &BTreeMap<String, Duration>,
) -> (usize, f64) {
    let by_name: BTreeMap<&str, &Job> = jobs.iter().map(|j| (j.name.as_str(), j)).collect();
    let mut count = 0;
    let mut work = 0.0;
    for cell in plan.cells.values() {
        // The audit's closure is the cell's whole build.
        let mut seen = BTreeSet::new();
        let mut stack = vec![cell.audit.as_str()];
        while let Some(name) = stack.pop() {
            if !seen.insert(name) {
                continue;
            }
            if let Some(job) = by_name.get(name) {
                stack.extend(job.after.iter().map(String::as_str));
            }
        }
        count += seen.len();
        work += seen
            .iter()
            .map(|n| durations.get(*n).map_or(0.0, Duration::seconds))
            .sum::<f64>();
    }
    (count, work)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, after: &[&str]) -> Job {
        Job {
            name: name.to_string(),
            after: after.iter().map(|s| s.to_string()).collect(),
            source: None,
            targets: 1,
        }
    }

    #[test]
    fn a_cell_needs_its_nodes_toolchains_and_driver_only() {
        let jobs = vec![
            job("driver", &[]),
            job("toolchain:cuda130", &[]),
            job("toolchain:torch29", &[]),
            job("kernel-a", &["toolchain:cuda130"]),
            job("kernel-b", &["toolchain:torch29"]),
            job("wheel-x", &["kernel-a", "driver"]),
            job("audit-x", &["wheel-x"]),
            job("audit-y", &["kernel-b"]),
        ];
        let names: Vec<String> = needed_by(jobs, &["audit-x".to_string()])
            .into_iter()
            .map(|j| j.name)
            .collect();
        assert_eq!(
            names,
            [
                "driver",
                "toolchain:cuda130",
                "kernel-a",
                "wheel-x",
                "audit-x"
            ]
        );
    }

    fn secs(pairs: &[(&str, f64)]) -> BTreeMap<String, Duration> {
        pairs
            .iter()
            .map(|(n, s)| (n.to_string(), Duration::Measured(*s)))
            .collect()
    }

    /// A driver and a toolchain, four kernels, one link, one wheel.
    fn graph() -> (Vec<Job>, BTreeMap<String, Duration>) {
        let jobs = vec![
            job("driver", &[]),
            job("toolchain:cuda", &[]),
            job("kernel-a", &["toolchain:cuda"]),
            job("kernel-b", &["toolchain:cuda"]),
            job("kernel-c", &["toolchain:cuda"]),
            job("kernel-d", &["toolchain:cuda"]),
            job("link-x", &["kernel-a", "kernel-b", "kernel-c", "kernel-d"]),
            job("wheel-x", &["link-x", "driver"]),
        ];
        let durations = secs(&[
            ("driver", 200.0),
            ("toolchain:cuda", 50.0),
            ("kernel-a", 100.0),
            ("kernel-b", 60.0),
            ("kernel-c", 60.0),
            ("kernel-d", 40.0),
            ("link-x", 10.0),
            ("wheel-x", 5.0),
        ]);
        (jobs, durations)
    }

    #[test]
    fn work_and_critical_path() {
        let (jobs, durations) = graph();
        let e = analyse(&jobs, &durations);
        assert_eq!(e.work, 525.0);
        // toolchain 50 + kernel-a 100 + link 10 + wheel 5 = 165 < driver 200 + 5.
        assert_eq!(e.critical_seconds, 205.0);
        assert_eq!(e.critical_path, ["driver", "wheel-x"]);
    }

    #[test]
    fn one_slot_is_the_work_and_many_are_the_critical_path() {
        let (jobs, durations) = graph();
        assert_eq!(schedule(&jobs, &durations, 1), 525.0);
        assert_eq!(schedule(&jobs, &durations, 64), 205.0);
        // Two slots: the driver (longest bottom level) starts at once beside
        // the toolchain and holds its slot until 200, so the kernels share
        // one: a 50-150, b 150-210, c 200-260, d 210-250, link 260-270,
        // wheel 270-275.
        assert_eq!(schedule(&jobs, &durations, 2), 275.0);
        // Without the driver the kernels decide: two slots, 4 kernels.
        let jobs: Vec<Job> = jobs.into_iter().filter(|j| j.name != "driver").collect();
        let jobs: Vec<Job> = jobs
            .into_iter()
            .map(|mut j| {
                j.after.remove("driver");
                j
            })
            .collect();
        // toolchain 0-50; a 50-150 and b 50-110; c 110-170; d 150-190;
        // link 190-200; wheel 200-205.
        assert_eq!(schedule(&jobs, &durations, 2), 205.0);
        assert_eq!(schedule(&jobs, &durations, 1), 325.0);
    }

    #[test]
    fn what_was_not_built_gets_its_kinds_median_or_the_fallback() {
        let (jobs, _) = graph();
        let measured: BTreeMap<String, f64> =
            [("kernel-a", 100.0), ("kernel-b", 60.0), ("kernel-c", 80.0)]
                .iter()
                .map(|(n, s)| (n.to_string(), *s))
                .collect();
        let d = complete(&jobs, &measured, &[], &|k| {
            if k == "driver" { 240.0 } else { 7.0 }
        });
        assert_eq!(d["kernel-a"], Duration::Measured(100.0));
        assert_eq!(
            d["kernel-d"],
            Duration::Guessed(
                80.0,
                "the median of 3 measured kernel, per device target".into()
            )
        );
        assert_eq!(
            d["driver"],
            Duration::Guessed(240.0, "cuwheel's guess for a driver".into())
        );
        assert_eq!(kind("toolchain:cuda"), "toolchain");
        assert_eq!(kind("link-cu130-py313"), "link");
    }

    #[test]
    fn a_build_of_the_same_source_lends_its_duration_per_device_target() {
        // Two archs here; the lent build of the same source had one.
        let mut here = job("kernel-cuda125-torch27-attn", &[]);
        here.source = Some("csrc/attn.cu".into());
        here.targets = 2;
        let mut other = job("kernel-cuda125-torch27-mlp", &[]);
        other.source = Some("csrc/mlp.cu".into());
        other.targets = 2;
        let lent = |source: &str, seconds| Sample {
            kind: "kernel".into(),
            source: Some(source.into()),
            targets: 1,
            seconds,
        };
        let lent = [lent("csrc/attn.cu", 300.0), lent("csrc/norm.cu", 100.0)];
        let d = complete(&[here, other], &BTreeMap::new(), &lent, &|_| 1.0);
        assert_eq!(
            d["kernel-cuda125-torch27-attn"],
            Duration::Guessed(600.0, "1 build(s) of its source, per device target".into())
        );
        // No build of mlp.cu: the kind's median per target (200), times 2.
        assert_eq!(
            d["kernel-cuda125-torch27-mlp"],
            Duration::Guessed(
                400.0,
                "the median of 2 measured kernel, per device target".into()
            )
        );
    }
}
