//! Where a compile sees its toolchains and the build directory: at their
//! store paths (every compile), or at fixed paths (nvcc with device line
//! information).
//!
//! In: whether the compile asks for device line info (`-lineinfo`, `-G`).
//! Out: the shell words for a toolchain's directories, the
//! `-ffile-prefix-map` flags, and for mapped compiles the environment that
//! has nvcc's wrapper (`nix/nvcc-wrapper.sh`) bind each input at its fixed
//! path.
//!
//! Why: `-ffile-prefix-map` rewrites the paths the host compiler records,
//! but nvcc's device line information records the absolute path of every
//! file a device function comes from — the TU's directory (the build
//! directory, `/build/...`), the CUDA, torch and C++ library headers (store
//! paths) — and nvcc has no option to rewrite them. So a mapped compile
//! runs nvcc where the build directory is [`SRC`], the CUDA toolkit
//! [`CUDA`], the torch headers [`TORCH`], the Python headers [`PYTHON`] and
//! the host compiler's sysroot [`GCC_SYSROOT`] (with `--sysroot` and
//! `GCC_EXEC_PREFIX` pointing gcc there, the C++ library's headers are read
//! from it): fixed paths that name no store path and no build directory, so
//! the object is the same on every machine and the audit's leak check
//! passes.

use crate::plan::shell::{literal_var_literal, quote, var_then};

/// The build directory, as a mapped compile sees it.
pub const SRC: &str = "/cuwheel/src";
/// The CUDA toolkit (`$cuda`).
pub const CUDA: &str = "/cuwheel/cuda";
/// The torch headers (`$torchHeaders`).
pub const TORCH: &str = "/cuwheel/torch/include";
/// The Python headers (`$python`).
pub const PYTHON: &str = "/cuwheel/python";
/// The gcc toolchain's sysroot (`$gcc/sysroot`), where the C++ library's
/// headers are.
pub const GCC_SYSROOT: &str = "/cuwheel/gcc/sysroot";

/// The environment variable nvcc's wrapper reads: `TARGET=SOURCE` pairs,
/// space-separated, each bound at `TARGET` for nvcc.
pub const PATHS_VAR: &str = "CUWHEEL_NVCC_PATHS";

/// How a compile names its toolchains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roots {
    /// Every input at its fixed path (nvcc with device line info).
    pub mapped: bool,
    /// The gcc is a cross compiler, whose programs Debian keeps in
    /// `usr/lib/gcc-cross/` rather than `usr/lib/gcc/`.
    pub cross: bool,
}

/// The fixed path of a toolchain variable.
fn fixed(var: &str) -> &'static str {
    match var {
        "torchHeaders" => TORCH,
        "cuda" => CUDA,
        "python" => PYTHON,
        _ => unreachable!("no fixed path for ${var}"),
    }
}

impl Roots {
    /// A toolchain directory followed by `rest`: `"$torchHeaders"/x`, or
    /// `/cuwheel/torch/include/x` when mapped.
    pub fn word(&self, var: &str, rest: &str) -> String {
        if self.mapped {
            quote(&format!("{}{rest}", fixed(var)))
        } else {
            var_then(var, rest)
        }
    }

    /// `-ffile-prefix-map` from a toolchain to its stable name. gcc's own
    /// store path stays mapped by store path: its wrapper runs from there.
    pub fn prefix_map(&self, var: &str, stable: &str) -> String {
        if self.mapped && var != "gcc" {
            quote(&format!("-ffile-prefix-map={}={stable}", fixed(var)))
        } else {
            literal_var_literal("-ffile-prefix-map=", var, &format!("={stable}"))
        }
    }

    /// `-ffile-prefix-map` from the build directory to `.`.
    pub fn build_dir_map(&self) -> String {
        if self.mapped {
            format!("-ffile-prefix-map={SRC}=.")
        } else {
            "-ffile-prefix-map=\"$PWD\"=.".to_string()
        }
    }

    /// The environment nvcc runs with: for a mapped compile, what its
    /// wrapper binds where, and gcc's `GCC_EXEC_PREFIX` under the mapped
    /// sysroot, so that gcc finds the C++ library's headers there rather
    /// than beside its own store path. Written before the program.
    pub fn nvcc_environment(&self, with_python: bool) -> String {
        if !self.mapped {
            return String::new();
        }
        let python = if with_python {
            format!(" {PYTHON}=$python")
        } else {
            String::new()
        };
        let libexec = if self.cross { "gcc-cross" } else { "gcc" };
        format!(
            "{PATHS_VAR}=\"{SRC}=$PWD {CUDA}=$cuda {TORCH}=$torchHeaders \
             {GCC_SYSROOT}=$gcc/sysroot{python}\" GCC_EXEC_PREFIX={GCC_SYSROOT}/usr/lib/{libexec}/ "
        )
    }

    /// Host compiler flags a mapped compile adds: the sysroot at its fixed
    /// path, so that the C++ library's headers are read from there, and
    /// mapped out of what the host compiler records, as gcc's wrapper maps
    /// the sysroot's store path.
    pub fn nvcc_extra_flags(&self) -> Vec<String> {
        if self.mapped {
            vec![
                format!("-Xcompiler --sysroot={GCC_SYSROOT}"),
                format!("-Xcompiler -ffile-prefix-map={GCC_SYSROOT}/=/"),
            ]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_compile_finds_gccs_programs_where_its_debian_package_keeps_them() {
        let host = Roots {
            mapped: true,
            cross: false,
        };
        let cross = Roots {
            mapped: true,
            cross: true,
        };
        assert!(
            host.nvcc_environment(false)
                .ends_with("GCC_EXEC_PREFIX=/cuwheel/gcc/sysroot/usr/lib/gcc/ ")
        );
        assert!(
            cross
                .nvcc_environment(false)
                .ends_with("GCC_EXEC_PREFIX=/cuwheel/gcc/sysroot/usr/lib/gcc-cross/ ")
        );
        let unmapped = Roots {
            mapped: false,
            cross: true,
        };
        assert_eq!(unmapped.nvcc_environment(true), "");
    }
}
