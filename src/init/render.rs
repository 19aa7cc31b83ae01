//! The `[tool.cuwheel]` table as TOML text, in the v2 schema.
//!
//! In: an [`Inferred`] project and the project root (to turn whole
//! directories of kernels into globs). Out: the text of `[tool.cuwheel]`
//! and its sub-tables — the single-module shorthand (`module`, `kernels`,
//! `bindings`) when one module needs nothing more, else one
//! `[[tool.cuwheel.modules]]` table per module, with the flags all modules
//! begin with lifted to the top level (module lists are appended to it).
//! What was not inferred gets cuwheel's default and a comment. The
//! `[tool.cuwheel.matrix]` table is [`super::matrix`]'s.

use std::collections::BTreeMap;
use std::path::Path;

use super::classify::Flavour;
use super::model::{Inferred, Module, VersionSource};
use crate::spec::glob::Pattern;

/// The baseline written when nothing says otherwise: the demo's, whose
/// Debian suite (bullseye: GCC 10, glibc 2.31) the toolchains support.
pub const DEFAULT_BASELINE: &str = "manylinux_2_31";
/// The archs written when setup.py sets none.
pub const DEFAULT_ARCHS: [&str; 2] = ["8.0", "9.0+PTX"];
/// A compile key every module may set and the top level may give for all:
/// its name, the module's list, and whether only CUDA modules use it.
type CompileKey = (&'static str, fn(&Module) -> &Vec<String>, bool);

const COMPILE_KEYS: [CompileKey; 4] = [
    ("include-dirs", |m| &m.include_dirs, false),
    ("defines", |m| &m.defines, false),
    ("nvcc-flags", |m| &m.nvcc_flags, true),
    ("cxx-flags", |m| &m.cxx_flags, false),
];

/// `nvcc-flags` as a table keyed by toolkit, on one line (an inline
/// table may not span lines): `default` holds what every toolkit shares.
fn nvcc_table(module: &Module) -> String {
    let mut entries = vec![format!("default = {}", one_line_array(&module.nvcc_flags))];
    entries.extend(
        module
            .nvcc_flags_by_toolkit
            .iter()
            .map(|(key, list)| format!("{} = {}", quote(&key.to_string()), one_line_array(list))),
    );
    format!("nvcc-flags = {{ {} }}", entries.join(", "))
}

/// A TOML basic string.
pub fn quote(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_string()
}

/// A TOML array of strings on one line.
fn one_line_array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| quote(i)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A TOML array of strings: one line when short, else one item per line.
pub fn array(items: &[String]) -> String {
    let one_line = one_line_array(items);
    if one_line.len() <= 80 {
        one_line
    } else {
        format!(
            "[\n{}\n]",
            items
                .iter()
                .map(|i| format!("  {},", quote(i)))
                .collect::<Vec<_>>()
                .join("\n")
        )
    }
}

/// Whether the single-module shorthand can say everything about `module`.
fn shorthand_fits(module: &Module) -> bool {
    module.cuda
        && module.undefines.is_empty()
        && module.link_flags.is_empty()
        && module.libraries.is_empty()
        && !module.strip
}

/// `csrc/k/a.cu`, `csrc/k/b.cu` → `csrc/k/*.cu` when that glob matches
/// exactly those files; other files are kept as they are.
fn globbed(files: &[String], root: &Path) -> Vec<String> {
    let mut groups: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for file in files {
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
        if let Some((_, ext)) = name.rsplit_once('.') {
            let glob = if dir.is_empty() {
                format!("*.{ext}")
            } else {
                format!("{dir}/*.{ext}")
            };
            groups.entry(glob).or_default().push(file);
        }
    }
    let mut out = Vec::new();
    let mut done: Vec<&String> = Vec::new();
    for file in files {
        if done.contains(&file) {
            continue;
        }
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
        let glob = name.rsplit_once('.').map(|(_, ext)| {
            if dir.is_empty() {
                format!("*.{ext}")
            } else {
                format!("{dir}/*.{ext}")
            }
        });
        let group = glob
            .as_ref()
            .and_then(|g| groups.get(g).map(|members| (g, members)));
        let exact = group
            .filter(|(_, members)| members.len() >= 2)
            .filter(|(g, members)| {
                Pattern::parse(g)
                    .ok()
                    .and_then(|p| p.files(root).ok())
                    .is_some_and(|found| {
                        found
                            .iter()
                            .map(|f| f.to_string_lossy().to_string())
                            .collect::<Vec<_>>()
                            == members.iter().map(|m| m.to_string()).collect::<Vec<_>>()
                    })
            });
        match exact {
            Some((glob, members)) => {
                out.push(glob.clone());
                done.extend(members.iter().copied());
            }
            None => out.push(file.clone()),
        }
    }
    out
}

/// The longest list every one of `lists` begins with.
fn common_prefix(lists: &[&Vec<String>]) -> Vec<String> {
    let Some((first, rest)) = lists.split_first() else {
        return Vec::new();
    };
    let mut len = first.len();
    for list in rest {
        len = len.min(
            first
                .iter()
                .zip(list.iter())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first[..len].to_vec()
}

/// A flavour's value in the bindings table: its sources, or `{ sources,
/// kernels }` when it has its own kernels.
fn flavour_value(module: &Module, flavour: &Flavour, files: &[String], root: &Path) -> String {
    match module.flavour_kernels.get(flavour) {
        Some(kernels) => format!(
            "{{ sources = {}, kernels = {} }}",
            array(files),
            array(&globbed(kernels, root))
        ),
        None => array(files),
    }
}

/// The bindings of a module: `bindings = [...]` with `binding = "..."` for
/// one flavour, or a table of alternatives.
fn bindings_lines(module: &Module, inline_table: bool, root: &Path) -> Vec<String> {
    let bindings = &module.bindings;
    match bindings.len() {
        0 => Vec::new(),
        1 => {
            let (flavour, files) = bindings.iter().next().expect("one flavour");
            vec![
                format!("bindings = {}", array(files)),
                format!("binding = {}", quote(flavour.as_str())),
            ]
        }
        _ if inline_table => {
            let parts: Vec<String> = bindings
                .iter()
                .map(|(f, files)| {
                    format!("{} = {}", f.as_str(), flavour_value(module, f, files, root))
                })
                .collect();
            vec![format!("bindings = {{ {} }}", parts.join(", "))]
        }
        _ => Vec::new(),
    }
}

pub fn render(inferred: &Inferred, root: &Path, origin: &str) -> String {
    let mut lines: Vec<String> = vec![
        "[tool.cuwheel]".into(),
        format!(
            "# Written by `cuwheel init` from {origin}; review what it printed as not inferred."
        ),
    ];
    let placed: Vec<Module> = inferred
        .modules
        .iter()
        .map(Module::with_own_kernels_placed)
        .collect();
    let modules = &placed;
    let single = match modules.as_slice() {
        [only] if shorthand_fits(only) => Some(only),
        _ => None,
    };
    if let Some(module) = single {
        lines.push(format!("module = {}", quote(&module.name)));
        if !module.kernels.is_empty() {
            lines.push(format!(
                "kernels = {}",
                array(&globbed(&module.kernels, root))
            ));
        }
        if module.bindings.len() == 1 {
            lines.extend(bindings_lines(module, false, root));
        }
    }
    let shown = |archs: &[crate::spec::target::CudaArch]| {
        array(&archs.iter().map(ToString::to_string).collect::<Vec<_>>())
    };
    match inferred.archs.is_empty() {
        _ if !inferred.toolkit_archs.is_empty() => {
            // setup.py computes them per toolkit: the table form.
            let entries: Vec<String> = inferred
                .toolkit_archs
                .iter()
                .map(|(key, archs)| format!("{} = {}", quote(&key.to_string()), shown(archs)))
                .collect();
            lines.push(format!("cuda-archs = {{ {} }}", entries.join(", ")));
        }
        true => {
            lines.push("# Not inferred: cuwheel's default.".into());
            lines.push(format!(
                "cuda-archs = {}",
                array(&DEFAULT_ARCHS.map(String::from))
            ));
        }
        false => lines.push(format!(
            "cuda-archs = {}",
            array(
                &inferred
                    .archs
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            )
        )),
    }
    lines.push(format!(
        "baseline = {}  # cuwheel's default: the oldest glibc the wheels run on",
        quote(DEFAULT_BASELINE)
    ));
    // Top-level compile keys: what every module begins with.
    let cuda_modules: Vec<&Module> = modules.iter().filter(|m| m.cuda).collect();
    let top = |pick: fn(&Module) -> &Vec<String>, only_cuda: bool| -> Vec<String> {
        let lists: Vec<&Vec<String>> = if only_cuda {
            cuda_modules.iter().map(|m| pick(m)).collect()
        } else {
            modules.iter().map(pick).collect()
        };
        common_prefix(&lists)
    };
    let mut lifted: BTreeMap<&str, usize> = BTreeMap::new();
    // nvcc flags setup.py computes per toolkit are a table, written whole
    // where the module is: none are lifted to the top.
    let tabled = cuda_modules
        .iter()
        .any(|m| !m.nvcc_flags_by_toolkit.is_empty());
    for (key, pick, only_cuda) in COMPILE_KEYS {
        if key == "nvcc-flags" && tabled {
            if let Some(module) = single {
                lines.push(nvcc_table(module));
            }
            lifted.insert(key, 0);
            continue;
        }
        let common = top(pick, only_cuda);
        if !common.is_empty() {
            lines.push(format!("{key} = {}", array(&common)));
        }
        lifted.insert(key, common.len());
    }
    if inferred.no_python_abi_suffix {
        lines.push(
            "no-python-abi-suffix = true  # setup.py's BuildExtension(no_python_abi_suffix=True)"
                .into(),
        );
    }
    let default_packages = single.is_some_and(|m| {
        let top_package = m.name.split('.').next().unwrap_or("");
        m.name.contains('.') && inferred.packages == [top_package.to_string()]
    });
    if !inferred.packages.is_empty() && !default_packages {
        lines.push(format!("packages = {}", array(&inferred.packages)));
    }
    if !inferred.package_include.is_empty() {
        lines.push(format!(
            "package-include = {}",
            array(&inferred.package_include)
        ));
    }
    if !inferred.package_exclude.is_empty() {
        lines.push(format!(
            "package-exclude = {}",
            array(&inferred.package_exclude)
        ));
    }
    match &inferred.meta.version {
        Some(VersionSource::File(file)) => {
            lines.push(format!("version = {{ file = {} }}", quote(file)))
        }
        Some(VersionSource::Attr(attr)) => {
            lines.push(format!("version = {{ attr = {} }}", quote(attr)))
        }
        _ => {}
    }
    if let Some(module) = single {
        if module.bindings.len() > 1 {
            lines.push(String::new());
            lines.push("[tool.cuwheel.bindings]".into());
            for (flavour, files) in &module.bindings {
                lines.push(format!(
                    "{} = {}",
                    flavour.as_str(),
                    flavour_value(module, flavour, files, root)
                ));
            }
        }
    } else {
        for module in modules {
            lines.push(String::new());
            lines.push("[[tool.cuwheel.modules]]".into());
            lines.push(format!("name = {}", quote(&module.name)));
            if !module.cuda {
                lines.push("cuda = false".into());
            }
            if !module.kernels.is_empty() {
                lines.push(format!(
                    "kernels = {}",
                    array(&globbed(&module.kernels, root))
                ));
            }
            lines.extend(bindings_lines(module, true, root));
            let rest = |key: &str, list: &Vec<String>| -> Option<String> {
                let skip = if key == "nvcc-flags" && !module.cuda {
                    list.len()
                } else {
                    lifted.get(key).copied().unwrap_or(0)
                };
                let remainder = &list[skip.min(list.len())..];
                (!remainder.is_empty()).then(|| format!("{key} = {}", array(remainder)))
            };
            for (key, pick, _) in COMPILE_KEYS {
                if key == "nvcc-flags" && !module.nvcc_flags_by_toolkit.is_empty() {
                    lines.push(nvcc_table(module));
                    continue;
                }
                lines.extend(rest(key, pick(module)));
            }
            for (key, list) in [
                ("undefines", &module.undefines),
                ("link-flags", &module.link_flags),
                ("libraries", &module.libraries),
            ] {
                if !list.is_empty() {
                    lines.push(format!("{key} = {}", array(list)));
                }
            }
            if module.strip {
                lines.push("strip = true".into());
            }
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_wrap_and_quote() {
        assert_eq!(array(&["a\"b".into()]), "['a\"b']");
        let long: Vec<String> = (0..12).map(|i| format!("csrc/file_{i}.cu")).collect();
        assert!(array(&long).starts_with("[\n  \"csrc/file_0.cu\",\n"));
    }

    #[test]
    fn prefixes_and_globs() {
        let a = vec!["-O2".to_string(), "-x".to_string()];
        let b = vec!["-O2".to_string()];
        assert_eq!(common_prefix(&[&a, &b]), ["-O2"]);
        assert!(common_prefix(&[]).is_empty());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("k")).unwrap();
        for f in ["k/a.cu", "k/b.cu", "k/c.cu", "k/x.cpp"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let all: Vec<String> = ["k/a.cu", "k/b.cu", "k/c.cu", "k/x.cpp"]
            .map(String::from)
            .to_vec();
        assert_eq!(globbed(&all, dir.path()), ["k/*.cu", "k/x.cpp"]);
        let some: Vec<String> = ["k/a.cu", "k/b.cu"].map(String::from).to_vec();
        assert_eq!(globbed(&some, dir.path()), ["k/a.cu", "k/b.cu"]);
    }
}
