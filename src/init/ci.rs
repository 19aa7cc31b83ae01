//! `cuwheel init --ci github`: a GitHub Actions workflow, written for the
//! user.
//!
//! In: the project root (the repository's root, where `pyproject.toml` is).
//! Out: `.github/workflows/cuwheel.yml`, the text of [`GITHUB_WORKFLOW`]:
//! Nix installed, the matrix split into one job per nvcc toolkit at run time
//! by `cuwheel plan --jobs` (so editing the matrix needs no new workflow), a
//! signed binary cache per toolkit carried between runs with the Actions
//! cache (`cuwheel cache export --cell`), every wheel audited, and on a
//! published release the per-CUDA index on GitHub Pages and the PyPI variant
//! on PyPI through trusted publishing. An existing workflow with other text
//! is kept unless `--force`.
//!
//! `scripts/ci-local.py` runs the workflow's own steps on this machine and
//! the tests lint it with actionlint and GitHub's workflow schema.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::safe_io::{replaceable, write_atomically};

/// The workflow, the same for every project at a repository's root.
pub const GITHUB_WORKFLOW: &str = include_str!("github-workflow.yml");

/// Where it is written, relative to the project root.
pub const WORKFLOW_PATH: &str = ".github/workflows/cuwheel.yml";

/// What writing the workflow did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    New,
    Replaced,
    Unchanged,
}

/// Writes [`GITHUB_WORKFLOW`] to [`WORKFLOW_PATH`] under `root`, only
/// inside `root`: `.github` and `.github/workflows` must be real
/// directories (a symlink is refused, never followed out of the project),
/// and an existing workflow is read only when it is a regular file (a FIFO
/// or a device is refused before a byte is read); the new text lands by a
/// temporary file renamed in the same directory.
pub fn write_github_workflow(root: &Path, force: bool) -> Result<Written> {
    let path = root.join(WORKFLOW_PATH);
    let mut dir = root.to_path_buf();
    for part in [".github", "workflows"] {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) => bail!(
                "refusing to write {}: {} is {}, not a directory of the project, and cuwheel \
                 writes only inside the project; remove it (or make it a directory) and run \
                 `cuwheel init --ci github` again",
                path.display(),
                dir.display(),
                crate::safe_io::kind(meta.file_type())
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?
            }
            Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", dir.display())),
        }
    }
    // Judged before it is opened: a symlink, FIFO or device is refused.
    replaceable(&path)?;
    let written = if path.exists() {
        let old = crate::safe_io::read_regular(&path)?;
        if old == GITHUB_WORKFLOW.as_bytes() {
            return Ok(Written::Unchanged);
        }
        if !force {
            bail!(
                "{} exists with other text; cuwheel leaves it as it is: move it away, or pass \
                 --force to replace it",
                path.display()
            );
        }
        Written::Replaced
    } else {
        Written::New
    };
    write_atomically(&path, GITHUB_WORKFLOW.as_bytes())?;
    Ok(written)
}

/// What to do after the workflow is written, as lines for the report.
pub fn next_steps() -> Vec<String> {
    vec![
        format!("init: wrote {WORKFLOW_PATH}: one build job per nvcc toolkit, every wheel audited; on a published release, the index to GitHub Pages and the PyPI variant to PyPI"),
        "init: to carry a binary cache between runs: `cuwheel cache key <name> --out keys`, then store keys/<name>.sec as the repository secret CUWHEEL_CACHE_SECRET_KEY and keys/<name>.pub as the secret CUWHEEL_CACHE_PUBLIC_KEY".to_string(),
        "init: to publish: enable GitHub Pages from Actions, and add this repository's workflow cuwheel.yml (environment pypi) as a trusted publisher of the project on PyPI".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_workflow_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            write_github_workflow(dir.path(), false).unwrap(),
            Written::New
        );
        assert_eq!(
            write_github_workflow(dir.path(), false).unwrap(),
            Written::Unchanged
        );
        let path = dir.path().join(WORKFLOW_PATH);
        fs::write(&path, "name: mine\n").unwrap();
        let error = write_github_workflow(dir.path(), false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--force"), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "name: mine\n");
        assert_eq!(
            write_github_workflow(dir.path(), true).unwrap(),
            Written::Replaced
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), GITHUB_WORKFLOW);
    }
}
