//! setup.py evaluated once per toolkit of the matrix: what it computes from
//! the toolkit (`nvcc -V`, `torch.version.cuda`, `torch.__version__`,
//! `packaging.version` comparisons of them) is computed for each.
//!
//! In: the project root, setup.py's text, and the matrix's cells (each torch
//! minor with the CUDA its wheels are built for). Out: one [`Inferred`] — the
//! modules as the newest toolkit's evaluation gives them, `cuda-archs` per
//! toolkit (a plain list when every toolkit agrees), the compile flags every
//! toolkit agrees on, and a finding for each flag, module or toolkit that
//! differs or fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Result, anyhow};

use super::model::{Inferred, Module};
use super::python::{self, Toolkit};
use crate::spec::archs::ToolkitKey;
use crate::spec::{CompatTable, CudaArch, CudaVersion, MatrixFacts, TorchVersion};

/// The cells of the matrix `init` writes by default (render's
/// `DEFAULT_MATRIX`): each torch minor with the CUDA of its wheels.
pub const DEFAULT_CELLS: [(&str, &str); 2] = [("2.11", "13.0"), ("2.9", "12.8")];

/// The stack setup.py is evaluated on: deep enough for every nesting the
/// budgets allow, whatever thread `init` runs on.
const STACK_BYTES: usize = 256 << 20;

/// The default matrix's toolkits, newest first.
pub fn default_toolkits() -> Vec<Toolkit> {
    let cells: Vec<(TorchVersion, CudaVersion)> = DEFAULT_CELLS
        .iter()
        .map(|(torch, cuda)| {
            (
                torch.parse().expect("a torch minor"),
                cuda.parse().expect("a CUDA version"),
            )
        })
        .collect();
    toolkits_for(&cells)
}

/// The nvcc a cell serving CUDA `served` builds with when nothing is
/// locked yet: [`MatrixFacts::default_nvcc`] over the toolkits the sources
/// would offer without asking a registry
/// ([`crate::lock::toolkits::ToolkitSource::assumed`]: Debian's suites and,
/// for the majors whose PyPI wheels hold an nvcc, the served version
/// itself) that the compatibility table knows.
pub fn default_nvcc(served: CudaVersion) -> CudaVersion {
    let sources = crate::lock::toolkits::SOURCES;
    let assumed = sources.iter().map(|source| source.assumed(served));
    let toolkits = crate::lock::toolkits::available(assumed, CompatTable::embedded());
    let facts = MatrixFacts {
        torch: BTreeMap::new(),
        toolkits,
    };
    facts.default_nvcc(served).unwrap_or(served)
}

/// One evaluation per cell: its nvcc, its torch's CUDA and version; newest
/// nvcc first, then newest torch.
pub fn toolkits_for(cells: &[(TorchVersion, CudaVersion)]) -> Vec<Toolkit> {
    let mut cells = cells.to_vec();
    cells.sort_by_key(|(torch, cuda)| std::cmp::Reverse((default_nvcc(*cuda), *torch)));
    cells.dedup();
    cells
        .iter()
        .map(|(torch, cuda)| Toolkit {
            nvcc: default_nvcc(*cuda).to_string(),
            cuda: cuda.to_string(),
            torch: format!("{torch}.0+cu{}", cuda.compact()),
            archs: None,
            device: None,
        })
        .collect()
}

/// Evaluates setup.py once per toolkit (once with nothing bound when
/// `toolkits` is empty) and merges what each gives.
pub fn infer_setup_py(root: &Path, text: &str, toolkits: &[Toolkit]) -> Result<Inferred> {
    // The evaluator recurses as deep as the budgets allow: give it a stack
    // that holds that on any thread.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("setup.py".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || infer_on_this_thread(root, text, toolkits))
            .map_err(|e| anyhow!("cannot start the evaluation of setup.py: {e}"))?
            .join()
            .map_err(|_| anyhow!("the evaluation of setup.py failed"))?
    })
}

fn infer_on_this_thread(root: &Path, text: &str, toolkits: &[Toolkit]) -> Result<Inferred> {
    let hint = "cuwheel reads setup.py without running it; run `cuwheel init --ignore-setup-py` \
                to infer from the source tree instead";
    let evaluate = |toolkit: Option<&Toolkit>| -> Result<Inferred> {
        let evaluation = python::evaluate_setup_py_for(root, text, &super::ProjectTree, toolkit)
            .map_err(|e| anyhow!("{e}\n{hint}"))?;
        let mut inferred = super::extract::from_setup(root, &evaluation)?;
        inferred.gpu = evaluation.gpu;
        Ok(inferred)
    };
    if toolkits.is_empty() {
        return evaluate(None);
    }
    let mut runs: Vec<(&Toolkit, Inferred)> = Vec::new();
    let mut failed: Vec<(&Toolkit, anyhow::Error)> = Vec::new();
    for toolkit in toolkits {
        match per_gpu(&evaluate, toolkit) {
            Ok(inferred) => runs.push((toolkit, inferred)),
            Err(e) => failed.push((toolkit, e)),
        }
    }
    if runs.is_empty() {
        let (_, first) = failed.into_iter().next().expect("a toolkit");
        return Err(first);
    }
    Ok(merge(runs, failed))
}

/// One toolkit's evaluation. Where setup.py asks for the GPU at hand
/// (`torch.cuda.get_device_capability()`) and the archs torch was built
/// for are known, a wheel serves every one of them: setup.py is evaluated
/// once per arch, the archs each gives are united, and any other key that
/// differs is reported as it is between toolkits.
fn per_gpu(
    evaluate: &dyn Fn(Option<&Toolkit>) -> Result<Inferred>,
    toolkit: &Toolkit,
) -> Result<Inferred> {
    let first = evaluate(Some(toolkit))?;
    let Some(archs) = toolkit.archs.as_ref().filter(|_| first.gpu.device) else {
        return Ok(first);
    };
    let gpus: Vec<Toolkit> = archs
        .sass
        .iter()
        .map(|arch| Toolkit {
            device: Some(*arch),
            ..toolkit.clone()
        })
        .collect();
    let mut runs: Vec<(&Toolkit, Inferred)> = Vec::new();
    for gpu in &gpus {
        runs.push((gpu, evaluate(Some(gpu))?));
    }
    let mut united: Vec<CudaArch> = Vec::new();
    for (_, run) in &runs {
        for arch in &run.archs {
            if !united.contains(arch) {
                united.push(*arch);
            }
        }
    }
    united.sort();
    for (_, run) in &mut runs {
        run.archs = united.clone();
    }
    let mut merged = merge(runs, Vec::new());
    merged.assumptions.push(python::Note {
        at: "setup.py".into(),
        text: format!(
            "`torch.cuda.get_device_capability()` is the GPU of the machine that runs setup.py: \
             for torch {} it was answered once per GPU arch that torch was built for ({}), and \
             the archs each answer gives were united",
            toolkit.torch,
            archs.shown()
        ),
    });
    Ok(merged)
}

/// The first run (the newest toolkit) with every other run's differences
/// folded in.
fn merge(runs: Vec<(&Toolkit, Inferred)>, failed: Vec<(&Toolkit, anyhow::Error)>) -> Inferred {
    let mut merged = runs[0].1.clone();
    // What any evaluation asked of the GPU.
    merged.gpu = runs
        .iter()
        .fold(merged.gpu, |gpu, (_, run)| gpu.or(run.gpu));
    for (toolkit, error) in &failed {
        let first_line = error.to_string();
        let first_line = first_line.lines().next().unwrap_or("").to_string();
        merged.find(
            "tool.cuwheel.matrix",
            format!(
                "evaluated for {}, setup.py does not reach setup(): {first_line}",
                toolkit.describe()
            ),
            format!(
                "the config was inferred from the other toolkits; drop the torch releases built \
                 with nvcc {} from matrix.torch if the project does not support it",
                toolkit.nvcc
            ),
        );
    }
    for (_, other) in &runs[1..] {
        for note in &other.assumptions {
            if !merged.assumptions.contains(note) {
                merged.assumptions.push(note.clone());
            }
        }
        for finding in &other.findings {
            merged.find(&finding.key, &finding.problem, &finding.fix);
        }
    }
    collapse_per_toolkit_notes(&mut merged.assumptions);
    merge_archs(&runs, &mut merged);
    merge_modules(&runs, &mut merged);
    merged
}

/// What each toolkit's evaluation of one line gave, as one note for the
/// line (`` `nvcc -V` says release 12.5 for …; release 13.0 for … ``)
/// rather than one per toolkit.
fn collapse_per_toolkit_notes(notes: &mut Vec<python::Note>) {
    const PREFIX: &str = "evaluated once per toolkit of the matrix: ";
    let mut collapsed: Vec<python::Note> = Vec::new();
    for note in notes.drain(..) {
        let Some(what) = note.text.strip_prefix(PREFIX) else {
            collapsed.push(note);
            continue;
        };
        match collapsed
            .iter_mut()
            .find(|n| n.at == note.at && n.text.starts_with(PREFIX))
        {
            Some(first) => {
                first.text.push_str("; ");
                first.text.push_str(what);
            }
            None => collapsed.push(note),
        }
    }
    *notes = collapsed;
}

/// `cuda-archs`: one list when every toolkit computes the same, else one
/// list per toolkit major (per toolkit where a major's toolkits differ).
fn merge_archs(runs: &[(&Toolkit, Inferred)], merged: &mut Inferred) {
    let default: Vec<CudaArch> = super::render::DEFAULT_ARCHS
        .iter()
        .map(|a| a.parse().expect("a default arch"))
        .collect();
    // The archs of each nvcc: the first (newest torch) run's.
    let mut by_nvcc: BTreeMap<CudaVersion, (Vec<CudaArch>, &Toolkit)> = BTreeMap::new();
    for (toolkit, inferred) in runs {
        let Ok(nvcc) = toolkit.nvcc.parse::<CudaVersion>() else {
            continue;
        };
        let archs = if inferred.archs.is_empty() {
            default.clone()
        } else {
            supported_by(nvcc, &inferred.archs, merged)
        };
        match by_nvcc.get(&nvcc) {
            None => {
                by_nvcc.insert(nvcc, (archs, toolkit));
            }
            Some((first, first_toolkit)) if *first != archs => merged.find(
                "tool.cuwheel.cuda-archs",
                format!(
                    "setup.py computes different archs for two torch releases built with nvcc {nvcc}: \
                     {} for {}, {} for {}; cuda-archs is keyed by toolkit, so the first was written",
                    shown(first),
                    first_toolkit.describe(),
                    shown(&archs),
                    toolkit.describe()
                ),
                "build those torch releases in separate projects, or list the archs both need",
            ),
            Some(_) => {}
        }
    }
    let lists: BTreeSet<&Vec<CudaArch>> = by_nvcc.values().map(|(archs, _)| archs).collect();
    if lists.len() <= 1 {
        // One list for every toolkit: what they all compile.
        if let (Some(archs), false) = (lists.first(), merged.archs.is_empty()) {
            merged.archs = (*archs).clone();
        }
        return;
    }
    let archs: BTreeMap<CudaVersion, Vec<CudaArch>> = by_nvcc
        .into_iter()
        .map(|(nvcc, (archs, _))| (nvcc, archs))
        .collect();
    merged.toolkit_archs = keyed(&archs);
}

/// The archs nvcc `nvcc` compiles, of those setup.py lists for it: one it
/// cannot (causal-conv1d lists 5.3 to 7.2 for CUDA 13, whose nvcc dropped
/// them, so its own build fails there) is left out and said. All of them
/// stay where none would be left: the lock's check then names the fix.
fn supported_by(nvcc: CudaVersion, archs: &[CudaArch], merged: &mut Inferred) -> Vec<CudaArch> {
    let compat = CompatTable::embedded();
    let (kept, dropped): (Vec<CudaArch>, Vec<CudaArch>) = archs
        .iter()
        .cloned()
        .partition(|arch| compat.nvcc_lacks(nvcc, arch).is_none());
    if dropped.is_empty() || kept.is_empty() {
        return archs.to_vec();
    }
    let text = format!(
        "setup.py lists {} for nvcc {nvcc}, which does not compile them (`nvcc --list-gpu-code`; \
         setup.py's own build fails there): left out of cuda-archs",
        shown(&dropped)
    );
    if !merged.assumptions.iter().any(|n| n.text == text) {
        merged.assumptions.push(python::Note {
            at: "setup.py".into(),
            text,
        });
    }
    kept
}

fn shown(archs: &[CudaArch]) -> String {
    format!(
        "[{}]",
        archs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A module's list-valued keys that setup.py may compute per toolkit.
type ListKey = (&'static str, fn(&mut Module) -> &mut Vec<String>);

const LIST_KEYS: [ListKey; 6] = [
    ("nvcc-flags", |m| &mut m.nvcc_flags),
    ("cxx-flags", |m| &mut m.cxx_flags),
    ("defines", |m| &mut m.defines),
    ("include-dirs", |m| &mut m.include_dirs),
    ("link-flags", |m| &mut m.link_flags),
    ("libraries", |m| &mut m.libraries),
];

/// Modules and their lists: what every toolkit agrees on is written; what
/// differs is reported, with each toolkit's value.
fn merge_modules(runs: &[(&Toolkit, Inferred)], merged: &mut Inferred) {
    let mut findings = Vec::new();
    let mut tabled = Vec::new();
    let names = |inferred: &Inferred| -> Vec<String> {
        inferred.modules.iter().map(|m| m.name.clone()).collect()
    };
    let (first_toolkit, first) = &runs[0];
    for (toolkit, other) in &runs[1..] {
        if names(other) != names(first) {
            findings.push((
                "tool.cuwheel.modules".to_string(),
                format!(
                    "setup.py builds different modules per toolkit: {:?} for {}, {:?} for {}; \
                     the first were written",
                    names(first),
                    first_toolkit.describe(),
                    names(other),
                    toolkit.describe()
                ),
                "cuwheel builds the same modules for every cell: narrow matrix.torch to the \
                 toolkits that build these"
                    .to_string(),
            ));
        }
    }
    for module in &mut merged.modules {
        let mut others: Vec<(&Toolkit, Module)> = Vec::new();
        for (toolkit, other) in &runs[1..] {
            if let Some(m) = other.modules.iter().find(|m| m.name == module.name) {
                others.push((toolkit, m.clone()));
            }
        }
        let key = format!("tool.cuwheel.modules[{}]", module.name);
        let sources = |m: &Module| (m.kernels.clone(), m.bindings.clone());
        for (toolkit, other) in &others {
            if sources(other) != sources(module) {
                findings.push((
                    format!("{key}.kernels"),
                    format!(
                        "setup.py gives `{}` different sources for {} than for {}; those of the \
                         first were written",
                        module.name,
                        first_toolkit.describe(),
                        toolkit.describe()
                    ),
                    "list the sources every toolkit builds".to_string(),
                ));
            }
        }
        for (name, pick) in LIST_KEYS {
            let mine = pick(module).clone();
            let theirs: Vec<(&Toolkit, Vec<String>)> = others
                .iter_mut()
                .map(|(t, m)| (*t, pick(m).clone()))
                .collect();
            if theirs.iter().all(|(_, list)| *list == mine) {
                continue;
            }
            let common: Vec<String> = mine
                .iter()
                .filter(|item| theirs.iter().all(|(_, list)| list.contains(item)))
                .cloned()
                .collect();
            if name == "nvcc-flags" {
                let every = std::iter::once((*first_toolkit, mine.clone())).chain(theirs.clone());
                if let Some(mut table) = by_toolkit(every) {
                    // The table form: the flags every toolkit shares as its
                    // default, and each toolkit that has others.
                    table.retain(|_, list| *list != common);
                    tabled.push(format!(
                        "setup.py computes `{}`'s nvcc-flags per toolkit: written as a table \
                         keyed by toolkit ({})",
                        module.name,
                        table
                            .keys()
                            .map(|key| format!("\"{key}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    module.nvcc_flags_by_toolkit = table;
                    *pick(module) = common;
                    continue;
                }
            }
            let each: Vec<String> = std::iter::once((*first_toolkit, mine.clone()))
                .chain(theirs.iter().cloned())
                .map(|(t, list)| format!("{} for {}", shown_list(&list), t.describe()))
                .collect();
            findings.push((
                format!("{key}.{name}"),
                format!(
                    "setup.py computes `{}`'s {name} per toolkit: {}; cuwheel's config has one list \
                     for every toolkit, so those all of them share were written: {}",
                    module.name,
                    each.join("; "),
                    shown_list(&common)
                ),
                "add the others by hand if every toolkit of the matrix accepts them, or narrow \
                 matrix.torch to the toolkits that need them"
                    .to_string(),
            ));
            *pick(module) = common;
        }
    }
    for (key, problem, fix) in findings {
        merged.find(&key, problem, fix);
    }
    merged
        .assumptions
        .extend(tabled.into_iter().map(|text| python::Note {
            at: "setup.py".into(),
            text,
        }));
}

/// Each nvcc's flags, keyed as `cuda-archs` is: by major where that
/// major's toolkits agree, else by toolkit. `None` where two evaluations
/// with one nvcc differ (two torch releases, or two GPUs), which no key of
/// the table tells apart.
fn by_toolkit<'t>(
    lists: impl Iterator<Item = (&'t Toolkit, Vec<String>)>,
) -> Option<BTreeMap<ToolkitKey, Vec<String>>> {
    let mut by_nvcc: BTreeMap<CudaVersion, Vec<String>> = BTreeMap::new();
    for (toolkit, list) in lists {
        let nvcc: CudaVersion = toolkit.nvcc.parse().ok()?;
        match by_nvcc.get(&nvcc) {
            Some(first) if *first != list => return None,
            Some(_) => {}
            None => {
                by_nvcc.insert(nvcc, list);
            }
        }
    }
    Some(keyed(&by_nvcc))
}

/// Each nvcc's value as a table keyed by toolkit: by major where that
/// major's toolkits agree, else by toolkit.
fn keyed<T: Clone + PartialEq>(by_nvcc: &BTreeMap<CudaVersion, T>) -> BTreeMap<ToolkitKey, T> {
    let mut table = BTreeMap::new();
    let majors: BTreeSet<u32> = by_nvcc.keys().map(|v| v.major).collect();
    for major in majors {
        let of_major: Vec<(&CudaVersion, &T)> =
            by_nvcc.iter().filter(|(v, _)| v.major == major).collect();
        if of_major.iter().all(|(_, value)| *value == of_major[0].1) {
            table.insert(ToolkitKey::Major(major), of_major[0].1.clone());
        } else {
            for (version, value) in of_major {
                table.insert(ToolkitKey::Version(*version), value.clone());
            }
        }
    }
    table
}

fn shown_list(list: &[String]) -> String {
    format!(
        "[{}]",
        list.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}
