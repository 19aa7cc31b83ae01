//! Binding objects: the project's binding sources compiled with `g++ -c`
//! against one Python's headers.
//!
//! In: the binding [`TranslationUnit`]s of one flavour, the compiler set
//! ([`KernelToolchains`]), the Python headers toolchain and the config's
//! compiler inputs. Out: a [`Node`] writing `$out/<stem>.o` per source.
//!
//! A pybind11 binding is compiled once per Python; a torch-library binding
//! once per compiler set, with `Py_LIMITED_API=0x03090000` so that it uses
//! only the stable ABI of Python 3.9 (its wheel is `cp39-abi3`) — against
//! the oldest Python headers of its bundle, which the limited API makes
//! equivalent to any other.
//!
//! The flags follow torch's `BuildExtension` for C++ sources: `-fPIC`,
//! `-std=` of torch's standard ([`super::standard`]) unless the config sets one, torch's two include
//! directories, the CUDA and Python include directories,
//! `TORCH_API_INCLUDE_EXTENSION_H`, `TORCH_EXTENSION_NAME` and
//! `_GLIBCXX_USE_CXX11_ABI=1`. torch's `PYBIND11_COMPILER_TYPE`, `_STDLIB`
//! and `_BUILD_ABI` defines are not passed: both torch releases built here
//! ship pybind11 3, whose headers derive the ABI id (`system_libstdcpp_
//! gxx_abi_1xxx_use_cxx11_abi_1`, as in their `libtorch_python.so`) from the
//! compiler and ignore those macros. `-O2` stands for the optimisation
//! setuptools takes from Python's own flags; the config's `cxx-flags` come
//! after it and win.

use std::collections::BTreeSet;

use crate::plan::kernel::{
    add_sources, compiler_inputs, include_inputs, input_files, prefix_maps, slash_path, stage_files,
};
use crate::plan::shell::{quote, var_then};
use crate::plan::{Input, KernelToolchains, Node, TranslationUnit};
use crate::spec::{BindingFlavour, Config, PythonAbi};

/// Every binding node's name starts with this.
pub const NAME_PREFIX: &str = "binding-";

/// The limited API version of abi3 bindings: Python 3.9, the `cp39` of
/// their wheels' tag.
pub const LIMITED_API: &str = "0x03090000";

/// The binding sources of one flavour compiled for one Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingObject {
    /// The derivation name: `binding-cuda130-py313`, `binding-cuda130-abi3`.
    pub name: String,
    pub flavour: BindingFlavour,
    pub sources: Vec<TranslationUnit>,
    /// Each source's object stem ([`super::kernel::unique_stems`]).
    pub stems: Vec<String>,
    pub toolchains: KernelToolchains,
    /// The Python headers toolchain and its build.
    pub python: String,
    pub python_version: PythonAbi,
}

impl BindingObject {
    /// The object file each source becomes, in order.
    pub fn objects(&self) -> Vec<String> {
        self.stems.iter().map(|stem| format!("{stem}.o")).collect()
    }

    pub fn node(&self, config: &Config) -> Node {
        let mut inputs = compiler_inputs(&self.toolchains);
        inputs.insert("python".to_string(), Input::toolchain(&self.python));
        let includes = include_inputs(config);
        let mut files: Vec<(String, String)> = Vec::new();
        for (i, tu) in self.sources.iter().enumerate() {
            files.push((format!("source{i}"), slash_path(&tu.path)));
        }
        let headers: BTreeSet<String> = self
            .sources
            .iter()
            .flat_map(|tu| tu.headers.iter().map(|h| slash_path(h)))
            .collect();
        for (i, header) in headers.into_iter().enumerate() {
            files.push((format!("header{i}"), header));
        }
        add_sources(&mut inputs, includes.iter().chain(&files));
        Node {
            name: self.name.clone(),
            script: self.script(config, &includes, &files),
            inputs,
        }
    }

    fn script(
        &self,
        config: &Config,
        includes: &[(String, String)],
        files: &[(String, String)],
    ) -> String {
        let python_include = format!("/include/{}", self.python_version.include_dir());
        let mut flags: Vec<String> = vec!["-fPIC".into(), "-O2".into()];
        if !config.cxx_flags.iter().any(|f| f.starts_with("-std")) {
            let cxx = &self.toolchains.cxx;
            flags.push(cxx.std_flag());
            flags.extend(cxx.host_defines());
        }
        for (var, _) in includes {
            flags.push(format!("-I{}", var_then(var, "")));
        }
        for (var, dir) in [
            ("torchHeaders", ""),
            ("torchHeaders", "/torch/csrc/api/include"),
            ("cuda", "/include"),
            ("python", python_include.as_str()),
        ] {
            flags.push(format!("-isystem {}", var_then(var, dir)));
        }
        flags.push("-DTORCH_API_INCLUDE_EXTENSION_H".into());
        flags.push(quote(&format!(
            "-DTORCH_EXTENSION_NAME={}",
            config.module.leaf()
        )));
        flags.push("-D_GLIBCXX_USE_CXX11_ABI=1".into());
        if self.flavour == BindingFlavour::TorchLibrary {
            flags.push(format!("-DPy_LIMITED_API={LIMITED_API}"));
        }
        flags.extend(config.defines.iter().map(|d| quote(&format!("-D{d}"))));
        flags.extend(config.cxx_flags.iter().map(|f| quote(f)));
        flags.extend(prefix_maps(
            &[("cuda", "cuda"), ("gcc", "gcc"), ("python", "python")],
            includes,
        ));

        let mut s = format!(
            "# {}: the {} bindings with Python {} headers ({}), torch {} headers, CUDA {} ({}), \
             gcc {}.\n",
            self.name,
            self.flavour,
            self.python_version,
            self.python,
            self.toolchains.torch,
            self.toolchains.cuda_version,
            self.toolchains.cuda,
            self.toolchains.gcc,
        );
        s += "# Written by `cuwheel plan`.\n";
        s += &stage_files(&input_files(files));
        s += "set -- \\\n";
        for flag in &flags {
            s += &format!("  {flag} \\\n");
        }
        s += "  -c\n";
        s += "mkdir -p \"$out\"\n";
        for ((_, path), object) in files.iter().zip(self.objects()) {
            s += &format!(
                "\"$gcc\"/bin/g++ \"$@\" {} -o \"$out\"/{}\n",
                quote(path),
                quote(&object)
            );
        }
        s
    }
}
