//! Binding objects: a module's binding sources of one flavour compiled
//! against Python's headers — g++ for C++, nvcc for `.cu`.
//!
//! In: the binding [`TranslationUnit`]s of one module and flavour, the
//! [`Compilers`], the Python headers and the flavour's [`FlavourPlan`].
//! Out: a [`Node`] writing `$out/<stem>.o` per source.
//!
//! What differs between flavours is one module each, behind
//! [`FlavourPlan`] and listed in [`flavour_plan`]: [`pybind11`] builds per
//! Python, [`torch_library`] once per compiler set with Python's limited
//! API, [`torch_stable`] once per compiler set with the limited API and
//! torch's stable ABI (its kernels too). Adding a flavour is one module
//! there and one arm of [`flavour_plan`].

pub mod pybind11;
pub mod torch_library;
pub mod torch_stable;

use crate::plan::compile::{Compile, PythonHeaders, define_functions, measured, stage_inputs};
use crate::plan::compilers::Compilers;
use crate::plan::includes::TranslationUnit;
use crate::plan::shell::{FIXED_OBSERVABLES, quote};
use crate::plan::{Node, slash_path};
use crate::spec::config::modules::is_cuda_source;
use crate::spec::{BindingFlavour, CudaArch, Module, PythonAbi, TorchVersion};
use crate::wheel::Arch;

/// Every binding node's name starts with this.
pub const NAME_PREFIX: &str = "binding-";

/// What the plan does differently for one binding flavour.
pub trait FlavourPlan: Sync {
    fn flavour(&self) -> BindingFlavour;

    /// Whether the module is built once per Python (its wheel is
    /// `cpXY-cpXY`), or once per compiler set against one Python's headers
    /// standing for every Python (the limited API).
    fn per_python(&self) -> bool;

    /// Defines the binding sources are compiled with, built against
    /// `torch` (the oldest torch the module serves).
    fn defines(&self, torch: TorchVersion) -> Vec<String>;

    /// Defines the module's kernels are compiled with for this flavour.
    /// Empty (the default) for kernels every flavour shares; kernels with
    /// defines are their own nodes, told apart by [`Self::kernel_tag`].
    fn kernel_defines(&self, _torch: TorchVersion) -> Vec<String> {
        Vec::new()
    }

    /// The part of kernel node names (`kernel-cuda130-stable-axpby`) for
    /// kernels compiled with [`Self::kernel_defines`]; `None` when it has
    /// none.
    fn kernel_tag(&self) -> Option<&'static str> {
        None
    }

    /// The linker arguments for torch's libraries (from the torch wheel's
    /// `lib/`), for a module that uses CUDA or not; CUDA's runtime and the
    /// config's libraries follow them.
    fn torch_link(&self, cuda: bool) -> Vec<String>;

    /// The module's file name inside its package, for `python` (`Some`
    /// exactly when [`Self::per_python`]).
    fn module_file(&self, leaf: &str, python: Option<PythonAbi>, arch: Arch) -> String;

    /// The part of node names that says which Python: `py313`, or `abi3`
    /// (`stable` for the stable ABI, so its nodes never meet a
    /// torch-library module's of the same compiler set).
    fn python_part(&self, python: Option<PythonAbi>) -> String {
        match python {
            Some(python) if self.per_python() => python.label(),
            _ => "abi3".to_string(),
        }
    }
}

/// The plan of each flavour.
pub fn flavour_plan(flavour: BindingFlavour) -> &'static dyn FlavourPlan {
    match flavour {
        BindingFlavour::Pybind11 => &pybind11::Pybind11,
        BindingFlavour::TorchLibrary => &torch_library::TorchLibrary,
        BindingFlavour::TorchStable => &torch_stable::TorchStable,
    }
}

/// torch's `BuildExtension` libraries: c10, torch, torch_cpu, `extra`
/// (torch_python for pybind11), and for a CUDA module c10_cuda and
/// torch_cuda.
pub fn build_extension_libraries(extra: &[&str], cuda: bool) -> Vec<String> {
    let mut libs: Vec<&str> = vec!["c10", "torch", "torch_cpu"];
    libs.extend(extra);
    if cuda {
        libs.extend(["c10_cuda", "torch_cuda"]);
    }
    libs.iter().map(|lib| format!("-l{lib}")).collect()
}

/// One module's binding sources of one flavour, compiled for one Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingObject {
    /// The derivation name: `binding-cuda130-py313`, `binding-cuda130-abi3`.
    pub name: String,
    pub flavour: BindingFlavour,
    /// The torch it is built against: the stable ABI's target.
    pub torch: TorchVersion,
    pub sources: Vec<TranslationUnit>,
    /// Each source's object stem ([`super::kernel::unique_stems`]).
    pub stems: Vec<String>,
    pub compilers: Compilers,
    pub python: PythonHeaders,
}

impl BindingObject {
    /// The object file each source becomes, in order.
    pub fn objects(&self) -> Vec<String> {
        self.stems.iter().map(|stem| format!("{stem}.o")).collect()
    }

    pub fn node(&self, module: &Module, archs: &[CudaArch]) -> Node {
        let compile = Compile {
            module,
            compilers: &self.compilers,
            archs,
            python: Some(&self.python),
            flavour_defines: flavour_plan(self.flavour).defines(self.torch),
        };
        let units: Vec<&TranslationUnit> = self.sources.iter().collect();
        let (inputs, files) = compile.inputs(&units, "source0");
        Node {
            name: self.name.clone(),
            script: self.script(&compile, &files),
            inputs,
        }
    }

    fn script(&self, compile: &Compile<'_>, files: &[(String, String)]) -> String {
        let cuda = match &self.compilers.cuda {
            Some(cuda) => format!(", CUDA {} ({})", cuda.version, cuda.toolchain),
            None => String::new(),
        };
        let mut s = format!(
            "# {}: the {} bindings with Python {} headers ({}), torch {} headers{cuda}, gcc {}.\n",
            self.name,
            self.flavour,
            self.python.version,
            self.python.toolchain,
            self.compilers.torch,
            self.compilers.gcc,
        );
        s += "# Written by `cuwheel plan`.\n";
        s += FIXED_OBSERVABLES;
        s += &stage_inputs(files);
        let any_cu = self.sources.iter().any(|tu| is_cuda_source(&tu.path));
        let any_cxx = self.sources.iter().any(|tu| !is_cuda_source(&tu.path));
        let mut functions = String::new();
        if any_cxx {
            functions += &compile.cxx_function();
        }
        if any_cu {
            functions += &compile.nvcc_function();
        }
        s += &define_functions(&functions);
        s += "mkdir -p \"$out\"\n";
        for (tu, object) in self.sources.iter().zip(self.objects()) {
            let source = slash_path(&tu.path);
            if is_cuda_source(&tu.path) {
                // -objtemp keeps nvcc's intermediates beside the object: not in $out.
                let rest = format!("{} -c -o {}", compile.gpu_code(), quote(&object));
                s += &measured("nvcc_compile", &compile.nvcc_arguments(&source, &rest));
                s += &format!("cp {} \"$out\"/\n", quote(&object));
            } else {
                s += &measured(
                    "cxx_compile",
                    &format!("{} -o \"$out\"/{}", quote(&source), quote(&object)),
                );
            }
        }
        s
    }
}
