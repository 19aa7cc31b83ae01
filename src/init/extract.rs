//! From the evaluated `setup(...)` call to the modules cuwheel builds.
//!
//! In: the project root and the [`Evaluation`] of its setup.py. Out: an
//! [`Inferred`] project — one [`Module`] per `CUDAExtension`/`CppExtension`
//! with its sources classified into kernels and bindings by what they
//! include, its include dirs, defines, flags and libraries; the archs
//! (`TORCH_CUDA_ARCH_LIST` set by setup.py, `-gencode` flags); the
//! packages and package data; and the metadata ([`metadata`](super::metadata)).
//! Whatever is unknown or has no place in the config becomes a [`Finding`]
//! quoting the setup.py line it comes from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::archs::{Archs, split_nvcc_flags};
use super::classify::{Classifier, Flavour};
use super::model::{Inferred, Module};
use super::python::{ARCH_BRANCH, Evaluation, Note, project_relative};
use super::python::{Call, Value};
use crate::spec::config::ExtensionModule;

/// The `Extension` keywords this reads; others are reported.
const READ_KEYWORDS: [&str; 13] = [
    "name",
    "sources",
    "include_dirs",
    "define_macros",
    "undef_macros",
    "extra_compile_args",
    "extra_link_args",
    "libraries",
    "library_dirs",
    "runtime_library_dirs",
    "extra_objects",
    "py_limited_api",
    "depends",
];

/// The sources cuwheel compiles: CUDA and C++ translation units.
const TU_EXTENSIONS: [&str; 4] = [".cu", ".cpp", ".cc", ".cxx"];

/// What marks a setup.py line as choosing archs.
const ARCH_HINTS: [&str; 5] = [
    "TORCH_CUDA_ARCH_LIST",
    "get_device_capability",
    "gencode",
    "generate-code",
    ARCH_BRANCH,
];

pub fn from_setup(root: &Path, evaluation: &Evaluation) -> Result<Inferred> {
    let Some(setup) = &evaluation.setup else {
        let stop = match &evaluation.raised {
            Some(at) => format!(": it stops at {at}"),
            None => String::new(),
        };
        bail!(
            "setup.py never calls setup() under cuwheel's assumptions (a CUDA build host, no \
             environment variables set){stop}; fix setup.py's flow, or run `cuwheel init \
             --ignore-setup-py` to infer the config from the source tree alone"
        );
    };
    let mut inferred = Inferred {
        assumptions: evaluation.notes.clone(),
        ..Inferred::default()
    };
    super::metadata::read(root, setup, evaluation, &mut inferred);
    let mut archs = Archs::default();
    if let Some(list) = evaluation.environ.get("TORCH_CUDA_ARCH_LIST") {
        let found = Archs::from_arch_list(list);
        archs.archs.extend(found.archs);
        archs.problems.extend(found.problems);
    }
    let mut classifier = Classifier::new(root);
    match setup.arg("ext_modules", None) {
        None => inferred.find(
            "tool.cuwheel.modules",
            format!("{}: setup() has no ext_modules", setup.at),
            "this is not an extension project as written; list its modules in [[tool.cuwheel.modules]]",
        ),
        Some(value) => match value.items() {
            Ok(items) => {
                for item in items {
                    match item {
                        Value::Extension(call) => {
                            if let Some(module) = module(root, &call, &mut classifier, &mut archs, &mut inferred)? {
                                inferred.modules.push(module);
                            }
                        }
                        other => unknown_extension(&mut inferred, &other, &setup.at),
                    }
                }
            }
            Err(_) => unknown_extension(&mut inferred, value, &setup.at),
        },
    }
    if inferred.modules.is_empty() {
        inferred.find(
            "tool.cuwheel.modules",
            format!("{}: no CUDAExtension or CppExtension could be read from ext_modules", setup.at),
            "add one [[tool.cuwheel.modules]] table per extension: name, kernels, bindings and binding",
        );
    }
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &inferred.modules {
        *names.entry(m.name.as_str()).or_default() += 1;
    }
    let twice: Vec<String> = names
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(m, _)| m.to_string())
        .collect();
    for name in twice {
        inferred.find(
            "tool.cuwheel.modules",
            format!("two extensions are both named `{name}`"),
            "give each module a unique dotted name",
        );
    }
    for problem in &archs.problems {
        inferred.find(
            "tool.cuwheel.cuda-archs",
            problem.clone(),
            "list the archs to build in cuda-archs, like [\"8.0\", \"9.0+PTX\"]",
        );
    }
    inferred.archs = archs.archs.into_iter().collect();
    if inferred.archs.is_empty() {
        // The lines where setup.py left the archs to the build machine.
        let related: Vec<String> = evaluation
            .notes
            .iter()
            .filter(|n| {
                ARCH_HINTS
                    .iter()
                    .any(|h| n.at.contains(h) || n.text.contains(h))
            })
            .map(|n| n.at.clone())
            .collect();
        let where_ = if related.is_empty() {
            String::new()
        } else {
            format!(" ({})", related.join("; "))
        };
        inferred.find(
            "tool.cuwheel.cuda-archs",
            format!(
                "setup.py sets neither TORCH_CUDA_ARCH_LIST nor -gencode flags cuwheel can read, so the archs \
                 were left to the build machine{where_}; cuwheel's default was written"
            ),
            "list the archs your users' GPUs need, like cuda-archs = [\"8.0\", \"9.0+PTX\"]",
        );
    } else {
        // Archs were read, but a branch that adds more was not taken.
        for note in evaluation
            .notes
            .iter()
            .filter(|n| n.text.contains(ARCH_BRANCH))
        {
            inferred.find(
                "tool.cuwheel.cuda-archs",
                format!(
                    "{}: setup.py chooses archs here by what cuwheel cannot evaluate (the GPU at \
                     hand, or a value it does not model; what depends on the toolkit is evaluated \
                     per toolkit); the branch not taken was left out",
                    note.at
                ),
                "add its archs if the wheels need them; cuda-archs may be a table with a list per \
                 toolkit, like { default = [\"8.0\"], \"12.8\" = [\"8.0\", \"10.0+PTX\"] }",
            );
        }
    }
    Ok(inferred)
}

fn unknown_extension(inferred: &mut Inferred, value: &Value, setup_at: &str) {
    let (why, at) = match value.as_unknown() {
        Some(u) => (u.why.clone(), u.at.clone()),
        None => (
            format!("a {}, not an extension", value.type_name()),
            setup_at.to_string(),
        ),
    };
    inferred.find(
        "tool.cuwheel.modules",
        format!("{at}: an entry of ext_modules cannot be read ({why})"),
        "add a [[tool.cuwheel.modules]] table for it: name, kernels, bindings and binding",
    );
}

/// The strings of a list-like value; what is not a known string is
/// reported under `key` and left out.
pub(super) fn strings(
    value: Option<&Value>,
    key: &str,
    at: &str,
    inferred: &mut Inferred,
) -> Vec<String> {
    let Some(value) = value else {
        return Vec::new();
    };
    let items = match value {
        Value::Str(s) => vec![Value::str(s.clone())],
        Value::None => Vec::new(),
        other => match other.items() {
            Ok(items) => items,
            Err(_) => vec![other.clone()],
        },
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_str() {
            Some(s) => out.push(s.to_string()),
            None => {
                let (why, where_) = match item.as_unknown() {
                    Some(u) => (u.why.clone(), u.at.clone()),
                    None => (format!("a {}", item.type_name()), at.to_string()),
                };
                inferred.find(
                    key,
                    format!("{where_}: a value cannot be read ({why}); it was left out"),
                    format!("add it to {key} by hand if it is needed"),
                );
            }
        }
    }
    out
}

/// A project path from setup.py, relative to the root, or a finding.
fn project_path(
    root: &Path,
    path: &str,
    key: &str,
    at: &str,
    must_exist: bool,
    inferred: &mut Inferred,
) -> Option<String> {
    match project_relative(root, path) {
        Some(rel) if !must_exist || root.join(&rel).is_file() => {
            Some(if rel.as_os_str().is_empty() {
                ".".into()
            } else {
                rel.to_string_lossy().to_string()
            })
        }
        Some(rel) => {
            inferred.find(
                key,
                format!(
                    "{at}: `{}` does not exist in the project; it was left out",
                    rel.display()
                ),
                "list the sources that exist",
            );
            None
        }
        None => {
            inferred.find(
                key,
                format!("{at}: `{path}` is outside the project (a build-host path); it was left out"),
                "cuwheel supplies the toolkit's and torch's include dirs itself; vendor anything else into the project",
            );
            None
        }
    }
}

fn module(
    root: &Path,
    call: &Call,
    classifier: &mut Classifier,
    archs: &mut Archs,
    inferred: &mut Inferred,
) -> Result<Option<Module>> {
    let at = call.at.as_str();
    let Some(name) = call
        .arg("name", Some(0))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        let why = call
            .arg("name", Some(0))
            .map_or("it has none".into(), super::python::value_why);
        inferred.find(
            "tool.cuwheel.modules",
            format!("{at}: the extension's name cannot be read ({why})"),
            "write its dotted module name in name = \"pkg._C\"",
        );
        return Ok(None);
    };
    let key = format!("tool.cuwheel.modules[{name}]");
    if let Err(e) = name.parse::<ExtensionModule>() {
        inferred.find(&key, format!("{at}: {}", e.problem), e.fix);
    }
    let mut module = Module {
        name: name.clone(),
        cuda: call.callee.ends_with("CUDAExtension"),
        ..Module::default()
    };
    if call.callee == "setuptools.Extension" {
        inferred.assumptions.push(Note {
            at: at.to_string(),
            text: format!("`{name}` is a plain setuptools Extension: built as a CppExtension (torch's headers, no CUDA)"),
        });
    }
    for (keyword, value) in &call.kwargs {
        if READ_KEYWORDS.contains(&keyword.as_str()) {
            continue;
        }
        let ignored = value
            .repr()
            .unwrap_or_else(|| super::python::value_why(value));
        inferred.find(
            &key,
            format!(
                "{at}: `{keyword}={ignored}` has no place in cuwheel's config; it was left out"
            ),
            "drop it, or add the equivalent flags to the module by hand",
        );
    }
    for keyword in ["library_dirs", "runtime_library_dirs", "extra_objects"] {
        let given = strings(call.arg(keyword, None), &key, at, inferred);
        if !given.is_empty() {
            inferred.find(&format!("{key}.link-flags"), format!("{at}: `{keyword}` = {given:?} is not carried over: the module links only torch, CUDA and the libraries named"), "vendor what it needs into the project and link it through libraries, or drop it");
        }
    }
    if call.arg("py_limited_api", None).and_then(Value::truth) == Some(true) {
        inferred.assumptions.push(Note {
            at: at.to_string(),
            text: format!("`{name}` asks for py_limited_api: its bindings' flavour decides the wheel tags in cuwheel"),
        });
    }
    for dir in strings(
        call.arg("include_dirs", None),
        &format!("{key}.include-dirs"),
        at,
        inferred,
    ) {
        let trimmed = dir.trim_end_matches('/');
        let rel = project_path(
            root,
            if trimmed.is_empty() { "/" } else { trimmed },
            &format!("{key}.include-dirs"),
            at,
            false,
            inferred,
        );
        if let Some(rel) = rel.filter(|rel| !module.include_dirs.contains(rel)) {
            module.include_dirs.push(rel);
        }
    }
    module.defines = defines(
        call.arg("define_macros", None),
        &format!("{key}.defines"),
        at,
        inferred,
    );
    module.undefines = strings(
        call.arg("undef_macros", None),
        &format!("{key}.undefines"),
        at,
        inferred,
    );
    let (cxx, nvcc) = compile_args(call.arg("extra_compile_args", None), &key, at, inferred);
    module.cxx_flags = path_flags(root, cxx, &mut module.include_dirs, &key, at, inferred);
    let nvcc = if module.cuda { nvcc } else { Vec::new() };
    let nvcc = path_flags(root, nvcc, &mut module.include_dirs, &key, at, inferred);
    let before = archs.problems.len();
    module.nvcc_flags = split_nvcc_flags(&nvcc, archs);
    for problem in archs.problems.drain(before..).collect::<Vec<_>>() {
        archs.problems.push(format!("{at}: {problem}"));
    }
    for flag in strings(
        call.arg("extra_link_args", None),
        &format!("{key}.link-flags"),
        at,
        inferred,
    ) {
        match flag.as_str() {
            "-s" | "-Wl,-s" | "-Wl,--strip-all" => module.strip = true,
            _ if flag.starts_with("-l") && flag.len() > 2 => {
                module.libraries.push(flag[2..].to_string())
            }
            _ if flag.starts_with("-L")
                || flag.starts_with("-Wl,-rpath")
                || flag.starts_with("-Wl,-R") =>
            {
                inferred.find(
                    &format!("{key}.link-flags"),
                    format!(
                        "{at}: the link flag `{flag}` names a build-host directory; it was left out"
                    ),
                    "vendor the library into the project or drop the flag",
                )
            }
            _ => module.link_flags.push(flag),
        }
    }
    module.libraries.extend(strings(
        call.arg("libraries", None),
        &format!("{key}.libraries"),
        at,
        inferred,
    ));
    let include_dirs: Vec<PathBuf> = module.include_dirs.iter().map(PathBuf::from).collect();
    let mut registering = Vec::new();
    for source in strings(
        call.arg("sources", Some(1)),
        &format!("{key}.sources"),
        at,
        inferred,
    ) {
        let Some(rel) = project_path(root, &source, &format!("{key}.kernels"), at, true, inferred)
        else {
            continue;
        };
        if !TU_EXTENSIONS.iter().any(|e| rel.ends_with(e)) {
            inferred.find(
                &format!("{key}.kernels"),
                format!("{at}: `{rel}` is neither CUDA (.cu) nor C++ (.cpp, .cc, .cxx); it was kept, but cuwheel's compiles are nvcc's and g++'s"),
                "check that it builds as C++, or drop it",
            );
        }
        if !module.cuda && rel.ends_with(".cu") {
            inferred.find(
                &key,
                format!("{at}: `{rel}` is CUDA in a CppExtension"),
                "make the module a CUDA one (cuda = true) or drop the file",
            );
        }
        let class = classifier.classify(Path::new(&rel), &include_dirs)?;
        if !module.add_source(rel.clone(), &class) && class.registers {
            registering.push((rel, class.flavour));
        }
    }
    if module.bindings.is_empty() {
        if registering.is_empty() {
            inferred.find(
                &key,
                format!("{at}: no source of `{name}` includes Python or registers ops, so none can be its binding"),
                "move the TU that defines the module (PYBIND11_MODULE, TORCH_LIBRARY or PyInit_) into bindings",
            );
        }
        for (tu, flavour) in registering {
            module.kernels.retain(|k| *k != tu);
            let flavour = flavour.unwrap_or(Flavour::TorchLibrary);
            inferred.assumptions.push(Note {
                at: at.to_string(),
                text: format!("no source of `{name}` includes Python; {tu} registers its ops, so it is the {flavour} binding"),
            });
            module.bindings.entry(flavour).or_default().push(tu);
        }
    }
    // One shared object per module: every binding gets the least portable
    // flavour among them.
    if let Some(&flavour) = module.bindings.keys().min() {
        let all: Vec<String> = module.bindings.values().flatten().cloned().collect();
        if module.bindings.len() > 1 {
            inferred.assumptions.push(Note {
                at: at.to_string(),
                text: format!("`{name}` mixes binding flavours; all its bindings are built as {flavour}, the least portable"),
            });
        }
        module.bindings = BTreeMap::from([(flavour, all)]);
    }
    Ok(Some(module))
}

/// Compile flags that name paths: `-I<dir>` in the project becomes an
/// include dir, and a flag naming a path of this machine (outside the
/// project, or the project's absolute path) is reported and left out.
fn path_flags(
    root: &Path,
    flags: Vec<String>,
    include_dirs: &mut Vec<String>,
    key: &str,
    at: &str,
    inferred: &mut Inferred,
) -> Vec<String> {
    let root_text = root.to_string_lossy().to_string();
    let mut out = Vec::new();
    let mut iter = flags.into_iter();
    while let Some(flag) = iter.next() {
        let dir = match flag.as_str() {
            "-I" | "-isystem" => iter.next(),
            _ => flag.strip_prefix("-I").map(str::to_string),
        };
        match dir {
            Some(dir) => {
                let trimmed = dir.trim_end_matches('/');
                match project_relative(root, trimmed) {
                    Some(rel) if root.join(&rel).is_dir() => {
                        let rel = rel.to_string_lossy().to_string();
                        if !include_dirs.contains(&rel) {
                            include_dirs.push(rel);
                        }
                    }
                    _ => inferred.find(
                        &format!("{key}.include-dirs"),
                        format!("{at}: the flag `{flag}` names `{dir}`, which is not a directory of the project; it was left out"),
                        "list the project's include directories in include-dirs",
                    ),
                }
            }
            None if flag.contains(&root_text) => inferred.find(
                key,
                format!("{at}: the flag `{flag}` names this machine's path of the project; it was left out"),
                "write the flag with a path relative to the project, or drop it",
            ),
            None => out.push(flag),
        }
    }
    out
}

/// `define_macros=[("NAME", None), ("X", "1")]` → `["NAME", "X=1"]`.
fn defines(value: Option<&Value>, key: &str, at: &str, inferred: &mut Inferred) -> Vec<String> {
    let Some(value) = value else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in value.items().unwrap_or_else(|_| vec![value.clone()]) {
        let pair = item.items().ok().filter(|p| p.len() == 2);
        let define = pair.as_ref().and_then(|p| {
            let name = p[0].as_str()?;
            match &p[1] {
                Value::None => Some(name.to_string()),
                v => Some(format!("{name}={}", v.to_text()?)),
            }
        });
        match define {
            Some(d) => out.push(d),
            None => inferred.find(
                key,
                format!(
                    "{at}: a define cannot be read ({}); it was left out",
                    super::python::value_why(&item)
                ),
                "add it to defines as \"NAME\" or \"NAME=value\"",
            ),
        }
    }
    out
}

/// `extra_compile_args`: a dict with `cxx` and `nvcc`, or one list for both.
fn compile_args(
    value: Option<&Value>,
    key: &str,
    at: &str,
    inferred: &mut Inferred,
) -> (Vec<String>, Vec<String>) {
    match value {
        None => (Vec::new(), Vec::new()),
        Some(Value::Dict(pairs)) => {
            let pairs = pairs.borrow().clone();
            let (mut cxx, mut nvcc) = (Vec::new(), Vec::new());
            for (k, v) in pairs {
                match k.as_str() {
                    Some("cxx") => cxx = strings(Some(&v), &format!("{key}.cxx-flags"), at, inferred),
                    Some("nvcc") => nvcc = strings(Some(&v), &format!("{key}.nvcc-flags"), at, inferred),
                    other => inferred.find(
                        key,
                        format!("{at}: extra_compile_args[{}] has no place in cuwheel's config; it was left out", other.map_or("?".into(), |o| format!("{o:?}"))),
                        "put the flags it needs in cxx-flags or nvcc-flags",
                    ),
                }
            }
            (cxx, nvcc)
        }
        Some(other) => {
            // torch passes one list to g++ and to nvcc alike; nvcc's arch
            // and host-compiler options (`-arch=compute_50`) are nvcc's
            // alone: they become archs on the nvcc side and are no g++ flag.
            let both = strings(Some(other), &format!("{key}.cxx-flags"), at, inferred);
            let cxx = split_nvcc_flags(&both, &mut Archs::default());
            (cxx, both)
        }
    }
}
