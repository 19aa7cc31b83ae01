//! The C++ standard a cell's translation units are compiled with: the one
//! its torch release's headers require (read from `ATen/ATen.h` when
//! locking: C++17, or C++20 from torch 2.13 on), with what the baseline's
//! GCC needs to say so.
//!
//! In: the lock's torch `cxx-standard` and gcc toolchain's GCC major. Out:
//! the `-std=` flag and, for GCC 10 in C++20 mode, the `__cplusplus` value
//! of the standard. GCC 10 implements the C++20 language torch's headers
//! use (bullseye's GCC 10 compiles torch 2.15's `torch/extension.h` and
//! ATen with no diagnostic) but still reports the draft's `201709L`; GCC 11
//! is the first to report `202002L`, the value torch checks. The sysroot of
//! glibc 2.31 that gives `manylinux_2_28` wheels comes with GCC 10 (Debian
//! bullseye), so the value is set rather than the compiler replaced.

use serde::{Deserialize, Serialize};

/// The standard of one compiler set, and the GCC major that compiles it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CxxStandard {
    /// `c++17` or `c++20`.
    pub standard: String,
    pub gcc_major: u32,
}

/// The first GCC that reports `__cplusplus == 202002L` for `-std=c++20`.
const GCC_REPORTING_CXX20: u32 = 11;

impl CxxStandard {
    /// `-std=c++20`.
    pub fn std_flag(&self) -> String {
        format!("-std={}", self.standard)
    }

    /// What the host compiler needs besides [`CxxStandard::std_flag`] for
    /// the standard's `__cplusplus`.
    pub fn host_defines(&self) -> Vec<String> {
        if self.standard == "c++20" && self.gcc_major < GCC_REPORTING_CXX20 {
            vec!["-U__cplusplus".into(), "-D__cplusplus=202002L".into()]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard(standard: &str, gcc_major: u32) -> CxxStandard {
        CxxStandard {
            standard: standard.into(),
            gcc_major,
        }
    }

    #[test]
    fn gcc_10_is_told_the_cxx20_value_of_cplusplus() {
        assert_eq!(standard("c++20", 10).std_flag(), "-std=c++20");
        assert_eq!(
            standard("c++20", 10).host_defines(),
            ["-U__cplusplus", "-D__cplusplus=202002L"]
        );
        assert!(standard("c++20", 12).host_defines().is_empty());
        assert!(standard("c++17", 10).host_defines().is_empty());
        assert_eq!(standard("c++17", 10).std_flag(), "-std=c++17");
    }
}
