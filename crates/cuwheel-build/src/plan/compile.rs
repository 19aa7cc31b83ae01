//! What every compile node shares: the flags torch's `BuildExtension` uses
//! for `.cu` (nvcc) and C++ (g++) sources, the inputs, and the staging of
//! the project files in the build directory.
//!
//! In: a module's [`Compile`] options, its name, the [`Compilers`], the
//! CUDA archs and, for bindings, the Python headers and the flavour's
//! defines. Out: the shell functions `nvcc_compile` / `cxx_compile` (the
//! compiler with every flag but the TU's own), the per-TU arguments, the
//! node's inputs, and the script lines that copy each input file to its
//! project path.
//!
//! Flags (pytorch `torch/utils/cpp_extension.py`): for nvcc
//! `COMMON_NVCC_FLAGS`, `-Xcompiler -fPIC`, `-std=` of torch's standard ([`super::standard`]) unless the config
//! sets a standard, `-ccbin`; for g++ `-fPIC`, `-O2` (what setuptools takes
//! from Python's own flags; the config's `cxx-flags` come after it and
//! win), torch's `-std=`; for both the include directories (relative: every
//! project file is staged at its project path), torch's two include
//! directories (and CUDA's and Python's where they apply),
//! `TORCH_EXTENSION_NAME` and an explicit
//! `_GLIBCXX_USE_CXX11_ABI=1` (every torch this builds for is a CXX11-ABI
//! build), the flavour's defines (pybind11's `TORCH_API_INCLUDE_EXTENSION_H`,
//! torch-library's `Py_LIMITED_API`), the config's defines, undefines and
//! flags. torch's `PYBIND11_*` defines are not passed: both torch releases
//! built here ship pybind11 3, whose headers derive the ABI id from the
//! compiler and ignore them.
//!
//! Determinism (design decision 5): `-ffile-prefix-map` rewrites every
//! store path the compile sees and the build directory to a stable name;
//! for nvcc, `-objtemp` keeps its intermediates (whose names reach the
//! object) beside the object, and from CUDA 12.9 `--frandom-seed` (per TU)
//! and a pinned `--compress-mode`. Device line information (`-lineinfo`)
//! records paths that no prefix map reaches: such compiles see every input
//! at a fixed path instead ([`super::lineinfo`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::plan::compilers::Compilers;
use crate::plan::includes::TranslationUnit;
use crate::plan::lineinfo::Roots;
use crate::plan::shell::{FIXED_MTIMES, quote, var_then};
use crate::plan::{Input, slash_path};
use crate::spec::config::CompressMode;
use crate::spec::{CudaArch, Module, PythonAbi};

/// `-D` flags torch's nvcc lines carry (`COMMON_NVCC_FLAGS`).
const COMMON_NVCC_DEFINES: [&str; 4] = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
];

/// The Python headers a binding compile sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonHeaders {
    /// The lock's toolchain name.
    pub toolchain: String,
    pub version: PythonAbi,
}

/// One module's compile with one compiler set.
pub struct Compile<'a> {
    pub module: &'a Module,
    pub compilers: &'a Compilers,
    pub archs: &'a [CudaArch],
    /// For bindings: the Python headers.
    pub python: Option<&'a PythonHeaders>,
    /// For bindings: the flavour's defines (`Py_LIMITED_API=...`).
    pub flavour_defines: Vec<String>,
}

impl Compile<'_> {
    /// Whether nvcc runs with every path mapped (device line info asked).
    fn roots(&self) -> Roots {
        Roots {
            cross: self.compilers.cross.is_some(),
            mapped: self.module.cuda
                && self
                    .compilers
                    .cuda
                    .as_ref()
                    .is_some_and(|cuda| self.module.device_line_info(cuda.version)),
        }
    }

    /// The toolchain inputs: gcc, the torch headers, CUDA where the module
    /// uses it, Python for bindings.
    pub fn toolchain_inputs(&self) -> BTreeMap<String, Input> {
        let tc = self.compilers;
        let mut inputs = BTreeMap::from([
            ("gcc".to_string(), Input::toolchain(&tc.gcc)),
            (
                "torchHeaders".to_string(),
                Input::Toolchain {
                    toolchain: tc.torch.clone(),
                    output: Some("headers".into()),
                },
            ),
        ]);
        if let Some(cuda) = &tc.cuda {
            inputs.insert("cuda".to_string(), Input::toolchain(&cuda.toolchain));
        }
        if let Some(python) = self.python {
            inputs.insert("python".to_string(), Input::toolchain(&python.toolchain));
        }
        inputs
    }

    /// The node's inputs and the project files it stages: the toolchains,
    /// `units` and what they include (see [`source_files`]).
    pub fn inputs(
        &self,
        units: &[&TranslationUnit],
        first_source: &str,
    ) -> (BTreeMap<String, Input>, Vec<(String, String)>) {
        let files = source_files(units, &self.module.compile.include_paths(), first_source);
        let mut inputs = self.toolchain_inputs();
        add_sources(&mut inputs, &files);
        (inputs, files)
    }

    fn include_dirs(&self) -> Vec<String> {
        self.module
            .compile
            .include_dirs
            .iter()
            .map(|d| format!("-I{}", quote(&slash_path(&d.value))))
            .collect()
    }

    /// Defines and flags after the include directories, common to both
    /// compilers: torch's, the flavour's, the config's.
    fn defines(&self) -> Vec<String> {
        // TORCH_API_INCLUDE_EXTENSION_H is the pybind11 flavour's: with it
        // <torch/torch.h> includes torch/extension.h, so pybind11 and the
        // whole Python API, which neither a kernel nor a limited-API binding
        // may see (torch-cluster's kernels and bindings include torch.h).
        let mut flags = vec![
            quote(&format!(
                "-DTORCH_EXTENSION_NAME={}",
                self.module.name.value.leaf()
            )),
            "-D_GLIBCXX_USE_CXX11_ABI=1".to_string(),
        ];
        flags.extend(self.flavour_defines.iter().cloned());
        let compile = &self.module.compile;
        flags.extend(compile.defines.iter().map(|d| quote(&format!("-D{d}"))));
        flags.extend(compile.undefines.iter().map(|u| quote(&format!("-U{u}"))));
        flags
    }

    /// `-ffile-prefix-map` for each toolchain the compile sees and the build
    /// directory. No two of them nest, so their order does not matter.
    fn prefix_maps(&self, roots: &Roots) -> Vec<String> {
        let mut maps = vec![roots.prefix_map("torchHeaders", "torch/include")];
        if self.compilers.cuda.is_some() {
            maps.push(roots.prefix_map("cuda", "cuda"));
        }
        maps.push(roots.prefix_map("gcc", "gcc"));
        if self.python.is_some() {
            maps.push(roots.prefix_map("python", "python"));
        }
        maps.push(roots.build_dir_map());
        maps
    }

    fn python_include(&self, roots: &Roots) -> Option<String> {
        self.python.map(|python| {
            format!(
                "-isystem {}",
                roots.word(
                    "python",
                    &format!("/include/{}", python.version.include_dir())
                )
            )
        })
    }

    /// The `nvcc_compile` shell function: nvcc with every flag but the
    /// TU's own ([`Self::nvcc_arguments`]).
    pub fn nvcc_function(&self) -> String {
        let roots = self.roots();
        let module = self.module;
        let mut flags: Vec<String> = vec![format!("-ccbin {}", var_then("gcc", "/bin/g++"))];
        flags.extend(self.include_dirs());
        for dir in ["", "/torch/csrc/api/include"] {
            flags.push(format!("-isystem {}", roots.word("torchHeaders", dir)));
        }
        flags.extend(self.python_include(&roots));
        flags.extend(COMMON_NVCC_DEFINES.iter().map(|d| d.to_string()));
        flags.push("--expt-relaxed-constexpr".into());
        flags.push("-Xcompiler -fPIC".into());
        let nvcc_flags = match &self.compilers.cuda {
            Some(cuda) => module.compile.nvcc_flags.for_toolkit(cuda.version),
            None => &[],
        };
        if !nvcc_flags.iter().any(|f| f.starts_with("-std")) {
            let cxx = &self.compilers.cxx;
            flags.push(cxx.std_flag());
            flags.extend(cxx.host_defines().iter().map(|d| format!("-Xcompiler {d}")));
        }
        flags.extend(self.defines());
        flags.extend(nvcc_flags.iter().map(|f| quote(f)));
        flags.extend(
            self.prefix_maps(&roots)
                .into_iter()
                .map(|map| format!("-Xcompiler {map}")),
        );
        flags.extend(roots.nvcc_extra_flags());
        let program = format!(
            "{}{}",
            roots.nvcc_environment(self.python.is_some()),
            var_then("cuda", "/bin/nvcc")
        );
        let mut s = String::new();
        if roots.mapped {
            s += "# Device line info records absolute paths: nvcc sees every input at a fixed path.\n";
        }
        s += &shell_function("nvcc_compile", &program, &flags);
        s
    }

    /// The `cxx_compile` shell function: g++ with every flag, `-c` last.
    pub fn cxx_function(&self) -> String {
        let roots = Roots {
            mapped: false,
            cross: self.compilers.cross.is_some(),
        };
        let module = self.module;
        let mut flags: Vec<String> = vec!["-fPIC".into(), "-O2".into()];
        if !module
            .compile
            .cxx_flags
            .iter()
            .any(|f| f.starts_with("-std"))
        {
            let cxx = &self.compilers.cxx;
            flags.push(cxx.std_flag());
            flags.extend(cxx.host_defines());
        }
        flags.extend(self.include_dirs());
        for dir in ["", "/torch/csrc/api/include"] {
            flags.push(format!("-isystem {}", roots.word("torchHeaders", dir)));
        }
        if self.compilers.cuda.is_some() {
            flags.push(format!("-isystem {}", var_then("cuda", "/include")));
        }
        flags.extend(self.python_include(&roots));
        flags.extend(self.defines());
        flags.extend(module.compile.cxx_flags.iter().map(|f| quote(f)));
        flags.extend(self.prefix_maps(&roots));
        flags.push("-c".into());
        shell_function("cxx_compile", &var_then("gcc", "/bin/g++"), &flags)
    }

    /// nvcc's arguments for one TU, after the function's flags: the
    /// per-TU seed (CUDA ≥ 12.9), the compression mode (CUDA ≥ 12.8: the
    /// module's `cuda-compress-mode`, else [`CompressMode::DEFAULT`], pinned
    /// because nvcc's own default may change), the TU, and `rest`.
    pub fn nvcc_arguments(&self, source: &str, rest: &str) -> String {
        let version = self.compilers.cuda.as_ref().map(|c| c.version);
        let mut words = Vec::new();
        if version.is_some_and(|v| (v.major, v.minor) >= (12, 9)) {
            words.push(quote(&format!("--frandom-seed={source}")));
        }
        if version.is_some_and(CompressMode::nvcc_has_it) {
            let mode = self
                .module
                .compile
                .compress_mode
                .as_ref()
                .map_or(CompressMode::DEFAULT, |mode| mode.value);
            words.push(format!("--compress-mode={mode}"));
        }
        words.push(quote(source));
        if !rest.is_empty() {
            words.push(rest.to_string());
        }
        words.join(" ")
    }

    /// `-gencode` for each configured arch, `--threads 1` where there are
    /// several, and `-objtemp`. One device compile at a time: Nix already
    /// runs a build per core (`max-jobs = auto`), each given every core, so
    /// nvcc's per-target threads multiplied the compilers, and their memory,
    /// by the targets (flash-attn's hdim 256 backward kernel at four archs
    /// held 13 GiB with two threads, two such builds more than a 24 GiB
    /// machine). The flag follows the project's own flags, and nvcc takes
    /// the last `--threads`, so a project's own (flash-attn's 4) gives way
    /// too. The object's bytes do not depend on it.
    pub fn gpu_code(&self) -> String {
        let mut words = gencode_flags(self.archs);
        if words.len() > 1 {
            words.push("--threads 1".into());
        }
        words.push("-objtemp".into());
        words.join(" ")
    }
}

/// What precedes a compile's peak memory in the build log. Each compile of a
/// TU runs under busybox's `time` ([`measured`]): this, the peak resident
/// set size of the largest process the compile ran (nvcc's cicc or ptxas,
/// g++'s cc1plus), and ` KiB` follow it, also when the compile fails.
/// `cuwheel plan` reads it back from Nix's log for its memory warning. It
/// reaches neither `$out` nor any hash: the line is in the log only, and the
/// script that prints it is the same for every build of the node.
pub const PEAK_RSS_MARK: &str = "cuwheel: peak RSS of this compile: ";

/// What precedes a compile's wall time in the build log, printed beside
/// [`PEAK_RSS_MARK`] from the same `time`: seconds, with two decimals, and
/// ` s`. `cuwheel plan --estimate` reads it back where the log file's own
/// times bracket no one build (a build again after a collection, or under
/// `--check`, writes the file again and keeps its creation time). Like the
/// peak, it is in the log only.
pub const WALL_TIME_MARK: &str = "cuwheel: wall time of this compile: ";

/// The compile functions (`nvcc_compile`, `cxx_compile`), written to
/// `compile-functions.sh` and sourced, so that the shell [`measured`]
/// starts under `time` can run them too; and `peak_rss`, which prints
/// [`PEAK_RSS_MARK`] and [`WALL_TIME_MARK`] from what `time` wrote.
pub fn define_functions(functions: &str) -> String {
    format!(
        "cat > compile-functions.sh <<'CUWHEEL_FUNCTIONS'\n{functions}CUWHEEL_FUNCTIONS\n\
         . ./compile-functions.sh\n\
         # busybox's time takes ru_maxrss, which Linux gives in KiB, for a count of pages\n\
         # (%M = it × page size / 1024); %Z, the page size, undoes that. %e: wall seconds.\n\
         peak_rss() {{\n  \
         set -- $(tail -n 1 peak-rss)\n  \
         echo \"{PEAK_RSS_MARK}$(( $1 * 1024 / $2 )) KiB\" >&2\n  \
         echo \"{WALL_TIME_MARK}$3 s\" >&2\n\
         }}\n"
    )
}

/// `function args` under busybox's `time`, which writes `peak-rss`.
fn timed(function: &str, args: &str) -> String {
    format!(
        "\"$bb\" time -o peak-rss -f '%M %Z %e' \"$bb\" sh -euc \
         '. ./compile-functions.sh; {function} \"$@\"' {function} {args}"
    )
}

/// `function args`, run under busybox's `time`; then `peak_rss` prints the
/// compile's peak memory, and the script goes on, or exits as the compile
/// did.
pub fn measured(function: &str, args: &str) -> String {
    format!(
        "{} || {{ rc=$?; peak_rss; exit $rc; }}\npeak_rss\n",
        timed(function, args)
    )
}

/// [`measured`], with the compiler's messages kept in `compile.err` and
/// shown once it ends; where it fails, `on_failure` (shell commands, each
/// ended by `;`) runs after them and may read them.
pub fn measured_then(function: &str, args: &str, on_failure: &str) -> String {
    format!(
        "{} 2>compile.err || {{ rc=$?; cat compile.err >&2; peak_rss; {on_failure} exit $rc; }}\n\
         cat compile.err >&2\npeak_rss\n",
        timed(function, args)
    )
}

/// The largest compile peak a node's build log records ([`PEAK_RSS_MARK`]),
/// in KiB; `None` where it records none (a log of a build from before the
/// mark, or of a node that compiles nothing).
pub fn peak_rss_kib(log: &str) -> Option<u64> {
    log.lines()
        .filter_map(|line| line.trim().strip_prefix(PEAK_RSS_MARK))
        .filter_map(|rest| rest.strip_suffix(" KiB")?.parse().ok())
        .max()
}

/// The seconds a node's build log records its compiles took
/// ([`WALL_TIME_MARK`]), summed; `None` where it records none (a log of a
/// build from before the mark, or of a node that compiles nothing).
pub fn wall_seconds(log: &str) -> Option<f64> {
    log.lines()
        .filter_map(|line| line.trim().strip_prefix(WALL_TIME_MARK))
        .filter_map(|rest| rest.strip_suffix(" s")?.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .fold(None, |sum, s| Some(sum.unwrap_or(0.0) + s))
}

/// A shell function running `program` with `flags` (one per line) and the
/// function's arguments.
fn shell_function(name: &str, program: &str, flags: &[String]) -> String {
    let mut s = format!("{name}() {{\n  {program} \\\n");
    for flag in flags {
        s += &format!("    {flag} \\\n");
    }
    s += "    \"$@\"\n}\n";
    s
}

/// `-gencode=arch=compute_80,code=sm_80` per arch, and
/// `-gencode=arch=compute_90,code=compute_90` for PTX, as torch writes them;
/// an arch-specific or family-specific arch keeps its suffix on both sides
/// (`arch=compute_90a,code=sm_90a`, `arch=compute_100f,code=compute_100f`).
pub fn gencode_flags(archs: &[CudaArch]) -> Vec<String> {
    let mut flags = Vec::new();
    for arch in archs {
        let (virtual_arch, sass) = (arch.compute_name(), arch.sm_name());
        flags.push(format!("-gencode=arch={virtual_arch},code={sass}"));
        if arch.ptx {
            flags.push(format!("-gencode=arch={virtual_arch},code={virtual_arch}"));
        }
    }
    flags
}

/// The project files a compile of `units` reads, as (variable, project
/// path): each TU (`first_source` names the first, `source{i}` the
/// others), each header (`header{i}`), and, for a TU with a computed
/// include, its module's whole include directories (`include{i}`).
pub fn source_files(
    units: &[&TranslationUnit],
    include_dirs: &[PathBuf],
    first_source: &str,
) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for (i, tu) in units.iter().enumerate() {
        let var = if i == 0 {
            first_source.to_string()
        } else {
            format!("source{i}")
        };
        files.push((var, slash_path(&tu.path)));
    }
    let whole = units.iter().any(|tu| tu.computed_include.is_some());
    let headers: BTreeSet<&PathBuf> = units
        .iter()
        .flat_map(|tu| tu.headers.iter())
        .filter(|h| !(whole && include_dirs.iter().any(|d| h.starts_with(d))))
        .collect();
    for (i, header) in headers.into_iter().enumerate() {
        files.push((format!("header{i}"), slash_path(header)));
    }
    if whole {
        for (i, dir) in include_dirs.iter().enumerate() {
            files.push((format!("include{i}"), slash_path(dir)));
        }
    }
    files
}

/// Adds each (variable, project path) as a source input.
pub fn add_sources(inputs: &mut BTreeMap<String, Input>, files: &[(String, String)]) {
    for (var, path) in files {
        inputs.insert(
            var.clone(),
            Input::Source {
                source: path.clone(),
            },
        );
    }
}

/// Copies each input file (variable, project path) to its project path in
/// the build directory, creating the directories first; a whole include
/// directory (`include{i}`) is copied with its contents. Then every file
/// gets the store's modification time ([`FIXED_MTIMES`]).
pub fn stage_inputs(files: &[(String, String)]) -> String {
    let words: Vec<(String, String)> = files
        .iter()
        .map(|(var, path)| (var_then(var, ""), path.clone()))
        .collect();
    let (dirs, plain): (Vec<_>, Vec<_>) = files
        .iter()
        .zip(words)
        .partition(|((var, _), _)| var.starts_with("include"));
    let mut s = stage_files(&plain.into_iter().map(|(_, w)| w).collect::<Vec<_>>());
    for (_, (from, path)) in dirs {
        s += &format!(
            "mkdir -p {path}\ncp -R {from}/. {path}/\n",
            path = quote(&path)
        );
    }
    s + FIXED_MTIMES
}

/// Copies each file (a shell word naming it, the relative path it goes to)
/// into the build directory, creating the directories first.
pub fn stage_files(files: &[(String, String)]) -> String {
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

#[cfg(test)]
mod gencode_tests {
    use super::*;

    fn flags(archs: &[&str]) -> Vec<String> {
        let archs: Vec<CudaArch> = archs.iter().map(|a| a.parse().unwrap()).collect();
        gencode_flags(&archs)
    }

    #[test]
    fn gencode_keeps_arch_and_family_suffixes() {
        assert_eq!(
            flags(&["8.0", "9.0a", "10.0f", "12.0+PTX"]),
            [
                "-gencode=arch=compute_80,code=sm_80",
                "-gencode=arch=compute_90a,code=sm_90a",
                "-gencode=arch=compute_100f,code=sm_100f",
                "-gencode=arch=compute_120,code=sm_120",
                "-gencode=arch=compute_120,code=compute_120",
            ]
        );
        assert_eq!(
            flags(&["9.0a+PTX", "10.3f+PTX"]),
            [
                "-gencode=arch=compute_90a,code=sm_90a",
                "-gencode=arch=compute_90a,code=compute_90a",
                "-gencode=arch=compute_103f,code=sm_103f",
                "-gencode=arch=compute_103f,code=compute_103f",
            ]
        );
    }
}

#[cfg(test)]
mod peak_rss_tests {
    use super::*;

    #[test]
    fn the_largest_marked_peak_of_a_log_is_read_and_nothing_else() {
        let log = format!(
            "building '/nix/store/x-kernel-a.drv'...\n\
             {PEAK_RSS_MARK}812344 KiB\n\
             warning: something else: 999999999 KiB\n\
             Command terminated by signal 9\n\
             {PEAK_RSS_MARK}6815744 KiB\n\
             {PEAK_RSS_MARK}not a number KiB\n"
        );
        assert_eq!(peak_rss_kib(&log), Some(6_815_744));
        assert_eq!(
            peak_rss_kib("cuwheel: peak RSS of this compile: 12 MiB\n"),
            None
        );
        assert_eq!(peak_rss_kib(""), None);
    }

    #[test]
    fn a_measured_compile_runs_in_busybox_and_its_peak_is_reported_in_kib() {
        // The script's lines, run by the pinned busybox where this machine
        // has it (the host's store), on a compile of known size: dd's one
        // 64 MiB buffer. Busybox's own %M would say four times that.
        let Some(bb) = std::fs::read_dir("/nix/store").ok().and_then(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin/busybox"))
                .filter(|p| p.to_string_lossy().contains("-busybox/"))
                .find(|p| {
                    std::process::Command::new(p)
                        .arg("true")
                        .status()
                        .is_ok_and(|s| s.success())
                })
        }) else {
            eprintln!("no busybox in /nix/store: skipped");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "export bb={}\n{}{}",
            bb.display(),
            define_functions(
                "fill() {\n  \"$bb\" dd if=/dev/zero of=/dev/null bs=64M count=1 \"$@\"\n}\n"
            ),
            measured("fill", "2>/dev/null")
        );
        let run = |script: &str| {
            std::process::Command::new(&bb)
                .args(["sh", "-euc", script])
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        let out = run(&script);
        assert!(out.status.success(), "{out:?}");
        let kib = peak_rss_kib(&String::from_utf8_lossy(&out.stderr)).expect("a peak");
        assert!(
            (64 * 1024..80 * 1024).contains(&kib),
            "{kib} KiB for a 64 MiB buffer"
        );
        // A failing compile still reports its peak, and the script fails.
        let failing = script.replace("count=1", "count=1 && exit 3");
        let out = run(&failing);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        assert!(peak_rss_kib(&String::from_utf8_lossy(&out.stderr)).is_some());
        // Its wall time: a compile that takes 1.5 s says so.
        let slow = script.replace("count=1", "count=1 && \"$bb\" sleep 1.5");
        let out = run(&slow);
        assert!(out.status.success(), "{out:?}");
        let seconds = wall_seconds(&String::from_utf8_lossy(&out.stderr)).expect("a wall time");
        assert!(
            (1.5..3.0).contains(&seconds),
            "{seconds} s for a 1.5 s compile"
        );
    }

    #[test]
    fn the_marked_wall_times_of_a_log_are_summed_and_nothing_else() {
        let log = format!(
            "{WALL_TIME_MARK}12.50 s\n\
             {PEAK_RSS_MARK}812344 KiB\n\
             warning: took 999 s\n\
             {WALL_TIME_MARK}0.25 s\n\
             {WALL_TIME_MARK}soon s\n"
        );
        assert_eq!(wall_seconds(&log), Some(12.75));
        assert_eq!(wall_seconds(&format!("{WALL_TIME_MARK}3 min\n")), None);
        assert_eq!(wall_seconds(""), None);
    }
}
