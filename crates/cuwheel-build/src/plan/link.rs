//! One extension module: `g++ -shared` of its kernel objects and binding
//! objects against torch's (and CUDA's) libraries.
//!
//! In: the module's kernel and binding nodes, its compiler set, flavour and
//! link options. Out: a [`Node`] writing `$out/<module file>`, named as the
//! flavour names it (`_C.cpython-313-x86_64-linux-gnu.so`, `_C.abi3.so`).
//!
//! The torch libraries are the flavour's ([`FlavourPlan::torch_link`]):
//! torch's `BuildExtension` list — c10, torch, torch_cpu, torch_python for
//! pybind11, and for a CUDA module c10_cuda and torch_cuda — or, for the
//! stable ABI, only torch_cpu and torch_cuda with `--as-needed`; then
//! cudart for a CUDA module; from the torch wheel's `lib/` and the CUDA
//! toolchain's `lib64/`.
//! Then the config's link flags and libraries (`-fopenmp`, `-lgomp`), and
//! `-s` when the module is stripped. No RPATH is written: torch loads its
//! own libraries and CUDA's before any extension, and the audit refuses
//! paths that leave the wheel.

use crate::wheel::Arch;
use std::collections::BTreeMap;

#[cfg(doc)]
use crate::plan::binding::FlavourPlan;
use crate::plan::binding::flavour_plan;
use crate::plan::compilers::Compilers;
use crate::plan::shell::{FIXED_OBSERVABLES, quote};
use crate::plan::{Input, Node};
use crate::spec::{BindingFlavour, Module, PythonAbi};

/// Every link node's name starts with this.
pub const NAME_PREFIX: &str = "link-";

/// One extension module, linked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedModule {
    /// `link-cu130-py313`, or `link-_cpu-torch211-abi3` where cells share it.
    pub name: String,
    /// The flavour its bindings are (which may be more portable than the
    /// cell's).
    pub flavour: BindingFlavour,
    /// The Python of a per-Python module; `None` for an abi3 one.
    pub python: Option<PythonAbi>,
    /// The architecture it is linked for.
    pub arch: Arch,
    pub compilers: Compilers,
    /// Kernel node name → its object file.
    pub kernels: BTreeMap<String, String>,
    /// The binding node and its object files.
    pub binding: String,
    pub binding_objects: Vec<String>,
}

impl LinkedModule {
    /// The module's file name inside its package: as its flavour names it,
    /// or `<name>.so` under `no-python-abi-suffix`.
    pub fn file_name(&self, module: &Module) -> String {
        let leaf = module.name.value.leaf();
        if module.link.no_python_abi_suffix {
            return format!("{leaf}.so");
        }
        flavour_plan(self.flavour).module_file(leaf, self.python, self.arch)
    }

    pub fn node(&self, module: &Module) -> Node {
        let tc = &self.compilers;
        let mut inputs = BTreeMap::from([
            ("gcc".to_string(), Input::toolchain(&tc.gcc)),
            (
                "torchLibs".to_string(),
                Input::Toolchain {
                    toolchain: tc.torch.clone(),
                    output: Some("libs".into()),
                },
            ),
            (
                "binding".to_string(),
                Input::Node {
                    node: self.binding.clone(),
                },
            ),
        ]);
        if let Some(cuda) = &tc.cuda {
            inputs.insert("cuda".to_string(), Input::toolchain(&cuda.toolchain));
        }
        let mut objects: Vec<String> = self
            .binding_objects
            .iter()
            .map(|o| format!("\"$binding\"/{}", quote(o)))
            .collect();
        for (i, (node, object)) in self.kernels.iter().enumerate() {
            let var = format!("kernel{i}");
            objects.push(format!("\"${var}\"/{}", quote(object)));
            inputs.insert(var, Input::Node { node: node.clone() });
        }
        let libs = flavour_plan(self.flavour).torch_link(tc.cuda.is_some());
        let link = &module.link;
        let file = self.file_name(module);
        let toolkit = match &tc.cuda {
            Some(cuda) => format!("CUDA {}", cuda.version),
            None => "no CUDA".to_string(),
        };
        let mut s = format!(
            "# {}: the extension module {} ({} bindings, {toolkit}, torch {}).\n",
            self.name, file, self.flavour, tc.torch
        );
        s += "# Written by `cuwheel plan`.\n";
        s += FIXED_OBSERVABLES;
        s += "mkdir -p \"$out\"\n";
        s += &format!("\"$gcc\"/bin/g++ -shared -o \"$out\"/{} \\\n", quote(&file));
        for object in &objects {
            s += &format!("  {object} \\\n");
        }
        for flag in &link.flags {
            s += &format!("  {} \\\n", quote(flag));
        }
        let mut tail = vec![format!("-L\"$torchLibs\"/lib {}", libs.join(" "))];
        if tc.cuda.is_some() {
            tail.push("-L\"$cuda\"/lib64 -lcudart".into());
        }
        let own: Vec<String> = link
            .libraries
            .iter()
            .map(|l| quote(&format!("-l{l}")))
            .collect();
        if !own.is_empty() {
            tail.push(own.join(" "));
        }
        if link.strip {
            tail.push("-s".into());
        } else if self.arch == Arch::Aarch64 {
            // aarch64's crti.o and crtn.o carry mapping symbols ($x, $d),
            // local symbols for which ld writes a FILE symbol naming each
            // object by the path gcc gave it: the cross root's store path.
            // Local symbols are no part of loading; leaving them out keeps
            // the build machine's paths out of the module.
            tail.push("-Wl,--discard-all".into());
        }
        s += &format!("  {}\n", tail.join(" \\\n  "));
        Node {
            name: self.name.clone(),
            script: s,
            inputs,
        }
    }
}
