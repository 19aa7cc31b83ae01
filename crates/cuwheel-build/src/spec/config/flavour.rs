//! Binding flavours: how a module's Python entry points are compiled, and
//! which flavours can stand in for which.
//!
//! In: a flavour's name as the config writes it. Out: a [`BindingFlavour`],
//! its portability order, and for a set of modules the flavours their
//! wheels (cells) can have. What each flavour compiles is the plan's
//! (`crates/cuwheel-build/src/plan/binding/`, one module per flavour); adding a flavour is one
//! variant here, one entry in [`BindingFlavour::ALL`] and one plan module.

use std::fmt;
use std::str::FromStr;

use crate::spec::version::InvalidValue;

/// How a module's binding sources are compiled; serialised by its name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum BindingFlavour {
    /// pybind11 module: built once per Python (`cp313-cp313`).
    Pybind11,
    /// `TORCH_LIBRARY` registrations, Python's limited API: one `cp39-abi3`
    /// wheel per CUDA × torch.
    TorchLibrary,
    /// torch's stable ABI (`STABLE_TORCH_LIBRARY`, `TORCH_STABLE_ONLY`,
    /// `TORCH_TARGET_VERSION`) and Python's limited API: one `cp39-abi3`
    /// wheel per CUDA major for every torch from the oldest of its range on.
    TorchStable,
}

impl BindingFlavour {
    /// Every flavour, least portable first.
    pub const ALL: [BindingFlavour; 3] = [
        BindingFlavour::Pybind11,
        BindingFlavour::TorchLibrary,
        BindingFlavour::TorchStable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BindingFlavour::Pybind11 => "pybind11",
            BindingFlavour::TorchLibrary => "torch-library",
            BindingFlavour::TorchStable => "torch-stable",
        }
    }

    /// Whether a wheel of this flavour claims torch's stable ABI (one binary
    /// for a range of torch releases): its audit then checks that it binds
    /// to nothing of torch's beyond the stable C shim.
    pub fn stable_abi(self) -> bool {
        match self {
            BindingFlavour::Pybind11 | BindingFlavour::TorchLibrary => false,
            BindingFlavour::TorchStable => true,
        }
    }

    /// Higher is more portable: a module whose bindings are of a more
    /// portable flavour than a wheel's can go into that wheel as it is
    /// (an abi3 module imports in any CPython ≥ 3.9; a stable-ABI module
    /// loads in any torch from its target on).
    pub fn portability(self) -> u8 {
        match self {
            BindingFlavour::Pybind11 => 0,
            BindingFlavour::TorchLibrary => 1,
            BindingFlavour::TorchStable => 2,
        }
    }

    /// The flavour a module built for a wheel of flavour `cell` uses, given
    /// the flavours it has bindings for: `cell` itself, else the least
    /// portable of those more portable than `cell`; `None` when it has none.
    pub fn serving(cell: BindingFlavour, has: &[BindingFlavour]) -> Option<BindingFlavour> {
        if has.contains(&cell) {
            return Some(cell);
        }
        has.iter()
            .copied()
            .filter(|flavour| flavour.portability() > cell.portability())
            .min_by_key(|flavour| flavour.portability())
    }

    /// The flavours of the wheels a project builds: each flavour some
    /// module has, if every module can serve it (see [`Self::serving`]).
    /// Sorted; never empty when every module has a flavour (the least
    /// portable flavour any module has is served by all).
    pub fn of_wheels(modules: &[Vec<BindingFlavour>]) -> Vec<BindingFlavour> {
        BindingFlavour::ALL
            .into_iter()
            .filter(|flavour| modules.iter().any(|has| has.contains(flavour)))
            .filter(|flavour| {
                modules
                    .iter()
                    .all(|has| BindingFlavour::serving(*flavour, has).is_some())
            })
            .collect()
    }
}

impl fmt::Display for BindingFlavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BindingFlavour {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<BindingFlavour, InvalidValue> {
        BindingFlavour::ALL
            .into_iter()
            .find(|flavour| flavour.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<String> = BindingFlavour::ALL
                    .iter()
                    .map(|flavour| format!("\"{flavour}\""))
                    .collect();
                InvalidValue::new(
                    format!("`{text}` is not a binding flavour"),
                    format!("write one of {}", names.join(", ")),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BindingFlavour::{Pybind11, TorchLibrary, TorchStable};

    #[test]
    fn a_module_serves_its_own_flavour_or_a_more_portable_one() {
        assert_eq!(
            BindingFlavour::serving(Pybind11, &[Pybind11, TorchLibrary]),
            Some(Pybind11)
        );
        assert_eq!(
            BindingFlavour::serving(Pybind11, &[TorchLibrary]),
            Some(TorchLibrary)
        );
        assert_eq!(BindingFlavour::serving(TorchLibrary, &[Pybind11]), None);
        // torch-stable is the most portable: it serves every other flavour's
        // wheels, the nearest more portable flavour first.
        assert_eq!(
            BindingFlavour::serving(Pybind11, &[TorchStable, TorchLibrary]),
            Some(TorchLibrary)
        );
        assert_eq!(
            BindingFlavour::serving(TorchLibrary, &[TorchStable]),
            Some(TorchStable)
        );
        assert_eq!(
            BindingFlavour::serving(TorchStable, &[Pybind11, TorchLibrary]),
            None
        );
    }

    #[test]
    fn wheel_flavours_are_those_every_module_can_serve() {
        // The demo: one module with both.
        assert_eq!(
            BindingFlavour::of_wheels(&[vec![Pybind11, TorchLibrary]]),
            [Pybind11, TorchLibrary]
        );
        // A pybind11 module beside a torch-library one: per-Python wheels only.
        assert_eq!(
            BindingFlavour::of_wheels(&[vec![Pybind11], vec![TorchLibrary]]),
            [Pybind11]
        );
        // Only torch-library modules: abi3 wheels only, no per-Python copies.
        assert_eq!(
            BindingFlavour::of_wheels(&[vec![TorchLibrary], vec![TorchLibrary]]),
            [TorchLibrary]
        );
        // The demo today: all three flavours.
        assert_eq!(
            BindingFlavour::of_wheels(&[vec![Pybind11, TorchLibrary, TorchStable]]),
            [Pybind11, TorchLibrary, TorchStable]
        );
        // A torch-stable module beside a torch-library one: no stable wheel.
        assert_eq!(
            BindingFlavour::of_wheels(&[vec![TorchStable], vec![TorchLibrary]]),
            [TorchLibrary]
        );
    }

    #[test]
    fn unknown_flavours_list_the_known_ones() {
        let error = "pybind".parse::<BindingFlavour>().unwrap_err();
        for flavour in BindingFlavour::ALL {
            let json = serde_json::to_string(&flavour).unwrap();
            assert_eq!(json, format!("\"{flavour}\""));
        }
        assert!(
            error
                .to_string()
                .contains("\"pybind11\", \"torch-library\", \"torch-stable\""),
            "{error}"
        );
    }
}
