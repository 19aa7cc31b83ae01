//! Compiler sets: the toolchains an object is compiled with, and the part
//! of a node's name that tells sets apart.
//!
//! In: a cell's locked toolchains. Out: its [`Compilers`] — gcc, the torch
//! headers and (for CUDA modules) the CUDA toolkit — and, for a set among
//! all the plan's sets of the same kind, a short name prefix
//! (`cuda130`; `cuda130-torch211` where one CUDA is paired with several
//! torches; `torch211` for a CPU-only module's objects, which no CUDA
//! toolkit reaches and so every toolkit's cells share).

use std::collections::BTreeSet;

use crate::plan::standard::CxxStandard;
use crate::spec::CudaVersion;
use crate::store::path::sanitize_name;
use crate::wheel::Arch;

/// The toolchains one compile sees.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Compilers {
    /// The CUDA toolkit; `None` for a CPU-only module.
    pub cuda: Option<Cuda>,
    pub gcc: String,
    pub torch: String,
    /// The C++ standard torch's headers require, for that gcc (set by the
    /// torch and gcc, so it never tells sets apart by itself).
    pub cxx: CxxStandard,
    /// The target of a cross gcc (`aarch64`); `None` for the host's. Set by
    /// the gcc, so it never tells sets apart by itself either.
    pub cross: Option<Arch>,
}

/// A CUDA toolkit of the lock.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cuda {
    pub toolchain: String,
    pub version: CudaVersion,
}

impl Compilers {
    /// The same set without CUDA: what a CPU-only module compiles with.
    pub fn without_cuda(&self) -> Compilers {
        Compilers {
            cuda: None,
            ..self.clone()
        }
    }

    /// The part of a node name that tells this set from the others of
    /// `all` (CUDA sets from CUDA sets, CPU sets from CPU sets): the CUDA
    /// toolchain (or torch, for a CPU set), plus torch and gcc where they
    /// are needed to tell sets apart.
    pub fn name_prefix(&self, all: &BTreeSet<Compilers>) -> String {
        let same_kind = |other: &&Compilers| other.cuda.is_some() == self.cuda.is_some();
        let mut parts = Vec::new();
        let same_first: Vec<&Compilers> = match &self.cuda {
            Some(cuda) => {
                parts.push(cuda.toolchain.clone());
                let same: Vec<&Compilers> = all
                    .iter()
                    .filter(same_kind)
                    .filter(|o| o.cuda.as_ref().map(|c| &c.toolchain) == Some(&cuda.toolchain))
                    .collect();
                if same.iter().any(|o| o.torch != self.torch) {
                    parts.push(self.torch.clone());
                }
                same
            }
            None => {
                parts.push(self.torch.clone());
                all.iter().filter(same_kind).collect()
            }
        };
        if same_first
            .iter()
            .any(|o| o.torch == self.torch && o.gcc != self.gcc)
        {
            parts.push(self.gcc.clone());
        }
        sanitize_name(&parts.join("-"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cuda: Option<&str>, torch: &str, gcc: &str) -> Compilers {
        Compilers {
            cuda: cuda.map(|c| Cuda {
                toolchain: c.to_string(),
                version: "13.0".parse().unwrap(),
            }),
            gcc: gcc.to_string(),
            torch: torch.to_string(),
            cxx: CxxStandard {
                standard: "c++17".into(),
                gcc_major: 10,
            },
            cross: None,
        }
    }

    #[test]
    fn prefixes_add_torch_and_gcc_only_where_needed() {
        let all: BTreeSet<Compilers> = [
            set(Some("cuda130"), "torch211", "gcc-a"),
            set(Some("cuda124"), "torch29", "gcc-a"),
            set(Some("cuda124"), "torch28", "gcc-a"),
            set(Some("cuda124"), "torch28", "gcc-b"),
            set(None, "torch211", "gcc-a"),
            set(None, "torch29", "gcc-a"),
        ]
        .into();
        let names: Vec<String> = all.iter().map(|s| s.name_prefix(&all)).collect();
        assert_eq!(
            names,
            [
                "torch211",
                "torch29",
                "cuda124-torch28-gcc-a",
                "cuda124-torch29",
                "cuda124-torch28-gcc-b",
                "cuda130",
            ]
        );
    }
}
