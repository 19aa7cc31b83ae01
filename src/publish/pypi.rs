//! Publishing the PyPI variant: wheels in, an uploader's directory out.
//!
//! In: the PyPI variant's wheels (no local label), a directory, and the
//! largest file PyPI takes for the project. Out: the directory holding each
//! wheel, ready for `twine upload DIR/*.whl`, `uv publish DIR/*.whl` or
//! PyPI's publish action, and nothing else of publish's (no `.metadata`,
//! which an uploader would try to send). Every wheel is first audited with
//! PyPI's rules ([`PypiRules`]: no local version, size, platform tag, long
//! description); one that fails, two with one name, or a wheel whose name
//! the directory already holds with other bytes (PyPI never takes a file
//! name twice) refuses the whole publish before anything is written. Each
//! wheel lands through a temporary file and a rename, under the
//! directory's lock, so the directory never holds a half-written wheel; the
//! same wheels again change nothing.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{NewWheel, Refusal, check_wheels, index_lock, remove_stale_temp_files, store_wheel};
use crate::audit::{AuditOptions, PypiRules};
use crate::registry::downloads::sha256_file;

/// What a PyPI publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PypiSummary {
    /// File names of the wheels written.
    pub added: Vec<String>,
    /// File names the directory already held with the same bytes.
    pub already_there: Vec<String>,
}

/// Refuses, with every finding, unless each of `wheels` reads and passes
/// the audit with PyPI's `rules` (and no two share a name); `action` says
/// what is refused (`upload to PyPI`).
pub fn check_for_pypi(wheels: &[PathBuf], rules: PypiRules, action: &str) -> Result<()> {
    let refusal = Refusal {
        action: action.to_string(),
        done: "uploaded, so nothing was sent",
    };
    checked(wheels, rules, refusal).map(drop)
}

fn checked(wheels: &[PathBuf], rules: PypiRules, refusal: Refusal) -> Result<Vec<NewWheel>> {
    let options = AuditOptions {
        pypi: Some(rules),
        ..AuditOptions::default()
    };
    check_wheels(wheels, &refusal, &options)
}

/// Publishes `wheels` into `dir` (created if missing) for an upload to PyPI.
pub fn publish_pypi(dir: &Path, wheels: &[PathBuf], rules: PypiRules) -> Result<PypiSummary> {
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        bail!(
            "{} exists and is not a directory; give --pypi a directory for the upload",
            dir.display()
        );
    }
    let given = checked(wheels, rules, Refusal::publish(dir))?;
    let held = index_lock::lock(dir, &mut |waiting| {
        let _ = writeln!(io::stderr(), "publish: {waiting}");
    })?;
    let result = (|| {
        let mut added = Vec::new();
        let mut already_there = Vec::new();
        for new in &given {
            let target = dir.join(&new.wheel.file);
            match fs::symlink_metadata(&target) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => added.push(new),
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot inspect {}", target.display()));
                }
                Ok(meta) if !meta.is_file() => bail!(
                    "{} is in the way of the wheel and is not a file; move it away",
                    target.display()
                ),
                Ok(_) => {
                    let (sha256, _) = sha256_file(&target)?;
                    if sha256 != new.wheel.sha256 {
                        bail!(
                            "{} already holds a different {} (sha256 {sha256}, this one {}); PyPI \
                             never takes a file name twice, so a wheel's bytes must not change \
                             once built: upload the one there, or release a new version",
                            dir.display(),
                            new.wheel.file,
                            new.wheel.sha256
                        );
                    }
                    already_there.push(new.wheel.file.clone());
                }
            }
        }
        remove_stale_temp_files(dir)?;
        for new in &added {
            store_wheel(dir, new, false)?;
        }
        Ok(PypiSummary {
            added: added.iter().map(|new| new.wheel.file.clone()).collect(),
            already_there,
        })
    })();
    if result.is_err() {
        held.remove_new_dir();
    }
    result
}
