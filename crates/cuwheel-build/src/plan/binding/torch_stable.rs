//! The torch-stable flavour: `STABLE_TORCH_LIBRARY` registrations on
//! torch's stable ABI and a module init on Python's limited API, so one
//! object per compiler set serves every Python ≥ 3.9 and every torch from
//! its target on (`_C.abi3.so` in a `cp39-abi3` wheel per CUDA major).
//!
//! Its bindings and its kernels (which call torch through the stable C
//! shim too) are compiled with `TORCH_STABLE_ONLY` (torch's headers then
//! refuse anything outside the stable API) and `TORCH_TARGET_VERSION` =
//! the torch they are built against, the oldest their wheel claims
//! (pytorch `docs/source/notes/libtorch_stable_abi.md`). The module links
//! only `torch_cpu` (the shim's `aoti_torch_*` and `torch_*` functions)
//! and `torch_cuda` (its CUDA stream functions), with `--as-needed`: never
//! c10 or libtorch's C++ API, whose symbols change between releases.

use crate::plan::binding::FlavourPlan;
use crate::plan::binding::torch_library::LIMITED_API;
use crate::spec::{BindingFlavour, PythonAbi, TorchVersion};
use crate::wheel::Arch;

/// The stable-ABI defines, for a build against `torch`.
pub fn stable_abi_defines(torch: TorchVersion) -> Vec<String> {
    vec![
        "-DTORCH_STABLE_ONLY".to_string(),
        format!("-DTORCH_TARGET_VERSION={}", target_version(torch)),
    ]
}

/// `TORCH_TARGET_VERSION` for `torch` as `torch/headeronly/version.h`
/// encodes versions: the major in the top byte, the minor in the next, the
/// rest zero (2.11 → `0x020b000000000000`).
pub fn target_version(torch: TorchVersion) -> String {
    format!("0x{:02x}{:02x}000000000000", torch.major, torch.minor)
}

pub struct TorchStable;

impl FlavourPlan for TorchStable {
    fn flavour(&self) -> BindingFlavour {
        BindingFlavour::TorchStable
    }

    fn per_python(&self) -> bool {
        false
    }

    fn defines(&self, torch: TorchVersion) -> Vec<String> {
        let mut defines = vec![format!("-DPy_LIMITED_API={LIMITED_API}")];
        defines.extend(stable_abi_defines(torch));
        defines
    }

    fn kernel_defines(&self, torch: TorchVersion) -> Vec<String> {
        stable_abi_defines(torch)
    }

    fn kernel_tag(&self) -> Option<&'static str> {
        Some("stable")
    }

    fn torch_link(&self, cuda: bool) -> Vec<String> {
        let mut args = vec!["-Wl,--as-needed".to_string(), "-ltorch_cpu".to_string()];
        if cuda {
            args.push("-ltorch_cuda".to_string());
        }
        args
    }

    fn module_file(&self, leaf: &str, _: Option<PythonAbi>, _: Arch) -> String {
        format!("{leaf}.abi3.so")
    }

    fn python_part(&self, _: Option<PythonAbi>) -> String {
        "stable".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_version_encodes_major_and_minor_in_the_top_bytes() {
        assert_eq!(
            target_version("2.11".parse().unwrap()),
            "0x020b000000000000"
        );
        assert_eq!(
            target_version("2.10".parse().unwrap()),
            "0x020a000000000000"
        );
        assert_eq!(
            TorchStable.defines("2.11".parse().unwrap()),
            [
                "-DPy_LIMITED_API=0x03090000",
                "-DTORCH_STABLE_ONLY",
                "-DTORCH_TARGET_VERSION=0x020b000000000000"
            ]
        );
    }

    #[test]
    fn the_stable_module_links_no_c10_and_no_libtorch() {
        let args = TorchStable.torch_link(true);
        assert_eq!(args, ["-Wl,--as-needed", "-ltorch_cpu", "-ltorch_cuda"]);
    }
}
