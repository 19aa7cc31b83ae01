//! The values of the compile and link keys: defines, undefines, compiler
//! flags, link flags, library names and project-relative paths.
//!
//! In: one string of the config. Out: the value, or an [`InvalidValue`]
//! saying why cuwheel refuses it and what to write instead. The refusals
//! are of values cuwheel sets itself (the GPU code, the host compiler, the
//! defines that depend on the cell), values that cannot work in the Nix
//! sandbox (absolute paths), and values another key says better (`-s` is
//! `strip`, `-lfoo` is `libraries`).

use std::fmt;
use std::path::{Component, PathBuf};
use std::str::FromStr;

use crate::spec::version::InvalidValue;

/// A preprocessor define passed to both nvcc and g++: `NAME` or `NAME=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Define {
    pub name: String,
    pub value: Option<String>,
}

/// Defines cuwheel derives from each cell, as torch's `BuildExtension` does;
/// a user value (or undefine) would contradict the cell.
const CELL_DEFINES: [&str; 7] = [
    "TORCH_EXTENSION_NAME",
    "TORCH_API_INCLUDE_EXTENSION_H",
    "Py_LIMITED_API",
    "_GLIBCXX_USE_CXX11_ABI",
    "PYBIND11_COMPILER_TYPE",
    "PYBIND11_STDLIB",
    "PYBIND11_BUILD_ABI",
];

pub(crate) fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A macro name cuwheel lets the config define or undefine.
fn macro_name(text: &str, name: &str, form: &str) -> Result<(), InvalidValue> {
    if !is_identifier(name) {
        return Err(InvalidValue::new(
            format!("`{text}` is not a {form}: `{name}` is not a C identifier"),
            match form {
                "define" => "write \"NAME\" or \"NAME=VALUE\", without -D",
                _ => "write the macro's name, without -U",
            },
        ));
    }
    if CELL_DEFINES.contains(&name) {
        return Err(InvalidValue::new(
            format!("`{name}` is set by cuwheel for each cell"),
            "remove it; cuwheel passes the value that matches the cell's torch and Python",
        ));
    }
    Ok(())
}

impl FromStr for Define {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<Define, InvalidValue> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (text, None),
        };
        macro_name(text, name, "define")?;
        Ok(Define {
            name: name.to_string(),
            value,
        })
    }
}

impl fmt::Display for Define {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(value) = &self.value {
            write!(f, "={value}")?;
        }
        Ok(())
    }
}

/// A macro to undefine (`-U`), as setuptools' `undef_macros`.
pub fn undefine(text: &str) -> Result<String, InvalidValue> {
    macro_name(text, text, "macro name")?;
    Ok(text.to_string())
}

/// nvcc options that choose GPU code or the host compiler: cuwheel sets both
/// from `cuda-archs` and the pinned toolchain, and the audit checks the fatbin
/// against `cuda-archs`.
const NVCC_OWNED_FLAGS: [(&str, &str); 10] = [
    ("-gencode", "cuda-archs"),
    ("--generate-code", "cuda-archs"),
    ("-arch", "cuda-archs"),
    ("--gpu-architecture", "cuda-archs"),
    ("-code", "cuda-archs"),
    ("--gpu-code", "cuda-archs"),
    ("-ccbin", "the pinned toolchain"),
    ("--compiler-bindir", "the pinned toolchain"),
    ("--compress-mode", "cuda-compress-mode"),
    ("-compress-mode", "cuda-compress-mode"),
];

/// nvcc options that put source file paths into the device code's line
/// information: the plan compiles such TUs with every path mapped to a
/// fixed one (see `crates/cuwheel-build/src/plan/lineinfo.rs`).
pub const DEVICE_LINE_INFO_FLAGS: [&str; 4] =
    ["-lineinfo", "--generate-line-info", "-G", "--device-debug"];

/// Whether `flag` is `option` or `option` with a value (`-arch=sm_80`).
fn is_option(flag: &str, option: &str) -> bool {
    flag == option
        || flag
            .strip_prefix(option)
            .is_some_and(|rest| rest.starts_with(['=', ' ']))
}

/// A flag that names an absolute path: the sandbox has none but the
/// toolchains', which cuwheel passes itself.
fn absolute_path_in(text: &str) -> bool {
    text.split(['=', ',', ' ', ':']).any(|part| {
        let part = part.trim_start_matches("-I").trim_start_matches("-L");
        part.starts_with('/')
    })
}

/// Any compiler or linker flag: not empty, no absolute path.
pub fn flag(text: &str) -> Result<String, InvalidValue> {
    if text.trim().is_empty() {
        return Err(InvalidValue::new("the flag is empty", "remove it"));
    }
    if absolute_path_in(text) {
        return Err(InvalidValue::new(
            format!("`{text}` names an absolute path, which the Nix sandbox does not have"),
            "name project directories in include-dirs (relative to the project); the \
             toolchains' own directories are passed by cuwheel",
        ));
    }
    Ok(text.to_string())
}

pub fn nvcc_flag(text: &str) -> Result<String, InvalidValue> {
    let owner = NVCC_OWNED_FLAGS
        .iter()
        .find(|(option, _)| is_option(text, option));
    match owner {
        Some((option, "cuda-archs")) => Err(InvalidValue::new(
            format!("`{text}`: cuwheel chooses the GPU code ({option}) from cuda-archs"),
            "list the archs in tool.cuwheel.cuda-archs instead; the audit checks the fatbin against that list",
        )),
        Some((option, "cuda-compress-mode")) => Err(InvalidValue::new(
            format!("`{text}`: cuwheel sets {option} from cuda-compress-mode"),
            "write cuda-compress-mode = \"size\" (or another mode) in [tool.cuwheel] or the \
             module's table instead: cuwheel passes it to the nvcc releases that take it",
        )),
        Some((option, owner)) => Err(InvalidValue::new(
            format!("`{text}`: cuwheel sets {option} from {owner}"),
            "remove it",
        )),
        None => flag(text),
    }
}

/// A flag of `link-flags`, passed to `g++ -shared`.
pub fn link_flag(text: &str) -> Result<String, InvalidValue> {
    let refuse = |problem: String, fix: &str| Err(InvalidValue::new(problem, fix));
    match text {
        "-s" | "-Wl,-s" | "-Wl,--strip-all" | "-Wl,-S" | "-Wl,--strip-debug" => {
            return refuse(
                format!("`{text}` strips the module"),
                "write strip = true instead (for this module, or at the top for every module)",
            );
        }
        "-shared" | "-o" => {
            return refuse(
                format!("`{text}`: cuwheel links each module with -shared -o <module file>"),
                "remove it",
            );
        }
        _ => {}
    }
    if let Some(name) = text.strip_prefix("-l") {
        return refuse(
            format!("`{text}` links a library"),
            &format!(
                "list it in libraries = [\"{name}\"], where cuwheel checks that the wheel may \
                 depend on it"
            ),
        );
    }
    if text.starts_with("-Wl,-rpath") || text.starts_with("-Wl,--rpath") || text == "-rpath" {
        let origin_only = text
            .split([',', '=', ':'])
            .skip(2)
            .all(|entry| entry.starts_with("$ORIGIN"));
        if !origin_only {
            return refuse(
                format!("`{text}` sets a search path outside the wheel"),
                "remove it: torch loads its libraries before any extension, and the audit \
                 refuses paths that leave the wheel (only $ORIGIN entries are allowed)",
            );
        }
    }
    flag(text)
}

/// A library name of `libraries`: what follows `-l`.
pub fn library(text: &str) -> Result<String, InvalidValue> {
    let name = text.strip_prefix("-l").unwrap_or(text);
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+.-".contains(c));
    if !valid || text.starts_with("-l") || name.ends_with(".so") || name.starts_with("lib") {
        let suggestion = name
            .trim_start_matches("lib")
            .split(".so")
            .next()
            .unwrap_or(name);
        return Err(InvalidValue::new(
            format!("`{text}` is not a library name as -l takes it"),
            format!("write the name without lib, .so or -l, like \"{suggestion}\""),
        ));
    }
    Ok(name.to_string())
}

/// A path inside the project, written relative to its root.
pub fn relative_path(text: &str) -> Result<PathBuf, InvalidValue> {
    const FIX: &str = "write the path from the project root down, like \"csrc/bindings.cpp\"; \
                       every source must lie inside the project";
    if text.is_empty() {
        return Err(InvalidValue::new("the path is empty", FIX));
    }
    if text.contains(['*', '?', '[', '{']) {
        return Err(InvalidValue::new(
            format!("`{text}` looks like a pattern, but only `kernels` takes patterns"),
            "list the files one by one",
        ));
    }
    let path = PathBuf::from(text);
    if path.is_absolute() {
        return Err(InvalidValue::new(format!("`{text}` is absolute"), FIX));
    }
    if path
        .components()
        .any(|part| !matches!(part, Component::Normal(_)))
    {
        return Err(InvalidValue::new(
            format!("`{text}` contains `.` or `..`"),
            FIX,
        ));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_flags_that_other_keys_say_are_refused_with_the_key() {
        assert!(link_flag("-fopenmp").is_ok());
        assert!(link_flag("-Wl,--as-needed").is_ok());
        assert!(link_flag("-Wl,-rpath,$ORIGIN/../lib").is_ok());
        for (text, fix) in [
            ("-s", "strip = true"),
            ("-lgomp", "libraries = [\"gomp\"]"),
            ("-Wl,-rpath,/opt/lib", "only $ORIGIN"),
            ("-L/usr/lib", "include-dirs"),
            ("-shared", "remove it"),
        ] {
            let error = link_flag(text).unwrap_err();
            assert!(error.fix.contains(fix), "{text}: {error}");
            assert!(error.problem.contains(&format!("`{text}`")), "{error}");
        }
    }

    #[test]
    fn library_names_are_what_follows_l() {
        assert_eq!(library("gomp").unwrap(), "gomp");
        assert_eq!(library("stdc++").unwrap(), "stdc++");
        for (text, suggestion) in [("-lgomp", "\"gomp\""), ("libgomp.so", "\"gomp\"")] {
            let error = library(text).unwrap_err();
            assert!(error.fix.contains(suggestion), "{text}: {error}");
        }
    }

    #[test]
    fn cell_defines_cannot_be_set_or_unset() {
        assert!("TORCH_EXTENSION_NAME=x".parse::<Define>().is_err());
        assert!(undefine("Py_LIMITED_API").is_err());
        assert_eq!(undefine("NDEBUG").unwrap(), "NDEBUG");
        let error = undefine("-UNDEBUG").unwrap_err();
        assert!(error.fix.contains("without -U"), "{error}");
    }

    #[test]
    fn absolute_paths_are_refused_in_any_flag() {
        assert!(flag("-I/usr/include").is_err());
        assert!(flag("-isystem=/opt/x").is_err());
        assert!(nvcc_flag("-Xcompiler=-I/x").is_err());
        assert!(flag("-O3").is_ok());
        assert!(nvcc_flag("--expt-relaxed-constexpr").is_ok());
        assert!(nvcc_flag("-lineinfo").is_ok());
    }
}
