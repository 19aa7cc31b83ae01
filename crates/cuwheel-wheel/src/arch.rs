//! The CPU architectures cuwheel's wheels are for, and how each is spelled
//! where it shows: the platform tag's suffix, the ELF header's machine
//! number, and Debian's and CPython's multiarch triplet.
//!
//! In: a platform tag (`manylinux_2_28_aarch64`), an ELF `e_machine`, or a
//! name (`aarch64`). Out: an [`Arch`]. Pure: no I/O.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An architecture a wheel's compiled files run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Arch {
    /// `x86_64` (ELF machine 62, `EM_X86_64`).
    #[serde(rename = "x86_64")]
    X86_64,
    /// `aarch64`, 64-bit ARM such as NVIDIA Grace (ELF machine 183,
    /// `EM_AARCH64`).
    #[serde(rename = "aarch64")]
    Aarch64,
}

impl Arch {
    /// Every architecture, in the order reports list them.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// As platform tags spell it: `x86_64`, `aarch64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The ELF header's `e_machine` of this architecture's files.
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::X86_64 => 62,
            Arch::Aarch64 => 183,
        }
    }

    /// The architecture of ELF machine number `machine`, if cuwheel knows it.
    pub fn of_elf_machine(machine: u16) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.elf_machine() == machine)
    }

    /// Debian's and CPython's multiarch triplet: `aarch64-linux-gnu`, the
    /// middle of `_C.cpython-312-aarch64-linux-gnu.so`.
    pub fn multiarch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-linux-gnu",
            Arch::Aarch64 => "aarch64-linux-gnu",
        }
    }

    /// Debian's name of the architecture (`amd64`, `arm64`): its packages'
    /// `Architecture` and the suffix of their file names.
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The architecture a platform tag ends in (`manylinux_2_28_aarch64`,
    /// `linux_x86_64`); `None` for `any` and architectures cuwheel does
    /// not build for.
    pub fn of_platform_tag(tag: &str) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .find(|arch| arch.strip_from_tag(tag).is_some())
    }

    /// A platform tag's name without its architecture: `manylinux_2_28`
    /// for `manylinux_2_28_aarch64`.
    pub fn strip_from_tag(self, tag: &str) -> Option<&str> {
        tag.strip_suffix(self.as_str())?.strip_suffix('_')
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Arch {
    type Err = String;

    fn from_str(text: &str) -> Result<Arch, String> {
        Arch::ALL
            .into_iter()
            .find(|a| a.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "`{text}` is not an architecture cuwheel builds for: use {}",
                    Arch::ALL.map(|a| format!("`{a}`")).join(" or ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_tags_name_their_architecture() {
        assert_eq!(
            Arch::of_platform_tag("manylinux_2_28_aarch64"),
            Some(Arch::Aarch64)
        );
        assert_eq!(
            Arch::of_platform_tag("manylinux2014_x86_64"),
            Some(Arch::X86_64)
        );
        assert_eq!(Arch::of_platform_tag("linux_x86_64"), Some(Arch::X86_64));
        assert_eq!(Arch::of_platform_tag("any"), None);
        assert_eq!(Arch::of_platform_tag("x86_64"), None);
        assert_eq!(Arch::of_platform_tag("manylinux_2_17_ppc64le"), None);
        assert_eq!(
            Arch::Aarch64.strip_from_tag("manylinux_2_28_aarch64"),
            Some("manylinux_2_28")
        );
        assert_eq!(Arch::X86_64.strip_from_tag("manylinux_2_28_aarch64"), None);
    }

    #[test]
    fn names_machines_and_triplets() {
        for arch in Arch::ALL {
            assert_eq!(arch.as_str().parse::<Arch>(), Ok(arch));
            assert_eq!(Arch::of_elf_machine(arch.elf_machine()), Some(arch));
            assert!(arch.multiarch().starts_with(arch.as_str()));
        }
        assert_eq!(Arch::of_elf_machine(40), None, "32-bit ARM");
        assert_eq!(
            "arm64".parse::<Arch>().unwrap_err(),
            "`arm64` is not an architecture cuwheel builds for: use `x86_64` or `aarch64`"
        );
    }
}
