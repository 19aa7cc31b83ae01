//! Kernel objects: one compile of one kernel translation unit with one
//! compiler set — nvcc for `.cu`, g++ for C++.
//!
//! In: the TU with the project headers it includes, its module and a
//! [`Compilers`] set. Out: a [`Node`] whose inputs are only the toolchains
//! (CUDA where the module uses it, gcc, the torch headers), the TU and its
//! headers — never Python — and whose script compiles `$out/<stem>.o`, so
//! every Python's cell of a compiler set links the same object. The flags
//! are torch's (see [`super::compile`]); torch's `PYBIND11_*`,
//! `Py_LIMITED_API` and `TORCH_API_INCLUDE_EXTENSION_H` defines are left
//! out: they concern Python (the last makes `<torch/torch.h>` include
//! `torch/extension.h`, and so `Python.h`), differ between binding
//! flavours, and would stop the object being shared. A flavour's kernel
//! defines (the stable ABI's `TORCH_STABLE_ONLY` and `TORCH_TARGET_VERSION`)
//! are passed: such objects are their own nodes.
//!
//! A kernel that reaches `Python.h` (directly, or through
//! `torch/extension.h`) cannot compile, since no Python headers are among
//! its inputs; its build then fails with a message naming the file and the
//! include chain the compiler printed.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::plan::compile::{Compile, define_functions, measured_then, stage_inputs};
use crate::plan::compilers::Compilers;
use crate::plan::includes::TranslationUnit;
use crate::plan::shell::{FIXED_OBSERVABLES, quote};
use crate::plan::{Node, PlanError, slash_path};
use crate::spec::config::modules::is_cuda_source;
use crate::spec::{CudaArch, Module};
use crate::store::path::sanitize_name;

pub use crate::plan::compile::gencode_flags;

/// Every kernel node's name starts with this.
pub const NAME_PREFIX: &str = "kernel-";
/// The environment variable holding the TU's store path.
pub const SOURCE_VAR: &str = "source";

/// One kernel TU compiled with one compiler set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelObject {
    /// The derivation name: `kernel-cuda130-bias_gelu`.
    pub name: String,
    /// The TU and the project headers it includes.
    pub source: TranslationUnit,
    /// The object's file name without `.o`.
    pub stem: String,
    pub compilers: Compilers,
    /// The flavour's kernel defines (empty for shared kernels).
    pub defines: Vec<String>,
}

impl KernelObject {
    /// The object file the node writes.
    pub fn object(&self) -> String {
        format!("{}.o", self.stem)
    }

    pub fn node(&self, module: &Module, archs: &[CudaArch]) -> Node {
        let compile = Compile {
            module,
            compilers: &self.compilers,
            archs,
            python: None,
            flavour_defines: self.defines.clone(),
        };
        let (inputs, files) = compile.inputs(&[&self.source], SOURCE_VAR);
        Node {
            name: self.name.clone(),
            script: self.script(&compile, &files),
            inputs,
        }
    }

    fn script(&self, compile: &Compile<'_>, files: &[(String, String)]) -> String {
        let source = slash_path(&self.source.path);
        let object = self.object();
        let cuda = is_cuda_source(&self.source.path);
        let with = match &self.compilers.cuda {
            Some(c) if cuda => format!("CUDA {} ({}), ", c.version, c.toolchain),
            Some(c) => format!("g++ with CUDA {} ({}) headers, ", c.version, c.toolchain),
            None => "g++, ".to_string(),
        };
        let archs: Vec<String> = compile.archs.iter().map(|a| a.to_string()).collect();
        let target = if cuda {
            format!(", for {}", archs.join(" "))
        } else {
            String::new()
        };
        let mut s = format!(
            "# {}: {source} with {with}torch {} headers, gcc {}{target}.\n",
            self.name, self.compilers.torch, self.compilers.gcc,
        );
        s += "# Written by `cuwheel plan`; the inputs are only these toolchains and sources.\n";
        s += FIXED_OBSERVABLES;
        s += &python_h_function(&source);
        // The TU and the headers it includes at their project paths, so that
        // `#include "..."` finds them and `__FILE__` is relative.
        s += &stage_inputs(files);
        // A kernel that reaches `Python.h` fails to compile (no Python headers
        // are among its inputs): the compiler's include chain then says how.
        let python = "if grep -q 'Python\\.h' compile.err; then python_h compile.err; fi;";
        let compile_line = if cuda {
            s += &define_functions(&compile.nvcc_function());
            measured_then(
                "nvcc_compile",
                &compile.nvcc_arguments(
                    &source,
                    &format!("{} -c -o {}", compile.gpu_code(), quote(&object)),
                ),
                python,
            )
        } else {
            s += &define_functions(&compile.cxx_function());
            measured_then(
                "cxx_compile",
                &format!("{} -o {}", quote(&source), quote(&object)),
                python,
            )
        };
        s += &compile_line;
        s += "mkdir -p \"$out\"\n";
        s += &format!("cp {} \"$out\"/\n", quote(&object));
        s
    }
}

/// The shell function that reports a kernel reaching `Python.h`, with the
/// include chain from the compiler's messages (store paths shortened).
fn python_h_function(source: &str) -> String {
    let message = format!(
        "cuwheel: kernel {source} includes Python.h (through the chain above). Kernels are \
         compiled once per compiler set and shared by every Python, so they cannot see \
         Python's headers: move the code that needs Python (torch/extension.h, pybind11, \
         Python.h) into the bindings, and include <torch/all.h> or <ATen/ATen.h> in the kernel \
         instead."
    );
    format!(
        "python_h() {{\n  \
         grep -E 'included from|^ +from |Python\\.h' \"$1\" \
         | sed -e \"s|$torchHeaders|torch/include|g\" -e \"s|${{cuda:-/nonexistent}}|cuda|g\" >&2 || true\n  \
         echo {} >&2\n  \
         exit 1\n}}\n",
        quote(&message)
    )
}

/// Each TU's object stem: its file stem, or, where two TUs share a stem,
/// its whole relative path without the extension (`/` → `-`).
pub fn unique_stems(sources: &[PathBuf]) -> Result<Vec<String>, PlanError> {
    let mut stems = Vec::new();
    for source in sources {
        if source.is_absolute()
            || source
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(PlanError::BadSource {
                path: source.display().to_string(),
                fix: "kernel patterns must match files under the project directory",
            });
        }
        let stem = source
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        stems.push(sanitize_name(&stem));
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for stem in &stems {
        *count.entry(stem).or_default() += 1;
    }
    let stems: Vec<String> = sources
        .iter()
        .zip(&stems)
        .map(|(source, stem)| {
            if count[stem.as_str()] == 1 {
                stem.clone()
            } else {
                sanitize_name(&slash_path(&source.with_extension("")).replace('/', "-"))
            }
        })
        .collect();
    let mut seen: BTreeMap<&str, &Path> = BTreeMap::new();
    for (stem, source) in stems.iter().zip(sources) {
        if let Some(first) = seen.insert(stem, source) {
            return Err(PlanError::NameClash {
                first: first.display().to_string(),
                second: source.display().to_string(),
                name: stem.clone(),
            });
        }
    }
    Ok(stems)
}
