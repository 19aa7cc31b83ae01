//! The extension module of one cell: `g++ -shared` of the cell's kernel
//! objects and binding object against torch's and CUDA's libraries.
//!
//! In: the cell's kernel and binding nodes, its compiler set and flavour.
//! Out: a [`Node`] writing `$out/<module file>`, named as setuptools names
//! extension modules (`_C.cpython-313-x86_64-linux-gnu.so`, `_C.abi3.so`).
//!
//! The libraries are torch's `BuildExtension` list — c10, torch, torch_cpu,
//! torch_python (not for the limited API, as it is built for one Python),
//! cudart, c10_cuda, torch_cuda — from the torch wheel's `lib/` and the CUDA
//! toolchain's `lib64/`; the linker keeps only those the module uses. No
//! RPATH is written: torch loads its own libraries and CUDA's before any
//! extension, and the audit refuses paths that leave the wheel.

use std::collections::BTreeMap;

use crate::plan::shell::quote;
use crate::plan::{Input, KernelToolchains, Node};
use crate::spec::{BindingFlavour, Config, PythonAbi};

/// Every link node's name starts with this.
pub const NAME_PREFIX: &str = "link-";

/// One cell's extension module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedModule {
    /// `link-cu130-py313`.
    pub name: String,
    pub flavour: BindingFlavour,
    /// The Python of a pybind11 module; `None` for the abi3 one.
    pub python: Option<PythonAbi>,
    pub toolchains: KernelToolchains,
    /// Kernel node name → its object file.
    pub kernels: BTreeMap<String, String>,
    /// The binding node and its object files.
    pub binding: String,
    pub binding_objects: Vec<String>,
}

impl LinkedModule {
    /// The module's file name inside its package.
    pub fn file_name(&self, config: &Config) -> String {
        let leaf = config.module.leaf();
        match self.python {
            Some(python) => format!("{leaf}.{}.so", python.extension_tag()),
            None => format!("{leaf}.abi3.so"),
        }
    }

    pub fn node(&self, config: &Config) -> Node {
        let tc = &self.toolchains;
        let mut inputs = BTreeMap::from([
            ("cuda".to_string(), Input::toolchain(&tc.cuda)),
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
        let mut libs = vec!["-lc10", "-ltorch", "-ltorch_cpu"];
        if self.flavour == BindingFlavour::Pybind11 {
            libs.push("-ltorch_python");
        }
        libs.extend(["-lc10_cuda", "-ltorch_cuda"]);
        let file = self.file_name(config);
        let mut s = format!(
            "# {}: the extension module {} ({} bindings, CUDA {}, torch {}).\n",
            self.name, file, self.flavour, tc.cuda_version, tc.torch
        );
        s += "# Written by `cuwheel plan`.\n";
        s += "mkdir -p \"$out\"\n";
        s += &format!("\"$gcc\"/bin/g++ -shared -o \"$out\"/{} \\\n", quote(&file));
        for object in &objects {
            s += &format!("  {object} \\\n");
        }
        s += &format!("  -L\"$torchLibs\"/lib {} \\\n", libs.join(" "));
        s += "  -L\"$cuda\"/lib64 -lcudart\n";
        Node {
            name: self.name.clone(),
            script: s,
            inputs,
        }
    }
}
