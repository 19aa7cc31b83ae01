//! Python headers from an archive no registry carries: finding the file the
//! user supplies (or fetching its URL), and reading what it holds.
//!
//! In: a header archive of the config ([`crate::spec::HeaderArchive`]), the
//! directories the user named
//! (`--archives DIR`, or `CUWHEEL_ARCHIVES`, `:`-separated), and the Python
//! it is for. Out: the file (checked against the config's sha256, when it
//! gives one), and its [`HeaderLayout`] — the member directory holding
//! `Python.h`, the member that is the real `pyconfig.h`, and whether the
//! build is free-threaded — which the lock records and `nix/` unpacks.
//!
//! Two layouts are read: python-build-standalone's release archives
//! (`python/include/python3.13t/`, `pyconfig.h` inside), and a plain
//! `include/pythonX.Y/` tree at any depth, whose `pyconfig.h` may be the
//! Debian/Ubuntu multiarch one beside it
//! (`include/x86_64-linux-gnu/pythonX.Y/pyconfig.h`, which the one in
//! `include/pythonX.Y/` only includes). The file is read with the host's
//! `tar`, which unpacks `.tar`, `.tar.gz` and `.tar.xz` alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::checked_output;
use crate::spec::PythonAbi;

/// Names the directories `cuwheel lock` and `cuwheel fetch` look for
/// user-supplied archives in, `:`-separated, after `--archives`.
pub const ARCHIVES_VARIABLE: &str = "CUWHEEL_ARCHIVES";

/// The directories to look for supplied archives in: `given`, then
/// `$CUWHEEL_ARCHIVES`.
pub fn archive_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = given.to_vec();
    if let Some(value) = std::env::var_os(ARCHIVES_VARIABLE) {
        dirs.extend(std::env::split_paths(&value).filter(|dir| !dir.as_os_str().is_empty()));
    }
    dirs
}

/// Where `file` is among `dirs`, or an error saying how to supply it.
pub fn find_supplied(file: &str, sha256: Option<&str>, dirs: &[PathBuf]) -> Result<PathBuf> {
    for dir in dirs {
        let path = dir.join(file);
        if path.is_file() {
            return Ok(path);
        }
    }
    let looked = if dirs.is_empty() {
        "no directory was named".to_string()
    } else {
        format!(
            "it is not in {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    bail!(
        "the archive {file}{} is supplied by you, not by a registry, and {looked}: put the file \
         in a directory and pass --archives DIR (or set {ARCHIVES_VARIABLE}=DIR)",
        sha256.map(|s| format!(" (sha256 {s})")).unwrap_or_default()
    )
}

/// What an archive of Python headers holds, as member paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderLayout {
    /// The directory holding `Python.h` (`usr/include/python3.12`).
    pub include: String,
    /// The real `pyconfig.h` (not a multiarch stub).
    pub pyconfig: String,
    pub free_threaded: bool,
}

/// Reads the layout from an archive's member list and the text of the
/// candidate `pyconfig.h` files (`read` gives a member's text). Pure.
pub fn layout(
    python: PythonAbi,
    members: &[String],
    read: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<HeaderLayout> {
    let names: Vec<&str> = members
        .iter()
        .map(|m| m.trim_start_matches("./").trim_end_matches('/'))
        .collect();
    let wanted = python.include_dir();
    let other = if python.free_threaded {
        format!("python{}", python.version)
    } else {
        format!("python{}t", python.version)
    };
    let include_of = |name: &str, dir: &str| {
        name.strip_suffix("/Python.h")
            .filter(|parent| parent.rsplit('/').next() == Some(dir))
            .map(str::to_owned)
    };
    let mut includes: Vec<String> = names
        .iter()
        .filter_map(|n| include_of(n, &wanted))
        .collect();
    includes.sort();
    let include = match &includes[..] {
        [one] => one.clone(),
        [] => {
            let hint = if names.iter().any(|n| include_of(n, &other).is_some()) {
                format!(
                    "; it holds {other}/Python.h instead: the archive is {} build, so write \
                     \"{}\" in tool.cuwheel.matrix.python",
                    if python.free_threaded {
                        "a regular"
                    } else {
                        "a free-threaded"
                    },
                    other.trim_start_matches("python")
                )
            } else {
                String::new()
            };
            bail!(
                "the archive holds no {wanted}/Python.h{hint}; it must hold CPython {}'s headers \
                 as include/{wanted}/ (a python-build-standalone release, or a tar of that \
                 directory with its pyconfig.h)",
                python
            );
        }
        several => bail!(
            "the archive holds {wanted}/Python.h more than once ({}); keep one",
            several.join(", ")
        ),
    };
    let root = include.rsplit_once('/').map_or("", |(root, _)| root);
    let joined = |rest: &str| {
        if root.is_empty() {
            rest.to_owned()
        } else {
            format!("{root}/{rest}")
        }
    };
    // The multiarch header first: beside it, the one in include/pythonX.Y is a stub.
    let candidates = [
        joined(&format!("x86_64-linux-gnu/{wanted}/pyconfig.h")),
        format!("{include}/pyconfig.h"),
    ];
    let mut pyconfig = None;
    for candidate in candidates {
        if !names.contains(&candidate.as_str()) {
            continue;
        }
        let text = read(&candidate)?;
        if text.contains("#define SIZEOF_VOID_P") {
            pyconfig = Some((candidate, text));
            break;
        }
    }
    let Some((pyconfig, text)) = pyconfig else {
        bail!(
            "the archive has {include}/Python.h but no pyconfig.h with the build's settings \
             (looked for {0}/pyconfig.h and {1}): add the real pyconfig.h (on Debian and \
             Ubuntu, include/x86_64-linux-gnu/{wanted}/pyconfig.h)",
            include,
            joined(&format!("x86_64-linux-gnu/{wanted}/pyconfig.h"))
        );
    };
    let free_threaded = text.lines().any(|line| {
        line.split_whitespace().collect::<Vec<_>>() == ["#define", "Py_GIL_DISABLED", "1"]
    });
    if free_threaded != python.free_threaded {
        let (is, write) = if free_threaded {
            (
                "a free-threaded build (it defines Py_GIL_DISABLED)",
                format!("{}t", python.version),
            )
        } else {
            (
                "a regular build (it does not define Py_GIL_DISABLED)",
                python.version.to_string(),
            )
        };
        bail!(
            "{pyconfig} is {is}, but the matrix names Python {python}: write \"{write}\" in \
             tool.cuwheel.matrix.python and key its archive by it"
        );
    }
    Ok(HeaderLayout {
        include,
        pyconfig,
        free_threaded,
    })
}

/// [`layout`] of the archive at `path`, read with `tar`.
pub fn inspect(path: &Path, python: PythonAbi) -> Result<HeaderLayout> {
    let mut list = Command::new("tar");
    list.arg("-tf").arg(path);
    let what = format!("tar -tf {}", path.display());
    let listed = checked_output(&mut list, &what, || {
        format!("cannot run tar to read {}: install tar", path.display())
    })?;
    let members: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let mut read = |member: &str| -> Result<String> {
        // The member as the archive spells it (with or without `./`).
        let spelled = members
            .iter()
            .find(|m| m.trim_start_matches("./") == member)
            .cloned()
            .unwrap_or_else(|| member.to_owned());
        let mut cmd = Command::new("tar");
        cmd.arg("-xOf").arg(path).arg(&spelled);
        let out = checked_output(
            &mut cmd,
            &format!("tar -xOf {} {spelled}", path.display()),
            || "cannot run tar".to_string(),
        )?;
        String::from_utf8(out.stdout).with_context(|| format!("{member} is not UTF-8 text"))
    };
    layout(python, &members, &mut read)
        .with_context(|| format!("{} (Python {python}'s headers)", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const REAL: &str = "#define SIZEOF_VOID_P 8\n/* #undef Py_GIL_DISABLED */\n";
    const THREADED: &str = "#define SIZEOF_VOID_P 8\n#define Py_GIL_DISABLED 1\n";
    const STUB: &str = "#  include <x86_64-linux-gnu/python3.12/pyconfig.h>\n";

    fn run(python: &str, files: &[(&str, &str)]) -> Result<HeaderLayout> {
        let texts: BTreeMap<String, String> = files
            .iter()
            .map(|(name, text)| (name.trim_start_matches("./").to_string(), text.to_string()))
            .collect();
        let members: Vec<String> = files.iter().map(|(name, _)| name.to_string()).collect();
        let mut read = |member: &str| -> Result<String> { Ok(texts[member].clone()) };
        layout(python.parse().unwrap(), &members, &mut read)
    }

    #[test]
    fn reads_the_ubuntu_multiarch_tree() {
        // The layout of shared/artifacts/python3.12-headers.tar.
        let found = run(
            "3.12",
            &[
                ("usr/include/python3.12/", ""),
                ("usr/include/python3.12/Python.h", ""),
                ("usr/include/python3.12/pyconfig.h", STUB),
                ("usr/include/x86_64-linux-gnu/python3.12/pyconfig.h", REAL),
            ],
        )
        .unwrap();
        assert_eq!(
            found,
            HeaderLayout {
                include: "usr/include/python3.12".into(),
                pyconfig: "usr/include/x86_64-linux-gnu/python3.12/pyconfig.h".into(),
                free_threaded: false,
            }
        );
    }

    #[test]
    fn reads_python_build_standalone_and_its_free_threaded_builds() {
        let found = run(
            "3.13t",
            &[
                ("./python/include/python3.13t/Python.h", ""),
                ("./python/include/python3.13t/pyconfig.h", THREADED),
                ("./python/lib/libpython3.13t.so", ""),
            ],
        )
        .unwrap();
        assert_eq!(found.include, "python/include/python3.13t");
        assert_eq!(found.pyconfig, "python/include/python3.13t/pyconfig.h");
        assert!(found.free_threaded);
    }

    #[test]
    fn refuses_an_archive_of_the_other_build_saying_which_it_is() {
        let err = run(
            "3.13",
            &[
                ("python/include/python3.13t/Python.h", ""),
                ("python/include/python3.13t/pyconfig.h", THREADED),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("free-threaded build"), "{err}");
        assert!(err.contains("\"3.13t\""), "{err}");
        let err = run(
            "3.13t",
            &[
                ("include/python3.13t/Python.h", ""),
                ("include/python3.13t/pyconfig.h", REAL),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("regular build"), "{err}");
    }

    #[test]
    fn refuses_archives_without_headers_or_a_real_pyconfig() {
        let err = run("3.12", &[("include/python3.11/Python.h", "")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no python3.12/Python.h"), "{err}");
        let err = run(
            "3.12",
            &[
                ("usr/include/python3.12/Python.h", ""),
                ("usr/include/python3.12/pyconfig.h", STUB),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no pyconfig.h with the build's settings"),
            "{err}"
        );
        assert!(
            err.contains("usr/include/x86_64-linux-gnu/python3.12/pyconfig.h"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_supplied_file_says_how_to_supply_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_supplied("h.tar", Some("ab"), &[dir.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("h.tar (sha256 ab)"), "{err}");
        assert!(err.contains("--archives DIR"), "{err}");
        std::fs::write(dir.path().join("h.tar"), "x").unwrap();
        assert_eq!(
            find_supplied("h.tar", None, &[dir.path().to_path_buf()]).unwrap(),
            dir.path().join("h.tar")
        );
    }
}
