//! The extension modules a wheel holds, and how each is compiled and
//! linked.
//!
//! In: `[tool.cuwheel]`: either the single-module shorthand (`module`,
//! `kernels`, `bindings`/`binding`, `cuda` at the top) or
//! `[[tool.cuwheel.modules]]`, one table per module; and the compile and
//! link keys, which at the top are defaults every module extends (its own
//! lists come after the top ones; its `strip` and `no-python-abi-suffix`
//! replace the top ones). Out:
//! [`Module`]s with their merged [`Compile`] and [`Link`] options, names
//! unique, or every problem with its key.
//!
//! A kernel is a translation unit that must not see Python: a `.cu` file
//! (nvcc) or a C++ file (g++) compiled once per compiler set and shared by
//! every Python. A binding sees Python and may be C++ or `.cu`. A module
//! with `cuda = false` is what torch calls a `CppExtension`: no nvcc, no
//! CUDA include directory, no CUDA library linked.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use toml::de::DeValue;

use crate::spec::config::compress::CompressMode;
use crate::spec::config::flags::{
    DEVICE_LINE_INFO_FLAGS, Define, flag, is_identifier, library, link_flag, relative_path,
    undefine,
};
use crate::spec::config::flavour::BindingFlavour;
use crate::spec::config::toolkit_flags::ToolkitFlags;
use crate::spec::document::{Field, Located, Location, Reader, Table};
use crate::spec::glob::Pattern;
use crate::spec::version::{CudaVersion, InvalidValue};
use crate::wheel::manylinux::whitelisted_sonames;
use crate::wheel::runtime_provided::runtime_provided;

/// A dotted Python module path (`demo_ext._C`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExtensionModule {
    dotted: String,
}

impl ExtensionModule {
    pub fn as_str(&self) -> &str {
        &self.dotted
    }

    /// The packages and the module name: `["demo_ext", "_C"]`.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.dotted.split('.')
    }

    /// The module's own name (`_C`): `TORCH_EXTENSION_NAME` and the stem of
    /// the shared object.
    pub fn leaf(&self) -> &str {
        self.dotted.rsplit('.').next().unwrap_or(&self.dotted)
    }

    /// The package directory inside the wheel (`demo_ext`); empty at the top.
    pub fn package_dir(&self) -> String {
        let parts: Vec<&str> = self.components().collect();
        parts[..parts.len() - 1].join("/")
    }
}

impl FromStr for ExtensionModule {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<ExtensionModule, InvalidValue> {
        let bad = text.split('.').find(|part| !is_identifier(part));
        match bad {
            None => Ok(ExtensionModule {
                dotted: text.to_string(),
            }),
            Some(part) => Err(InvalidValue::new(
                format!(
                    "`{text}` is not a dotted module path: `{part}` is not a Python identifier"
                ),
                "write package names and the module name joined by dots, like \"demo_ext._C\" \
                 (ASCII letters, digits and `_`, not starting with a digit)",
            )),
        }
    }
}

impl fmt::Display for ExtensionModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dotted)
    }
}

/// One extension module of the wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The module and where the config names it.
    pub name: Located<ExtensionModule>,
    /// `false` for a CPU-only module (torch's `CppExtension`).
    pub cuda: bool,
    /// Patterns of the kernel translation units, compiled without Python.
    pub kernels: Vec<Located<Pattern>>,
    /// The binding sources of each flavour the module has.
    pub bindings: BTreeMap<BindingFlavour, Vec<Located<PathBuf>>>,
    /// A flavour's own kernel patterns (`bindings.<flavour> = { sources,
    /// kernels }`): they replace [`Self::kernels`] in that flavour's builds.
    pub flavour_kernels: BTreeMap<BindingFlavour, Vec<Located<Pattern>>>,
    pub compile: Compile,
    pub link: Link,
}

impl Module {
    pub fn flavours(&self) -> Vec<BindingFlavour> {
        self.bindings.keys().copied().collect()
    }

    /// The kernel patterns of the module built with `flavour`'s bindings:
    /// the flavour's own when it names some, else the module's.
    pub fn kernels_for(&self, flavour: BindingFlavour) -> &[Located<Pattern>] {
        self.flavour_kernels
            .get(&flavour)
            .map_or(&self.kernels, |own| own)
    }

    /// Whether nvcc `toolkit` is asked for device line information
    /// (`-lineinfo`).
    pub fn device_line_info(&self, toolkit: CudaVersion) -> bool {
        self.compile
            .nvcc_flags
            .for_toolkit(toolkit)
            .iter()
            .any(|f| DEVICE_LINE_INFO_FLAGS.contains(&f.as_str()))
    }
}

/// What torch's `CUDAExtension` calls `include_dirs`, `define_macros`,
/// `undef_macros` and `extra_compile_args`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compile {
    /// Relative to the project.
    pub include_dirs: Vec<Located<PathBuf>>,
    pub defines: Vec<Define>,
    pub undefines: Vec<String>,
    /// `extra_compile_args["nvcc"]`, per toolkit where they differ.
    pub nvcc_flags: ToolkitFlags,
    /// `extra_compile_args["cxx"]`.
    pub cxx_flags: Vec<String>,
    /// `cuda-compress-mode`, when the config sets it (else cuwheel's
    /// [`CompressMode::DEFAULT`] where nvcc has the option).
    pub compress_mode: Option<Located<CompressMode>>,
}

impl Compile {
    /// The include directories, without their locations.
    pub fn include_paths(&self) -> Vec<PathBuf> {
        self.include_dirs.iter().map(|d| d.value.clone()).collect()
    }
}

/// `extra_link_args`, `libraries`, and whether to strip the module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    pub flags: Vec<String>,
    /// Names as `-l` takes them (`gomp`).
    pub libraries: Vec<String>,
    pub strip: bool,
    /// The module's file is `<name>.so`, without the Python ABI part
    /// (`.cpython-312-x86_64-linux-gnu`, `.abi3`): torch's
    /// `BuildExtension(no_python_abi_suffix=True)`.
    pub no_python_abi_suffix: bool,
}

/// The keys that say which module: at the top only in the shorthand.
pub(super) const SHORTHAND_KEYS: [&str; 5] = ["module", "kernels", "bindings", "binding", "cuda"];
/// Compile and link keys: defaults at the top, extended in each module.
pub(super) const BUILD_KEYS: [&str; 10] = [
    "include-dirs",
    "defines",
    "undefines",
    "nvcc-flags",
    "cuda-compress-mode",
    "cxx-flags",
    "link-flags",
    "libraries",
    "strip",
    "no-python-abi-suffix",
];

/// The keys of a `[[tool.cuwheel.modules]]` table.
fn module_keys() -> Vec<&'static str> {
    let mut keys = vec!["name"];
    keys.extend(SHORTHAND_KEYS.iter().filter(|key| **key != "module"));
    keys.extend(BUILD_KEYS);
    keys
}

/// A module's values as far as they could be read.
#[derive(Default)]
struct Parts {
    name: Option<Located<ExtensionModule>>,
    cuda: Option<bool>,
    kernels: Option<Vec<Located<Pattern>>>,
    bindings: Option<Bindings>,
    options: Option<(Compile, Link)>,
}

/// Each flavour's binding sources, and the flavours' own kernel patterns.
type Bindings = (
    BTreeMap<BindingFlavour, Vec<Located<PathBuf>>>,
    BTreeMap<BindingFlavour, Vec<Located<Pattern>>>,
);

/// The keys of a flavour's table in the table form of `bindings`.
const FLAVOUR_KEYS: [&str; 2] = ["sources", "kernels"];
/// The kernel patterns example of messages.
const KERNELS_EXAMPLE: &str = "[\"csrc/kernels/*.cu\"]";

/// The bindings' table keys: one per flavour.
pub(super) fn binding_keys() -> Vec<&'static str> {
    BindingFlavour::ALL.iter().map(|f| f.as_str()).collect()
}

impl Reader<'_> {
    /// Every module: the shorthand's one, or each `[[tool.cuwheel.modules]]`;
    /// and each module's binding flavours, when all of those could be read
    /// (the matrix needs them even where a module has other problems).
    pub(super) fn modules(
        &mut self,
        cuwheel: &Table<'_, '_>,
    ) -> (Option<Vec<Module>>, Option<Vec<Vec<BindingFlavour>>>) {
        let defaults = self.build_options(cuwheel, None);
        let parts: Vec<Parts> = match cuwheel.get("modules") {
            None => {
                let name = self
                    .required(
                        cuwheel,
                        "module",
                        "name the extension module, like module = \"demo_ext._C\", or list \
                         several in [[tool.cuwheel.modules]]",
                    )
                    .and_then(|field| self.module_name(&field));
                let mut parts = self.module(cuwheel, None);
                parts.name = name;
                parts.options = defaults.clone();
                self.check_cpu_only(&parts, cuwheel);
                vec![parts]
            }
            Some(field) => {
                for key in SHORTHAND_KEYS {
                    if let Some(top) = cuwheel.get(key) {
                        self.report(
                            &top,
                            format!("`{key}` at the top of [tool.cuwheel] goes with the single-module form"),
                            "move it into its [[tool.cuwheel.modules]] entry",
                        );
                    }
                }
                let Some(entries) = self.array(&field, "[[tool.cuwheel.modules]] tables") else {
                    return (None, None);
                };
                if entries.is_empty() {
                    self.report(
                        &field,
                        "the list of modules is empty",
                        "list at least one module",
                    );
                    return (None, None);
                }
                entries
                    .iter()
                    .map(|entry| self.module_entry(entry, defaults.as_ref()))
                    .collect()
            }
        };
        let flavours: Option<Vec<Vec<BindingFlavour>>> = parts
            .iter()
            .map(|p| {
                p.bindings
                    .as_ref()
                    .map(|(b, _)| b.keys().copied().collect())
            })
            .collect();
        let modules: Option<Vec<Module>> = parts
            .into_iter()
            .map(|p| {
                let (mut compile, link) = p.options?;
                if p.cuda == Some(false) {
                    compile.nvcc_flags = ToolkitFlags::default();
                    compile.compress_mode = None;
                }
                let (bindings, flavour_kernels) = p.bindings?;
                Some(Module {
                    name: p.name?,
                    cuda: p.cuda?,
                    kernels: p.kernels?,
                    bindings,
                    flavour_kernels,
                    compile,
                    link,
                })
            })
            .collect();
        if let Some(modules) = &modules {
            self.check_unique(modules);
        }
        (modules, flavours)
    }

    fn module_name(&mut self, field: &Field<'_, '_>) -> Option<Located<ExtensionModule>> {
        let name = self.parsed(field, "\"demo_ext._C\"")?;
        let at = self.location(&field.value.span(), &field.key);
        Some(Located { value: name, at })
    }

    fn module_entry(&mut self, entry: &Field<'_, '_>, defaults: Option<&(Compile, Link)>) -> Parts {
        let Some(table) = self.table(
            entry,
            "write each module as a [[tool.cuwheel.modules]] table with a name",
        ) else {
            return Parts::default();
        };
        self.known_keys(&table, &module_keys());
        let name = self
            .required(&table, "name", "name the module, like name = \"pkg._ops\"")
            .and_then(|field| self.module_name(&field));
        let options = match defaults {
            Some(defaults) => self.build_options(&table, Some(defaults)),
            None => {
                self.build_options(&table, None);
                None
            }
        };
        let mut parts = self.module(&table, Some(&table.key));
        parts.name = name;
        parts.options = options;
        self.check_cpu_only(&parts, &table);
        parts
    }

    /// A CPU-only module has no use for nvcc flags: its own are refused, the
    /// top-level defaults (for the CUDA modules) are left out.
    fn check_cpu_only(&mut self, parts: &Parts, table: &Table<'_, '_>) {
        if parts.cuda != Some(false) {
            return;
        }
        if let Some(field) = table.get("nvcc-flags") {
            self.report(
                &field,
                "the module has cuda = false, so nvcc never compiles it",
                "remove its nvcc-flags (flags for g++ go in cxx-flags)",
            );
        }
    }

    /// `cuda`, `kernels` and the bindings of one module's table.
    fn module(&mut self, table: &Table<'_, '_>, entry: Option<&str>) -> Parts {
        let cuda = match table.get("cuda") {
            None => Some(true),
            Some(field) => self.boolean(&field, "true"),
        };
        let kernels = match table.get("kernels") {
            None => Some(Vec::new()),
            Some(field) => self.list(&field, KERNELS_EXAMPLE, false, Pattern::parse, |a, b| {
                a == b
            }),
        };
        Parts {
            cuda,
            kernels,
            bindings: self.bindings(table, entry),
            ..Parts::default()
        }
    }

    /// The compile and link keys of `table`, after `defaults` (the top
    /// level's, for a module entry).
    fn build_options(
        &mut self,
        table: &Table<'_, '_>,
        defaults: Option<&(Compile, Link)>,
    ) -> Option<(Compile, Link)> {
        let include_dirs = match table.get("include-dirs") {
            None => Some(Vec::new()),
            Some(field) => self.list(
                &field,
                "[\"csrc/include\"]",
                false,
                relative_path,
                |a, b| a == b,
            ),
        };
        let defines = self.plain_list(
            table,
            "defines",
            "[\"WITH_CUDA\", \"BLOCK=256\"]",
            str::parse,
            |a: &Define, b| a.name == b.name,
        );
        let undefines =
            self.plain_list(table, "undefines", "[\"NDEBUG\"]", undefine, |a, b| a == b);
        let nvcc_flags = self.nvcc_flags(table);
        let cxx_flags = self.plain_list(table, "cxx-flags", "[\"-O3\"]", flag, |_, _| false);
        let compress_mode = match table.get("cuda-compress-mode") {
            None => Some(None),
            Some(field) => {
                let at = self.location(&field.value.span(), &field.key);
                self.parsed(&field, "\"size\"")
                    .map(|value| Some(Located { value, at }))
            }
        };
        let link_flags =
            self.plain_list(table, "link-flags", "[\"-fopenmp\"]", link_flag, |_, _| {
                false
            });
        let libraries = match table.get("libraries") {
            None => Some(Vec::new()),
            Some(field) => self
                .list(&field, "[\"gomp\"]", false, library, |a, b| a == b)
                .and_then(|libraries| {
                    let mut allowed = Vec::new();
                    for library in libraries {
                        match self.checked_library(&library) {
                            Some(name) => allowed.push(name),
                            None => return None,
                        }
                    }
                    Some(allowed)
                }),
        };
        let strip = match table.get("strip") {
            None => Some(defaults.is_some_and(|(_, link)| link.strip)),
            Some(field) => self.boolean(&field, "true"),
        };
        let no_abi_suffix = match table.get("no-python-abi-suffix") {
            None => Some(defaults.is_some_and(|(_, link)| link.no_python_abi_suffix)),
            Some(field) => self.boolean(&field, "true"),
        };
        let (base_compile, base_link) = defaults.cloned().unwrap_or_default();
        let mut compile = base_compile;
        compile.include_dirs.extend(include_dirs?);
        compile.defines.extend(defines?);
        compile.undefines.extend(undefines?);
        compile.nvcc_flags = compile.nvcc_flags.then(&nvcc_flags?);
        compile.cxx_flags.extend(cxx_flags?);
        if let Some(mode) = compress_mode? {
            compile.compress_mode = Some(mode);
        }
        let mut link = base_link;
        link.flags.extend(link_flags?);
        for library in libraries? {
            if !link.libraries.contains(&library) {
                link.libraries.push(library);
            }
        }
        link.strip = strip?;
        link.no_python_abi_suffix = no_abi_suffix?;
        Some((compile, link))
    }

    /// A library the audit will accept in the wheel's DT_NEEDED: one of the
    /// manylinux policies' system libraries, or one torch, CUDA or the
    /// driver provides at run time (cuwheel never bundles libraries).
    fn checked_library(&mut self, library: &Located<String>) -> Option<String> {
        let prefix = format!("lib{}.so", library.value);
        let soname_matches = |soname: &str| {
            soname == prefix
                || soname
                    .strip_prefix(&prefix)
                    .is_some_and(|v| v.starts_with('.'))
        };
        let provided = runtime_provided()
            .libraries
            .iter()
            .map(|l| l.soname.as_str())
            .chain(whitelisted_sonames())
            .any(soname_matches);
        if provided {
            return Some(library.value.clone());
        }
        self.report_location(
            library.at.clone(),
            format!(
                "lib{}.so is neither a manylinux system library nor provided by torch, CUDA or \
                 the driver at run time, so a wheel linking it would fail the audit",
                library.value
            ),
            "cuwheel does not bundle libraries into wheels: link only against what torch \
             provides (c10, torch, gomp, cudart, cublas, ...) or the system (m, dl, pthread, rt)",
        );
        None
    }

    /// `bindings` as a table of flavours, or as a list with `binding` naming
    /// its one flavour (the short form). In the table form a flavour's value
    /// is its list of sources, or a table `{ sources = [...], kernels =
    /// [...] }` whose kernels replace the module's for that flavour.
    fn bindings(&mut self, table: &Table<'_, '_>, entry: Option<&str>) -> Option<Bindings> {
        const EXAMPLE: &str = "[\"csrc/bindings.cpp\"]";
        let flavours = binding_keys();
        let quoted: Vec<String> = flavours.iter().map(|f| format!("\"{f}\"")).collect();
        let short_form_fix = format!(
            "name the flavour: binding = {}, or use the table form bindings = {{ pybind11 = [...] }} \
             with a list per flavour",
            quoted.join(" or ")
        );
        let field = self.required(
            table,
            "bindings",
            "list the binding sources: bindings = [\"csrc/bindings.cpp\"] with binding = \
             \"pybind11\", or a table with a list per flavour (pybind11, torch-library, \
             torch-stable)",
        )?;
        let binding = table.get("binding");
        let mut bindings = BTreeMap::new();
        let mut own_kernels = BTreeMap::new();
        match field.value.get_ref() {
            DeValue::Array(_) => {
                let flavour = match &binding {
                    Some(binding) => self.parsed(binding, "\"pybind11\""),
                    None => {
                        let key = match entry {
                            Some(entry) => format!("{entry}.binding"),
                            None => "tool.cuwheel.binding".to_string(),
                        };
                        let at = self.location(&field.value.span(), &key);
                        self.report_location(
                            at,
                            "`bindings` is a list but `binding` is missing",
                            short_form_fix,
                        );
                        None
                    }
                };
                let sources = self.list(&field, EXAMPLE, true, relative_path, |a, b| a == b);
                bindings.insert(flavour?, sources?);
            }
            DeValue::Table(entries) => {
                if let Some(binding) = &binding {
                    self.report(
                        binding,
                        "`binding` only goes with the list form of `bindings`",
                        "remove it; in the table form each key names its flavour",
                    );
                }
                let bindings_table = Table {
                    key: field.key.clone(),
                    span: field.value.span(),
                    entries,
                };
                self.known_keys(&bindings_table, &flavours);
                if bindings_table.entries.is_empty() {
                    self.report(
                        &field,
                        "no binding flavour is listed",
                        "add pybind11 = [\"csrc/bindings.cpp\"], torch-library = \
                         [\"csrc/ops.cpp\"] and/or torch-stable = [\"csrc/stable/ops.cpp\"]",
                    );
                    return None;
                }
                let mut complete = true;
                for flavour in BindingFlavour::ALL {
                    let Some(value) = bindings_table.get(flavour.as_str()) else {
                        continue;
                    };
                    match self.flavour_bindings(&value, flavour) {
                        Some((sources, kernels)) => {
                            bindings.insert(flavour, sources);
                            if let Some(kernels) = kernels {
                                own_kernels.insert(flavour, kernels);
                            }
                        }
                        None => complete = false,
                    }
                }
                if !complete {
                    return None;
                }
            }
            _ => {
                self.wrong_type(
                    &field,
                    "a list or a table",
                    format!("write bindings = {EXAMPLE} with binding = \"pybind11\", or a table per flavour"),
                );
                return None;
            }
        }
        Some((bindings, own_kernels))
    }

    /// One flavour's entry of the bindings table: its list of sources, or a
    /// table with `sources` and, optionally, the flavour's own `kernels`.
    #[allow(clippy::type_complexity)]
    fn flavour_bindings(
        &mut self,
        value: &Field<'_, '_>,
        flavour: BindingFlavour,
    ) -> Option<(Vec<Located<PathBuf>>, Option<Vec<Located<Pattern>>>)> {
        const EXAMPLE: &str = "[\"csrc/bindings.cpp\"]";
        let fix = format!(
            "write {flavour} = [\"csrc/ops.cpp\"], or {flavour} = {{ sources = \
             [\"csrc/ops.cpp\"], kernels = {KERNELS_EXAMPLE} }}"
        );
        match value.value.get_ref() {
            DeValue::Array(_) => {
                let sources = self.list(value, EXAMPLE, true, relative_path, |a, b| a == b)?;
                return Some((sources, None));
            }
            DeValue::Table(_) => {}
            _ => {
                self.wrong_type(value, "a list or a table", fix);
                return None;
            }
        }
        let entry = self.table(value, &fix)?;
        self.known_keys(&entry, &FLAVOUR_KEYS);
        let sources = self
            .required(
                &entry,
                "sources",
                &format!(
                    "list the {flavour} binding sources, like sources = [\"csrc/ops.cpp\"] (the \
                     Python-free ones go in kernels)"
                ),
            )
            .and_then(|field| self.list(&field, EXAMPLE, true, relative_path, |a, b| a == b));
        let kernels = match entry.get("kernels") {
            None => Some(None),
            Some(field) => self
                .list(&field, KERNELS_EXAMPLE, false, Pattern::parse, |a, b| {
                    a == b
                })
                .map(Some),
        };
        Some((sources?, kernels?))
    }

    /// Two modules with one dotted name. Two that only end the same way
    /// (`a._C`, `b._C`) are fine: each shared object lives in its own
    /// package directory, and the plan names their nodes by the whole name.
    fn check_unique(&mut self, modules: &[Module]) {
        let mut seen: BTreeMap<&str, &Location> = BTreeMap::new();
        for module in modules {
            let name = module.name.value.as_str();
            if let Some(first) = seen.insert(name, &module.name.at) {
                let first = first.key.clone();
                self.report_location(
                    module.name.at.clone(),
                    format!("the module {name} is listed twice (first at {first})"),
                    "keep one [[tool.cuwheel.modules]] table per module, or give this one \
                     its own dotted name",
                );
            }
        }
    }
}

/// Whether a source is compiled by nvcc.
pub fn is_cuda_source(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "cu")
}

/// The C++ extensions g++ compiles.
pub const CXX_EXTENSIONS: [&str; 4] = ["cpp", "cc", "cxx", "c++"];

/// Whether a source is a C++ file g++ compiles.
pub fn is_cxx_source(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| CXX_EXTENSIONS.iter().any(|x| e == *x))
}
