//! Kernel objects: one `nvcc -c` of one kernel translation unit with one
//! compiler set.
//!
//! In: the TU, its [`KernelToolchains`] and the config's compiler inputs.
//! Out: a [`Node`] whose inputs are only the CUDA toolkit, gcc, the torch
//! headers, the TU, the project headers beside it that it includes, and the
//! config's include directories — never Python — and whose script compiles
//! `$out/<stem>.o`.
//!
//! The flags follow torch's `BuildExtension` for `.cu` files (pytorch
//! `torch/utils/cpp_extension.py`): `COMMON_NVCC_FLAGS`, `-Xcompiler -fPIC`,
//! `-std=` of torch's standard ([`super::standard`]) unless the config sets one, `-ccbin`, torch's two
//! include directories, `TORCH_API_INCLUDE_EXTENSION_H` and
//! `TORCH_EXTENSION_NAME`, an explicit `_GLIBCXX_USE_CXX11_ABI=1` (every
//! torch this builds for is a CXX11-ABI build), and one `-gencode` per arch
//! (`+PTX` adds `code=compute_XY`). torch's `PYBIND11_*` and
//! `Py_LIMITED_API` defines are left out: they concern Python, differ
//! between binding flavours, and would stop the object being shared.
//!
//! Determinism (design decision 5): `-objtemp` keeps nvcc's intermediates
//! (whose names reach the object) beside the object, `-ffile-prefix-map`
//! rewrites every store path the compile sees and the build directory to a
//! stable name, and from CUDA 12.9 `--frandom-seed` (per TU) and a pinned
//! `--compress-mode` (both absent from 12.4's nvcc, present in 13.0's).
//!
//! With more than one `-gencode`, nvcc compiles them in parallel with
//! `--threads "$NIX_BUILD_CORES"` (Nix's `cores` setting, read at build
//! time, so the derivation is the same on every machine; `0` means every
//! core to both). The object's bytes do not depend on the thread count.
//!
//! Before compiling, a dependency pass (`nvcc -M`) finds a kernel that
//! reaches `Python.h` (directly, or through `torch/extension.h`) and fails
//! with a message naming the file and the include chain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::plan::shell::{literal_var_literal, quote, var_then};
use crate::plan::{Input, KernelToolchains, Node, PlanError};
use crate::spec::{Config, CudaArch};
use crate::store::path::sanitize_name;

/// Every kernel node's name starts with this.
pub const NAME_PREFIX: &str = "kernel-";
/// The environment variable holding the TU's store path.
pub const SOURCE_VAR: &str = "source";

/// The fatbin compression mode pinned where nvcc has `--compress-mode`.
pub const COMPRESS_MODE: &str = "balance";

/// `-D` flags torch's nvcc lines carry (`COMMON_NVCC_FLAGS`).
const COMMON_NVCC_DEFINES: [&str; 4] = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
];

/// One kernel TU compiled with one compiler set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelObject {
    /// The derivation name: `kernel-cuda130-bias_gelu`.
    pub name: String,
    /// The TU, relative to the project.
    pub source: PathBuf,
    /// The project headers beside it that it includes (see [`super::includes`]).
    pub headers: Vec<PathBuf>,
    /// The object's file name without `.o`.
    pub stem: String,
    pub toolchains: KernelToolchains,
}

impl KernelObject {
    pub fn node(&self, config: &Config) -> Node {
        let mut inputs = compiler_inputs(&self.toolchains);
        let includes = include_inputs(config);
        let headers: Vec<(String, String)> = self
            .headers
            .iter()
            .enumerate()
            .map(|(i, header)| (format!("header{i}"), slash_path(header)))
            .collect();
        let source = (SOURCE_VAR.to_string(), slash_path(&self.source));
        add_sources(
            &mut inputs,
            [&source].into_iter().chain(&includes).chain(&headers),
        );
        Node {
            name: self.name.clone(),
            script: self.script(config, &includes, &headers),
            inputs,
        }
    }

    /// The build script; see the module documentation for the flags.
    fn script(
        &self,
        config: &Config,
        includes: &[(String, String)],
        headers: &[(String, String)],
    ) -> String {
        let source = slash_path(&self.source);
        let version = self.toolchains.cuda_version;
        let modern = (version.major, version.minor) >= (12, 9);

        // One line of the script each: an option with its value stays together.
        let mut flags: Vec<String> = vec![format!("-ccbin {}", var_then("gcc", "/bin/g++"))];
        for (var, _) in includes {
            flags.push(format!("-I{}", var_then(var, "")));
        }
        for dir in ["", "/torch/csrc/api/include"] {
            flags.push(format!("-isystem {}", var_then("torchHeaders", dir)));
        }
        flags.extend(COMMON_NVCC_DEFINES.iter().map(|d| d.to_string()));
        flags.push("--expt-relaxed-constexpr".into());
        flags.push("-Xcompiler -fPIC".into());
        if !config.nvcc_flags.iter().any(|f| f.starts_with("-std")) {
            let cxx = &self.toolchains.cxx;
            flags.push(cxx.std_flag());
            flags.extend(cxx.host_defines().iter().map(|d| format!("-Xcompiler {d}")));
        }
        flags.push("-DTORCH_API_INCLUDE_EXTENSION_H".into());
        flags.push(quote(&format!(
            "-DTORCH_EXTENSION_NAME={}",
            config.module.leaf()
        )));
        flags.push("-D_GLIBCXX_USE_CXX11_ABI=1".into());
        flags.extend(config.defines.iter().map(|d| quote(&format!("-D{d}"))));
        flags.extend(config.nvcc_flags.iter().map(|f| quote(f)));
        flags.extend(
            prefix_maps(&[("cuda", "cuda"), ("gcc", "gcc")], includes)
                .into_iter()
                .map(|map| format!("-Xcompiler {map}")),
        );
        if modern {
            flags.push(quote(&format!("--frandom-seed={source}")));
            flags.push(format!("--compress-mode={COMPRESS_MODE}"));
        }

        // The compatibility check guarantees a list for every cell's nvcc.
        let cuda_archs = config.cuda_archs.for_toolkit(version).unwrap_or_default();
        let gencodes = gencode_flags(cuda_archs);
        let archs = gencodes.join(" ");
        let arch_list: Vec<String> = cuda_archs.iter().map(|a| a.to_string()).collect();
        let object = format!("{}.o", self.stem);
        let mut s = String::new();
        s += &format!(
            "# {}: {source} with CUDA {version} ({}), torch {} headers, gcc {}, for {}.\n",
            self.name,
            self.toolchains.cuda,
            self.toolchains.torch,
            self.toolchains.gcc,
            arch_list.join(" ")
        );
        s += "# Written by `cuwheel plan`; the inputs are only these toolchains and sources.\n";
        s += &python_h_function(&source);
        // The TU and the headers beside it at their project paths, so that
        // `#include "..."` finds them and `__FILE__` is relative.
        let mut files = vec![(SOURCE_VAR.to_string(), source.clone())];
        files.extend(headers.iter().cloned());
        s += &stage_files(&input_files(&files));
        s += "set -- \\\n";
        for flag in &flags {
            s += &format!("  {flag} \\\n");
        }
        s += &format!("  {}\n", quote(&source));
        s += "# The dependency pass: the headers the kernel reaches, without compiling.\n";
        s += "if ! \"$cuda\"/bin/nvcc \"$@\" -M -o deps.d 2>deps.err; then\n";
        s += "  if grep -q 'Python\\.h' deps.err; then python_h deps.err; fi\n";
        s += "  cat deps.err >&2\n";
        s += "  exit 1\n";
        s += "fi\n";
        s += "if grep -q '[/ ]Python\\.h' deps.d; then python_h deps.d; fi\n";
        let threads = if gencodes.len() > 1 {
            " --threads \"${NIX_BUILD_CORES:-1}\""
        } else {
            ""
        };
        s += &format!(
            "\"$cuda\"/bin/nvcc \"$@\" {archs}{threads} -objtemp -c -o {}\n",
            quote(&object)
        );
        s += "mkdir -p \"$out\"\n";
        s += &format!("cp {} \"$out\"/\n", quote(&object));
        s
    }
}

/// What every compile sees: the CUDA toolchain, gcc and the torch headers.
pub(super) fn compiler_inputs(tc: &KernelToolchains) -> BTreeMap<String, Input> {
    BTreeMap::from([
        ("cuda".to_string(), Input::toolchain(&tc.cuda)),
        ("gcc".to_string(), Input::toolchain(&tc.gcc)),
        (
            "torchHeaders".to_string(),
            Input::Toolchain {
                toolchain: tc.torch.clone(),
                output: Some("headers".into()),
            },
        ),
    ])
}

/// The config's include directories, each its own input named by position:
/// (variable, project path).
pub(super) fn include_inputs(config: &Config) -> Vec<(String, String)> {
    config
        .include_dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| (format!("include{i}"), slash_path(&dir.value)))
        .collect()
}

/// Adds each (variable, project path) as a source input.
pub(super) fn add_sources<'a>(
    inputs: &mut BTreeMap<String, Input>,
    sources: impl IntoIterator<Item = &'a (String, String)>,
) {
    for (var, path) in sources {
        inputs.insert(
            var.clone(),
            Input::Source {
                source: path.clone(),
            },
        );
    }
}

/// `-ffile-prefix-map` for the torch headers, each of `toolchains` (variable,
/// stable name), the include directories and the build directory: every
/// path a compile sees that the object may record (`__FILE__` in c10's
/// macros). No two of them nest, so their order does not matter.
pub(super) fn prefix_maps(
    toolchains: &[(&str, &str)],
    includes: &[(String, String)],
) -> Vec<String> {
    let mut maps = vec![("torchHeaders".to_string(), "torch/include".to_string())];
    maps.extend(
        toolchains
            .iter()
            .map(|(var, stable)| (var.to_string(), stable.to_string())),
    );
    maps.extend(includes.iter().cloned());
    let mut flags: Vec<String> = maps
        .iter()
        .map(|(var, stable)| literal_var_literal("-ffile-prefix-map=", var, &format!("={stable}")))
        .collect();
    flags.push("-ffile-prefix-map=\"$PWD\"=.".into());
    flags
}

/// Copies each file (a shell word naming it, the relative path it goes to)
/// into the build directory, creating the directories first.
pub(super) fn stage_files(files: &[(String, String)]) -> String {
    let dirs: BTreeSet<String> = files
        .iter()
        .filter_map(|(_, path)| Path::new(path).parent().map(slash_path))
        .filter(|d| !d.is_empty())
        .collect();
    let mut s = String::new();
    if !dirs.is_empty() {
        let dirs: Vec<String> = dirs.iter().map(|d| quote(d)).collect();
        s += &format!("mkdir -p {}\n", dirs.join(" "));
    }
    for (from, path) in files {
        s += &format!("cp {from} {}\n", quote(path));
    }
    s
}

/// Each input file's (variable, project path) as [`stage_files`] takes it.
pub(super) fn input_files(files: &[(String, String)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(var, path)| (var_then(var, ""), path.clone()))
        .collect()
}

/// The shell function that reports a kernel reaching `Python.h`, with the
/// include chain from the compiler's messages (store paths shortened).
fn python_h_function(source: &str) -> String {
    let message = format!(
        "cuwheel: kernel {source} includes Python.h (through the chain above). Kernels are \
         compiled once per CUDA toolkit and shared by every Python, so they cannot see \
         Python's headers: move the code that needs Python (torch/extension.h, pybind11, \
         Python.h) into the bindings, and include <torch/all.h> or <ATen/ATen.h> in the kernel \
         instead."
    );
    format!(
        "python_h() {{\n  \
         grep -E 'included from|^ +from |Python\\.h' \"$1\" \
         | sed -e \"s|$torchHeaders|torch/include|g\" -e \"s|$cuda|cuda|g\" >&2 || true\n  \
         echo {} >&2\n  \
         exit 1\n}}\n",
        quote(&message)
    )
}

/// `-gencode=arch=compute_80,code=sm_80` per arch, and
/// `-gencode=arch=compute_90,code=compute_90` for PTX, as torch writes them.
pub fn gencode_flags(archs: &[CudaArch]) -> Vec<String> {
    let mut flags = Vec::new();
    for arch in archs {
        let n = format!("{}{}", arch.major, arch.minor);
        flags.push(format!("-gencode=arch=compute_{n},code=sm_{n}"));
        if arch.ptx {
            flags.push(format!("-gencode=arch=compute_{n},code=compute_{n}"));
        }
    }
    flags
}

/// The part of a node name that tells compiler sets apart: the CUDA
/// toolchain, plus torch and gcc where one CUDA is paired with several.
pub fn name_prefix(tc: &KernelToolchains, all: &BTreeSet<&KernelToolchains>) -> String {
    let same_cuda: Vec<&&KernelToolchains> = all.iter().filter(|o| o.cuda == tc.cuda).collect();
    let mut parts = vec![tc.cuda.clone()];
    if same_cuda.iter().any(|o| o.torch != tc.torch) {
        parts.push(tc.torch.clone());
    }
    if same_cuda
        .iter()
        .any(|o| o.torch == tc.torch && o.gcc != tc.gcc)
    {
        parts.push(tc.gcc.clone());
    }
    sanitize_name(&parts.join("-"))
}

/// Each TU's object stem: its file stem, or, where two TUs share a stem,
/// its whole relative path without `.cu` (`/` → `-`).
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

/// A relative path with `/` separators, as the plan writes it.
pub(super) fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}
