//! The pybind11 flavour: a module built once per Python, for that Python
//! only (`_C.cpython-313-x86_64-linux-gnu.so` in a `cp313-cp313` wheel),
//! linked with `torch_python` as torch's `BuildExtension` links it.

use crate::plan::binding::{FlavourPlan, build_extension_libraries};
use crate::spec::{BindingFlavour, PythonAbi, TorchVersion};
use crate::wheel::Arch;

pub struct Pybind11;

impl FlavourPlan for Pybind11 {
    fn flavour(&self) -> BindingFlavour {
        BindingFlavour::Pybind11
    }

    fn per_python(&self) -> bool {
        true
    }

    /// torch's: `<torch/torch.h>` then includes `torch/extension.h`
    /// (pybind11 and torch's Python bindings), as in a `BuildExtension` build.
    fn defines(&self, _: TorchVersion) -> Vec<String> {
        vec!["-DTORCH_API_INCLUDE_EXTENSION_H".to_string()]
    }

    fn torch_link(&self, cuda: bool) -> Vec<String> {
        build_extension_libraries(&["torch_python"], cuda)
    }

    /// As setuptools names extension modules.
    fn module_file(&self, leaf: &str, python: Option<PythonAbi>, arch: Arch) -> String {
        match python {
            Some(python) => format!("{leaf}.{}.so", python.extension_tag_on(arch)),
            None => unreachable!("a pybind11 module is built for one Python"),
        }
    }
}
