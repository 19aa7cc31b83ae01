//! The torch-library flavour: `TORCH_LIBRARY` registrations and a module
//! init that uses only Python's limited API (`Py_LIMITED_API=0x03090000`),
//! so one object per compiler set serves every Python ≥ 3.9
//! (`_C.abi3.so`, a `cp39-abi3` wheel, or a module inside any per-Python
//! wheel of the same compiler set). It is compiled against the oldest
//! Python headers of its bundle, which the limited API makes equivalent to
//! any other, and not linked with `torch_python`, which is built for one
//! Python.

use crate::plan::binding::{FlavourPlan, build_extension_libraries};
use crate::spec::{BindingFlavour, PythonAbi, TorchVersion};
use crate::wheel::Arch;

/// The limited API version of abi3 bindings: Python 3.9, the `cp39` of
/// their wheels' tag.
pub const LIMITED_API: &str = "0x03090000";

pub struct TorchLibrary;

impl FlavourPlan for TorchLibrary {
    fn flavour(&self) -> BindingFlavour {
        BindingFlavour::TorchLibrary
    }

    fn per_python(&self) -> bool {
        false
    }

    /// Without torch's `TORCH_API_INCLUDE_EXTENSION_H`, which makes
    /// `<torch/torch.h>` include pybind11: pybind11 needs more than the
    /// limited API, so a binding including `<torch/torch.h>` (torch-cluster's
    /// do) would not compile with it.
    fn defines(&self, _: TorchVersion) -> Vec<String> {
        vec![format!("-DPy_LIMITED_API={LIMITED_API}")]
    }

    fn torch_link(&self, cuda: bool) -> Vec<String> {
        build_extension_libraries(&[], cuda)
    }

    fn module_file(&self, leaf: &str, _: Option<PythonAbi>, _: Arch) -> String {
        format!("{leaf}.abi3.so")
    }
}
