//! Which compatibility tags an installer can ever select: the forms of
//! python, abi and platform tags the "Platform compatibility tags"
//! specification and the installers' tag lists (`packaging.tags`) define.
//!
//! In: one tag component (`cp311`, `abi3`, `manylinux_2_28_x86_64`). Out:
//! `Ok`, or why no installer would select it, with what valid ones look
//! like. A wheel carrying such a tag is installable nowhere, so it is
//! refused rather than passed (`hostile-1.0-py9-bogus-nonsense_tag.whl`).

/// Python implementations' tag prefixes: generic, CPython, PyPy,
/// IronPython, Jython, GraalPy.
const PYTHON_PREFIXES: [&str; 6] = ["py", "cp", "pp", "ip", "jy", "graalpy"];

/// CPU architectures of the platform tags installers generate.
const ARCHES: [&str; 21] = [
    "x86_64",
    "i686",
    "i386",
    "aarch64",
    "arm64",
    "armv6l",
    "armv7l",
    "ppc64",
    "ppc64le",
    "s390x",
    "riscv64",
    "loongarch64",
    "universal",
    "universal2",
    "intel",
    "fat",
    "fat3",
    "fat64",
    "ppc",
    "arm64_v8a",
    "armeabi_v7a",
];

pub const PYTHON_EXAMPLES: &str = "`py3`, `py310`, `cp311`, `pp310`";
pub const ABI_EXAMPLES: &str = "`none`, `abi3`, `cp311`, `cp313t`, `pypy310_pp73`";
pub const PLATFORM_EXAMPLES: &str = "`any`, `linux_x86_64`, `manylinux_2_28_x86_64`, `manylinux2014_aarch64`, \
     `musllinux_1_2_x86_64`, `macosx_11_0_arm64`, `win_amd64`";

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `py3`, `cp311`, `pp310`: an implementation prefix and a Python 2 or 3 version.
pub fn check_python(tag: &str) -> Result<(), String> {
    let version = PYTHON_PREFIXES
        .iter()
        .find_map(|p| tag.strip_prefix(p).filter(|v| digits(v)));
    match version {
        Some(v) if v.starts_with(['2', '3']) => Ok(()),
        Some(v) => Err(format!(
            "the python tag `{tag}` names Python {v}, which does not exist (tags name Python 2 \
             or 3: {PYTHON_EXAMPLES})"
        )),
        None => Err(format!(
            "the python tag `{tag}` is no implementation tag (`py`, `cp`, `pp`, `ip`, `jy` or \
             `graalpy` and a version: {PYTHON_EXAMPLES})"
        )),
    }
}

/// `none`, `abi3`, `cp311`, `cp311d`, `cp27mu`, `cp313t`, `pypy310_pp73`,
/// `pypy_73`, `graalpy242_311_native`.
pub fn check_abi(tag: &str) -> Result<(), String> {
    let ok = match tag {
        "none" | "abi3" => true,
        _ => {
            if let Some(rest) = tag.strip_prefix("cp") {
                let version = rest.trim_end_matches(['d', 'm', 'u', 't']);
                digits(version) && version.starts_with(['2', '3'])
            } else if let Some(rest) = tag.strip_prefix("pypy") {
                rest.split_once('_').is_some_and(|(v, pp)| {
                    (v.is_empty() || digits(v))
                        && (digits(pp) || pp.strip_prefix("pp").is_some_and(digits))
                })
            } else if let Some(rest) = tag.strip_prefix("graalpy") {
                rest.split('_').next().is_some_and(digits)
            } else {
                false
            }
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the abi tag `{tag}` is no ABI an interpreter reports (expected one like \
             {ABI_EXAMPLES})"
        ))
    }
}

/// Whether `rest` is `<N>_<N>_<arch>` (`2_28_x86_64`).
fn versioned(rest: &str) -> bool {
    let mut parts = rest.splitn(3, '_');
    matches!((parts.next(), parts.next(), parts.next()),
        (Some(major), Some(minor), Some(arch)) if digits(major) && digits(minor) && ARCHES.contains(&arch))
}

/// `any`, `linux_<arch>`, `manylinux{1,2010,2014}_<arch>`,
/// `{many,musl}linux_<N>_<N>_<arch>`, `macosx_<N>_<N>_<arch>`, `win32`,
/// `win_amd64`, `win_arm64`, `android_<api>_<arch>`, `ios_…`,
/// `emscripten_…_wasm32`, `pyodide_…_wasm32`.
pub fn check_platform(tag: &str) -> Result<(), String> {
    let arch = |rest: &str| ARCHES.contains(&rest);
    let ok = match tag {
        "any" | "win32" | "win_amd64" | "win_arm64" | "win_ia64" => true,
        _ => {
            if let Some(rest) = tag.strip_prefix("linux_") {
                arch(rest)
            } else if let Some(rest) = ["manylinux1_", "manylinux2010_", "manylinux2014_"]
                .iter()
                .find_map(|p| tag.strip_prefix(p))
            {
                arch(rest)
            } else if let Some(rest) = ["manylinux_", "musllinux_", "macosx_"]
                .iter()
                .find_map(|p| tag.strip_prefix(p))
            {
                versioned(rest)
            } else if let Some(rest) = tag.strip_prefix("android_") {
                rest.split_once('_')
                    .is_some_and(|(api, a)| digits(api) && arch(a))
            } else if let Some(rest) = tag.strip_prefix("ios_") {
                let (version, sdk) = rest.rsplit_once('_').unwrap_or_default();
                matches!(sdk, "iphoneos" | "iphonesimulator") && versioned(version)
            } else if let Some(rest) = ["emscripten_", "pyodide_"]
                .iter()
                .find_map(|p| tag.strip_prefix(p))
            {
                rest.strip_suffix("_wasm32")
                    .is_some_and(|v| v.split('_').all(digits))
            } else {
                false
            }
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the platform tag `{tag}` is no platform an installer selects (expected one like \
             {PLATFORM_EXAMPLES})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_tags_are_known() {
        for t in [
            "py3",
            "py2",
            "py310",
            "cp311",
            "pp310",
            "graalpy311",
            "cp27",
        ] {
            check_python(t).unwrap();
        }
        for t in [
            "none",
            "abi3",
            "cp311",
            "cp313t",
            "cp27mu",
            "cp37m",
            "pypy310_pp73",
            "pypy_73",
            "graalpy242_311_native",
        ] {
            check_abi(t).unwrap();
        }
        for t in [
            "any",
            "linux_x86_64",
            "manylinux1_x86_64",
            "manylinux2014_aarch64",
            "manylinux_2_28_x86_64",
            "musllinux_1_2_x86_64",
            "macosx_11_0_arm64",
            "macosx_10_9_universal2",
            "win_amd64",
            "win32",
            "android_21_arm64_v8a",
            "ios_13_0_arm64_iphoneos",
            "pyodide_2024_0_wasm32",
            "emscripten_3_1_58_wasm32",
        ] {
            check_platform(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        }
    }

    #[test]
    fn nonsense_tags_are_refused_with_examples() {
        let err = check_python("py9").unwrap_err();
        assert!(err.contains("`py9`") && err.contains("Python 9"), "{err}");
        assert!(check_python("xx3").unwrap_err().contains("`py3`"));
        assert!(check_python("py").is_err());
        let err = check_abi("bogus").unwrap_err();
        assert!(err.contains("`bogus`") && err.contains("`abi3`"), "{err}");
        let err = check_platform("nonsense_tag").unwrap_err();
        assert!(
            err.contains("`nonsense_tag`") && err.contains("`manylinux_2_28_x86_64`"),
            "{err}"
        );
        for bad in [
            "linux_bogus",
            "manylinux_2_x86_64",
            "manylinux_x_28_x86_64",
            "win64",
        ] {
            assert!(check_platform(bad).is_err(), "{bad}");
        }
    }
}
