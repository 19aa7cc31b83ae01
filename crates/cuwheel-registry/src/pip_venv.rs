//! The Python whose pip cuwheel runs when none is named: a venv cuwheel
//! makes once in its cache (`<cache>/pip-venv`), never the system's pip.
//! Debian and Ubuntu ship python3 without pip and mark it externally
//! managed, so `python3 -m pip` fails on a stock machine; `python3 -m venv`
//! needs only Python's venv module, and the venv carries the pip that
//! Python bundles (`ensurepip`), upgraded once when it is older than the
//! oldest pip cuwheel's options work with.
//!
//! In: cuwheel's cache directory and `python3` from PATH. Out: the venv's
//! interpreter, or an error naming what to install. Made under an exclusive
//! lock, so concurrent cuwheel commands make it once; a venv left half-made
//! by a killed command has no ready mark and is made again.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::downloads::Cache;
use crate::file_lock::{FileLock, Mode};
use crate::process::checked_output;

/// The oldest pip whose options cuwheel uses (`install --dry-run --report`).
const OLDEST_PIP: (u32, u32) = (22, 2);
/// Written last: the venv is whole.
const READY: &str = ".cuwheel-ready";

/// The interpreter of cuwheel's pip venv, made first when missing.
pub fn managed_python() -> Result<PathBuf> {
    let cache = Cache::locate()?;
    let dir = cache.root.join("pip-venv");
    let _lock = FileLock::acquire(&cache.root.join("pip-venv.lock"), Mode::Exclusive)?;
    let python = dir.join("bin/python");
    if dir.join(READY).is_file() && python.is_file() {
        return Ok(python);
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    eprintln!(
        "cuwheel: making a Python venv for pip in {} (once; cuwheel does not use a system pip)",
        dir.display()
    );
    let output = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .context("cannot run python3 to make cuwheel's pip venv: install Python 3, or name an interpreter that has pip with --python")?;
    if !output.status.success() {
        let _ = fs::remove_dir_all(&dir);
        bail!(
            "`python3 -m venv {}` failed: {}\nInstall Python's venv module (Debian, Ubuntu: \
             `apt-get install python3-venv`), or name an interpreter that has pip with --python",
            dir.display(),
            first_error_line(
                &String::from_utf8_lossy(&output.stdout),
                &String::from_utf8_lossy(&output.stderr)
            )
        );
    }
    let version = pip_version(&python)?;
    if version < OLDEST_PIP {
        eprintln!(
            "cuwheel: the venv's pip is {}.{}, older than {}.{}; upgrading it",
            version.0, version.1, OLDEST_PIP.0, OLDEST_PIP.1
        );
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .arg(format!("pip>={}.{}", OLDEST_PIP.0, OLDEST_PIP.1));
        checked_output(&mut cmd, "the upgrade of the venv's pip", || {
            format!("cannot run {}", python.display())
        })?;
    }
    fs::write(dir.join(READY), b"").with_context(|| format!("cannot write {}", dir.display()))?;
    Ok(python)
}

/// `pip --version`'s major and minor.
fn pip_version(python: &Path) -> Result<(u32, u32)> {
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pip", "--version"]);
    let output = checked_output(&mut cmd, "pip --version in cuwheel's venv", || {
        format!("cannot run {}", python.display())
    })?;
    let text = String::from_utf8_lossy(&output.stdout);
    parse_pip_version(&text)
        .with_context(|| format!("cannot read pip's version from {:?}", text.trim()))
}

/// `pip 23.0.1 from … (python 3.11)` → (23, 0).
fn parse_pip_version(text: &str) -> Option<(u32, u32)> {
    let version = text.strip_prefix("pip ")?.split_whitespace().next()?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// What python printed, on one line and at most 300 characters.
fn first_error_line(stdout: &str, stderr: &str) -> String {
    let text: Vec<&str> = stderr
        .split_whitespace()
        .chain(stdout.split_whitespace())
        .collect();
    let text = text.join(" ");
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{} …", &text[..end]),
        None if text.is_empty() => "(it printed nothing)".to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_versions() {
        assert_eq!(
            parse_pip_version("pip 23.0.1 from /x/site-packages/pip (python 3.11)\n"),
            Some((23, 0))
        );
        assert_eq!(parse_pip_version("pip 24 from /x"), Some((24, 0)));
        assert_eq!(parse_pip_version("Python 3.11"), None);
        assert!((22, 0) < OLDEST_PIP && (23, 0) > OLDEST_PIP);
    }

    #[test]
    fn the_error_line_of_a_failed_venv() {
        let stdout = "The virtual environment was not created successfully because ensurepip is not\n\
                      available.\n\n    apt install python3.11-venv\n";
        assert_eq!(
            first_error_line(stdout, ""),
            "The virtual environment was not created successfully because ensurepip is not \
             available. apt install python3.11-venv"
        );
        assert_eq!(first_error_line("", "Error: denied\n"), "Error: denied");
        assert_eq!(first_error_line("", ""), "(it printed nothing)");
        assert!(first_error_line(&"x ".repeat(400), "").ends_with(" …"));
    }
}
