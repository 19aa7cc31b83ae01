//! Whether a build's parallel compiles fit the machine's memory, from the
//! peaks earlier builds of the same compiles recorded (`cuwheel plan`).
//!
//! In: the compiles measured ([`Peak`]: a node, its largest recorded peak
//! resident set size, read from its build log, and its device targets), how
//! many derivations Nix builds at once (`--max-jobs`) and the cores each
//! build is given (`--cores`, which only a kernel built by an earlier
//! cuwheel gave nvcc for `--threads`), and the machine's memory. Out: a [`MemoryCheck`], whose text names the
//! largest peak and what the settings ask at most, and, where that is more
//! than the machine has, the `--max-jobs` and `--cores` that fit.
//!
//! The figure recorded is the largest single process of a compile (cicc,
//! ptxas, cc1plus; busybox `time`'s maximum resident set size). A kernel
//! compiles its targets one at a time (cuwheel passes nvcc `--threads 1`,
//! after the project's own flags, and nvcc takes the last), so a build
//! holds one such process. A kernel built by a cuwheel before that passed
//! `--threads "$NIX_BUILD_CORES"`: nvcc then ran up to min(cores, targets)
//! at once, and that is the bound used for it, an upper one.

/// One measured compile node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peak {
    pub node: String,
    pub kib: u64,
    /// Its `-gencode` targets, at least 1.
    pub targets: usize,
    /// Whether nvcc compiled its targets in parallel, one thread per core:
    /// a kernel built by a cuwheel that passed `--threads "$NIX_BUILD_CORES"`.
    pub threads_per_core: bool,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCheck {
    /// Whether the settings may ask more memory than the machine has.
    pub over: bool,
    pub text: String,
}

/// The most one build of `peak` holds at once with `cores` cores.
fn per_build(peak: &Peak, cores: usize) -> u64 {
    let at_once = if peak.threads_per_core {
        cores.min(peak.targets).max(1)
    } else {
        1
    };
    peak.kib * at_once as u64
}

/// The check for `jobs` builds at once of `cores` cores each, on a machine
/// of `memory_kib`; `None` where no compile was measured.
pub fn check(peaks: &[Peak], jobs: usize, cores: usize, memory_kib: u64) -> Option<MemoryCheck> {
    let (jobs, cores) = (jobs.max(1), cores.max(1));
    let largest = peaks.iter().max_by_key(|p| (per_build(p, cores), p.kib))?;
    let one = per_build(largest, cores);
    let asked = one * jobs as u64;
    let mut text = format!(
        "memory: the heaviest compile recorded here is {}, {} at its peak{}; {jobs} build{} at \
         once of {cores} core{} each ask at most {} of this machine's {}\n",
        largest.node,
        gib(largest.kib),
        if one > largest.kib {
            format!(
                " (up to {} at once with nvcc's --threads)",
                one / largest.kib
            )
        } else {
            String::new()
        },
        plural(jobs),
        plural(cores),
        gib(asked),
        gib(memory_kib),
    );
    let over = asked > memory_kib;
    if over {
        text += &format!(
            "warning: a compile may be killed for memory. {}\n",
            advice(peaks, jobs, cores, memory_kib)
        );
    }
    Some(MemoryCheck { over, text })
}

/// The `--max-jobs` and `--cores` that fit: fewer builds at once first,
/// then fewer cores each (fewer of nvcc's per-target processes).
fn advice(peaks: &[Peak], jobs: usize, cores: usize, memory_kib: u64) -> String {
    let need = |c: usize| peaks.iter().map(|p| per_build(p, c)).max().unwrap_or(0);
    let fitting_jobs = (memory_kib / need(cores).max(1)) as usize;
    if fitting_jobs >= 1 {
        let k = fitting_jobs.min(jobs);
        return format!(
            "Build with `nix build --max-jobs {k} --cores {cores}` (reproduce with \
             `cuwheel reproduce --max-jobs {k}`): {k} at once ask at most {}.",
            gib(need(cores) * k as u64)
        );
    }
    if let Some(c) = (1..cores).rev().find(|&c| need(c) <= memory_kib) {
        return format!(
            "Even one build at a time may: build with `nix build --max-jobs 1 --cores {c}`, \
             which asks at most {}.",
            gib(need(c))
        );
    }
    format!(
        "Even one compile alone has needed more than this machine's {}: build on a larger one.",
        gib(memory_kib)
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn gib(kib: u64) -> String {
    format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1024 * 1024;

    fn peak(node: &str, gib: f64, targets: usize) -> Peak {
        Peak {
            node: node.into(),
            kib: (gib * GIB as f64) as u64,
            targets,
            threads_per_core: false,
        }
    }

    /// A kernel built when nvcc took `--threads "$NIX_BUILD_CORES"`.
    fn threaded(node: &str, gib: f64, targets: usize) -> Peak {
        Peak {
            threads_per_core: true,
            ..peak(node, gib, targets)
        }
    }

    #[test]
    fn a_kernel_of_several_targets_holds_one_compile_at_a_time() {
        // flash-attn's heaviest backward kernel at four archs: 6.5 GiB a
        // target; two builds at once fit in 24 GiB.
        let heavy = peak("kernel-cuda130-flash_bwd_hdim256_fp16_sm80", 6.5, 4);
        let c = check(std::slice::from_ref(&heavy), 2, 2, 24 * GIB).unwrap();
        assert!(!c.over, "{}", c.text);
        assert!(c.text.contains("ask at most 13.0 GiB"), "{}", c.text);
        // Built when nvcc took the build's cores: two at once each, 26 GiB
        // (13.0 GiB was measured for one such build here).
        let old = threaded("kernel-cuda130-flash_bwd_hdim256_fp16_sm80", 6.5, 4);
        let c = check(std::slice::from_ref(&old), 2, 2, 24 * GIB).unwrap();
        assert!(c.over, "{}", c.text);
        assert!(
            c.text
                .contains("6.5 GiB at its peak (up to 2 at once with nvcc's --threads)"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("`nix build --max-jobs 1 --cores 2`"),
            "{}",
            c.text
        );
    }

    #[test]
    fn nothing_measured_gives_no_check() {
        assert_eq!(check(&[], 2, 2, 24 * GIB), None);
    }

    #[test]
    fn builds_that_fit_are_reported_without_a_warning() {
        let peaks = [peak("kernel-cuda130-a", 6.5, 1), peak("binding-x", 2.0, 1)];
        let c = check(&peaks, 2, 2, 24 * GIB).unwrap();
        assert!(!c.over);
        assert!(
            c.text
                .contains("kernel-cuda130-a, 6.5 GiB at its peak; 2 builds at once of 2 cores each ask at most 13.0 GiB of this machine's 24.0 GiB"),
            "{}",
            c.text
        );
        assert!(!c.text.contains("warning"));
    }

    #[test]
    fn too_many_builds_at_once_are_cut_to_what_fits() {
        // 16 slots of a 6.5 GiB compile on 64 GiB: 104 GiB asked; 9 fit.
        let c = check(&[peak("kernel-cuda130-bwd", 6.5, 1)], 16, 16, 64 * GIB).unwrap();
        assert!(c.over);
        assert!(
            c.text.contains("`nix build --max-jobs 9 --cores 16`"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("`cuwheel reproduce --max-jobs 9`"),
            "{}",
            c.text
        );
    }

    #[test]
    fn nvcc_threads_count_per_target_and_cores_are_cut_when_one_build_is_too_much() {
        // Two targets on 2 cores: two 13 GiB processes in one build, on 24 GiB.
        let c = check(&[threaded("kernel-cuda130-big", 13.0, 2)], 2, 2, 24 * GIB).unwrap();
        assert!(c.over);
        assert!(
            c.text.contains("(up to 2 at once with nvcc's --threads)"),
            "{}",
            c.text
        );
        assert!(
            c.text.contains("`nix build --max-jobs 1 --cores 1`"),
            "{}",
            c.text
        );
        // A compile larger than the machine: no setting helps.
        let c = check(&[peak("kernel-cuda130-huge", 30.0, 1)], 1, 1, 24 * GIB).unwrap();
        assert!(c.text.contains("build on a larger one"), "{}", c.text);
    }
}
